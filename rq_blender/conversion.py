# SPDX-License-Identifier: GPL-3.0-or-later
"""Converting pose bones' rotation animation between rotation modes.

Pure logic on arrays in the middle (`values_to_quat`, `continuous_values`, `refine_grid`),
Blender I/O only through `animdata` at the edges (`plan_conversion` reads, `apply_plan`
writes). Every action animating the armature is converted in its own time (the active action
and those of NLA strips, each with its slot).

Channel values of a mode, as rows of shape (k,):

==============  ==  =============================================================
mode            k   values
==============  ==  =============================================================
QUATERNION      4   ``rotation_quaternion`` ``(w, x, y, z)`` (normalized by Blender)
XYZ ... ZYX     3   ``rotation_euler`` (angles about X, Y, Z)
AXIS_ANGLE      4   ``rotation_axis_angle`` ``(angle, x, y, z)``
RQ              3   ``pose_bone["rq_vector"]``
SWING_TWIST     3   ``pose_bone["rq_swing"]`` (2) then ``pose_bone["rq_twist"]`` (1)
==============  ==  =============================================================

Strategies:

- ``'KEYS'``: new keys at the union of the source channels' key times, exact there (up to
  float32); in between the new channels interpolate their own way.
- ``'SAMPLED'``: a key on every frame of the source's key range, then keys are removed while
  the rotation angle between the source and the converted curves stays within ``tolerance``
  at every frame (tolerance 0 keeps every frame).

Continuity: values are chained along each bone's time line with the core's ``near``
conversions (no quaternion sign flips, Euler nearest equivalents, RQ and swing/twist shells
that follow the motion). The chain runs over a grid refined between keys until no step turns
more than `MAX_STEP` (bounded from the source channels' own change, so a source that spins
720 degrees between two keys keeps its two revolutions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import bpy
import numpy as np

from .. import rq_rotation as rq
from . import animdata, bone_modes, drivers, fcurve_math

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
STRATEGIES = ("KEYS", "SAMPLED")

# The largest rotation (radians) between two consecutive samples of the continuity chain. A
# nearest-equivalent choice is right while the true step is under pi; the bounds used to
# refine are conservative, so a quarter turn leaves a wide margin.
MAX_STEP = math.pi / 4
# At most this many refinement passes (each at least doubles the density where needed).
MAX_REFINE_PASSES = 16


def layout(mode: str) -> tuple[tuple[str, int], ...]:
    """The properties holding a mode's channel values: ``((prop, size), ...)``, ``prop`` as
    `animdata.bone_data_path` takes it (an RNA name, or an ID property in brackets)."""
    if mode == "QUATERNION":
        return (("rotation_quaternion", 4),)
    if mode == "AXIS_ANGLE":
        return (("rotation_axis_angle", 4),)
    if mode in EULER_ORDERS:
        return (("rotation_euler", 3),)
    return tuple((f'["{name}"]', size) for name, size in bone_modes.PARAMETERS[mode])


def values_to_quat(mode: str, values: np.ndarray) -> np.ndarray:
    """Rotations of channel values (see the module table), shape (..., k) -> (..., 4)."""
    values = np.asarray(values, dtype=np.float64)
    if mode == "QUATERNION":
        norm = np.linalg.norm(values, axis=-1, keepdims=True)
        # Blender poses a zero quaternion as the identity.
        return np.where(norm > 0, values / np.where(norm > 0, norm, 1.0), [1.0, 0, 0, 0])
    if mode == "AXIS_ANGLE":
        return rq.blender_axis_angle_to_quat(values)
    if mode in EULER_ORDERS:
        return rq.euler_to_quat(values, mode)
    if mode == "RQ":
        return rq.rq_to_quat(values)
    return rq.swing_twist_to_quat(values[..., :2], values[..., 2])


def _chain(step: Callable, q: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Apply ``step(q_i, near=previous)`` along axis 1 of ``q`` (B, N, 4); (B, N, k)."""
    out = np.empty((*q.shape[:2], near.shape[-1]))
    for i in range(q.shape[1]):
        near = step(q[:, i], near)
        out[:, i] = near
    return out


def continuous_values(mode: str, q: np.ndarray, near: np.ndarray | None = None) -> np.ndarray:
    """Channel values of ``mode`` along time lines of rotations, continuous in time.

    Parameters
    ----------
    mode : str
        Target mode.
    q : ndarray, shape (B, N, 4)
        B time lines of N rotations each, consecutive ones less than half a turn apart.
    near : ndarray, shape (B, k), optional
        Values the first sample of each line should be closest to (zeros by default; for
        QUATERNION the hemisphere of ``near``).

    Returns
    -------
    ndarray, shape (B, N, k)
        Quaternions without sign flips, Euler angles each nearest the previous, RQ vectors and
        swings/twists on the shell closest to the previous sample, axis-angle from the
        continuous RQ vector with the axis kept in one hemisphere (the angle changing sign).
    """
    q = np.asarray(q, dtype=np.float64)
    b, n = q.shape[:2]
    k = 3 if mode != "QUATERNION" and mode != "AXIS_ANGLE" else 4
    if near is None:
        near = np.zeros((b, k))
        if mode == "QUATERNION":
            near[:, 0] = 1.0
    if n == 0:
        return np.empty((b, 0, k))
    if mode == "QUATERNION":
        flip = np.einsum("bi,bi->b", q[:, 0], near) < 0
        q = np.where(flip[:, None, None], -q, q)
        return np.stack([rq.align_quat_signs(line) for line in q])
    if mode in EULER_ORDERS:
        return _chain(lambda qi, prev: rq.quat_to_euler(qi, mode, near=prev), q, near)
    if mode == "SWING_TWIST":

        def swing_twist(qi, prev):
            swing, twist = rq.quat_to_swing_twist(qi, near=(prev[:, :2], prev[:, 2]))
            return np.concatenate([swing, np.asarray(twist)[:, None]], axis=1)

        return _chain(swing_twist, q, near)
    start = near if mode == "RQ" else rq.blender_axis_angle_to_rq(near)
    v = rq.quat_to_rq(q)
    v[:, 0] = rq.quat_to_rq(q[:, 0], near=start)
    v = np.stack([rq.rq_sequence_continuous(line) for line in v])
    if mode == "RQ":
        return v
    angle_axis = rq.rq_to_blender_axis_angle(v)
    axis = angle_axis[..., 1:]
    dots = np.einsum("bni,bni->bn", axis[:, 1:], axis[:, :-1])
    signs = np.cumprod(np.where(dots < 0, -1.0, 1.0), axis=1)
    signs = np.concatenate([np.ones((b, 1)), signs], axis=1)
    return angle_axis * signs[..., None]


def _channel_steps(mode: str, values: np.ndarray) -> np.ndarray:
    """Upper bounds (about, for quaternions) of the rotation between consecutive rows of
    channel values, shape (N, k) -> (N - 1,). Catches whole turns that quaternion distances
    cannot see (Euler or RQ channels moving by 2 pi)."""
    delta = np.abs(np.diff(values, axis=0))
    if mode == "QUATERNION":
        norm = np.linalg.norm(values, axis=1)
        low = np.maximum(np.minimum(norm[1:], norm[:-1]), 1e-12)
        return 2.0 * np.linalg.norm(delta, axis=1) / low
    if mode == "AXIS_ANGLE":
        norm = np.linalg.norm(values[:, 1:], axis=1)
        low = np.maximum(np.minimum(norm[1:], norm[:-1]), 1e-12)
        size = np.maximum(np.abs(values[1:, 0]), np.abs(values[:-1, 0]))
        return delta[:, 0] + 2.0 * size * np.linalg.norm(delta[:, 1:], axis=1) / low
    return delta.sum(axis=1)


def refine_grid(
    mode: str, times: np.ndarray, evaluate: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A time grid through ``times`` dense enough for the continuity chain.

    Parameters
    ----------
    mode : str
        The source mode; ``evaluate(t)`` gives its channel values, (m,) -> (m, k).
    times : ndarray, shape (n,)
        Increasing times that must be on the grid.

    Returns
    -------
    grid : ndarray, shape (N,)
    on_times : ndarray of bool, shape (N,)
        Which grid points are ``times``.
    q : ndarray, shape (N, 4)
        The source rotations on the grid.
    """
    grid = np.asarray(times, dtype=np.float64)
    on_times = np.ones(len(grid), dtype=bool)
    for _ in range(MAX_REFINE_PASSES):
        values = evaluate(grid)
        q = values_to_quat(mode, values)
        if len(grid) < 2:
            break
        steps = np.maximum(_channel_steps(mode, values), rq.quat_angle_between(q[:-1], q[1:]))
        extra = np.ceil(steps / MAX_STEP).astype(int) - 1
        extra[np.diff(grid) < 1e-3] = 0
        if not (extra > 0).any():
            break
        extra = np.minimum(extra, 64)
        inserted = [
            grid[i] + (grid[i + 1] - grid[i]) * np.arange(1, m + 1) / (m + 1)
            for i, m in enumerate(extra)
            if m > 0
        ]
        new = np.concatenate(inserted)
        order = np.argsort(np.concatenate([grid, new]), kind="stable")
        grid = np.concatenate([grid, new])[order]
        on_times = np.concatenate([on_times, np.zeros(len(new), dtype=bool)])[order]
    return grid, on_times, q


@dataclass
class Track:
    """The converted keys of one bone in one action (not yet written)."""

    use: animdata.ActionUse
    times: np.ndarray  # (n,) frames, action time
    values: np.ndarray  # (n, k) target channel values
    # (n,) fcurve_math codes (KEYS); None for SAMPLED tracks: BEZIER keys, reducible.
    interpolation: np.ndarray | None
    source_quats: np.ndarray  # (n, 4) the source rotations at `times`


@dataclass
class BonePlan:
    """Everything needed to switch one bone, computed before anything changes."""

    name: str
    source: str
    target: str
    static: np.ndarray  # (k,) target values of the current pose
    tracks: list[Track] = field(default_factory=list)


def current_mode(pose_bone: bpy.types.PoseBone) -> str:
    """The bone's rotation mode, add-on modes included."""
    return bone_modes.current_mode(pose_bone)


def static_values(pose_bone: bpy.types.PoseBone, mode: str) -> np.ndarray:
    """The bone's current (unanimated or evaluated) channel values in ``mode``, (k,)."""
    parts = []
    for prop, size in layout(mode):
        value = pose_bone[prop[2:-2]] if prop.startswith("[") else getattr(pose_bone, prop)
        parts.append(np.reshape(np.asarray(value, dtype=np.float64), size))
    return np.concatenate(parts)


def _read_source(use, bone: str, mode: str, static: np.ndarray):
    """The source channels of ``bone`` in ``use`` and an evaluator of its values, or None."""
    owner = animdata.fcurve_owner(use)
    channels: list[animdata.Channel | None] = []
    for prop, size in layout(mode):
        channels.extend(animdata.read_channels(owner, animdata.bone_data_path(bone, prop), size))
    if all(c is None for c in channels):
        return None
    return channels, lambda t: animdata.evaluate_channels(channels, static, t)


def _interpolation_at(channels: Sequence[animdata.Channel | None], times: np.ndarray):
    """Per time, the interpolation of the first channel with a key there (BEZIER if none is
    LINEAR or CONSTANT)."""
    out = np.full(len(times), fcurve_math.BEZIER, dtype=np.int32)
    found = np.zeros(len(times), dtype=bool)
    for channel in channels:
        if channel is None:
            continue
        idx = np.searchsorted(times, channel.keys.times)
        idx = np.clip(idx, 0, len(times) - 1)
        hit = np.isclose(times[idx], channel.keys.times) & ~found[idx]
        out[idx[hit]] = channel.keys.interpolation[hit]
        found[idx[hit]] = True
    supported = np.isin(out, tuple(fcurve_math.SUPPORTED_INTERPOLATIONS))
    return np.where(supported, out, fcurve_math.BEZIER)


def plan_conversion(
    obj: bpy.types.Object, bone_names: Sequence[str], target: str, strategy: str
) -> list[BonePlan]:
    """Compute the conversion of ``bone_names`` of ``obj`` to ``target`` (reads only).

    Bones already in ``target`` are left out. For each bone and each action that keys its
    rotation, a `Track` holds the new keys (before any key reduction). Raises ValueError,
    before anything is changed, for an unknown strategy or a bone whose rotation channel is
    driven by something other than the add-on.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    uses = animdata.actions_of(obj)
    plans: list[BonePlan] = []
    lines: list[tuple[Track, np.ndarray, np.ndarray]] = []
    for name in bone_names:
        pose_bone = obj.pose.bones[name]
        source = current_mode(pose_bone)
        if source == target:
            continue
        entering = source not in bone_modes.ADDON_MODES and target in bone_modes.ADDON_MODES
        if entering and drivers.bone_drivers(pose_bone):
            raise ValueError(f"bone '{name}': its rotation is already driven by other drivers")
        static = static_values(pose_bone, source)
        current_q = values_to_quat(source, static)[None, None]
        near = static_values(pose_bone, target)[None] if target in bone_modes.NATIVE_MODES else None
        plan = BonePlan(name, source, target, continuous_values(target, current_q, near)[0, 0])
        plans.append(plan)
        for use in uses:
            found = _read_source(use, name, source, static)
            if found is None:
                continue
            channels, evaluate = found
            keys = animdata.key_times(channels)
            if strategy == "KEYS":
                times = keys
                interpolation = _interpolation_at(channels, keys)
            else:
                times = np.arange(math.floor(keys[0]), math.ceil(keys[-1]) + 1, dtype=np.float64)
                interpolation = None
            _, on_times, q = refine_grid(source, times, evaluate)
            track = Track(use, times, np.empty(0), interpolation, q[on_times])
            plan.tracks.append(track)
            lines.append((track, q, on_times))
    _convert_lines(target, lines)
    return plans


def _convert_lines(target: str, lines) -> None:
    """Run the continuity chain for all tracks at once (padded to one length), each starting
    nearest the zero of the target's channels."""
    if not lines:
        return
    length = max(len(q) for _, q, _ in lines)
    padded = np.stack(
        [np.concatenate([q, np.repeat(q[-1:], length - len(q), 0)]) for _, q, _ in lines]
    )
    values = continuous_values(target, padded)
    for i, (track, q, on_times) in enumerate(lines):
        track.values = values[i, : len(q)][on_times]


def rotation_error(mode: str, values: np.ndarray, source_quats: np.ndarray) -> np.ndarray:
    """Rotation angle (radians) between channel values and source rotations, (n, k), (n, 4)
    -> (n,)."""
    return rq.quat_angle_between(values_to_quat(mode, values), source_quats)


def _write_track(
    owner, bone: str, target: str, track: Track, mask: np.ndarray
) -> list[animdata.Channel]:
    """Write the keys of ``track`` selected by ``mask``; the written channels, in value order."""
    written = []
    column = 0
    interpolation = None if track.interpolation is None else track.interpolation[mask]
    for prop, size in layout(target):
        path = animdata.bone_data_path(bone, prop)
        for index in range(size):
            fcurve = animdata.write_keys(
                owner,
                path,
                index,
                bone,
                track.times[mask],
                track.values[mask, column],
                interpolation,
            )
            written.append(animdata.Channel(fcurve, animdata.read_keys(fcurve)))
            column += 1
    return written


def _write_reduced(owner, bone: str, target: str, track: Track, tolerance: float) -> int:
    """Write ``track`` with as few keys as keep the rotation error within ``tolerance``
    (radians) at every one of its frames; returns the number of keys kept.

    Greedy refinement checked against Blender's own handles: start from the end keys, write,
    evaluate the written curves at every frame, and add the worst frame of every gap between
    kept keys that exceeds the tolerance, until none does (at worst every frame is kept).
    """
    n = len(track.times)
    kept = np.ones(n, dtype=bool)
    if tolerance > 0 and n > 2:
        kept[1:-1] = False
    while True:
        channels = _write_track(owner, bone, target, track, kept)
        if kept.all():
            return n
        values = np.stack([c.evaluate(track.times) for c in channels], axis=1)
        error = rotation_error(target, values, track.source_quats)
        candidates = (error > tolerance) & ~kept
        if not candidates.any():
            return int(kept.sum())
        gap = np.cumsum(kept)[candidates]
        index = np.flatnonzero(candidates)
        order = np.lexsort((-error[index], gap))
        first = np.concatenate([[True], gap[order][1:] != gap[order][:-1]])
        kept[index[order][first]] = True


def _switch_mode(pose_bone: bpy.types.PoseBone, plan: BonePlan) -> None:
    """Put the bone in ``plan.target`` with the current pose as its static value."""
    native_target = plan.target in bone_modes.NATIVE_MODES
    if plan.source in bone_modes.ADDON_MODES:
        bone_modes.leave_mode(pose_bone, plan.target if native_target else "QUATERNION")
    if native_target:
        pose_bone.rotation_mode = plan.target
        (prop, _), = layout(plan.target)
        setattr(pose_bone, prop, plan.static)
    elif plan.target == "RQ":
        bone_modes.enter_mode(pose_bone, "RQ", plan.static)
    else:
        bone_modes.enter_mode(pose_bone, plan.target, (plan.static[:2], plan.static[2]))


def apply_plan(
    obj: bpy.types.Object,
    plans: Sequence[BonePlan],
    tolerance: float = 0.0,
    progress: Callable[[float], None] | None = None,
) -> int:
    """Switch the planned bones: remove the old rotation F-curves from every action, change the
    mode (keeping the current pose) and write the new keys (reduced within ``tolerance``
    radians for tracks planned with the SAMPLED strategy). Returns the number of keys written
    per channel, summed over tracks."""
    uses = animdata.actions_of(obj)
    total = 0
    for done, plan in enumerate(plans):
        for use in uses:
            owner = animdata.fcurve_owner(use)
            for prop, size in layout(plan.source):
                animdata.remove_fcurves(owner, animdata.bone_data_path(plan.name, prop), size)
        _switch_mode(obj.pose.bones[plan.name], plan)
        for track in plan.tracks:
            owner = animdata.fcurve_owner(track.use, ensure=True)
            if track.interpolation is None:
                total += _write_reduced(owner, plan.name, plan.target, track, tolerance)
            else:
                _write_track(owner, plan.name, plan.target, track, np.ones(len(track.times), bool))
                total += len(track.times)
        if progress is not None:
            progress((done + 1) / len(plans))
    obj.update_tag()
    return total
