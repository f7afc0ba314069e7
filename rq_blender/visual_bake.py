# SPDX-License-Identifier: GPL-3.0-or-later
"""Visual keying into the add-on's channels: the rotation Blender evaluates for a bone,
constraints included, written as keys of the bone's own parameters (``pose.rq_bake_visual``).

Sampling (`sample`): per frame the scene is evaluated with ``scene.frame_set`` (as Blender's
``nla.bake`` does; setting ``frame_current`` and updating the view layer poses the same but
measured slower: 2.7 against 1.7 ms per frame for 200 constrained RQ bones in 5.2), and each
bone's *visual local matrix* is read with ``Object.convert_space(POSE -> LOCAL)`` of its
``pose_bone.matrix``: Blender's ``BKE_armature_mat_pose_to_bone``, which its own visual
keying uses, so the parent's evaluated pose, the rest pose and every inheritance option are
taken as Blender takes them (0.5 ms per frame for those 200 bones).

Planning (`plan_bake`): the visual rotation (the matrix's columns normalized) is converted
into the bone's mode along its time line with continuity (``keyframes.continuity``: each
frame the equivalent closest to the previous one, the first closest to the bone's own
values at that frame). Swing/twist values are stored inside user-set joint limits
(``keyframes.limits.fit_to_limits``: the closest point where the constrained pose left
them, which `BonePlan.broken` measures), and a baked child of a bone so held is planned
against its parent as keyed, so that it keeps its visual orientation (parents first);
limits that restrict nothing are widened after writing to cover the keys, as converting
does (``conversion.widen_limits``). Location and
scale that constraints add (the visual local matrix against the bone's own channels) are
not captured: `BonePlan.location_added`, `BonePlan.scale_added`.

Writing (`write_plans`): keys on every sampled frame in the object's active action (one is
made if it has none), replacing the keys inside the baked span and keeping the others
(``animdata.splice_keys``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import bpy
import numpy as np

from ..rq_rotation import matrix_to_quat, quat_angle_between, quat_conjugate, quat_multiply
from ..rq_rotation.keyframes.continuity import continuous_values
from ..rq_rotation.keyframes.limits import fit_to_limits, limits_restrict_nothing, shorten_swings
from ..rq_rotation.modes import ADDON_MODES, MODES, SWING_TWIST, rotation_vectors, values_to_quat
from . import animdata, bone_modes, compat, conversion, parameter_curves

# Visual location (bone-local units) and scale that differ from the bone's own channels by
# more than this were added by constraints (float32 poses agree to about 1e-6).
ADDED_TOLERANCE = 1e-4
# Degrees by which a pose may leave the joint limits unreported: float32 poses on the
# boundary (an IK that stops there) fall outside by about 1e-5 degrees.
BROKEN_TOLERANCE = 1e-3


@dataclass(frozen=True)
class BakeBone:
    """A bone to bake: its armature, name and add-on mode ('RQ' or 'SWING_TWIST')."""

    obj: bpy.types.Object
    name: str
    mode: str

    @property
    def pose_bone(self) -> bpy.types.PoseBone:
        return self.obj.pose.bones[self.name]


@dataclass
class Sampled:
    """What `sample` read, for B bones at F frames.

    ``local`` (B, F, 4, 4): the visual local matrices; ``location``, ``scale`` (B, F, 3): the
    bone's own location and scale channels; ``near`` (B, 3): rotation vectors
    (``modes.rotation_vectors``) of the bone's parameters at the first frame.
    """

    frames: np.ndarray
    local: np.ndarray
    location: np.ndarray
    scale: np.ndarray
    near: np.ndarray


@dataclass
class BonePlan:
    """The keys of one bone, computed before anything changes.

    ``values`` (F, k): channel values of the bone's mode (`modes.MODES`) at each frame.
    ``broken`` (F,): degrees between the visual rotation and the stored one where the
    visual pose left the bone's joint limits (0 elsewhere). ``location_added`` (F,):
    distance between the visual and the bone's own location; ``scale_added`` (F,): the
    largest difference between the visual scale and the bone's own, per axis.
    ``unlimited``: a swing/twist bone whose limits restrict nothing (widened after writing).
    """

    bone: BakeBone
    values: np.ndarray
    broken: np.ndarray
    location_added: np.ndarray
    scale_added: np.ndarray
    unlimited: bool = True
    widened: bool = field(default=False)


def selected_bones(context: bpy.types.Context) -> list[BakeBone]:
    """The selected pose bones in an add-on mode, of every armature in Pose mode."""
    found = []
    for obj, name in parameter_curves.selected_pose_bones(context):
        mode = bone_modes.current_mode(obj.pose.bones[name])
        if mode in ADDON_MODES:
            found.append(BakeBone(obj, name, mode))
    return found


def check_bake(bones: Sequence[BakeBone], frames: tuple[float, float]) -> None:
    """Refuse, before anything is evaluated, what the bake cannot do: a frame range that
    ends before it starts, stored values no tool can use (`bone_modes.check_values`), an
    armature in NLA tweak mode (its active action runs in a strip's time), an active action
    linked from a library (`animdata.check_editable`), a parameter F-curve the keys would go
    into that is muted (Blender does not play it: the keys would
    not pose the bone) or locked (Blender's editing tools leave it alone). Raises ValueError
    saying which."""
    if frames[1] < frames[0]:
        raise ValueError(f"the frame range ends ({frames[1]:g}) before it starts ({frames[0]:g})")
    for bone in bones:
        bone_modes.check_values(bone.pose_bone)
        anim = bone.obj.animation_data
        if anim is not None and anim.use_tweak_mode:
            raise ValueError(f"{bone.obj.name} is in NLA tweak mode: leave it first")
        if anim is not None and anim.action is not None:
            _check_target_curves(bone, animdata.ActionUse(anim.action, compat.assigned_slot(anim)))


def _check_target_curves(bone: BakeBone, use: animdata.ActionUse) -> None:
    """Refuse (ValueError) a muted or locked parameter F-curve of ``bone`` in ``use`` (the
    active action, which `write_plans` writes), or an action that cannot be edited here."""
    animdata.check_editable(use.action)
    owner = animdata.fcurve_owner(use)
    if owner is None:
        return
    for parameter in MODES[bone.mode].parameters:
        path = animdata.bone_data_path(bone.name, parameter.path)
        for index in range(parameter.size):
            fcurve = owner.fcurves.find(path, index=index)
            if fcurve is None:
                continue
            animdata.check_unmuted(bone.name, use, fcurve, "baked keys there would not pose it")
            animdata.check_unlocked(bone.name, use, fcurve)


def sample(
    scene: bpy.types.Scene,
    bones: Sequence[BakeBone],
    frames: np.ndarray,
    progress: Callable[[float], None] | None = None,
) -> Sampled:
    """Evaluate the scene at each of ``frames`` (F,) and read the bones' visual local
    matrices and own location and scale (see the module docstring). Leaves the scene at the
    last frame: the caller puts the frame back. ``progress(i)`` after the i-th frame."""
    count, n = len(bones), len(frames)
    local = np.empty((n, count, 4, 4))
    location = np.empty((n, count, 3))
    scale = np.empty((n, count, 3))
    near = np.empty((count, 3))
    pose_bones = [(bone.obj, bone.pose_bone) for bone in bones]
    # Per armature: where its baked bones are in ``obj.pose.bones`` and in ``bones``, for
    # reading every bone's location and scale in one `foreach_get` each.
    groups: dict[str, tuple[bpy.types.Object, list[int], list[int]]] = {}
    for j, bone in enumerate(bones):
        _, where, columns = groups.setdefault(bone.obj.name_full, (bone.obj, [], []))
        where.append(bone.obj.pose.bones.find(bone.name))
        columns.append(j)
    for i, frame in enumerate(frames):
        whole = math.floor(frame)
        scene.frame_set(whole, subframe=float(frame - whole))
        # Rows gathered in a list and converted once: numpy 1.26 (Blender 4.x) converts a
        # mathutils Matrix element by element, 17x slower (measured in 4.5).
        rows: list[float] = []
        for obj, pose_bone in pose_bones:
            matrix = obj.convert_space(
                pose_bone=pose_bone, matrix=pose_bone.matrix, from_space='POSE', to_space='LOCAL'
            )
            for index in range(4):
                rows.extend(matrix[index].to_tuple())
        local[i] = np.reshape(rows, (count, 4, 4))
        for obj, where, columns in groups.values():
            for name, out in (("location", location), ("scale", scale)):
                read = np.empty(3 * len(obj.pose.bones), dtype=np.float32)
                obj.pose.bones.foreach_get(name, read)
                out[i, columns] = read.reshape(-1, 3)[where]
        if i == 0:
            for j, bone in enumerate(bones):
                values = bone_modes.parameter_values(bone.pose_bone, bone.mode)
                near[j] = rotation_vectors(bone.mode, np.asarray(values))
        if progress is not None:
            progress(i + 1)
    return Sampled(
        np.asarray(frames, dtype=np.float64),
        local.transpose(1, 0, 2, 3),
        location.transpose(1, 0, 2),
        scale.transpose(1, 0, 2),
        near,
    )


def plan_bake(bones: Sequence[BakeBone], sampled: Sampled) -> list[BonePlan]:
    """The keys of each bone (`BonePlan`), from what `sample` read (see the module
    docstring). Raises ValueError naming the bone and frame where the evaluated pose has no
    rotation (not finite, or a zero scale)."""
    rotation = sampled.local[..., :3, :3]
    visual_scale = np.linalg.norm(rotation, axis=-2)  # (B, F, 3) column lengths
    bad = ~np.isfinite(sampled.local).all(axis=(-2, -1)) | ~(visual_scale > 0).all(axis=-1)
    if bad.any():
        j, i = np.argwhere(bad)[0]
        raise ValueError(
            f"bone '{bones[j].name}' has no rotation at frame {sampled.frames[i]:g} "
            "(its evaluated pose is not finite or has a zero scale)"
        )
    quats = matrix_to_quat(rotation / visual_scale[..., None, :])  # (B, F, 4)
    values: list[np.ndarray] = [np.empty(0)] * len(bones)
    for mode in {bone.mode for bone in bones}:
        index = [j for j, bone in enumerate(bones) if bone.mode == mode]
        for j, line in zip(
            index, continuous_values(mode, quats[index], sampled.near[index]), strict=True
        ):
            values[j] = line
    location_added = np.linalg.norm(sampled.local[..., :3, 3] - sampled.location, axis=-1)
    scale_added = np.abs(visual_scale - sampled.scale).max(axis=-1)
    plans: list[BonePlan | None] = [None] * len(bones)
    # Each bone's rotation change in its own frame where a parent's keys differ from its
    # visual pose (held within its limits), (F, 4): its baked children keep their visual
    # orientation against the parent as keyed, not as the constraints posed it.
    changes: dict[int, np.ndarray] = {}
    place = {(bone.obj.name_full, bone.name): j for j, bone in enumerate(bones)}
    for j in sorted(range(len(bones)), key=lambda j: _depth(bones[j].pose_bone)):
        bone = bones[j]
        stored, visual, target = values[j], quats[j], quats[j]
        parent = _baked_parent(bone, place)
        inherited = None if parent is None else changes.get(parent)
        if inherited is not None:
            # the bone keeps W = W_p O L (O its rest offset) under the keyed parent's
            # W_p E_p: its local rotation becomes O^-1 E_p^-1 O L
            offset = _rest_offset(bone.pose_bone)
            target = _turned(offset, quat_conjugate(inherited), visual)
            stored = continuous_values(bone.mode, target[None], sampled.near[j : j + 1])[0]
        broken = np.zeros(len(sampled.frames))
        unlimited = True
        moved = np.zeros(len(sampled.frames), dtype=bool)
        if bone.mode == SWING_TWIST:
            swing_limit, twist_limit = bone_modes.joint_limits(bone.pose_bone)
            unlimited = limits_restrict_nothing(swing_limit, twist_limit)
            if unlimited:
                stored = shorten_swings(stored)
            else:
                stored, moved = fit_to_limits(stored, swing_limit, twist_limit)
        if moved.any() or inherited is not None:
            keyed = values_to_quat(bone.mode, stored)
            broken[moved] = np.degrees(quat_angle_between(keyed[moved], target[moved]))
            # keyed, W' = W_p E_p O L_keyed = W E with E = L^-1 O^-1 E_p O L_keyed
            if inherited is not None:
                keyed = _turned(offset, inherited, keyed)
            changes[j] = quat_multiply(quat_conjugate(visual), keyed)
        plans[j] = BonePlan(bone, stored, broken, location_added[j], scale_added[j], unlimited)
    return [plan for plan in plans if plan is not None]


def _turned(offset: np.ndarray, change: np.ndarray, local: np.ndarray) -> np.ndarray:
    """``O^-1 change O local``: the local rotations (F, 4) ``local`` of a bone whose rest
    offset on its parent is ``O`` = ``offset`` (4,), after the parent's own frame turned by
    ``change`` (F, 4)."""
    return quat_multiply(
        quat_conjugate(offset), quat_multiply(change, quat_multiply(offset, local))
    )


def _depth(pose_bone: bpy.types.PoseBone) -> int:
    """How many parents the bone has."""
    return len(pose_bone.parent_recursive)


def _baked_parent(bone: BakeBone, place: dict[tuple[str, str], int]) -> int | None:
    """The index of the bone's parent among the baked bones (``place``: by armature and
    name), or None: it has none there, or does not inherit its rotation."""
    pose_bone = bone.pose_bone
    if pose_bone.parent is None or not pose_bone.bone.use_inherit_rotation:
        return None
    return place.get((bone.obj.name_full, pose_bone.parent.name))


def _rest_offset(pose_bone: bpy.types.PoseBone) -> np.ndarray:
    """The rotation (4,) of the bone's rest frame in its parent's: ``parent_rest^-1 rest``."""
    bone = pose_bone.bone
    assert bone.parent is not None
    offset = np.array(bone.parent.matrix_local.to_3x3().inverted() @ bone.matrix_local.to_3x3())
    return matrix_to_quat(offset)


@contextmanager
def constraints_muted_on_failure(bones: Sequence[BakeBone]) -> Iterator[None]:
    """Put the ``mute`` flags of the constraints `mute_constraints` may mute back if the
    block raises (what `transaction.all_or_nothing` does not record)."""
    mutes = [(c, c.mute) for _, c in _constraints_on(bones)]
    try:
        yield
    except BaseException:
        for constraint, mute in mutes:
            constraint.mute = mute
        raise


def active_action(obj: bpy.types.Object) -> animdata.ActionUse:
    """The object's active action with its slot, made (and a slot assigned, 4.4+) when
    missing. Call inside `transaction.all_or_nothing`, which removes it if the block fails."""
    anim = obj.animation_data or obj.animation_data_create()
    if anim.action is None:
        anim.action = bpy.data.actions.new(f"{obj.name}Action")
    compat.new_assigned_slot(anim, obj)
    return animdata.ActionUse(anim.action, compat.assigned_slot(anim))


def write_plans(
    plans: Sequence[BonePlan],
    frames: np.ndarray,
    progress: Callable[[float], None] | None = None,
) -> None:
    """Write each plan's keys at ``frames`` (F,) into its object's active action (`active_action`),
    replacing keys within the span and keeping the others (``animdata.splice_keys``), in the
    bone's channel group (its name). Widens the limits of unlimited swing/twist bones to
    cover their curves (sets ``plan.widened``). ``progress(i)`` after the i-th plan."""
    owners: dict[str, compat.FCurveOwner] = {}
    for done, plan in enumerate(plans):
        obj, name = plan.bone.obj, plan.bone.name
        if obj.name_full not in owners:
            owner = animdata.fcurve_owner(active_action(obj), ensure=True)
            assert owner is not None  # ensure=True with a slot
            owners[obj.name_full] = owner
        owner = owners[obj.name_full]
        written = []
        column = 0
        for parameter in MODES[plan.bone.mode].parameters:
            path = animdata.bone_data_path(name, parameter.path)
            for index in range(parameter.size):
                written.append(
                    animdata.splice_keys(owner, path, index, name, frames, plan.values[:, column])
                )
                column += 1
        pose_bone = plan.bone.pose_bone
        if plan.bone.mode == SWING_TWIST and plan.unlimited:
            static = np.asarray(bone_modes.parameter_values(pose_bone, plan.bone.mode))
            plan.widened = conversion.widen_limits(pose_bone, written, static)
        if progress is not None:
            progress(done + 1)
    for obj in {plan.bone.obj.name_full: plan.bone.obj for plan in plans}.values():
        obj.update_tag()


# The constraints that turn the parents of the bone they are on (their ``chain_count``).
IK_TYPES = ('IK', 'SPLINE_IK')


def mute_constraints(bones: Sequence[BakeBone]) -> tuple[int, list[str]]:
    """Mute the constraints that pose the bones (`_constraints_on`, reversibly:
    ``constraint.mute``); returns how many were muted and the bones that were not baked but
    whose pose changes with them (an IK constraint turns its whole chain: the bone it is on
    and the parents it reaches)."""
    baked = {(bone.obj.name_full, bone.name) for bone in bones}
    muted = 0
    freed: list[str] = []
    for pose_bone, constraint in _constraints_on(bones):
        if constraint.mute:
            continue
        constraint.mute = True
        muted += 1
        if constraint.type in IK_TYPES:
            chain = [pose_bone, *_ik_chain(pose_bone, _chain_count(constraint))]
            obj = pose_bone.id_data
            freed.extend(b.name for b in chain if (obj.name_full, b.name) not in baked)
    return muted, list(dict.fromkeys(freed))


def _chain_count(constraint: bpy.types.Constraint) -> int:
    return cast(bpy.types.KinematicConstraint, constraint).chain_count


def _constraints_on(
    bones: Sequence[BakeBone],
) -> list[tuple[bpy.types.PoseBone, bpy.types.Constraint]]:
    """``(pose bone, constraint)`` for each constraint that poses one of the bones: their own,
    and the IK constraints of other bones whose chain reaches one (an IK on a hand turns the
    forearm and upper arm baked without it)."""
    baked = {(bone.obj.name_full, bone.name) for bone in bones}
    found = [(bone.pose_bone, c) for bone in bones for c in bone.pose_bone.constraints]
    for obj in {bone.obj.name_full: bone.obj for bone in bones}.values():
        for pose_bone in obj.pose.bones:
            if (obj.name_full, pose_bone.name) in baked:
                continue
            found.extend(
                (pose_bone, c)
                for c in pose_bone.constraints
                if c.type in IK_TYPES
                and any(
                    (obj.name_full, parent.name) in baked
                    for parent in _ik_chain(pose_bone, _chain_count(c))
                )
            )
    return found


def _ik_chain(pose_bone: bpy.types.PoseBone, chain_count: int) -> list[bpy.types.PoseBone]:
    """The parents an IK constraint on ``pose_bone`` turns (``chain_count`` counts the bone
    itself; 0 means up to the root)."""
    chain: list[bpy.types.PoseBone] = []
    parent = pose_bone.parent
    while parent is not None and (chain_count == 0 or len(chain) < chain_count - 1):
        chain.append(parent)
        parent = parent.parent
    return chain
