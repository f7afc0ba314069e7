# SPDX-License-Identifier: GPL-3.0-or-later
"""A bone's rotation mirrored onto the bone with the flipped name (``Arm.L`` <-> ``Arm.R``),
as Blender's Paste Flipped and X-Axis Mirror mirror native rotations.

The conventions are the core's (`rq_rotation.mirror`): the local rotation ``R`` becomes
``P R P`` with ``P = diag(-1, 1, 1)``. Between bones in the same add-on mode the parameters
mirror directly (RQ ``(x, y, z) -> (x, -y, -z)``, extra turns kept; swing/twist
``(r_x, r_z, t) -> (r_x, -r_z, -t)``); otherwise through the mirrored quaternion, written in
the target's own mode (the equivalent closest to its current parameters). A swing/twist
target's values are limited as ``pose.rq_rotate`` limits them: the closest point of its swing
ellipse and the twist clamped to its range, so the stored values are the pose shown.

`Mirror` is what ``pose.rq_rotate`` keeps for X-Axis Mirror: the mirror bone and its rotation
when the drag began (for Esc).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import bpy
import numpy as np
from mathutils import Matrix, Quaternion

from ..rq_rotation import (
    mirror_quat,
    mirror_rq,
    mirror_swing_twist,
)
from ..rq_rotation.modes import (
    ADDON_MODES,
    MODES,
    RQ,
    RQ_VECTOR,
    flat_values,
    values_to_quat,
)
from . import bone_modes

# What a bone's rotation is written as: an add-on bone's parameters ({"rq_vector": [...]}),
# or a native bone's rotation as a quaternion.
Pose = dict[str, Any] | Quaternion


def mirror_bone(pose_bone: bpy.types.PoseBone) -> bpy.types.PoseBone | None:
    """The bone named ``bpy.utils.flip_name(name)`` in the same pose, or None (also for a
    centre bone, whose flipped name is its own)."""
    name = bpy.utils.flip_name(pose_bone.name)
    pose = cast(bpy.types.Object, pose_bone.id_data).pose
    if name == pose_bone.name or pose is None:
        return None
    return pose.bones.get(name)


def pose_of(pose_bone: bpy.types.PoseBone) -> tuple[str, Pose]:
    """A bone's mode and its rotation as `Pose`: its parameters, or its basis quaternion."""
    mode = bone_modes.current_mode(pose_bone)
    if mode in ADDON_MODES:
        return mode, bone_modes.read_parameters(pose_bone, mode)
    return mode, pose_bone.matrix_basis.to_quaternion()


def transferred(source_mode: str, pose: Pose, target: bpy.types.PoseBone, flip: bool) -> Pose:
    """``pose`` (of a bone in ``source_mode``) written in ``target``'s mode, mirrored across X
    when ``flip``; see the module docstring."""
    target_mode = bone_modes.current_mode(target)
    if target_mode == source_mode and isinstance(pose, dict):
        flat = flat_values(source_mode, pose)
        if source_mode == RQ:
            return {RQ_VECTOR.name: [float(x) for x in (mirror_rq(flat) if flip else flat)]}
        swing, twist = mirror_swing_twist(flat[:2], flat[2]) if flip else (flat[:2], flat[2])
        return bone_modes.limited_swing_twist(target, swing, float(twist))[0]
    if isinstance(pose, dict):
        q = values_to_quat(source_mode, flat_values(source_mode, pose))
    else:
        q = np.array(pose, dtype=np.float64)
    if flip:
        q = mirror_quat(q)
    if target_mode in ADDON_MODES:
        return bone_modes.parameters_for_rotation(target, q)[0]
    return Quaternion([float(x) for x in q])


def write(pose_bone: bpy.types.PoseBone, pose: Pose) -> None:
    """Give a bone a `Pose`: store parameters, or set a native bone's rotation (its location
    and scale kept)."""
    if isinstance(pose, dict):
        bone_modes.write_parameters(pose_bone, pose)
        return
    location, _, scale = cast(Any, pose_bone.matrix_basis.decompose())
    pose_bone.matrix_basis = Matrix.LocRotScale(location, pose, scale)


@dataclass
class Mirror:
    """X-Axis Mirror during a drag: ``source`` is dragged, ``target`` follows mirrored;
    ``start`` is the target's rotation when the drag began."""

    obj_name: str
    source: str
    target: str
    start: Pose


def mirrors(bones: list[bpy.types.PoseBone]) -> list[Mirror]:
    """The mirror bones that follow ``bones`` (the dragged bones) with X-Axis Mirror: only on
    armatures whose ``pose.use_mirror_x`` is on, and only bones that are not dragged
    themselves (as in Blender, a selected pair moves each bone by itself)."""
    dragged = {(bone.id_data.name, bone.name) for bone in bones}
    found = []
    for bone in bones:
        obj = cast(bpy.types.Object, bone.id_data)
        target = mirror_bone(bone) if obj.pose is not None and obj.pose.use_mirror_x else None
        if target is not None and (obj.name, target.name) not in dragged:
            found.append(Mirror(obj.name, bone.name, target.name, pose_of(target)[1]))
    return found


def _bone(obj_name: str, name: str) -> bpy.types.PoseBone:
    pose = bpy.data.objects[obj_name].pose
    assert pose is not None
    return pose.bones[name]


def follow(found: list[Mirror], pose_bone: bpy.types.PoseBone, mode: str, pose: Pose) -> None:
    """The dragged ``pose_bone`` (in ``mode``) was given ``pose``: mirror it onto its mirror
    bone, if it has one in ``found``."""
    obj_name = pose_bone.id_data.name
    for mirror in found:
        if mirror.obj_name == obj_name and mirror.source == pose_bone.name:
            target = _bone(obj_name, mirror.target)
            write(target, transferred(mode, pose, target, flip=True))


def restore(found: list[Mirror]) -> None:
    """Put the mirror bones back as they were when the drag began (Esc)."""
    for mirror in found:
        write(_bone(mirror.obj_name, mirror.target), mirror.start)


def key_rotation(pose_bone: bpy.types.PoseBone) -> list[str]:
    """Key a bone's rotation channels at the current frame (its mode's parameters, see
    ``rq_rotation.modes``), in the channel group named after it. Returns the data paths
    Blender refused to key (a locked or sampled F-curve: ``keyframe_insert`` returns False,
    whatever the preferences, measured in 4.2 and 5.2)."""
    return [
        parameter.path
        for parameter in MODES[bone_modes.current_mode(pose_bone)].parameters
        if not pose_bone.keyframe_insert(parameter.path, group=pose_bone.name)
    ]


def key_targets(found: list[Mirror]) -> None:
    """Auto-keying: key the mirror bones' rotation channels."""
    for mirror in found:
        key_rotation(_bone(mirror.obj_name, mirror.target))
