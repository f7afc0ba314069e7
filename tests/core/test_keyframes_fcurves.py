# SPDX-License-Identifier: GPL-3.0-or-later
"""`keyframes.fcurve_math`: Blender's keyframe F-curve evaluation, against an independent
evaluation written from Blender's definition (``fcurve_eval_keyframes`` in
``BKE/fcurve.cc``) in float64: each handle limited to the keys' time span, the Bernstein
form of the cubic, ``x(s) = t`` solved by bisection, the extrapolations and the exact-hit
threshold spelled out one time at a time. The inputs are rounded to float32 first (Blender
stores them so); what is left is float32 arithmetic."""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rq_rotation.keyframes import fcurve_math as fm
from rq_rotation.keyframes.fcurve_math import (
    BEZIER,
    CONSTANT,
    EXACT_THRESHOLD,
    EXTRAPOLATE_CONSTANT,
    EXTRAPOLATE_LINEAR,
    LINEAR,
    Keys,
)

F32_EPS = float(np.finfo(np.float32).eps)


def _f32(a):
    return np.asarray(a, dtype=np.float32).astype(np.float64)


def _bernstein(p, s):
    """The cubic Bezier with control values ``p`` (4,) at parameters ``s``."""
    r = 1.0 - s
    return r**3 * p[0] + 3.0 * r * r * s * p[1] + 3.0 * r * s * s * p[2] + s**3 * p[3]


def _corrected(x, y):
    """Blender's handle correction from its definition: a handle reaching further in time than
    the keys' span is scaled towards its key to that length (each handle on its own)."""
    x, y = list(x), list(y)
    span = x[3] - x[0]
    for key, handle in ((0, 1), (3, 2)):
        length = abs(x[key] - x[handle])
        if length > span:
            fac = span / length
            x[handle] = x[key] - fac * (x[key] - x[handle])
            y[handle] = y[key] - fac * (y[key] - y[handle])
    return np.array(x), np.array(y)


def _roots(x, t):
    """Every s in [0, 1] with x(s) = t (sign changes on a fine grid, then bisection)."""
    s = np.linspace(0.0, 1.0, 2049)
    g = _bernstein(x, s) - t
    out = list(s[g == 0.0])
    for i in np.flatnonzero(np.sign(g[:-1]) * np.sign(g[1:]) < 0):
        lo, hi = s[i], s[i + 1]
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            if (_bernstein(x, mid) - t) * (_bernstein(x, lo) - t) <= 0:
                hi = mid
            else:
                lo = mid
        out.append(0.5 * (lo + hi))
    return out


def _reference_bezier(t, x, y):
    """Values of the Bezier segment at every root of x(s) = t, and the slope dx/ds there."""
    x, y = _corrected(_f32(x), _f32(y))
    if abs(y[0] - y[3]) < F32_EPS and abs(y[1] - y[2]) < F32_EPS and abs(y[2] - y[3]) < F32_EPS:
        return [(y[0], math.inf)]  # a flat segment: the key's value
    dx = 3.0 * np.array([x[1] - x[0], x[2] - x[1], x[3] - x[2]])
    out = []
    for s in _roots(x, float(_f32(t))):
        slope = dx[0] * (1 - s) ** 2 + 2 * dx[1] * s * (1 - s) + dx[2] * s * s
        out.append((_bernstein(y, s), abs(slope)))
    return out


def _reference(keys: Keys, t: float) -> float:
    """Blender's evaluation of ``keys`` at one time, written out from its definition."""
    t = float(_f32(t))
    co = _f32(keys.co)
    xs, ys = co[:, 0], co[:, 1]
    n = len(xs)
    for end, step in ((0, 1), (n - 1, -1)):
        if (step > 0 and t <= xs[0]) or (step < 0 and t >= xs[-1]):
            ipo = keys.interpolation[end]
            if keys.extrapolation == EXTRAPOLATE_CONSTANT or ipo == CONSTANT or n == 1:
                return ys[end]
            if ipo == LINEAR:
                other = end + step
                if xs[other] == xs[end]:
                    return ys[end]
                return ys[end] + (t - xs[end]) * (ys[other] - ys[end]) / (xs[other] - xs[end])
            handle = _f32(keys.handle_left[end] if step > 0 else keys.handle_right[end])
            if handle[0] == xs[end]:
                return ys[end]
            return ys[end] + (t - xs[end]) * (ys[end] - handle[1]) / (xs[end] - handle[0])
    hits = np.flatnonzero(np.abs(xs - t) <= EXACT_THRESHOLD)
    if len(hits):
        return ys[hits[-1]]
    i = int(np.flatnonzero(xs < t)[-1])
    if keys.interpolation[i] == CONSTANT:
        return ys[i]
    if keys.interpolation[i] == LINEAR:
        return ys[i] + (t - xs[i]) / (xs[i + 1] - xs[i]) * (ys[i + 1] - ys[i])
    x = [xs[i], keys.handle_right[i][0], keys.handle_left[i + 1][0], xs[i + 1]]
    y = [ys[i], keys.handle_right[i][1], keys.handle_left[i + 1][1], ys[i + 1]]
    (value, _), *others = _reference_bezier(t, x, y)
    assert not others, "the corrected handles keep x(s) monotone"
    return value


def _random_curve(rng, n, codes=(BEZIER,), extrapolation=EXTRAPOLATE_CONSTANT, reach=1.6):
    """Keys with random gaps, values and handles. A handle is short (at most half the
    neighbouring gap in time) or long (up to ``reach`` gaps: Blender shortens it to the gap);
    at most one handle of a segment is long, so that ``x(s)`` is well conditioned."""
    times = np.cumsum(rng.uniform(0.5, 8.0, n)) + rng.uniform(-100.0, 100.0)
    values = rng.uniform(-10.0, 10.0, n)
    gaps = np.diff(times)
    before = np.concatenate([gaps[:1], gaps])
    after = np.concatenate([gaps, gaps[-1:]])
    slopes = rng.normal(0.0, 3.0, (n, 2))
    long = rng.random((n, 2)) < 0.3
    long[1:, 0] &= ~long[:-1, 1]
    lengths = np.where(
        long, rng.uniform(1.0, reach, (n, 2)), rng.uniform(0.05, 0.5, (n, 2))
    ) * np.stack([before, after], axis=1)
    left = np.stack([times - lengths[:, 0], values - slopes[:, 0] * lengths[:, 0]], axis=1)
    right = np.stack([times + lengths[:, 1], values + slopes[:, 1] * lengths[:, 1]], axis=1)
    co = np.stack([times, values], axis=1)
    return Keys(_f32(co), rng.choice(np.array(codes), n), (_f32(left), _f32(right)), extrapolation)


def _tolerance(keys: Keys) -> float:
    """float32 arithmetic on the curve's values and slopes (relative to their sizes)."""
    size = max(
        np.abs(keys.co[:, 1]).max(),
        np.abs(keys.handle_left[:, 1]).max(),
        np.abs(keys.handle_right[:, 1]).max(),
    )
    return 64.0 * F32_EPS * (1.0 + size)


@pytest.mark.parametrize("seed", range(6))
def test_bezier_curves_match_an_independent_evaluation(seed):
    rng = np.random.default_rng(seed)
    keys = _random_curve(rng, 12)
    t = np.sort(rng.uniform(keys.times[0], keys.times[-1], 600))
    got = fm.evaluate(keys, t)
    expected = np.array([_reference(keys, x) for x in t])
    np.testing.assert_allclose(got, expected, rtol=0, atol=_tolerance(keys))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("extrapolation", [EXTRAPOLATE_CONSTANT, EXTRAPOLATE_LINEAR])
def test_mixed_interpolation_and_extrapolation_match_the_definition(seed, extrapolation):
    rng = np.random.default_rng(100 + seed)
    keys = _random_curve(rng, 9, codes=(CONSTANT, LINEAR, BEZIER), extrapolation=extrapolation)
    for first, last in ((BEZIER, BEZIER), (LINEAR, LINEAR), (CONSTANT, LINEAR), (LINEAR, CONSTANT)):
        keys.interpolation[[0, -1]] = first, last
        span = keys.times[-1] - keys.times[0]
        t = np.sort(rng.uniform(keys.times[0] - span, keys.times[-1] + span, 300))
        t = np.concatenate([t, keys.times, keys.times[[0, -1]] + [-1e-5, 1e-5]])
        got = fm.evaluate(Keys(keys.co, keys.interpolation.copy(), keys.handles, extrapolation), t)
        expected = np.array([_reference(keys, x) for x in t])
        scale = _tolerance(keys) * (1.0 + np.abs(expected))
        np.testing.assert_array_less(np.abs(got - expected), scale + 1e-300)


def test_the_extrapolations_spelled_out():
    co = np.array([[10.0, 1.0], [20.0, 3.0], [30.0, -1.0]])
    left = np.array([[8.0, 0.0], [18.0, 3.0], [25.0, -1.0]])
    right = np.array([[12.0, 2.0], [22.0, 3.0], [34.0, 1.0]])

    def at(codes, extrapolation, t):
        return fm.evaluate(Keys(co, np.array(codes), (left, right), extrapolation), t)

    t = np.array([0.0, 5.0, 10.0, 30.0, 36.0])
    # Constant extrapolation holds the end values, whatever the interpolation.
    assert at([BEZIER] * 3, EXTRAPOLATE_CONSTANT, t).tolist() == [1.0, 1.0, 1.0, -1.0, -1.0]
    # Linear, Bezier end keys: along the outer handle (slope 1/2 before, 1/2 after).
    assert at([BEZIER] * 3, EXTRAPOLATE_LINEAR, t).tolist() == [-4.0, -1.5, 1.0, -1.0, 2.0]
    # Linear end keys: the line to the neighbouring key (slope 1/5 before, -2/5 after).
    np.testing.assert_allclose(
        at([LINEAR] * 3, EXTRAPOLATE_LINEAR, t), [-1.0, 0.0, 1.0, -1.0, -3.4], atol=1e-6
    )
    # A constant end key holds even with linear extrapolation.
    assert at([CONSTANT, LINEAR, CONSTANT], EXTRAPOLATE_LINEAR, t).tolist() == [
        1.0,
        1.0,
        1.0,
        -1.0,
        -1.0,
    ]
    # A vertical handle (no time length) holds too; so does a single key.
    vertical = left.copy()
    vertical[0] = [10.0, 5.0]
    assert fm.evaluate(Keys(co, np.array([BEZIER] * 3), (vertical, right), 1), [0.0])[0] == 1.0
    one = Keys(co[:1], np.array([LINEAR]), (left[:1], right[:1]), EXTRAPOLATE_LINEAR)
    assert fm.evaluate(one, [-5.0, 10.0, 50.0]).tolist() == [1.0, 1.0, 1.0]


def test_linear_and_constant_segments():
    co = np.array([[0.0, 2.0], [4.0, 6.0], [8.0, -2.0]])
    handles = (co.copy(), co.copy())
    t = np.array([1.0, 2.0, 3.0, 5.0, 7.0, 7.99])
    lin = fm.evaluate(Keys(co, np.array([LINEAR] * 3), handles), t)
    np.testing.assert_allclose(lin, [3.0, 4.0, 5.0, 4.0, 0.0, -1.98], atol=1e-6)
    const = fm.evaluate(Keys(co, np.array([CONSTANT] * 3), handles), t)
    assert const.tolist() == [2.0, 2.0, 2.0, 6.0, 6.0, 6.0]


def test_times_within_the_threshold_of_a_key_give_the_keys_value():
    # A steep Bezier segment: 1.5 threshold from a key is measurably off the key's value.
    co = np.array([[0.0, 0.0], [10.0, 100.0], [20.0, 0.0]])
    left = np.array([[-3.0, -30.0], [7.0, 70.0], [17.0, 30.0]])
    right = np.array([[3.0, 30.0], [13.0, 130.0], [23.0, -30.0]])
    keys = Keys(co, np.array([BEZIER] * 3), (left, right))
    inside = 0.9 * EXACT_THRESHOLD
    outside = 1.5 * EXACT_THRESHOLD
    t = np.array([10.0 - inside, 10.0 + inside, 10.0, 0.0 + inside, 20.0 - inside])
    assert fm.evaluate(keys, t).tolist() == [100.0, 100.0, 100.0, 0.0, 0.0]
    away = fm.evaluate(keys, [10.0 - outside, 10.0 + outside, outside, 20.0 - outside])
    assert (np.abs(away - [100.0, 100.0, 0.0, 0.0]) > 1e-3).all()
    expected = [_reference(keys, x) for x in (10.0 - outside, 10.0 + outside)]
    np.testing.assert_allclose(away[:2], expected, atol=_tolerance(keys))
    # At the keys themselves (all at once, or some of them): their values.
    assert fm.evaluate(keys, keys.times).tolist() == [0.0, 100.0, 0.0]
    assert fm.evaluate(keys, [20.0, 10.0]).tolist() == [0.0, 100.0]


def test_a_flat_segment_gives_its_keys_value_exactly():
    # Handles within float32's epsilon of the keys: Blender returns the key's value, not the
    # (tiny, nonzero) cubic.
    co = np.array([[0.0, 0.0], [10.0, 0.0]])
    left = np.array([[-3.0, 0.0], [7.0, 0.0]])
    right = np.array([[3.0, 1e-8], [13.0, 0.0]])
    keys = Keys(co, np.array([BEZIER, BEZIER]), (left, right))
    assert (fm.evaluate(keys, np.linspace(0.5, 9.5, 19)) == 0.0).all()
    right[0, 1] = 1e-6  # no longer flat
    assert (fm.evaluate(Keys(co, np.array([BEZIER] * 2), (left, right)), [2.0]) > 0.0).all()


def _conditioned_error(got, candidates, span):
    """The distance of ``got`` to the reference's value, weighted by how well the root is
    conditioned (dx/ds relative to the span: where it vanishes, float32 moves the root)."""
    (value, slope), *others = candidates
    assert not others, "the corrected handles keep x(s) monotone"
    return abs(got - value) * min(slope / span, 1.0)


def test_handles_reaching_across_the_segment_are_corrected():
    # Both handles reach past the other key: each is shortened to the span (not both
    # together to half of it), which leaves x(s) monotone with a flat inflection at s = 1/2.
    x = [0.0, 20.0, -10.0, 10.0]  # shortened to [0, 10, 0, 10]
    y = [0.0, 8.0, -6.0, 1.0]  # shortened to [0, 4, -3, 1]
    co = np.array([[x[0], y[0]], [x[3], y[3]]])
    left = np.array([[x[0] - 1.0, y[0]], [x[2], y[2]]])
    right = np.array([[x[1], y[1]], [x[3] + 1.0, y[3]]])
    keys = Keys(co, np.array([BEZIER, BEZIER]), (left, right))
    t = np.linspace(0.3, 9.7, 95)
    got = fm.evaluate(keys, t)
    for time, value in zip(t, got, strict=True):
        error = _conditioned_error(value, _reference_bezier(time, x, y), 10.0)
        assert error < 1e-5, (time, value, _reference_bezier(time, x, y))
    # Shortening both together (Blender before 2.9x) would give another curve.
    s = np.array([0.2])
    both = [0.0, 5.0, 5.0, 10.0], [0.0, 2.0, -1.5, 1.0]
    time = float(_bernstein(np.array(both[0]), s)[0])
    old = _bernstein(np.array(both[1]), s)[0]
    assert abs(fm.evaluate(keys, [time])[0] - old) > 0.1


def test_segments_with_components_share_one_solve():
    rng = np.random.default_rng(7)
    keys = [_random_curve(rng, 2) for _ in range(40)]
    t = np.array([rng.uniform(k.times[0], k.times[1]) for k in keys])
    x = np.array(
        [[k.times[0], k.handle_right[0, 0], k.handle_left[1, 0], k.times[1]] for k in keys]
    )
    y = np.array(
        [[k.values[0], k.handle_right[0, 1], k.handle_left[1, 1], k.values[1]] for k in keys]
    )
    single = fm.evaluate_segments(t, x, y)
    expected = np.array([fm.evaluate(k, [time])[0] for k, time in zip(keys, t, strict=True)])
    np.testing.assert_array_equal(single, expected)
    # Three components at the same frames: each as evaluated alone.
    ys = np.stack([y, 2.0 * y - 1.0, -y], axis=-1)
    both = fm.evaluate_segments(t, x, ys)
    for c in range(3):
        np.testing.assert_array_equal(both[:, c], fm.evaluate_segments(t, x, ys[..., c]))
    # Interpolation codes per segment.
    codes = np.array([CONSTANT, LINEAR, BEZIER] * 13 + [LINEAR])
    mixed = fm.evaluate_segments(t, x, y, codes)
    lin = (t - x[:, 0]) / (x[:, 3] - x[:, 0])
    np.testing.assert_allclose(
        mixed[codes == LINEAR], ((1 - lin) * y[:, 0] + lin * y[:, 3])[codes == LINEAR], atol=1e-5
    )
    np.testing.assert_array_equal(mixed[codes == CONSTANT], _f32(y[codes == CONSTANT, 0]))
    np.testing.assert_array_equal(mixed[codes == BEZIER], single[codes == BEZIER])


def test_handles_are_read_only_when_a_bezier_segment_needs_them():
    co = np.array([[0.0, 0.0], [10.0, 1.0], [20.0, 0.0]])

    def unreadable():
        raise AssertionError("handles read")

    at_keys = Keys(co, np.array([BEZIER] * 3), unreadable)
    assert fm.evaluate(at_keys, [0.0, 10.0, 20.0]).tolist() == [0.0, 1.0, 0.0]
    assert fm.evaluate(at_keys, [10.0 + 0.5 * EXACT_THRESHOLD, -3.0]).tolist() == [1.0, 0.0]
    linear = Keys(co, np.array([LINEAR] * 3), unreadable)
    np.testing.assert_allclose(fm.evaluate(linear, [5.0, 15.0]), [0.5, 0.5])
    with pytest.raises(AssertionError, match="handles read"):
        fm.evaluate(at_keys, [5.0])
    calls = []

    def counted():
        calls.append(1)
        return co.copy(), co.copy()

    keys = Keys(co, np.array([BEZIER] * 3), counted)
    fm.evaluate(keys, [5.0])
    fm.evaluate(keys, [15.0])
    assert len(calls) == 1


def test_unsupported_keys_are_refused():
    co = np.array([[0.0, 0.0], [10.0, 1.0]])
    handles = (co.copy(), co.copy())
    assert Keys(co, np.array([BEZIER, LINEAR]), handles).supported
    assert fm.supported_interpolation(np.array([[0, 1], [2, 3]])).tolist() == [
        [True, True],
        [True, False],
    ]
    for keys in (
        Keys(co, np.array([3, LINEAR]), handles),  # an easing (SINE)
        Keys(co, np.array([BEZIER, LINEAR]), handles, has_modifiers=True),
        Keys(np.zeros((0, 2)), np.zeros(0, dtype=int), (np.zeros((0, 2)), np.zeros((0, 2)))),
    ):
        assert not keys.supported
        with pytest.raises(ValueError, match=r"FCurve\.evaluate"):
            fm.evaluate(keys, [1.0])


@given(
    st.floats(-1000.0, 1000.0),
    st.floats(0.01, 50.0),
    st.lists(st.floats(-20.0, 20.0), min_size=4, max_size=4),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
    st.floats(0.0, 1.0),
)
@example(0.0, 1.0, [0.0, 0.0, 0.0, 0.0], 1.401298464324817e-45, 0.0, 0.5)  # a denormal handle
def test_one_bezier_segment_hypothesis(start, span, values, h1, h2, where):
    # Handles from zero length to twice the span (then shortened).
    x = _f32([start, start + 2.0 * span * h1, start + span - 2.0 * span * h2, start + span])
    t = float(_f32(x[0] + where * (x[3] - x[0])))
    if not (x[0] + 2 * EXACT_THRESHOLD < t < x[3] - 2 * EXACT_THRESHOLD):
        return
    # Blender solves the cubic x(s) = t by Cardano's formula in float64 from float32
    # coefficients: a cubic term of rounding size next to a quadratic one (a nearly quadratic
    # x(s)) cancels digits away, in Blender as here (by 1e-3 frames, found by hypothesis).
    # The independent reference is the exact curve: compare where the solve is well posed.
    xc, _ = _corrected(x, x)
    c2, c3 = 3.0 * (xc[0] - 2.0 * xc[1] + xc[2]), xc[3] - xc[0] + 3.0 * (xc[1] - xc[2])
    if 0.0 < abs(c3) < 1e-3 * abs(c2):
        return
    got = fm.evaluate_segments([t], x[None], _f32(values)[None])[0]
    # The float32 frames round the cubic's coefficients by ulps of the frames themselves,
    # |start| eps against a span: the root moves by that relative to the span (a segment of 2
    # frames at frame 124 missed the bound without this term, in Blender's arithmetic and the
    # old code's alike).
    tol = 64.0 * F32_EPS * (1.0 + max(abs(v) for v in values)) * (1.0 + abs(start) / span)
    assert _conditioned_error(got, _reference_bezier(t, x, values), x[3] - x[0]) <= tol


def test_supported_each_is_supported_of_each_curve():
    """Many curves checked together give each curve's own `Keys.supported`, with one curve
    of an easing code (whose neighbours stay numpy's), one without keys and one with
    modifiers among them; and each curve remembers it."""
    rng = np.random.default_rng(11)

    def batch():
        curves = [_random_curve(rng, 6, (CONSTANT, LINEAR, BEZIER)) for _ in range(5)]
        eased = _random_curve(rng, 6)
        eased.interpolation[3] = BEZIER + 3  # an easing: only FCurve.evaluate is exact
        empty = Keys(np.empty((0, 2)), np.empty(0, dtype=np.int32), (np.empty((0, 2)),) * 2)
        modified = _random_curve(rng, 4)
        modified.has_modifiers = True
        return [*curves, empty, modified], [*curves, eased, empty, modified]

    for curves in batch():
        expected = [
            Keys(k.co, k.interpolation, k.handles, has_modifiers=k.has_modifiers).supported
            for k in curves
        ]
        assert fm.supported_each(curves) == expected
        assert [k.supported for k in curves] == expected
        assert False in expected and True in expected
    assert fm.supported_each([]) == []
