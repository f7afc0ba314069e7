# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's keyframe F-curve evaluation in numpy, vectorized over evaluation times.

No bpy here: `animdata.py` fills a `Keys` from an F-curve and falls back to
``FCurve.evaluate`` for what this module does not cover (`Keys.supported`).

What is reproduced (Blender's ``fcurve_eval_keyframes`` in ``BKE/fcurve.cc``, unchanged from
4.2 to 5.0):

- times within ``EXACT_THRESHOLD`` of a key (inside the key range) give the key's value;
- a segment uses the interpolation of its *left* key: CONSTANT holds the value, LINEAR blends
  the two values, BEZIER shortens overlong handles (``BKE_fcurve_correct_bezpart``), solves the
  cubic ``x(s) = t`` for ``s`` (``findzero``, the same case analysis and root order) and
  evaluates ``y(s)`` (``berekeny``);
- before the first and after the last key: CONSTANT extrapolation holds the end value; LINEAR
  extrapolation continues the line to the neighbouring key (LINEAR end key) or along the end
  key's outer handle (BEZIER end key); a CONSTANT end key always holds.

Blender computes in float32 with a float64 root solve; so does this module, so results agree
with ``FCurve.evaluate`` to float32 rounding. Not covered (use ``FCurve.evaluate``): F-curve
modifiers, baked sample points, and the easing interpolations (SINE ... ELASTIC, whose BACK
and ELASTIC variants carry extra parameters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

# Keyframe.interpolation enum values (RNA ``Keyframe.interpolation``; BEZT_IPO_*).
CONSTANT = 0
LINEAR = 1
BEZIER = 2

# FCurve.extrapolation enum values.
EXTRAPOLATE_CONSTANT = 0
EXTRAPOLATE_LINEAR = 1

# A time this close to a key (in frames) evaluates to the key's value (Blender's binary-search
# threshold, ``BEZT_BINARYSEARCH_THRESH``).
EXACT_THRESHOLD = 1e-4
# Blender accepts cubic roots in [SMALL, 1.000001] (``findzero``).
_ROOT_MIN = -1.0e-10
_ROOT_MAX = np.float32(1.000001)
_F32_EPS = np.float32(np.finfo(np.float32).eps)

_f32 = np.float32


@dataclass
class Keys:
    """The keyframes of one F-curve as arrays (Blender's float32 values, as float64).

    Attributes
    ----------
    co : ndarray, shape (n, 2)
        ``(frame, value)`` of each key, sorted by frame.
    interpolation : ndarray of int, shape (n,)
        ``Keyframe.interpolation`` enum values; key ``i`` sets the segment ``[i, i + 1]``.
    handles : (handle_left, handle_right), or a function returning them
        Bezier handle points ``(frame, value)``, each shape (n, 2). A function is called once,
        when `handle_left` or `handle_right` is first needed: curves evaluated only at their
        own keys (a clip keyed on every frame) never read their handles.
    extrapolation : int
        ``EXTRAPOLATE_CONSTANT`` or ``EXTRAPOLATE_LINEAR``.
    has_modifiers : bool
        The F-curve has modifiers or baked samples: only ``FCurve.evaluate`` is exact.
    read_handles : function, optional
        ``read_handles(left, right)`` writes the handle points, as float32, into two C-contiguous
        float32 arrays of shape (n, 2) (Blender's bulk read): `KeyStack` reads the handles
        of many curves straight into one array with it, unless they were read already.
    """

    co: np.ndarray
    interpolation: np.ndarray
    handles: tuple[np.ndarray, np.ndarray] | Callable[[], tuple[np.ndarray, np.ndarray]]
    extrapolation: int = EXTRAPOLATE_CONSTANT
    has_modifiers: bool = False
    read_handles: Callable[[np.ndarray, np.ndarray], None] | None = None

    @cached_property
    def _handle_points(self) -> tuple[np.ndarray, np.ndarray]:
        return self.handles() if callable(self.handles) else self.handles

    def handles_into(self, left: np.ndarray, right: np.ndarray) -> None:
        """Write the handle points into ``left`` and ``right``, C-contiguous float32 arrays of
        shape (n, 2): straight from Blender (`read_handles`) when not read yet, with no
        float64 copy kept."""
        if self.read_handles is not None and "_handle_points" not in vars(self):
            self.read_handles(left, right)
        else:
            left[:] = self.handle_left
            right[:] = self.handle_right

    @property
    def handle_left(self) -> np.ndarray:
        """Left handle points, shape (n, 2)."""
        return self._handle_points[0]

    @property
    def handle_right(self) -> np.ndarray:
        """Right handle points, shape (n, 2)."""
        return self._handle_points[1]

    @property
    def times(self) -> np.ndarray:
        """Key frames, shape (n,)."""
        return self.co[:, 0]

    @property
    def values(self) -> np.ndarray:
        """Key values, shape (n,)."""
        return self.co[:, 1]

    @cached_property
    def supported(self) -> bool:
        """True when `evaluate` reproduces Blender's evaluation of these keys (computed once:
        the arrays are not meant to change after construction)."""
        codes = self.interpolation
        # (Two ufunc reductions: cheaper than `supported_interpolation` on a few keys.)
        return (
            len(self.co) > 0
            and not self.has_modifiers
            and bool(np.minimum.reduce(codes) >= CONSTANT)
            and bool(np.maximum.reduce(codes) <= BEZIER)
        )


def supported_each(curves: Sequence[Keys]) -> list[bool]:
    """`Keys.supported` of each of many curves, their interpolation codes checked together
    (two reductions over all of them, not two per curve: 3 ms on 800 curves); each curve
    keeps its answer as `Keys.supported` would."""
    codes = np.concatenate([k.interpolation for k in curves]) if curves else np.empty(0)
    if (
        len(codes)
        and not CONSTANT <= np.minimum.reduce(codes) <= np.maximum.reduce(codes) <= BEZIER
    ):
        return [k.supported for k in curves]  # some code is not: each on its own
    answers = [len(k.co) > 0 and not k.has_modifiers for k in curves]
    for k, answer in zip(curves, answers, strict=True):
        vars(k)["supported"] = answer  # (where the cached property keeps it)
    return answers


def supported_interpolation(codes: np.ndarray) -> np.ndarray:
    """Which interpolation codes (any shape) `evaluate` reproduces: the codes
    CONSTANT, LINEAR, BEZIER are 0, 1, 2 (a range test, much cheaper than ``np.isin``)."""
    codes = np.asarray(codes)
    return (codes >= CONSTANT) & (codes <= BEZIER)


def _correct_bezpart(
    x1: np.ndarray,
    x2: np.ndarray,
    x3: np.ndarray,
    x4: np.ndarray,
    y1: np.ndarray,
    y2: np.ndarray,
    y3: np.ndarray,
    y4: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shorten each handle of each segment that reaches past the other key in time.

    ``BKE_fcurve_correct_bezpart`` (each handle on its own, scaled to the segment's span).
    ``x1..x4`` (m,) float32 frames of the keys and handles, ``y1..y4`` (k, m) float32 values
    (k components sharing those frames: the factor depends on the frames only). Returns the
    corrected ``(x2, x3, y2, y3)``.
    """
    span = x4 - x1
    len1 = np.abs(x1 - x2)
    len2 = np.abs(x4 - x3)
    long1 = len1 > span
    long2 = len2 > span
    if not (long1.any() or long2.any()):  # (the usual case: nothing to shorten)
        return x2, x3, y2, y3
    # The factors of handles that are not too long are discarded: a denormal length overflows.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fac1 = np.where(long1, span / len1, _f32(1.0)).astype(np.float32)
        fac2 = np.where(long2, span / len2, _f32(1.0)).astype(np.float32)
    x2 = np.where(long1, x1 - fac1 * (x1 - x2), x2)
    x3 = np.where(long2, x4 - fac2 * (x4 - x3), x3)
    y2 = np.where(long1, y1 - fac1 * (y1 - y2), y2)
    y3 = np.where(long2, y4 - fac2 * (y4 - y3), y3)
    return x2, x3, y2, y3


def _first_valid(candidates: tuple[np.ndarray, ...]) -> np.ndarray:
    """The first root of each row that lies in Blender's accepted range, or NaN; (m,) float32
    (Blender's candidates past the real roots are NaN and never accepted: left out here)."""
    out = np.full(candidates[0].shape, np.nan, dtype=np.float32)
    for root in reversed(candidates):
        root32 = root.astype(np.float32)
        ok = (root32 >= _ROOT_MIN) & (root32 <= _ROOT_MAX)
        out = np.where(ok, root32, out)
    return out


@dataclass
class _Cubics:
    """What the parameter solve of `_solve_bezier_parameter` takes from a segment's frames
    alone (``findzero``'s float32 coefficients as float64, and the depressed cubic's terms
    that do not involve the time), per segment: computed once for all the times on it."""

    x1: np.ndarray  # float32, the left key's frame
    c1: np.ndarray  # float64 coefficients of s, s^2, s^3
    c2: np.ndarray
    c3: np.ndarray
    a: np.ndarray  # c2 / c3 / 3
    u: np.ndarray  # 2 a^3 - a b, with b = c1 / c3 (the time-free part of 2 q)
    p: np.ndarray  # b / 3 - a^2
    p3: np.ndarray  # p^3

    @staticmethod
    def of(x1: np.ndarray, x2: np.ndarray, x3: np.ndarray, x4: np.ndarray) -> _Cubics:
        c1 = (_f32(3.0) * (x2 - x1)).astype(np.float64)
        c2 = (_f32(3.0) * (x1 - _f32(2.0) * x2 + x3)).astype(np.float64)
        c3 = (x4 - x1 + _f32(3.0) * (x2 - x3)).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = c2 / c3 / 3.0
            b = c1 / c3
            p = b / 3.0 - a * a
            return _Cubics(x1, c1, c2, c3, a, 2.0 * a * a * a - a * b, p, p * p * p)


def _solve_bezier_parameter(
    t: np.ndarray, parts: _Cubics, rows: np.ndarray | None = None
) -> np.ndarray:
    """Parameter ``s`` in [0, 1] with ``x(s) = t`` for the cubic Bezier of each time's
    segment: row ``rows[i]`` of ``parts`` (row ``i`` without ``rows``); shape (m,).

    ``findzero`` + ``solve_cubic``: float32 coefficients, a float64 solve (Cardano for one real
    root, the trigonometric form for three), the first root inside the range in Blender's
    order, NaN when there is none. Each row's case is computed on the rows that have it.
    """
    c0 = ((parts.x1 if rows is None else parts.x1[rows]) - t).astype(np.float64)
    c3 = parts.c3 if rows is None else parts.c3[rows]
    cubic = c3 != 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        if cubic.all():  # (the usual case: no rows gathered)
            return _solve_cubic(c0, c3, parts, rows)
        at = np.arange(len(t)) if rows is None else rows  # each time's row, to gather subsets
        c2 = parts.c2[at]
        quadratic = ~cubic & (c2 != 0.0)
        linear = ~cubic & ~quadratic
        out = np.full(c0.shape, np.nan, dtype=np.float32)
        if cubic.any():
            out[cubic] = _solve_cubic(c0[cubic], c3[cubic], parts, at[cubic])
        if quadratic.any():
            q0, q1, q2 = c0[quadratic], parts.c1[at[quadratic]], c2[quadratic]
            disc = q1 * q1 - 4.0 * q2 * q0
            sdisc = np.sqrt(np.maximum(disc, 0.0))
            out[quadratic] = np.where(
                disc > 0.0,
                _first_valid(((-q1 - sdisc) / (2.0 * q2), (-q1 + sdisc) / (2.0 * q2))),
                np.where(disc == 0.0, _first_valid((-q1 / (2.0 * q2),)), np.nan),
            )
        if linear.any():
            l0, l1 = c0[linear], parts.c1[at[linear]]
            constant = np.where(l0 == 0, 0.0, np.nan)  # the degenerate constant
            out[linear] = np.where(l1 != 0.0, _first_valid((-l0 / l1,)), constant)
    return out


def _solve_cubic(
    c0: np.ndarray, c3: np.ndarray, parts: _Cubics, rows: np.ndarray | None
) -> np.ndarray:
    """The first accepted root of ``c0 + c1 s + c2 s^2 + c3 s^3`` (c3 != 0), (m,) float32:
    Cardano for one real root (d > 0), the double root (d == 0), else the trigonometric
    form (three real roots), each on its rows. The terms without ``c0`` are rows ``rows`` of
    ``parts`` (all of them without): ``a = c2 / c3 / 3``, ``b = c1 / c3``, ``p = b / 3 - a^2``;
    here ``q = (2 a^3 - a b + c0 / c3) / 2`` and ``d = q^2 + p^3``, in that order of
    operations."""
    a, u, p3 = (v if rows is None else v[rows] for v in (parts.a, parts.u, parts.p3))
    q = (u + c0 / c3) / 2.0
    d = q * q + p3
    out = np.empty(c0.shape, dtype=np.float32)
    one = d > 0.0
    double = d == 0.0
    three = ~one & ~double
    if one.any():
        qo, ao, sd = q[one], a[one], np.sqrt(d[one])
        out[one] = _first_valid((np.cbrt(-qo + sd) + np.cbrt(-qo - sd) - ao,))
    if double.any():
        double_t = np.cbrt(-q[double])
        ad = a[double]
        out[double] = _first_valid((2.0 * double_t - ad, -double_t - ad))
    if three.any():
        pt = parts.p[three] if rows is None else parts.p[rows[three]]
        qt, at = q[three], a[three]
        phi = np.arccos(np.clip(-qt / np.sqrt(-p3[three]), -1.0, 1.0))
        st = np.sqrt(-pt)
        cp = np.cos(phi / 3.0)
        sq = np.sqrt(3.0 - 3.0 * cp * cp)
        out[three] = _first_valid((2.0 * st * cp - at, -st * (cp + sq) - at, -st * (cp - sq) - at))
    return out


def _bezier_coefficients(
    y1: np.ndarray, y2: np.ndarray, y3: np.ndarray, y4: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``berekeny``'s polynomial coefficients of the cubic Bezier ``y1..y4`` (float32,
    elementwise)."""
    c1 = _f32(3.0) * (y2 - y1)
    c2 = _f32(3.0) * (y1 - _f32(2.0) * y2 + y3)
    c3 = y4 - y1 + _f32(3.0) * (y2 - y3)
    return y1, c1, c2, c3


def _bezier_y(
    s: np.ndarray, c0: np.ndarray, c1: np.ndarray, c2: np.ndarray, c3: np.ndarray
) -> np.ndarray:
    """``berekeny``: the cubic with coefficients ``c0..c3`` (`_bezier_coefficients`) at
    parameter ``s``, float32 (broadcast: ``s`` (m,) with coefficients (k, m) gives (k, m))."""
    return c0 + s * c1 + s * s * c2 + s * s * s * c3


def evaluate_segments(
    t: ArrayLike,
    x: ArrayLike,
    y: ArrayLike,
    interpolation: ArrayLike | None = None,
    segment: ArrayLike | None = None,
) -> np.ndarray:
    """Blender's evaluation of many keyframe segments at once.

    The segments may belong to any number of F-curves; this is the inside-the-key-range part
    of `evaluate` (exact hits within `EXACT_THRESHOLD` of either key, the right one winning;
    CONSTANT, LINEAR, and BEZIER with Blender's handle correction, cubic solve and flat-segment
    test), in float32 like Blender.

    Parameters
    ----------
    t : array_like, shape (m,)
        Frames, each between its segment's two keys.
    x : array_like, shape (S, 4)
        Frames of each segment's Bezier points: the left key, its right handle, the right
        key's left handle, the right key (the handle columns are ignored unless BEZIER).
    y : array_like, shape (S, 4) or (S, 4, k)
        Values of those points. With k components (the channels of one vector keyed at the
        same frames with handles at the same frames) one cubic solve serves all of them.
        Computed on as (4, k, S) float32: a transposed view of such an array
        (``a.transpose(2, 0, 1)``) is used without a copy.
    interpolation : array_like of int, shape (S,), optional
        Each left key's interpolation code (`CONSTANT`, `LINEAR`, `BEZIER`); BEZIER when
        omitted.
    segment : array_like of int, shape (m,), optional
        The segment of each time. Without it, time ``i`` is on segment ``i`` (S = m). With it,
        what depends on a segment alone (the handle correction, the flat test, the cubic's
        coefficients in time and in value) is computed once per segment, for all the times
        on it (a bake's every frame); with fewer times than segments, per time.

    Returns
    -------
    ndarray, shape (m,) or (m, k), float64
        The values (float32 arithmetic, widened: the same whichever way they are computed).
    """
    t = np.asarray(t, dtype=np.float32).reshape(-1)
    xa: NDArray[np.float32] = np.asarray(x, dtype=np.float32)
    y = np.asarray(y, dtype=np.float32)
    single = y.ndim == 2
    if single:
        y = y[:, :, None]
    ipo = (
        np.full(len(xa), BEZIER) if interpolation is None else np.asarray(interpolation).reshape(-1)
    )
    # The values as (4, k, S): each point's (k, S) contiguous, so every elementwise pass runs
    # along whole rows (over (S, k) column views numpy loops k values at a time, S times:
    # most of the time of a long evaluation). The same float32 operations.
    by_point = y.transpose(1, 2, 0)
    seg = None if segment is None else np.asarray(segment, dtype=np.int64).reshape(-1)
    if seg is not None and len(seg) < len(xa):  # fewer times than segments: gathered per time
        xa, ipo = xa[seg], ipo[seg]
        by_point = np.take(by_point, seg, axis=2)
        seg = None
    on = slice(None) if seg is None else seg  # each time's segment
    x1, x4 = xa[on, 0], xa[on, 3]
    code = ipo[on]
    exact_right = np.abs(x4 - t) <= EXACT_THRESHOLD
    exact_left = np.abs(x1 - t) <= EXACT_THRESHOLD
    todo = ~(exact_left | exact_right)
    bez = todo & (code == BEZIER)
    every = len(t) > 0 and bool(bez.all())  # (the usual case: no copies, nothing gathered)
    if not every:
        # Exact hits take the key's value, CONSTANT holds the left one (rows gathered: a row
        # mask broadcast over (m, k) would loop k values at a time).
        out = np.empty((len(t), by_point.shape[1]), dtype=np.float32)
        rest = np.flatnonzero(~bez)
        rest_rows = rest if seg is None else seg[rest]
        out[rest] = by_point[np.where(exact_right[rest], 3, 0), :, rest_rows]
        lin = todo & (code == LINEAR)
        if lin.any():
            fac = ((t[lin] - x1[lin]) / (x4[lin] - x1[lin]))[:, None]
            lin_rows = lin if seg is None else seg[lin]
            out[lin] = fac * by_point[3, :, lin_rows] + (_f32(1.0) - fac) * by_point[0, :, lin_rows]
    if bez.any():
        if seg is None:
            # Per time: the rows in use (their gather makes the (4, k, m) layout: one copy).
            xb = xa if every else xa[bez]
            points = np.ascontiguousarray(by_point if every else by_point[:, :, bez])
        else:
            xb, points = xa, np.ascontiguousarray(by_point)  # per segment
        y1, y2, y3, y4 = points
        flat = (
            (np.abs(y1 - y4) < _F32_EPS)
            & (np.abs(y2 - y3) < _F32_EPS)
            & (np.abs(y3 - y4) < _F32_EPS)
        )
        x1b, x2, x3, x4b = (xb[:, j] for j in range(4))
        x2, x3, y2, y3 = _correct_bezpart(x1b, x2, x3, x4b, y1, y2, y3, y4)
        parts = _Cubics.of(x1b, x2, x3, x4b)
        coefficients = _bezier_coefficients(y1, y2, y3, y4)
        tb = t if every else t[bez]
        rows: NDArray[np.int64] | None = None if seg is None else seg if every else seg[bez]
        if rows is not None:  # each time's segment's
            coefficients = tuple(np.take(c, rows, axis=1) for c in coefficients)
            flat = np.take(flat, rows, axis=1) if flat.any() else None
        s = _solve_bezier_parameter(tb, parts, rows)
        value = _bezier_y(s, *coefficients)
        value = np.where(np.isnan(s), _f32(0.0), value)  # no root (degenerate handles): 0
        if flat is not None:  # (a flat segment holds its first value)
            value = np.where(flat, coefficients[0], value)
        if every:
            out = value.T
        else:
            out[bez] = value.T
    out = out.astype(np.float64, order="C")
    return out[:, 0] if single else out


def _extrapolate(keys: Keys, t: np.ndarray, end: int, direction: int) -> np.ndarray:
    """Values at ``t`` beyond the key at index ``end`` (0 with ``direction`` +1 towards the
    other keys, or n-1 with -1)."""
    co = keys.co.astype(np.float32)
    x, y = co[end]
    neighbor = end + direction
    if keys.extrapolation == EXTRAPOLATE_CONSTANT or keys.interpolation[end] == CONSTANT:
        return np.full(t.shape, y, dtype=np.float32)
    if keys.interpolation[end] == LINEAR:
        if len(co) == 1 or co[neighbor, 0] == x:
            return np.full(t.shape, y, dtype=np.float32)
        slope = (co[neighbor, 1] - y) / (co[neighbor, 0] - x)
    else:
        handle = (keys.handle_left if direction > 0 else keys.handle_right)[end].astype(np.float32)
        if x == handle[0]:
            return np.full(t.shape, y, dtype=np.float32)
        slope = (y - handle[1]) / (x - handle[0])
    return y - slope * (x - t)


def evaluate(keys: Keys, t: ArrayLike) -> np.ndarray:
    """Evaluate an F-curve's keys at times ``t`` as Blender does.

    Parameters
    ----------
    keys : Keys
        Must be `Keys.supported` (raise ``ValueError`` otherwise).
    t : array_like, shape (m,)
        Frames (in the action's own time), rounded to float32 like ``FCurve.evaluate``'s
        argument.

    Returns
    -------
    ndarray, shape (m,), float64
        The curve's values (float32 arithmetic, widened).
    """
    if not keys.supported:
        raise ValueError("these keys need FCurve.evaluate (modifiers, easing or no keys)")
    t = np.asarray(t).reshape(-1)
    if np.array_equal(t, keys.times):  # at its keys a curve has its keys' values
        return keys.values.copy()
    t = t.astype(np.float32)
    co = keys.co.astype(np.float32)
    xs = co[:, 0]
    out = np.empty(t.shape, dtype=np.float32)

    before = t <= xs[0]
    after = (t >= xs[-1]) & ~before
    inside = ~(before | after)
    if before.any():
        out[before] = _extrapolate(keys, t[before], 0, 1)
    if after.any():
        out[after] = _extrapolate(keys, t[after], len(co) - 1, -1)
    if inside.any():
        ti = t[inside]
        # The first key at or after t; keys within the threshold count as exact hits.
        right = np.searchsorted(xs, ti, side="left")
        left = right - 1
        exact_right = np.abs(xs[right] - ti) <= EXACT_THRESHOLD
        exact_left = np.abs(xs[left] - ti) <= EXACT_THRESHOLD
        todo = ~(exact_left | exact_right)
        # Keys hit exactly (the right one wins, as in Blender) need no interpolation.
        val = np.where(exact_right, co[right, 1], co[left, 1])
        if todo.any():
            lt, rt = left[todo], right[todo]
            ipo = keys.interpolation[lt]
            x = np.stack([xs[lt], xs[lt], xs[rt], xs[rt]], axis=1)
            y = np.stack([co[lt, 1], co[lt, 1], co[rt, 1], co[rt, 1]], axis=1)
            bez = ipo == BEZIER
            if bez.any():  # only then are the handles read
                x[bez, 1] = keys.handle_right[lt[bez], 0]
                y[bez, 1] = keys.handle_right[lt[bez], 1]
                x[bez, 2] = keys.handle_left[rt[bez], 0]
                y[bez, 2] = keys.handle_left[rt[bez], 1]
            val[todo] = evaluate_segments(ti[todo], x, y, ipo)
        out[inside] = val
    return out.astype(np.float64)


@dataclass
class KeyStack:
    """The keys of many F-curves stacked end to end, for `evaluate_stacked`.

    Attributes
    ----------
    curves : list of Keys
        The stacked curves, each `Keys.supported`.
    start : ndarray of int, shape (C + 1,)
        Curve ``c``'s keys are rows ``start[c]`` to ``start[c + 1] - 1`` of `co`.
    co : ndarray, shape (K, 2), float32
        ``(frame, value)`` of every key.
    interpolation : ndarray of int, shape (K,)
    extrapolation : ndarray of int, shape (C,)
    """

    curves: list[Keys]
    start: np.ndarray
    co: np.ndarray
    interpolation: np.ndarray
    extrapolation: np.ndarray

    @cached_property
    def _handle_points(self) -> tuple[np.ndarray, np.ndarray]:
        # Read (from Blender, for curves read lazily) only when a Bezier segment or end needs
        # them: curves evaluated at their own keys never do. Each curve writes its handles
        # into place (`Keys.handles_into`).
        left = np.empty((len(self.co), 2), dtype=np.float32)
        right = np.empty_like(left)
        for keys, first, end in zip(self.curves, self.start[:-1], self.start[1:], strict=True):
            keys.handles_into(left[first:end], right[first:end])
        return left, right

    @property
    def handle_left(self) -> np.ndarray:
        """Left handle points of every key, shape (K, 2), float32."""
        return self._handle_points[0]

    @property
    def handle_right(self) -> np.ndarray:
        """Right handle points of every key, shape (K, 2), float32."""
        return self._handle_points[1]


def stack(curves: list[Keys]) -> KeyStack:
    """Stack the keys of many curves (each `Keys.supported`; raise ``ValueError`` if not)."""
    if not all(k.supported for k in curves):
        raise ValueError("these keys need FCurve.evaluate (modifiers, easing or no keys)")
    sizes = [len(k.co) for k in curves]
    return KeyStack(
        curves=curves,
        start=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        co=np.concatenate([k.co for k in curves]).astype(np.float32),
        interpolation=np.concatenate([k.interpolation for k in curves]),
        extrapolation=np.array([k.extrapolation for k in curves], dtype=np.int32),
    )


def held_segments(keys: KeyStack) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The segments of stacked curves that hold a value: a CONSTANT key to the next key of
    its curve. On ``[start, end)`` the curve evaluates to the key's value; at ``end`` it may
    jump (a stepped pose, or the spline layout's change of chart).

    Returns
    -------
    curve : ndarray of int, shape (h,)
        The stacked curve of each held segment, in stack order.
    start, end : ndarray, shape (h,), float64
        The frames of the CONSTANT key and of the next key.
    """
    held = keys.interpolation == CONSTANT
    held[keys.start[1:] - 1] = False  # a curve's last key starts no segment
    rows = np.flatnonzero(held)
    curve = np.searchsorted(keys.start, rows, side="right") - 1
    frames = keys.co[:, 0].astype(np.float64)
    return curve, frames[rows], frames[rows + 1]


def _extrapolate_stacked(
    keys: KeyStack, curve: np.ndarray, t: np.ndarray, end: np.ndarray, direction: int
) -> np.ndarray:
    """`_extrapolate` of many curves at once: times ``t`` (m,) beyond key ``end`` (m,) (the
    first key of ``curve`` with ``direction`` +1, its last with -1)."""
    co = keys.co
    x, y = co[end, 0], co[end, 1]
    ipo = keys.interpolation[end]
    single = keys.start[curve + 1] - keys.start[curve] == 1
    neighbor = np.where(single, end, end + direction)
    hold = (keys.extrapolation[curve] == EXTRAPOLATE_CONSTANT) | (ipo == CONSTANT)
    out = y.copy()
    line = ~hold & (ipo == LINEAR) & ~single & (co[neighbor, 0] != x)
    if line.any():
        nb = neighbor[line]
        slope = (co[nb, 1] - y[line]) / (co[nb, 0] - x[line])
        out[line] = y[line] - slope * (x[line] - t[line])
    bezier = ~hold & (ipo != LINEAR)
    if bezier.any():
        handles = keys.handle_left if direction > 0 else keys.handle_right
        handle = handles[end[bezier]]
        xb, yb, tb = x[bezier], y[bezier], t[bezier]
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = (yb - handle[:, 1]) / (xb - handle[:, 0])
        out[bezier] = np.where(xb == handle[:, 0], yb, yb - slope * (xb - tb))
    return out


def curve_time_order(curve: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``(curve, t)`` pairs as uint64 in the same order (curve first, then the float32
    frame): the curve in the high 32 bits, the frame's bits in the low ones, flipped so that
    integer order is float order (-0.0 counts as 0.0, as in float comparison). One
    ``searchsorted`` then finds keys of many curves (frames as Blender's float32)."""
    bits = (np.asarray(t, dtype=np.float32) + _f32(0.0)).view(np.uint32).astype(np.uint64)
    negative = bits >= np.uint64(0x80000000)
    ordered = np.where(negative, np.uint64(0xFFFFFFFF) - bits, bits + np.uint64(0x80000000))
    return (np.asarray(curve).astype(np.uint64) << np.uint64(32)) | ordered


def evaluate_stacked(keys: KeyStack, curve: ArrayLike, t: ArrayLike) -> np.ndarray:
    """Evaluate many F-curves, each at its own times, as Blender does (`evaluate` of each, in
    one pass: the same float32 arithmetic, so the same values).

    Parameters
    ----------
    keys : KeyStack
    curve : array_like of int, shape (m,)
        Which stacked curve each time is on.
    t : array_like, shape (m,)
        Frames (rounded to float32 like ``FCurve.evaluate``'s argument).

    Returns
    -------
    ndarray, shape (m,), float64
    """
    return evaluate_stacked_together([keys], curve, t)[:, 0]


def _same_frames(stacks: Sequence[KeyStack]) -> bool:
    """Whether the stacks hold curves keyed at the same frames with the same interpolation
    and extrapolation (the channels of vectors keyed together), curve for curve."""
    base = stacks[0]
    return all(
        np.array_equal(s.start, base.start)
        and np.array_equal(s.co[:, 0], base.co[:, 0])
        and np.array_equal(s.interpolation, base.interpolation)
        and np.array_equal(s.extrapolation, base.extrapolation)
        for s in stacks[1:]
    )


def _segment_points(stacks: Sequence[KeyStack], bezier: bool) -> tuple[np.ndarray, np.ndarray]:
    """The Bezier points of the segment starting at each key of stacks keyed at the same
    frames (`_same_frames`), for `evaluate_segments`: segment i is from key i to key i + 1
    (meaningless at a curve's last key). Frames ``x`` (K - 1, 4), or (K - 1, 4, k) where the
    stacks' handle frames differ, and values ``y`` (4, k, K - 1), float32: gathered along
    the last axis, the layout `evaluate_segments` computes on. Without ``bezier`` the
    handle columns repeat the keys (the handles are not read)."""
    xs = stacks[0].co[:, 0]
    ys = np.stack([s.co[:, 1] for s in stacks])  # (k, K)
    if not bezier:
        x = np.stack([xs[:-1], xs[:-1], xs[1:], xs[1:]], axis=1)
        return x, np.stack([ys[:, :-1], ys[:, :-1], ys[:, 1:], ys[:, 1:]])
    out = np.stack([s.handle_right[:-1, 1] for s in stacks])
    into = np.stack([s.handle_left[1:, 1] for s in stacks])
    y = np.stack([ys[:, :-1], out, into, ys[:, 1:]])
    frames = [
        np.stack([xs[:-1], s.handle_right[:-1, 0], s.handle_left[1:, 0], xs[1:]], axis=1)
        for s in stacks
    ]
    if all(np.array_equal(f, frames[0]) for f in frames[1:]):
        return frames[0], y
    return np.stack(frames, axis=2), y


class StacksTogether:
    """Stacks of k channels (each a `KeyStack`, curve for curve the same lines) as
    `evaluate_stacked_together` reads them, with what every evaluation needs computed once:
    whether they are keyed at the same frames (`_same_frames`), each key's curve and search
    key, the values (K, k) and the segments' Bezier points (`_segment_points`). A rig-wide
    operator evaluates the same stacks several times (a grid, then each refinement pass):
    0.25 ms a call on 200 bones of 28 keys."""

    def __init__(self, stacks: Sequence[KeyStack]) -> None:
        self.stacks = list(stacks)
        self.same = len(self.stacks) == 1 or _same_frames(self.stacks)
        self._segments: dict[bool, tuple[np.ndarray, np.ndarray]] = {}

    @cached_property
    def key_curve(self) -> np.ndarray:
        """Each key's curve, shape (K,)."""
        start = self.stacks[0].start
        return np.repeat(np.arange(len(start) - 1), np.diff(start))

    @cached_property
    def key_order(self) -> np.ndarray:
        """Each key's (curve, frame) as one ordered integer (`curve_time_order`), (K,)."""
        return curve_time_order(self.key_curve, self.stacks[0].co[:, 0])

    @cached_property
    def values(self) -> np.ndarray:
        """The keys' values, shape (K, k) float32."""
        return np.stack([s.co[:, 1] for s in self.stacks], axis=1)

    def segments(self, bezier: bool) -> tuple[np.ndarray, np.ndarray]:
        """`_segment_points` of the stacks (same frames only)."""
        found = self._segments.get(bezier)
        if found is None:
            found = self._segments[bezier] = _segment_points(self.stacks, bezier)
        return found


def evaluate_stacked_together(
    stacks: Sequence[KeyStack] | StacksTogether, curve: ArrayLike, t: ArrayLike
) -> np.ndarray:
    """`evaluate_stacked` of k stacks at the same curves and times, shape (m,) -> (m, k).

    When the stacks' curves are keyed at the same frames (`_same_frames`: the channels of
    vectors keyed together), the keys are searched once, and where the Bezier handles'
    frames agree too (as automatic handles of keys at the same frames do) one cubic solve
    serves all k (`evaluate_segments`); the values are the same as each stack's alone.
    Stacks evaluated again and again are best passed as one `StacksTogether`.
    """
    together = stacks if isinstance(stacks, StacksTogether) else StacksTogether(stacks)
    stacks = together.stacks
    curve = np.asarray(curve, dtype=np.int64).reshape(-1)
    t = np.asarray(t, dtype=np.float32).reshape(-1)
    if not together.same:
        return np.stack([evaluate_stacked(s, curve, t) for s in stacks], axis=1)
    base = stacks[0]
    xs = base.co[:, 0]
    ys = together.values  # (K, k)
    key_curve = together.key_curve
    if np.array_equal(curve, key_curve) and np.array_equal(t, xs):
        return ys.astype(np.float64)  # every curve at its own keys: their values
    first = base.start[curve]
    last = base.start[curve + 1] - 1
    out = np.empty((len(t), len(stacks)), dtype=np.float32)
    before = t <= xs[first]
    after = (t >= xs[last]) & ~before
    inside = ~(before | after)
    for j, keys in enumerate(stacks):
        if before.any():
            out[before, j] = _extrapolate_stacked(keys, curve[before], t[before], first[before], 1)
        if after.any():
            out[after, j] = _extrapolate_stacked(keys, curve[after], t[after], last[after], -1)
    if inside.any():
        every = bool(inside.all())  # (the usual case: no copies)
        ci, ti = (curve, t) if every else (curve[inside], t[inside])
        # The first key of its curve at or after each time (searchsorted, side="left", in
        # every curve at once): (curve, frame) as one ordered integer, the keys' sorted.
        right = np.searchsorted(together.key_order, curve_time_order(ci, ti))
        left = right - 1
        exact_right = np.abs(xs[right] - ti) <= EXACT_THRESHOLD
        exact_left = np.abs(xs[left] - ti) <= EXACT_THRESHOLD
        todo = ~(exact_left | exact_right)
        val = None if todo.all() else ys[np.where(exact_right, right, left)]
        if todo.any():
            lt = left if val is None else left[todo]
            ipo = base.interpolation[lt]
            # The handle columns count for BEZIER segments only (`evaluate_segments`), and
            # only then are the handles read.
            x_table, y_table = together.segments(bool((ipo == BEZIER).any()))
            tt = ti if val is None else ti[todo]
            if x_table.ndim == 2:  # one set of frames for all k: per segment, then per time
                segments = evaluate_segments(
                    tt,
                    x_table,
                    y_table.transpose(2, 0, 1),  # (the (S, 4, k) view: no copy there)
                    base.interpolation[:-1],
                    segment=lt,
                )
            else:
                # (y as the (m, 4, k) view of its (4, k, m) gather; "clip" takes no buffer,
                # the segments being keys.)
                x = x_table[lt]
                y = np.take(y_table, lt, axis=2, mode="clip").transpose(2, 0, 1)
                segments = np.stack(
                    [evaluate_segments(tt, x[..., j], y[..., j], ipo) for j in range(len(stacks))],
                    axis=1,
                )
            if val is None:
                val = segments.astype(np.float32)
            else:
                val[todo] = segments
        if every:
            return val.astype(np.float64)
        out[inside] = val
    return out.astype(np.float64)
