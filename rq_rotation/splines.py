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
3. Group reparameterization. Each piece gets the shell index ``n = round(mid / 2 pi)`` of the
   middle of its control points' norms and, if ``n != 0``, its end points are mapped with
   ``f(v) = v - 2 pi n v/|v|`` and its end tangents with the differential of ``f``. The rotation
   and the angular velocity at the piece ends are unchanged (C1 in rotation space); the
   shape inside the piece is the Euclidean cubic of the new chart, away from the shell.
   Where consecutive pieces use different charts the RQ values jump (same rotation):
   ``RQSpline.charts`` says where, ``RQSpline.hidden_keys`` lists the times.

Continuity: Catmull-Rom and Hermite splines are C1 in RQ space within a chart and pass
through their keys; Bezier splines pass through their keys and are C1 where the handles match
(collinear, lengths proportional to the neighbouring intervals, as the default Catmull-Rom
handles); the B-spline is C2 within a chart and approximates its keys. Across a chart change
only the rotation and the angular velocity are continuous.
"""

import math

import numpy as np

from ._checks import as_scalars, as_vectors
from .derivatives import rq_angular_velocity, rq_velocity
from .rq import _rq_to_quat

__all__ = ["KINDS", "RQSpline", "bezier_control_points", "rq_spline"]

TWO_PI = 2.0 * math.pi
KINDS = ("catmull_rom", "hermite", "bezier", "bspline")


def _blossom(p, a, b, c):
    """Blossom of Bezier segments ``p`` (..., 4, 3) at parameters ``a, b, c`` (broadcast)."""
    pts = [p[..., i, :] for i in range(4)]
    for u in (a, b, c):
        u = np.asarray(u)[..., None]
        pts = [x + u * (y - x) for x, y in zip(pts[:-1], pts[1:], strict=True)]
    return pts[0]


def _bspline_to_bezier(times, keys):
    k = len(times)
    t = np.concatenate([[2 * times[0] - times[1], 3 * times[0] - 2 * times[1]][::-1], times,
                        [2 * times[-1] - times[-2], 3 * times[-1] - 2 * times[-2]]])
    # t[2 + i] == times[i]
    p = np.concatenate([[2 * keys[0] - keys[1]], keys, [2 * keys[-1] - keys[-2]]])
    # p[1 + i] == keys[i]
    segs = np.empty((k - 1, 4, 3))
    for i in range(k - 1):
        tau = t[i : i + 6]  # times[i-2] .. times[i+3]
        d = p[i : i + 4]  # keys[i-1] .. keys[i+2]
        lo, hi = tau[2], tau[3]
        for m, us in enumerate(((lo, lo, lo), (lo, lo, hi), (lo, hi, hi), (hi, hi, hi))):
            # de Boor's triangle with a different parameter per level (the blossom)
            pts = list(d)
            for r, u in enumerate(us, start=1):
                new = list(pts)
                for j in range(r, 4):
                    left, right = tau[j - 1], tau[j + 3 - r]
                    new[j] = ((right - u) * pts[j - 1] + (u - left) * pts[j]) / (right - left)
                pts = new
            segs[i, m] = pts[3]
    return segs


def bezier_control_points(times, keys, kind="catmull_rom", tangents=None,
                          angular_velocities=None, frame="world"):
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
        hd = as_float_handles(tangents, len(times))
        return np.stack([keys[:-1], hd[:-1, 1], hd[1:, 0], keys[1:]], axis=1)
    if kind == "hermite":
        if (tangents is None) == (angular_velocities is None):
            raise ValueError("hermite needs exactly one of tangents or angular_velocities")
        if tangents is not None:
            m = as_vectors(tangents, "tangents")
        else:
            m = rq_velocity(keys, as_vectors(angular_velocities, "angular_velocities"), frame)
        if m.shape != keys.shape:
            raise ValueError("tangents must have shape (K, 3)")
    else:
        m = np.empty_like(keys)
        m[0] = (keys[1] - keys[0]) / h[0]
        m[-1] = (keys[-1] - keys[-2]) / h[-1]
        m[1:-1] = (keys[2:] - keys[:-2]) / (times[2:] - times[:-2])[:, None]
    hh = (h / 3.0)[:, None]
    return np.stack([keys[:-1], keys[:-1] + m[:-1] * hh, keys[1:] - m[1:] * hh, keys[1:]], axis=1)


def as_float_handles(handles, k):
    hd = np.asarray(handles, dtype=np.float64)
    if hd.shape != (k, 2, 3) or not np.isfinite(hd).all():
        raise ValueError("tangents for 'bezier' must be finite handles of shape (K, 2, 3)")
    return hd


def _reparam_piece(p, n):
    """Map a Bezier piece (4, 3) into chart ``n`` keeping end values and end derivatives."""
    out = p.copy()
    for end, inner in ((0, 1), (3, 2)):
        v = p[end]
        th = np.linalg.norm(v)
        k = TWO_PI * n / th
        u = v / th
        d = p[inner] - v
        out[end] = v * (1.0 - k)
        out[inner] = out[end] + (1.0 - k) * d + k * u * (u @ d)
    return out


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

    def __init__(self, starts, ends, control_points, charts, segment, hidden_keys):
        self.starts = starts
        self.ends = ends
        self.control_points = control_points
        self.charts = charts
        self.segment = segment
        self.hidden_keys = hidden_keys

    def _locate(self, t):
        t = as_scalars(t, "t")
        tc = np.clip(t, self.starts[0], self.ends[-1])
        i = np.clip(np.searchsorted(self.starts, tc, side="right") - 1, 0, len(self.starts) - 1)
        h = self.ends[i] - self.starts[i]
        return i, (tc - self.starts[i]) / h, h

    def evaluate(self, t):
        """RQ vectors (..., 3) at times ``t`` (...); clamped to the key range (de Casteljau)."""
        i, u, _ = self._locate(t)
        return _blossom(self.control_points[i], u, u, u)

    def derivative(self, t):
        """``dv/dt`` (..., 3) at ``t``, in the chart of the piece containing ``t``."""
        i, u, h = self._locate(t)
        p = self.control_points[i]
        d = 3.0 * np.diff(p, axis=-2)  # hodograph control points (..., 3, 3)
        pts = [d[..., j, :] for j in range(3)]
        for _ in range(2):
            pts = [x + u[..., None] * (y - x) for x, y in zip(pts[:-1], pts[1:], strict=True)]
        return pts[0] / h[..., None]

    def evaluate_quat(self, t):
        """Quaternions (..., 4) at ``t`` (continuous across charts up to sign)."""
        return _rq_to_quat(self.evaluate(t))

    def angular_velocity(self, t, frame="world"):
        """Angular velocity (..., 3) at ``t``: chart-independent and continuous."""
        return rq_angular_velocity(self.evaluate(t), self.derivative(t), frame)

    def bezier_segments(self):
        """``(starts, ends, control_points, charts)`` copies, for writing F-curve handles.

        F-curve handle ``j`` of piece ``i`` sits at time ``starts + j (ends - starts) / 3`` with
        the value ``control_points[i, j]`` per component.
        """
        return self.starts.copy(), self.ends.copy(), self.control_points.copy(), self.charts.copy()


def rq_spline(times, keys, kind="catmull_rom", tangents=None, angular_velocities=None,
              frame="world", max_extent=math.pi, reparameterize_segments=True,
              shell_margin=0.5, axis_turn=0.35):
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
    shell_margin, axis_turn : float
        Thresholds (radians; ``axis_turn`` 0.35 is about 20 degrees) of the ``"shell"``
        entries of ``hidden_keys``.

    Returns
    -------
    RQSpline
        With ``evaluate(t)``, ``derivative(t)``, ``evaluate_quat(t)``, ``angular_velocity(t)``,
        ``bezier_segments()`` and ``hidden_keys``.
    """
    times = as_scalars(times, "times")
    segs = bezier_control_points(times, keys, kind, tangents, angular_velocities, frame)
    starts, ends, pieces, charts, seg_idx, hidden = [], [], [], [], [], []
    for s, p in enumerate(segs):
        t0, t1 = times[s], times[s + 1]
        extent = max(np.linalg.norm(p[a] - p[b]) for a in range(4) for b in range(a + 1, 4))
        m = max(1, math.ceil(extent / max_extent - 1e-12))
        for j in range(m):
            a, b = j / m, (j + 1) / m
            piece = np.stack([_blossom(p, a, a, a), _blossom(p, a, a, b),
                              _blossom(p, a, b, b), _blossom(p, b, b, b)]) if m > 1 else p.copy()
            norms = np.linalg.norm(piece, axis=1)
            n = round(0.5 * (norms.min() + norms.max()) / TWO_PI)
            ts, te = t0 + a * (t1 - t0), t0 + b * (t1 - t0)
            if j > 0:
                hidden.append({"time": ts, "segment": s, "reason": "split"})
            shell_d = np.abs(norms - TWO_PI * np.maximum(1, np.round(norms / TWO_PI))).min()
            cosang = piece[0] @ piece[3] / max(norms[0] * norms[3], 1e-300)
            if shell_d < shell_margin and np.arccos(np.clip(cosang, -1, 1)) > axis_turn:
                hidden.append({"time": 0.5 * (ts + te), "segment": s, "reason": "shell"})
            if reparameterize_segments and n != 0:
                piece = _reparam_piece(piece, n)
            else:
                n = 0
            starts.append(ts)
            ends.append(te)
            pieces.append(piece)
            charts.append(n)
            seg_idx.append(s)
    for i in range(1, len(charts)):
        if charts[i] != charts[i - 1]:
            hidden.append({"time": starts[i], "segment": seg_idx[i], "reason": "chart"})
    hidden.sort(key=lambda e: e["time"])
    return RQSpline(np.array(starts), np.array(ends), np.array(pieces), np.array(charts),
                    np.array(seg_idx), hidden)
