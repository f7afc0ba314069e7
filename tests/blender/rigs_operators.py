# SPDX-License-Identifier: GPL-3.0-or-later
"""Rig builders for the tests of the RQ operators (bake, filters, splines, comparison).

Bones are put in the add-on's modes with ``bone_modes.enter_mode`` and their parameters keyed
with ``keyframe_insert`` (fine for fixtures; the add-on itself writes keys in bulk). Every
builder leaves the armature active, in Pose mode, with all bones selected.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence

import bpy
import numpy as np
import rigs
from blender_harness import ADDON_MODULE

TWO_PI = 2.0 * math.pi


def addon_module(name: str):
    """A module of the installed add-on, e.g. ``addon_module("rq_blender.bone_modes")``."""
    return importlib.import_module(f"{ADDON_MODULE}.{name}")


def key_rq(
    pose_bone: bpy.types.PoseBone,
    frames_vectors: Sequence[tuple[float, Sequence[float]]],
    interpolation: str | None = None,
) -> None:
    """Put ``pose_bone`` in RQ mode and key ``["rq_vector"]`` at each ``(frame, vector)``."""
    bone_modes = addon_module("rq_blender.bone_modes")
    bone_modes.enter_mode(pose_bone, "RQ", tuple(frames_vectors[0][1]))
    for frame, vector in frames_vectors:
        pose_bone["rq_vector"] = [float(x) for x in vector]
        pose_bone.keyframe_insert('["rq_vector"]', frame=frame)
    if interpolation is not None:
        _set_interpolation(pose_bone, interpolation)


def key_swing_twist(
    pose_bone: bpy.types.PoseBone,
    frames_values: Sequence[tuple[float, Sequence[float], float]],
) -> None:
    """Put ``pose_bone`` in swing/twist mode and key ``["rq_swing"]`` and ``["rq_twist"]`` at
    each ``(frame, swing, twist)``."""
    bone_modes = addon_module("rq_blender.bone_modes")
    _, swing, twist = frames_values[0]
    bone_modes.enter_mode(pose_bone, "SWING_TWIST", (tuple(swing), twist))
    for frame, swing, twist in frames_values:
        pose_bone["rq_swing"] = [float(x) for x in swing]
        pose_bone["rq_twist"] = float(twist)
        pose_bone.keyframe_insert('["rq_swing"]', frame=frame)
        pose_bone.keyframe_insert('["rq_twist"]', frame=frame)


def _set_interpolation(pose_bone: bpy.types.PoseBone, interpolation: str) -> None:
    for fcurve in rigs.fcurves_of(pose_bone.id_data):
        if f'"{pose_bone.name}"' in fcurve.data_path:
            for point in fcurve.keyframe_points:
                point.interpolation = interpolation


def rq_rig(
    keys: dict[str, Sequence[tuple[float, Sequence[float]]]],
    chain: bool = True,
    interpolation: str | None = None,
) -> bpy.types.Object:
    """An armature with one RQ bone per entry of ``keys`` (bone name -> ``(frame, vector)``
    keys)."""
    obj = rigs.armature(tuple(keys), chain=chain)
    for name, frames_vectors in keys.items():
        key_rq(obj.pose.bones[name], frames_vectors, interpolation)
    obj.update_tag()
    return obj


def shell_keys(
    axis: Sequence[float] = (0.3, -0.5, 0.8), turning_axis: bool = True
) -> list[tuple[float, np.ndarray]]:
    """Keys along one axis that approach, sit on and cross the 2*pi shell, then spin several
    revolutions (more than one revolution between two keys at the end), at whole and sub-frames;
    with ``turning_axis`` one more key near the shell about another axis."""
    unit = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    angles = [0.2, 5.9, TWO_PI, 6.6, 9.0, 4.0 * math.pi, 14.0, 14.0 + 1.4 * TWO_PI]
    frames = [1.0, 4.0, 7.5, 9.0, 12.0, 15.0, 18.25, 23.0]
    keys = [(f, a * unit) for f, a in zip(frames, angles, strict=True)]
    if turning_axis:
        keys.insert(3, (8.0, TWO_PI * np.array([0.0, 1.0, 0.0]) + np.array([0.2, 0.0, 0.1])))
    return keys


def frame_range(obj: bpy.types.Object) -> list[float]:
    """Every whole frame from the first key to the last (over all F-curves of the active
    action)."""
    times = [p.co[0] for fc in rigs.fcurves_of(obj) for p in fc.keyframe_points]
    return [float(f) for f in range(math.floor(min(times)), math.ceil(max(times)) + 1)]


def fcurve_map(obj: bpy.types.Object, action: bpy.types.Action | None = None) -> dict:
    """``{(data_path, index): fcurve}`` of ``action`` (default the active action)."""
    return {(fc.data_path, fc.array_index): fc for fc in rigs.fcurves_of(obj, action)}


def key_values(fcurve: bpy.types.FCurve) -> np.ndarray:
    """``(frame, value)`` of every key, shape (n, 2)."""
    co = np.empty(2 * len(fcurve.keyframe_points), dtype=np.float32)
    fcurve.keyframe_points.foreach_get("co", co)
    return co.reshape(-1, 2).astype(np.float64)


def matrix_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rotation angle (radians) between the 3x3 rotation parts of matrix stacks (..., 4, 4),
    after removing each matrix's scale."""
    ra = a[..., :3, :3] / np.linalg.norm(a[..., :3, :3], axis=-2, keepdims=True)
    rb = b[..., :3, :3] / np.linalg.norm(b[..., :3, :3], axis=-2, keepdims=True)
    rel = np.einsum("...ji,...jk->...ik", ra, rb)
    cos = np.clip((np.trace(rel, axis1=-2, axis2=-1) - 1.0) / 2.0, -1.0, 1.0)
    sin = (
        np.linalg.norm(
            np.stack(
                [
                    rel[..., 2, 1] - rel[..., 1, 2],
                    rel[..., 0, 2] - rel[..., 2, 0],
                    rel[..., 1, 0] - rel[..., 0, 1],
                ],
                axis=-1,
            ),
            axis=-1,
        )
        / 2.0
    )
    return np.arctan2(sin, cos)
