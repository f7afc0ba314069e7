# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep the add-on's drivers valid while it runs: repair driver paths after bone renames,
and revalidate drivers that read NaN or inf once their values are finite again.

A bone rename tags the armature for a depsgraph update; ``depsgraph_update_post`` then
repairs the updated armature objects whose bone names changed since it last looked, or
that have a driver flagged invalid (Blender flags a driver for good when it reads NaN; see
`bone_modes.repair_driver_paths`). Every other update, such as each mouse move of a drag,
costs one look at the names and at the drivers' flags. ``load_post`` repairs every
armature of a file, which may come renamed from elsewhere. Neither runs during playback
(frame changes fire other handlers), and evaluation itself never needs them.
"""

from __future__ import annotations

import bpy

from .bone_modes import has_invalid_driver, repair_driver_paths

# Armature object name -> its bone names when a scan last found its drivers in order.
_settled: dict[str, tuple[str, ...]] = {}


def _repair(objects: object, only_renamed: bool) -> None:
    """Repair the armature objects among ``objects``; with ``only_renamed``, only those whose
    bone names changed since their drivers were last found in order (a rename is what makes
    paths stale) or that have an invalid driver. An armature counts as settled only once a
    scan changes nothing: after an Edit-mode rename Blender flags the drivers invalid in a
    later update than the one that renames the pose bones, and the next scan clears that
    flag."""
    for candidate in objects:  # type: ignore[attr-defined]
        if not (isinstance(candidate, bpy.types.Object) and candidate.type == 'ARMATURE'):
            continue
        names = tuple(candidate.pose.bones.keys()) if candidate.pose else ()
        if (
            only_renamed
            and _settled.get(candidate.name_full) == names
            and not has_invalid_driver(candidate)
        ):
            continue
        if repair_driver_paths(candidate) == 0:
            _settled[candidate.name_full] = names
        else:
            _settled.pop(candidate.name_full, None)


@bpy.app.handlers.persistent
def rq_repair_after_update(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    """Repair the armature objects (or the objects of armatures) this update touched."""
    updated = {update.id.original for update in depsgraph.updates}
    armatures = {id_ for id_ in updated if isinstance(id_, bpy.types.Armature)}
    if not updated:
        return
    _repair(
        (
            obj
            for obj in scene.objects
            if obj.type == 'ARMATURE' and (obj in updated or obj.data in armatures)
        ),
        only_renamed=True,
    )


@bpy.app.handlers.persistent
def rq_repair_after_load(_filepath: str) -> None:
    """Repair every armature object of the file just loaded."""
    _settled.clear()
    _repair(bpy.data.objects, only_renamed=False)


_HANDLERS = (
    (bpy.app.handlers.depsgraph_update_post, rq_repair_after_update),
    (bpy.app.handlers.load_post, rq_repair_after_load),
)


def register() -> None:
    for handlers, function in _HANDLERS:
        if function not in handlers:
            handlers.append(function)


def unregister() -> None:
    for handlers, function in _HANDLERS:
        if function in handlers:
            handlers.remove(function)
    _settled.clear()
