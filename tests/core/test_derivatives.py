import math

import numpy as np
import pytest
from conftest import TWO_PI, random_unit

import rq_rotation as rq


def central(f, v, h):
    cols = [(f(v + h * e) - f(v - h * e)) / (2 * h) for e in np.eye(3)]
    return cols


def jac_points(rng):
    u = random_unit(rng, 6)
    mags = [
        0.0,
        1e-12,
        1e-6,
        1e-3,
        rq.SMALL_ANGLE_DERIVATIVES * (1 - 1e-12),
        rq.SMALL_ANGLE_DERIVATIVES * (1 + 1e-12),
        0.7,
        math.pi,
        4.0,
        TWO_PI - 0.05,
        TWO_PI + 0.05,
        20.0,
    ]
    return np.concatenate([m * u for m in mags])


def test_quat_jacobian_against_central_differences(rng):
    v = jac_points(rng)
    h = 1e-5
    num = np.stack(central(rq.rq_to_quat, v, h), axis=-1)
    assert np.abs(rq.rq_quat_jacobian(v) - num).max() < 1e-8


def test_quat_jacobian_against_complex_step(rng):
    # complex step on the closed form (no cancellation): exact to rounding
    v = jac_points(rng)
    v = v[np.linalg.norm(v, axis=1) > 1e-3]
    h = 1e-30
    jac = rq.rq_quat_jacobian(v)
    for j in range(3):
        vc = v.astype(complex)
        vc[:, j] += 1j * h
        th = np.sqrt(np.sum(vc * vc, axis=1))
        q = np.concatenate([np.cos(th / 2)[:, None], (np.sin(th / 2) / th)[:, None] * vc], 1)
        assert np.abs(q.imag / h - jac[:, :, j]).max() < 1e-13


def test_matrix_jacobian_against_central_differences(rng):
    v = jac_points(rng)
    num = np.stack(central(rq.rq_to_matrix, v, 1e-5), axis=-3)
    assert np.abs(rq.rq_matrix_jacobian(v) - num).max() < 1e-8


def test_jacobian_at_zero_exact():
    j = rq.rq_quat_jacobian(np.zeros(3))
    np.testing.assert_array_equal(j, np.vstack([np.zeros(3), 0.5 * np.eye(3)]))


def test_jacobian_continuous_across_series_threshold():
    u = np.array([0.36, 0.48, 0.8])
    thr = rq.SMALL_ANGLE_DERIVATIVES
    below = rq.rq_quat_jacobian(thr * (1 - 1e-15) * u)
    above = rq.rq_quat_jacobian(thr * (1 + 1e-15) * u)
    assert np.abs(below - above).max() < 4e-16


def test_swing_jacobians(rng):
    sw = rng.normal(0, 1, (20, 2))
    h = 1e-5
    for k in range(2):
        e = np.zeros(2)
        e[k] = h
        st = rq.swing_twist_to_quat
        num_q = (st(sw + e, 0.0) - st(sw - e, 0.0)) / (2 * h)
        assert np.abs(rq.swing_quat_jacobian(sw)[..., k] - num_q).max() < 1e-8
        mk = rq.quat_to_matrix
        num_m = (
            mk(rq.swing_twist_to_quat(sw + e, 0.0)) - mk(rq.swing_twist_to_quat(sw - e, 0.0))
        ) / (2 * h)
        assert np.abs(rq.swing_matrix_jacobian(sw)[:, k] - num_m).max() < 1e-8


def flow_velocity(v, omega, frame, h=1e-6):
    q0 = rq.rq_to_quat(v)

    def at(t):
        dq = rq.rq_to_quat(t * omega)
        q = rq.quat_multiply(dq, q0) if frame == "world" else rq.quat_multiply(q0, dq)
        return rq.quat_to_rq(q, near=v)

    return (at(h) - at(-h)) / (2 * h)


@pytest.mark.parametrize("frame", ["world", "local"])
def test_velocity_along_the_flow(frame, rng):
    u = random_unit(rng, 10)
    mags = [0.0, 1e-9, 1e-4, 0.2, 0.3, 1.0, math.pi, 4.5, TWO_PI - 0.5, TWO_PI + 0.7, 15.0]
    v = np.concatenate([m * u for m in mags])
    omega = rng.normal(size=v.shape)
    num = flow_velocity(v, omega, frame)
    got = rq.rq_velocity(v, omega, frame=frame)
    assert np.abs(got - num).max() < 1e-6
    back = rq.rq_angular_velocity(v, got, frame=frame)
    assert np.abs(back - omega).max() < 1e-12


def test_appendix_b_formula_is_the_local_frame(rng):
    # the extracted Appendix B: 1/2 (gamma w - eta v + p), p = v x w
    v = rng.normal(size=(50, 3))
    w = rng.normal(size=(50, 3))
    th = np.linalg.norm(v, axis=1, keepdims=True)
    cot = 1 / np.tan(th / 2)
    gamma = th * cot
    eta = np.sum(v * w, axis=1, keepdims=True) / th * (cot - 2 / th)
    paper = 0.5 * (gamma * w - eta * v + np.cross(v, w))
    assert np.abs(paper - flow_velocity(v, w, "local")).max() < 1e-6
    assert np.abs(paper - flow_velocity(v, w, "world")).max() > 0.1
    assert np.abs(paper - rq.rq_velocity(v, w, "local")).max() < 1e-12


def test_velocity_small_angle_is_not_just_omega():
    v = np.array([1e-3, 0, 0])
    w = np.array([0, 1.0, 0])
    got = rq.rq_velocity(v, w, "world")
    np.testing.assert_allclose(got, w - 0.5 * np.cross(v, w), atol=1e-7)
    with np.errstate(all="raise"):
        assert rq.rq_velocity(np.zeros(3), w).tolist() == w.tolist()


def test_velocity_bad_frame():
    with pytest.raises(ValueError, match="frame"):
        rq.rq_velocity(np.zeros(3), np.ones(3), frame="body")
