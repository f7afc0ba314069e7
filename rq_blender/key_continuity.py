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

A *held jump* is left alone: a CONSTANT key (on every component keyed there) followed at
most `JUMP_WINDOW` frames later by the next key. That is how ``pose.rq_spline_interpolate``
writes a change of chart (`spline_keys`: the keys on either side are in different charts on
purpose, and the curve between them is not continuous in RQ space); the filter starts again
after it, so running it after the spline operator keeps that spline.
"""

from __future__ import annotations

import math

import numpy as np

from .. import rq_rotation as rq
from . import animdata, bone_modes, fcurve_math
from .parameter_curves import ParameterCurves

TWO_PI = 2.0 * math.pi
# The parameters the filter changes (see the module docstring).
FILTERED_PARAMETERS = ("rq_vector", "rq_twist")
# Values that differ by less than this (radians) count as unchanged (float32 keys).
UNCHANGED = 1e-6
# A CONSTANT key followed at most this many frames later by the next key is a held jump
# (the spline operator's are 0.0101 frames; keys this close are nothing an animator steps).
JUMP_WINDOW = 0.05


def continuous_twists(twist: np.ndarray, low: float, high: float) -> np.ndarray:
    """Twists (n,) each replaced by ``t + 2 pi k`` closest to the previous result, where that
    lies in ``[low, high]``; the first is kept."""
    out = np.array(twist, dtype=np.float64)
    for i in range(1, len(out)):
        candidate = out[i] + TWO_PI * round((out[i - 1] - out[i]) / TWO_PI)
        if low <= candidate <= high:
            out[i] = candidate
    return out


def held_jumps(curves: ParameterCurves, times: np.ndarray) -> np.ndarray:
    """Which of the union key ``times`` (n,) end a held jump (see the module docstring), (n,)
    bool: the key before is CONSTANT on every component keyed there and at most
    `JUMP_WINDOW` frames earlier."""
    held = np.ones(len(times), dtype=bool)
    for channel in curves.channels:
        if channel is not None:
            moving = channel.keys.interpolation != fcurve_math.CONSTANT
            held[np.searchsorted(times, channel.keys.times[moving])] = False
    out = np.zeros(len(times), dtype=bool)
    out[1:] = held[:-1] & (np.diff(times) <= JUMP_WINDOW)
    return out


def filtered_values(curves: ParameterCurves) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parameter at the union of its key times, before and after the filter.

    Returns
    -------
    times : ndarray, shape (n,)
    before, after : ndarray, shape (n, k)
    """
    times = curves.key_times()
    before = curves.values(times)
    if curves.name == "rq_vector":
        # Each stretch between held jumps on its own, from its first key as it is.
        after = (
            np.concatenate(
                [
                    rq.rq_sequence_continuous(part)
                    for part in np.split(before, np.flatnonzero(held_jumps(curves, times)))
                ]
            )
            if len(times)
            else before.copy()
        )
    elif curves.name == "rq_twist":
        _, (low, high) = bone_modes.joint_limits(curves.pose_bone)
        after = continuous_twists(before[:, 0], low, high)[:, None]
    else:
        raise ValueError(f"the continuity filter does not change {curves.name}")
    return times, before, after


def apply_filter(curves: ParameterCurves) -> int:
    """Filter one parameter's keys in place; returns how many key times changed.

    A component keyed at every changed time has its keys (and handles) shifted. A component
    that would change at a time where it has no key is rewritten with keys at the union of the
    key times (automatic handles), which keeps the poses at every key.
    """
    times, before, after = filtered_values(curves)
    changed = np.abs(after - before).max(axis=1, initial=0.0) > UNCHANGED
    if not changed.any():
        return 0
    owner = animdata.fcurve_owner(curves.use, ensure=True)
    assert owner is not None  # ensure=True creates it
    for index, channel in enumerate(curves.channels):
        delta = after[:, index] - before[:, index]
        moved = np.abs(delta) > UNCHANGED
        if not moved.any():
            continue
        if channel is not None:
            at_keys = np.searchsorted(times, channel.keys.times)
            if not np.delete(moved, at_keys).any():
                animdata.shift_keys(channel, delta[at_keys])
                continue
        animdata.write_keys(
            owner, curves.data_path, index, curves.bone_name, times, after[:, index]
        )
    return int(changed.sum())
