import math

import numpy as np
import pytest
from conftest import TWO_PI, random_unit
from hypothesis import example, given
from hypothesis import strategies as st

import rq_rotation as rq


def same_up_to_sign(a, b):
    return np.minimum(np.abs(a - b).max(-1), np.abs(a + b).max(-1))


def test_reparameterize(rng):
    u = random_unit(rng, 100)
    mags = rng.uniform(0, 60, 100)
    v = u * mags[:, None]
    r = rq.reparameterize(v)
    assert np.all(np.linalg.norm(r, axis=1) <= math.pi + 1e-12)
    assert same_up_to_sign(rq.rq_to_quat(r), rq.rq_to_quat(v)).max() < 1e-13
    small = mags <= math.pi
    np.testing.assert_array_equal(r[small], v[small])
    assert rq.reparameterize(np.zeros(3)).tolist() == [0, 0, 0]


def test_shell_distance():
    u = np.array([0.0, 0.0, 1.0])
    for mag, dist in [
        (0.0, TWO_PI),
        (1.0, TWO_PI - 1),
        (TWO_PI, 0.0),
        (7.0, 7.0 - TWO_PI),
        (3 * math.pi + 0.1, 2 * TWO_PI - 3 * math.pi - 0.1),
    ]:
        assert rq.shell_distance(mag * u) == pytest.approx(dist, abs=1e-15)
    v = np.array([0.0, 3.0, 3.2, 7.0, 3 * math.pi + 0.1, 100 * math.pi])[:, None] * u
    np.testing.assert_array_equal(rq.shell_index(v), [0, 0, 1, 1, 2, 50])
    assert rq.shell_index(v).dtype == np.int64


quats = st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(
    lambda q: np.linalg.norm(q) > 1e-3
)


@given(quats)
@example([0.0, 0.0, 2.225073858507e-311, 1.0])  # a denormal cos(swing/2): no warning, exact
def test_swing_twist_round_trip(q):
    q = np.array(q) / np.linalg.norm(q)
    sw, tw = rq.quat_to_swing_twist(q)
    assert np.linalg.norm(sw) <= math.pi + 1e-12
    assert -math.pi < tw <= math.pi
    assert same_up_to_sign(rq.swing_twist_to_quat(sw, tw), q) < 1e-13


def test_swing_twist_special_cases():
    # pure twist, pure swing, swing of exactly pi
    sw, tw = rq.quat_to_swing_twist(rq.rq_to_quat([0, 1.2, 0]))
    np.testing.assert_allclose(sw, [0, 0], atol=1e-16)
    assert tw == pytest.approx(1.2)
    sw, tw = rq.quat_to_swing_twist(rq.rq_to_quat([0.3, 0, -0.4]))
    np.testing.assert_allclose(sw, [0.3, -0.4], atol=1e-15)
    assert tw == 0
    sw, tw = rq.quat_to_swing_twist([0.0, 0.6, 0.0, 0.8])
    assert tw == 0.0 and np.linalg.norm(sw) == pytest.approx(math.pi)
    # twist of pi lands on +pi
    _, tw = rq.quat_to_swing_twist([0.0, 0.0, -1.0, 0.0])
    assert tw == pytest.approx(math.pi)
    # the swing carries no twist: its axis is perpendicular to Y
    qs = rq.swing_twist_to_quat([0.7, -0.2], 0.0)
    assert qs[2] == 0.0


def test_swing_twist_near(rng):
    q = rng.normal(size=(200, 4))
    sw, tw = rq.quat_to_swing_twist(q)
    n = np.linalg.norm(sw, axis=1, keepdims=True)
    ref_sw = sw - TWO_PI * sw / n
    ref_tw = tw + 2 * TWO_PI
    s2, t2 = rq.quat_to_swing_twist(q, near=(ref_sw + 0.01, ref_tw - 0.01))
    assert np.abs(s2 - ref_sw).max() < 1e-12
    assert np.abs(t2 - ref_tw).max() < 1e-12
    # a pure twist: the identity swing moves to the shell point closest to the reference
    s4, t4 = rq.quat_to_swing_twist(rq.rq_to_quat([0.0, 1.2, 0.0]), near=([0.0, 7.0], 1.0))
    np.testing.assert_allclose(s4, [0.0, TWO_PI], atol=1e-15)
    assert t4 == pytest.approx(1.2)
    # at swing pi the reference twist is used
    s3, t3 = rq.quat_to_swing_twist([0.0, 0.6, 0.0, 0.8], near=([0.0, 0.0], 1.0))
    assert t3 == pytest.approx(1.0)
    assert same_up_to_sign(rq.swing_twist_to_quat(s3, t3), np.array([0, 0.6, 0, 0.8])) < 1e-15


def test_swing_twist_sequence_continuous():
    t = np.linspace(0, 4 * math.pi, 40)
    sw_true = np.stack([t * 0.6, t * 0.3], axis=1)
    tw_true = 0.9 * t
    q = rq.swing_twist_to_quat(sw_true, tw_true)
    sw, tw = rq.quat_to_swing_twist(q)
    cs, ct = rq.swing_twist_sequence_continuous(sw, tw)
    cs0, ct0 = rq.swing_twist_sequence_continuous(sw_true[:1].repeat(1, 0), tw_true[:1])
    assert np.abs(ct - tw_true).max() < 1e-12
    assert np.abs(cs - sw_true).max() < 1e-12
    assert cs0.shape == (1, 2) and ct0.shape == (1,)


def brute_force_projection(p, a, b, n=200001):
    phi = np.linspace(0, 2 * math.pi, n)
    bx, bz = a * np.cos(phi), b * np.sin(phi)
    d = np.hypot(bx - p[0], bz - p[1])
    return d.min()


@pytest.mark.parametrize("a, b", [(1.0, 0.5), (0.3, 1.2), (0.8, 0.8)])
def test_ellipse_projection_against_brute_force(a, b, rng):
    pts = rng.normal(0, 1.5, (40, 2))
    proj = rq.clamp_swing_ellipse(pts, a, b)
    for p, c in zip(pts, proj, strict=True):
        inside = (p[0] / a) ** 2 + (p[1] / b) ** 2 <= 1
        if inside:
            assert np.array_equal(c, p)
        else:
            assert (c[0] / a) ** 2 + (c[1] / b) ** 2 == pytest.approx(1.0, abs=1e-12)
            d = np.hypot(*(c - p))
            assert d <= brute_force_projection(p, a, b) + 1e-9
            assert d >= brute_force_projection(p, a, b) - 1e-6
            # the closest point: p - c along the outward normal (c_x/a^2, c_z/b^2) at c
            n = np.array([c[0] / a**2, c[1] / b**2])
            cross = (p - c)[0] * n[1] - (p - c)[1] * n[0]
            assert abs(cross) <= 1e-12 * np.linalg.norm(p - c) * np.linalg.norm(n)
            assert np.dot(p - c, n) > 0
    assert np.all(rq.swing_in_ellipse(proj, a, b, tol=1e-12))


def test_ellipse_degenerate_and_scaling():
    np.testing.assert_allclose(rq.clamp_swing_ellipse([2.0, 3.0], 0.0, 1.0), [0.0, 1.0])
    np.testing.assert_allclose(rq.clamp_swing_ellipse([2.0, 0.3], 0.5, 0.0), [0.5, 0.0])
    np.testing.assert_allclose(rq.clamp_swing_ellipse([2.0, 3.0], 0.0, 0.0), [0.0, 0.0])
    s = rq.scale_swing_into_ellipse([[2.0, 0.0], [0.1, 0.1]], 1.0, 0.5)
    np.testing.assert_allclose(s, [[1.0, 0.0], [0.1, 0.1]])
    np.testing.assert_allclose(rq.clamp_twist([-3.0, 0.1, 3.0], -1.0, 2.0), [-1.0, 0.1, 2.0])


def test_radial_scaling_with_a_zero_semi_axis_is_the_formulas_limit():
    """a = 0: a swing off the segment scales to zero (what r/max(1, |r/a|) tends to); on the
    segment it scales radially onto [-b, b]; a = b = 0 allows nothing. No warnings."""
    swings = [[1.0, 1.0], [0.0, 3.0], [0.0, 0.2], [1e-300, 0.0], [0.0, 0.0]]
    with np.errstate(all="raise"):
        scaled = rq.scale_swing_into_ellipse(swings, 0.0, 1.0)
        nothing = rq.scale_swing_into_ellipse(swings, 0.0, 0.0)
    np.testing.assert_array_equal(scaled, [[0, 0], [0, 1.0], [0, 0.2], [0, 0], [0, 0]])
    np.testing.assert_array_equal(nothing, np.zeros((5, 2)))
    tiny = 1e-12  # the drivers' stand-in for a zero semi-axis
    near_limit = rq.scale_swing_into_ellipse(swings, tiny, 1.0)
    np.testing.assert_allclose(near_limit, scaled, atol=1e-12)


def test_negative_semi_axes_act_as_zero_in_every_ellipse_function():
    swings = np.array([[1.0, 1.0], [0.0, 3.0], [0.0, 0.2], [-0.4, 0.0], [0.0, 0.0]])
    for negative in (-1e-9, -0.5, -10.0):
        for a, b in ((negative, 1.0), (1.0, negative), (negative, negative)):
            za, zb = max(a, 0.0), max(b, 0.0)
            np.testing.assert_array_equal(
                rq.scale_swing_into_ellipse(swings, a, b),
                rq.scale_swing_into_ellipse(swings, za, zb),
            )
            np.testing.assert_array_equal(
                rq.clamp_swing_ellipse(swings, a, b), rq.clamp_swing_ellipse(swings, za, zb)
            )
            np.testing.assert_array_equal(
                rq.swing_in_ellipse(swings, a, b), rq.swing_in_ellipse(swings, za, zb)
            )
    # a hinge: the held coordinate is 0 whatever the swing
    assert np.all(rq.clamp_swing_ellipse(swings, -1.0, 1.0)[:, 0] == 0.0)
    assert np.all(rq.scale_swing_into_ellipse(swings, 1.0, -1.0)[:, 1] == 0.0)


def test_inverted_twist_range_holds_the_twist_at_its_first_value():
    twists = np.linspace(-4.0, 4.0, 81)
    np.testing.assert_array_equal(rq.clamp_twist(twists, 1.0, 0.5), np.full(81, 1.0))
    np.testing.assert_array_equal(rq.clamp_twist(twists, 0.3, -2.0), np.full(81, 0.3))
    # T(t, l, h) = min(max(t, l), max(l, h)); the usual clamp when l <= h
    rng = np.random.default_rng(4)
    t, lo, hi = rng.uniform(-5.0, 5.0, (3, 1000))
    np.testing.assert_array_equal(
        rq.clamp_twist(t, lo, hi), np.minimum(np.maximum(t, lo), np.maximum(lo, hi))
    )
    ordered = lo <= hi
    np.testing.assert_array_equal(rq.clamp_twist(t, lo, hi)[ordered], np.clip(t, lo, hi)[ordered])


def test_clamp_twist_is_continuous_in_the_limits():
    """Moving hi through lo (the range turning upside down) moves the result continuously."""
    his = np.linspace(2.0, 0.0, 2001)  # through lo = 1
    for t in (-3.0, 0.5, 1.0, 1.5, 3.0):
        out = rq.clamp_twist(np.full_like(his, t), 1.0, his)
        assert np.max(np.abs(np.diff(out))) <= np.max(np.abs(np.diff(his))) + 1e-15
    los = np.linspace(-1.0, 3.0, 2001)  # through hi = 1
    for t in (-3.0, 0.5, 1.0, 1.5, 3.0):
        out = rq.clamp_twist(np.full_like(los, t), los, 1.0)
        assert np.max(np.abs(np.diff(out))) <= np.max(np.abs(np.diff(los))) + 1e-15


def test_effective_limits():
    a, b, lo, hi = rq.effective_limits([-1.0, 0.5], 2.0, [1.0, -1.0], [0.5, 2.0])
    np.testing.assert_array_equal(a, [0.0, 0.5])
    np.testing.assert_array_equal(b, 2.0)
    np.testing.assert_array_equal(lo, [1.0, -1.0])
    np.testing.assert_array_equal(hi, [1.0, 2.0])
    with pytest.raises(ValueError, match="b contains NaN"):
        rq.effective_limits(1.0, math.nan, 0.0, 1.0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: rq.clamp_twist(0.5, math.nan, 1.0), "lo contains NaN"),
        (lambda: rq.clamp_twist(0.5, 0.0, math.inf), "hi contains NaN"),
        (lambda: rq.clamp_swing_ellipse([1.0, 1.0], math.nan, 1.0), "a contains NaN"),
        (lambda: rq.swing_in_ellipse([1.0, 1.0], 1.0, 1.0, tol=math.nan), "tol contains NaN"),
        (
            lambda: rq.quat_to_swing_twist([1.0, 0, 0, 0], near=([0.0, 0.0, 0.0], 0.0)),
            r"near swing must have shape \(\.\.\., 2\)",
        ),
        (lambda: rq.swing_twist_to_quat([0.0, 0.0], [math.nan]), "twist contains NaN"),
    ],
)
def test_limits_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_swing_twist_of_a_single_quaternion_is_a_single_pair_with_or_without_near():
    q = rq.rq_to_quat([0.1, 0.2, 0.3])
    for swing, twist in (
        rq.quat_to_swing_twist(q),
        rq.quat_to_swing_twist(q, near=([0.0, 0.0], 0.0)),
    ):
        assert swing.shape == (2,)
        assert np.ndim(twist) == 0 and isinstance(twist, np.floating)
    swings, twists = rq.quat_to_swing_twist(np.stack([q, q]))
    assert swings.shape == (2, 2) and twists.shape == (2,)
