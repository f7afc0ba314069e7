# SPDX-License-Identifier: GPL-3.0-or-later
"""Pose bones as the IK solver's chain (`rq_rotation.ik`), and its result written back.

`read_chain` turns the active bone and its parents into `Joint` records, root first, with
the conventions of `rq_rotation.ik`: joint ``i``'s offset is its rest frame in the frame of
joint ``i - 1`` after that joint's rotation, ``S_(i-1) @ rest_(i-1)^-1 @ rest_i @
T(location_i)`` (Blender's ``PoseBone.matrix`` recursion; ``S`` the parent's pose scale), the
first joint's also holds the armature's world matrix and the pose of the bones above the
chain, and the end effector is the last bone's tail, ``S @ (0, length, 0)``.

Each bone keeps its mode:

- RQ: an ``"rq"`` joint of ``rq_vector``; swing/twist: a ``"swing_twist"`` joint with the
  bone's ellipse and twist range, starting from the pose the drivers show (the swing scaled
  into the ellipse, the twist clamped);
- Euler modes: an ``"euler"`` joint of that order, ``lock_rotation`` as its locks;
- quaternion and axis-angle: an ``"rq"`` joint, or, when an axis is locked, an XYZ
  ``"euler"`` joint with those locks (Blender's transform limits such bones through XYZ
  Euler angles);
- a bone whose rotation is driven by anything but the add-on (a driver on its native
  rotation channel, or on one of its add-on parameters) is held: all three axes locked.

`read_chain` checks its model against Blender: the chain's tail computed from the joints must
be the bone's tail as Blender poses it (bone constraints, or bones that do not inherit
rotation or scale, are outside the model and refused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import bpy
import numpy as np
from mathutils import Matrix

from ..rq_rotation import (
    IKResult,
    Joint,
    blender_axis_angle_to_quat,
    chain_end,
    clamp_twist,
    euler_to_quat,
    quat_to_blender_axis_angle,
    quat_to_euler,
    quat_to_rq,
    rq_to_quat,
    scale_swing_into_ellipse,
)
from . import bone_modes

# How far Blender's tail may be from the model's before the chain is refused (chain lengths).
MODEL_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Chain:
    """The bones (root first), their joints, the end effector and the chain's length."""

    bone_names: tuple[str, ...]
    modes: tuple[str, ...]
    joints: tuple[Joint, ...]
    tip: np.ndarray
    held: tuple[str, ...]
    length: float


def chain_bones(active: bpy.types.PoseBone, chain_length: int) -> list[bpy.types.PoseBone]:
    """The active bone and its parents, root first: ``chain_length`` bones (0: to the root),
    as the IK constraint's ``chain_count`` counts them."""
    bones = [active]
    while bones[-1].parent is not None and (chain_length == 0 or len(bones) < chain_length):
        bones.append(bones[-1].parent)
    return bones[::-1]


def _matrix(m: Matrix) -> np.ndarray:
    return np.array([[m[i][j] for j in range(4)] for i in range(4)], dtype=np.float64)


def _driven_by_others(pose_bone: bpy.types.PoseBone, mode: str) -> bool:
    """Whether a driver other than the add-on's writes the bone's rotation."""
    animation = pose_bone.id_data.animation_data
    if animation is None:
        return False
    prefix = f'pose.bones["{bpy.utils.escape_identifier(pose_bone.name)}"]'
    if mode in bone_modes.ADDON_MODES:
        watched = tuple(f'{prefix}["{name}"]' for name, _ in bone_modes.PARAMETERS[mode])
    else:
        watched = tuple(
            f"{prefix}.{name}"
            for name in ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")
        )
    return any(fcurve.data_path in watched for fcurve in animation.drivers)


def _quaternion(pose_bone: bpy.types.PoseBone, mode: str) -> np.ndarray:
    if mode == "QUATERNION":
        return np.array(pose_bone.rotation_quaternion, dtype=np.float64)
    return blender_axis_angle_to_quat(np.array(pose_bone.rotation_axis_angle, dtype=np.float64))


def _joint(pose_bone: bpy.types.PoseBone, mode: str, offset: np.ndarray, held: bool) -> Joint:
    # (the stubs do not declare bpy_prop_array iterable)
    lock_rotation = cast(Any, pose_bone.lock_rotation)
    locks = (True, True, True) if held else tuple(bool(x) for x in lock_rotation)
    if mode == "RQ":
        return Joint("rq", bone_modes.parameter_values(pose_bone, mode), offset, locks)
    if mode == "SWING_TWIST":
        # the start is the pose the drivers show: the swing scaled into the ellipse, the
        # twist clamped (stored values outside the limits are not what the bone shows)
        sx, sz, twist = bone_modes.parameter_values(pose_bone, mode)
        swing_limit, twist_limit = bone_modes.joint_limits(pose_bone)
        swing = scale_swing_into_ellipse((sx, sz), *swing_limit)
        twist = float(clamp_twist(twist, *twist_limit))
        return Joint("swing_twist", (*swing, twist), offset, locks, swing_limit, twist_limit)
    if mode in ("QUATERNION", "AXIS_ANGLE"):
        q = _quaternion(pose_bone, mode)
        if any(locks):
            return Joint("euler", quat_to_euler(q, "XYZ"), offset, locks)
        return Joint("rq", quat_to_rq(q), offset)
    e = pose_bone.rotation_euler
    return Joint("euler", (e.x, e.y, e.z), offset, locks, euler_order=mode)


def read_chain(obj: bpy.types.Object, bones: list[bpy.types.PoseBone]) -> Chain:
    """The chain of ``bones`` (root first) as joints. Raises ValueError naming the bone for a
    zero-length bone, parameters that are not numbers, or a chain the model does not
    reproduce (constraints, bones not inheriting rotation or scale)."""
    joints: list[Joint] = []
    modes: list[str] = []
    held: list[str] = []
    previous: bpy.types.PoseBone | None = None
    for pose_bone in bones:
        if pose_bone.bone.length <= 0.0:
            raise ValueError(f'Bone "{pose_bone.name}" has zero length')
        mode = bone_modes.current_mode(pose_bone)
        if mode in bone_modes.ADDON_MODES:
            bone_modes.check_values(pose_bone)
        rest = pose_bone.bone.matrix_local
        parent = pose_bone.parent
        relative = rest if parent is None else parent.bone.matrix_local.inverted() @ rest
        location = pose_bone.location
        offset = relative @ Matrix.Translation((location.x, location.y, location.z))
        if previous is None:
            above = parent.matrix if parent is not None else Matrix.Identity(4)
            offset = obj.matrix_world @ above @ offset
        else:
            scale = previous.scale
            offset = Matrix.Diagonal((scale.x, scale.y, scale.z, 1.0)) @ offset
        is_held = _driven_by_others(pose_bone, mode)
        if is_held:
            held.append(pose_bone.name)
        joints.append(_joint(pose_bone, mode, _matrix(offset), is_held))
        modes.append(mode)
        previous = pose_bone
    last = bones[-1]
    tip = np.array([0.0, last.bone.length * last.scale[1], 0.0])
    start = np.stack([j.params for j in joints])
    end, length = chain_end(joints, tip, start)
    blender_tail = np.array(obj.matrix_world @ last.tail, dtype=np.float64)
    if np.linalg.norm(end - blender_tail) > MODEL_TOLERANCE * max(length, 1e-12):
        raise ValueError(
            f'The chain ending at "{last.name}" is posed by more than its rotations (bone '
            "constraints, or a bone that does not inherit rotation or scale)"
        )
    return Chain(
        tuple(b.name for b in bones), tuple(modes), tuple(joints), tip, tuple(held), length
    )


def write_result(obj: bpy.types.Object, chain: Chain, result: IKResult, key: bool) -> list[str]:
    """Write the new parameters into each moved bone, in its own mode, continuous with its
    current values; key them when ``key``. Returns the names of the bones written."""
    from .pose_mirror import key_rotation

    written = []
    for name, mode, joint, params in zip(
        chain.bone_names, chain.modes, chain.joints, result.params, strict=True
    ):
        if np.array_equal(params, joint.params):
            continue
        pose_bone = obj.pose.bones[name]
        values = [float(x) for x in params]
        if mode == "RQ":
            bone_modes.write_parameters(pose_bone, {"rq_vector": values})
        elif mode == "SWING_TWIST":
            bone_modes.write_parameters(pose_bone, {"rq_swing": values[:2], "rq_twist": values[2]})
        elif mode in ("QUATERNION", "AXIS_ANGLE"):
            q = euler_to_quat(params, "XYZ") if joint.kind == "euler" else rq_to_quat(params)
            current = _quaternion(pose_bone, mode)
            if q @ current < 0.0:  # the sign closest to the current quaternion
                q = -q
            if mode == "QUATERNION":
                pose_bone.rotation_quaternion = [float(x) for x in q]
            else:
                pose_bone.rotation_axis_angle = [float(x) for x in quat_to_blender_axis_angle(q)]
        else:
            pose_bone.rotation_euler = values
        if key:
            key_rotation(pose_bone)
        written.append(name)
    obj.update_tag()
    return written
