"""The chain IK solver (rq_rotation.ik): limits at every iterate, reach, the closest pose
against a brute force, dragging continuity, targets out of reach, locks and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import random_unit
from scipy.optimize import minimize, minimize_scalar
from scipy.spatial.transform import Rotation

import rq_rotation as rq
from rq_rotation import Joint, solve_chain
from rq_rotation import ik as ik_module

TIP = np.array([0.0, 1.0, 0.0])


def offset(length=1.0):
    """A child's rest frame at its parent's tail (a connected bone of that length)."""
    m = np.eye(4)
    m[1, 3] = length
    return m


def rotation(joint: Joint, p) -> np.ndarray:
    """A joint's rotation matrix from the public API (independent of the solver's kernels)."""
    p = np.asarray(p, dtype=float)
    if joint.kind == "rq":
        return rq.rq_to_matrix(p)
    if joint.kind == "swing_twist":
        return rq.quat_to_matrix(rq.swing_twist_to_quat(p[:2], p[2]))
    return rq.euler_to_matrix(p, joint.euler_order)


def end_effector(joints, params, tip=TIP):
    frame = np.eye(4)
    for joint, p in zip(joints, params, strict=True):
        frame = frame @ joint.offset
        frame[:3, :3] = frame[:3, :3] @ rotation(joint, p)
    return frame[:3, :3] @ tip + frame[:3, 3]


def joint_angles(joints, a, b):
    """Per joint, the angle between the rotations of parameters ``a`` and ``b``."""
    return np.array(
        [
            rq.quat_angle_between(rq.matrix_to_quat(rotation(j, pa)), rq.matrix_to_quat(rotation(j, pb)))
            for j, pa, pb in zip(joints, a, b, strict=True)
        ]
    )


def within_limits(joint: Joint, p, tol=1e-12):
    if joint.kind != "swing_twist":
        return True
    a, b, lo, hi = rq.effective_limits(*joint.swing_limit, *joint.twist_limit)
    x, z, t = p
    inside = True
    if a > 0 and b > 0:
        inside = (x / a) ** 2 + (z / b) ** 2 <= 1.0 + tol
    else:
        inside = abs(x) <= a + tol and abs(z) <= b + tol
    return bool(inside and lo - tol <= t <= hi + tol)


def arm(rng, n, kind="rq", **limits):
    joints = []
    for i in range(n):
        p = rng.normal(0.0, 0.3, 3)
        if kind == "swing_twist":
            p[2] = 0.0
            joints.append(Joint("swing_twist", p, offset=offset() if i else np.eye(4), **limits))
        else:
            joints.append(Joint(kind, p, offset=offset() if i else np.eye(4)))
    return joints


def start_of(joints):
    return np.stack([j.params for j in joints])


# -- the private kernels against the public functions ---------------------------------------


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-6, 5e-3, 0.01, 0.2, 0.25, 0.3, 1.0, 3.0, 6.0, 9.0])
def test_factor_kernel_matches_rq_to_quat_and_its_jacobian(rng, angle):
    v = random_unit(rng, 5) * angle
    q, jac = ik_module._factor_kernel(v, True)
    np.testing.assert_allclose(q, rq.rq_to_quat(v), rtol=0, atol=4e-16)
    np.testing.assert_allclose(jac, rq.rq_quat_jacobian(v), rtol=0, atol=4e-16)


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-6, 0.2, 0.25, 0.3, 1.0, 3.0, math.pi])
def test_log_and_its_jacobian_match_quat_to_rq_and_rq_velocity(rng, angle):
    delta = random_unit(rng, 5) * angle
    q = rq.rq_to_quat(delta)
    np.testing.assert_allclose(ik_module._log(q), rq.quat_to_rq(q), rtol=0, atol=1e-15)
    omega = rng.normal(size=(5, 3))
    expected = rq.rq_velocity(delta, omega, frame="local")
    got = np.einsum("nij,nj->ni", ik_module._log_jacobian(delta), omega)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)


def test_fast_ellipse_projection_matches_clamp_swing_ellipse(rng):
    for a, b in [(1.0, 1.0), (0.8, 1.2), (1e-3, 2.0), (3.0, 1e-4), (0.5, 0.5)]:
        points = rng.normal(0.0, 2.0, (300, 2)) * rng.uniform(0.01, 10.0, (300, 1))
        expected = rq.clamp_swing_ellipse(points, a, b)
        got = np.array([ik_module._project_ellipse(x, z, a, b) for x, z in points])
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12 * max(a, b))


def test_chain_jacobians_match_central_differences(rng):
    """The analytic Jacobians of the reach (position and orientation) and of the angles."""
    joints = [
        Joint("swing_twist", (0.3, -0.2, 0.4)),
        Joint("rq", (0.5, -1.0, 2.0), offset=offset(1.3)),
        Joint("euler", (0.2, 0.7, -0.4), offset=offset(0.7), euler_order="ZXY"),
    ]
    chain = ik_module._Chain(joints, TIP, np.array([1.0, 1.0, 0.0]), np.eye(3), 0.7)
    p = start_of(joints)
    chain.start(p + 0.3)
    state = chain.evaluate(p, jacobians=True)
    h = 1e-6
    for k in range(9):
        dp = np.zeros(9)
        dp[k] = h
        plus = chain.evaluate(p + dp.reshape(3, 3), jacobians=False)
        minus = chain.evaluate(p - dp.reshape(3, 3), jacobians=False)
        np.testing.assert_allclose(state.j1[:, k], (plus.r1 - minus.r1) / (2 * h), atol=1e-8)
        d2 = (plus.delta - minus.delta).ravel() / (2 * h)
        np.testing.assert_allclose(state.j2[:, k], d2, atol=1e-8)
