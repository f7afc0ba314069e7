# SPDX-License-Identifier: GPL-3.0-or-later
"""THE boundary where Blender animation data becomes numpy arrays, and back.

Everything that reads or writes keyframes goes through here, in bulk: ``foreach_get`` /
``foreach_set`` on ``keyframe_points``, ``keyframe_points.add(n)``, one ``FCurve.update()``
per written curve. Never ``keyframe_insert`` in a loop, never ``frame_set``.

Conventions at this boundary:

- Times are frames in the *action's own* time (NLA strip mapping is Blender's business; a
  conversion acts on each action in its own time).
- Values are Blender's float32, widened to float64 on reading and rounded on writing.
- A data path names one property of the object, e.g. ``pose.bones["B"].rotation_quaternion``
  (see `bone_data_path`), and ``size`` its number of array indices; a channel that has no
  F-curve is *missing* (``None``) and callers substitute the property's static value.
- Actions come with their slot (`ActionUse`): the F-curves of one object in one action are
  `fcurve_owner(use).fcurves`, whatever the Blender version (`compat.channelbag`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import bpy
import numpy as np

from ..rq_rotation.keyframes import fcurve_math
from ..rq_rotation.keyframes.fcurve_math import Keys
from . import compat

# Keyframe.handle_left_type / handle_right_type enum values.
HANDLE_FREE = 0
# Every attribute of a keyframe that `foreach_get`/`foreach_set` reach: (name, numpy type,
# values per key). Read and written back together, they keep a key exactly as it was.
KEY_ATTRIBUTES: tuple[tuple[str, Any, int], ...] = (
    ("co", np.float32, 2),
    ("handle_left", np.float32, 2),
    ("handle_right", np.float32, 2),
    ("handle_left_type", np.int32, 1),
    ("handle_right_type", np.int32, 1),
    ("interpolation", np.int32, 1),
    ("easing", np.int32, 1),
    ("back", np.float32, 1),
    ("amplitude", np.float32, 1),
    ("period", np.float32, 1),
    ("type", np.int32, 1),
    ("select_control_point", bool, 1),
    ("select_left_handle", bool, 1),
    ("select_right_handle", bool, 1),
)
# `FCurve.update()` merges keys closer than this many frames (measured in 4.2 and 5.0).
KEY_MERGE_DISTANCE = 0.01
# Blender's last frame (``MAXFRAME``; ``Scene.frame_current`` runs from its negative to it, in
# 4.2 to 5.2): `Scene.frame_set` stops there, so frame ranges of the bakes stay within.
MAX_FRAME = 1048574


@dataclass(frozen=True)
class ActionUse:
    """An action that animates an object, with the slot it uses (``None`` before 4.4).

    ``strip`` is the NLA strip that holds it, ``None`` for the object's active action.
    """

    action: bpy.types.Action
    slot: Any
    strip: bpy.types.NlaStrip | None = None

    @property
    def key(self) -> tuple[str, str | None]:
        """What two uses of the same action and slot share: the action's full name and the
        slot's identifier (None before 4.4)."""
        return self.action.name_full, getattr(self.slot, "identifier", None)


@dataclass
class Channel:
    """One F-curve and its keys as arrays."""

    fcurve: bpy.types.FCurve
    keys: Keys

    def evaluate(self, t: np.ndarray) -> np.ndarray:
        """Values at frames ``t``, shape (m,) -> (m,): numpy when `Keys.supported`, else
        ``FCurve.evaluate`` per time (modifiers, easing)."""
        if self.keys.supported:
            return fcurve_math.evaluate(self.keys, t)
        return np.array([self.fcurve.evaluate(float(x)) for x in np.ravel(t)], dtype=np.float64)


def bone_data_path(bone_name: str, prop: str) -> str:
    """Data path of a pose-bone property from the object.

    ``prop`` is an RNA property name (``"rotation_euler"``) or an ID custom property in
    brackets (``'["rq_vector"]'``).
    """
    sep = "" if prop.startswith("[") else "."
    return f'pose.bones["{bpy.utils.escape_identifier(bone_name)}"]{sep}{prop}'


def _strips(
    strips: Iterable[bpy.types.NlaStrip],
) -> Iterator[tuple[bpy.types.NlaStrip, bpy.types.Action]]:
    """The strips holding an action, with it, looking inside meta strips."""
    for strip in strips:
        if strip.type == 'META':
            yield from _strips(strip.strips)
        elif strip.action is not None:
            yield strip, strip.action


def actions_of(obj: bpy.types.Object) -> list[ActionUse]:
    """Every action animating ``obj``: the active action first, then those of NLA strips.

    An action used twice with the same slot is listed once (the first use).
    """
    anim = obj.animation_data
    if anim is None:
        return []
    uses: list[ActionUse] = []
    seen: set[tuple[str, Any]] = set()

    def add(action: bpy.types.Action, slot: Any, strip: bpy.types.NlaStrip | None) -> None:
        use = ActionUse(action, slot, strip)
        if use.key not in seen:
            seen.add(use.key)
            uses.append(use)

    if anim.action is not None:
        add(anim.action, compat.assigned_slot(anim), None)
    for track in anim.nla_tracks:
        for strip, action in _strips(track.strips):
            add(action, compat.assigned_slot(strip), strip)
    return uses


def players(use: ActionUse) -> list[bpy.types.Object]:
    """The objects that play ``use``'s action through its slot (before 4.4: the action), as
    their active action or in an NLA strip (`actions_of`), the user's object among them. The
    file's objects are scanned only when the action has another user than a fake one."""
    action = use.action
    if action.users - int(action.use_fake_user) <= 1:
        return []
    return [
        obj
        for obj in bpy.data.objects
        if obj.animation_data is not None and any(other.key == use.key for other in actions_of(obj))
    ]


def curve_place(bone_name: str, use: ActionUse, fcurve: bpy.types.FCurve) -> str:
    """An F-curve of a bone as a refusal names it: ``bone 'A': its F-curve rotation_euler[1]
    in action 'Walk'`` (its data path past the bone, ``["rq_vector"][0]`` for a parameter)."""
    path = fcurve.data_path
    tail = path.split('"]', 1)[1].lstrip(".") if path.startswith("pose.bones[") else path
    return (
        f"bone '{bone_name}': its F-curve {tail}[{fcurve.array_index}] in action "
        f"'{use.action.name}'"
    )


def check_editable(action: bpy.types.Action) -> None:
    """Refuse (ValueError) an action Blender does not let you edit (linked from a library,
    as a library override's often is): its keys cannot change in this file (a review: the
    spline wrote into one, the filter reported keys changed that stayed as they were)."""
    if not action.is_editable:
        library = action.library.filepath if action.library is not None else ""
        where = f" from {library}" if library else ""
        raise ValueError(
            f"action '{action.name}' is linked{where} and cannot be edited in this file: "
            "make it local first, or edit it in its library"
        )


def check_unmuted(bone_name: str, use: ActionUse, fcurve: bpy.types.FCurve, why: str) -> None:
    """Refuse (ValueError) a muted F-curve: Blender does not play it; ``why`` says what that
    would do to the operator's keys."""
    if fcurve.mute:
        raise ValueError(
            f"{curve_place(bone_name, use, fcurve)} is muted: unmute or delete it first "
            f"(Blender does not play it; {why})"
        )


def check_unlocked(bone_name: str, use: ActionUse, fcurve: bpy.types.FCurve) -> None:
    """Refuse (ValueError) a locked F-curve: Blender's editing tools leave a locked channel
    alone, and so do the add-on's."""
    if fcurve.lock:
        raise ValueError(f"{curve_place(bone_name, use, fcurve)} is locked: unlock it first")


def modifier_types(fcurve: bpy.types.FCurve) -> list[str]:
    """The UI names of an F-curve's modifiers (``Cycles``, ``Noise``), in order."""
    return [
        cast(bpy.types.EnumProperty, modifier.bl_rna.properties["type"])
        .enum_items[modifier.type]
        .name
        for modifier in fcurve.modifiers
    ]


def blending(obj: bpy.types.Object) -> list[str]:
    """Where actions animating ``obj`` blend with what lies below them, by name: the active
    action at an influence below 1 or with a blending other than Replace, and unmuted NLA
    strips with an animated influence, a blend in or out, or such a blending. NLA mixes each
    F-curve channel on its own, so a rotation moved to other channels (a conversion, a bake)
    blends differently there. Empty when every action replaces what lies below it fully."""
    anim = obj.animation_data
    if anim is None:
        return []
    found = []
    if anim.action is not None and (
        anim.action_influence < 1.0 or anim.action_blend_type != 'REPLACE'
    ):
        found.append(f"action '{anim.action.name}'")
    for track in anim.nla_tracks:
        if track.mute:
            continue
        for strip, _ in _strips(track.strips):
            partial = strip.use_animated_influence or strip.blend_in > 0.0 or strip.blend_out > 0.0
            if not strip.mute and (partial or strip.blend_type != 'REPLACE'):
                found.append(f"strip '{strip.name}'")
    return found


def fcurve_owner(use: ActionUse, ensure: bool = False) -> compat.FCurveOwner | None:
    """The F-curve collection of ``use`` (see `compat.channelbag`)."""
    return compat.channelbag(use.action, use.slot, ensure=ensure)


def read_keys(fcurve: bpy.types.FCurve) -> Keys:
    """All keys of an F-curve as arrays (see `fcurve_math.Keys`), in bulk. The handles are read
    when first used: use the keys before changing the curve."""
    points = fcurve.keyframe_points
    n = len(points)
    co = np.empty(2 * n, dtype=np.float32)
    ipo = np.empty(n, dtype=np.int32)
    points.foreach_get("co", co)
    points.foreach_get("interpolation", ipo)

    def read_handles(left: np.ndarray, right: np.ndarray) -> None:
        points.foreach_get("handle_left", left.ravel())
        points.foreach_get("handle_right", right.ravel())

    def handles() -> tuple[np.ndarray, np.ndarray]:
        left = np.empty((n, 2), dtype=np.float32)
        right = np.empty((n, 2), dtype=np.float32)
        read_handles(left, right)
        return left.astype(np.float64), right.astype(np.float64)

    extrapolation = (
        fcurve_math.EXTRAPOLATE_LINEAR
        if fcurve.extrapolation == 'LINEAR'
        else fcurve_math.EXTRAPOLATE_CONSTANT
    )
    return Keys(
        co=co.reshape(n, 2).astype(np.float64),
        interpolation=ipo,
        handles=handles,
        extrapolation=extrapolation,
        has_modifiers=len(fcurve.modifiers) > 0 or len(fcurve.sampled_points) > 0,
        read_handles=read_handles,
    )


def read_points(fcurves: Sequence[bpy.types.FCurve], attribute: str) -> np.ndarray:
    """A point attribute of the keys of curves keyed at the same frames (``"co"``,
    ``"handle_left"``, ``"handle_right"``), in bulk: shape (n, 2, c) float32 for c curves
    of n keys each."""
    n = len(fcurves[0].keyframe_points)
    out = np.empty((len(fcurves), 2 * n), dtype=np.float32)
    for row, fcurve in zip(out, fcurves, strict=True):
        fcurve.keyframe_points.foreach_get(attribute, row)
    return out.reshape(len(fcurves), n, 2).transpose(1, 2, 0)


def value_bounds(fcurve: bpy.types.FCurve) -> tuple[float, float]:
    """The smallest and largest value of an F-curve's keys and handles (its Bezier hull in
    value), read in bulk; the curve must have keys."""
    points = fcurve.keyframe_points
    flat = np.empty((3, 2 * len(points)), dtype=np.float32)
    for row, attribute in zip(flat, ("co", "handle_left", "handle_right"), strict=True):
        points.foreach_get(attribute, row)
    values = flat[:, 1::2]
    return float(values.min()), float(values.max())


def fcurve_index(owner: compat.FCurveOwner | None) -> dict[tuple[str, int], bpy.types.FCurve]:
    """Every F-curve of ``owner`` by ``(data path, array index)``, read in one pass: for
    many lookups while the curves do not change (``FCurves.find`` searches them all each
    time, quadratic over a rig's bones)."""
    index: dict[tuple[str, int], bpy.types.FCurve] = {}
    for fcurve in () if owner is None else owner.fcurves:
        index.setdefault((fcurve.data_path, fcurve.array_index), fcurve)  # the first, as find
    return index


def read_channels(
    owner: compat.FCurveOwner | None,
    data_path: str,
    size: int,
    index: dict[tuple[str, int], bpy.types.FCurve] | None = None,
) -> list[Channel | None]:
    """The F-curves of ``data_path`` indices ``0 .. size-1`` with their keys; ``None`` where a
    channel has no F-curve or no keys. ``index``: the owner's `fcurve_index`, if at hand."""
    channels: list[Channel | None] = []
    for array_index in range(size):
        if index is not None:
            fcurve = index.get((data_path, array_index))
        else:
            fcurve = None if owner is None else owner.fcurves.find(data_path, index=array_index)
        if fcurve is None or len(fcurve.keyframe_points) == 0:
            channels.append(None)
        else:
            channels.append(Channel(fcurve, read_keys(fcurve)))
    return channels


def evaluate_channels(
    channels: Sequence[Channel | None], static: Sequence[float], t: np.ndarray
) -> np.ndarray:
    """Evaluate a property's channels at frames ``t``.

    Parameters
    ----------
    channels : sequence of Channel or None, length k
        From `read_channels`.
    static : sequence of float, length k
        The property's current value, used for missing channels.
    t : ndarray, shape (m,)

    Returns
    -------
    ndarray, shape (m, k)
    """
    t = np.asarray(t, dtype=np.float64)
    out = np.empty((len(t), len(channels)), dtype=np.float64)
    for index, channel in enumerate(channels):
        out[:, index] = static[index] if channel is None else channel.evaluate(t)
    return out


class ChannelStack:
    """The channels of many properties of one size k (a bone's rotation in each of many
    actions, say), evaluated together: one `fcurve_math.evaluate_stacked_together` pass for
    the channel indices keyed on the same lines (all k, usually) for every curve numpy
    reproduces, ``FCurve.evaluate`` for the rest.

    Parameters
    ----------
    channels : sequence (lines) of sequences of Channel or None, each length k
        From `read_channels`, one entry per property ("line").
    statics : ndarray, shape (lines, k)
        The properties' current values, used for missing channels.
    """

    def __init__(self, channels: Sequence[Sequence[Channel | None]], statics: np.ndarray) -> None:
        self.channels = channels
        self.statics = np.asarray(statics, dtype=np.float64).reshape(len(channels), -1)
        width = self.statics.shape[1]
        # Per channel index: the stack of the supported curves and, per line, its curve in
        # the stack (-1: missing or unsupported).
        self.stacks: list[fcurve_math.KeyStack | None] = []
        self.rows: list[np.ndarray] = []
        # Per line: how many of its channels have a curve, and whether one of them is not
        # numpy's (`holds`). (Python lists while filling: numpy item access per line and
        # channel costs more.)
        count = [0] * len(channels)
        slow = [False] * len(channels)
        for index in range(width):
            places = [-1] * len(channels)
            curves: list[Keys] = []
            present = [
                (i, line[index]) for i, line in enumerate(channels) if line[index] is not None
            ]
            supported = fcurve_math.supported_each([channel.keys for _, channel in present])
            for (i, channel), fast in zip(present, supported, strict=True):
                count[i] += 1
                if fast:
                    places[i] = len(curves)
                    curves.append(channel.keys)
                else:
                    slow[i] = True
            self.stacks.append(fcurve_math.stack(curves) if curves else None)
            self.rows.append(np.array(places, dtype=np.int64))
        self.curves = np.array(count, dtype=np.int64)
        self.slow = np.array(slow, dtype=bool)
        # Channel indices whose curves are the same lines' (a vector keyed on every line):
        # evaluated together, one key search and cubic solve for all of them
        # (`fcurve_math.evaluate_stacked_together`).
        self.groups: list[list[int]] = []
        for index, row in enumerate(self.rows):
            group = next((g for g in self.groups if np.array_equal(self.rows[g[0]], row)), None)
            if group is None:
                self.groups.append([index])
            else:
                group.append(index)
        # Per group, its stacks as `evaluate_stacked_together` reads them (None: no curve
        # numpy evaluates), prepared once for every evaluation.
        self.together = [
            fcurve_math.StacksTogether(stacks) if stacks else None
            for stacks in (
                [s for s in (self.stacks[index] for index in group) if s is not None]
                for group in self.groups
            )
        ]

    def evaluate(self, line: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Values of each line at its time, (m,), (m,) -> (m, k)."""
        line = np.asarray(line, dtype=np.int64)
        t = np.asarray(t, dtype=np.float64)
        if len(self.groups) == 1 and len(self.groups[0]) == self.statics.shape[1]:
            # Every channel keyed on the same lines (a vector keyed together, the usual case):
            # when each line asked for has numpy's curves, their values are the whole result
            # (no static values gathered and overwritten: 4 ms of a 60,000-frame bake).
            curve = self.rows[0][line]
            (together,) = self.together
            if (
                len(line)
                and together is not None
                and len(together.stacks) == len(self.stacks)
                and (curve >= 0).all()
            ):
                return fcurve_math.evaluate_stacked_together(together, curve, t)
        out = self.statics[line]
        for group, together in zip(self.groups, self.together, strict=True):
            row = self.rows[group[0]]
            curve = row[line]
            fast = curve >= 0
            if together is not None and fast.any():
                out[np.ix_(fast, group)] = fcurve_math.evaluate_stacked_together(
                    together, curve[fast], t[fast]
                )
            if fast.all():
                continue
            for index in group:
                self._evaluate_slow(index, line, t, fast, out)
        return out

    def holds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Where a line stands still: ``(line, start, end)``, each shape (h,), the held
        segments (`fcurve_math.held_segments`) that every curve of the line has, so the
        whole property holds its value on ``[start, end)`` (missing channels hold theirs;
        lines with a curve only Blender evaluates have none). For `refine.refine_grids`."""
        found = []
        for stack, row in zip(self.stacks, self.rows, strict=True):
            if stack is None:
                continue
            curve, start, end = fcurve_math.held_segments(stack)
            found.append(np.stack([np.flatnonzero(row >= 0)[curve], start, end], axis=1))
        if not found:
            return np.empty(0, dtype=np.int64), np.empty(0), np.empty(0)
        segments, count = np.unique(np.concatenate(found), axis=0, return_counts=True)
        line = segments[:, 0].astype(np.int64)
        common = (count == self.curves[line]) & ~self.slow[line]
        return line[common], segments[common, 1], segments[common, 2]

    def _evaluate_slow(
        self, index: int, line: np.ndarray, t: np.ndarray, fast: np.ndarray, out: np.ndarray
    ) -> None:
        """Channel ``index`` of the lines numpy does not evaluate (``~fast``), into ``out``."""
        for i in np.unique(line[~fast]):  # modifiers or easing: Blender evaluates
            channel = self.channels[i][index]
            if channel is not None:
                mine = line == i
                out[mine, index] = channel.evaluate(t[mine])


def key_times(channels: Sequence[Channel | None]) -> np.ndarray:
    """Sorted union of the key frames of ``channels``, shape (n,) (empty if all missing)."""
    times = [c.keys.times for c in channels if c is not None]
    if not times:
        return np.empty(0)
    first = times[0]
    # Channels keyed together (the usual case): one comparison for all of them.
    same_length = all(len(t) == len(first) for t in times)
    if same_length and (first[1:] > first[:-1]).all() and (np.array(times) == first).all():
        return first.copy()
    return np.unique(np.concatenate(times))


def write_keys(
    owner: compat.FCurveOwner,
    data_path: str,
    index: int,
    group: str,
    times: np.ndarray,
    values: np.ndarray,
    interpolation: np.ndarray | None = None,
    handles: tuple[np.ndarray, np.ndarray] | None = None,
    fcurve: bpy.types.FCurve | None = None,
) -> bpy.types.FCurve:
    """Replace the keys of one channel (creating its F-curve if needed), in bulk.

    Parameters
    ----------
    owner : from `fcurve_owner` (``ensure=True``)
    data_path, index : the channel; ``group`` names the channel group of a new F-curve.
    times, values : ndarray, shape (n,)
        Key frames (increasing) and values.
    interpolation : ndarray of int, shape (n,), optional
        ``fcurve_math`` interpolation codes; BEZIER when omitted.
    handles : (left, right), each ndarray shape (n, 2), optional
        Explicit handle points (FREE handles). Without them handles are AUTO_CLAMPED and
        Blender computes them (``FCurve.update``).
    fcurve : bpy.types.FCurve, optional
        The channel's F-curve when the caller holds it (one this function returned): saves
        the search through every F-curve of the owner.

    Returns
    -------
    bpy.types.FCurve
        The written curve (sorted, handles recalculated).
    """
    if fcurve is None:
        fcurve = owner.fcurves.find(data_path, index=index)
    if fcurve is None:
        fcurve = compat.new_fcurve(owner, data_path, index, group)
    n = len(times)
    points = fcurve.keyframe_points
    if len(points):  # (a curve just made or reused has none: clearing it costs more than asking)
        points.clear()
    points.add(n)
    co = np.empty((n, 2), dtype=np.float32)
    co[:, 0] = times
    co[:, 1] = values
    co[:, 1] += 0.0  # (-0.0 becomes 0.0: the fields would show "-0°")
    points.foreach_set("co", co.ravel())
    # Keys made by `keyframe_points.add` are BEZIER with AUTO_CLAMPED handles whatever the
    # preferences (measured in 4.2 and 5.0): set only what differs, in bulk.
    if interpolation is not None and (np.asarray(interpolation) != fcurve_math.BEZIER).any():
        points.foreach_set("interpolation", np.asarray(interpolation, dtype=np.int32))
    if handles is not None:
        free = np.full(n, HANDLE_FREE, dtype=np.int32)
        points.foreach_set("handle_left_type", free)
        points.foreach_set("handle_right_type", free)
        points.foreach_set("handle_left", np.asarray(handles[0], dtype=np.float32).ravel())
        points.foreach_set("handle_right", np.asarray(handles[1], dtype=np.float32).ravel())
    fcurve.update()
    return fcurve


def splice_keys(
    owner: compat.FCurveOwner,
    data_path: str,
    index: int,
    group: str,
    times: np.ndarray,
    values: np.ndarray,
) -> bpy.types.FCurve:
    """Replace the keys of one channel within the span of ``times`` and keep the others, in
    bulk (creating the F-curve if needed).

    Keys less than `KEY_MERGE_DISTANCE` from ``[times[0], times[-1]]`` or inside it are
    removed; every other key stays with all its attributes (`KEY_ATTRIBUTES`: handles and
    their types, interpolation, easing, key type, selection). The new keys are BEZIER with
    AUTO_CLAMPED handles, as in `write_keys` (same parameters; ``times`` increasing).
    Returns the written curve (sorted, automatic handles recalculated).
    """
    fcurve = owner.fcurves.find(data_path, index=index)
    if fcurve is None:
        return write_keys(owner, data_path, index, group, times, values)
    points = fcurve.keyframe_points
    old = np.empty(2 * len(points), dtype=np.float32)
    points.foreach_get("co", old)
    old_times = old[0::2].astype(np.float64)
    keep = (old_times < times[0] - KEY_MERGE_DISTANCE) | (
        old_times > times[-1] + KEY_MERGE_DISTANCE
    )
    if not keep.any():
        return write_keys(owner, data_path, index, group, times, values)
    kept = {}
    for name, dtype, width in KEY_ATTRIBUTES:
        array = np.empty(len(points) * width, dtype=dtype)
        points.foreach_get(name, array)
        kept[name] = array.reshape(-1, width)[keep]
    k, n = int(keep.sum()), len(times)
    points.clear()
    points.add(k + n)
    for name, dtype, width in KEY_ATTRIBUTES:
        # The new keys' attributes as `keyframe_points.add` made them, then their values.
        array = np.empty((k + n) * width, dtype=dtype).reshape(-1, width)
        points.foreach_get(name, array.ravel())
        array[:k] = kept[name]
        if name == "co":
            array[k:, 0] = times
            array[k:, 1] = values
        points.foreach_set(name, array.ravel())
    fcurve.update()
    return fcurve


# The key attributes `shift_keys` writes, in the order of its blocks' rows.
POINT_ATTRIBUTES = ("co", "handle_left", "handle_right")


def shift_keys(
    channel: Channel,
    delta: np.ndarray,
    keep: Callable[[bpy.types.FCurve, np.ndarray], None] | None = None,
) -> None:
    """Add ``delta`` (n,) to the values of the channel's n keys and to their handles, in bulk
    (interpolation and handle types kept; automatic handles are recomputed).

    ``keep(fcurve, points)``, when given, receives the keys' points as they were before the
    first write (`POINT_ATTRIBUTES`, shape (3, n, 2) float32: Blender's values, bit for
    bit), to write back if the caller fails (`transaction.ShiftJournal`)."""
    keys = channel.keys
    points = channel.fcurve.keyframe_points
    # Keys and handles as Blender's float32 in one block, shifted in float64 (as the keys'
    # values are read) and rounded once.
    moved = np.empty((3, len(delta), 2), dtype=np.float32)
    moved[0] = keys.co
    keys.handles_into(moved[1], moved[2])
    if keep is not None:
        keep(channel.fcurve, moved.copy())
    moved[:, :, 1] = moved[:, :, 1] + delta
    for attribute, array in zip(POINT_ATTRIBUTES, moved, strict=True):
        points.foreach_set(attribute, array.ravel())
    channel.fcurve.update()


def shifts_restorably(keys: Keys) -> bool:
    """Whether `shift_keys` on these keys can be undone by writing their points back: their
    frames increase by more than twice `KEY_MERGE_DISTANCE`, so ``FCurve.update()`` neither
    reorders nor merges them, and every other key attribute is left as it was."""
    times = keys.times
    return bool((times[1:] - times[:-1] > 2.0 * KEY_MERGE_DISTANCE).all())


def remove_fcurves(owner: compat.FCurveOwner, fcurves: Iterable[bpy.types.FCurve]) -> int:
    """Remove F-curves of ``owner`` (and channel groups they leave empty); returns how many
    were removed."""
    removed = 0
    for fcurve in fcurves:
        group_name = None if fcurve.group is None else fcurve.group.name
        owner.fcurves.remove(fcurve)
        removed += 1
        # 4.4+ drop a group with its last F-curve themselves (no lookup: ``groups.get``
        # compares every group's name); 4.2 and 4.3 keep it.
        if compat.SLOTTED_ACTIONS or group_name is None:
            continue
        groups = getattr(owner, "groups")  # noqa: B009 (Action)
        group = groups.get(group_name)
        if group is not None and len(group.channels) == 0:
            groups.remove(group)
    return removed


# Every writable property of an F-curve as ``fcurves.new`` makes it, on 4.2, 4.5 and 5.2
# (``tests/blender/test_animdata.py`` compares a reused curve with a new one, property by
# property): what `reuse_fcurve` resets.
FRESH_FCURVE: dict[str, Any] = {
    "extrapolation": 'CONSTANT',
    "color_mode": 'AUTO_RAINBOW',
    "color": (0.0, 0.0, 0.0),
    "select": True,
    "lock": False,
    "mute": False,
    "hide": False,
    "auto_smoothing": 'CONT_ACCEL',
    "is_valid": True,
}


def reusable(fcurve: bpy.types.FCurve) -> bool:
    """Whether `reuse_fcurve` can make ``fcurve`` new: not if it holds sampled points
    (``FCurve.convert_to_samples``), which the API cannot clear."""
    return len(fcurve.sampled_points) == 0


def unlike_new(owner: compat.FCurveOwner) -> set[tuple[str, int]]:
    """``(data path, array index)`` of each F-curve of ``owner`` with a property that differs
    from a new curve's (`FRESH_FCURVE`), read with one ``foreach_get`` per property over all
    the curves (enums as their items' numbers, the color as 3 floats a curve). A curve whose
    key is not in the set is like new there: `reuse_fcurve` then reads none of them (9 RNA
    reads a curve, one at a time)."""
    fcurves = owner.fcurves
    count = len(fcurves)
    differs = np.zeros(count, dtype=bool)
    properties = bpy.types.FCurve.bl_rna.properties
    for name, value in FRESH_FCURVE.items():
        rna: Any = properties[name]
        if rna.type == 'ENUM':
            expected = np.array([rna.enum_items[value].value])
        else:
            expected = np.atleast_1d(np.asarray(value, dtype=np.float64))
        read = np.empty(
            count * len(expected), dtype=np.float32 if rna.type == 'FLOAT' else np.int32
        )
        fcurves.foreach_get(name, read)
        differs |= (read.reshape(count, len(expected)) != expected).any(axis=1)
    return {
        (f.data_path, f.array_index) for f in (fcurves[int(i)] for i in np.flatnonzero(differs))
    }


def reuse_fcurve(
    owner: compat.FCurveOwner,
    fcurve: bpy.types.FCurve,
    data_path: str,
    index: int,
    group: str,
    like_new: bool = False,
) -> bpy.types.FCurve:
    """Turn ``fcurve`` (of ``owner``, `reusable`) into the F-curve ``compat.new_fcurve(owner,
    data_path, index, group)`` would create, in its own place in the curve list: renamed,
    moved into ``group`` if in another (to the group's end), keys and modifiers removed,
    every other property as a new curve's (`FRESH_FCURVE`). Only what differs is set.

    Renaming a curve costs a few microseconds whatever the action holds, while creating one
    and removing one scan the action (measured at 1000 bones x 4 curves: 25-80 us and
    30-50 us a call on 4.5 and 5.2, ten times the cost at 100 bones): a conversion that
    replaces a bone's curves with as many reuses them. ``like_new``: its `FRESH_FCURVE`
    properties are known to be a new curve's already (its key is not in `unlike_new`, read
    before), so none is read. Returns ``fcurve``.
    """
    if fcurve.data_path != data_path:
        fcurve.data_path = data_path
    if fcurve.array_index != index:
        fcurve.array_index = index
    compat.set_group(owner, fcurve, group)
    if len(fcurve.keyframe_points):
        fcurve.keyframe_points.clear()
    modifiers = fcurve.modifiers
    while len(modifiers):
        modifiers.remove(modifiers[0])
    for name, value in () if like_new else FRESH_FCURVE.items():
        current = getattr(fcurve, name)
        if (tuple(current) if name == "color" else current) != value:
            setattr(fcurve, name, value)
    return fcurve
