# SPDX-License-Identifier: GPL-3.0-or-later
"""Chains of pose bones for the core's IK solver (`rq_rotation.ik`), read and written back.

`read_chain` turns pose bones (root to tip) into `Joint` records, in the frames of the
solver's docstring: with ``rest`` a bone's ``matrix_local``, ``S`` its pose scale and
``T(location)`` its pose location,

    O_0 = world @ parent.matrix @ parent_rest^-1 @ rest_0 @ T(location_0)
          (world @ rest_0 @ T(location_0) for a root bone),
    O_i = S_(i-1) @ rest_(i-1)^-1 @ rest_i @ T(location_i),    tip = S_(n-1) @ (0, length, 0),

``world`` the armature's ``matrix_world`` and ``parent.matrix`` the evaluated pose above the
chain. Each bone keeps its mode:

* RQ bones are ``"rq"`` joints (``rq_vector``), swing/twist bones ``"swing_twist"`` joints
  (``rq_swing``, ``rq_twist``) with the bone's limits (`bone_modes.joint_limits`, meant as
  the core's ``effective_limits``), starting from the pose the drivers show (the swing scaled
  into the ellipse, the twist clamped); native rotation locks do not apply to them (R ignores
  them too);
* native Euler bones are ``"euler"`` joints in their order, ``lock_rotation`` locking angles;
* native quaternion and axis-angle bones are ``"rq"`` joints, or, with a locked axis,
  ``"euler"`` joints of order XYZ (as Blender's own transform tools lock them);
* a bone whose rotation is driven by anything but the add-on (a driver on a rotation channel
  or, for an add-on bone, on a parameter property) is held: all its axes locked.

A chain with a bone whose constraint acts is refused (the model leaves constraints out, and a
Limit Rotation that the start pose lies within changes nothing until the solver moves the bone
past it). The model is also checked against Blender before solving: every bone's frame
computed from the offsets and the bones' current rotations must be the pose Blender evaluated
(`Chain` refuses a chain posed by bone settings the offsets leave out, such as a bone that does
not inherit its parent's rotation).

`write_result` stores a solution in each bone's own mode: add-on bones through
`bone_modes.parameters_for_rotation` (the equivalent closest to the start, swing/twist within
its limits), native bones in their own channels (Euler angles as the solver moved them from
the start, quaternions on the start's side, axis-angle vectors the equivalents closest to
the start). Held bones are never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import bpy
import numpy as np
from numpy.typing import NDArray

from .. import rq_rotation as rq
from ..rq_rotation.ik import IKResult, Joint, solve_chain
from ..rq_rotation.modes import ADDON_MODES, EULER_ORDERS, MODES, RQ, parameters_of, values_to_quat
from . import bone_modes, drivers, pose_mirror

ROTATION_CHANNELS = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")
# Blender's pose matrices are float32: the model must match them to this, relative to the
# chain's size (the largest coordinate of its frames, at least 1).
MODEL_TOLERANCE = 1e-5
LIMIT_NAMES = {"swing": "swing limit", "twist_min": "twist min", "twist_max": "twist max"}
# A target counts as reached within this fraction of the chain's length (issue 14's 1e-4).
REACHED = 1e-4


@dataclass
class ChainBone:
    """One bone of a chain: its mode, its joint kind and its rotation values at the start
    (the parameters of an add-on bone, flattened; else its native channel's values)."""

    name: str
    mode: str
    kind: str
    start: NDArray[np.float64]
    held: bool


@dataclass
class Chain:
    """Pose bones from the root to the tip as the solver's joints."""

    obj_name: str
    bones: list[ChainBone]
    joints: list[Joint]
    tip: NDArray[np.float64]
    length: float  # heads and tails joined in order, world units

    def pose_bones(self) -> list[bpy.types.PoseBone]:
        pose = bpy.data.objects[self.obj_name].pose
        assert pose is not None
        return [pose.bones[bone.name] for bone in self.bones]


def chain_of(pose_bone: bpy.types.PoseBone, chain_length: int) -> list[bpy.types.PoseBone]:
    """The bone and its parents, root first: ``chain_length`` bones counting ``pose_bone``
    (as the IK constraint's ``chain_count``), 0 for all up to the root."""
    bones = [pose_bone]
    while bones[-1].parent is not None and (chain_length <= 0 or len(bones) < chain_length):
        bones.append(bones[-1].parent)
    return bones[::-1]


def auto_ik_chain(pose_bone: bpy.types.PoseBone) -> list[bpy.types.PoseBone]:
    """Blender's Auto IK chain of a grabbed bone, root first: the bone and its parents up to
    the first one that is not connected to its parent (included)."""
    bones = [pose_bone]
    while bones[-1].bone.use_connect and bones[-1].parent is not None:
        bones.append(bones[-1].parent)
    return bones[::-1]


def driven_by_others(pose_bone: bpy.types.PoseBone) -> bool:
    """Whether a driver that is not the add-on's sets the bone's rotation: one on a native
    rotation channel (other than the add-on's own drivers) or on a parameter property."""
    animation = pose_bone.id_data.animation_data
    if animation is None:
        return False
    prefix = pose_bone.path_from_id()
    mode = bone_modes.current_mode(pose_bone)
    ours = {(f.data_path, f.array_index) for f in drivers.bone_drivers(pose_bone)}
    ours = ours if mode in ADDON_MODES else set()
    parameters = {p.path for p in MODES[mode].parameters} if mode in ADDON_MODES else set()
    for fcurve in animation.drivers:
        path = fcurve.data_path
        if not path.startswith(prefix) or (fcurve.data_path, fcurve.array_index) in ours:
            continue
        rest = path[len(prefix) :]
        if rest.lstrip(".") in ROTATION_CHANNELS or rest in parameters:
            return True
    return False


def _native_values(pose_bone: bpy.types.PoseBone, mode: str) -> NDArray[np.float64]:
    channel = MODES[mode].parameters[0].path
    return np.array(getattr(pose_bone, channel), dtype=np.float64)


def _joint_of(
    pose_bone: bpy.types.PoseBone, offset: NDArray[np.float64]
) -> tuple[ChainBone, Joint]:
    """The bone's `ChainBone` and `Joint` (see the module docstring)."""
    mode = bone_modes.current_mode(pose_bone)
    held = driven_by_others(pose_bone)
    if held:  # its rotation as Blender evaluated it, all axes locked
        q = np.array(pose_bone.matrix_basis.to_quaternion(), dtype=np.float64)
        bone = ChainBone(pose_bone.name, mode, "rq", rq.quat_to_rq(q), True)
        return bone, Joint("rq", bone.start, offset, locks=(True, True, True))
    if mode in ADDON_MODES:
        start = np.array(bone_modes.parameter_values(pose_bone, mode), dtype=np.float64)
        if mode == RQ:
            return ChainBone(pose_bone.name, mode, "rq", start, False), Joint("rq", start, offset)
        swing, twist = bone_modes.joint_limits(pose_bone)
        bone = ChainBone(pose_bone.name, mode, "swing_twist", start, False)
        # The solver starts from the pose the drivers show: the swing scaled into the ellipse,
        # the twist clamped (stored values outside the limits would start it elsewhere).
        shown = np.array(
            [*rq.scale_swing_into_ellipse(start[:2], *swing), rq.clamp_twist(start[2], *twist)]
        )
        return bone, Joint("swing_twist", shown, offset, swing_limit=swing, twist_limit=twist)
    start = _native_values(pose_bone, mode)
    locks = cast(
        tuple[bool, bool, bool], tuple(bool(x) for x in cast(Any, pose_bone.lock_rotation))
    )
    bone = ChainBone(pose_bone.name, mode, "", start, False)
    if mode in EULER_ORDERS:
        bone.kind = "euler"
        return bone, Joint("euler", start, offset, locks=locks, euler_order=mode)
    q = values_to_quat(mode, start)
    if any(locks):
        bone.kind = "euler"
        return bone, Joint("euler", rq.quat_to_euler(q, "XYZ"), offset, locks=locks)
    bone.kind = "rq"
    return bone, Joint("rq", rq.quat_to_rq(q), offset)


def _translation(location: Any) -> NDArray[np.float64]:
    t = np.eye(4)
    t[:3, 3] = location
    return t


def _scale(pose_bone: bpy.types.PoseBone) -> NDArray[np.float64]:
    return np.diag([*(float(s) for s in cast(Any, pose_bone.scale)), 1.0])


def read_chain(pose_bones: Sequence[bpy.types.PoseBone]) -> Chain:
    """The chain of ``pose_bones`` (root to tip, each the parent of the next) as joints.

    Reads the evaluated pose: evaluate the depsgraph first. Raises ValueError naming the bone
    for a stored value no tool can use (`bone_modes.check_values`), a bone of zero length
    (scaled to nothing), a chain in which nothing can turn (every bone held or every axis
    locked), a bone with a constraint that acts, and a chain posed other than the model says
    (bone settings).
    """
    obj = cast(bpy.types.Object, pose_bones[0].id_data)
    for pose_bone in pose_bones:
        bone_modes.check_values(pose_bone)
        _check_unconstrained(pose_bone)
    world = np.array(obj.matrix_world, dtype=np.float64)
    rests = [np.array(pb.bone.matrix_local, dtype=np.float64) for pb in pose_bones]
    root = pose_bones[0]
    if root.parent is None:
        above = world
    else:
        above = (
            world
            @ np.array(root.parent.matrix, dtype=np.float64)
            @ np.linalg.inv(np.array(root.parent.bone.matrix_local, dtype=np.float64))
        )
    bones: list[ChainBone] = []
    joints: list[Joint] = []
    for i, pose_bone in enumerate(pose_bones):
        if i == 0:
            offset = above @ rests[0]
        else:
            offset = _scale(pose_bones[i - 1]) @ np.linalg.inv(rests[i - 1]) @ rests[i]
        offset = offset @ _translation(pose_bone.location)
        bone, joint = _joint_of(pose_bone, offset)
        bones.append(bone)
        joints.append(joint)
    tip = _scale(pose_bones[-1])[:3, :3] @ np.array([0.0, pose_bones[-1].bone.length, 0.0])
    for pose_bone in pose_bones:
        head, tail = (obj.matrix_world @ p for p in (pose_bone.head, pose_bone.tail))
        if (tail - head).length <= 1e-9 * max(1.0, pose_bone.bone.length):
            raise ValueError(f"bone '{pose_bone.name}' has zero length (scaled to nothing)")
    movable = [
        b.name
        for b, j in zip(bones, joints, strict=True)
        if not b.held and not all(j.locks) and not _zero_range(j)
    ]
    if not movable:
        names = ", ".join(f"{b.name} ({'driven' if b.held else 'locked'})" for b in bones)
        raise ValueError(f"no bone of the chain can turn: {names}")
    points = [obj.matrix_world @ p for pb in pose_bones for p in (pb.head, pb.tail)]
    length = sum((b - a).length for a, b in zip(points, points[1:], strict=False))
    chain = Chain(obj.name, bones, joints, tip, float(length))
    _check_model(chain, list(pose_bones), world)
    return chain


def _check_unconstrained(pose_bone: bpy.types.PoseBone) -> None:
    """Refuse (ValueError) a bone with a constraint that acts (not muted, a nonzero
    influence, valid settings): the solver's model leaves constraints out, and one that does
    not act at the start (a Limit Rotation whose range holds the start pose) passes
    `_check_model` and then moves the bone away from the pose solved."""
    for constraint in pose_bone.constraints:
        if not constraint.mute and constraint.influence > 0.0 and constraint.is_valid:
            raise ValueError(
                f"bone '{pose_bone.name}' has the constraint '{constraint.name}', which IK "
                "posing does not model: mute it, or leave the bone out of the chain"
            )


def _zero_range(joint: Joint) -> bool:
    """A swing/twist joint whose limits leave no freedom (zero ellipse, a point range)."""
    if joint.kind != "swing_twist":
        return False
    a, b, low, high = (
        float(x) for x in rq.effective_limits(*joint.swing_limit, *joint.twist_limit)
    )
    return a <= 0.0 and b <= 0.0 and low >= high


def _check_model(
    chain: Chain, pose_bones: list[bpy.types.PoseBone], world: NDArray[np.float64]
) -> None:
    """Refuse the chain unless the offsets and each bone's evaluated rotation give the frames
    Blender evaluated (see the module docstring)."""
    frame = np.eye(4)
    for joint, pose_bone in zip(chain.joints, pose_bones, strict=True):
        rotation = np.eye(4)
        rotation[:3, :3] = rq.quat_to_matrix(np.array(pose_bone.matrix_basis.to_quaternion()))
        frame = frame @ np.asarray(joint.offset, dtype=np.float64) @ rotation
        blender = world @ np.array(pose_bone.matrix, dtype=np.float64)
        modelled = frame @ _scale(pose_bone)
        size = max(1.0, float(np.abs(blender[:3, 3]).max()))
        if np.abs(modelled - blender).max() > MODEL_TOLERANCE * size:
            raise ValueError(
                f"bone '{pose_bone.name}' is posed by something IK posing does not model "
                "(a bone that does not inherit its parent's rotation and scale, or local "
                "location off)"
            )


def solve(chain: Chain, target: Sequence[float]) -> IKResult:
    """The solver's pose of the chain reaching ``target`` (world space, finite)."""
    return solve_chain(chain.joints, chain.tip, np.asarray(target, dtype=np.float64))


def advanced(chain: Chain, result: IKResult) -> Chain:
    """The chain starting from ``result``'s pose (the next solve of a drag starts there)."""
    joints = [replace(j, params=p) for j, p in zip(chain.joints, result.params, strict=True)]
    return replace(chain, joints=joints)


def write_result(chain: Chain, result: IKResult, near: Chain | None = None) -> None:
    """Store ``result`` in each movable bone's own mode (see the module docstring), each the
    equivalent closest to its values in ``near`` (default: ``chain``'s start)."""
    reference = near if near is not None else chain
    for bone, before, joint, params, pose_bone in zip(
        chain.bones, reference.bones, chain.joints, result.params, chain.pose_bones(), strict=True
    ):
        if bone.held:
            continue
        if bone.mode in EULER_ORDERS:  # the solver's own angles: locks exact, continuous
            pose_bone.rotation_euler = tuple(float(x) for x in params)
            pose_bone.id_data.update_tag()
            continue
        _write(pose_bone, bone, _joint_quat(joint, params), before.start)


def current_values(chain: Chain) -> Chain:
    """``chain`` with each bone's ``start`` read again from the bones (after a write)."""
    bones = []
    for bone, pose_bone in zip(chain.bones, chain.pose_bones(), strict=True):
        if bone.mode in ADDON_MODES:
            values = np.array(bone_modes.parameter_values(pose_bone, bone.mode), dtype=np.float64)
        else:
            values = _native_values(pose_bone, bone.mode)
        bones.append(replace(bone, start=values))
    return replace(chain, bones=bones)


def restore(chain: Chain) -> None:
    """Put every movable bone back to its ``start`` values."""
    for bone, pose_bone in zip(chain.bones, chain.pose_bones(), strict=True):
        if bone.held:
            continue
        if bone.mode in ADDON_MODES:
            bone_modes.write_parameters(pose_bone, _parameters(bone.mode, bone.start))
        else:
            setattr(pose_bone, MODES[bone.mode].parameters[0].path, tuple(bone.start))
    bpy.data.objects[chain.obj_name].update_tag()


def key(chain: Chain) -> None:
    """Key the rotation channels of every movable bone (`pose_mirror.key_rotation`)."""
    for bone, pose_bone in zip(chain.bones, chain.pose_bones(), strict=True):
        if not bone.held:
            pose_mirror.key_rotation(pose_bone)


def at_limits(chain: Chain, result: IKResult) -> list[str]:
    """``"Bone swing limit"``, ``"Bone twist max"``: the limits the result lies on."""
    return _limit_names(chain, result.active)


def stopped_by(chain: Chain, result: IKResult) -> list[str]:
    """The limits that hold the result back (`IKResult.holding`), named as `at_limits` names
    them: a limit the pose only lies on, such as a twist at its end on a chain stretched
    straight and too short, stopped nothing."""
    return _limit_names(chain, result.holding)


def _limit_names(chain: Chain, per_joint: tuple[tuple[str, ...], ...]) -> list[str]:
    return [
        f"{bone.name} {LIMIT_NAMES[name]}"
        for bone, names in zip(chain.bones, per_joint, strict=True)
        for name in names
    ]


def tail_distance(chain: Chain, target: Sequence[float]) -> float:
    """Distance from the chain's last bone's tail, as Blender evaluated it, to ``target``."""
    obj = bpy.data.objects[chain.obj_name]
    tail = obj.matrix_world @ chain.pose_bones()[-1].tail
    return float(np.linalg.norm(np.array(tail) - np.asarray(target, dtype=np.float64)))


def _parameters(mode: str, flat: NDArray[np.float64]) -> dict[str, Any]:
    return parameters_of(mode, [float(x) for x in flat])


def _joint_quat(joint: Joint, params: NDArray[np.float64]) -> NDArray[np.float64]:
    """The rotation of a joint at ``params`` as a quaternion."""
    if joint.kind == "rq":
        return rq.rq_to_quat(params)
    if joint.kind == "swing_twist":
        return rq.swing_twist_to_quat(params[:2], params[2])
    return rq.euler_to_quat(params, cast(Any, joint.euler_order))


def _write(
    pose_bone: bpy.types.PoseBone, bone: ChainBone, q: NDArray[np.float64], near: Any
) -> None:
    """Give an add-on, quaternion or axis-angle bone the rotation ``q`` in its mode, the
    equivalent closest to ``near``."""
    mode = bone.mode
    if mode in ADDON_MODES:
        values, _ = bone_modes.parameters_for_rotation(
            pose_bone, q, near=_parameters(mode, np.asarray(near))
        )
        bone_modes.write_parameters(pose_bone, values)
        return
    near = np.asarray(near, dtype=np.float64)
    if mode == "QUATERNION":
        sign = -1.0 if float(np.dot(q, near)) < 0.0 else 1.0
        pose_bone.rotation_quaternion = tuple(float(x) * sign for x in q)
    else:  # AXIS_ANGLE: the vector closest to the start's, its axis kept at angle 0
        v = rq.quat_to_rq(q, near=rq.blender_axis_angle_to_rq(near))
        angle = float(np.linalg.norm(v))
        axis = v / angle if angle > 0.0 else near[1:]
        setattr(pose_bone, "rotation_axis_angle", (angle, *(float(x) for x in axis)))  # noqa: B010
    pose_bone.id_data.update_tag()
