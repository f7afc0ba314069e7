"""The batched passes of ``rq_rotation.keyframes`` (issue 12) give exactly what their
one-curve, one-line counterparts give: stacked F-curve evaluation, refining many grids at
once, the SAMPLED reduction's steps."""

import numpy as np
import pytest

from rq_rotation import quat_angle_between
from rq_rotation.keyframes import fcurve_math
from rq_rotation.keyframes.fcurve_math import BEZIER, CONSTANT, LINEAR, Keys
from rq_rotation.keyframes.reduce import (
    SEED_FACTOR,
    SEED_STEP,
    add_worst_frames,
    changed_segments,
    evaluate_between_keys,
    rotation_errors,
    seed_keys,
    unchanged_keys,
)
from rq_rotation.keyframes.refine import _merge, _put_rows, refine_grid, refine_grids
from rq_rotation.modes import values_to_quat


def _random_keys(rng, n, interpolations=(BEZIER,), extrapolation=fcurve_math.EXTRAPOLATE_CONSTANT):
    """Keys with sorted (sub)frames and handles about a third of the way to the neighbours
    (some long enough to be shortened), float32 like Blender's."""
    times = np.cumsum(rng.uniform(0.5, 12.0, n)) + rng.uniform(-5.0, 5.0)
    values = rng.normal(0.0, 3.0, n)
    gaps = np.diff(times, prepend=times[0] - 5.0, append=times[-1] + 5.0)
    reach = rng.uniform(0.2, 1.3, (n, 2))
    left = np.stack([times - reach[:, 0] * gaps[:-1], values + rng.normal(0, 1, n)], axis=1)
    right = np.stack([times + reach[:, 1] * gaps[1:], values + rng.normal(0, 1, n)], axis=1)
    f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
    return Keys(
        co=f32(np.stack([times, values], axis=1)),
        interpolation=rng.choice(np.array(interpolations, dtype=np.int32), n),
        handles=(f32(left), f32(right)),
        extrapolation=extrapolation,
    )


@pytest.mark.parametrize("seed", range(4))
def test_stacked_evaluation_is_each_curves_evaluation(seed):
    rng = np.random.default_rng(seed)
    curves = [
        _random_keys(
            rng,
            int(rng.integers(1, 12)),
            (BEZIER, LINEAR, CONSTANT) if i % 2 else (BEZIER,),
            i % 3 == 0,
        )
        for i in range(25)
    ]
    stack = fcurve_math.stack(curves)
    queries = []
    for index, keys in enumerate(curves):
        low, high = keys.times[0] - 4.0, keys.times[-1] + 4.0
        t = np.concatenate([rng.uniform(low, high, 40), keys.times, keys.times + 5e-5])
        queries.append((np.full(len(t), index), rng.permutation(t)))
    curve = np.concatenate([c for c, _ in queries])
    t = np.concatenate([t for _, t in queries])
    got = fcurve_math.evaluate_stacked(stack, curve, t)
    want = np.concatenate([fcurve_math.evaluate(curves[c[0]], t) for c, t in queries])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("shared_handles", [True, False])
def test_stacks_keyed_together_evaluate_together_as_each_alone(shared_handles):
    # Three channels of 20 curves keyed at the same frames (interpolation and extrapolation
    # too), other values; their handles at the same frames or not.
    rng = np.random.default_rng(11)
    base = [
        _random_keys(rng, int(rng.integers(1, 12)), (BEZIER, LINEAR, CONSTANT), i % 3 == 0)
        for i in range(20)
    ]
    channels = []
    for _ in range(3):
        curves = []
        for keys in base:
            left, right = (h.copy() for h in (keys.handle_left, keys.handle_right))
            left[:, 1] += rng.normal(0, 1, len(left))
            right[:, 1] += rng.normal(0, 1, len(right))
            if not shared_handles:
                left[:, 0] -= rng.uniform(0, 0.5, len(left)).astype(np.float32)
            co = keys.co.copy()
            co[:, 1] = rng.normal(0.0, 3.0, len(co)).astype(np.float32)
            curves.append(Keys(co, keys.interpolation, (left, right), keys.extrapolation))
        channels.append(fcurve_math.stack(curves))
    curve = rng.integers(0, 20, 600)
    t = rng.uniform(-10.0, 80.0, 600)
    got = fcurve_math.evaluate_stacked_together(channels, curve, t)
    for j, stack in enumerate(channels):
        np.testing.assert_array_equal(got[:, j], fcurve_math.evaluate_stacked(stack, curve, t))
        for c in range(20):  # and each stack's evaluation is each curve's
            mine = curve == c
            np.testing.assert_array_equal(
                got[mine, j], fcurve_math.evaluate(stack.curves[c], t[mine])
            )


def test_stacks_evaluated_together_again_and_again_as_each_time_anew():
    # One StacksTogether evaluated first only inside LINEAR segments (its segments' table
    # then has no handles), then anywhere (with them), then at its own keys: each time
    # what a fresh evaluation gives.
    rng = np.random.default_rng(12)
    base = [_random_keys(rng, 8, (LINEAR, BEZIER)) for _ in range(10)]
    channels = [
        fcurve_math.stack(
            [
                Keys(
                    np.stack([k.times, rng.normal(0.0, 2.0, 8).astype(np.float32)], axis=1),
                    k.interpolation,
                    (k.handle_left, k.handle_right),
                )
                for k in base
            ]
        )
        for _ in range(2)
    ]
    together = fcurve_math.StacksTogether(channels)
    linear = [
        (c, 0.5 * (k.times[i] + k.times[i + 1]))
        for c, k in enumerate(base)
        for i in range(7)
        if k.interpolation[i] == LINEAR
    ]
    anywhere = (rng.integers(0, 10, 300), rng.uniform(-10.0, 80.0, 300))
    own = (np.repeat(np.arange(10), 8), np.concatenate([k.times for k in base]))
    for curve, t in (np.array(linear).T, anywhere, own):
        curve = curve.astype(np.int64)
        np.testing.assert_array_equal(
            fcurve_math.evaluate_stacked_together(together, curve, t),
            fcurve_math.evaluate_stacked_together(channels, curve, t),
        )


def test_a_stack_reads_unread_handles_in_place_and_keeps_read_ones():
    # Curves that write their float32 handles into the stack's arrays (as Blender's bulk read
    # does) and one whose handles were read already: the same values as stacking them read.
    rng = np.random.default_rng(5)
    curves = [_random_keys(rng, int(rng.integers(2, 9))) for _ in range(4)]
    writes = []

    def writer(keys, i):
        def read_handles(left, right):
            writes.append(i)
            left[:] = keys.handle_left.astype(np.float32)
            right[:] = keys.handle_right.astype(np.float32)

        return read_handles

    def unreadable():
        raise AssertionError("read through the float64 copy")

    lazy = [
        Keys(k.co, k.interpolation, unreadable, read_handles=writer(k, i))
        for i, k in enumerate(curves)
    ]
    lazy[2] = Keys(curves[2].co, curves[2].interpolation, curves[2].handles, read_handles=None)
    lazy[3] = Keys(curves[3].co, curves[3].interpolation, curves[3].handles)
    lazy[3].read_handles = writer(curves[3], 3)
    assert lazy[3].handle_left is curves[3].handle_left  # read: not read again
    stack = fcurve_math.stack(lazy)
    read = fcurve_math.stack(curves)
    for got, want in (
        (stack.handle_left, read.handle_left),
        (stack.handle_right, read.handle_right),
    ):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
    assert writes == [0, 1]
    curve = rng.integers(0, 4, 200)
    t = rng.uniform(-10.0, 60.0, 200)
    np.testing.assert_array_equal(
        fcurve_math.evaluate_stacked(stack, curve, t),
        fcurve_math.evaluate_stacked(fcurve_math.stack(curves), curve, t),
    )


def test_stacked_evaluation_at_the_keys_gives_their_values():
    rng = np.random.default_rng(7)
    curves = [_random_keys(rng, 6) for _ in range(3)]
    stack = fcurve_math.stack(curves)
    curve = np.repeat(np.arange(3), 6)
    t = np.concatenate([k.times for k in curves])
    got = fcurve_math.evaluate_stacked(stack, curve, t)
    np.testing.assert_array_equal(got, np.concatenate([k.values for k in curves]))


def test_stack_refuses_what_only_blender_evaluates():
    keys = Keys(np.array([[1.0, 0.0]]), np.array([5]), (np.zeros((1, 2)),) * 2)
    with pytest.raises(ValueError, match=r"FCurve\.evaluate"):
        fcurve_math.stack([keys])


def test_refining_many_lines_is_refining_each():
    rng = np.random.default_rng(3)
    lines = []
    for _ in range(6):
        times = np.cumsum(rng.integers(3, 30, 8)).astype(np.float64)
        slopes = rng.normal(0.0, 0.8, 3)
        lines.append((times, slopes))

    def values_at(i, t):
        _, slopes = lines[i]
        return np.sin(np.asarray(t)[:, None] * slopes * 0.3) * 9.0 + slopes

    line = np.concatenate([np.full(len(times), i) for i, (times, _) in enumerate(lines)])
    times = np.concatenate([times for times, _ in lines])
    values = np.concatenate([values_at(i, t) for i, (t, _) in enumerate(lines)])

    def evaluate(which, t):
        out = np.empty((len(t), 3))
        for i in np.unique(which):
            out[which == i] = values_at(i, t[which == i])
        return out

    got = refine_grids("RQ", line, times, values, values_to_quat("RQ", values), evaluate)
    for i, (t, _) in enumerate(lines):
        mine = got[0] == i
        want = refine_grid("RQ", t, lambda s, i=i: values_at(i, s))
        assert mine.sum() > len(t)  # the spins needed samples between the times
        for part, expected in zip(got[1:], want, strict=True):
            np.testing.assert_array_equal(part[mine], expected)


def test_add_worst_frames_keeps_the_worst_of_each_gap_over_the_tolerance():
    # Two tracks end to end: frames 0-5 and 6-9, ends kept.
    kept = np.array([1, 0, 0, 0, 0, 1, 1, 0, 0, 1], dtype=bool)
    error = np.array([0, 0.5, 2.0, 2.0, 0.1, 0, 0, 0.2, 0.3, 0])
    new, over = add_worst_frames(kept, error, 0.4)
    np.testing.assert_array_equal(np.flatnonzero(new), [0, 2, 5, 6, 9])  # first of equals
    np.testing.assert_array_equal(np.flatnonzero(over), [1, 2, 3])
    same, none = add_worst_frames(new, np.zeros(10), 0.4)
    np.testing.assert_array_equal(same, new)
    assert not none.any()


def test_add_worst_frames_splits_a_gap_far_over_the_tolerance_evenly():
    # One gap of 100 frames whose worst error is 500x the tolerance: (500)^(1/4) -> 5 pieces.
    kept = np.zeros(101, dtype=bool)
    kept[[0, 100]] = True
    error = np.full(101, 40.0)
    error[kept] = 0.0
    error[33] = 50.0
    new, _ = add_worst_frames(kept, error, 0.1)
    np.testing.assert_array_equal(np.flatnonzero(new), [0, 20, 33, 40, 60, 80, 100])
    # A gap just over the tolerance only gets its worst frame.
    error[error > 0] = 0.2
    error[70] = 0.3
    new, _ = add_worst_frames(kept, error, 0.1)
    np.testing.assert_array_equal(np.flatnonzero(new), [0, 70, 100])


@pytest.mark.parametrize("mode", ["RQ", "SWING_TWIST", "ZXY", "QUATERNION"])
def test_rotation_errors_are_exact_wherever_they_may_be_over_the_tolerance(mode):
    """`rotation_errors` computes angles only where the channel bound may exceed the
    tolerance: there they are the exact angles, elsewhere within the tolerance, so
    `add_worst_frames` keeps the same frames as with every angle."""
    rng = np.random.default_rng(3)
    n, tolerance = 4000, 0.01
    width = 4 if mode == "QUATERNION" else 3
    stored = rng.normal(size=(n, width)) * rng.choice([0.3, 2.0, 9.0], size=(n, 1))
    # Off by tiny to large amounts, some right at the tolerance.
    off = rng.normal(size=(n, width)) * rng.choice([1e-6, 3e-3, 5e-3, 0.1, 1.0], size=(n, 1))
    values = stored + off
    source = values_to_quat(mode, stored)
    exact = quat_angle_between(values_to_quat(mode, values), source)
    errors = rotation_errors(mode, values, stored, source, tolerance)
    may_be_over = errors > tolerance - 1e-12
    np.testing.assert_array_equal(errors[may_be_over], exact[may_be_over])
    assert (errors[~may_be_over] < tolerance).all() and (exact[~may_be_over] < tolerance).all()
    assert 0 < (~may_be_over).sum() < n  # both kinds were there
    assert (exact > tolerance).sum() > 100
    kept = np.zeros(n, dtype=bool)
    kept[::50] = kept[-1] = True
    for got, want in zip(
        add_worst_frames(kept, errors, tolerance),
        add_worst_frames(kept, exact, tolerance),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


def test_seed_keys_space_keys_by_the_fourth_difference_per_track():
    # Track A (frames 0-49) moves linearly: only its ends. Track B (frames 50-129) has a
    # fourth difference c everywhere, c / tolerance such that a spline needs a key every 8
    # frames: (SEED_FACTOR * c / tolerance) ** (1/4) = 1/8.
    tolerance = 0.01
    c = tolerance * 8.0**-4 / SEED_FACTOR
    t = np.arange(80.0)
    values = np.concatenate([np.linspace(0, 3, 50), c * t**4 / 24])[:, None]
    first = np.zeros(130, dtype=bool)
    first[[0, 50]] = True
    kept = seed_keys(values, first, tolerance)
    assert np.flatnonzero(kept[:50]).tolist() == [0, 49]
    seeds = np.flatnonzero(kept[50:])
    assert seeds[0] == 0 and seeds[-1] == 79
    np.testing.assert_allclose(np.diff(seeds[1:-1]), 8, atol=1)
    assert len(seeds) == 2 + (80 - 4 * SEED_STEP) // 8  # none within 2 steps of the ends


def test_changed_segments_marks_frames_next_to_changed_or_new_keys():
    kept = np.array([1, 0, 1, 0, 0, 1], dtype=bool)  # keys at frames 0, 2, 5
    assert not changed_segments(kept, np.ones(3, dtype=bool)).any()
    # the middle key changed: both of its segments
    np.testing.assert_array_equal(
        changed_segments(kept, np.array([1, 0, 1], dtype=bool)), [0, 1, 0, 1, 1, 0]
    )
    # the last key is new: its segment
    np.testing.assert_array_equal(
        changed_segments(kept, np.array([1, 1, 0], dtype=bool)), [0, 0, 0, 1, 1, 0]
    )


def test_unchanged_keys_are_old_keys_with_the_same_handle_bits():
    """Keys of the previous pass (found among new ones, in two tracks' rows) whose handles
    have the same bits, for c = 3 and 4 channels: a handle moved by one ulp, a -0.0 for 0.0
    and a new key count as changed; a NaN handle the same as before stays."""
    rng = np.random.default_rng(5)
    for c in (3, 4):
        old_keyed = np.array([0, 4, 9, 10, 15, 19])
        old_left = rng.normal(size=(6, 2, c)).astype(np.float32)
        old_right = rng.normal(size=(6, 2, c)).astype(np.float32)
        old_left[3, 1, 0] = 0.0
        old_right[5, 0, c - 1] = np.nan
        keyed = np.array([0, 2, 4, 9, 10, 13, 15, 19])  # new keys at 2 and 13
        old_at = [0, None, 1, 2, 3, None, 4, 5]
        left = rng.normal(size=(8, 2, c)).astype(np.float32)
        right = rng.normal(size=(8, 2, c)).astype(np.float32)
        for row, at in enumerate(old_at):
            if at is not None:
                left[row], right[row] = old_left[at], old_right[at]
        assert unchanged_keys(keyed, left, right, None).tolist() == [False] * 8
        expected = [at is not None for at in old_at]
        got = unchanged_keys(keyed, left, right, (old_keyed, old_left, old_right))
        assert got.tolist() == expected  # (the NaN at row 7 has the same bits)
        left[3, 0, 1] = np.nextafter(left[3, 0, 1], np.float32(np.inf))
        right[6, 1, c - 1] = -right[6, 1, c - 1] if right[6, 1, c - 1] else 1.0
        left[4, 1, 0] = -0.0
        expected[3] = expected[6] = expected[4] = False
        got = unchanged_keys(keyed, left, right, (old_keyed, old_left, old_right))
        assert got.tolist() == expected


@pytest.mark.parametrize("shared", [True, False])
def test_evaluation_between_keys_is_blenders_evaluation(shared):
    rng = np.random.default_rng(11)
    t = np.arange(1.0, 41.0)
    kept = np.zeros(40, dtype=bool)
    kept[[0, 7, 8, 20, 39]] = True
    curves = []
    for _ in range(3):
        keys = _random_keys(rng, 5)
        times = t[kept]
        handle_shift = 0.0 if shared else rng.uniform(-0.2, 0.2)
        left, right = keys.handle_left.copy(), keys.handle_right.copy()
        gap = np.diff(times, prepend=times[0] - 3.0, append=times[-1] + 3.0)
        left[:, 0] = times - gap[:-1] / 3.0 + handle_shift
        right[:, 0] = times + gap[1:] / 3.0 + handle_shift
        co = np.stack([times, keys.values], axis=1)
        f32 = lambda a: a.astype(np.float32).astype(np.float64)  # noqa: E731
        curves.append(Keys(f32(co), keys.interpolation, (f32(left), f32(right))))
    keys = np.stack([k.co for k in curves], axis=2).astype(np.float32)
    left = np.stack([k.handle_left for k in curves], axis=2).astype(np.float32)
    right = np.stack([k.handle_right for k in curves], axis=2).astype(np.float32)
    frames = ~kept
    got = evaluate_between_keys(t, kept, keys, left, right, frames)
    want = np.stack([fcurve_math.evaluate(k, t[frames]) for k in curves], axis=1)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["RQ", "SWING_TWIST", "XYZ", "ZXY"])
def test_continuity_chain_of_many_lines_is_the_sequential_chain(mode):
    from rq_rotation import rq_to_quat
    from rq_rotation.keyframes import continuity
    from rq_rotation.modes import nearest_values

    rng = np.random.default_rng(2)
    lines, samples = 40, 80
    t = np.linspace(0.0, 1.0, samples)
    # Spins with axes that swing fast: the vectorized guess is wrong on some lines.
    angle = rng.uniform(5.0, 40.0, lines)[:, None] * t
    axis = (
        rng.normal(size=(lines, 1, 3))
        + rng.normal(size=(lines, 1, 3)) * np.sin(t * rng.uniform(5.0, 60.0, (lines, 1)))[..., None]
    )
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    q = rq_to_quat((axis * angle[..., None]).reshape(-1, 3)).reshape(lines, samples, 4)
    first = nearest_values(mode, q[:, 0], np.zeros((lines, 3)))
    converted = continuity._samples(mode, q)
    guess = continuity._guess(mode, converted, first)
    guess[:, 0] = first
    _, wrong = continuity._step_from_guess(mode, converted, guess)
    assert wrong.any(axis=1).sum() > 1  # several lines need the fix-ups, together
    got = continuity._chain(mode, q, first)
    want = np.empty_like(got)
    want[:, 0] = first
    for i in range(1, samples):
        want[:, i] = nearest_values(mode, q[:, i], want[:, i - 1])
    np.testing.assert_allclose(got, want, rtol=0.0, atol=10 * continuity.CHAIN_ATOL)


def _swing_twist_lines(lines, samples, seed):
    """Quaternions (lines, samples, 4) of slow swing/twist motions (steps of at most 0.15
    rad in swing and twist) whose swings pass pi."""
    from rq_rotation import swing_twist_to_quat

    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, samples)[None, :]
    direction = rng.uniform(0.0, 2.0 * np.pi, (lines, 1)) + rng.uniform(-1.0, 1.0, (lines, 1)) * t
    length = rng.uniform(0.5, 2.0, (lines, 1)) + rng.uniform(2.0, 6.0, (lines, 1)) * t
    swing = np.stack([np.cos(direction), np.sin(direction)], axis=-1) * length[..., None]
    twist = rng.uniform(-3.0, 3.0, (lines, 1)) + rng.uniform(-6.0, 6.0, (lines, 1)) * t
    return swing_twist_to_quat(swing, twist)


def test_swing_twist_chain_steps_under_the_sure_step_convert_nothing(monkeypatch):
    """A swing/twist step whose swing and twist each move less than `SURE_STEP` keeps the
    guess unconverted: here no sample is converted, and the chain is the sequential one."""
    from rq_rotation.keyframes import continuity
    from rq_rotation.modes import nearest_values

    q = _swing_twist_lines(6, 60, seed=3)
    first = nearest_values("SWING_TWIST", q[:, 0], np.zeros((6, 3)))
    want = np.empty(q.shape[:2] + (3,))
    want[:, 0] = first
    for i in range(1, q.shape[1]):
        want[:, i] = nearest_values("SWING_TWIST", q[:, i], want[:, i - 1])

    def refused(*_):
        raise AssertionError("a step under SURE_STEP was converted")

    monkeypatch.setattr(continuity, "nearest_values", refused)
    got = continuity._chain("SWING_TWIST", q, first)
    np.testing.assert_allclose(got, want, rtol=0.0, atol=10 * continuity.CHAIN_ATOL)


def test_swing_twist_chain_converts_a_swing_of_exactly_pi():
    """At a swing of exactly pi (``w = y = 0``) the conversion takes its reference's twist and
    the guess cannot: such a sample is converted however small its step."""
    from rq_rotation.keyframes import continuity
    from rq_rotation.modes import nearest_values

    q = _swing_twist_lines(4, 60, seed=5)
    at = 30
    q[:, at, [0, 2]] = 0.0  # the swing of pi nearest each line's own sample there
    q[:, at] /= np.linalg.norm(q[:, at], axis=-1, keepdims=True)
    first = nearest_values("SWING_TWIST", q[:, 0], np.zeros((4, 3)))
    want = np.empty(q.shape[:2] + (3,))
    want[:, 0] = first
    for i in range(1, q.shape[1]):
        want[:, i] = nearest_values("SWING_TWIST", q[:, i], want[:, i - 1])
    guess = continuity._guess("SWING_TWIST", q, first)
    assert (np.abs(guess[:, at] - want[:, at]).max(axis=1) > 0.1).all()  # the guess is off
    got = continuity._chain("SWING_TWIST", q, first)
    np.testing.assert_allclose(got, want, rtol=0.0, atol=10 * continuity.CHAIN_ATOL)


def test_quaternion_signs_aligned_along_many_lines_at_once():
    from rq_rotation import align_quat_signs

    rng = np.random.default_rng(9)
    q = rng.normal(size=(5, 30, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    got = align_quat_signs(q)
    for line, want in zip(q, got, strict=True):
        np.testing.assert_array_equal(align_quat_signs(line), want)
    assert (np.einsum("bni,bni->bn", got[:, 1:], got[:, :-1]) >= 0).all()
    with pytest.raises(ValueError, match="N, 4"):
        align_quat_signs(q[0, 0])


def test_held_segments_run_from_each_constant_key_to_the_next_key_of_its_curve():
    rng = np.random.default_rng(11)
    curves = [_random_keys(rng, n, (BEZIER, LINEAR, CONSTANT)) for n in (5, 1, 7, 4)]
    curves[1].interpolation[:] = CONSTANT  # a single key starts no segment
    curves[3].interpolation[-1] = CONSTANT  # nor does a last key
    curve, start, end = fcurve_math.held_segments(fcurve_math.stack(curves))
    want = [
        (c, keys.times[i], keys.times[i + 1])
        for c, keys in enumerate(curves)
        for i in range(len(keys.times) - 1)
        if keys.interpolation[i] == CONSTANT
    ]
    assert want  # the seed gives some
    assert list(zip(curve.tolist(), start.tolist(), end.tolist(), strict=True)) == want


def _chart_jump_source():
    """Two RQ lines on frames 0..20: line 0 turns about z by 0.2 rad per frame and, held
    from frame 6.5 to 6.5101, jumps to the equivalent vector 2 pi shorter (a spline layout's
    held jump); line 1 turns about x by 0.3 rad per frame without holds. Returns
    ``(evaluate, holds)``."""

    def evaluate(line, t):
        t = np.asarray(t, dtype=np.float64)
        angle = np.where(line == 0, 0.2, 0.3) * t
        held = (line == 0) & (t >= 6.5) & (t < 6.5101)
        angle = np.where(held, 0.2 * 6.5, angle)
        angle = np.where((line == 0) & (t >= 6.5101), angle - 2.0 * np.pi, angle)
        out = np.zeros((len(t), 3))
        out[line == 0, 2] = angle[line == 0]
        out[line == 1, 0] = angle[line == 1]
        return out

    holds = (np.array([0]), np.array([6.5]), np.array([6.5101]))
    return evaluate, holds


def test_held_stretches_get_their_ends_and_no_samples_and_chain_as_refined_jumps():
    from rq_rotation.keyframes.continuity import continuous_values
    from rq_rotation.keyframes.refine import MAX_STEP

    evaluate, holds = _chart_jump_source()
    line = np.repeat([0, 1], 21)
    times = np.tile(np.arange(21.0), 2)
    values = evaluate(line, times)
    q = values_to_quat("RQ", values)
    calls = []

    def counted(which, t):
        calls.append(len(t))
        return evaluate(which, t)

    got = refine_grids("RQ", line, times, values, q, counted, holds)
    held_calls, calls[:] = sum(calls), []
    plain = refine_grids("RQ", line, times, values, q, counted)
    g_line, grid, on_times, g_values, g_q = got
    np.testing.assert_array_equal(grid[on_times], times)
    mine = grid[g_line == 0]
    assert 6.5 in mine and 6.5101 in mine  # the stretch's ends, not times
    assert not ((mine > 6.5) & (mine < 6.5101)).any()
    np.testing.assert_array_equal(g_values, evaluate(g_line, grid))
    np.testing.assert_array_equal(g_q, values_to_quat("RQ", g_values))
    # Every other gap of a line turns at most MAX_STEP (channels and rotation).
    gap = (g_line[1:] == g_line[:-1]) & ~((grid[:-1] == 6.5) & (g_line[:-1] == 0))
    steps = np.linalg.norm(np.diff(g_values, axis=0), axis=1)  # RQ's channel bound
    assert steps[gap].max() <= MAX_STEP + 1e-12
    # The plain refinement splits the jump pass after pass: more samples, same chain.
    assert held_calls < sum(calls)
    assert len(plain[1]) > len(grid)
    for target in ("QUATERNION", "RQ", "XYZ", "SWING_TWIST"):
        chains = []
        for r_line, _, r_on, _, r_q in (got, plain):
            # Each line chained alone, at its times.
            for i in (0, 1):
                out = continuous_values(target, r_q[r_line == i][None], np.zeros((1, 3)))
                chains.append(out[0][r_on[r_line == i]])
        np.testing.assert_allclose(chains[0], chains[2], atol=1e-9)
        np.testing.assert_allclose(chains[1], chains[3], atol=1e-9)


def test_held_stretches_are_clipped_to_their_lines_times():
    evaluate, _ = _chart_jump_source()
    line = np.repeat([0, 1], 5)
    times = np.tile(np.arange(5.0, 10.0), 2)
    values = evaluate(line, times)
    q = values_to_quat("RQ", values)
    # Line 0 held from 2 to 6.25 (clipped to 5 .. 6.25) and from 12 to 14 (outside: left
    # out); a stretch of a line with no times (7) is left out too.
    holds = (np.array([0, 0, 7]), np.array([2.0, 12.0, 5.0]), np.array([6.25, 14.0, 6.0]))
    g_line, grid, on_times, g_values, _ = refine_grids(
        "RQ", line, times, values, q, evaluate, holds
    )
    np.testing.assert_array_equal(grid[on_times], times)
    np.testing.assert_array_equal(grid[g_line == 0][:3], [5.0, 6.0, 6.25])
    assert grid[g_line == 0].min() == 5.0 and grid[g_line == 0].max() == 9.0
    np.testing.assert_array_equal(g_values, evaluate(g_line, grid))


@pytest.mark.parametrize("seed", range(3))
def test_held_stretch_ends_join_the_grids_as_their_definition_says(seed):
    from rq_rotation.keyframes.refine import _add_holds

    # Lines of uneven grids (one without points), stretches whose ends fall on grid points,
    # inside gaps, on each other's ends, outside their lines (clipped) and overlapping.
    rng = np.random.default_rng(seed)
    grids = [np.unique(rng.integers(0, 40, int(rng.integers(2, 30))) * 0.5) for _ in range(6)]
    grids[3] = np.empty(0)
    line = np.concatenate([np.full(len(g), i) for i, g in enumerate(grids)])
    grid = np.concatenate(grids)
    on_times = rng.random(len(grid)) < 0.7
    hold_line = rng.integers(0, 6, 40)
    start = np.round(rng.uniform(-3.0, 22.0, 40) * 4.0) / 4.0
    end = start + np.round(rng.uniform(0.0, 6.0, 40) * 4.0) / 4.0

    def evaluate(which, t):
        return np.stack([which * 100.0 + t, np.sin(t), t * t], axis=1)

    values = evaluate(line, grid)
    got = _add_holds(
        "RQ",
        line,
        grid,
        on_times,
        values,
        values_to_quat("RQ", values),
        evaluate,
        (hold_line, start, end),
    )
    # The definition, line by line: the grid points and the stretches' ends clipped to the
    # line's first and last points (stretches left empty dropped); a gap is held when a
    # stretch covers it.
    want_line, want_grid, want_on, held = [], [], [], []
    for i, g in enumerate(grids):
        if not len(g):
            continue
        mine = hold_line == i
        s, e = np.maximum(start[mine], g[0]), np.minimum(end[mine], g[-1])
        s, e = s[s < e], e[s < e]
        points = np.unique(np.concatenate([g, s, e]))
        want_line += [i] * len(points)
        want_grid += points.tolist()
        own = dict(zip(g.tolist(), on_times[line == i].tolist(), strict=True))
        want_on += [own.get(p, False) for p in points.tolist()]
        held += [
            bool(((s <= a) & (b <= e)).any()) for a, b in zip(points[:-1], points[1:], strict=True)
        ]
        held.append(False)  # (the gap to the next line)
    np.testing.assert_array_equal(got[0], want_line)
    np.testing.assert_array_equal(got[1], want_grid)
    np.testing.assert_array_equal(got[2], want_on)
    np.testing.assert_array_equal(got[3], evaluate(got[0], got[1]))
    np.testing.assert_array_equal(got[4], values_to_quat("RQ", got[3]))
    np.testing.assert_array_equal(got[5], held[:-1])


@pytest.mark.parametrize("per_segment", [40, 0.5])
def test_segments_evaluated_once_for_their_times_as_each_time_alone(per_segment):
    # Segments with long handles (corrected), flat values, x linear in s (handles at thirds:
    # no cubic term), LINEAR and CONSTANT ones; many times on each (once per segment), or
    # fewer times than segments (gathered per time): the same values bit for bit.
    rng = np.random.default_rng(21)
    count = 60
    x0 = np.cumsum(rng.uniform(1.0, 30.0, count))
    span = rng.uniform(0.5, 40.0, count)
    x = np.stack(
        [
            x0,
            x0 + span * rng.uniform(0.0, 1.5, count),
            x0 + span * rng.uniform(-0.5, 1.0, count),
            x0 + span,
        ],
        axis=1,
    ).astype(np.float32)
    x[::7, 1], x[::7, 2] = x[::7, 0] + span[::7] / 3, x[::7, 0] + 2 * span[::7] / 3
    y = rng.normal(0.0, 3.0, (count, 4, 3)).astype(np.float32)
    y[::5] = y[::5, :1]  # flat
    code = rng.choice(np.array([BEZIER, BEZIER, LINEAR, CONSTANT]), count)
    m = int(per_segment * count)
    segment = rng.integers(0, count, m)
    t = x[segment, 0] + rng.uniform(0.0, 1.0, m) * (x[segment, 3] - x[segment, 0])
    t[::9] = x[segment[::9], 0]  # exact hits
    got = fcurve_math.evaluate_segments(t, x, y, code, segment=segment)
    want = fcurve_math.evaluate_segments(t, x[segment], y[segment], code[segment])
    np.testing.assert_array_equal(got, want)
    assert np.isfinite(got).all()


@pytest.mark.parametrize("shape", [(7,), (7, 4), (7, 3), (7, 2, 3), (0, 4), (0,)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, bool])
def test_merge_puts_rows_where_indexing_puts_them(shape, dtype):
    """`refine._merge` (rows put as opaque elements of their bytes) gives the array that
    ``out[old_at] = old; out[new_at] = new`` gives, for 1-3 dimensional rows of any type,
    also for a non-contiguous ``new`` and for no old rows."""
    rng = np.random.default_rng(len(shape) * 10 + shape[0])
    old = (rng.normal(size=shape) * 100).astype(dtype)
    new = (rng.normal(size=(6, *shape[1:])) * 100).astype(dtype)[::2]  # (3, ...), strided
    size = shape[0] + 3
    new_at = np.sort(rng.choice(size, 3, replace=False))
    old_at = np.setdiff1d(np.arange(size), new_at)
    expected = np.empty((size, *shape[1:]), dtype=dtype)
    expected[old_at] = old
    expected[new_at] = new
    got = _merge(old, new, old_at, new_at, size)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def test_put_rows_casts_and_refuses_views_it_cannot_write_through():
    """`refine._put_rows` casts the rows to the array's type (as indexing does) and refuses an
    array that is not C-contiguous (a view of its rows would be a copy, the writes lost)."""
    out = np.zeros((4, 3))
    _put_rows(out, np.array([2, 0]), np.arange(6, dtype=np.float32).reshape(2, 3))
    assert out.tolist() == [[3, 4, 5], [0, 0, 0], [0, 1, 2], [0, 0, 0]]
    with pytest.raises(ValueError, match="C-contiguous"):
        _put_rows(np.zeros((3, 4)).T, np.array([0]), np.zeros((1, 3)))
