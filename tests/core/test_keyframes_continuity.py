# SPDX-License-Identifier: GPL-3.0-or-later
"""`keyframes.continuity`: the bulk continuity chain against its definition run one sample at
a time (``out[i] = nearest_values(mode, q[i], near=out[i - 1])``), the modes' outputs against
their rotations, and the twist filter and held jumps against their docstrings."""

import math

import numpy as np
import pytest
from conftest import TWO_PI, random_unit
from hypothesis import given
from hypothesis import strategies as st

import rq_rotation as rq
from rq_rotation import modes
from rq_rotation.keyframes import continuity
from rq_rotation.keyframes.continuity import JUMP_WINDOW, Keys
from rq_rotation.keyframes.fcurve_math import BEZIER, CONSTANT, LINEAR

EULERS = list(rq.EULER_ORDERS)
CHAINED = [*EULERS, "RQ", "SWING_TWIST"]


def _chain_by_definition(mode, q, first):
    """The continuity chain of one line ``q`` (N, 4) from ``first`` (k,), sample by sample."""
    out = np.empty((len(q), len(first)))
    out[0] = first
    for i in range(1, len(q)):
        out[i] = modes.nearest_values(mode, q[i : i + 1], out[i - 1 : i])[0]
    return out


def _line(mode, rng, n=300):
    """A smooth line of channel values (n, k) in ``mode`` that is hard to chain: Euler through
    gimbal lock, RQ and swings spinning past the shells with fast-turning axes, twists past
    several revolutions. Consecutive rotations stay well under half a turn apart."""
    s = np.linspace(0.0, 1.0, n)
    phase = rng.uniform(0.0, TWO_PI, 4)
    if mode in EULERS:
        e = np.stack(
            [
                3.0 * np.sin(5.0 * s + phase[0]),
                0.5 * math.pi + 0.03 * np.sin(40.0 * s + phase[1]),  # through gimbal lock
                6.0 * s + phase[2],
            ],
            axis=1,
        )
        middle = "XYZ".index(mode[1])
        return np.roll(e, middle - 1, axis=1)
    angle = 14.0 * np.sin(1.4 * s + phase[0]) + 0.2  # passes 0, 2 pi, 4 pi
    turn = 25.0 * s + phase[1]  # the axis turns fast
    axis = np.stack([np.cos(turn), 0.3 * np.sin(3.0 * s + phase[2]), np.sin(turn)], axis=1)
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    if mode == "RQ":
        return angle[:, None] * axis
    swing = (angle[:, None] * axis)[:, [0, 2]] / np.linalg.norm(axis[:, [0, 2]], axis=1)[:, None]
    twist = 20.0 * np.sin(2.0 * s + phase[3])
    return np.concatenate([swing, twist[:, None]], axis=1)


def _steps(q):
    return rq.quat_angle_between(q[:-1], q[1:])


@pytest.mark.parametrize("mode", CHAINED)
def test_the_chain_is_its_definition_on_hard_lines(mode, rng):
    lines = np.stack([_line(mode, rng) for _ in range(2)])
    q = modes.values_to_quat(mode, lines)
    assert max(_steps(line).max() for line in q) < 0.5 * math.pi
    out = continuity._chain(mode, q, lines[:, 0])
    for line in range(2):
        expected = _chain_by_definition(mode, q[line], lines[line, 0])
        np.testing.assert_allclose(out[line], expected, rtol=0, atol=1e-8)
    # The chain keeps the line's windings: it is the line itself.
    np.testing.assert_allclose(out, lines, rtol=0, atol=1e-8)


@pytest.mark.parametrize("n", [60, continuity.CHAIN_SEQUENTIAL + 100])
@pytest.mark.parametrize("mode", CHAINED)
def test_the_chain_is_its_definition_on_unrelated_rotations(mode, n, rng):
    # Random rotations: the guess fails nearly everywhere; the result is still the chain's.
    # Short lines are chained column by column after the first guess; long ones are guessed
    # again and chained in blocks until their tails are that short.
    q = rq.rq_to_quat(random_unit(rng, 2 * n) * rng.uniform(0.0, math.pi, (2 * n, 1)))
    q = q.reshape(2, n, 4)
    first = modes.nearest_values(mode, q[:, 0], np.full((2, 3), 7.0))
    out = continuity._chain(mode, q, first)
    for line in range(2):
        expected = _chain_by_definition(mode, q[line], first[line])
        np.testing.assert_allclose(out[line], expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("mode", ["RQ", "SWING_TWIST"])
def test_the_chain_is_its_definition_where_the_axis_swings_fast_at_a_large_angle(mode, rng):
    # Vectors about a turn long whose axis turns by about 60 degrees a sample: steps of one
    # to two turns in RQ space, where the vectorized guess (which keeps the length) is wrong:
    # the nearest equivalent is near the projection of the previous one on the new axis.
    n = 150
    turn = np.cumsum(rng.uniform(0.9, 1.2, n))
    length = 6.0 + rng.uniform(-0.2, 0.2, n)
    axis = np.stack([np.cos(turn), 0.4 * np.sin(0.3 * turn), np.sin(turn)], axis=1)
    if mode == "SWING_TWIST":
        axis[:, 1] = 0.0
    v = length[:, None] * axis / np.linalg.norm(axis, axis=1, keepdims=True)
    values = v if mode == "RQ" else np.concatenate([v[:, [0, 2]], length[:, None]], axis=1)
    q = modes.values_to_quat(mode, values)
    out = continuity._chain(mode, q[None], values[None, 0])[0]
    expected = _chain_by_definition(mode, q, values[0])
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-8)
    guess = continuity._guess(mode, continuity._samples(mode, q[None]), values[None, 0])[0]
    assert (np.abs(guess - expected) > 1e-3).any()  # the case is what it claims


@pytest.mark.parametrize("mode", ["RQ", "SWING_TWIST"])
def test_columns_chained_from_staggered_starts_are_the_definitions(mode, rng):
    # `_chain_columns` continues each line from its own first wrong sample (RQ: along the
    # samples' directions, `_chain_rq_lengths`); the samples before are the chain's already.
    lines = np.stack([_line(mode, rng, n=40) for _ in range(6)])
    q = modes.values_to_quat(mode, lines)
    expected = np.stack([_chain_by_definition(mode, q[i], lines[i, 0]) for i in range(6)])
    start = np.array([1, 5, 5, 17, 39, 2])
    chosen = np.array([0, 2, 3, 4, 5])  # line 1 is left as it is
    out = expected.copy()
    for i, begin in zip(chosen, start[chosen], strict=True):
        out[i, begin:] = 99.0
    continuity._chain_columns(mode, continuity._samples(mode, q), out, chosen, start[chosen])
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-8)


def test_the_chain_of_rq_vectors_through_the_identity_on_a_shell(rng):
    # A spin about a turning axis that stops at 2 pi (the identity) and comes back: on the
    # shell the nearest equivalent is the point of the sphere nearest the previous sample.
    s = np.linspace(0.0, 1.0, 201)
    angle = TWO_PI * np.sin(math.pi * s) ** 2 + 0.3
    angle[100] = TWO_PI
    turn = 3.0 * s
    v = angle[:, None] * np.stack([np.cos(turn), np.sin(turn), 0.5 + 0 * s], axis=1)
    v /= np.linalg.norm(v, axis=1, keepdims=True) / angle[:, None]
    q = rq.rq_to_quat(v)
    out = continuity._chain("RQ", q[None], v[None, 0])[0]
    np.testing.assert_allclose(out, _chain_by_definition("RQ", q, v[0]), rtol=0, atol=1e-8)
    np.testing.assert_allclose(np.linalg.norm(out[100]), TWO_PI, atol=1e-9)


@pytest.mark.parametrize("mode", list(modes.MODES))
def test_continuous_values_keep_every_rotation_and_start_at_the_keyed_revolutions(mode, rng):
    source = "RQ" if mode in ("QUATERNION", "AXIS_ANGLE") else mode
    lines = np.stack([_line(source, rng) for _ in range(2)])
    q = modes.values_to_quat(source, lines)
    if mode == "AXIS_ANGLE":
        start = rq.rq_to_blender_axis_angle(lines[:, 0])
    elif mode == "QUATERNION":
        start = rq.rq_to_quat(lines[:, 0])
    else:
        start = lines[:, 0]
    near = modes.rotation_vectors(mode, start)
    out = continuity.continuous_values(mode, q, near)
    assert out.shape == (2, 300, modes.MODES[mode].size)
    back = modes.values_to_quat(mode, out)
    assert rq.quat_angle_between(back, q).max() < 1e-9
    if mode != "QUATERNION":  # the first sample is the keyed one, revolutions and all
        np.testing.assert_allclose(out[:, 0], start, rtol=0, atol=1e-9)
    if mode in CHAINED:
        for line in range(2):
            expected = _chain_by_definition(mode, q[line], start[line])
            np.testing.assert_allclose(out[line], expected, rtol=0, atol=1e-8)
    if mode == "QUATERNION":  # no sign flips, starting in the hemisphere of near
        assert (np.einsum("bni,bni->bn", out[:, 1:], out[:, :-1]) > 0).all()
        assert (np.einsum("bi,bi->b", out[:, 0], rq.rq_to_quat(near)) > 0).all()
    if mode == "AXIS_ANGLE":  # the continuous RQ vector, the axis in one hemisphere
        rq_chain = continuity.continuous_values("RQ", q, near)
        np.testing.assert_allclose(rq.blender_axis_angle_to_rq(out), rq_chain, atol=1e-12)
        axis = out[..., 1:]
        assert (np.einsum("bni,bni->bn", axis[:, 1:], axis[:, :-1]) >= 0).all()
        assert (out[..., 0] < 0).any()  # the angle changes sign where the vector passes 0


@pytest.mark.parametrize("mode", ["RQ", "SWING_TWIST", "XYZ", "AXIS_ANGLE", "QUATERNION"])
def test_a_spin_of_720_degrees_keeps_both_revolutions(mode):
    # Twelve steps of 60 degrees about Y from a rotation keyed at 360 degrees.
    angle = TWO_PI + np.linspace(0.0, 2.0 * TWO_PI, 25)
    q = rq.rq_to_quat(angle[:, None] * [0.0, 1.0, 0.0])[None]
    near = np.array([[0.0, TWO_PI, 0.0]])
    out = continuity.continuous_values(mode, q, near)[0]
    expected = {
        "RQ": angle[:, None] * [0.0, 1.0, 0.0],
        "SWING_TWIST": angle[:, None] * [0.0, 0.0, 1.0],
        "XYZ": angle[:, None] * [0.0, 1.0, 0.0],
        "AXIS_ANGLE": angle[:, None] * [1.0, 0.0, 0.0, 0.0] + [0.0, 0.0, 1.0, 0.0],
    }
    if mode == "QUATERNION":  # no revolutions, but no sign flip either: q turns 720 degrees
        assert (np.einsum("ni,ni->n", out[1:], out[:-1]) > 0).all()
        np.testing.assert_allclose(out[-1], out[0], atol=1e-12)  # two turns: back
        return
    np.testing.assert_allclose(out, expected[mode], atol=1e-9)


def test_no_lines_no_samples_and_one_sample():
    q = rq.rq_to_quat(np.array([[[0.1, 0.2, 0.3]]]))
    for mode, size in (("RQ", 3), ("QUATERNION", 4), ("XYZ", 3), ("AXIS_ANGLE", 4)):
        none = continuity.continuous_values(mode, np.zeros((0, 5, 4)), np.zeros((0, 3)))
        assert none.shape == (0, 5, size)
        assert continuity.continuous_values(mode, np.zeros((2, 0, 4)), np.zeros((2, 3))).shape == (
            2,
            0,
            size,
        )
        one = continuity.continuous_values(mode, q, np.array([[0.1, 0.2, 0.3 + TWO_PI]]))
        assert rq.quat_angle_between(modes.values_to_quat(mode, one), q).max() < 1e-12


def _twists_by_definition(twist, low, high):
    out = list(twist)
    for i in range(1, len(out)):
        candidates = [out[i] + TWO_PI * k for k in range(-40, 41)]
        best = min(candidates, key=lambda c: abs(c - out[i - 1]))
        if low <= best <= high:
            out[i] = best
    return np.array(out)


def test_continuous_twists_by_hand():
    t = np.array([3.0, -3.0, 3.0, 0.5])
    # [-pi, pi]: -3 is closest to 3 as 2 pi - 3 = 3.28, outside: kept.
    np.testing.assert_allclose(continuity.continuous_twists(t, -math.pi, math.pi), t)
    wide = continuity.continuous_twists(t, -10.0, 10.0)
    np.testing.assert_allclose(wide, [3.0, TWO_PI - 3.0, 3.0, 0.5])
    # The first is kept even outside the range.
    np.testing.assert_allclose(continuity.continuous_twists([9.0, 2.8], 0.0, 1.0), [9.0, 2.8])


@given(
    st.lists(st.floats(-30.0, 30.0), min_size=1, max_size=30),
    st.floats(-20.0, 5.0),
    st.floats(0.0, 25.0),
)
def test_continuous_twists_is_its_definition(twist, low, width):
    got = continuity.continuous_twists(np.array(twist), low, low + width)
    expected = _twists_by_definition(twist, low, low + width)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert (np.abs(np.remainder(got - twist + math.pi, TWO_PI) - math.pi) < 1e-9).all()


def _keys(times, codes):
    co = np.stack([np.asarray(times, float), np.zeros(len(times))], axis=1)
    return Keys(co, np.asarray(codes), (co, co))


def _held_by_definition(keys, times):
    out = np.zeros(len(times), dtype=bool)
    for i in range(1, len(times)):
        codes = [
            c.interpolation[j]
            for c in keys
            if c is not None
            for j in range(len(c.times))
            if c.times[j] == times[i - 1]
        ]
        out[i] = times[i] - times[i - 1] <= JUMP_WINDOW and all(code == CONSTANT for code in codes)
    return out


def test_held_jumps_by_hand():
    gap = 0.0101
    x = _keys([1.0, 5.0, 5.0 + gap, 9.0], [BEZIER, CONSTANT, BEZIER, BEZIER])
    y = _keys([1.0, 5.0, 5.0 + gap, 9.0], [BEZIER, CONSTANT, BEZIER, LINEAR])
    z = _keys([1.0, 5.0, 9.0], [BEZIER, BEZIER, BEZIER])  # not held at 5 on Z
    times = np.array([1.0, 5.0, 5.0 + gap, 9.0])
    assert continuity.held_jumps([[x, y, None]], [times]).tolist() == [False, False, True, False]
    assert continuity.held_jumps([[x, y, z]], [times]).tolist() == [False, False, False, False]
    # Too far apart to be a held jump: a stepped key an animator placed.
    far = _keys([1.0, 5.0, 5.1], [BEZIER, CONSTANT, BEZIER])
    assert continuity.held_jumps([[far]], [np.array([1.0, 5.0, 5.1])]).tolist() == [False] * 3


@pytest.mark.parametrize("seed", range(5))
def test_held_jumps_is_its_definition(seed):
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.choice([0.0101, 0.03, 0.2, 1.0], 40)) + 3.0
    keys = []
    for _ in range(3):
        chosen = np.sort(rng.choice(len(times), rng.integers(1, 40), replace=False))
        codes = rng.choice([CONSTANT, LINEAR, BEZIER], len(chosen), p=[0.6, 0.2, 0.2])
        keys.append(_keys(times[chosen], codes))
    union = np.unique(np.concatenate([k.times for k in keys]))
    got = continuity.held_jumps([[keys[0], None, keys[1], keys[2]]], [union])
    np.testing.assert_array_equal(got, _held_by_definition(keys, union))
    assert got.any() and not got.all()


def test_held_jumps_of_many_vectors_are_each_ones_definition():
    """Many vectors at once, laid end to end, as each alone: vectors sharing key times (so
    only the line tells their keys apart), missing components, a vector of one key, and held
    jumps at a vector's last key (the next vector's first must not follow it)."""
    rng = np.random.default_rng(7)
    vectors, unions = [], []
    for size in (40, 1, 25, 40, 3):
        # float32 frames, as Blender's keys; vectors overlap in time.
        times = (np.cumsum(rng.choice([0.0101, 0.03, 0.2, 1.0], size)) + 3.0).astype(np.float32)
        times = times.astype(np.float64)
        keys = []
        for component in range(3):
            if component == 1 and size == 25:
                keys.append(None)
                continue
            chosen = np.sort(rng.choice(size, rng.integers(1, size + 1), replace=False))
            codes = rng.choice([CONSTANT, LINEAR, BEZIER], len(chosen), p=[0.6, 0.2, 0.2])
            keys.append(_keys(times[chosen], codes))
        vectors.append(keys)
        unions.append(np.unique(np.concatenate([k.times for k in keys if k is not None])))
    got = continuity.held_jumps(vectors, unions)
    expected = np.concatenate(
        [_held_by_definition(k, t) for k, t in zip(vectors, unions, strict=True)]
    )
    np.testing.assert_array_equal(got, expected)
    assert got.any() and not got.all()
    assert continuity.held_jumps([], []).shape == (0,)
