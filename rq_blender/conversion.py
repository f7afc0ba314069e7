# SPDX-License-Identifier: GPL-3.0-or-later
"""Converting pose bones' rotation animation between rotation modes.

A planner and a writer around the bpy-free algorithms of ``rq_rotation.keyframes``:
`plan_conversion` reads every action animating the armature (the active action and those of
NLA strips, each with its slot) through `animdata` and computes the new keys, `apply_plan`
writes them. Channel values are the modes' (``rq_rotation.modes``).

Strategies:

- ``'KEYS'``: new keys at the union of the source channels' key times, exact there (up to
  float32); in between the new channels interpolate their own way.
- ``'SAMPLED'``: a key on every frame of the source's key range, then keys are removed while
  the rotation angle between the source and the converted curves stays within ``tolerance``
  at every frame (tolerance 0 keeps every frame).

Continuity: values are chained along each bone's time line (``keyframes.continuity``),
starting at the equivalent closest to the source's own rotation vector
(``modes.rotation_vectors``: a bone keyed at 720 degrees stays there), over a grid refined
between keys until no step turns more than a quarter turn (``keyframes.refine``).

Swing/twist targets: the drivers clamp the swing into ``rq_swing_limit`` and the twist into
``rq_twist_limit``. Limits that restrict nothing (the defaults) are widened after writing to
cover the new curves (`widen_limits`), so switching never changes the animation; long swings
move to their shortest equivalent. User-set limits keep every stored value inside
(``keyframes.limits.fit_to_limits``): an equivalent inside where one exists (same pose), else
the closest point (the pose the joint can reach).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import bpy
import numpy as np

from ..rq_rotation import clamp_twist, quat_angle_between, scale_swing_into_ellipse
from ..rq_rotation.keyframes import fcurve_math
from ..rq_rotation.keyframes.continuity import continuous_values
from ..rq_rotation.keyframes.limits import fit_to_limits, limits_restrict_nothing, shorten_swings
from ..rq_rotation.keyframes.reduce import (
    add_worst_frames,
    changed_segments,
    evaluate_between_keys,
    rotation_errors,
    seed_keys,
    unchanged_keys,
)
from ..rq_rotation.keyframes.refine import refine_grids
from ..rq_rotation.modes import (
    ADDON_MODES,
    MODES,
    NATIVE_MODES,
    RQ,
    SWING_LIMIT,
    SWING_TWIST,
    TWIST_LIMIT,
    rotation_vectors,
    values_to_quat,
)
from . import animdata, bone_modes, compat, drivers, reports

STRATEGIES = ("KEYS", "SAMPLED")

#: Bones' lines of samples are sampled and made continuous in blocks of about this many
#: samples (`_line_blocks`; 8 MiB of rotations): on 1000 bones x 1000 frames whole arrays
#: of 30-50 MiB made the bake's continuity 0.24-0.34 us a bone-frame (0.07 on 100 bones),
#: in blocks 0.075, and the bake 1.78-1.85 -> 1.57-1.59 us. Blocks of 2^16 samples made the
#: 100-bone bake 1.30 -> 1.55 us a bone-frame (5 processes each): smaller arrays are not
#: cheaper here, and up to 200 bones x 1000 frames a rig is one block.
BLOCK_SAMPLES = 1 << 18


@dataclass
class Track:
    """The converted keys of one bone in one action (not yet written)."""

    use: animdata.ActionUse
    group: str  # the channel group of the new F-curves: the source curves' own
    times: np.ndarray  # (n,) frames, action time
    values: np.ndarray  # (n, k) target channel values
    # (n,) fcurve_math codes (KEYS); None for SAMPLED tracks: BEZIER keys, reducible.
    interpolation: np.ndarray | None
    # (n, 4) the rotations the keys must pose: the source's, or for keys that user-set joint
    # limits moved, the limited pose.
    source_quats: np.ndarray


@dataclass
class BonePlan:
    """Everything needed to switch one bone, computed before anything changes."""

    name: str
    source: str
    target: str
    static: np.ndarray  # (k,) target values of the current pose
    tracks: list[Track] = field(default_factory=list)
    # Swing/twist targets: whether the bone's limits restrict nothing (they are then widened
    # to cover the animation, see `apply_plan`), and how many keys (and current poses) its
    # user-set limits moved (`fit_to_limits`).
    unlimited: bool = True
    limited_keys: int = 0
    # Set by `apply_plan`: the limits were widened.
    widened: bool = False
    # SAMPLED over given frames: the source keys outside them (the bone holds the first and
    # last frames' poses there once its source curves are replaced).
    keys_outside: int = 0
    # SAMPLED: the UI names of the source curves' modifiers, whose effect within the sampled
    # frames becomes keys (`modifier_notes`).
    modifiers: list[str] = field(default_factory=list)


class StaticValues:
    """The current (unanimated or evaluated) channel values of an armature's bones.

    A native rotation property (``rotation_quaternion``, ...) is read for every bone of the
    armature at once, with one ``foreach_get`` on first use: reading it bone by bone
    (``getattr`` and ``np.asarray`` of the RNA array) cost about 10 us a bone, 2 ms of a
    200-bone conversion. The values are the same (RNA's float32 values as float64)."""

    def __init__(self, obj: bpy.types.Object) -> None:
        self.bones = obj.pose.bones
        self.place: dict[str, int] = {}
        self.native: dict[str, np.ndarray] = {}  # by property: (bones, size) float64

    def of(self, pose_bone: bpy.types.PoseBone, mode: str) -> np.ndarray:
        """The bone's channel values in ``mode``, (k,) float64 (a new array)."""
        parts = []
        for parameter in MODES[mode].parameters:
            name = parameter.name
            if parameter.id_property:
                value = np.asarray(pose_bone[name], dtype=np.float64)
                parts.append(np.reshape(value, parameter.size))
            else:
                parts.append(self._native(name, parameter.size)[self.place[pose_bone.name]])
        return np.concatenate(parts)

    def _native(self, name: str, size: int) -> np.ndarray:
        """The native property ``name`` (``size`` floats) of every bone, read on first use."""
        values = self.native.get(name)
        if values is None:
            if not self.place:
                self.place = {bone: i for i, bone in enumerate(self.bones.keys())}
            read = np.empty(len(self.bones) * size, dtype=np.float32)  # RNA's own floats
            self.bones.foreach_get(name, read)
            values = self.native[name] = read.reshape(-1, size).astype(np.float64)
        return values


def _limits_of(pose_bone: bpy.types.PoseBone) -> np.ndarray:
    """The bone's joint limits as ``(a, b, twist min, twist max)``, shape (4,)."""
    (a, b), (low, high) = bone_modes.joint_limits(pose_bone)
    return np.array([a, b, low, high])


def posed_values(mode: str, values: np.ndarray, limits: np.ndarray | None) -> np.ndarray:
    """The channel values (..., k) a bone is actually posed at.

    Swing/twist bones are posed by their drivers at the swing scaled radially into the limit
    ellipse and the twist clamped to its range (`bone_modes`); stored values outside the
    limits are read as those. ``limits`` (..., 4) are each row's `_limits_of` (broadcast),
    needed for swing/twist only (None for the other modes).
    Every other mode is posed at its values as they are.
    """
    if mode != SWING_TWIST:
        return values
    if limits is None:
        raise ValueError("swing/twist values need the bone's limits")
    limits = np.asarray(limits)
    swing = scale_swing_into_ellipse(values[..., :2], limits[..., 0], limits[..., 1])
    twist = clamp_twist(values[..., 2], limits[..., 2], limits[..., 3])
    return np.concatenate([swing, twist[..., None]], axis=-1)


def _read_source(owner, index, pose_bone: bpy.types.PoseBone, mode: str):
    """The source channels of the bone in ``owner`` (an action use's, with its
    `animdata.fcurve_index`), or None when the action does not key it."""
    channels: list[animdata.Channel | None] = []
    for parameter in MODES[mode].parameters:
        path = animdata.bone_data_path(pose_bone.name, parameter.path)
        channels.extend(animdata.read_channels(owner, path, parameter.size, index))
    if all(c is None for c in channels):
        return None
    return channels


def _check_source(
    pose_bone: bpy.types.PoseBone,
    use: animdata.ActionUse,
    channels: Sequence[animdata.Channel | None],
    strategy: str,
) -> list[str]:
    """Refuse, before anything changes, source F-curves a conversion would not carry as the
    user has them (ValueError): a muted curve (Blender does not play it, its converted keys
    would play), a locked one (Blender's editing tools leave it alone), and with Keep Key
    Times a curve with modifiers (keys alone cannot carry a Cycles or a Noise). Returns the
    modifiers' UI names otherwise: a sampled conversion keys their effect within its frames,
    and the new curves do not have them."""
    names: list[str] = []
    for channel in channels:
        if channel is None:
            continue
        fcurve = channel.fcurve
        animdata.check_unmuted(pose_bone.name, use, fcurve, "converted, its keys would play")
        animdata.check_unlocked(pose_bone.name, use, fcurve)
        kinds = animdata.modifier_types(fcurve) if channel.keys.has_modifiers else []
        if kinds and strategy == "KEYS":
            raise ValueError(
                f"{animdata.curve_place(pose_bone.name, use, fcurve)} has modifiers "
                f"({', '.join(kinds)}), which Keep Key Times cannot carry: use Sample and "
                "Reduce (their effect within the keyed frames becomes keys) or remove them"
            )
        names += kinds
    return names


def _check_players(
    obj: bpy.types.Object,
    pose_bone: bpy.types.PoseBone,
    use: animdata.ActionUse,
    players: dict[tuple[str, str | None], list[bpy.types.Object]],
) -> None:
    """Refuse (ValueError) a bone whose action another armature plays through the same slot
    with a bone of that name: the conversion rewrites the action's curves, which would stop
    animating that armature's bone. ``players``: `animdata.players` by action use, filled on
    first use."""
    if use.key not in players:
        players[use.key] = [other for other in animdata.players(use) if other != obj]
    shared = [
        other.name
        for other in players[use.key]
        if other.pose is not None and pose_bone.name in other.pose.bones
    ]
    if shared:
        raise ValueError(
            f"bone '{pose_bone.name}': action '{use.action.name}' also animates it on "
            f"{reports.name_list(shared)}, whose animation converting would change too: make "
            f"the action single-user on '{obj.name}' first"
        )


def _interpolation_at(channels: Sequence[animdata.Channel | None], times: np.ndarray):
    """Per time, the interpolation of the first channel with a key there (BEZIER if none is
    LINEAR or CONSTANT)."""
    first = next(c.keys for c in channels if c is not None)
    if len(first.times) == len(times) and first.supported and (first.times == times).all():
        return first.interpolation  # keyed at every time, as numpy evaluates (the usual case)
    out = np.full(len(times), fcurve_math.BEZIER, dtype=np.int32)
    found = np.zeros(len(times), dtype=bool)
    for channel in channels:
        if channel is None:
            continue
        if np.array_equal(channel.keys.times, times):  # keyed at every time (the usual case)
            out = np.where(found, out, channel.keys.interpolation)
            break
        idx = np.searchsorted(times, channel.keys.times)
        idx = np.clip(idx, 0, len(times) - 1)
        hit = np.isclose(times[idx], channel.keys.times) & ~found[idx]
        out[idx[hit]] = channel.keys.interpolation[hit]
        found[idx[hit]] = True
    return np.where(fcurve_math.supported_interpolation(out), out, fcurve_math.BEZIER)


def blending_notes(
    work: Iterable[tuple[bpy.types.Object, Sequence[BonePlan]]],
) -> list[str]:
    """Report lines for the armatures of ``work`` (``(obj, its plans)``) whose animated planned
    bones play through blended actions (`animdata.blending`): the poses stay exact where one
    action replaces all below it at full influence, not where they blend."""
    notes = []
    for obj, plans in work:
        found = animdata.blending(obj) if any(plan.tracks for plan in plans) else []
        if found:
            notes.append(
                f"{reports.name_list(found)} blend{'s' if len(found) == 1 else ''} with the "
                "animation below: NLA blends each channel on its own, so the pose can change "
                "where they blend"
            )
    return notes


def modifier_notes(plans: Sequence[BonePlan]) -> list[str]:
    """A report line for the planned bones whose source curves had modifiers (a sampled
    conversion or a bake): their effect within the sampled frames is in the keys now, and the
    new curves do not repeat or vary beyond them."""
    bones = [plan.name for plan in plans if plan.modifiers]
    if not bones:
        return []
    kinds = list(dict.fromkeys(kind for plan in plans for kind in plan.modifiers))
    return [
        f"F-curve modifiers ({', '.join(kinds)}) on {reports.name_list(bones)}: their effect "
        "within the sampled frames is keyed now; the new curves have no modifiers, so nothing "
        "repeats or varies beyond those frames"
    ]


# Keep Key Times: keys farther apart than this (radians) get a note in the report. Between
# keys the new channels interpolate in another parameterization: a review measured a steady
# spin about a tilted axis, RQ to swing/twist, moved by 5 degrees between keys 30 degrees
# apart, 24 at 90 and 57 at 115 (Euler keys 70-100 degrees apart to RQ: 16.5).
KEY_GAP_NOTE = math.radians(15.0)


def key_gap_notes(plans: Sequence[BonePlan]) -> list[str]:
    """Report lines for the Keep Key Times tracks of ``plans`` whose consecutive keys (a
    moving segment: not CONSTANT) turn by more than `KEY_GAP_NOTE`: the keys pose the bone
    exactly, the motion between them may change (a SAMPLED conversion keeps it). One pass
    over every track's keys; the bones are named widest gap first."""
    owners, tracks = [], []
    for number, plan in enumerate(plans):
        for track in plan.tracks:
            if track.interpolation is not None:
                owners.append(number)
                tracks.append(track)
    if not tracks:
        return []
    quats = np.concatenate([t.source_quats for t in tracks])
    moving = np.concatenate([t.interpolation != fcurve_math.CONSTANT for t in tracks])
    last = np.cumsum([len(t.times) for t in tracks]) - 1  # each track's last key: no segment
    moving[last] = False
    turns = np.zeros(len(quats))
    turns[:-1] = quat_angle_between(quats[:-1], quats[1:])
    turns[~moving] = 0.0
    widest = np.maximum.reduceat(turns, np.concatenate([[0], last[:-1] + 1]))
    wide = widest > KEY_GAP_NOTE
    if not wide.any():
        return []
    widest_first = np.flatnonzero(wide)[np.argsort(-widest[wide], kind="stable")]
    names = list(dict.fromkeys(plans[owners[i]].name for i in widest_first))
    return [
        f"Keys up to {math.degrees(float(widest.max())):.0f}° apart on "
        f"{reports.name_list(names)}: the keys pose them exactly, the motion between such "
        "keys can change by several degrees (Sample and Reduce keeps it)"
    ]


def plan_conversion(
    obj: bpy.types.Object,
    bone_names: Sequence[str],
    target: str,
    strategy: str,
    frames: tuple[int, int] | None = None,
) -> list[BonePlan]:
    """Compute the conversion of ``bone_names`` of ``obj`` to ``target`` (reads only).

    SAMPLED samples every frame of each keyed bone's key range in each action, or every
    frame from ``frames[0]`` to ``frames[1]`` (inclusive, in the action's own time) when
    given; KEYS keeps the key times and ignores ``frames``.

    Bones already in ``target`` are left out. For each bone and each action that keys its
    rotation, a `Track` holds the new keys (before any key reduction). Each time line starts
    at the equivalent closest to the source's own rotation vector (`rotation_vectors`), so a
    source sitting at extra revolutions keeps them where the target can. Swing/twist targets
    are fitted to the bone's joint limits (`fit_to_limits`) unless those restrict nothing
    (long swings then shortened, `shorten_swings`). Raises ValueError, before
    anything is changed, for an unknown strategy, a bone whose rotation channel is driven
    by something other than the add-on, stored values no tool can use
    (`bone_modes.check_values`), source F-curves muted, locked or (Keep Key Times) with
    modifiers (`_check_source`), or an action another armature plays on a bone of the same
    name (`_check_players`).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if frames is not None and frames[1] < frames[0]:
        raise ValueError(f"the frame range ends ({frames[1]}) before it starts ({frames[0]})")
    uses = animdata.actions_of(obj)
    owners = [animdata.fcurve_owner(use) for use in uses]
    indexes = [animdata.fcurve_index(owner) for owner in owners]  # planning changes nothing
    plans: list[BonePlan] = []
    # Time lines of all bones and actions, converted together: a `_Line` per keyed bone and
    # action, then their grids refined and evaluated in one pass per source mode.
    sources: list[_Line] = []
    statics = []  # (source, static values) per plan
    fits = {}  # `_limit_fitter` per plan
    # Bones entering an add-on mode must not be driven: asked of each only if any driver is.
    driven = obj.animation_data is not None and len(obj.animation_data.drivers) > 0
    static_values = StaticValues(obj)
    players: dict[tuple[str, str | None], list[bpy.types.Object]] = {}  # (`_check_players`)
    for name in bone_names:
        pose_bone = obj.pose.bones[name]
        source = bone_modes.current_mode(pose_bone)
        if source == target:
            continue
        bone_modes.check_values(pose_bone, target)
        entering = source not in ADDON_MODES and target in ADDON_MODES
        if entering and driven and drivers.bone_drivers(pose_bone):
            raise ValueError(f"bone '{name}': its rotation is already driven by other drivers")
        limits = _limits_of(pose_bone) if source == SWING_TWIST else None
        static = posed_values(source, static_values.of(pose_bone, source), limits)
        plan = BonePlan(name, source, target, np.empty(0))
        plans.append(plan)
        fits[name] = _limit_fitter(pose_bone, target)
        statics.append((source, static))
        for use, owner, index in zip(uses, owners, indexes, strict=True):
            channels = _read_source(owner, index, pose_bone, source)
            if channels is None:
                continue
            animdata.check_editable(use.action)
            _check_players(obj, pose_bone, use, players)
            plan.modifiers += _check_source(pose_bone, use, channels, strategy)
            keys = animdata.key_times(channels)
            if strategy == "KEYS":
                times = keys
                interpolation = _interpolation_at(channels, keys)
            else:
                first, last = frames or (math.floor(keys[0]), math.ceil(keys[-1]))
                plan.keys_outside += int(np.count_nonzero((keys < first) | (keys > last)))
                times = np.arange(first, last + 1, dtype=np.float64)
                interpolation = None
            group = next(
                (
                    c.fcurve.group.name
                    for c in channels
                    if c is not None and c.fcurve.group is not None
                ),
                name,
            )
            sources.append(_Line(plan, use, group, times, interpolation, channels, static, limits))
    if not plans:
        return plans
    modes = [source for source, _ in statics]
    posed = [v for _, v in statics]
    lines = _sample_lines(sources)
    current = continuous_values(
        target,
        _by_mode(values_to_quat, modes, posed)[:, None],
        _by_mode(rotation_vectors, modes, posed),
    )
    for plan, values in zip(plans, current[:, 0], strict=True):
        fit, plan.unlimited = fits[plan.name]
        plan.static = values
        if fit is not None:
            stored, moved = fit(values[None])
            plan.static = stored[0]
            plan.limited_keys = int(moved.sum())
    if not lines:
        return plans
    converted: list[np.ndarray] = []
    for block in _line_blocks([len(q) for _, _, q, _ in lines]):
        sampled = [lines[i] for i in block]
        length = max(len(q) for _, _, q, _ in sampled)
        padded = np.empty((len(sampled), length, 4))  # each line's last rotation repeated
        for row, (_, _, q, _) in zip(padded, sampled, strict=True):
            row[: len(q)] = q
            row[len(q) :] = q[-1]
        starts = _by_mode(
            rotation_vectors,
            [line.plan.source for line, _, _, _ in sampled],
            [values[0] for _, values, _, _ in sampled],
        )
        converted += list(continuous_values(target, padded, starts))
    for (line, _, q, on_times), values in zip(lines, converted, strict=True):
        plan, use, group, times, interpolation = (
            line.plan,
            line.use,
            line.group,
            line.times,
            line.interpolation,
        )
        quats = q[on_times]
        stored = values[: len(q)][on_times]
        fit = fits[plan.name][0]
        if fit is not None:
            stored, moved = fit(stored)
            if moved.any():
                quats[moved] = values_to_quat(target, stored[moved])
                plan.limited_keys += int(moved.sum())
        plan.tracks.append(Track(use, group, times, stored, interpolation, quats))
    return plans


@dataclass
class _Line:
    """One keyed bone in one action, before sampling: the times to key, the source channels,
    the bone's posed static values (k,) and, for a swing/twist source, its joint limits (4,)
    (`posed_values`)."""

    plan: BonePlan
    use: animdata.ActionUse
    group: str
    times: np.ndarray
    interpolation: np.ndarray | None
    channels: list[animdata.Channel | None]
    static: np.ndarray
    limits: np.ndarray | None


def _sample_lines(
    lines: Sequence[_Line],
) -> list[tuple[_Line, np.ndarray, np.ndarray, np.ndarray]]:
    """Sample every line on a grid through its times dense enough for the continuity chain
    (`refine_grids`), evaluating the lines of a source mode together (`animdata.ChannelStack`)
    in blocks (`_line_blocks`). Returns ``(line, values (N, k), rotations (N, 4), which grid
    points are its times (N,))`` per line, in order."""
    out: list = [None] * len(lines)
    for mode in {line.plan.source for line in lines}:
        index = [i for i, line in enumerate(lines) if line.plan.source == mode]
        stack = animdata.ChannelStack(
            [lines[i].channels for i in index], np.stack([lines[i].static for i in index])
        )
        # (Swing/twist lines carry their limits, the others None: `plan_conversion`.)
        limits = (
            np.stack([cast(np.ndarray, lines[i].limits) for i in index])
            if mode == SWING_TWIST
            else None
        )

        def evaluate(line, t, stack=stack, limits=limits, mode=mode):
            return posed_values(
                mode, stack.evaluate(line, t), None if limits is None else limits[line]
            )

        sizes = [len(lines[i].times) for i in index]
        for block in _line_blocks(sizes):
            line = np.repeat(np.arange(block.start, block.stop), sizes[block.start : block.stop])
            times = np.concatenate([lines[index[j]].times for j in block])
            values = evaluate(line, times)
            q = values_to_quat(mode, values)
            line, _, on_times, values, q = refine_grids(
                mode, line, times, values, q, evaluate, stack.holds()
            )
            bounds = np.searchsorted(line, np.arange(block.start, block.stop + 1)).tolist()
            for j, first, end in zip(block, bounds[:-1], bounds[1:], strict=True):
                i = index[j]
                out[i] = (lines[i], values[first:end], q[first:end], on_times[first:end])
    return out


def _line_blocks(sizes: Sequence[int]) -> list[range]:
    """Consecutive ranges of lines (of ``sizes`` samples each) of about `BLOCK_SAMPLES`
    samples, each ending with the line that takes it there (at least one line each)."""
    blocks: list[range] = []
    start, total = 0, 0
    for i, size in enumerate(sizes):
        total += size
        if total >= BLOCK_SAMPLES:
            blocks.append(range(start, i + 1))
            start, total = i + 1, 0
    if start < len(sizes):
        blocks.append(range(start, len(sizes)))
    return blocks


def _by_mode(
    convert: Callable[[str, np.ndarray], np.ndarray],
    modes: Sequence[str],
    values: Sequence[np.ndarray],
) -> np.ndarray:
    """``convert(mode, values)`` of many rows (each (k,) in its mode, giving (w,)), one call
    per mode (`values_to_quat`, `rotation_vectors`): shape (len(values), w)."""
    out: np.ndarray | None = None
    for mode in set(modes):
        index = [i for i, m in enumerate(modes) if m == mode]
        converted = convert(mode, np.stack([values[i] for i in index]))
        if out is None:
            out = np.empty((len(values), converted.shape[-1]))
        out[index] = converted
    if out is None:
        raise ValueError("no values to convert")
    return out


def _limit_fitter(
    pose_bone: bpy.types.PoseBone, target: str
) -> tuple[Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None, bool]:
    """How converted values (n, k) of ``pose_bone`` are stored in ``target``.

    Returns ``(fit, unlimited)``: ``fit(values) -> (stored values, moved (n,) bool)``, or
    None where values are stored as they are (every target but swing/twist), and whether
    the bone's limits restrict nothing. Only swing/twist has limits: user-set ones fit the
    values inside (`fit_to_limits`); otherwise swings are shortened past their reach
    (`shorten_swings`, same pose) and the limits are widened after writing.
    """
    if target != SWING_TWIST:
        return None, True
    swing_limit, twist_limit = bone_modes.joint_limits(pose_bone)
    if limits_restrict_nothing(swing_limit, twist_limit):
        return (lambda values: (shorten_swings(values), np.zeros(len(values), dtype=bool))), True
    return (lambda values: fit_to_limits(values, swing_limit, twist_limit)), False


def _write_track(
    owner,
    bone: str,
    target: str,
    track: Track,
    mask: np.ndarray | None,
    fcurves: Sequence[bpy.types.FCurve] = (),
) -> list[bpy.types.FCurve]:
    """Write the keys of ``track`` selected by ``mask`` (None: every key); the written
    F-curves, in value order. ``fcurves``: the curves an earlier call wrote, rewritten
    without searching for them."""
    written = []
    column = 0
    times, values, interpolation = track.times, track.values, track.interpolation
    if mask is not None:
        times, values = times[mask], values[mask]
        interpolation = None if interpolation is None else interpolation[mask]
    if interpolation is not None and (interpolation == fcurve_math.BEZIER).all():
        interpolation = None  # what `animdata.write_keys` writes without one: checked once
    for parameter in MODES[target].parameters:
        path = animdata.bone_data_path(bone, parameter.path)
        for index in range(parameter.size):
            written.append(
                animdata.write_keys(
                    owner,
                    path,
                    index,
                    track.group,
                    times,
                    values[:, column],
                    interpolation,
                    fcurve=fcurves[column] if fcurves else None,
                )
            )
            column += 1
    return written


@dataclass
class _Reduction:
    """A track being reduced (`_write_reduced`): where it is written and its kept frames."""

    owner: Any
    bone: str
    target: str
    track: Track
    kept: np.ndarray  # (n,) bool
    # Its target curves in value order: `_replace_curves`' (keyless), then as last written.
    fcurves: list[bpy.types.FCurve] = field(default_factory=list)


def _write_reduced(reductions: Sequence[_Reduction], tolerance: float) -> None:
    """Write each track with as few keys as keep the rotation error within ``tolerance``
    (radians) at every one of its frames (sets ``kept`` and ``fcurves``).

    Greedy refinement checked against Blender's own handles, all tracks at once: start from
    the keys `reduce.seed_keys` predicts from the values' fourth differences, write, read
    back the handles Blender computed, evaluate the curves at every frame whose segment
    changed (a new key, or handles with new bits: `reduce.unchanged_keys`,
    `reduce.changed_segments`; one numpy pass for all tracks,
    `reduce.evaluate_between_keys`), measure the rotation errors there
    (`reduce.rotation_errors`: exactly only where the channels allow one over the
    tolerance), and add keys in every gap between kept keys that exceeds the tolerance
    (`reduce.add_worst_frames`: its worst frame, and more where the error predicts the gap
    needs them), until none does (at worst every frame is kept). The
    tracks' frames, values, rotations, kept frames and errors live in arrays laid end to
    end, made once; a pass works on the rows of the tracks still changing. Only the
    writing and reading back loop over the tracks. (Blender's handles are read, not computed
    here: its default auto smoothing, continuous acceleration, solves a linear system along
    each curve.)
    """
    active = [item for item in reductions if tolerance > 0 and len(item.track.times) > 2]
    for item in reductions:
        item.kept = np.ones(len(item.track.times), dtype=bool)
    sizes = np.array([len(item.track.times) for item in active], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    if active:
        values = np.concatenate([item.track.values for item in active])
        first = np.zeros(len(values), dtype=bool)
        first[starts[:-1]] = True
        kept = seed_keys(values, first, tolerance)
        for i, item in enumerate(active):
            item.kept = kept[starts[i] : starts[i + 1]]
    for item in reductions:
        item.fcurves = _write_track(
            item.owner, item.bone, item.target, item.track, item.kept, item.fcurves
        )
    if not active:
        return
    track_of = np.repeat(np.arange(len(active)), sizes)
    times = np.concatenate([item.track.times for item in active])
    quats = np.concatenate([item.track.source_quats for item in active])
    # The last pass's keyed frames and their handles (`reduce.unchanged_keys`), and the
    # error at each frame (n,) as of the last pass.
    previous = None
    error = np.zeros(len(kept))
    live = np.ones(len(active), dtype=bool)
    while live.any():
        ids = np.flatnonzero(live)
        rows = slice(None) if live.all() else live[track_of]
        # The keys are what was written (float32, sorted); only the handles are Blender's.
        left, right = (
            np.concatenate([animdata.read_points(active[i].fcurves, attribute) for i in ids])
            for attribute in ("handle_left", "handle_right")
        )
        mine, at = kept[rows], times[rows]
        keyed = np.flatnonzero(kept & live[track_of])  # the rows' kept frames, in order
        keys = np.empty_like(left)
        keys[:, 0] = times[keyed, None]
        keys[:, 1] = np.take(values, keyed, axis=0)  # (np.take: a third of [keyed]'s time)
        # Only segments with a new key or new handles are evaluated again.
        todo = changed_segments(mine, unchanged_keys(keyed, left, right, previous))
        previous = keyed, left, right
        errors = error[rows]
        errors[mine] = 0.0
        checked = np.arange(len(kept))[rows][todo]
        errors[todo] = rotation_errors(
            active[0].target,
            evaluate_between_keys(at, mine, keys, left, right, todo),
            np.take(values, checked, axis=0),
            np.take(quats, checked, axis=0),
            tolerance,
        )
        mine, over = add_worst_frames(mine, errors, tolerance)
        kept[rows], error[rows] = mine, errors
        more = np.add.reduceat(over, np.concatenate([[0], np.cumsum(sizes[ids])[:-1]])) > 0
        live[ids[~more]] = False
        for i in ids[more]:
            item = active[i]
            item.kept = kept[starts[i] : starts[i + 1]]
            item.fcurves = _write_track(
                item.owner, item.bone, item.target, item.track, item.kept, item.fcurves
            )
            if item.kept.all():
                live[i] = False
    for i, item in enumerate(active):
        item.kept = kept[starts[i] : starts[i + 1]].copy()


def _switch_mode(
    pose_bone: bpy.types.PoseBone, plan: BonePlan, batch: bone_modes.PoseBatch
) -> None:
    """Put the bone in ``plan.target`` with the current pose as its static value; its
    rotation mode and static rotation are set by ``batch.write()``."""
    native_target = plan.target in NATIVE_MODES
    if plan.source in ADDON_MODES:
        bone_modes.leave_mode(pose_bone, plan.target if native_target else "QUATERNION", batch)
    static = plan.static.tolist()  # Python floats: `enter_mode` checks them one by one
    # `plan_conversion` checked that a bone entering an add-on mode is not driven, and a bone
    # leaving one has just lost its drivers.
    if native_target:
        batch.add(pose_bone, plan.target, static)
    elif plan.target == RQ:
        bone_modes.enter_mode(pose_bone, RQ, static, batch, undriven=True)
    else:
        swing_twist = (static[:2], static[2])
        bone_modes.enter_mode(pose_bone, plan.target, swing_twist, batch, undriven=True)


def widen_limits(
    pose_bone: bpy.types.PoseBone, fcurves: Sequence[bpy.types.FCurve], static: np.ndarray
) -> bool:
    """Widen a swing/twist bone's limits to cover its parameter curves and ``static`` value.

    ``fcurves`` are the bone's ``rq_swing`` X, Z and ``rq_twist`` curves in triples (one per
    action). A Bezier segment lies in the hull of its keys and handles, so the largest
    ``|r_x|``, ``|r_z|`` and the twist range over keys and handles bound every frame and
    subframe: the swing semi-axes grow to ``hypot(max |r_x|, max |r_z|)`` and the twist range
    to the twist's, each with a float32 margin. Returns whether a limit changed.
    """
    reach = [abs(static[0]), abs(static[1])]
    low = high = static[2]
    for start in range(0, len(fcurves), 3):
        for index, fcurve in enumerate(fcurves[start : start + 3]):
            smallest, largest = animdata.value_bounds(fcurve)
            if index < 2:
                reach[index] = max(reach[index], -smallest, largest)
            else:
                low, high = min(low, smallest), max(high, largest)
    margin = 1.0 + 1e-6
    radius = math.hypot(*reach) * margin
    swing_limit, twist_limit = bone_modes.joint_limits(pose_bone)
    wide_swing = np.maximum(swing_limit, radius)
    wide_twist = np.array([min(twist_limit[0], low * margin), max(twist_limit[1], high * margin)])
    changed = False
    for name, old, new in (
        (SWING_LIMIT.name, swing_limit, wide_swing),
        (TWIST_LIMIT.name, twist_limit, wide_twist),
    ):
        if not np.array_equal(old, new):
            pose_bone[name] = [float(x) for x in new]
            changed = True
    return changed


def _channels(bone: str, mode: str) -> list[tuple[str, int]]:
    """``(data path, array index)`` of each channel of the bone's rotation in ``mode``, in
    value order."""
    out: list[tuple[str, int]] = []
    for parameter in MODES[mode].parameters:
        path = animdata.bone_data_path(bone, parameter.path)  # once for its indices
        out.extend((path, index) for index in range(parameter.size))
    return out


def _ends_group(fcurve: bpy.types.FCurve, group: str) -> bool:
    """Whether a curve created in ``group`` after ``fcurve`` moved there (`compat.set_group`)
    would follow it directly: ``fcurve`` is the group's last, or is not in it yet."""
    own = fcurve.group
    return own is None or own.name != group or own.channels[-1] == fcurve


def _replace_curves(
    owner: compat.FCurveOwner,
    index: dict[tuple[str, int], bpy.types.FCurve],
    order: dict[tuple[str, int], int],
    unlike: set[tuple[str, int]],
    plan: BonePlan,
    group: str | None,
) -> list[bpy.types.FCurve]:
    """Give the bone's target channels their F-curves in ``owner`` and remove its source
    curves there; the target curves in value order, keyless (empty when ``group`` is None:
    the action has no track of the bone, its source curves are only removed).

    ``index``, ``order`` and ``unlike`` are the owner's `animdata.fcurve_index`, each key's
    place in the curve list and `animdata.unlike_new`, read before the first change (only
    this bone's curves change here).
    The source curves, in list order, become the target channels in value order
    (`animdata.reuse_fcurve`: renamed and reset, in their place; renaming costs a few
    microseconds, creating and removing scan the action); only missing ones are created (in
    ``group``, at its end) and extra ones removed. When curves must be created and the
    source's last is not its group's last curve, none is reused (all are created, then the
    old removed), so a bone's rotation curves stay together in value order. A target
    channel already keyed in the action, by something other than the source, is written
    in place as it is.
    """
    source = _channels(plan.name, plan.source)
    old_keys = sorted((k for k in source if k in index), key=order.__getitem__)
    old = [index[key] for key in old_keys]
    if group is None:
        if old:
            animdata.remove_fcurves(owner, old)
        return []
    source_paths = {path for path, _ in source}
    target = _channels(plan.name, plan.target)
    kept = {k: index[k] for k in target if k in index and k[0] not in source_paths}
    needed = [key for key in target if key not in kept]
    spare = [
        (k, fcurve) for k, fcurve in zip(old_keys, old, strict=True) if animdata.reusable(fcurve)
    ]
    if spare and len(spare) < len(needed) and not _ends_group(spare[-1][1], group):
        spare = []
    fcurves = {
        key: animdata.reuse_fcurve(owner, fcurve, key[0], key[1], group, old_key not in unlike)
        for key, (old_key, fcurve) in zip(needed, spare, strict=False)
    }
    reused = {fcurve.as_pointer() for fcurve in fcurves.values()}
    rest = [fcurve for fcurve in old if fcurve.as_pointer() not in reused]
    # Old curves still on a target channel (an Euler-to-Euler switch) go before the new
    # curves are made; the others after, so the group never empties (4.4+ would drop it
    # and make it anew at the end of the list).
    on_target = [(f.data_path, f.array_index) in target for f in rest]
    first = [fcurve for fcurve, on in zip(rest, on_target, strict=True) if on]
    last = [fcurve for fcurve, on in zip(rest, on_target, strict=True) if not on]
    if first:
        animdata.remove_fcurves(owner, first)
    sibling = next(iter(fcurves.values()), None)  # (reused: in the group already)
    for key in needed[len(fcurves) :]:
        fcurves[key] = sibling = compat.new_fcurve(owner, key[0], key[1], group, sibling)
    if last:
        animdata.remove_fcurves(owner, last)
    return [kept[key] if key in kept else fcurves[key] for key in target]


def apply_plan(
    obj: bpy.types.Object,
    plans: Sequence[BonePlan],
    tolerance: float = 0.0,
    progress: Callable[[float], None] | None = None,
) -> list[int]:
    """Switch the planned bones: change the mode (keeping the current pose) and, in every
    action, turn the bone's old rotation F-curves into the new mode's (`_replace_curves`:
    reused in their place and channel group, missing ones created there, extra ones
    removed) and write the new keys (reduced within ``tolerance`` radians for tracks planned
    with the SAMPLED strategy). Swing/twist bones whose limits restrict nothing get them
    widened to cover the new curves (`widen_limits`, sets ``plan.widened``), so the drivers'
    clamp never changes the animation. Returns the number of keys written on each channel
    of each track (a bone in one action), one entry per track."""
    uses = animdata.actions_of(obj)
    owners = [animdata.fcurve_owner(use) for use in uses]
    # Each bone changes only its own curves: one index per action, read before any change.
    indexes = [animdata.fcurve_index(owner) for owner in owners]
    orders = [{key: place for place, key in enumerate(index)} for index in indexes]
    unlikes = [set() if owner is None else animdata.unlike_new(owner) for owner in owners]
    written: list[list[bpy.types.FCurve]] = [[] for _ in plans]
    counts: list[int | _Reduction] = []
    reductions: list[tuple[int, _Reduction]] = []
    # Entering an add-on mode builds drivers: on one scratch object for all bones. The modes
    # and static rotations are set in bulk after the loop.
    batch = bone_modes.PoseBatch(obj)
    with drivers.workbench():
        for done, plan in enumerate(plans):
            _switch_mode(obj.pose.bones[plan.name], plan, batch)
            for use, owner, index, order, unlike in zip(
                uses, owners, indexes, orders, unlikes, strict=True
            ):
                if owner is None:
                    continue
                track = next((t for t in plan.tracks if t.use == use), None)
                fcurves = _replace_curves(
                    owner, index, order, unlike, plan, None if track is None else track.group
                )
                if track is None:
                    continue
                if track.interpolation is None:
                    item = _Reduction(owner, plan.name, plan.target, track, np.empty(0), fcurves)
                    reductions.append((done, item))
                    counts.append(item)
                else:
                    counts.append(len(track.times))
                    written[done] += _write_track(
                        owner, plan.name, plan.target, track, None, fcurves
                    )
            if progress is not None:
                progress(0.5 * (done + 1) / len(plans))
        batch.write()
    # Every bone's reduced tracks together (they may differ in target mode only across
    # calls: one plan list has one target).
    _write_reduced([item for _, item in reductions], tolerance)
    for done, item in reductions:
        written[done] += item.fcurves
    for done, plan in enumerate(plans):
        if plan.target == SWING_TWIST and plan.unlimited:
            plan.widened = widen_limits(obj.pose.bones[plan.name], written[done], plan.static)
        if progress is not None:
            progress(0.5 + 0.5 * (done + 1) / len(plans))
    obj.update_tag()  # once for the modes and static rotations (`PoseBatch`), keys and limits
    return [c if isinstance(c, int) else int(c.kept.sum()) for c in counts]
