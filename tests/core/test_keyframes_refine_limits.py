# SPDX-License-Identifier: GPL-3.0-or-later
"""`keyframes.refine` and `keyframes.limits`: refined grids are dense enough for the chain
(measured with ``quat_angle_between`` and the channels' own change), and values fitted to
joint limits are inside them, pose-preserving where they say so and otherwise the closest
point (against a brute-force search over the equivalents)."""

import math

import numpy as np
import pytest
from conftest import TWO_PI, random_unit
from hypothesis import example, given
from hypothesis import strategies as st

import rq_rotation as rq
from rq_rotation import modes
from rq_rotation.keyframes import continuity, limits, refine
from rq_rotation.keyframes.refine import MAX_STEP

# The modes whose channel bound is an upper bound (checked below for each).
CHANNEL_BOUND_MODES = sorted(refine.BOUNDING_MODES)


def _linear_source(times, values):
    """``evaluate(t) -> (m, k)``: channel values interpolated linearly between keys."""

    def evaluate(t):
        t = np.asarray(t, dtype=np.float64)
        return np.stack([np.interp(t, times, column) for column in values.T], axis=1)

    return evaluate


def _random_keys(mode, rng, n):
    """Channel values (n, k) that move a lot between keys (several radians, past shells)."""
    if mode == "QUATERNION":
        return rng.normal(size=(n, 4))
    if mode == "AXIS_ANGLE":
        return np.concatenate([rng.uniform(-15.0, 15.0, (n, 1)), random_unit(rng, n)], axis=1)
    return rng.uniform(-12.0, 12.0, (n, 3))


def _channel_bound(mode, values):
    """The mode's bound of each step's rotation angle from its channels (N, k) -> (N - 1,):
    Euler, the sum of the changes; RQ, the vector's change in length; swing/twist, the
    swing's change in length plus the twist's."""
    delta = np.diff(values, axis=0)
    if mode == "RQ":
        return np.linalg.norm(delta, axis=1)
    if mode == "SWING_TWIST":
        return np.linalg.norm(delta[:, :2], axis=1) + np.abs(delta[:, 2])
    return np.abs(delta).sum(axis=1)


def _check_dense(mode, grid, values, q):
    """Every step of the grid turns at most MAX_STEP: in rotation, and (modes whose channels
    bound the rotation) in the mode's channel bound."""
    wide = np.diff(grid) >= 1e-3
    angle = rq.quat_angle_between(q[:-1], q[1:])
    assert angle[wide].max() <= MAX_STEP + 1e-12
    if mode in CHANNEL_BOUND_MODES:
        assert _channel_bound(mode, values)[wide].max() <= MAX_STEP + 1e-12


@pytest.mark.parametrize("mode", CHANNEL_BOUND_MODES)
def test_the_channel_bound_is_never_below_the_rotation_angle(mode, rng):
    # Steps of every size, from tiny to several turns, about random axes and past the shells.
    start = rng.uniform(-15.0, 15.0, (20000, 3))
    step = random_unit(rng, 20000) * np.exp(rng.uniform(-8.0, 2.5, (20000, 1)))
    values = np.empty((40000, 3))
    values[0::2], values[1::2] = start, start + step
    q = modes.values_to_quat(mode, values)
    angle = rq.quat_angle_between(q[0::2], q[1::2])
    bound = refine.channel_distances(mode, values[0::2], values[1::2])
    np.testing.assert_allclose(bound, _channel_bound(mode, values)[0::2], rtol=1e-14)
    assert (angle <= bound * (1.0 + 1e-12) + 1e-12).all()


@pytest.mark.parametrize("mode", ["QUATERNION", "AXIS_ANGLE"])
def test_channels_that_do_not_bound_the_angle_give_no_distance(mode):
    values = np.ones((2, 4))
    with pytest.raises(ValueError, match="do not bound the rotation angle"):
        refine.channel_distances(mode, values, values)


def test_an_rq_spin_about_a_tilted_axis_needs_fewer_samples_than_its_channel_sum():
    # A turn of 5.9 pi about (1, 1, 1) / sqrt(3): the channels sum sqrt(3) times its length.
    times = np.array([0.0, 10.0])
    keys = np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]) * (5.9 * np.pi / np.sqrt(3.0))
    grid, *_ = refine.refine_grid("RQ", times, _linear_source(times, keys))
    assert len(grid) - 1 == math.ceil(5.9 * np.pi / MAX_STEP)  # 24 steps, not 41


@pytest.mark.parametrize("mode", list(modes.MODES))
def test_refined_grids_keep_the_times_and_turn_at_most_max_step(mode, rng):
    times = np.cumsum(rng.uniform(0.5, 12.0, 8))
    keys = _random_keys(mode, rng, 8)
    evaluate = _linear_source(times, keys)
    grid, on_times, values, q = refine.refine_grid(mode, times, evaluate)
    assert (np.diff(grid) > 0).all()
    np.testing.assert_array_equal(grid[on_times], times)
    assert on_times.sum() == len(times)
    np.testing.assert_array_equal(values, evaluate(grid))
    np.testing.assert_allclose(q, modes.values_to_quat(mode, values), atol=1e-15)
    _check_dense(mode, grid, values, q)
    assert len(grid) > 3 * len(times)  # the keys move far: samples were added


@pytest.mark.parametrize("mode", CHANNEL_BOUND_MODES)
def test_a_source_turning_faster_than_its_channels_interpolate_is_refined_until_dense(mode):
    # A nonlinear source (a fast sine on every channel): one pass is not enough.
    times = np.array([0.0, 10.0, 20.0])

    def evaluate(t):
        t = np.asarray(t, dtype=np.float64)[:, None]
        return 3.0 * np.sin(t * [0.7, 1.1, 1.3]) + [0.0, 0.2, 0.4]

    grid, on_times, values, q = refine.refine_grid(mode, times, evaluate)
    np.testing.assert_array_equal(grid[on_times], times)
    _check_dense(mode, grid, values, q)


def test_a_source_that_jumps_is_refined_down_to_the_smallest_gap():
    # A step of 10 radians at frame 4.3: no grid makes that step small; refinement stops
    # where the gap around it is under 1e-3 frames, every other gap turning at most MAX_STEP.
    times = np.array([0.0, 10.0])

    def evaluate(t):
        t = np.asarray(t, dtype=np.float64)
        return np.stack([0.1 * t, 0.0 * t, np.where(t < 4.3, 0.0, 10.0)], axis=1)

    grid, on_times, values, q = refine.refine_grid("RQ", times, evaluate)
    np.testing.assert_array_equal(grid[on_times], times)
    _check_dense("RQ", grid, values, q)
    jump = np.flatnonzero(np.abs(np.diff(values[:, 2])) > 1.0)
    assert len(jump) == 1 and np.diff(grid)[jump[0]] < 1e-3


def test_a_grid_already_dense_is_kept_without_evaluating():
    times = np.arange(0.0, 50.0)
    values = np.stack([0.1 * times, np.sin(times / 7.0), 0.05 * times], axis=1)

    def evaluate(t):
        raise AssertionError("evaluated")

    at_times = (values, modes.values_to_quat("RQ", values))
    grid, on_times, got_values, _ = refine.refine_grid("RQ", times, evaluate, at_times)
    np.testing.assert_array_equal(grid, times)
    assert on_times.all()
    assert got_values is values


def test_extra_samples_by_hand():
    grid = np.array([0.0, 1.0, 2.0, 3.0, 3.0005, 4.0])
    steps = np.array([0.5, 1.0, 3.0, 3.0, 0.2])  # the fourth gap is 0.0005 frames
    values = np.zeros((6, 3))
    values[1:, 2] = np.cumsum(steps)
    q = modes.values_to_quat("RQ", values)
    extra = refine._extra_samples("RQ", grid, values, q)
    # ceil(step / MAX_STEP) - 1 samples, none in gaps under 1e-3 frames.
    assert extra.tolist() == [0, 1, 3, 0, 0]


@pytest.mark.parametrize(
    ("source", "target", "keys", "expected_end"),
    [
        ("RQ", "RQ", [[0.0, 0.0, 0.0], [0.0, 0.0, 2 * TWO_PI]], [0.0, 0.0, 2 * TWO_PI]),
        ("XYZ", "SWING_TWIST", [[0.0, 0.0, 0.0], [0.0, 2 * TWO_PI, 0.0]], [0.0, 0.0, 2 * TWO_PI]),
        ("XYZ", "RQ", [[0.0, 0.0, 0.3], [0.0, 0.0, 0.3 + 2 * TWO_PI]], [0, 0, 0.3 + 2 * TWO_PI]),
        ("SWING_TWIST", "XYZ", [[0.0, 0.0, 0.0], [2 * TWO_PI, 0.0, 0.0]], [2 * TWO_PI, 0, 0]),
    ],
)
def test_a_spin_of_720_degrees_between_two_keys_keeps_both_revolutions(
    source, target, keys, expected_end
):
    times = np.array([0.0, 10.0])
    keys = np.array(keys)
    _, on_times, values, q = refine.refine_grid(source, times, _linear_source(times, keys))
    near = modes.rotation_vectors(source, values[:1])
    out = continuity.continuous_values(target, q[None], near)[0]
    np.testing.assert_allclose(out[on_times][-1], expected_end, atol=1e-9)
    # Without the added samples both keys are the same rotation: the revolutions are lost.
    unrefined = continuity.continuous_values(target, q[on_times][None], near)[0]
    assert np.abs(unrefined[-1] - expected_end).max() > 1.0


def _inside(p, a, b):
    """``p`` in the filled ellipse with semi-axes a, b >= 0 (a segment or a point where one or
    both are zero)."""
    if a > 0.0 and b > 0.0:
        return (p[0] / a) ** 2 + (p[1] / b) ** 2 <= 1.0
    return (
        (a > 0.0 or p[0] == 0.0) and (b > 0.0 or p[1] == 0.0) and abs(p[0]) <= a and abs(p[1]) <= b
    )


def _fit_by_definition(values, swing_limit, twist_limit):
    """`fit_to_limits` from its docstring, by searching the equivalents one key at a time."""
    a, b, low, high = (float(x) for x in rq.effective_limits(*swing_limit, *twist_limit))
    fitted, moved = [], []
    for sx, sz, twist in values:
        ms = [m for m in range(-30, 31) if low <= twist + TWO_PI * m <= high]
        if ms:
            new_twist = twist + TWO_PI * min(ms, key=abs)
        else:
            new_twist = min(max(twist, low), high)
        length = math.hypot(sx, sz)
        if length == 0.0:
            swing, swing_ok = np.zeros(2), True
        else:
            u = np.array([sx, sz]) / length
            ks = [k for k in range(-30, 31) if _inside((length + TWO_PI * k) * u, a, b)]
            swing_ok = bool(ks)
            if ks:
                swing = (length + TWO_PI * min(ks, key=abs)) * u
            else:
                shortest = rq.reparameterize([sx, 0.0, sz])[[0, 2]]
                swing = rq.clamp_swing_ellipse(shortest, a, b)
        fitted.append([*swing, new_twist])
        moved.append(not (swing_ok and bool(ms)))
    return np.array(fitted), np.array(moved)


def _random_swing_twist(rng, n):
    swing = random_unit(rng, n)[:, [0, 2]]
    swing /= np.linalg.norm(swing, axis=1, keepdims=True)
    swing *= rng.uniform(0.0, 16.0, (n, 1))
    return np.concatenate([swing, rng.uniform(-20.0, 20.0, (n, 1))], axis=1)


def _check_fit(values, swing_limit, twist_limit):
    fitted, moved = limits.fit_to_limits(values, swing_limit, twist_limit)
    expected, expected_moved = _fit_by_definition(values, swing_limit, twist_limit)
    np.testing.assert_allclose(fitted, expected, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(moved, expected_moved)
    # Inside the limits as the drivers apply them: their clamps leave the values alone.
    a, b, low, high = (float(x) for x in rq.effective_limits(*swing_limit, *twist_limit))
    assert rq.swing_in_ellipse(fitted[:, :2], a, b, tol=1e-9).all()
    assert ((fitted[:, 2] >= low - 1e-12) & (fitted[:, 2] <= high + 1e-12)).all()
    np.testing.assert_allclose(rq.scale_swing_into_ellipse(fitted[:, :2], a, b), fitted[:, :2])
    # The pose is kept where nothing moved.
    q = modes.values_to_quat("SWING_TWIST", values)
    angle = rq.quat_angle_between(modes.values_to_quat("SWING_TWIST", fitted), q)
    assert angle[~moved].max(initial=0.0) < 1e-9
    assert (angle[moved] > 1e-9).all()  # a moved pose did change
    return fitted, moved


@pytest.mark.parametrize(
    ("swing_limit", "twist_limit"),
    [
        ((1.0, 0.5), (-0.5, 1.2)),
        ((2.5, 3.0), (-3.0, 2.0)),
        ((0.3, 2.0), (0.5, 0.9)),
        ((4.0, 1.0), (-7.0, 7.0)),
        ((1.0, 0.5), (1.2, -0.5)),  # inverted: the twist is held at 1.2
        ((-1.0, 0.7), (-0.5, 1.2)),  # a negative semi-axis acts as zero: a hinge about Z
        ((0.0, 0.0), (-0.5, 1.2)),  # no swing at all
    ],
)
def test_fit_to_limits_is_its_definition(swing_limit, twist_limit, rng):
    values = _random_swing_twist(rng, 200)
    fitted, moved = _check_fit(values, swing_limit, twist_limit)
    assert moved.any()
    if min(swing_limit) >= 1.0 and twist_limit[1] - twist_limit[0] >= 1.0:
        assert not moved.all()
    if twist_limit[0] > twist_limit[1]:
        assert (fitted[:, 2] == twist_limit[0]).all()
    if swing_limit[0] <= 0.0:
        assert (fitted[:, 0] == 0.0).all()


@pytest.mark.parametrize("a_or_b", [0, 1])
def test_a_hinge_keeps_swings_along_its_axis(a_or_b, rng):
    # Swing limits (0, 1) (or (1, 0), or a negative semi-axis): swings along the free axis
    # that have an equivalent on the segment keep their pose and are not reported as moved.
    swing_limit = [1.0, 1.0]
    swing_limit[a_or_b] = -0.5 if a_or_b else 0.0
    values = np.zeros((200, 3))
    values[:, 1 - a_or_b] = rng.uniform(-12.0, 12.0, 200)
    values[:, 2] = rng.uniform(-0.4, 0.4, 200)
    _, moved = _check_fit(values, swing_limit, (-0.5, 0.5))
    assert (~moved).sum() > 20


@given(
    st.lists(st.floats(-30.0, 30.0), min_size=3, max_size=3),
    st.floats(-1.0, 4.0),
    st.floats(-1.0, 4.0),
    st.floats(-8.0, 8.0),
    st.floats(-8.0, 8.0),
)
@example([0.0, 0.0, 0.0], 1.0, 1.0, -1.0, 1.0)
@example([1e-300, 0.0, 3.0], 0.0, 0.0, 1.0, 1.0)
@example([0.0, 1.0, 0.0], 0.0, 1e-281, 0.0, 0.0)  # the ratio's square overflowed: a warning
@example([0.5, 1.0, 0.0], 1e-320, 1.0, 0.0, 0.0)
@example([0.0, 1.15e-205, 0.0], 1.0, 2.4e-267, 0.0, 0.0)  # the closest point was NaN
def test_fit_to_limits_hypothesis(value, a, b, low, high):
    values = np.array([value])
    fitted, moved = limits.fit_to_limits(values, (a, b), (low, high))
    ea, eb, elow, ehigh = (float(x) for x in rq.effective_limits(a, b, low, high))
    assert rq.swing_in_ellipse(fitted[:, :2], ea, eb, tol=1e-9).all()
    assert elow - 1e-12 <= fitted[0, 2] <= ehigh + 1e-12
    if not moved[0]:
        q = modes.values_to_quat("SWING_TWIST", values)
        assert rq.quat_angle_between(modes.values_to_quat("SWING_TWIST", fitted), q)[0] < 1e-9


def test_the_closest_point_of_an_ellipse_with_a_tiny_semi_axis_is_finite():
    # A semi-axis whose square underflows: the projection's formula gave 0/0 (NaN), and the
    # ratios' squares overflowed with a warning.
    swing = np.array([[0.0, 1.15e-205], [0.5, 2.0], [3.0, -1e-300], [1e-310, 1e-310]])
    for a, b in ((1.0, 2.4e-267), (2.4e-267, 1.0), (1e-200, 1e-200), (1e-320, 1.0)):
        closest = rq.clamp_swing_ellipse(swing, a, b)
        assert np.isfinite(closest).all()
        assert (np.abs(closest[:, 0]) <= a).all() and (np.abs(closest[:, 1]) <= b).all()
        distance = np.linalg.norm(closest - swing, axis=1)
        exact_segment = np.stack([np.clip(swing[:, 0], -a, a), np.clip(swing[:, 1], -b, b)], 1)
        # within the tiny semi-axis of the closest point of the box around the ellipse
        assert (distance <= np.linalg.norm(exact_segment - swing, axis=1) + 2 * min(a, b)).all()


def test_shorten_swings_keeps_the_pose_and_caps_the_length(rng):
    values = _random_swing_twist(rng, 1000)
    short = limits.shorten_swings(values)
    length = np.hypot(values[:, 0], values[:, 1])
    long = length > limits.SWING_REACH
    assert long.any() and not long.all()
    np.testing.assert_array_equal(short[~long], values[~long])
    np.testing.assert_array_equal(short[:, 2], values[:, 2])
    assert (np.hypot(short[long, 0], short[long, 1]) <= math.pi + 1e-12).all()
    q = modes.values_to_quat("SWING_TWIST", values)
    assert rq.quat_angle_between(modes.values_to_quat("SWING_TWIST", short), q).max() < 1e-9
    assert limits.shorten_swings(np.zeros((0, 3))).shape == (0, 3)


def test_limits_restrict_nothing_by_hand():
    pi = math.pi
    assert limits.limits_restrict_nothing((pi, pi), (-pi, pi))
    assert limits.limits_restrict_nothing((10.0, 4.0), (-7.0, 9.0))
    assert not limits.limits_restrict_nothing((pi - 1e-9, pi), (-pi, pi))
    assert not limits.limits_restrict_nothing((pi, -pi), (-pi, pi))
    assert not limits.limits_restrict_nothing((pi, pi), (-pi + 1e-9, pi))
    assert not limits.limits_restrict_nothing((pi, pi), (pi, -pi))  # inverted: held at pi
