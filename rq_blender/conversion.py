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
that follow the motion), starting at the equivalent closest to the source's own rotation
vector (`rotation_vectors`: a bone keyed at 720 degrees stays there). The chain runs over a
grid refined between keys until no step turns more than `MAX_STEP` (bounded from the source
channels' own change, so a source that spins 720 degrees between two keys keeps its two
revolutions; a source keyed on every frame needs no refinement), and is computed in bulk:
a vectorized guess checked against the chain's rule (`_chain`).

Swing/twist targets: the drivers clamp the swing into ``rq_swing_limit`` and the twist into
``rq_twist_limit``. Limits that restrict nothing (the defaults) are widened after writing to
cover the new curves (`widen_limits`), so switching never changes the animation; swings
longer than `SWING_REACH` move to their shortest equivalent (the drivers pose swings below
2 pi only). User-set limits keep every stored value inside (`fit_to_limits`): an equivalent
inside where one exists (same pose), else the closest point (the pose the joint can reach).
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
# `_chain`: samples chained one at a time where the guess keeps failing, and the difference
# below which two results are the same (equivalents differ by about pi or more).
CHAIN_BLOCK = 16
CHAIN_ATOL = 1e-9
# RQ chain steps shorter than this (radians, under pi with a wide margin for rounding) need
# no conversion near their predecessor (`_step_from_guess`).
RQ_SURE_STEP = 0.9 * math.pi
# Swing/twist bones whose limits restrict nothing keep continuous swings up to this length
# (longer ones move to their shortest equivalent): the drivers pose swings shorter than
# 2 pi only (see `drivers`), and interpolation between keys needs a margin.
SWING_REACH = 1.5 * math.pi


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


def rotation_vectors(mode: str, values: np.ndarray) -> np.ndarray:
    """Rotation vectors that keep the extra revolutions channel values show, (..., k) ->
    (..., 3): the start (and the guesses) of the continuity chain.

    RQ: the vector itself; AXIS_ANGLE: angle times axis; Euler: the three angles as a vector
    (exact for a rotation about one axis, a guess otherwise); SWING_TWIST: ``(r_x, twist,
    r_z)``; QUATERNION: the shortest vector (a quaternion holds no revolutions).
    """
    values = np.asarray(values, dtype=np.float64)
    if mode in EULER_ORDERS or mode == "RQ":
        return values
    if mode == "AXIS_ANGLE":
        return rq.blender_axis_angle_to_rq(values)
    if mode == "SWING_TWIST":
        return values[..., [0, 2, 1]]
    return rq.quat_to_rq(values_to_quat(mode, values))


def _nearest(mode: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The core's ``near`` conversion into ``mode`` (Euler, SWING_TWIST or RQ):
    ``(q (m, 4), near (m, k)) -> (m, k)``, each row the equivalent closest to its ``near``."""
    if mode in EULER_ORDERS:
        return lambda q, near: rq.quat_to_euler(q, mode, near=near)
    if mode == "SWING_TWIST":

        def swing_twist(q, near):
            swing, twist = rq.quat_to_swing_twist(q, near=(near[:, :2], near[:, 2]))
            return np.concatenate([swing, np.asarray(twist)[:, None]], axis=1)

        return swing_twist
    return lambda q, near: rq.quat_to_rq(q, near=near)


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
    signed[:, 0] = np.where(
        theta[:, 0] > 0, np.einsum("bi,bi->b", first, unit[:, 0]), np.linalg.norm(first, axis=1)
    )
    signs *= _unwrap(signed)
    unit *= signs[..., None]
    return unit


def _guess(mode: str, q: np.ndarray, first: np.ndarray) -> np.ndarray:
    """A cheap, vectorized guess (B, N, k) of the continuity chain of lines ``q`` (B, N, 4)
    in ``mode`` (Euler, SWING_TWIST or RQ) from their first values ``first`` (B, k); checked
    by `_chain`.

    Euler: Blender's solution, switched to the other one ``(a + pi, pi - b, c + pi)`` after
    every jump of about pi in the first angle (a pass through ``b = +-pi/2``), unwrapped.
    RQ and swings: `_unwrap_vectors`; twists unwrapped (`_unwrap`).
    """
    if mode in EULER_ORDERS:
        e = rq.quat_to_euler(q, mode)
        jump = np.abs(np.angle(np.exp(1j * np.diff(e[..., 0], axis=1)))) > 0.5 * math.pi
        other = np.concatenate([np.zeros((len(q), 1)), np.cumsum(jump, axis=1)], axis=1) % 2 > 0
        e[other] = e[other] * [1.0, -1.0, 1.0] + math.pi
        e[:, 0] = first
        return _unwrap(e)
    if mode == "SWING_TWIST":
        swing, twist = rq.quat_to_swing_twist(q)
        twist[:, 0] = first[:, 2]
        unwrapped = _unwrap(twist)[..., None]
        return np.concatenate([_unwrap_vectors(swing, first[:, :2]), unwrapped], axis=-1)
    return _unwrap_vectors(rq.quat_to_rq(q), first)


def _step_from_guess(mode: str, q: np.ndarray, guess: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One chain step from every sample of guessed lines ``guess`` (B, N, k) of rotations
    ``q`` (B, N, 4) in ``mode`` (as `_chain`): ``out[:, i] = nearest(q[:, i], near=guess[:,
    i - 1])``, ``out[:, 0] = guess[:, 0]``; and ``wrong`` (B, N), where ``out`` and ``guess``
    differ by more than `CHAIN_ATOL`. Up to and including its first wrong sample, a line of
    ``out`` is the chain's (each sample converted near its predecessor, equal to it up to
    `CHAIN_ATOL`).

    RQ: the equivalents of a rotation lie on a line through 0, ``2 pi`` apart (the identity:
    on spheres ``2 pi`` apart), and ``quat_to_rq(near=p)`` is the one closest to ``p``; so a
    guessed equivalent less than pi from its predecessor is that one already and needs no
    conversion (`RQ_SURE_STEP`; `_guess` gives equivalents of ``q``).
    """
    b, n = guess.shape[:2]
    out = guess.copy()
    wrong = np.zeros((b, n), dtype=bool)
    if mode == "RQ":
        step = np.diff(guess, axis=1)
        todo = np.einsum("bni,bni->bn", step, step) >= RQ_SURE_STEP * RQ_SURE_STEP
    else:
        todo = np.ones((b, n - 1), dtype=bool)
    if todo.any():
        # Only converted samples can differ from the guess.
        was = guess[:, 1:][todo]
        now = _nearest(mode)(q[:, 1:][todo], guess[:, :-1][todo])
        out[:, 1:][todo] = now
        wrong[:, 1:][todo] = (np.abs(now - was) > CHAIN_ATOL).any(axis=1)
    return out, wrong


def _chain(mode: str, q: np.ndarray, first: np.ndarray) -> np.ndarray:
    """The continuity chain in ``mode`` (Euler, SWING_TWIST or RQ) along lines ``q`` (B, N,
    4): ``out[:, 0] = first`` (B, k), ``out[:, i] = nearest(q[:, i], near=out[:, i - 1])``
    (`_nearest`), computed in bulk.

    Every sample is converted near its predecessor in a guess (`_guess`) at once, and where
    the results agree with the guess the guess was right (`_step_from_guess`). A line is
    correct up to its first disagreement; the rest of it is guessed again from there and
    checked, until it agrees. Where disagreements come within `CHAIN_BLOCK` samples of each
    other (Euler angles near gimbal lock), the next `CHAIN_BLOCK` samples are chained one at
    a time first. So the result is the chain's (samples equal to `CHAIN_ATOL`) at the cost
    of one conversion of every sample when the guess is good, and of the rest of a line per
    isolated disagreement (an RQ axis swinging fast at a large angle).
    """
    nearest = _nearest(mode)
    n = q.shape[1]
    guess = _guess(mode, q, first)
    guess[:, 0] = first
    if n < 2:
        return guess
    out, wrong = _step_from_guess(mode, q, guess)
    for line in np.flatnonzero(wrong.any(axis=1)):
        # Samples before ``start`` are the chain's.
        start = 1 + int(np.argmax(wrong[line]))
        lq, lout = q[line], out[line]
        while start < n:
            tail_guess = _guess(mode, lq[None, start - 1 :], lout[None, start - 1])
            tail_guess[0, 0] = lout[start - 1]
            tail, bad = _step_from_guess(mode, lq[None, start - 1 :], tail_guess)
            lout[start:] = tail[0, 1:]
            if not bad.any():
                break
            advance = int(np.argmax(bad[0]))
            start += advance
            if advance < CHAIN_BLOCK:
                stop = min(start + CHAIN_BLOCK, n)
                for i in range(start, stop):
                    lout[i] = nearest(lq[i : i + 1], lout[i - 1 : i])[0]
                start = stop
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
        flip = np.einsum("bi,bi->b", q[:, 0], rq.rq_to_quat(near)) < 0
        q = np.where(flip[:, None, None], -q, q)
        return np.stack([rq.align_quat_signs(line) for line in q])
    chained = mode if mode in EULER_ORDERS or mode == "SWING_TWIST" else "RQ"
    start = near[:, [0, 2, 1]] if mode == "SWING_TWIST" else near
    v = _chain(chained, q, _nearest(chained)(q[:, 0], start))
    if mode != "AXIS_ANGLE":
        return v
    angle_axis = rq.rq_to_blender_axis_angle(v)
    axis = angle_axis[..., 1:]
    dots = np.einsum("bni,bni->bn", axis[:, 1:], axis[:, :-1])
    signs = np.cumprod(np.where(dots < 0, -1.0, 1.0), axis=1)
    signs = np.concatenate([np.ones((b, 1)), signs], axis=1)
    return angle_axis * signs[..., None]


def _channel_steps(mode: str, values: np.ndarray) -> np.ndarray:
    """Upper bounds of the rotation angle between consecutive rows of channel values, shape
    (N, k) -> (N - 1,). Catches whole turns that quaternion distances cannot see (Euler or
    RQ channels moving by 2 pi).

    Euler, RQ and swing/twist: the sum of the channels' absolute changes (a rotation about
    one axis by ``e`` turns by at most ``|e|``, compositions add up, and the exponential map
    never lengthens a path). QUATERNION and AXIS_ANGLE: approximate (see `refine_grid`).
    """
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


def _extra_samples(mode: str, grid: np.ndarray, values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """How many samples each gap of a grid (N,) needs inserted for the chain's steps to stay
    under `MAX_STEP`, shape (N - 1,), from the source's channel values (N, k) and rotations
    (N, 4) on the grid (gaps under 1e-3 frames need none)."""
    steps = _channel_steps(mode, values)
    if mode in ("QUATERNION", "AXIS_ANGLE"):
        # Their channel bounds are approximate: the true angle may be the larger.
        steps = np.maximum(steps, rq.quat_angle_between(q[:-1], q[1:]))
    extra = np.ceil(steps / MAX_STEP).astype(int) - 1
    extra[np.diff(grid) < 1e-3] = 0
    return extra


def _dense_enough(
    modes: Sequence[str],
    grids: Sequence[np.ndarray],
    values: Sequence[np.ndarray],
    quats: Sequence[np.ndarray],
) -> np.ndarray:
    """Which lines (grid (n,), values (n, k), rotations (n, 4), each in its source mode) need
    no refinement (`refine_grid` would keep their grid), shape (lines,) bool: one
    `_extra_samples` call per mode on the lines stacked (the gaps from one line to the next
    are not counted)."""
    dense = np.ones(len(modes), dtype=bool)
    for mode in set(modes):
        index = [i for i, m in enumerate(modes) if m == mode]
        extra = _extra_samples(
            mode,
            np.concatenate([grids[i] for i in index]),
            np.concatenate([values[i] for i in index]),
            np.concatenate([quats[i] for i in index]),
        )
        stops = np.cumsum([len(grids[i]) for i in index])
        # Gaps before each sample that need samples; a line's own gaps end before its last.
        needy = np.cumsum(np.concatenate([[0], extra > 0]))
        starts = np.concatenate([[0], stops[:-1]])
        dense[index] = needy[stops - 1] == needy[starts]
    return dense


def refine_grid(
    mode: str,
    times: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray],
    at_times: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A time grid through ``times`` dense enough for the continuity chain.

    A single pass when the source's own steps between ``times`` are already under `MAX_STEP`
    (a source keyed on every frame); otherwise samples are added between times until they
    are.

    Parameters
    ----------
    mode : str
        The source mode; ``evaluate(t)`` gives its channel values, (m,) -> (m, k).
    times : ndarray, shape (n,)
        Increasing times that must be on the grid.
    at_times : (values (n, k), q (n, 4)), optional
        The source's channel values and rotations at ``times``, if already known.

    Returns
    -------
    grid : ndarray, shape (N,)
    on_times : ndarray of bool, shape (N,)
        Which grid points are ``times``.
    values : ndarray, shape (N, k)
        The source channel values on the grid.
    q : ndarray, shape (N, 4)
        The source rotations on the grid.
    """
    grid = np.asarray(times, dtype=np.float64)
    on_times = np.ones(len(grid), dtype=bool)
    if at_times is None:
        values = evaluate(grid)
        q = values_to_quat(mode, values)
    else:
        values, q = at_times
    for _ in range(MAX_REFINE_PASSES):
        if len(grid) < 2:
            break
        count = np.clip(_extra_samples(mode, grid, values, q), 0, 64)
        if not count.any():
            break
        # Gap i gets count[i] evenly spaced samples; only they are evaluated.
        gap = np.repeat(np.arange(len(count)), count)
        rank = np.arange(1, len(gap) + 1) - np.repeat(np.cumsum(count) - count, count)
        new = grid[gap] + (grid[gap + 1] - grid[gap]) * rank / (count[gap] + 1)
        new_values = evaluate(new)
        order = np.argsort(np.concatenate([grid, new]), kind="stable")
        grid = np.concatenate([grid, new])[order]
        on_times = np.concatenate([on_times, np.zeros(len(new), dtype=bool)])[order]
        values = np.concatenate([values, new_values])[order]
        q = np.concatenate([q, values_to_quat(mode, new_values)])[order]
    return grid, on_times, values, q


def limits_restrict_nothing(swing_limit: Sequence[float], twist_limit: Sequence[float]) -> bool:
    """Whether swing/twist limits ``[a, b]``, ``[min, max]`` let the joint reach every
    orientation as its defaults do (``a, b >= pi`` and ``[-pi, pi]`` inside the twist range).
    Such limits are widened to cover converted animation (`widen_limits`); any others are
    the user's joint limits (`fit_to_limits`)."""
    a, b = swing_limit
    low, high = twist_limit
    return bool(a >= math.pi and b >= math.pi and low <= -math.pi and high >= math.pi)


def shorten_swings(values: np.ndarray) -> np.ndarray:
    """Swing/twist values (n, 3) with every swing longer than `SWING_REACH` moved to its
    shortest equivalent (``rq.reparameterize``); twists unchanged."""
    values = np.array(values, dtype=np.float64)
    long = np.hypot(values[:, 0], values[:, 1]) > SWING_REACH
    if long.any():
        swing = np.zeros((int(long.sum()), 3))
        swing[:, [0, 2]] = values[long, :2]
        values[long, :2] = rq.reparameterize(swing)[:, [0, 2]]
    return values


def fit_to_limits(
    values: np.ndarray, swing_limit: Sequence[float], twist_limit: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Swing/twist values (n, 3) stored inside user-set joint limits.

    Each swing ``L u`` (``u`` a unit vector) is replaced by the equivalent ``(L + 2 pi k) u``
    inside the ellipse ``[a, b]`` with the smallest ``|k|``, each twist by ``t + 2 pi m`` inside
    ``[min, max]`` with the smallest ``|m|``: the same pose, as close to the continuous value
    as the limits allow. Where no equivalent is inside, the value becomes the closest point
    of the limits (the core's ``clamp_swing_ellipse`` of the shortest swing, ``clamp_twist``):
    the pose the joint can reach, which the drivers' clamp leaves alone.

    Returns
    -------
    fitted : ndarray, shape (n, 3)
    moved : ndarray of bool, shape (n,)
        Rows whose pose changed (no equivalent inside the limits).
    """
    values = np.asarray(values, dtype=np.float64)
    # The limits as the drivers apply them (a negative semi-axis is 0, an inverted range
    # holds the twist at its first value).
    a, b, low, high = (float(x) for x in rq.effective_limits(*swing_limit, *twist_limit))
    two_pi = 2.0 * math.pi
    twist = values[:, 2]
    m_low = np.ceil((low - twist) / two_pi)
    m_high = np.floor((high - twist) / two_pi)
    twist_ok = m_low <= m_high
    fitted_twist = np.where(
        twist_ok, twist + two_pi * np.clip(0.0, m_low, m_high), rq.clamp_twist(twist, low, high)
    )
    swing = values[:, :2]
    length = np.hypot(swing[:, 0], swing[:, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        unit = swing / length[:, None]
        # The ellipse's radius along u (0 along a zero semi-axis).
        radius = 1.0 / np.hypot(unit[:, 0] / a, unit[:, 1] / b)
    radius = np.nan_to_num(radius, nan=0.0)
    k_low = np.ceil((-radius - length) / two_pi)
    k_high = np.floor((radius - length) / two_pi)
    swing_ok = (length == 0.0) | (k_low <= k_high)
    shifted = np.where(
        (length > 0.0)[:, None],
        unit * (length + two_pi * np.clip(0.0, k_low, k_high))[:, None],
        swing,
    )
    shortest = np.zeros((len(values), 3))
    shortest[:, [0, 2]] = swing
    closest = rq.clamp_swing_ellipse(rq.reparameterize(shortest)[:, [0, 2]], a, b)
    fitted_swing = np.where(swing_ok[:, None], shifted, closest)
    fitted = np.concatenate([fitted_swing, fitted_twist[:, None]], axis=1)
    return fitted, ~(twist_ok & swing_ok)


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


def static_values(pose_bone: bpy.types.PoseBone, mode: str) -> np.ndarray:
    """The bone's current (unanimated or evaluated) channel values in ``mode``, (k,)."""
    parts = []
    for prop, size in layout(mode):
        value = pose_bone[prop[2:-2]] if prop.startswith("[") else getattr(pose_bone, prop)
        parts.append(np.reshape(np.asarray(value, dtype=np.float64), size))
    return np.concatenate(parts)


def posed_values(pose_bone: bpy.types.PoseBone, mode: str, values: np.ndarray) -> np.ndarray:
    """The channel values (..., k) the bone is actually posed at.

    Swing/twist bones are posed by their drivers at the swing scaled radially into the limit
    ellipse and the twist clamped to its range (`bone_modes`); stored values outside the
    limits are read as those. Every other mode is posed at its values as they are.
    """
    if mode != "SWING_TWIST":
        return values
    (a, b), (low, high) = bone_modes.joint_limits(pose_bone)
    swing = rq.scale_swing_into_ellipse(values[..., :2], a, b)
    twist = rq.clamp_twist(values[..., 2], low, high)
    return np.concatenate([swing, twist[..., None]], axis=-1)


def _read_source(use, pose_bone: bpy.types.PoseBone, mode: str, static: np.ndarray):
    """The source channels of the bone in ``use`` and an evaluator of the values it is posed
    at (`posed_values`), or None when the action does not key it."""
    owner = animdata.fcurve_owner(use)
    channels: list[animdata.Channel | None] = []
    for prop, size in layout(mode):
        path = animdata.bone_data_path(pose_bone.name, prop)
        channels.extend(animdata.read_channels(owner, path, size))
    if all(c is None for c in channels):
        return None

    def evaluate(t: np.ndarray) -> np.ndarray:
        values = animdata.evaluate_channels(channels, static.tolist(), t)
        return posed_values(pose_bone, mode, values)

    return channels, evaluate


def _interpolation_at(channels: Sequence[animdata.Channel | None], times: np.ndarray):
    """Per time, the interpolation of the first channel with a key there (BEZIER if none is
    LINEAR or CONSTANT)."""
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
    (swings then shortened past `SWING_REACH`, `shorten_swings`). Raises ValueError, before
    anything is changed, for an unknown strategy, a bone whose rotation channel is driven
    by something other than the add-on, or stored values no tool can use
    (`bone_modes.check_values`).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    if frames is not None and frames[1] < frames[0]:
        raise ValueError(f"the frame range ends ({frames[1]}) before it starts ({frames[0]})")
    uses = animdata.actions_of(obj)
    plans: list[BonePlan] = []
    # Time lines of all bones, converted together: (plan, use, times, interpolation, grid
    # values, grid rotations, which grid points are key times).
    sources = []  # (plan, use, times, interpolation, evaluate) per keyed bone and action
    lines = []
    statics = []  # (source, static values) per plan
    for name in bone_names:
        pose_bone = obj.pose.bones[name]
        source = bone_modes.current_mode(pose_bone)
        if source == target:
            continue
        bone_modes.check_values(pose_bone, target)
        entering = source not in bone_modes.ADDON_MODES and target in bone_modes.ADDON_MODES
        if entering and drivers.bone_drivers(pose_bone):
            raise ValueError(f"bone '{name}': its rotation is already driven by other drivers")
        static = posed_values(pose_bone, source, static_values(pose_bone, source))
        plan = BonePlan(name, source, target, np.empty(0))
        plans.append(plan)
        statics.append((source, static))
        for use in uses:
            found = _read_source(use, pose_bone, source, static)
            if found is None:
                continue
            channels, evaluate = found
            keys = animdata.key_times(channels)
            if strategy == "KEYS":
                times = keys
                interpolation = _interpolation_at(channels, keys)
            else:
                first, last = frames or (math.floor(keys[0]), math.ceil(keys[-1]))
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
            sources.append((plan, use, group, times, interpolation, evaluate))
    if not plans:
        return plans
    static_quats = _quats_by_mode([source for source, _ in statics], [v for _, v in statics])
    # The source at its own times, converted in one call per source mode: a source keyed
    # densely enough (every frame) needs nothing more (`refine_grid`).
    at_times = [evaluate(times) for *_, times, _, evaluate in sources]
    at_quats = _quats_by_mode([line[0].source for line in sources], at_times)
    dense = _dense_enough(
        [line[0].source for line in sources], [line[3] for line in sources], at_times, at_quats
    )
    for (plan, use, group, times, interpolation, evaluate), values, q, done in zip(
        sources, at_times, at_quats, dense, strict=True
    ):
        if done:
            on_times = np.ones(len(times), dtype=bool)
        else:
            _, on_times, values, q = refine_grid(plan.source, times, evaluate, (values, q))
        lines.append((plan, use, group, times, interpolation, values, q, on_times))
    current = continuous_values(
        target,
        np.stack(static_quats)[:, None],
        np.stack([rotation_vectors(source, static) for source, static in statics]),
    )
    fits = {plan.name: _limit_fitter(obj.pose.bones[plan.name], target) for plan in plans}
    for plan, values in zip(plans, current[:, 0], strict=True):
        fit, plan.unlimited = fits[plan.name]
        stored, moved = fit(values[None])
        plan.static = stored[0]
        plan.limited_keys = int(moved.sum())
    if not lines:
        return plans
    length = max(len(line[5]) for line in lines)
    padded = np.stack(
        [np.concatenate([q, np.repeat(q[-1:], length - len(q), 0)]) for *_, q, _ in lines]
    )
    starts = np.stack([rotation_vectors(line[0].source, line[5][0]) for line in lines])
    converted = continuous_values(target, padded, starts)
    for line, values in zip(lines, converted, strict=True):
        plan, use, group, times, interpolation, _, q, on_times = line
        quats = q[on_times]
        stored, moved = fits[plan.name][0](values[: len(q)][on_times])
        if moved.any():
            quats[moved] = values_to_quat(target, stored[moved])
            plan.limited_keys += int(moved.sum())
        plan.tracks.append(Track(use, group, times, stored, interpolation, quats))
    return plans


def _quats_by_mode(modes: Sequence[str], values: Sequence[np.ndarray]) -> list[np.ndarray]:
    """`values_to_quat` of many arrays (each (..., k) in its mode), one call per mode."""
    out: list[np.ndarray] = [np.empty(0)] * len(values)
    for mode in set(modes):
        index = [i for i, m in enumerate(modes) if m == mode]
        parts = [np.reshape(values[i], (-1, np.shape(values[i])[-1])) for i in index]
        quats = np.split(
            values_to_quat(mode, np.concatenate(parts)), np.cumsum([len(p) for p in parts])[:-1]
        )
        for i, q in zip(index, quats, strict=True):
            out[i] = q.reshape(*np.shape(values[i])[:-1], 4)
    return out


def _limit_fitter(
    pose_bone: bpy.types.PoseBone, target: str
) -> tuple[Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], bool]:
    """How converted values (n, k) of ``pose_bone`` are stored in ``target``.

    Returns ``(fit, unlimited)``: ``fit(values) -> (stored values, moved (n,) bool)`` and
    whether the bone's limits restrict nothing. Only swing/twist has limits: user-set ones
    fit the values inside (`fit_to_limits`); otherwise swings are shortened past
    `SWING_REACH` (`shorten_swings`, same pose) and the limits are widened after writing.
    """

    def keep(values):
        return values, np.zeros(len(values), dtype=bool)

    if target != "SWING_TWIST":
        return keep, True
    swing_limit, twist_limit = bone_modes.joint_limits(pose_bone)
    if limits_restrict_nothing(swing_limit, twist_limit):
        return (lambda values: keep(shorten_swings(values))), True
    return (lambda values: fit_to_limits(values, swing_limit, twist_limit)), False


def rotation_error(mode: str, values: np.ndarray, source_quats: np.ndarray) -> np.ndarray:
    """Rotation angle (radians) between channel values and source rotations, (n, k), (n, 4)
    -> (n,)."""
    return rq.quat_angle_between(values_to_quat(mode, values), source_quats)


def _write_track(
    owner, bone: str, target: str, track: Track, mask: np.ndarray
) -> list[bpy.types.FCurve]:
    """Write the keys of ``track`` selected by ``mask``; the written F-curves, in value order."""
    written = []
    column = 0
    times = track.times[mask]
    values = track.values[mask]
    interpolation = None if track.interpolation is None else track.interpolation[mask]
    for prop, size in layout(target):
        path = animdata.bone_data_path(bone, prop)
        for index in range(size):
            written.append(
                animdata.write_keys(
                    owner, path, index, track.group, times, values[:, column], interpolation
                )
            )
            column += 1
    return written


def _write_reduced(
    owner, bone: str, target: str, track: Track, tolerance: float
) -> tuple[int, list[bpy.types.FCurve]]:
    """Write ``track`` with as few keys as keep the rotation error within ``tolerance``
    (radians) at every one of its frames; returns the number of keys kept and the curves.

    Greedy refinement checked against Blender's own handles: start from the end keys, write,
    evaluate the written curves at every frame, and add the worst frame of every gap between
    kept keys that exceeds the tolerance, until none does (at worst every frame is kept).
    """
    n = len(track.times)
    kept = np.ones(n, dtype=bool)
    if tolerance > 0 and n > 2:
        kept[1:-1] = False
    while True:
        fcurves = _write_track(owner, bone, target, track, kept)
        if kept.all():
            return n, fcurves
        channels = [animdata.Channel(fc, animdata.read_keys(fc)) for fc in fcurves]
        values = np.stack([c.evaluate(track.times) for c in channels], axis=1)
        error = rotation_error(target, values, track.source_quats)
        candidates = (error > tolerance) & ~kept
        if not candidates.any():
            return int(kept.sum()), fcurves
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
        setattr(pose_bone, "rotation_mode", plan.target)  # noqa: B010 (a str, not its Literal)
        ((prop, _),) = layout(plan.target)
        setattr(pose_bone, prop, plan.static)
    elif plan.target == "RQ":
        bone_modes.enter_mode(pose_bone, "RQ", plan.static)
    else:
        bone_modes.enter_mode(pose_bone, plan.target, (plan.static[:2], plan.static[2]))


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
            keys = animdata.read_keys(fcurve)
            ys = np.concatenate([keys.values, keys.handle_left[:, 1], keys.handle_right[:, 1]])
            if index < 2:
                reach[index] = max(reach[index], float(np.abs(ys).max()))
            else:
                low, high = min(low, float(ys.min())), max(high, float(ys.max()))
    margin = 1.0 + 1e-6
    radius = math.hypot(*reach) * margin
    swing_limit, twist_limit = bone_modes.joint_limits(pose_bone)
    wide_swing = np.maximum(swing_limit, radius)
    wide_twist = np.array([min(twist_limit[0], low * margin), max(twist_limit[1], high * margin)])
    changed = False
    for name, old, new in (
        ("rq_swing_limit", swing_limit, wide_swing),
        ("rq_twist_limit", twist_limit, wide_twist),
    ):
        if not np.array_equal(old, new):
            pose_bone[name] = [float(x) for x in new]
            changed = True
    return changed


def _remove_source_curves(
    uses: Sequence[animdata.ActionUse], plan: BonePlan, paths: set[str], inside: bool
) -> None:
    """Remove the bone's source-mode F-curves whose data path is in ``paths`` (``inside``) or
    not in it (not ``inside``), in every action."""
    for use in uses:
        owner = animdata.fcurve_owner(use)
        for prop, size in layout(plan.source):
            path = animdata.bone_data_path(plan.name, prop)
            if (path in paths) == inside:
                animdata.remove_fcurves(owner, path, size)


def apply_plan(
    obj: bpy.types.Object,
    plans: Sequence[BonePlan],
    tolerance: float = 0.0,
    progress: Callable[[float], None] | None = None,
) -> list[int]:
    """Switch the planned bones: change the mode (keeping the current pose), write the new
    keys (reduced within ``tolerance`` radians for tracks planned with the SAMPLED strategy)
    into the old curves' channel group, then remove the old rotation F-curves from every
    action. New before old: the group never empties, so it keeps its place in the channel
    list (Blender 4.4+ drops an empty group). Only an Euler-to-Euler switch, whose old and
    new curves share a data path, removes the old ones first (their modifiers and flags
    belong to the old order). Swing/twist bones whose limits restrict nothing
    get them widened to cover the new curves (`widen_limits`, sets ``plan.widened``), so the
    drivers' clamp never changes the animation. Returns the number of keys written on each
    channel of each track (a bone in one action), one entry per track."""
    uses = animdata.actions_of(obj)
    counts: list[int] = []
    for done, plan in enumerate(plans):
        new_paths = {animdata.bone_data_path(plan.name, prop) for prop, _ in layout(plan.target)}
        _remove_source_curves(uses, plan, new_paths, inside=True)
        pose_bone = obj.pose.bones[plan.name]
        _switch_mode(pose_bone, plan)
        written: list[bpy.types.FCurve] = []
        for track in plan.tracks:
            owner = animdata.fcurve_owner(track.use, ensure=True)
            if track.interpolation is None:
                count, fcurves = _write_reduced(owner, plan.name, plan.target, track, tolerance)
            else:
                mask = np.ones(len(track.times), dtype=bool)
                count, fcurves = (
                    len(track.times),
                    _write_track(owner, plan.name, plan.target, track, mask),
                )
            counts.append(count)
            written.extend(fcurves)
        if plan.target == "SWING_TWIST" and plan.unlimited:
            plan.widened = widen_limits(pose_bone, written, plan.static)
        _remove_source_curves(uses, plan, new_paths, inside=False)
        if progress is not None:
            progress((done + 1) / len(plans))
    obj.update_tag()
    return counts
