# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender 4.2 .. 5.2 API differences the add-on meets, in one place.

Each boundary below was read from the RNA of every release's ``bpy`` wheel (4.2.23, 4.3.0,
4.4.0, 4.5.15, 5.0.1, 5.1.2, 5.2.3), and ``tests/blender/test_compat.py`` checks it again on
each release the tests run (``bash dev.sh sweep`` runs all seven):

- Actions (`SLOTTED_ACTIONS`): 4.2/4.3 keep F-curves on the action (``action.fcurves``,
  ``action.groups``). From 4.4 actions are *slotted*: F-curves live in a channelbag per
  slot, inside a keyframe strip of a layer (``action.layers[i].strips[j].channelbag(slot)``).
  4.4 and 4.5 still offer a legacy ``action.fcurves``; 5.0 removed it. `channelbag` hides
  this: it returns an object with ``fcurves`` (and ``groups``) for an action and slot, the
  action itself before 4.4.
- Slots: users of an action (``AnimData`` and NLA strips) name a slot (``action_slot``) from
  4.4; before, there is none (`None` here).
- Creating an F-curve in a group (`CHANNELBAG_NEW_TAKES_GROUP`, `new_fcurve`): 4.2/4.3
  ``action.fcurves.new(data_path, index, action_group)``; 4.4/4.5
  ``channelbag.fcurves.new(data_path, index)`` with no group argument, the group assigned
  afterwards (``FCurve.group`` is writable on every release); from 5.0
  ``channelbag.fcurves.new(data_path, index, group_name)``.
- Channel groups: from 4.4 a group left without F-curves is removed by Blender itself; 4.2
  and 4.3 keep it (callers remove it). ``FCurve.group`` cannot be set to ``None`` on any
  release.
- Pose-bone selection (`POSE_BONE_SELECT`): ``PoseBone.select`` from 5.0, ``Bone.select``
  before; hiding a bone in Pose mode (`POSE_BONE_HIDE`): ``PoseBone.hide`` from 5.0 (there
  ``Bone.hide`` no longer hides it in Pose mode), ``Bone.hide`` before.

Every attribute that exists in only some versions is read with ``getattr`` here, so the rest
of the add-on type-checks against every release's API stubs (4.2, 4.5 and 5.2).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import bpy

# Slotted actions (``Action.slots``) exist from Blender 4.4 (checked on 4.2 .. 5.2).
SLOTTED_ACTIONS = bpy.app.version >= (4, 4, 0)
# ``ActionChannelbagFCurves.new`` takes ``group_name`` from Blender 5.0; 4.4 and 4.5 take
# ``(data_path, index)`` only, and the group is assigned afterwards (``FCurve.group``)
# (checked on 4.4.0, 4.5.15, 5.0.1, 5.1.2, 5.2.3).
CHANNELBAG_NEW_TAKES_GROUP = bpy.app.version >= (5, 0, 0)
# Selection moved from ``Bone.select`` to ``PoseBone.select`` in Blender 5.0 (checked on
# 4.2 .. 5.2).
POSE_BONE_SELECT = bpy.app.version >= (5, 0, 0)
# Hiding a bone in Pose mode moved from ``Bone.hide`` to ``PoseBone.hide`` in Blender 5.0
# (checked against ``context.selected_pose_bones`` on 4.2, 4.5 and 5.2).
POSE_BONE_HIDE = bpy.app.version >= (5, 0, 0)


class FCurveOwner(Protocol):
    """What `channelbag` returns: an ``ActionChannelbag`` (4.4+) or an ``Action`` (4.2/4.3)."""

    @property
    def fcurves(self) -> Any: ...


def pose_bone_selected(pose_bone: bpy.types.PoseBone) -> bool:
    """Whether a pose bone is selected as Blender's tools count it in Pose mode (its bones
    in ``context.selected_pose_bones``): its select flag set, and shown: not hidden, and in no
    bone collection or in one visible with its parents. (A bone selected in a hidden
    collection is left alone by Blender's tools, and so by the add-on's.)"""
    bone = pose_bone.bone
    if POSE_BONE_SELECT:
        selected = bool(getattr(pose_bone, "select"))  # noqa: B009 (5.0 only)
    else:
        selected = bool(getattr(bone, "select"))  # noqa: B009 (before 5.0 only)
    hidden = getattr(pose_bone, "hide") if POSE_BONE_HIDE else bone.hide  # noqa: B009
    if not selected or hidden:
        return False
    collections = bone.collections
    return not len(collections) or any(c.is_visible_effectively for c in collections)


def set_pose_bone_selected(pose_bone: bpy.types.PoseBone, selected: bool) -> None:
    """Select or deselect a pose bone."""
    setattr(pose_bone if POSE_BONE_SELECT else pose_bone.bone, "select", selected)  # noqa: B010


def assigned_slot(user: bpy.types.AnimData | bpy.types.NlaStrip) -> Any:
    """The action slot an ``AnimData`` or NLA strip uses (``None`` before 4.4 or if unset)."""
    return getattr(user, "action_slot", None)


def channelbag(action: bpy.types.Action, slot: Any, ensure: bool = False) -> FCurveOwner | None:
    """The F-curve collection of ``action`` for ``slot``.

    Parameters
    ----------
    action : bpy.types.Action
    slot : bpy.types.ActionSlot or None
        Ignored before 4.4. From 4.4, ``None`` (no slot assigned) means no F-curves.
    ensure : bool
        Create the slot's layer, keyframe strip and channelbag if missing (4.4+).

    Returns
    -------
    An object with ``fcurves`` (``new(data_path, index)``, ``find``, ``remove``, iteration):
    the channelbag (4.4+) or the action itself (4.2/4.3); ``None`` when there is none and
    ``ensure`` is False, or when there is no slot.
    """
    if not SLOTTED_ACTIONS:
        return cast(FCurveOwner, action)  # 4.2/4.3 actions hold their F-curves
    if slot is None:
        return None
    layers = getattr(action, "layers")  # noqa: B009
    for layer in layers:
        for strip in layer.strips:
            if strip.type == 'KEYFRAME':
                bag = strip.channelbag(slot, ensure=ensure)
                if bag is not None:
                    return bag
    if not ensure:
        return None
    layer = layers[0] if len(layers) else layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type='KEYFRAME')
    return strip.channelbag(slot, ensure=True)


def new_fcurve(
    owner: FCurveOwner,
    data_path: str,
    index: int,
    group: str | None,
    sibling: bpy.types.FCurve | None = None,
) -> bpy.types.FCurve:
    """Create an F-curve in a `channelbag` result, in the channel group ``group`` (created if
    missing; ``None``: no group). ``sibling``: an F-curve of ``owner`` already in ``group``,
    if the caller holds one (on 4.4 and 4.5, whose ``fcurves.new`` takes no group, its group
    is used instead of looking the name up: ``groups.get`` compares the names of every
    group, 12 us on a 200-bone action)."""
    if group is None:
        return owner.fcurves.new(data_path, index=index)
    if not SLOTTED_ACTIONS:
        return owner.fcurves.new(data_path, index=index, action_group=group)
    if CHANNELBAG_NEW_TAKES_GROUP:
        return owner.fcurves.new(data_path, index=index, group_name=group)
    fcurve = owner.fcurves.new(data_path, index=index)
    set_group(owner, fcurve, group, sibling)
    return fcurve


def set_group(
    owner: FCurveOwner,
    fcurve: bpy.types.FCurve,
    group: str,
    sibling: bpy.types.FCurve | None = None,
) -> None:
    """Move an F-curve of a `channelbag` result into the channel group ``group`` (created if
    missing), at the group's end; a curve already in it stays where it is. ``FCurve.group``
    is writable on every release (4.2 .. 5.2). ``sibling``: an F-curve of ``owner`` that may
    be in ``group`` already; if it is, its group is taken without a lookup by name."""
    if fcurve.group is not None and fcurve.group.name == group:
        return
    known = None if sibling is None else sibling.group
    if known is not None and known.name == group:
        fcurve.group = known
        return
    groups = getattr(owner, "groups")  # noqa: B009 (Action or ActionChannelbag)
    fcurve.group = groups.get(group) or groups.new(group)


def new_assigned_slot(anim: bpy.types.AnimData, obj: bpy.types.Object) -> Any:
    """Give an ``AnimData`` whose action has no slot assigned (4.4+) a new object slot named
    after ``obj``, assigned; returns it (``None`` before 4.4, where actions have no slots, or
    when a slot is assigned already)."""
    if not SLOTTED_ACTIONS or anim.action is None or assigned_slot(anim) is not None:
        return None
    slots = getattr(anim.action, "slots")  # noqa: B009 (4.4+)
    slot = slots.new(id_type='OBJECT', name=obj.name)
    setattr(anim, "action_slot", slot)  # noqa: B010 (4.4+)
    return slot
