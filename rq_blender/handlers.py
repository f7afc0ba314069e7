# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep the add-on's drivers valid while it runs: repair driver paths after bone renames.

A bone rename tags the armature for a depsgraph update; ``depsgraph_update_post`` then
repairs the armature objects that were updated, and ``load_post`` repairs every armature of
a file renamed elsewhere. Neither runs during playback (frame changes fire other handlers),
and evaluation itself never needs them.
"""

from __future__ import annotations

import bpy

from .bone_modes import repair_driver_paths


def _repair(objects: object) -> None:
    for candidate in objects:  # type: ignore[attr-defined]
        if isinstance(candidate, bpy.types.Object) and candidate.type == 'ARMATURE':
            repair_driver_paths(candidate)


@bpy.app.handlers.persistent
def rq_repair_after_update(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> None:
    """Repair the armature objects (or the objects of armatures) this update touched."""
    updated = {update.id.original for update in depsgraph.updates}
    armatures = {id_ for id_ in updated if isinstance(id_, bpy.types.Armature)}
    if not updated:
        return
    _repair(
        obj
        for obj in scene.objects
        if obj.type == 'ARMATURE' and (obj in updated or obj.data in armatures)
    )


@bpy.app.handlers.persistent
def rq_repair_after_load(_filepath: str) -> None:
    """Repair every armature object of the file just loaded."""
    _repair(bpy.data.objects)


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
