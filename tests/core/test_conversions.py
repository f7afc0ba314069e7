import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from conftest import REGION_ANGLES, TWO_PI, random_unit
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

import rq_rotation as rq

TOL = 1e-13


def sp_quat(v):
    return Rotation.from_rotvec(v).as_quat(scalar_first=True)


def same_up_to_sign(a, b):
    sign = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0, -1.0, 1.0)
    return np.abs(a - sign * b).max()


def test_import_has_no_bpy_or_scipy():
    code = (
        "import sys, rq_rotation; "
        "bad = [m for m in ('bpy', 'mathutils', 'scipy') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=str(__import__("pathlib").Path(rq.__file__).parents[1]),
    )
    assert res.returncode == 0, res.stdout + res.stderr


def test_rq_to_quat_matches_scipy(region_vectors, rng):
    v = np.concatenate([region_vectors, rng.normal(0, 1.5, (2000, 3))])
    q = rq.rq_to_quat(v)
    assert np.abs(q - sp_quat(v)).max() < TOL
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=4e-16)


def test_sum_of_squares_and_norm_are_numpys_to_the_bit_without_blas(rng, monkeypatch):
    """The kernels' ``|v|^2`` is ``(v * v) @ ones(3)`` and their ``|v|`` is
    ``np.linalg.norm(v, axis=-1)``, to the bit, summed without a BLAS call (OpenBLAS's worker
    threads spin after a long matrix-vector product)."""
    from rq_rotation._checks import norm, sum_of_squares

    v = rng.normal(size=(200_000, 3)) * np.exp(rng.uniform(-25.0, 4.0, size=(200_000, 1)))
    v[:5] = 0.0
    expected = np.matmul(v * v, np.ones(3))
    quats = rng.normal(size=(7, 40, 4))
    norms = [np.linalg.norm(a, axis=-1) for a in (v, quats[..., 1:], v[3])]

    def no_blas(*args, **kwargs):
        raise AssertionError("np.matmul called")

    monkeypatch.setattr(np, "matmul", no_blas)
    assert np.array_equal(sum_of_squares(v), expected)
    for a, want in zip((v, quats[..., 1:], v[3]), norms, strict=True):
        assert np.array_equal(norm(a), want)
    rq.rq_to_quat(v)
    rq.quat_to_rq(rq.rq_to_quat(v))


def test_rq_to_quat_keeps_sign_beyond_pi():
    q = rq.rq_to_quat([0.0, 0.0, 4.0])
    assert q[0] < 0
    np.testing.assert_allclose(q, [math.cos(2.0), 0, 0, math.sin(2.0)], atol=1e-16)


def test_identity_exact_and_no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            q = rq.rq_to_quat(np.zeros(3))
            assert q.tolist() == [1.0, 0.0, 0.0, 0.0]
            assert rq.quat_to_rq([1.0, 0, 0, 0]).tolist() == [0.0, 0.0, 0.0]
            assert rq.quat_to_rq([-2.0, 0, 0, 0]).tolist() == [0.0, 0.0, 0.0]
            assert rq.rq_to_matrix(np.zeros((2, 3))).tolist() == [np.eye(3).tolist()] * 2
            rq.quat_to_rq([1.0, 0, 0, 0], near=[0.0, 0, 0])
            rq.quat_to_rq([1.0, 0, 0, 0], near=[7.0, 0, 0])


def test_quat_to_rq_matches_scipy(region_vectors, rng):
    v = np.concatenate([region_vectors, rng.normal(0, 1.5, (2000, 3))])
    q = sp_quat(v)
    got = rq.quat_to_rq(q)
    ref = Rotation.from_quat(q, scalar_first=True).as_rotvec()
    # at exactly pi both v and -v are valid: compare up to that ambiguity
    at_pi = np.abs(np.linalg.norm(ref, axis=1) - math.pi) < 1e-12
    assert np.abs(got - ref)[~at_pi].max() < TOL
    assert np.all(np.linalg.norm(got, axis=1) <= math.pi + 1e-15)
    # q and -q, scaled quaternions give the same vector
    assert np.abs(rq.quat_to_rq(-3.0 * q) - got)[~at_pi].max() < TOL


def test_round_trip_with_near_recovers_the_vector(region_vectors):
    v = region_vectors
    back = rq.quat_to_rq(rq.rq_to_quat(v), near=v)
    assert np.abs(back - v).max() < TOL


@given(
    st.sampled_from(list(REGION_ANGLES)),
    st.floats(-1.0, 1.0),
    st.floats(-1.0, 1.0),
    st.floats(-1.0, 1.0),
    st.floats(0.0, 1.0),
)
def test_round_trip_hypothesis(angle, x, y, z, jitter):
    u = np.array([x, y, z])
    if np.linalg.norm(u) < 1e-3:
        u = np.array([0.3, -0.4, 0.5])
    u /= np.linalg.norm(u)
    angle = angle * (1.0 + 1e-3 * jitter)
    v = angle * u
    q = rq.rq_to_quat(v)
    assert np.abs(q - sp_quat(v[None])[0]).max() < TOL
    # (relative to the vector's length: at 100 pi, 1e-13 is 2 ulps, and the equivalent
    # nearest v is the shortest one plus a multiple of 2 pi along the axis, rounded there;
    # hypothesis found 1.14e-13 at |v| = 314.27)
    assert np.abs(rq.quat_to_rq(q, near=v) - v).max() < TOL * max(1.0, angle)
    vr = rq.quat_to_rq(q)
    assert same_up_to_sign(rq.rq_to_quat(vr), q) < TOL
    m = rq.rq_to_matrix(v)
    assert np.abs(m - Rotation.from_rotvec(v).as_matrix()).max() < TOL
    assert np.abs(rq.matrix_to_rq(m, near=v) - v).max() < TOL


def test_near_picks_closest_equivalent(rng):
    v = random_unit(rng, 200) * rng.uniform(0.1, 3.0, (200, 1))
    near = rng.normal(0, 8, (200, 3))
    got = rq.quat_to_rq(rq.rq_to_quat(v), near=near)
    # brute force over the equivalence class u (theta + 2 pi k)
    theta = np.linalg.norm(v, axis=1)
    u = v / theta[:, None]
    ks = np.arange(-8, 9)
    cands = u[:, None, :] * (theta[:, None] + TWO_PI * ks)[:, :, None]
    d = np.linalg.norm(cands - near[:, None, :], axis=2)
    best = cands[np.arange(200), d.argmin(axis=1)]
    assert np.abs(got - best).max() < 1e-12


def test_near_identity_rule():
    ident = np.array([1.0, 0, 0, 0])
    np.testing.assert_allclose(rq.quat_to_rq(ident, near=[0, 0, 7.0]), [0, 0, TWO_PI])
    np.testing.assert_allclose(rq.quat_to_rq(-ident, near=[0, 2.0, 0]), [0, 0, 0])
    np.testing.assert_allclose(rq.quat_to_rq(ident, near=[0, 0, -13.0]), [0, 0, -2 * TWO_PI])
    assert rq.quat_to_rq(ident, near=[0.0, 0, 0]).tolist() == [0, 0, 0]


def test_series_threshold_continuity():
    # value and derivative across SMALL_ANGLE_RQ_TO_QUAT agree to machine precision
    u = np.array([0.48, -0.6, 0.64])
    thr = rq.SMALL_ANGLE_RQ_TO_QUAT
    th = thr * (1 + np.array([-4e-16, -2e-16, 0.0, 2e-16, 4e-16]))
    q = rq.rq_to_quat(th[:, None] * u)
    exact = np.concatenate([np.cos(th / 2)[:, None], (np.sin(th / 2))[:, None] * u], axis=1)
    assert np.abs(q - exact)[:, 0].max() <= 2.3e-16  # one ulp of w ~ 1
    assert np.abs(q - exact)[:, 1:].max() < 1e-18
    h = 1e-5  # straddles the threshold; truncation ~1e-12, rounding ~1e-11
    for t0 in (thr * (1 - 1e-9), thr * (1 + 1e-9)):
        dq = (rq.rq_to_quat((t0 + h) * u) - rq.rq_to_quat((t0 - h) * u)) / (2 * h)
        ref = np.concatenate([[-0.5 * np.sin(t0 / 2)], 0.5 * np.cos(t0 / 2) * u])
        assert np.abs(dq - ref).max() < 1e-10
    # quat_to_rq threshold on r = |xyz|/|w|
    r_thr = rq.SMALL_RATIO_QUAT_TO_RQ
    for r in r_thr * (1 + np.array([-1e-15, 0.0, 1e-15])):
        q = np.array([1.0, r * u[0], r * u[1], r * u[2]])
        np.testing.assert_allclose(rq.quat_to_rq(q), 2 * math.atan(r) * u, rtol=2e-16, atol=0)


def test_sequence_continuous():
    angles = np.linspace(0, 6 * math.pi, 60)
    axis = np.array([0.0, 0.6, 0.8])
    v_true = angles[:, None] * axis
    wrapped = rq.quat_to_rq(rq.rq_to_quat(v_true))
    cont = rq.rq_sequence_continuous(wrapped)
    assert np.abs(cont - v_true).max() < 1e-12
    assert rq.rq_sequence_continuous(np.zeros((0, 3))).shape == (0, 3)


def test_sequence_continuous_is_the_near_rule_frame_by_frame(rng):
    # a random walk through several shells, with identity frames (every shell point) inside
    v = np.cumsum(rng.normal(0, 0.6, (300, 3)), axis=0)
    v[[40, 41, 150, 299]] = 0.0
    v[[90, 200]] = [[0.0, 0.0, 2 * TWO_PI], [TWO_PI, 0.0, 0.0]]
    wrapped = rq.quat_to_rq(rq.rq_to_quat(v))
    got = rq.rq_sequence_continuous(wrapped)
    ref = wrapped.copy()
    for i in range(1, len(v)):
        ref[i] = rq.quat_to_rq(rq.rq_to_quat(wrapped[i]), near=ref[i - 1])
    assert np.abs(got - ref).max() < 1e-12
    assert np.abs(rq.quat_to_rq(rq.rq_to_quat(got)) - wrapped).max() < 1e-12


def test_sequence_continuous_restarts_where_told(rng):
    """Sequences concatenated with ``restart`` at their starts: each as if alone, its first
    row kept as given (even on a far shell); a bad mask is refused."""
    parts = [np.cumsum(rng.normal(0, 1.5, (n, 3)), axis=0) for n in (7, 1, 30, 12)]
    parts[2][0] = [0.0, 0.0, 3 * TWO_PI + 0.2]
    wrapped = [rq.quat_to_rq(rq.rq_to_quat(p)) for p in parts]
    wrapped[2][0] = parts[2][0]
    restart = np.concatenate([np.arange(len(p)) == 0 for p in wrapped])
    got = rq.rq_sequence_continuous(np.concatenate(wrapped), restart)
    np.testing.assert_array_equal(
        got, np.concatenate([rq.rq_sequence_continuous(p) for p in wrapped])
    )
    with pytest.raises(ValueError, match="restart"):
        rq.rq_sequence_continuous(np.zeros((4, 3)), np.zeros(3, dtype=bool))


def test_matrix_to_quat_w_nonnegative_and_matches_scipy(rng):
    q = rng.normal(size=(3000, 4))
    q[:10, 1:] = 0.0
    q[10:20, 0] = 0.0
    m = Rotation.from_quat(q, scalar_first=True).as_matrix()
    got = rq.matrix_to_quat(m)
    assert np.all(got[:, 0] >= 0)
    assert same_up_to_sign(got, q / np.linalg.norm(q, axis=1, keepdims=True)) < TOL
    assert np.abs(rq.quat_to_matrix(got) - m).max() < TOL


def test_quat_multiply_order():
    qx = rq.rq_to_quat([math.pi / 2, 0, 0])
    qz = rq.rq_to_quat([0, 0, math.pi / 2])
    # p * q = q first, then p: matches R_p @ R_q
    m = rq.quat_to_matrix(rq.quat_multiply(qz, qx))
    np.testing.assert_allclose(m, rq.quat_to_matrix(qz) @ rq.quat_to_matrix(qx), atol=1e-15)
    np.testing.assert_allclose(rq.quat_rotate(qz, [1.0, 0, 0]), [0, 1, 0], atol=1e-15)


def test_normalize_and_conjugate(rng):
    q = rng.normal(size=(20, 4))
    n = rq.quat_normalize(3.0 * q)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=4e-16)
    assert np.abs(n - q / np.linalg.norm(q, axis=1, keepdims=True)).max() < 1e-15
    c = rq.quat_conjugate(q)
    n = rq.quat_normalize(q)
    np.testing.assert_array_equal(c[:, 0], n[:, 0])
    np.testing.assert_array_equal(c[:, 1:], -n[:, 1:])
    np.testing.assert_allclose(rq.quat_multiply(q, c), np.tile([1.0, 0, 0, 0], (20, 1)), atol=1e-15)
    with pytest.raises(ValueError, match="zero quaternion"):
        rq.quat_normalize([0.0, 0, 0, 0])


def test_angle_between_and_align(rng):
    q = sp_quat(rng.normal(size=(50, 3)))
    d = rng.normal(size=(50, 3))
    d *= (1e-9 / np.linalg.norm(d, axis=1))[:, None]
    q2 = rq.quat_multiply(q, rq.rq_to_quat(d))
    np.testing.assert_allclose(rq.quat_angle_between(q, -q2), 1e-9, rtol=1e-6)
    seq = q * np.where(rng.random(50) < 0.5, -1.0, 1.0)[:, None]
    al = rq.align_quat_signs(sp_quat(np.linspace(0, 9, 50)[:, None] * [0, 0, 1.0]) * -1)
    assert np.all(np.sum(al[1:] * al[:-1], axis=1) >= 0)
    assert same_up_to_sign(rq.align_quat_signs(seq), q) < 1e-15


@pytest.mark.parametrize("order", rq.EULER_ORDERS)
def test_euler_against_scipy(order, rng):
    e = rng.uniform(-3, 3, (500, 3))
    idx = ["XYZ".index(c) for c in order]
    ref = Rotation.from_euler(order.lower(), e[:, idx])
    assert np.abs(rq.euler_to_matrix(e, order) - ref.as_matrix()).max() < TOL
    assert same_up_to_sign(rq.euler_to_quat(e, order), ref.as_quat(scalar_first=True)) < TOL
    back = rq.quat_to_euler(rq.euler_to_quat(e, order), order)
    assert np.abs(rq.euler_to_matrix(back, order) - ref.as_matrix()).max() < 1e-11
    assert np.all(np.abs(back) <= math.pi + 1e-15)
    # near: the original angles (and 2 pi shifted ones) come back
    shift = TWO_PI * rng.integers(-2, 3, (500, 3))
    near = e + shift + rng.normal(0, 0.1, (500, 3))
    got = rq.matrix_to_euler(ref.as_matrix(), order, near=near)
    assert np.abs(got - (e + shift)).max() < 1e-9


@pytest.mark.parametrize("order", rq.EULER_ORDERS)
def test_euler_to_quat_is_the_product_of_axis_quaternions(order, rng):
    # The closed form against its definition q_C * q_B * q_A (order 'ABC'), on small, large,
    # grid (multiples of pi/4, where tan(e/4) is at its extremes) and tiny angles; stacks of
    # any shape, a single triple, and an empty stack.
    e = np.concatenate(
        [
            rng.uniform(-7, 7, (3000, 3)),
            rng.uniform(-1e3, 1e3, (1000, 3)),
            math.pi / 4 * rng.integers(-16, 17, (500, 3)),
            rng.normal(0, 1e-8, (100, 3)),
        ]
    )

    def axis_quat(angles, axis):
        q = np.zeros(angles.shape + (4,))
        q[..., 0] = np.cos(angles / 2)
        q[..., 1 + "XYZ".index(axis)] = np.sin(angles / 2)
        return q

    a, b, c = (axis_quat(e[:, "XYZ".index(axis)], axis) for axis in order)
    expected = rq.quat_multiply(c, rq.quat_multiply(b, a))
    assert np.abs(rq.euler_to_quat(e, order) - expected).max() < 1e-15
    stacked = rq.euler_to_quat(e.reshape(5, -1, 3), order)
    assert np.abs(stacked - expected.reshape(5, -1, 4)).max() < 1e-15
    assert np.abs(rq.euler_to_quat(e[7], order) - expected[7]).max() < 1e-15
    assert rq.euler_to_quat(np.empty((0, 3)), order).shape == (0, 4)


@pytest.mark.parametrize("order", rq.EULER_ORDERS)
def test_euler_gimbal_lock(order):
    e = np.zeros(3)
    e["XYZ".index(order[1])] = math.pi / 2
    e["XYZ".index(order[0])] = 0.3
    e["XYZ".index(order[2])] = -0.2
    m = rq.euler_to_matrix(e, order)
    back = rq.matrix_to_euler(m, order)
    assert np.abs(rq.euler_to_matrix(back, order) - m).max() < 1e-14


def test_axis_angle_conversions(rng):
    axis = rng.normal(size=(100, 3))
    angle = rng.uniform(-7, 7, 100)
    q = rq.axis_angle_to_quat(axis, angle)
    ref = Rotation.from_rotvec(
        axis / np.linalg.norm(axis, axis=1, keepdims=True) * angle[:, None]
    ).as_quat(scalar_first=True)
    assert np.abs(q - ref).max() < TOL
    ax2, an2 = rq.quat_to_axis_angle(q)
    assert np.abs(rq.axis_angle_to_quat(ax2, an2) - q).max() < TOL
    assert np.all((an2 >= 0) & (an2 <= TWO_PI))
    aa = rq.quat_to_blender_axis_angle(q)
    assert np.abs(rq.blender_axis_angle_to_quat(aa) - q).max() < TOL
    v = rq.axis_angle_to_rq(axis, angle)
    assert np.abs(rq.blender_axis_angle_to_rq(rq.rq_to_blender_axis_angle(v)) - v).max() < TOL
    ident_axis, ident_angle = rq.quat_to_axis_angle([1.0, 0, 0, 0])
    assert ident_axis.tolist() == [0, 1, 0] and ident_angle == 0
    assert rq.axis_angle_to_quat([0.0, 0, 0], 1.0).tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize(
    "func, arg, match",
    [
        (rq.rq_to_quat, [np.nan, 0, 0], "v contains NaN"),
        (rq.rq_to_quat, [[0, 0, np.inf]], "v contains NaN"),
        (rq.rq_to_quat, [1.0, 2.0], r"v must have shape \(\.\.\., 3\)"),
        (rq.quat_to_rq, [0.0, 0, 0, 0], "zero quaternion"),
        (rq.quat_to_rq, [[1.0, 0, 0, 0], [0.0, 0, 0, 0]], "zero quaternion"),
        (rq.quat_to_matrix, [0.0, 0, 0, 0], "zero quaternion"),
        (rq.quat_to_rq, [1.0, 0, 0], r"q must have shape \(\.\.\., 4\)"),
        (rq.matrix_to_quat, np.eye(4), r"m must have shape \(\.\.\., 3, 3\)"),
        (rq.quat_multiply, ([1.0, 0, 0, np.nan], [1.0, 0, 0, 0]), "p contains NaN"),
        (rq.euler_to_quat, ([0.0, 0, 0], "XYX"), "order must be one of"),
        # (numpy reads None as NaN, and drops a complex array's imaginary parts with a warning)
        (rq.rq_to_quat, None, "v must be an array of real numbers"),
        (rq.rq_to_quat, np.array([0.0, 0.0, 1j]), "v must be an array of real numbers"),
        # (numpy's own broadcast error named neither argument)
        (
            rq.quat_to_rq,
            (np.ones((3, 4)), np.zeros((2, 3))),
            r"near's stack \(2,\) does not broadcast against the rotations' \(3,\)",
        ),
        (rq.matrix_to_euler, (np.eye(3)[None].repeat(3, 0), "XYZ", np.zeros((2, 3))), "near's"),
    ],
)
def test_bad_input(func, arg, match):
    with pytest.raises(ValueError, match=match):
        func(*arg) if isinstance(arg, tuple) else func(arg)


def test_shapes_single_and_empty():
    assert rq.rq_to_quat([0.1, 0.2, 0.3]).shape == (4,)
    assert rq.rq_to_quat(np.zeros((0, 3))).shape == (0, 4)
    assert rq.quat_to_rq(np.zeros((0, 4))).shape == (0, 3)
    assert rq.rq_to_matrix(np.zeros((2, 5, 3))).shape == (2, 5, 3, 3)
    assert rq.matrix_to_quat(np.zeros((0, 3, 3))).shape == (0, 4)
    assert rq.quat_to_rq([2.0, 0, 0, 0]).shape == (3,)
    np.testing.assert_allclose(rq.quat_to_matrix([2.0, 0, 0, 0]), np.eye(3))
    big = np.random.default_rng(0).normal(size=(40000, 3))  # crosses the chunk size
    assert np.abs(rq.rq_to_quat(big) - sp_quat(big)).max() < TOL
