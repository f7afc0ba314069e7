# SPDX-License-Identifier: GPL-3.0-or-later
"""Rig builders for the in-Blender tests (importable by any test module).

Every builder works in the current (empty) file, leaves the armature active and in Pose mode,
and returns the armature object. Keys are inserted with ``keyframe_insert``: fine for fixtures,
the add-on itself never does that.
"""

from __future__ import annotations

import math
import pathlib
from collections.abc import Sequence

import addon_utils
import bpy
import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
MOCAP = REPO.parent / "shared" / "data" / "mocap" / "scaled_131_01.bvh"
MOCAP_MISSING = f"the CMU clip is not at {MOCAP} (../shared is absent)"

ROTATION_PROPS = {
    "QUATERNION": "rotation_quaternion",
    "AXIS_ANGLE": "rotation_axis_angle",
}


def rotation_prop(mode: str) -> str:
    """The pose-bone property a native rotation mode uses."""
    return ROTATION_PROPS.get(mode, "rotation_euler")


def evaluate(obj) -> None:
    """Re-evaluate after setting ID properties from Python (which sends no update)."""
    obj.update_tag()
    bpy.context.view_layer.update()


def armature(
    bone_names: Sequence[str] = ("Bone",), chain: bool = True, straight: bool = False
) -> bpy.types.Object:
    """An armature of bones along +Y (each parented to the previous when ``chain``), each with
    a small roll so that bone space differs from armature space; in Pose mode, all selected.
    ``straight``: unit bones on the Y axis, without roll, each connected to the previous (a
    chain stretched straight at rest)."""
    data = bpy.data.armatures.new("Rig")
    obj = bpy.data.objects.new("Rig", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    bpy.ops.object.mode_set(mode='EDIT')
    previous = None
    for i, name in enumerate(bone_names):
        bone = data.edit_bones.new(name)
        if straight:
            bone.head, bone.tail = (0.0, float(i), 0.0), (0.0, float(i) + 1.0, 0.0)
        else:
            bone.head = (0.1 * i, float(i), 0.0)
            bone.tail = (0.1 * i, float(i) + 1.0, 0.2)
            bone.roll = 0.3 * (i + 1)
        if (chain or straight) and previous is not None:
            bone.parent = previous
            bone.use_connect = straight
        previous = bone
    bpy.ops.object.mode_set(mode='POSE')
    for pose_bone in obj.pose.bones:
        select(pose_bone, True)
    return obj


def select(pose_bone: bpy.types.PoseBone, selected: bool) -> None:
    """Select a pose bone on any supported Blender version."""
    target = pose_bone if hasattr(pose_bone, "select") else pose_bone.bone
    target.select = selected


def key_rotation(
    pose_bone: bpy.types.PoseBone,
    mode: str,
    frames_values: Sequence[tuple[float, Sequence[float]]],
    indices: Sequence[int] | None = None,
    interpolation: str | None = None,
) -> None:
    """Set ``pose_bone`` to ``mode`` and key its rotation channels (all, or ``indices``)."""
    pose_bone.rotation_mode = mode
    prop = rotation_prop(mode)
    for frame, value in frames_values:
        setattr(pose_bone, prop, value)
        for index in indices if indices is not None else range(len(value)):
            pose_bone.keyframe_insert(prop, index=index, frame=frame)
    if interpolation is not None:
        for fcurve in fcurves_of(pose_bone.id_data):
            for point in fcurve.keyframe_points:
                point.interpolation = interpolation


def _channel_owners(obj: bpy.types.Object, action: bpy.types.Action | None) -> list:
    """What holds ``action``'s F-curves and groups for ``obj``'s slot: its channelbags (4.4+)
    or the action itself (4.2/4.3)."""
    anim = obj.animation_data
    action = action or anim.action
    if not hasattr(action, "slots"):
        return [action]
    slot = getattr(anim, "action_slot", None) or action.slots[0]
    bags = (strip.channelbag(slot) for layer in action.layers for strip in layer.strips)
    return [bag for bag in bags if bag is not None]


def fcurves_of(obj: bpy.types.Object, action: bpy.types.Action | None = None) -> list:
    """All F-curves of ``action`` (default: the active action) for ``obj``'s slot."""
    return [fc for owner in _channel_owners(obj, action) for fc in owner.fcurves]


def channel_groups(obj: bpy.types.Object) -> list:
    """The channel groups of the active action for ``obj``'s slot, in order."""
    return [group for owner in _channel_owners(obj, None) for group in owner.groups]


def push_to_nla(obj: bpy.types.Object, frame_start: float = 1.0) -> bpy.types.NlaStrip:
    """Move the active action into a new NLA strip starting at ``frame_start``."""
    anim = obj.animation_data
    action = anim.action
    track = anim.nla_tracks.new()
    strip = track.strips.new(action.name, int(frame_start), action)
    if hasattr(strip, "action_slot") and getattr(anim, "action_slot", None) is not None:
        strip.action_slot = anim.action_slot
    anim.action = None
    return strip


def pose_matrices(obj: bpy.types.Object, frames: Sequence[float]) -> np.ndarray:
    """``pose_bone.matrix`` (armature space) of every bone at each frame, shape (F, B, 4, 4).

    Uses ``frame_set``: fine for checking, never used by the add-on itself.
    """
    scene = bpy.context.scene
    out = np.empty((len(frames), len(obj.pose.bones), 4, 4))
    for i, frame in enumerate(frames):
        whole = math.floor(frame)
        scene.frame_set(whole, subframe=frame - whole)
        bpy.context.view_layer.update()
        for j, pose_bone in enumerate(obj.pose.bones):
            out[i, j] = np.array(pose_bone.matrix)
    return out


def matrix_bound(reference: np.ndarray) -> np.ndarray:
    """The agreed float32 bound ``1e-5 + 2^-23 * |v|`` for each matrix element."""
    return 1e-5 + 2.0**-23 * np.abs(reference)


def import_mocap() -> bpy.types.Object:
    """Import the CMU clip (31 bones, ZYX Euler, a key on every frame); in Pose mode, all
    bones selected. The caller skips when `MOCAP` is missing."""
    addon_utils.enable("io_anim_bvh")
    bpy.ops.import_anim.bvh(filepath=str(MOCAP), rotate_mode='NATIVE')
    obj = bpy.context.view_layer.objects.active
    bpy.ops.object.mode_set(mode='POSE')
    for pose_bone in obj.pose.bones:
        select(pose_bone, True)
    return obj


def mocap_available() -> bool:
    return pathlib.Path(MOCAP).is_file()


def spinning_keys(frames: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Production-like keys of one bone (issue 12): key times (n,) from 1 to ``frames``,
    25 to 50 frames apart, and RQ vectors (n, 3) of a spin whose angle grows by 1 to 3
    radians per key (past the 2*pi shells) about an axis that turns from key to key."""
    steps = rng.integers(25, 51, size=frames // 25 + 2)
    times = np.concatenate([[1], 1 + np.cumsum(steps)])
    times = np.unique(np.minimum(times, frames)).astype(np.float64)
    axis = rng.normal(size=3)
    vectors = []
    angle = rng.uniform(0.0, 1.0)
    for _ in times:
        axis = axis / np.linalg.norm(axis) + rng.normal(0.0, 0.35, 3)
        axis /= np.linalg.norm(axis)
        vectors.append(angle * axis)
        angle += rng.uniform(1.0, 3.0)
    return times, np.array(vectors)
