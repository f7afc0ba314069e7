"""Cubic splines in RQ space (Grassia 1997, section 4.2).

Every spline kind is converted to piecewise cubic Bezier segments in RQ space, which are then
*split* where needed (hidden keys) and *reparameterized as a group* away from the singular
shells, piece by piece:

1. Global control points. Keys ``(K, 3)`` are RQ vectors taken as given (their windings are
   the animator's intent; pass ``rq_sequence_continuous(quat_to_rq(q))`` for shortest-path
   keys). ``'catmull_rom'``: tangents ``m_i = (p_{i+1} - p_{i-1}) / (t_{i+1} - t_{i-1})``
   (one-sided at the ends); ``'hermite'``: given tangents ``dv/dt`` or angular velocities
   (converted with ``rq_velocity``); Bezier points ``p_i + m_i h/3`` and ``p_{i+1} - m_{i+1} h/3``.
   ``'bezier'``: explicit handles ``(K, 2, 3)`` (left, right) or Catmull-Rom ones.
   ``'bspline'``: the keys are de Boor points of the cubic B-spline with knots at the key
   times (non-uniform when the times are), extended by one mirrored knot and one phantom
   point ``2 p_0 - p_1`` at each end; converted to Bezier form by blossoming.
2. Hidden keys. A segment whose control points span more than ``max_extent`` (default
   ``pi``, half a revolution, so that every piece is within one revolution with margin) is
   split by de Casteljau at equal parameter steps: the RQ curve is unchanged, the split points
   are the hidden keys.
3. Group reparameterization. A piece whose control points' norms come within
   ``reparameterize_margin`` of a singular shell ``|v| = 2 pi k`` (k >= 1) gets the shell index
   ``n = round(mid / 2 pi)`` of the middle of those norms and, if ``n != 0``, its end points
   are mapped with ``f(v) = v - 2 pi n v/|v|`` and its end tangents with the differential of
   ``f``. The rotation and the angular velocity at the piece ends are unchanged (C1 in
   rotation space); the shape inside the piece is the Euclidean cubic of the new chart, away
   from the shell. Pieces farther from every shell keep the keys' chart (the paper
   reparameterizes to keep segments away from the shell, not beyond it): there the spline is
   the plain Euclidean cubic of the keys as given, which an F-curve reproduces exactly.
   Where consecutive pieces use different charts the RQ values jump (same rotation):
   ``RQSpline.charts`` says where, ``RQSpline.hidden_keys`` lists the times.

Continuity: Catmull-Rom and Hermite splines are C1 in RQ space within a chart and pass
through their keys; Bezier splines pass through their keys and are C1 where the handles match
(collinear, lengths proportional to the neighbouring intervals, as the default Catmull-Rom
handles); the B-spline is C2 within a chart and approximates its keys. Across a chart change
only the rotation and the angular velocity are continuous.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_float_array, as_scalars, as_vectors, norm
from .derivatives import Frame, rq_angular_velocity, rq_velocity
from .rq import _rq_to_quat
from .shells import _shell_distance

__all__ = [
    "KINDS",
    "RQSpline",
    "bezier_control_points",
    "bezier_derivatives",
    "bezier_values",
    "rq_spline",
]

TWO_PI = 2.0 * math.pi
#: A spline kind (see the module docstring).
Kind = Literal["catmull_rom", "hermite", "bezier", "bspline"]
KINDS: tuple[Kind, ...] = ("catmull_rom", "hermite", "bezier", "bspline")


#: `rq_spline`'s default ``max_extent`` and ``reparameterize_margin``.
MAX_EXTENT = math.pi
REPARAMETERIZE_MARGIN = 0.5 * math.pi

#: The most pieces one segment is split into (`rq_spline`): a segment that would need more
#: has unbounded tangents, and is refused with a ValueError instead of exhausting memory.
MAX_PIECES = 10_000


def _blossom(
    p: NDArray[np.float64], a: ArrayLike, b: ArrayLike, c: ArrayLike
) -> NDArray[np.float64]:
    """Blossom of Bezier segments ``p`` (..., 4, 3) at parameters ``a, b, c`` (broadcast)."""
    lead = np.broadcast_shapes(p.shape[:-2], np.shape(a), np.shape(b), np.shape(c))
    # Each control point as a (3, *lead) view, and every result as contiguous (3, *lead)
    # rows: the elementwise passes run along whole rows (over (..., 3) views numpy loops 3
    # values at a time). ``(y - x) * u + x`` in place: ``x + u[..., None] * (y - x)``'s
    # values and types (``u`` promotes as an array), without a copy of ``p``.
    pts = list(np.moveaxis(np.broadcast_to(p, (*lead, *p.shape[-2:])), (-2, -1), (0, 1)))
    for u in (a, b, c):
        u = np.asarray(u)
        level = []
        for x, y in zip(pts[:-1], pts[1:], strict=True):
            d = np.subtract(y, x, order="C")
            dtype = np.result_type(d, np.atleast_1d(u))
            if dtype == d.dtype:
                np.multiply(d, u, out=d)
            else:
                d = np.multiply(d, u, dtype=dtype)
            level.append(np.add(d, x, out=d))
        pts = level
    return np.ascontiguousarray(np.moveaxis(pts[0], 0, -1))


def bezier_values(control_points: NDArray[np.float64], u: ArrayLike) -> NDArray[np.float64]:
    """Points of cubic Bezier curves, ``control_points`` (..., 4, 3) at parameters ``u`` (...)
    in [0, 1] -> (..., 3) (de Casteljau: exactly the end points at 0 and 1, and exactly a
    constant curve's value)."""
    return _blossom(control_points, u, u, u)


def bezier_derivatives(control_points: ArrayLike, u: ArrayLike) -> NDArray[np.float64]:
    """``d/du`` of cubic Bezier curves, ``control_points`` (..., 4, 3) at ``u`` (...) ->
    (..., 3) (de Casteljau on the hodograph ``3 (p[j+1] - p[j])``)."""
    d = 3.0 * np.diff(control_points, axis=-2)
    u = np.asarray(u)[..., None]
    a = d[..., 0, :] + u * (d[..., 1, :] - d[..., 0, :])
    b = d[..., 1, :] + u * (d[..., 2, :] - d[..., 1, :])
    return a + u * (b - a)


def _bspline_to_bezier(
    times: NDArray[np.float64], keys: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Bezier control points (K-1, 4, 3) of the cubic B-spline with de Boor points ``keys``
    and knots ``times`` (see the module docstring), all segments at once."""
    t = np.concatenate(
        [
            [2 * times[0] - times[1], 3 * times[0] - 2 * times[1]][::-1],
            times,
            [2 * times[-1] - times[-2], 3 * times[-1] - 2 * times[-2]],
        ]
    )
    # t[2 + i] == times[i]
    p = np.concatenate([[2 * keys[0] - keys[1]], keys, [2 * keys[-1] - keys[-2]]])
    # p[1 + i] == keys[i]
    k = len(times)
    window = np.arange(k - 1)[:, None]
    tau = t[window + np.arange(6)]  # (K-1, 6): times[i-2] .. times[i+3]
    d = p[window + np.arange(4)]  # (K-1, 4, 3): keys[i-1] .. keys[i+2]
    lo, hi = tau[:, 2], tau[:, 3]
    segs = np.empty((k - 1, 4, 3))
    for m, us in enumerate(((lo, lo, lo), (lo, lo, hi), (lo, hi, hi), (hi, hi, hi))):
        # de Boor's triangle with a different parameter per level (the blossom)
        pts = [d[:, j] for j in range(4)]
        for r, u in enumerate(us, start=1):
            new = list(pts)
            for j in range(r, 4):
                left, right = tau[:, j - 1], tau[:, j + 3 - r]
                new[j] = ((right - u)[:, None] * pts[j - 1] + (u - left)[:, None] * pts[j]) / (
                    right - left
                )[:, None]
            pts = new
        segs[:, m] = pts[3]
    return segs


def bezier_control_points(
    times: ArrayLike,
    keys: ArrayLike,
    kind: Kind = "catmull_rom",
    tangents: ArrayLike | None = None,
    angular_velocities: ArrayLike | None = None,
    frame: Frame = "world",
) -> NDArray[np.float64]:
    """Global per-segment cubic Bezier control points in RQ space, (K-1, 4, 3).

    Before any splitting or reparameterization (see the module docstring for each kind).
    ``tangents``: ``(K, 3)`` ``dv/dt`` for ``'hermite'``, ``(K, 2, 3)`` left/right handle points
    for ``'bezier'``; ``angular_velocities``: ``(K, 3)`` in ``frame`` for ``'hermite'``.
    """
    times = as_scalars(times, "times")
    keys = as_vectors(keys, "keys")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if times.ndim != 1 or keys.shape != (len(times), 3) or len(times) < 2:
        raise ValueError("times must have shape (K,) and keys shape (K, 3), K >= 2")
    h = np.diff(times)
    if np.any(h <= 0):
        raise ValueError("times must be strictly increasing")
    if kind == "bspline":
        if len(times) < 3:
            raise ValueError("the B-spline needs at least 3 keys")
        return _bspline_to_bezier(times, keys)
    if kind == "bezier" and tangents is not None:
        hd = _as_handles(tangents, len(times))
        return np.stack([keys[:-1], hd[:-1, 1], hd[1:, 0], keys[1:]], axis=1)
    if kind == "hermite":
        if (tangents is None) == (angular_velocities is None):
            raise ValueError("hermite needs exactly one of tangents or angular_velocities")
        if tangents is not None:
            m = as_vectors(tangents, "tangents")
        else:  # angular_velocities is given (checked above)
            m = rq_velocity(
                keys,
                as_vectors(angular_velocities, "angular_velocities"),  # type: ignore[arg-type]
                frame,
            )
        if m.shape != keys.shape:
            raise ValueError("tangents must have shape (K, 3)")
    else:
        return _catmull_rom_segments(times, keys, np.arange(len(times)) == len(times) - 1)
    hh = (h / 3.0)[:, None]
    return np.stack([keys[:-1], keys[:-1] + m[:-1] * hh, keys[1:] - m[1:] * hh, keys[1:]], axis=1)


def _catmull_rom_segments(
    times: NDArray[np.float64], keys: NDArray[np.float64], last: NDArray[np.bool_]
) -> NDArray[np.float64]:
    """Catmull-Rom Bezier control points (S, 4, 3) of curves stacked end to end: ``times``
    (N,) and ``keys`` (N, 3), ``last`` (N,) marking each curve's last key; one segment per key
    that is not a last one, in order. Tangents ``(p[i+1] - p[i-1]) / (t[i+1] - t[i-1])``,
    one-sided at each curve's ends."""
    row = np.arange(len(times))
    first = np.append(True, last[:-1])
    after = np.where(last, row, row + 1)
    before = np.where(first, row, row - 1)
    m = (keys[after] - keys[before]) / (times[after] - times[before])[:, None]
    start = np.flatnonzero(~last)
    hh = ((times[start + 1] - times[start]) / 3.0)[:, None]
    p0, p3 = keys[start], keys[start + 1]
    return np.stack([p0, p0 + m[start] * hh, p3 - m[start + 1] * hh, p3], axis=1)


def _as_handles(handles: ArrayLike, k: int) -> NDArray[np.float64]:
    """Bezier handles (left, right) of ``k`` keys, validated like every other argument."""
    hd = as_float_array(handles, "tangents")
    if hd.shape != (k, 2, 3):
        raise ValueError(
            f"tangents for 'bezier' must have shape (K, 2, 3) = ({k}, 2, 3), got {hd.shape}"
        )
    return hd


def _reparam_pieces(p: NDArray[np.float64], n: NDArray[np.intp]) -> NDArray[np.float64]:
    """Map Bezier pieces (P, 4, 3) into charts ``n`` (P,) keeping end values and end
    derivatives (the differential of ``f`` maps the end tangents)."""
    out = p.copy()
    for end, inner in ((0, 1), (3, 2)):
        v = p[:, end]
        th = norm(v)[..., None]
        k = TWO_PI * n[:, None] / th
        u = v / th
        d = p[:, inner] - v
        out[:, end] = v * (1.0 - k)
        out[:, inner] = out[:, end] + (1.0 - k) * d + k * u * np.sum(u * d, axis=-1, keepdims=True)
    return out


def _split_and_chart(
    segs: NDArray[np.float64],
    t0: NDArray[np.float64],
    t1: NDArray[np.float64],
    max_extent: float,
    reparameterize_segments: bool,
    reparameterize_margin: float,
) -> tuple[NDArray[Any], ...]:
    """Steps 2 and 3 of the module docstring for segments ``segs`` (S, 4, 3) spanning the
    times ``[t0, t1]`` (S,) each, of one curve or of many (each segment on its own).

    Returns ``(segment, j, starts, ends, pieces, charts, norms, turn)``, shapes (P,) but
    ``pieces`` (P, 4, 3) (in their charts) and ``norms`` (P, 4) (of the control points before
    reparameterization): piece ``j`` of segment ``segment``, and the angle ``turn`` between
    the axes of its end points. See `rq_spline` for the parameters.
    """
    # Hidden keys: segment s splits into m[s] pieces at equal parameter steps.
    extent = norm(segs[:, :, None] - segs[:, None, :]).max(axis=(1, 2))
    if not np.all(extent <= MAX_PIECES * max_extent):
        worst = int(np.argmax(np.where(np.isfinite(extent), extent, np.inf)))
        raise ValueError(
            f"segment {worst} spans {extent[worst]:.3g} radians in RQ space, more than "
            f"{MAX_PIECES} pieces of max_extent: its tangents are unbounded (a 'hermite' "
            "angular velocity across the axis at a key on a 2 pi shell, where the RQ rate is "
            "infinite); move that key off the shell (reparameterize) or use another kind"
        )
    m = np.maximum(1, np.ceil(extent / max_extent - 1e-12)).astype(np.intp)
    seg_idx = np.repeat(np.arange(len(segs)), m)
    first = np.cumsum(m) - m  # index of each segment's first piece
    j = np.arange(len(seg_idx)) - first[seg_idx]
    a = j / m[seg_idx]
    b = (j + 1) / m[seg_idx]
    pieces = segs[seg_idx]
    split = np.flatnonzero(m[seg_idx] > 1)
    if len(split):
        whole, sa, sb = pieces[split], a[split], b[split]
        pieces[split] = np.stack(
            [
                _blossom(whole, sa, sa, sa),
                _blossom(whole, sa, sa, sb),
                _blossom(whole, sa, sb, sb),
                _blossom(whole, sb, sb, sb),
            ],
            axis=1,
        )
    s0, s1 = t0[seg_idx], t1[seg_idx]
    starts, ends = s0 + a * (s1 - s0), s0 + b * (s1 - s0)
    # Charts from the norms of each piece's control points.
    norms = norm(pieces)  # (P, 4)
    low, high = norms.min(axis=1), norms.max(axis=1)
    charts = np.round(0.5 * (low + high) / TWO_PI).astype(np.intp)
    nearest_shell = np.maximum(1, np.ceil((low - reparameterize_margin) / TWO_PI))
    near = nearest_shell * TWO_PI <= high + reparameterize_margin
    charts[~near] = 0
    cosang = np.sum(pieces[:, 0] * pieces[:, 3], axis=-1) / np.maximum(
        norms[:, 0] * norms[:, 3], 1e-300
    )
    turn = np.arccos(np.clip(cosang, -1, 1))
    if not reparameterize_segments:
        charts[:] = 0
    moved = charts != 0
    pieces[moved] = _reparam_pieces(pieces[moved], charts[moved])
    return seg_idx, j, starts, ends, pieces, charts, norms, turn


def rq_spline_pieces(
    curves: Sequence[tuple[ArrayLike, ArrayLike, ArrayLike | None]],
    kind: Kind = "catmull_rom",
    reparameterize_segments: bool = True,
) -> tuple[NDArray[Any], ...]:
    """The pieces of `rq_spline` of many curves at once (default thresholds), flat.

    ``curves`` holds ``(times (K,), keys (K, 3), angular_velocities (K, 3) or None)`` per
    curve (world frame, as `rq_spline` takes them). Returns ``(curve, starts, ends,
    control_points, charts)``: shapes (P,) but ``control_points`` (P, 4, 3), sorted by curve
    and time; piece ``p`` belongs to ``curves[curve[p]]`` and is `RQSpline`'s piece of that
    curve (same ``starts``, ``ends``, ``control_points``, ``charts``). One numpy pass over
    all segments; only kinds other than Catmull-Rom call `bezier_control_points` per curve.
    """
    if kind == "catmull_rom":  # all curves in one pass
        for times, keys, _ in curves:
            if np.ndim(times) != 1 or np.shape(keys) != (np.size(times), 3) or np.size(times) < 2:
                raise ValueError("times must have shape (K,) and keys shape (K, 3), K >= 2")
        times = as_scalars(np.concatenate([c[0] for c in curves]), "times")
        keys = as_vectors(np.concatenate([c[1] for c in curves]), "keys")
        last = np.zeros(len(times), dtype=bool)
        last[np.cumsum([np.size(c[0]) for c in curves]) - 1] = True
        if np.any(np.diff(times)[~last[:-1]] <= 0):
            raise ValueError("times must be strictly increasing")
        segments = _catmull_rom_segments(times, keys, last)
        counts = [np.size(c[0]) - 1 for c in curves]
        t0, t1 = times[:-1][~last[:-1]], times[1:][~last[:-1]]
    else:
        parts = []
        for times, keys, omega in curves:
            times = as_scalars(times, "times")
            parts.append(
                (times, bezier_control_points(times, keys, kind, angular_velocities=omega))
            )
        segments = np.concatenate([p for _, p in parts])
        counts = [len(p) for _, p in parts]
        t0 = np.concatenate([t[:-1] for t, _ in parts])
        t1 = np.concatenate([t[1:] for t, _ in parts])
    seg_idx, _, starts, ends, pieces, charts, _, _ = _split_and_chart(
        segments,
        t0,
        t1,
        MAX_EXTENT,
        reparameterize_segments,
        REPARAMETERIZE_MARGIN,
    )
    curve = np.repeat(np.arange(len(counts)), counts)[seg_idx]
    return curve, starts, ends, pieces, charts


class RQSpline:
    """A piecewise cubic Bezier curve in RQ space (see the module docstring).

    Attributes
    ----------
    starts, ends : ndarray, shape (P,)
        Time interval of each piece.
    control_points : ndarray, shape (P, 4, 3)
        Bezier control points of each piece in RQ space, in the piece's chart.
    charts : ndarray of int, shape (P,)
        Shell index ``n`` subtracted from each piece (0: keys as given).
    segment : ndarray of int, shape (P,)
        Index of the original key segment each piece comes from.
    hidden_keys : list of dict
        ``{"time", "segment", "reason"}``: ``"split"`` (a segment spanning more than
        ``max_extent`` was split here), ``"chart"`` (the RQ values jump here between charts),
        ``"shell"`` (a piece passes within ``shell_margin`` of a shell while its axis turns by
        more than ``axis_turn``: an F-curve copy in the global chart would misbehave there).
    """

    def __init__(
        self,
        starts: NDArray[np.float64],
        ends: NDArray[np.float64],
        control_points: NDArray[np.float64],
        charts: NDArray[np.intp],
        segment: NDArray[np.intp],
        hidden_keys: list[dict[str, Any]],
    ) -> None:
        self.starts = starts
        self.ends = ends
        self.control_points = control_points
        self.charts = charts
        self.segment = segment
        self.hidden_keys = hidden_keys

    def _locate(
        self, t: ArrayLike
    ) -> tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]:
        t = as_scalars(t, "t")
        tc = np.clip(t, self.starts[0], self.ends[-1])
        i = np.clip(np.searchsorted(self.starts, tc, side="right") - 1, 0, len(self.starts) - 1)
        h = self.ends[i] - self.starts[i]
        return i, (tc - self.starts[i]) / h, h

    def evaluate(self, t: ArrayLike) -> NDArray[np.float64]:
        """RQ vectors (..., 3) at times ``t`` (...); clamped to the key range (de Casteljau)."""
        i, u, _ = self._locate(t)
        return bezier_values(self.control_points[i], u)

    def derivative(self, t: ArrayLike) -> NDArray[np.float64]:
        """``dv/dt`` (..., 3) at ``t``, in the chart of the piece containing ``t``."""
        i, u, h = self._locate(t)
        return bezier_derivatives(self.control_points[i], u) / h[..., None]

    def evaluate_quat(self, t: ArrayLike) -> NDArray[np.float64]:
        """Quaternions (..., 4) at ``t`` (continuous across charts up to sign)."""
        return _rq_to_quat(self.evaluate(t))

    def angular_velocity(self, t: ArrayLike, frame: Frame = "world") -> NDArray[np.float64]:
        """Angular velocity (..., 3) at ``t``: chart-independent and continuous."""
        return rq_angular_velocity(self.evaluate(t), self.derivative(t), frame)

    def bezier_segments(
        self,
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
        """``(starts, ends, control_points, charts)`` copies, for writing F-curve handles.

        F-curve handle ``j`` of piece ``i`` sits at time ``starts + j (ends - starts) / 3`` with
        the value ``control_points[i, j]`` per component.
        """
        return self.starts.copy(), self.ends.copy(), self.control_points.copy(), self.charts.copy()


def rq_spline(
    times: ArrayLike,
    keys: ArrayLike,
    kind: Kind = "catmull_rom",
    tangents: ArrayLike | None = None,
    angular_velocities: ArrayLike | None = None,
    frame: Frame = "world",
    max_extent: float = MAX_EXTENT,
    reparameterize_segments: bool = True,
    shell_margin: float = 0.5,
    axis_turn: float = 0.35,
    reparameterize_margin: float = REPARAMETERIZE_MARGIN,
) -> RQSpline:
    """Build an RQ-space cubic spline evaluator.

    Parameters
    ----------
    times : array_like, shape (K,)
        Strictly increasing key times.
    keys : array_like, shape (K, 3)
        RQ keys (interpolated by Catmull-Rom, Hermite, Bezier; de Boor points of the B-spline).
    kind : {'catmull_rom', 'hermite', 'bezier', 'bspline'}
    tangents, angular_velocities, frame
        See ``bezier_control_points``.
    max_extent : float
        Segments whose control points span more than this (RQ distance) get hidden keys.
    reparameterize_segments : bool
        Reparameterize each piece as a group into the chart of its nearest shell.
    reparameterize_margin : float
        Pieces whose control points' norms come this close (RQ distance) to a singular shell
        are reparameterized (``pi`` or more: every piece beyond ``|v| = pi``, the chart
        nearest the origin everywhere).
    shell_margin, axis_turn : float
        Thresholds (radians; ``axis_turn`` 0.35 is about 20 degrees) of the ``"shell"``
        entries of ``hidden_keys``.

    Returns
    -------
    RQSpline
        With ``evaluate(t)``, ``derivative(t)``, ``evaluate_quat(t)``, ``angular_velocity(t)``,
        ``bezier_segments()`` and ``hidden_keys``.

    Examples
    --------
    A Catmull-Rom spline through three keys passes through them:

    >>> import numpy as np
    >>> from rq_rotation import rq_spline
    >>> keys = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.5, 2.0]])
    >>> spline = rq_spline([0.0, 10.0, 20.0], keys)
    >>> bool(np.allclose(spline.evaluate([0.0, 10.0, 20.0]), keys))
    True
    """
    times = as_scalars(times, "times")
    segs = bezier_control_points(times, keys, kind, tangents, angular_velocities, frame)
    seg_idx, j, starts, ends, pieces, charts, norms, turn = _split_and_chart(
        segs, times[:-1], times[1:], max_extent, reparameterize_segments, reparameterize_margin
    )
    near_shell = (_shell_distance(norms).min(axis=1) < shell_margin) & (turn > axis_turn)
    # hidden_keys: per piece a "split" entry at its start (j > 0), then a "shell" entry at its
    # middle; then every chart change; stably sorted by time.
    later = np.flatnonzero(j > 0)
    shell = np.flatnonzero(near_shell)
    changes = np.flatnonzero(charts[1:] != charts[:-1]) + 1
    time = np.concatenate([starts[later], 0.5 * (starts + ends)[shell], starts[changes]])
    segment = seg_idx[np.concatenate([later, shell, changes])]
    reason = np.repeat(["split", "shell", "chart"], [len(later), len(shell), len(changes)])
    order = np.lexsort((np.concatenate([2 * later, 2 * shell + 1, 2 * len(j) + changes]), time))
    hidden = [
        {"time": t, "segment": g, "reason": r}
        for t, g, r in zip(
            time[order].tolist(), segment[order].tolist(), reason[order].tolist(), strict=True
        )
    ]
    return RQSpline(starts, ends, pieces, charts, seg_idx, hidden)
