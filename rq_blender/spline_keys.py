# SPDX-License-Identifier: GPL-3.0-or-later
"""RQ-spline interpolation written as ordinary Bezier F-curve keys (plays without Python).

The target is the core's spline (`rq_rotation.rq_spline`, with hidden keys and per-piece
reparameterization near the shells). An F-curve holds one value per key, shared by the
segments on both sides, so the per-piece charts cannot live in the keys. Instead, for many
curves at once (every array below is flat over all curves and their pieces):

1. The target is sampled (`_samples`) and its RQ values ``w`` are lifted into the chart of
   the keys as given (`_lift`): each piece's *raw* version is the same piece without
   reparameterization. A piece in chart 0 already is there (a *native* piece); elsewhere the
   equivalent vectors of ``w`` lie on its axis, ``2 pi n`` apart, and the lift takes the one
   on the raw piece's side. It meets the raw pieces at their ends, so the F-curve keys keep
   the animator's values and windings. Next to the identity, where a shell crossing with a
   turning axis would swing that vector along the shell faster than keys can follow, the
   lift crosses the shell like the raw piece, off the target by at most ``|w|`` (reported).
2. Knots start at the piece boundaries (key times and the core's hidden keys); at each knot
   the F-curve key holds the lifted value and FREE handles at 1/3 of the neighbouring
   intervals along the tangent ``dv/dt`` of the lift (`_tangents`). With handles at the
   thirds in time, Blender's ``x(s)`` is linear, so a native piece is reproduced exactly: its
   handles are its own Bezier control points.
3. The F-curves are evaluated as Blender evaluates them (`fcurve_math`, float32) at every
   sample, all segments of all curves at once (`_evaluate_segments`); in each interval whose
   rotation differs from the target by more than the tolerance, the worst sample becomes a
   knot. Repeat until every sample is within the tolerance (only the intervals that changed
   are evaluated again); the reported error also covers the middle between samples.

Native pieces are exact by construction and checked at `NATIVE_CHECKS` points only; the
others are sampled densely (`SAMPLES_PER_FRAME`, `MAX_SAMPLE_TURN`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .. import rq_rotation as rq
from . import fcurve_math

# Pieces that are not native are checked at samples at least this dense (per frame) and close
# enough that the target turns by at most `MAX_SAMPLE_TURN` (radians) from one to the next.
SAMPLES_PER_FRAME = 1
MAX_SAMPLE_TURN = 0.08
# Interior check points of a native piece (a guard against float32 evaluation, not against
# the shape, which is the piece itself).
NATIVE_CHECKS = 3
# Knots at least this far apart (frames): ``FCurve.update`` merges keys closer than 0.01.
MIN_KEY_GAP = 0.02
# At most this many refinement passes (each adds a knot to every interval out of tolerance).
MAX_PASSES = 24
# A tangent of the lift is replaced by a finite difference of the lifted samples where it is
# not finite or more than this many times longer (next to the identity, where the rate of the
# lifted vector is unbounded).
TANGENT_BLOWUP = 10.0
# Where the lift is off the target (see `_lift`), keys are added until the curve is within
# this many times the lift's own error.
LIFT_SLACK = 1.5
# Lifted values of consecutive samples at most about this far apart (RQ distance), samples
# at least `MIN_SAMPLE_GAP` frames apart, after at most `MAX_SUBDIVISIONS` rounds.
MAX_LIFT_STEP = 0.15
MIN_SAMPLE_GAP = 1e-4
MAX_SUBDIVISIONS = 8
# The lift follows the target's axis where it is within the first angle (radians) of the keys'
# chart's axis, and that axis beyond the second (see `_lift`).
AXES_AGREE = (math.radians(10.0), math.radians(2.0))

# Operator enum -> core spline kind.
KINDS = {
    'CATMULL_ROM': "catmull_rom",
    'HERMITE': "hermite",
    'BEZIER': "bezier",
    'BSPLINE': "bspline",
}


@dataclass
class SplineKeys:
    """Bezier F-curve keys for the k components of a parameter (3 for an RQ vector, the
    swing as ``(r_x, 0, r_z)``, 1 for a twist).

    Attributes
    ----------
    times : ndarray, shape (n,)
    values : ndarray, shape (n, k)
    handle_left, handle_right : ndarray, shape (n, k, 2)
        Per component, the ``(frame, value)`` handle points.
    added : int
        Knots added beyond the keys and the core's hidden keys.
    max_error : float
        Largest rotation angle (radians) between the F-curves and the target at the samples.
    """

    times: np.ndarray
    values: np.ndarray
    handle_left: np.ndarray
    handle_right: np.ndarray
    added: int
    max_error: float


@dataclass
class SplineInput:
    """One RQ curve to fit.

    Attributes
    ----------
    times : ndarray, shape (K,)
        Strictly increasing key frames (K >= 2; K >= 3 for the B-spline).
    keys : ndarray, shape (K, 3)
        RQ keys (the B-spline's de Boor points), windings as the animator keyed them; a swing
        ``(r_x, r_z)`` as ``(r_x, 0, r_z)``.
    angular_velocities : ndarray, shape (K, 3), optional
        World-frame angular velocities at the keys, for ``'hermite'``.
    """

    times: np.ndarray
    keys: np.ndarray
    angular_velocities: np.ndarray | None = None


def _handles(times: np.ndarray, values: np.ndarray, tangents: np.ndarray):
    """Handles at 1/3 of each neighbouring interval along ``tangents``; (n, 3, 2) each."""
    h = np.diff(times)
    before = np.concatenate([h[:1], h])[:, None] / 3.0
    after = np.concatenate([h, h[-1:]])[:, None] / 3.0
    left = np.stack([np.broadcast_to(times[:, None] - before, values.shape),
                     values - tangents * before], axis=-1)
    right = np.stack([np.broadcast_to(times[:, None] + after, values.shape),
                      values + tangents * after], axis=-1)
    return left, right


def _grid(counts: np.ndarray):
    """``(owner, k)``: ``counts[i]`` entries ``k = 0 .. counts[i]-1`` owned by each ``i``;
    shapes (sum(counts),)."""
    owner = np.repeat(np.arange(len(counts)), counts)
    return owner, np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)


@dataclass
class _Pieces:
    """The pieces of every target spline, flat: ``curve`` (P,) says whose.

    ``offset`` (P, 3) lifts each piece into the keys' chart: ``raw - control_points`` at the
    start, ``2 pi n`` along the axis for a piece in chart ``n`` (`_lift`); zero for a piece
    already in that chart (a *native* piece).
    """

    curve: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    control_points: np.ndarray  # (P, 4, 3), in each piece's chart
    raw: np.ndarray  # (P, 4, 3), the same pieces in the keys' chart
    offset: np.ndarray

    @property
    def native(self) -> np.ndarray:
        return ~self.offset.any(axis=1)


def _pieces(inputs: Sequence[SplineInput], kind: str) -> _Pieces:
    """The pieces, each lifted to the chart of the keys as given (its *raw* version: the
    same pieces without reparameterization, since splitting does not depend on the charts)."""
    splines = []
    raws = []
    for item in inputs:
        splines.append(rq.rq_spline(item.times, item.keys, kind,
                                    angular_velocities=item.angular_velocities))
        raws.append(rq.rq_spline(item.times, item.keys, kind,
                                 angular_velocities=item.angular_velocities,
                                 reparameterize_segments=False))
    control_points = np.concatenate([s.control_points for s in splines])
    raw = np.concatenate([s.control_points for s in raws])
    return _Pieces(
        curve=np.repeat(np.arange(len(splines)), [len(s.starts) for s in splines]),
        starts=np.concatenate([s.starts for s in splines]),
        ends=np.concatenate([s.ends for s in splines]),
        control_points=control_points,
        raw=raw,
        offset=raw[:, 0] - control_points[:, 0],
    )


def _subdivide(piece: np.ndarray, u: np.ndarray, counts: np.ndarray):
    """Samples sorted by ``(piece, u)`` with ``counts[i] - 1`` more spread evenly between
    samples ``i`` and ``i + 1`` (``counts`` (N-1,), 1 between pieces)."""
    owner, k = _grid(counts)
    fraction = k / counts[owner]
    new_u = u[:-1][owner] + fraction * np.diff(u)[owner]
    return np.append(piece[:-1][owner], piece[-1]), np.append(new_u, u[-1])


def _target(pieces: _Pieces, piece: np.ndarray, u: np.ndarray):
    """The target's values and derivatives per frame (N, 3) each, in the pieces' charts."""
    cp = pieces.control_points[piece]
    h = (pieces.ends - pieces.starts)[piece]
    return rq.bezier_values(cp, u), rq.bezier_derivatives(cp, u) / h[:, None]


def _samples(pieces: _Pieces):
    """Samples ``(piece, u)`` (N,) sorted by curve and time: the start of every piece, the
    end of each curve's last; `NATIVE_CHECKS` interior points of a native piece; elsewhere at
    least
    `SAMPLES_PER_FRAME` per frame, the target turning by at most `MAX_SAMPLE_TURN` and the
    lifted value (`_lift`) moving by at most about `MAX_LIFT_STEP` from one to the next (down
    to `MIN_SAMPLE_GAP` frames: the lift swings along a shell where the target passes near the
    identity with a turning axis)."""
    h = pieces.ends - pieces.starts
    native = pieces.native
    counts = np.where(native, NATIVE_CHECKS + 1,
                      np.maximum(1, np.ceil(h * SAMPLES_PER_FRAME))).astype(np.intp)
    piece, k = _grid(counts + 1)  # both ends of every piece, for now
    u = k / counts[piece]
    dense = ~native[piece[:-1]] & (piece[1:] == piece[:-1])
    cp = pieces.control_points
    turn = rq.quat_angle_between(*(lambda q: (q[:-1], q[1:]))(
        rq.rq_to_quat(rq.bezier_values(cp[piece], u))))
    piece, u = _subdivide(piece, u, np.where(
        dense, np.maximum(1, np.ceil(turn / MAX_SAMPLE_TURN)), 1).astype(np.intp))
    done = np.zeros(len(piece), dtype=bool)  # samples of pieces that need no more
    for _ in range(MAX_SUBDIVISIONS):
        rows = np.flatnonzero(~done)
        p, pu = piece[rows], u[rows]
        lifted, _ = _lift(pieces, p, pu, _target(pieces, p, pu)[0])
        step = np.linalg.norm(np.diff(lifted, axis=0), axis=1)
        split = ((p[1:] == p[:-1]) & (step > MAX_LIFT_STEP)
                 & (np.diff(pu) * h[p[:-1]] > MIN_SAMPLE_GAP))
        if not split.any():
            break
        counts = np.where(split, np.minimum(np.ceil(step / MAX_LIFT_STEP), 64), 1)
        active = np.zeros(len(pieces.curve), dtype=bool)
        active[p[1:][split]] = True
        finished = rows[~active[p]]
        p, pu = _subdivide(p, pu, counts.astype(np.intp))
        piece = np.concatenate([piece[done], piece[finished], p[active[p]]])
        u = np.concatenate([u[done], u[finished], pu[active[p]]])
        done = np.arange(len(piece)) < len(piece) - int(active[p].sum())
    order = np.lexsort((u, piece))
    piece, u = piece[order], u[order]
    last = np.append(pieces.curve[1:] != pieces.curve[:-1], True)
    keep = (u < 1.0) | last[piece]
    return piece[keep], u[keep]


def _lift(pieces: _Pieces, piece: np.ndarray, u: np.ndarray, w: np.ndarray):
    """Lifted values ``w + radius d`` (N, 3) of the target values ``w`` (N, 3) at samples
    ``(piece, u)`` (N,), and the directions ``d`` (N, 3) (see `_Pieces`; 0 in native pieces).

    The equivalent vectors of ``w`` lie on its axis: ``d = +-w/|w|`` is exact, with the sign
    of the raw piece's direction ``r`` (the same piece in the keys' chart), so that the lift
    meets the raw piece at both ends. Where the two axes disagree (the angle between ``+-w``
    and ``r`` beyond `AXES_AGREE`: only next to the identity, where a turning axis would swing
    the lift along the shell faster than keys can follow) ``d`` turns smoothly to ``r``: the
    lift crosses the shell like the raw piece, off the target by at most ``|w|``.
    """
    radius = np.linalg.norm(pieces.offset, axis=1)[piece]
    raw = rq.bezier_values(pieces.raw[piece], u)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw_direction = raw / np.linalg.norm(raw, axis=1, keepdims=True)
        unit = np.nan_to_num(w / np.linalg.norm(w, axis=1, keepdims=True))
    cos = np.sum(unit * raw_direction, axis=1, keepdims=True)
    low, high = np.cos(AXES_AGREE)
    weight = np.clip((np.abs(cos) - low) / (high - low), 0.0, 1.0)
    weight = weight * weight * (3.0 - 2.0 * weight)  # smoothstep
    direction = weight * np.where(cos < 0.0, -unit, unit) + (1.0 - weight) * raw_direction
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)  # the two are < 90 deg apart
    direction = np.where((radius > 0.0)[:, None], np.nan_to_num(direction), 0.0)
    return w + radius[:, None] * direction, direction


def _tangents(time, w, dw, direction, radius, first, last):
    """``dv/dt`` (N, 3) of the lifted values ``v = w + radius d`` with ``d = +-w/|w|``:
    ``dw +- radius (dw - e (e . dw)) / |w|`` with ``e = w/|w|`` (exact; ``dw`` in native
    pieces), or a finite difference of the lifted samples where that blows up (see
    `TANGENT_BLOWUP`) or ``d`` is not along ``w`` (turning to the keys' chart, `_lift`)."""
    with np.errstate(all="ignore"):
        unit = w / np.linalg.norm(w, axis=1, keepdims=True)
        sign = np.sign(np.sum(direction * unit, axis=1, keepdims=True))
        swing = (radius[:, None] * sign / np.linalg.norm(w, axis=1, keepdims=True)
                 * (dw - unit * np.sum(unit * dw, axis=1, keepdims=True)))
    out = dw + np.where((radius > 0.0)[:, None], swing, 0.0)
    values = w + radius[:, None] * direction
    rows = np.arange(len(time))
    owner = np.searchsorted(first, rows, side="right") - 1
    before = np.maximum(rows - 1, first[owner])
    after = np.minimum(rows + 1, last[owner])
    difference = (values[after] - values[before]) / (time[after] - time[before])[:, None]
    size = np.linalg.norm(out, axis=1)
    bad = ~np.isfinite(size) | (size > TANGENT_BLOWUP * (np.linalg.norm(difference, axis=1) + 1.0))
    bad |= (radius > 0.0) & (np.abs(np.sum(direction * unit, axis=1)) < 1.0 - 1e-9)  # blended
    return np.where(bad[:, None], difference, out)


def _evaluate_segments(t, left_t, left_v, left_m, right_t, right_v, right_m):
    """Blender's evaluation of the Bezier segments written by `_handles`, one per sample.

    The segment of sample ``i`` runs from the key ``(left_t[i], left_v[i])`` to
    ``(right_t[i], right_v[i])`` with tangents ``left_m``/``right_m`` (handles at the thirds).
    Values (m, 3), times (m,). This is the BEZIER branch of `fcurve_math.evaluate` (float32,
    Blender's handle correction and cubic solve, exact hits within
    ``fcurve_math.EXACT_THRESHOLD`` of a key, flat segments) for segments of many curves at
    once, where ``fcurve_math.evaluate`` takes one curve.
    """
    f32 = np.float32
    t32 = np.asarray(t, dtype=f32)
    third = (right_t - left_t)[:, None] / 3.0
    x = [np.asarray(v, dtype=f32) for v in (left_t, left_t + third[:, 0],
                                             right_t - third[:, 0], right_t)]
    y = [np.asarray(v, dtype=f32) for v in (left_v, left_v + left_m * third,
                                             right_v - right_m * third, right_v)]
    eps = np.finfo(f32).eps
    flat = ((np.abs(y[0] - y[3]) < eps) & (np.abs(y[1] - y[2]) < eps)
            & (np.abs(y[2] - y[3]) < eps))
    span = x[3] - x[0]
    if (np.abs(x[0] - x[1]) > span).any() or (np.abs(x[3] - x[2]) > span).any():
        # Blender's handle correction (never for handles at the thirds), per component.
        given = list(x)
        for k in range(y[0].shape[1]):
            v2, v3 = fcurve_math._correct_bezpart(
                *(np.stack([xi, yi[:, k]], axis=1) for xi, yi in zip(given, y, strict=True)))
            x[1], x[2] = v2[:, 0], v3[:, 0]  # the same x for every component
            y[1][:, k], y[2][:, k] = v2[:, 1], v3[:, 1]
    # The components share their x: one solve.
    s = fcurve_math._solve_bezier_parameter(t32, *x)[:, None]
    value = fcurve_math._bezier_y(s, *y)
    value = np.where(np.isnan(s), f32(0.0), value)  # no root (degenerate handles): Blender: 0
    value = np.where(flat, y[0], value)
    exact_right = np.abs(right_t.astype(f32) - t32) <= fcurve_math.EXACT_THRESHOLD
    exact_left = np.abs(left_t.astype(f32) - t32) <= fcurve_math.EXACT_THRESHOLD
    value = np.where(exact_left[:, None], y[0], value)
    value = np.where(exact_right[:, None], y[3], value)
    return value.astype(np.float64)


def fit_many(
    inputs: Sequence[SplineInput], kind: str, tolerance: float, planar: bool = False
) -> list[SplineKeys]:
    """Bezier keys that follow the core's RQ splines within ``tolerance`` (radians) wherever
    one continuous chart can (see the module docstring); `SplineKeys.max_error` says how close
    each curve is.

    Parameters
    ----------
    inputs : sequence of SplineInput
        The curves, fitted together (one evaluation over all of them).
    kind : str
        A core spline kind (values of `KINDS`).
    planar : bool
        The keys are swings ``(r_x, 0, r_z)``: the written y component is 0 (the spline stays
        in that plane: the core's splitting and reparameterization keep it).

    Returns
    -------
    list of SplineKeys
        One per input, in order.
    """
    if not inputs:
        return []
    pieces = _pieces(inputs, kind)
    piece, u = _samples(pieces)
    w, dw = _target(pieces, piece, u)
    _, direction = _lift(pieces, piece, u, w)
    time = pieces.starts[piece] + u * (pieces.ends - pieces.starts)[piece]
    radius = np.linalg.norm(pieces.offset, axis=1)[piece]
    values = w + radius[:, None] * direction
    target_q = rq.rq_to_quat(w)
    curve = pieces.curve[piece]
    first = np.flatnonzero(np.insert(curve[1:] != curve[:-1], 0, True))
    last = np.append(first[1:] - 1, len(curve) - 1)
    tangents = _tangents(time, w, dw, direction, radius, first, last)
    if planar:
        values[:, 1] = 0.0
        tangents[:, 1] = 0.0
    # Where the lift itself is off (see `_lift`), keys can bring the curve to the lift only.
    reachable = np.maximum(tolerance,
                           LIFT_SLACK * rq.quat_angle_between(rq.rq_to_quat(values), target_q))
    kept = u == 0.0
    kept[last] = True
    initial = np.add.reduceat(kept.astype(np.intp), first)
    error = np.zeros(len(time))
    rows = np.arange(len(time))  # the samples whose interval changed (all, at first)
    for refinement in range(MAX_PASSES + 1):  # the last pass only measures
        knots = np.flatnonzero(kept)
        right = knots[np.searchsorted(knots, rows)]
        left = knots[np.searchsorted(knots, rows, side="right") - 1]
        inside = ~kept[rows]
        fitted = values[rows].astype(np.float32).astype(np.float64)  # a key gives its value
        lt, rt = left[inside], right[inside]
        fitted[inside] = _evaluate_segments(time[rows[inside]], time[lt], values[lt],
                                            tangents[lt], time[rt], values[rt], tangents[rt])
        error[rows] = rq.quat_angle_between(rq.rq_to_quat(fitted), target_q[rows])
        room = ((time[rows] - time[left] >= MIN_KEY_GAP)
                & (time[right] - time[rows] >= MIN_KEY_GAP))
        bad = (error[rows] > reachable[rows]) & inside & room
        if not bad.any() or refinement == MAX_PASSES:
            break
        # The worst bad sample of each interval (named by its left knot) becomes a knot; the
        # samples of those intervals are measured again.
        candidates = np.flatnonzero(bad)
        candidates = candidates[np.lexsort((-error[rows[candidates]], left[candidates]))]
        chosen = candidates[np.append(True, np.diff(left[candidates]) != 0)]
        owner, k = _grid(right[chosen] - left[chosen] + 1)
        kept[rows[chosen]] = True
        rows = left[chosen][owner] + k
    worst = np.maximum.reduceat(error, first)
    # The report also covers the middle between consecutive samples (keys included).
    inner = np.flatnonzero(curve[1:] == curve[:-1])
    mid_piece = piece[inner]
    mid_u = 0.5 * (u[inner] + np.where(piece[inner + 1] == mid_piece, u[inner + 1], 1.0))
    mid_time = pieces.starts[mid_piece] + mid_u * (pieces.ends - pieces.starts)[mid_piece]
    knots = np.flatnonzero(kept)
    lt = knots[np.searchsorted(knots, inner, side="right") - 1]
    rt = knots[np.searchsorted(knots, inner + 1)]
    mid_fitted = _evaluate_segments(mid_time, time[lt], values[lt], tangents[lt],
                                    time[rt], values[rt], tangents[rt])
    mid_error = rq.quat_angle_between(rq.rq_to_quat(mid_fitted), rq.rq_to_quat(
        rq.bezier_values(pieces.control_points[mid_piece], mid_u)))
    np.maximum.at(worst, curve[inner], mid_error)
    added = np.add.reduceat(kept.astype(np.intp), first) - initial
    results = []
    for c in range(len(first)):
        rows = np.flatnonzero(kept[first[c]:last[c] + 1]) + first[c]
        handle_left, handle_right = _handles(time[rows], values[rows], tangents[rows])
        results.append(SplineKeys(time[rows], values[rows], handle_left, handle_right,
                                  int(added[c]), float(worst[c])))
    return results


def fit_scalar(times: np.ndarray, keys: np.ndarray, kind: str,
               rates: np.ndarray | None = None) -> SplineKeys:
    """Bezier keys (k = 1) of the scalar cubic of ``kind`` through (or, B-spline, near)
    ``keys`` (K,) at ``times`` (K,): the core's Bezier control points of the same kind
    (`rq_rotation.bezier_control_points`, no reparameterization: a twist is an angle),
    reproduced exactly by keys at the knots with handles at the thirds. ``rates`` (K,):
    ``d/dt`` at the keys for ``'hermite'``."""
    def vectors(a):
        return np.stack([a, np.zeros_like(a), np.zeros_like(a)], axis=1)

    segments = rq.bezier_control_points(
        times, vectors(keys), kind, tangents=None if rates is None else vectors(rates)
    )[:, :, :1]  # (K-1, 4, 1)
    h = np.diff(times)[:, None]
    values = np.concatenate([segments[:, 0], segments[-1:, 3]])
    tangents = np.concatenate([3.0 * (segments[:, 1] - segments[:, 0]) / h,
                               3.0 * (segments[-1:, 3] - segments[-1:, 2]) / h[-1:]])
    handle_left, handle_right = _handles(times, values, tangents)
    return SplineKeys(times, values, handle_left, handle_right, 0, 0.0)


def rates_of(channels_values, times: np.ndarray, step: float = 1e-3) -> np.ndarray:
    """``d/dt`` (K, k) of the current animation at the key ``times``: differences of
    ``channels_values(t) -> (m, k)``, central inside, one-sided at the first and last key."""
    low = np.maximum(times - step, times[0])
    high = np.minimum(times + step, times[-1])
    return (channels_values(high) - channels_values(low)) / (high - low)[:, None]


def angular_velocities_of(channels_values, times: np.ndarray) -> np.ndarray:
    """World angular velocities (K, 3) of the current RQ animation ``channels_values(t) ->
    (m, 3)`` at the key ``times`` (`rates_of` through ``rq_angular_velocity``)."""
    return rq.rq_angular_velocity(channels_values(times), rates_of(channels_values, times))
