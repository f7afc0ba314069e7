# SPDX-License-Identifier: GPL-3.0-or-later
"""The continuity filter on parameter keys: each key's value replaced by the equivalent one
(same rotation) closest to the previous key's, like Blender's Euler discontinuity filter.

- ``rq_vector``: ``rq_rotation.rq_sequence_continuous`` on the vectors at the union of the
  components' key times (the shells ``v + 2 pi k v/|v|``).
- ``rq_twist``: ``t + 2 pi k`` closest to the previous key, kept only where it stays inside the
  bone's ``rq_twist_limit`` (the drivers clamp the twist to it, so a value outside would pose
  the bone differently).
- ``rq_swing``: left alone. Its ellipse limit has semi-axes of at most pi, and the evaluation
  scales any swing into it, so a swing inside its limits has no other equivalent inside them.

It assumes consecutive keys are less than half a turn apart: a larger step is read as the
shorter way round. Poses at the keys do not change.

A *held jump* is left alone (``keyframes.continuity.held_jumps``): a CONSTANT key (on every
component keyed there) followed at most ``JUMP_WINDOW`` frames later by the next key. That
is how ``pose.rq_spline_interpolate`` writes a change of chart (``keyframes.spline_keys``:
the keys on either side are in different charts on purpose, and the curve between them is
not continuous in RQ space); the filter starts again
after it, so running it after the spline operator keeps that spline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ..rq_rotation import rq_sequence_continuous
from ..rq_rotation.keyframes.continuity import continuous_twists, held_jumps
from ..rq_rotation.modes import RQ_VECTOR, TWIST
from . import animdata, bone_modes
from .parameter_curves import ParameterCurves

# The parameters the filter changes (see the module docstring).
FILTERED_PARAMETERS = (RQ_VECTOR.name, TWIST.name)
# Values that differ by less than this (radians) count as unchanged (float32 keys).
UNCHANGED = 1e-6


def filtered_values(
    targets: Sequence[ParameterCurves],
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each parameter at the union of its key times, before and after the filter.

    The ``rq_vector`` parameters of all ``targets`` are evaluated together
    (`animdata.ChannelStack`) and chained in one `rq_sequence_continuous` pass (restarting
    at each parameter's first key and after each held jump); each twist on its own.

    Returns
    -------
    list of (times, before, after), one per target
        times : ndarray, shape (n,); before, after : ndarray, shape (n, k)
    """
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray] | None] = [None] * len(targets)
    vectors = [i for i, c in enumerate(targets) if c.name == RQ_VECTOR.name]
    for i, curves in enumerate(targets):
        if curves.name == TWIST.name:
            times = curves.key_times()
            before = curves.values(times)
            _, (low, high) = bone_modes.joint_limits(curves.pose_bone)
            out[i] = (times, before, continuous_twists(before[:, 0], low, high)[:, None])
        elif curves.name != RQ_VECTOR.name:
            raise ValueError(f"the continuity filter does not change {curves.name}")
    if vectors:
        key_times = [targets[i].key_times() for i in vectors]
        stack = animdata.ChannelStack(
            [targets[i].channels for i in vectors], np.array([targets[i].static for i in vectors])
        )
        sizes = [len(t) for t in key_times]
        joined = stack.evaluate(
            np.repeat(np.arange(len(vectors)), sizes), np.concatenate(key_times)
        )
        # Each stretch between held jumps on its own, from its first key as it is.
        restart = held_jumps(
            [[None if c is None else c.keys for c in targets[i].channels] for i in vectors],
            key_times,
        )
        cuts = np.cumsum(sizes)[:-1]
        restart[cuts] = True
        chained = rq_sequence_continuous(joined, restart)
        for i, t, b, a in zip(
            vectors, key_times, np.split(joined, cuts), np.split(chained, cuts), strict=True
        ):
            out[i] = (t, b, a)
    return [item for item in out if item is not None]


@dataclass(frozen=True)
class FilterWrites:
    """How `apply_filter` changes one parameter (`filter_writes`).

    Attributes
    ----------
    shifts : list of (Channel, ndarray (n_keys,))
        Components keyed at every changed time: their keys (and handles) shifted by these
        deltas (`animdata.shift_keys`).
    rewrites : list of (component index, Channel or None)
        Components that would change at a time where they have no key (or have no curve):
        rewritten with keys at the union of the key times (automatic handles), which keeps
        the poses at every key.
    times, values : ndarray, shapes (n,) and (n, k)
        The union of the key times and the filtered values there (the rewrites' keys).
    changed : int
        How many key times change.
    """

    shifts: list[tuple[animdata.Channel, np.ndarray]]
    rewrites: list[tuple[int, animdata.Channel | None]]
    times: np.ndarray
    values: np.ndarray
    changed: int


def filter_writes(
    curves: ParameterCurves, filtered: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> FilterWrites:
    """The writes that filter one parameter's keys to ``filtered`` (its `filtered_values`);
    reads only."""
    times, before, after = filtered
    delta = after - before
    moves = np.abs(delta) > UNCHANGED  # (n, k)
    moved_channels = moves.any(axis=0).tolist()
    shifts: list[tuple[animdata.Channel, np.ndarray]] = []
    rewrites: list[tuple[int, animdata.Channel | None]] = []
    for index, channel in enumerate(curves.channels):
        if not moved_channels[index]:
            continue
        if channel is not None:
            at_keys = np.searchsorted(times, channel.keys.times)
            # Keyed at every time (the usual case), or moved only where it has keys.
            if len(at_keys) == len(times) or not np.delete(moves[:, index], at_keys).any():
                shifts.append((channel, delta[at_keys, index]))
                continue
        rewrites.append((index, channel))
    changed = int(np.count_nonzero(moves.any(axis=1)))
    return FilterWrites(shifts, rewrites, times, after, changed)


def shifts_restorably(writes: Sequence[FilterWrites]) -> bool:
    """Whether ``writes`` only shift keys, each curve restorably
    (`animdata.shifts_restorably`): then `transaction.shifted_keys` can make them all or
    nothing."""
    return all(
        not w.rewrites and all(animdata.shifts_restorably(c.keys) for c, _ in w.shifts)
        for w in writes
    )


def apply_filter(
    curves: ParameterCurves,
    writes: FilterWrites,
    keep: Callable[[bpy.types.FCurve, np.ndarray], None] | None = None,
) -> int:
    """Make one parameter's `filter_writes`; returns how many key times changed. ``keep``
    goes to `animdata.shift_keys` (`transaction.ShiftJournal.keep`)."""
    for channel, delta in writes.shifts:
        animdata.shift_keys(channel, delta, keep)
    if writes.rewrites:
        owner = animdata.fcurve_owner(curves.use, ensure=True)  # (only here: not shifted)
        assert owner is not None  # ensure=True creates it
        for index, rewritten in writes.rewrites:
            animdata.write_keys(
                owner,
                curves.data_path,
                index,
                curves.bone_name,
                writes.times,
                writes.values[:, index],
                fcurve=None if rewritten is None else rewritten.fcurve,
            )
    return writes.changed
