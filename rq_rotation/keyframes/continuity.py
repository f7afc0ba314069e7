# SPDX-License-Identifier: GPL-3.0-or-later
"""Continuity along time lines of rotations: channel values without flips or lost turns.

`continuous_values` chains a line of rotations in a target mode with the core's ``near``
conversions (`rq_rotation.modes.nearest_values`): no quaternion sign flips, Euler nearest
equivalents, RQ and swing/twist shells that follow the motion, starting at the equivalent
closest to a given rotation vector (so a bone keyed at 720 degrees stays there). The chain
is computed in bulk: a vectorized guess checked against the chain's rule (`_chain`). It
assumes consecutive samples less than half a turn apart (`refine` makes grids that are).

`continuous_twists` is the continuity filter's rule for twist keys, and `held_jumps` finds
the chart changes it leaves alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._checks import norm
from ..axis_angle import rq_to_blender_axis_angle
from ..euler import EULER_ORDERS, quat_to_euler
from ..modes import nearest_values
from ..quaternion import align_quat_signs
from ..rq import (
    _length_direction,
    _nearest_along,
    _nearest_equivalent,
    quat_to_rq,
    rq_to_quat,
)
from ..swing_twist import quat_to_swing_twist
from .fcurve_math import CONSTANT, Keys, curve_time_order

TWO_PI = 2.0 * math.pi
# `_chain`: samples chained one at a time where the guess keeps failing, and the difference
# below which two results are the same (equivalents differ by about pi or more).
CHAIN_BLOCK = 16
CHAIN_ATOL = 1e-9
# `_chain`: tails this short (samples) are chained one time column at a time, all lines
# together, rather than guessed again: on the spinning rig's quaternion to RQ Keep Key Times
# lines (200 x 130 samples, 5-6 guesses a line) 32 -> 23 ms, 11 ms with the RQ columns'
# lengths and directions computed once (`_chain_columns`), and the conversion's continuity
# 7.6 -> 5.9 ms chaining only the lengths along them (`_chain_rq_lengths`, 4.5 on this
# kind of machine); at 256 the swing/twist chain of RQ to swing/twist (200 x 1025, a
# costlier conversion per column) took 110 -> 200 ms.
CHAIN_SEQUENTIAL = 128
# RQ chain steps, and swing/twist steps whose swing and twist each move less, shorter than
# this (radians, under pi with a wide margin for rounding) need no conversion near their
# predecessor (`_step_from_guess`).
SURE_STEP = 0.9 * math.pi
# A CONSTANT key followed at most this many frames later by the next key is a held jump
# (the spline layout's are 0.0101 frames; keys this close are nothing an animator steps).
JUMP_WINDOW = 0.05


def _unwrap(angles: np.ndarray) -> np.ndarray:
    """Lines of angles (B, N, ...) along axis 1 with multiples of 2 pi added so that no step
    exceeds pi (``np.unwrap`` in fewer passes; a step of exactly pi may go either way)."""
    turns = np.round(np.diff(angles, axis=1) / (2.0 * math.pi))
    out = angles.copy()
    out[:, 1:] -= 2.0 * math.pi * np.cumsum(turns, axis=1)
    return out


def _unwrap_vectors(v: np.ndarray, first: np.ndarray) -> np.ndarray:
    """A guess of the continuous equivalents of lines of rotation vectors (B, N, d) (RQ
    vectors, or swings for d = 2) starting at ``first`` (B, d): axes kept in one hemisphere
    along each line, the signed angles along them unwrapped (`_unwrap`)."""
    theta = np.sqrt(np.einsum("bni,bni->bn", v, v))
    unit = v / np.where(theta > 0, theta, 1.0)[..., None]
    flips = np.einsum("bni,bni->bn", unit[:, 1:], unit[:, :-1]) < 0
    # signs[:, i] = (-1)^(flips up to i), computed in place.
    signs = np.ones(theta.shape)
    odd = np.cumsum(flips, axis=1, dtype=np.int32)
    odd &= 1
    signs[:, 1:] -= 2.0 * odd
    signed = signs * theta
    signed[:, 0] = np.where(theta[:, 0] > 0, np.einsum("bi,bi->b", first, unit[:, 0]), norm(first))
    signs *= _unwrap(signed)
    unit *= signs[..., None]
    return unit


def _samples(mode: str, q: np.ndarray) -> np.ndarray:
    """The rotations ``q`` (..., 4) as the chain in ``mode`` converts them: RQ converts each
    rotation's shortest vector (``quat_to_rq(q)``, (..., 3)) once, and a step is then only
    its nearest equivalent (`_nearest`); the other modes convert quaternions."""
    return quat_to_rq(q) if mode == "RQ" else q


def _nearest(mode: str, samples: np.ndarray, near: np.ndarray) -> np.ndarray:
    """``nearest_values(mode, q, near)`` of `_samples` ``samples`` (m, ...) of rotations
    ``q``, (m, k)."""
    if mode == "RQ":
        return _nearest_equivalent(samples, near)  # quat_to_rq(q, near), its second half
    return nearest_values(mode, samples, near)


def _guess(mode: str, q: np.ndarray, first: np.ndarray) -> np.ndarray:
    """A cheap, vectorized guess (B, N, k) of the continuity chain of lines ``q`` (B, N, ...)
    of `_samples` in ``mode`` (Euler, SWING_TWIST or RQ) from their first values ``first``
    (B, k); checked by `_chain`.

    Euler: Blender's solution, switched to the other one ``(a + pi, pi - b, c + pi)`` after
    every jump of about pi in the first angle (a pass through ``b = +-pi/2``), unwrapped.
    RQ and swings: `_unwrap_vectors`; twists unwrapped (`_unwrap`).
    """
    if mode in EULER_ORDERS:
        e = quat_to_euler(q, mode)
        jump = np.abs(np.angle(np.exp(1j * np.diff(e[..., 0], axis=1)))) > 0.5 * math.pi
        other = np.concatenate([np.zeros((len(q), 1)), np.cumsum(jump, axis=1)], axis=1) % 2 > 0
        e[other] = e[other] * [1.0, -1.0, 1.0] + math.pi
        e[:, 0] = first
        return _unwrap(e)
    if mode == "SWING_TWIST":
        swing, twist = quat_to_swing_twist(q)
        twist[:, 0] = first[:, 2]
        unwrapped = _unwrap(twist)[..., None]
        return np.concatenate([_unwrap_vectors(swing, first[:, :2]), unwrapped], axis=-1)
    return _unwrap_vectors(q, first)


def _step_from_guess(mode: str, q: np.ndarray, guess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One chain step from every sample of guessed lines ``guess`` (B, N, k) of rotations
    ``q`` (B, N, ...) in ``mode`` (`_samples`, as `_chain`): ``out[:, i] = nearest(q[:, i],
    near=guess[:, i - 1])``, ``out[:, 0] = guess[:, 0]``; and ``wrong`` (B, N), where
    ``out`` and ``guess`` differ by more than `CHAIN_ATOL`. Up to and including its first
    wrong sample, a line of ``out`` is the chain's (each sample converted near its
    predecessor, equal to it up to `CHAIN_ATOL`).

    RQ: the equivalents of a rotation lie on a line through 0, ``2 pi`` apart (the identity:
    on spheres ``2 pi`` apart), and ``quat_to_rq(near=p)`` is the one closest to ``p``; so a
    guessed equivalent less than pi from its predecessor is that one already and needs no
    conversion (`SURE_STEP`; `_guess` gives equivalents of ``q``). Swing/twist: the swing's
    equivalents lie on its line as an RQ vector's, the twist's ``2 pi`` apart, and
    ``quat_to_swing_twist(near=...)`` picks each closest to its reference independently;
    so the same holds for a step whose swing and twist each move less than `SURE_STEP`,
    except at a swing of exactly pi (``w = y = 0``), where the conversion takes the
    reference's twist and `_guess` none: those samples are always converted.
    """
    b, n = guess.shape[:2]
    out = guess.copy()
    wrong = np.zeros((b, n), dtype=bool)
    if mode in ("RQ", "SWING_TWIST"):
        step = np.diff(guess, axis=1)
        vector = step[..., :3] if mode == "RQ" else step[..., :2]  # the RQ vector or swing
        todo = np.einsum("bni,bni->bn", vector, vector) >= SURE_STEP * SURE_STEP
        if mode == "SWING_TWIST":
            todo |= np.abs(step[..., 2]) >= SURE_STEP
            todo |= (q[:, 1:, 0] == 0.0) & (q[:, 1:, 2] == 0.0)
    else:
        todo = np.ones((b, n - 1), dtype=bool)
    if todo.any():
        # Only converted samples can differ from the guess.
        was = guess[:, 1:][todo]
        now = _nearest(mode, q[:, 1:][todo], guess[:, :-1][todo])
        out[:, 1:][todo] = now
        wrong[:, 1:][todo] = (np.abs(now - was) > CHAIN_ATOL).any(axis=1)
    return out, wrong


def _chain_columns(
    mode: str, q: np.ndarray, out: np.ndarray, lines: np.ndarray, start: np.ndarray
) -> None:
    """Chain ``lines`` (L,) of ``out`` (B, N, k) in place from sample ``start`` (L,) (the
    chain's up to ``start - 1``) to the end, one time column at a time for all of them:
    ``out[l, i] = nearest(q[l, i], near=out[l, i - 1])`` of `_samples` ``q``, one
    conversion per column (RQ: `_chain_rq_lengths`)."""
    first = int(start.min())
    if mode == "RQ":
        ang, u = _length_direction(q[lines, first:])
        if not (ang == 0.0).any():  # (the identity is on every shell: `_nearest_along`)
            _chain_rq_lengths(out, lines, start, first, ang, u)
            return
    for column in range(first, q.shape[1]):
        now = start <= column
        rows = lines[now]
        near = out[rows, column - 1]
        if mode == "RQ":
            out[rows, column] = _nearest_along(
                ang[now, column - first], u[now, column - first], near
            )
        else:
            out[rows, column] = _nearest(mode, q[rows, column], near)


def _chain_rq_lengths(
    out: np.ndarray,
    lines: np.ndarray,
    start: np.ndarray,
    first: int,
    ang: np.ndarray,
    u: np.ndarray,
) -> None:
    """`_chain_columns` for RQ vectors none of which is the identity, given each sample's
    length ``ang`` (L, W) and direction ``u`` (L, W, 3) from column ``first`` on.

    A chained vector lies along its sample's direction, ``v_i = m_i u_i``, and
    `_nearest_along` picks ``m_i = a_i + 2 pi round((u_i . v_(i-1) - a_i) / 2 pi)`` (``a_i``
    the sample's length): with
    ``u_i . v_(i-1) = (u_i . u_(i-1)) m_(i-1)`` (the cosines computed for all columns at
    once) each column costs a few operations on L numbers, not a conversion of L vectors.
    A line's first chained sample starts from ``out``'s vector before it, as a conversion
    does.
    """
    width = ang.shape[1]
    # (W, L) rows: each column's numbers contiguous.
    lengths = np.ascontiguousarray(ang.T)
    cosines = np.einsum("lwi,lwi->wl", u[:, 1:], u[:, :-1])
    offset = start - first  # each line's first chained column
    beginning = set(offset.tolist())
    length = np.zeros(len(lines))
    for c in range(width):
        s = cosines[c - 1] * length if c else np.zeros(len(lines))
        if c in beginning:
            begins = offset == c
            s[begins] = np.einsum("li,li->l", out[lines[begins], first + c - 1], u[begins, c])
        ang_c = lengths[c]
        # (`np.rint`: `np.round` to 0 decimals, without its Python wrapper)
        length = ang_c + TWO_PI * np.rint((s - ang_c) / TWO_PI)
        lengths[c] = length  # (lines not started yet: left as they were below)
    chained = np.arange(width) >= offset[:, None]  # (L, W)
    out[lines, first:] = np.where(chained[..., None], u * lengths.T[..., None], out[lines, first:])


def _chain(mode: str, q: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The continuity chain in ``mode`` (Euler, SWING_TWIST or RQ) along lines ``q`` (B, N,
    4): ``out[:, 0] = first`` (B, k), ``out[:, i] = nearest(q[:, i], near=out[:, i - 1])``
    (`rq_rotation.modes.nearest_values`), computed in bulk.

    Every sample is converted near its predecessor in a guess (`_guess`) at once, and where
    the results agree with the guess the guess was right (`_step_from_guess`). A line is
    correct up to its first disagreement; the rest of it is guessed again from there and
    checked, until it agrees (every such line in one pass). Where disagreements come within
    `CHAIN_BLOCK` samples of each other (Euler angles near gimbal lock), the next
    `CHAIN_BLOCK` samples are chained one at a time first (one conversion per step for all
    such lines). Once the lines still disagreeing have at most `CHAIN_SEQUENTIAL` samples
    left, those are chained one time column at a time, all lines together
    (`_chain_columns`). So the result is the chain's (samples equal to `CHAIN_ATOL`) at the
    cost of one conversion of every sample when the guess is good, and of the rest of a line
    per isolated disagreement (an RQ axis swinging fast at a large angle) or one conversion
    per remaining column.
    """
    n = q.shape[1]
    q = _samples(mode, q)
    guess = _guess(mode, q, first)
    guess[:, 0] = first
    if n < 2:
        return guess
    out, wrong = _step_from_guess(mode, q, guess)
    # The lines with a disagreement, all at once: samples before ``start`` are the chain's.
    lines = np.flatnonzero(wrong.any(axis=1))
    start = 1 + np.argmax(wrong[lines], axis=1)
    while len(lines):
        # Each line's tail from start - 1, shifted to column 0 (padded past the end with the
        # last sample: a guess and a step only look back, so padding changes nothing before).
        width = n - int(start.min()) + 1
        if width <= CHAIN_SEQUENTIAL:
            _chain_columns(mode, q, out, lines, start)
            break
        cols = (start - 1)[:, None] + np.arange(width)
        valid = cols < n
        tail_q = q[lines[:, None], np.minimum(cols, n - 1)]
        tail_first = out[lines, start - 1]
        tail_guess = _guess(mode, tail_q, tail_first)
        tail_guess[:, 0] = tail_first
        tail, bad = _step_from_guess(mode, tail_q, tail_guess)
        bad &= valid
        write = valid.copy()
        write[:, 0] = False
        out[np.broadcast_to(lines[:, None], cols.shape)[write], cols[write]] = tail[write]
        again = bad.any(axis=1)
        advance = np.argmax(bad, axis=1)  # >= 1 where again: a tail's first is right
        start = np.where(again, start + advance, start)
        # Disagreements close together: chain the next CHAIN_BLOCK samples one at a time.
        block = again & (advance < CHAIN_BLOCK)
        stop = np.minimum(start + CHAIN_BLOCK, n)
        for step in range(CHAIN_BLOCK):
            now = block & (start + step < stop)
            if not now.any():
                break
            rows, at = lines[now], (start + step)[now]
            out[rows, at] = _nearest(mode, q[rows, at], out[rows, at - 1])
        start = np.where(block, stop, start)
        keep = again & (start < n)
        lines, start = lines[keep], start[keep]
    return out


def continuous_values(mode: str, q: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Channel values of ``mode`` along time lines of rotations, continuous in time.

    Parameters
    ----------
    mode : str
        Target mode.
    q : ndarray, shape (B, N, 4)
        B time lines of N rotations each, consecutive ones less than half a turn apart.
    near : ndarray, shape (B, 3)
        Rotation vectors (see `rotation_vectors`): the first sample of each line is the
        equivalent closest to its one (for QUATERNION, in the hemisphere of
        ``rq_to_quat(near)``).

    Returns
    -------
    ndarray, shape (B, N, k)
        Quaternions without sign flips; Euler angles, RQ vectors and swings/twists each the
        equivalent closest to the previous sample (the core's ``near`` conversions, see
        `_chain`); axis-angle from the continuous RQ vector with the axis kept in one
        hemisphere (the angle changing sign).
    """
    q = np.asarray(q, dtype=np.float64)
    near = np.asarray(near, dtype=np.float64)
    b, n = q.shape[:2]
    k = 4 if mode in ("QUATERNION", "AXIS_ANGLE") else 3
    if n == 0:
        return np.empty((b, 0, k))
    if mode == "QUATERNION":
        flip = np.einsum("bi,bi->b", q[:, 0], rq_to_quat(near)) < 0
        q = np.where(flip[:, None, None], -q, q)
        return align_quat_signs(q) if b else q
    chained = mode if mode in EULER_ORDERS or mode == "SWING_TWIST" else "RQ"
    start = near[:, [0, 2, 1]] if mode == "SWING_TWIST" else near
    v = _chain(chained, q, nearest_values(chained, q[:, 0], start))
    if mode != "AXIS_ANGLE":
        return v
    angle_axis = rq_to_blender_axis_angle(v)
    axis = angle_axis[..., 1:]
    dots = np.einsum("bni,bni->bn", axis[:, 1:], axis[:, :-1])
    signs = np.cumprod(np.where(dots < 0, -1.0, 1.0), axis=1)
    signs = np.concatenate([np.ones((b, 1)), signs], axis=1)
    return angle_axis * signs[..., None]


def continuous_twists(twist: np.ndarray, low: float, high: float) -> np.ndarray:
    """Twists (n,) each replaced by ``t + 2 pi k`` closest to the previous result, where that
    lies in ``[low, high]``; the first is kept (the continuity filter on twist keys: a value
    outside the range would pose the bone differently, since the drivers clamp it)."""
    out = np.array(twist, dtype=np.float64)
    for i in range(1, len(out)):
        candidate = out[i] + TWO_PI * round((out[i - 1] - out[i]) / TWO_PI)
        if low <= candidate <= high:
            out[i] = candidate
    return out


def held_jumps(keys: Sequence[Sequence[Keys | None]], times: Sequence[np.ndarray]) -> np.ndarray:
    """Which key times of many vectors end a *held jump*, their flags laid end to end,
    shape (sum of the n,) bool: the key before is CONSTANT on every component keyed there and
    at most `JUMP_WINDOW` frames earlier. That is how ``spline_keys`` writes a change of
    chart (keys on either side in different charts on purpose), which a continuity filter
    must leave alone.

    ``keys[i]`` are vector i's component curves (None for a component without one) and
    ``times[i]`` (n_i,) the sorted union of their key times, Blender's float32 frames: every
    component key is found in its vector's union by one search for all vectors
    (`fcurve_math.curve_time_order`).
    """
    line = np.repeat(np.arange(len(times)), [len(t) for t in times])
    joined = np.concatenate(times) if len(times) else np.empty(0)
    components = [(i, c) for i, vector in enumerate(keys) for c in vector if c is not None]
    held = np.ones(len(joined), dtype=bool)
    if components:
        key_line = np.repeat([i for i, _ in components], [len(c.co) for _, c in components])
        key_time = np.concatenate([c.times for _, c in components])
        moving = np.concatenate([c.interpolation for _, c in components]) != CONSTANT
        held[
            np.searchsorted(
                curve_time_order(line, joined),
                curve_time_order(key_line[moving], key_time[moving]),
            )
        ] = False
    out = np.zeros(len(joined), dtype=bool)
    out[1:] = held[:-1] & (np.diff(joined) <= JUMP_WINDOW) & (line[1:] == line[:-1])
    return out
