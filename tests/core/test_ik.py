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
            rq.quat_angle_between(
                rq.matrix_to_quat(rotation(j, pa)), rq.matrix_to_quat(rotation(j, pb))
            )
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


def assert_stationary(joints, target, params):
    """The Lagrangian's gradient vanishes on the free parameters at ``params`` (a reached pose
    without active limits): first-order optimality of the angles on the reaching set, with
    the multipliers `_lagrangian` fits (``params`` measured from the joints' start pose)."""
    chain = ik_module._Chain(joints, TIP, target, None, 1.0)
    chain.start(start_of(joints))
    state = chain.evaluate(params, jacobians=True)
    gradient = state.j2.T @ state.delta.ravel()
    multiplier = ik_module._lagrangian(chain, state, gradient)[1]
    stationary = (gradient + state.j1.T @ multiplier)[chain.free]
    assert np.abs(stationary).max() < 1e-5 * np.abs(gradient).max(), stationary


def assert_first_order(joints, target, params, tip=TIP, tolerance=1e-5):
    """First-order optimality at ``params`` (measured from the joints' start pose), with the
    limits: reached, the angles' gradient is a combination of the reach's rows (multipliers
    of any sign) and of the outward normals of the limits it lies on, with weights that are
    not negative (a negative one is a limit the angles would leave); out of reach the
    same for the reach's gradient ``J^T r`` and the limits alone. On the free parameters,
    relative to the gradient's largest component; the weights fitted by least squares, so
    independent of the solver's own multipliers (`assert_stationary` checks those)."""
    chain = ik_module._Chain(joints, np.asarray(tip, float), np.asarray(target, float), None, 1.0)
    chain.start(start_of(joints))
    state = chain.evaluate(params, jacobians=True)
    reached = state.e1 < 1e-9
    gradient = state.j2.T @ state.delta.ravel() if reached else state.j1.T @ state.r1
    columns = list(state.j1) if reached else []
    on_box, normals = ik_module._limits_at(chain, state.p)
    columns += ik_module._limit_normals(chain, on_box, normals)
    a = np.array(columns).T[chain.free] if columns else np.zeros((chain.free.sum(), 0))
    weights = np.linalg.lstsq(a, -gradient[chain.free], rcond=None)[0]
    scale = np.abs(gradient).max()
    residual = gradient[chain.free] + a @ weights
    assert np.abs(residual).max() < tolerance * scale, residual
    limits = weights[len(state.j1) if reached else 0 :]
    assert limits.min(initial=0.0) > -tolerance * scale, (limits, on_box, sorted(normals))


def tail(params):
    """A tail of swing/twist joints (ellipses 0.5 x 0.7, twists -0.3..0.3, bones 0.4) posed at
    ``params`` (one triple per joint), as `random_chain` makes them."""
    return [
        Joint(
            "swing_twist",
            p,
            offset=offset(0.4) if i else np.eye(4),
            swing_limit=(0.5, 0.7),
            twist_limit=(-0.3, 0.3),
        )
        for i, p in enumerate(params)
    ]


def squared_angles(joints, params):
    """The sum of the squared joint rotation angles from the joints' start pose to ``params``
    (what the solver minimizes among the poses that reach)."""
    chain = ik_module._Chain(joints, TIP, np.zeros(3), None, 1.0)
    chain.start(start_of(joints))
    return chain.evaluate(params, jacobians=False).e2


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


@pytest.mark.parametrize(
    "angle", [0.0, 1e-12, 1e-6, 5e-3, 0.01, 0.2, 0.25, 0.3, 1.0, 3.0, 6.0, 9.0]
)
def test_factor_matches_rq_to_quat_and_its_jacobian(rng, angle):
    """`_factor`'s quaternion is ``rq_to_quat``'s; its matrix maps ``dv`` to the body angular
    velocity ``2 vec(conj(q) dq)`` of ``rq_quat_jacobian``'s ``dq``."""
    v = random_unit(rng, 5) * angle
    q = rq.rq_to_quat(v)
    jac = rq.rq_quat_jacobian(v)  # (5, 4, 3)
    for k in range(5):
        got_q, m = ik_module._factor(*v[k].tolist())
        np.testing.assert_allclose(got_q, q[k], rtol=0, atol=4e-16)
        w, u = q[k, 0], q[k, 1:]
        dw, du = jac[k, 0], jac[k, 1:]  # (3,), (3, 3): columns j
        expected = 2.0 * (w * du - np.outer(u, dw) - np.cross(u, du, axis=0))
        np.testing.assert_allclose(np.reshape(m, (3, 3)), expected, rtol=0, atol=4e-15)


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-6, 0.2, 0.25, 0.3, 1.0, 3.0, math.pi])
def test_log_and_its_jacobian_match_quat_to_rq_and_rq_velocity(rng, angle):
    delta = random_unit(rng, 5) * angle
    q = rq.rq_to_quat(delta)
    got = [ik_module._log(*row) for row in q.tolist()]
    np.testing.assert_allclose(got, rq.quat_to_rq(q), rtol=0, atol=1e-15)
    omega = rng.normal(size=(5, 3))
    expected = rq.rq_velocity(delta, omega, frame="local")
    got = [
        np.reshape(ik_module._log_jacobian(*d), (3, 3)) @ w
        for d, w in zip(delta.tolist(), omega, strict=True)
    ]
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


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-6, 0.01, 0.049, 0.051, 0.3, 1.0, 3.0, 6.0])
def test_factor_curvature_matches_differences_of_the_angular_velocities(rng, angle):
    """`_factor_curvature`: ``S_ab . q`` with ``S_ab`` the symmetrized derivatives of
    `_factor`'s columns ``w_a``, against central differences of them (on both sides of the
    series' bound `_SERIES`), and continuous across that bound."""
    h = 1e-6
    for v in random_unit(rng, 4) * angle:
        q = rng.normal(size=3)
        dm = [  # dM/dv_b: column a is dw_a/dv_b
            (
                np.reshape(ik_module._factor(*(v + h * e))[1], (3, 3))
                - np.reshape(ik_module._factor(*(v - h * e))[1], (3, 3))
            )
            / (2 * h)
            for e in np.eye(3)
        ]
        expected = [[0.5 * (dm[b][:, a] + dm[a][:, b]) @ q for b in range(3)] for a in range(3)]
        got = np.reshape(ik_module._factor_curvature(*v.tolist(), tuple(q)), (3, 3))
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    u = random_unit(rng, 1)[0]
    q = tuple(rng.normal(size=3))
    below, above = (
        np.array(ik_module._factor_curvature(*(u * t).tolist(), q))
        for t in (ik_module._SERIES * (1 - 1e-12), ik_module._SERIES * (1 + 1e-12))
    )
    np.testing.assert_allclose(below, above, rtol=0, atol=1e-13)


def test_curvature_is_the_lagrangians_hessian(rng):
    """`_Chain.curvature`: the angles' Hessian plus the multipliers times the end effector's
    second derivatives (or those alone, ``angles=False``), exact (against central
    differences of the Lagrangian's analytic gradient ``J2^T delta + J1^T lambda``) within
    and between joints of every kind: a swing and its twist, Euler angles, RQ vectors (one
    below the series' bound), away from the start pose (the angles' own curvature grows with
    them)."""
    joints = [
        Joint("swing_twist", (0.3, -0.2, 0.4)),
        Joint("euler", (0.2, 0.7, -0.4), offset=offset(0.7), euler_order="ZXY"),
        Joint("rq", (0.5, -1.0, 0.6), offset=offset(1.3)),
        Joint("rq", (0.01, -0.02, 0.015), offset=offset(0.5)),
    ]
    chain = ik_module._Chain(joints, TIP, np.array([1.0, 1.0, 0.0]), None, 1.0)
    p = start_of(joints)
    chain.start(p + rng.normal(0.0, 0.4, p.shape))
    multiplier = rng.normal(size=3)

    def gradient(x, angles=True):
        state = chain.evaluate(x, jacobians=True)
        reach = state.j1.T @ multiplier
        return state.j2.T @ state.delta.ravel() + reach if angles else reach

    h = 1e-6
    for angles in (True, False):  # (without the angles: the reach's part, `_escape`'s)
        expected = np.empty((12, 12))
        for k in range(12):
            dp = np.zeros(12).reshape(4, 3)
            dp.flat[k] = h
            expected[k] = (gradient(p + dp, angles) - gradient(p - dp, angles)) / (2 * h)
        got = chain.curvature(chain.evaluate(p, jacobians=True), multiplier, angles=angles)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)
    # at the start pose (delta = 0) the multipliers vanish and the Hessian is Gauss-Newton's,
    # which `_lagrangian` takes without computing it
    state = chain.evaluate(chain.project(p), jacobians=True)
    chain.start(state.p)
    state = chain.evaluate(state.p, jacobians=True)
    assert state.e2 == 0.0
    gauss_newton = state.j2.T @ state.j2
    np.testing.assert_allclose(chain.curvature(state, np.zeros(3)), gauss_newton, atol=1e-14)
    exact, multiplier = ik_module._lagrangian(chain, state, state.j2.T @ state.delta.ravel())
    np.testing.assert_array_equal(exact, gauss_newton)
    np.testing.assert_array_equal(multiplier, np.zeros(3))


def test_reach_hessian_is_newtons_on_and_off_the_ellipse(rng):
    """`_reach_hessian`: off every limit, the Hessian of ``|r1|^2 / 2`` (against central
    differences of its analytic gradient ``J1^T r1``); with a swing on its ellipse, where the
    reach pushes against it, the second derivative of ``|r1|^2 / 2`` along the ellipse (the
    swing ``(a cos phi, b sin phi)``) at the ellipse's closest point (a constrained stationary
    point, found by a scalar search) is ``p'^T H p'``: the ellipse's curvature weighted by its
    multiplier is in ``H``, without which it is not."""
    joints = [
        Joint("swing_twist", (0.2, -0.1, 0.3), swing_limit=(0.5, 0.8), twist_limit=(-1.0, 1.0)),
        Joint("rq", (0.4, -0.6, 0.2), offset=offset(1.0)),
    ]
    target = np.array([0.4, 1.2, 1.5])
    chain = ik_module._Chain(joints, TIP, target, None, 1.0)
    p = start_of(joints)
    chain.start(p)

    def gradient(x):
        state = chain.evaluate(x, jacobians=True)
        return state.j1.T @ state.r1

    h = 1e-6
    expected = np.empty((6, 6))
    for k in range(6):
        dp = np.zeros(6).reshape(2, 3)
        dp.flat[k] = h
        expected[k] = (gradient(p + dp) - gradient(p - dp)) / (2 * h)
    got = ik_module._reach_hessian(chain, chain.evaluate(p, jacobians=True))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-8)

    # the target far to the side: the shoulder's swing stops on its ellipse
    a, b = 0.5, 0.8
    target = np.array([3.0, 0.5, 0.0])
    chain = ik_module._Chain(joints, TIP, target, None, 1.0)
    chain.start(p)

    def on_ellipse(phi):
        x = p.copy()
        x[0, :2] = a * math.cos(phi), b * math.sin(phi)
        return x

    def half_square(phi):
        return 0.5 * chain.evaluate(on_ellipse(phi), jacobians=False).e1 ** 2

    phi = minimize_scalar(
        half_square, bounds=(-math.pi, math.pi), method="bounded", options={"xatol": 1e-12}
    ).x
    h = 1e-4
    second = (half_square(phi + h) - 2 * half_square(phi) + half_square(phi - h)) / (h * h)
    state = chain.evaluate(on_ellipse(phi), jacobians=True)
    tangent = np.zeros(6)
    tangent[:2] = -a * math.sin(phi), b * math.cos(phi)
    hessian = ik_module._reach_hessian(chain, state)
    assert tangent @ hessian @ tangent == pytest.approx(second, rel=1e-5)
    plain = state.j1.T @ state.j1 + chain.curvature(state, state.r1, angles=False)
    assert abs(tangent @ plain @ tangent - second) > 1e-3 * abs(second)


# -- the closest pose, against a brute force -------------------------------------------------


def _align(d):
    """The rotations (..., 3, 3) taking Y to the unit vectors ``d`` (..., 3) by the shortest arc."""
    y = np.array([0.0, 1.0, 0.0])
    axis = np.cross(y, d)
    s = np.linalg.norm(axis, axis=-1)
    angle = np.arctan2(s, d @ y)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(s[..., None] > 0, axis / s[..., None] * angle[..., None], 0.0)
    return v  # an RQ vector with no Y component: a swing


def _elbows(target, phi):
    """Elbow positions on the circle of two unit bones from the origin reaching ``target``."""
    dist = np.linalg.norm(target)
    u = target / dist
    along = dist / 2.0
    radius = math.sqrt(1.0 - along * along)
    e1 = np.cross(u, [1.0, 0.0, 0.0])
    if np.linalg.norm(e1) < 0.1:
        e1 = np.cross(u, [0.0, 0.0, 1.0])
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(u, e1)
    return along * u + radius * (np.cos(phi)[..., None] * e1 + np.sin(phi)[..., None] * e2)


def _rq_poses(target, phi, tau1, tau2):
    """Every reaching pose of two RQ joints: elbow angle ``phi``, twists ``tau1``, ``tau2``."""
    elbow = _elbows(target, phi)
    r1 = Rotation.from_rotvec(_align(elbow)) * Rotation.from_rotvec(tau1[..., None] * [0, 1, 0])
    forearm = r1.inv().apply(target - elbow)
    r2 = Rotation.from_rotvec(_align(forearm)) * Rotation.from_rotvec(tau2[..., None] * [0, 1, 0])
    return r1, r2


def _objective(start_rotations, r1, r2):
    a = (start_rotations[0].inv() * r1).magnitude()
    b = (start_rotations[1].inv() * r2).magnitude()
    return a * a + b * b


@pytest.mark.parametrize("seed", range(4))
def test_two_rq_joints_reach_the_closest_pose_of_a_brute_force(seed):
    """Among the 3-parameter family of poses of two RQ joints reaching a target, the solver's is
    the one with the smallest sum of squared rotation angles from the start, within 1e-3 rad
    of the brute force's (a grid over the family, then refined)."""
    rng = np.random.default_rng(seed)
    joints = [
        Joint("rq", rng.normal(0, 0.4, 3)),
        Joint("rq", rng.normal(0, 0.4, 3), offset=offset()),
    ]
    start = start_of(joints)
    tip0 = end_effector(joints, start)
    target = tip0 + rng.normal(0, 0.4, 3)
    target *= min(1.0, 1.9 / np.linalg.norm(target))
    result = solve_chain(joints, TIP, target)
    assert result.distance < 1e-9

    r0 = [Rotation.from_rotvec(p) for p in start]
    grid = np.linspace(-math.pi, math.pi, 73)
    phi, t1, t2 = np.meshgrid(grid, grid, grid, indexing="ij")
    r1, r2 = _rq_poses(target, phi.ravel(), t1.ravel(), t2.ravel())
    values = _objective(r0, r1, r2)
    best = np.argmin(values)

    def f(x):
        a, b = _rq_poses(target, np.array([x[0]]), np.array([x[1]]), np.array([x[2]]))
        return float(_objective(r0, a, b)[0])

    refined = minimize(
        f,
        [phi.ravel()[best], t1.ravel()[best], t2.ravel()[best]],
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000},
    )
    b1, b2 = _rq_poses(target, *(np.array([x]) for x in refined.x))
    assert result.moved**2 <= refined.fun + 1e-9
    ours = [Rotation.from_rotvec(p) for p in result.params]
    assert (ours[0].inv() * b1[0]).magnitude() < 1e-3
    assert (ours[1].inv() * b2[0]).magnitude() < 1e-3


PAST_THE_ELBOWS_LIMIT = [  # (start, a pose within the limits whose tip is the target, stops?)
    (((0.05, -0.02), (0.45, 0.03)), ((0.1, 0.05), (0.35, 0.5)), True),
    (((0.1, 0.1), (0.4, 0.3)), ((0.25, 0.05), (0.2, 0.8)), True),
    (((-0.1, 0.2), (0.3, -0.5)), ((0.0, 0.1), (0.45, -0.3)), False),
]


@pytest.mark.parametrize("case", [*range(8), *PAST_THE_ELBOWS_LIMIT])
def test_two_swing_joints_stop_at_the_ellipse_where_the_brute_force_does(case):
    """Two swing/twist joints without twist (range [0, 0]) reach a target along a circle of
    elbow positions; their ellipses cut it. The solver's pose is the brute force's closest
    within 1e-3 rad, on the same limits. The targets: a drag away from the start (each swing
    coordinate moved by up to 0.3 rad), and three from a start near the elbow's ellipse, two of
    which stop it on the ellipse. (The solver finds the closest pose connected to the start:
    limits can cut the reaching set into pieces, and a far target can lead it into another.)"""
    limits = {"swing_limit": (0.5, 0.9), "twist_limit": (0.0, 0.0)}
    if isinstance(case, int):
        rng = np.random.default_rng(200 + case)
        swings0 = rng.uniform(-0.2, 0.2, (2, 2))
        moved = rq.clamp_swing_ellipse(swings0 + rng.uniform(-0.3, 0.3, (2, 2)), 0.5, 0.9)
    else:
        swings0, moved = np.array(case[0]), np.array(case[1])
    joints = [
        Joint("swing_twist", (*swings0[0], 0.0), **limits),
        Joint("swing_twist", (*swings0[1], 0.0), offset=offset(), **limits),
    ]
    start = start_of(joints)
    pose = start.copy()
    pose[:, :2] = moved
    target = end_effector(joints, pose)
    result = solve_chain(joints, TIP, target)
    assert result.distance < 1e-9
    stops = not isinstance(case, int) and case[2]
    assert result.active == ((), ("swing",) if stops else ())

    def swings(phi):
        elbow = _elbows(target, phi)
        s1 = _align(elbow)[..., [0, 2]]
        r1 = Rotation.from_rotvec(_align(elbow))
        s2 = _align(r1.inv().apply(target - elbow))[..., [0, 2]]
        return s1, s2

    def objective(phi):
        s1, s2 = swings(phi)
        inside = ((s1 / (0.5, 0.9)) ** 2).sum(-1) <= 1 + 1e-12
        inside &= ((s2 / (0.5, 0.9)) ** 2).sum(-1) <= 1 + 1e-12
        a = joint_angles_vec(start[0], s1)
        b = joint_angles_vec(start[1], s2)
        return np.where(inside, a * a + b * b, np.inf)

    phi = np.linspace(-math.pi, math.pi, 200001)
    values = objective(phi)
    best = phi[np.argmin(values)]
    assert np.isfinite(values.min())
    s1, s2 = swings(np.array([best]))
    got = result.params
    assert result.moved**2 <= values.min() + 1e-6
    assert joint_angles_vec(got[0], s1)[0] < 1e-3
    assert joint_angles_vec(got[1], s2)[0] < 1e-3


def joint_angles_vec(start, swings):
    """Angles between the swing/twist pose ``start`` (3,) and swings (..., 2) without twist."""
    q0 = rq.swing_twist_to_quat(start[:2], start[2])
    q = rq.swing_twist_to_quat(swings, np.zeros(swings.shape[:-1]))
    return rq.quat_angle_between(q0, q)


# -- limits, reach, dragging ----------------------------------------------------------------


def hinge(bend=0.0, length=1.0, limit=2.5):
    """An elbow: a swing/twist joint bent ``bend`` about X, at the tail of a parent bone of
    ``length``, with a zero semi-axis (it bends about X only, up to ``limit``) and no twist."""
    return Joint(
        "swing_twist",
        (bend, 0.0, 0.0),
        offset=offset(length),
        swing_limit=(limit, 0.0),
        twist_limit=(0.0, 0.0),
    )


def mixed_chain(rng):
    """Shoulder (swing/twist), elbow (a hinge: zero semi-axis), wrist (RQ), a hand (Euler)."""
    return [
        Joint("swing_twist", (0.2, -0.1, 0.1), swing_limit=(0.7, 1.1), twist_limit=(-0.4, 0.8)),
        hinge(0.3, limit=1.5),
        Joint("rq", rng.normal(0, 0.3, 3), offset=offset(0.8)),
        Joint(
            "euler",
            (0.1, 0.2, 0.3),
            offset=offset(0.5),
            euler_order="YZX",
            locks=(False, True, False),
        ),
    ]


def test_limits_and_locks_hold_at_every_iterate(rng):
    for _ in range(12):
        joints = mixed_chain(rng)
        target = rng.normal(0.0, 1.6, 3)
        seen: list[np.ndarray] = []
        result = solve_chain(joints, TIP, target, callback=lambda i, p, seen=seen: seen.append(p))
        assert 1 < len(seen) <= result.iterations + 1
        for params in seen:
            for joint, p in zip(joints, params, strict=True):
                assert within_limits(joint, p), (joint, p)
            assert params[1, 1] == 0.0  # the hinge's zero semi-axis
            assert params[1, 2] == 0.0  # its twist range [0, 0]
            assert params[3, 1] == joints[3].params[1]  # the locked Euler angle
        np.testing.assert_allclose(seen[-1], result.params)


def test_many_ellipses_hold_at_every_iterate():
    """A chain of 6 ellipses (each tested one by one on the flat parameters, in the projection,
    the active set and the step's stop): every iterate within the limits, with swings stopped
    on their ellipses."""
    joints = arm(
        np.random.default_rng(3), 6, "swing_twist", swing_limit=(0.4, 0.6), twist_limit=(-0.2, 0.2)
    )
    on_ellipse = 0
    for target in [(0.0, 0.0, 9.0), (2.0, 3.5, 1.0), (-3.0, 1.0, -2.0)]:
        seen: list[np.ndarray] = []
        result = solve_chain(joints, TIP, target, callback=lambda i, p, s=seen: s.append(p))
        assert len(seen) > 1
        for params in seen:
            for joint, p in zip(joints, params, strict=True):
                assert within_limits(joint, p), (joint, p)
        on_ellipse += sum("swing" in names for names in result.active)
    assert on_ellipse >= 3  # the limits were in play


def test_reachable_targets_are_reached_to_rounding(rng):
    for n in (2, 3, 6, 10):
        for _ in range(5):
            joints = arm(rng, n)
            pose = start_of(joints) + rng.normal(0, 0.5, (n, 3))
            target = end_effector(joints, pose)
            result = solve_chain(joints, TIP, target)
            assert result.distance < 1e-9 * n
            np.testing.assert_allclose(end_effector(joints, result.params), target, atol=1e-9 * n)


def test_an_orientation_target_is_matched_too(rng):
    joints = arm(rng, 4)
    pose = start_of(joints) + rng.normal(0, 0.4, (4, 3))
    frame = np.eye(4)
    for joint, p in zip(joints, pose, strict=True):
        frame = frame @ joint.offset
        frame[:3, :3] = frame[:3, :3] @ rotation(joint, p)
    result = solve_chain(joints, TIP, end_effector(joints, pose), target_rotation=frame[:3, :3])
    assert result.distance < 1e-9
    assert result.orientation_error < 1e-9


def test_a_dragged_target_moves_the_chain_in_small_steps(rng):
    """Targets 0.01 chain lengths apart along a curve: each solve starts from the last pose;
    every parameter step stays small and every target is reached."""
    joints = mixed_chain(rng)
    base = end_effector(joints, start_of(joints))
    total = 3.3
    previous = start_of(joints)
    for t in np.linspace(0.0, 1.0, 101)[1:]:
        target = base + 0.5 * np.array(
            [math.sin(2 * math.pi * t), math.cos(2 * math.pi * t) - 1, -t]
        )
        joints = [
            Joint(j.kind, p, j.offset, j.locks, j.swing_limit, j.twist_limit, j.euler_order)
            for j, p in zip(joints, previous, strict=True)
        ]
        result = solve_chain(joints, TIP, target)
        assert result.distance < 1e-8 * total
        assert np.abs(result.params - previous).max() < 0.15
        assert result.moved < 0.15
        previous = result.params


def test_rq_joints_cross_the_shells_continuously():
    """A free RQ joint started beyond 2 pi keeps its spin: the result is the equivalent
    vector closest to the start (the solver works on the reparameterized one)."""
    spin = np.array([0.0, 2.0 * math.pi + 1.0, 0.0])  # a turn and a radian about Y
    joints = [Joint("rq", spin), Joint("rq", (0.3, 0.0, 0.0), offset=offset())]
    target = end_effector(joints, start_of(joints)) + (0.2, -0.3, 0.1)
    result = solve_chain(joints, TIP, target)
    assert result.distance < 1e-9
    v = result.params[0]
    assert np.linalg.norm(v) > 2.0 * math.pi  # still beyond the first shell
    np.testing.assert_allclose(v, rq.quat_to_rq(rq.rq_to_quat(v), near=spin), atol=1e-12)
    assert joint_angles(joints, start_of(joints), result.params)[0] < 0.5


# -- out of reach ------------------------------------------------------------------------------


def test_a_target_out_of_reach_stretches_the_chain_towards_it(rng):
    joints = arm(rng, 3)
    direction = random_unit(rng, 1)[0]
    result = solve_chain(joints, TIP, 5.0 * direction)
    assert result.distance == pytest.approx(2.0, abs=1e-9)
    # the distance is flat (quadratic) in the bend of a stretched chain: the pose within 1e-4
    np.testing.assert_allclose(end_effector(joints, result.params), 3.0 * direction, atol=1e-4)


@pytest.mark.parametrize("kind", ["rq", "swing_twist"])
@pytest.mark.parametrize(
    "target", [(0.0, 1.5, 0.0), (0.0, 0.5, 0.0), (0.0, -0.5, 0.0), (0.0, 1.9, 0.0), (0.2, 1.0, 0.0)]
)
def test_a_straight_chain_bends_towards_a_nearer_target_on_its_line(kind, target):
    """A chain stretched straight starts at a saddle of the reach when the target lies on its
    line, nearer than its length: every first-order move is across the line, so the
    Gauss-Newton step is zero (the solve used to stop there, its distance untouched). Off
    the saddle along the reach's negative curvature (`ik._escape`) the chain bends and
    reaches; the swing/twist elbow is a hinge (bends about X) that stops at 2.5 rad, so
    halfway up the arm its closest pose is analytic, and behind the shoulder its ellipse
    stops it (closer than the straight start all the same)."""
    if kind == "rq":
        joints = [Joint("rq", (0.0, 0.0, 0.0)), Joint("rq", (0.0, 0.0, 0.0), offset=offset())]
    else:
        joints = [
            Joint("swing_twist", (0.0, 0.0, 0.0), swing_limit=(1.5, 1.5), twist_limit=(-1, 1)),
            hinge(),
        ]
    target = np.array(target)
    result = solve_chain(joints, TIP, target)
    assert all(within_limits(j, q) for j, q in zip(joints, result.params, strict=True))
    start = np.linalg.norm(end_effector(joints, start_of(joints)) - target)
    if kind == "swing_twist" and target[1] == 0.5:  # folded as far as the hinge goes
        assert result.distance == pytest.approx(2.0 * math.cos(1.25) - 0.5, abs=1e-9)
    elif kind == "swing_twist" and target[1] < 0.0:  # behind the shoulder's ellipse
        # the global closest distance: SciPy's differential evolution over the limits (swing
        # radius and angle, twist, hinge; seed 1, tol 1e-12, polished) found 0.25457091293,
        # the shoulder on its circle and the hinge at -2.5 (SLSQP cannot take the hinge's
        # zero semi-axis: its ellipse constraint divides by it)
        assert start == pytest.approx(2.5)
        assert result.distance == pytest.approx(0.25457091293, abs=1e-9)
    else:
        assert result.distance < 1e-9


def test_a_straight_tail_folds_toward_the_middle_of_its_line():
    """Ten swing/twist joints (ellipse 0.5 x 0.7, twist +-0.3, bones 0.4) stretched straight,
    and a target halfway along their line: the saddle of a long chain, which crawls after
    the first step off it (with only small steps off saddles, 1.6e-5 short). The reach holds
    eight ellipses on its way, one step joining them in four rounds; while the fourth round's
    were held by `_advance`'s projection alone (`_constrained_step` solved four times) it
    stopped in 20 iterations at a local minimum whose squared angles are 2.19; with each step
    solved with the limits it holds, it ends at 1.96, in 38."""
    joints = [
        Joint(
            "swing_twist",
            (0.0, 0.0, 0.0),
            offset=offset(0.4) if i else np.eye(4),
            swing_limit=(0.5, 0.7),
            twist_limit=(-0.3, 0.3),
        )
        for i in range(10)
    ]
    result = solve_chain(joints, (0.0, 0.4, 0.0), (0.0, 2.0, 0.0))
    assert result.distance < 1e-6
    assert all(within_limits(j, q) for j, q in zip(joints, result.params, strict=True))
    assert_first_order(joints, (0.0, 2.0, 0.0), result.params, tip=(0.0, 0.4, 0.0))
    assert squared_angles(joints, result.params) < 2.0
    assert result.iterations <= 45  # 38


def test_a_reach_whose_angles_want_a_long_way_does_not_crawl():
    """The benchmark's arm (a shoulder with an ellipse and a twist range, a hinge elbow, an RQ
    wrist) reaching a target whose closest pose lies far along the reaching set: with the
    curved steps' angles' part cut to the square root of the distance left, the distance fell
    by a constant factor a step and the solve took 20 iterations; wide steps whose reach is
    taken back by chords (`WIDE_RESTORE`) take 9. The pose is the same: reached, and
    stationary for the angles on the reaching set (the multipliers make the Lagrangian's
    gradient vanish on the free parameters)."""
    joints = [
        Joint(
            "swing_twist",
            (0.106, 0.130, 0.078),
            swing_limit=(math.radians(70), math.radians(110)),
            twist_limit=(math.radians(-40), math.radians(80)),
        ),
        hinge(bend=0.977),
        Joint("rq", (-0.113, -0.090, -0.414), offset=offset(0.9)),
    ]
    target = np.array([-1.756, 1.522, -0.820])
    result = solve_chain(joints, TIP, target)
    assert result.distance < 1e-9
    assert result.iterations <= 12, result.iterations
    assert not any(result.active)
    assert_stationary(joints, target, result.params)


def test_an_arm_with_an_out_of_plane_hinge_reaches_from_straight():
    """The demo's arm at rest, straight: a swing/twist shoulder (ellipse 70 x 110 degrees,
    twist -40..80), an elbow hinge about X (145 degrees), an RQ wrist, and a target in front
    in the XY plane, where the elbow cannot bend. Gauss-Newton and then BFGS turn the shoulder
    and wrist in that plane and crawl (0.18 short after 200 iterations with numpy 2): a
    saddle too, left once the slow steps pile up."""
    joints = [
        Joint(
            "swing_twist",
            (0.0, 0.0, 0.0),
            swing_limit=(math.radians(70), math.radians(110)),
            twist_limit=(math.radians(-40), math.radians(80)),
        ),
        hinge(limit=math.radians(145)),
        Joint("rq", (0.0, 0.0, 0.0), offset=offset(0.9)),
    ]
    tip = np.array([0.0, 0.25, 0.0])
    result = solve_chain(joints, tip, (0.9, 1.2, 0.0))
    assert result.distance < 1e-9
    assert result.iterations < 50


def test_the_angles_are_not_left_off_the_reaching_set():
    """An 8-joint tail (ellipses 0.5 x 0.7, twists -0.3..0.3) reaching a target where the
    angles' minimization dances between active limits. A step accepted there may leave the
    reach off by its slack (`RESTORE_SLACK`), and every later step that restores the reach
    must also beat the angles of that point off the reaching set: none did, and the solve
    stopped 1.6% above the closest pose's squared angles (after the wide steps took it there).
    It is put back on the reaching set and goes on: solving on from its result gains
    nothing."""
    params = [
        (-0.1615, 0.0851, -0.0158),
        (-0.1308, -0.0646, -0.0118),
        (-0.1893, 0.1073, 0.0767),
        (-0.108, 0.0712, -0.0961),
        (0.1589, 0.1804, -0.0053),
        (-0.1559, 0.187, -0.0967),
        (-0.1286, -0.0994, -0.0418),
        (0.1955, 0.1318, -0.0366),
    ]
    joints = tail(params)
    target = np.array([1.5055, 2.0376, -0.5533])
    result = solve_chain(joints, TIP, target)
    assert result.distance < 1e-9
    chain = ik_module._Chain(joints, TIP, target, None, 1.0)
    start = start_of(joints)
    chain.start(start)
    state = chain.evaluate(result.params, jacobians=True)
    on, _ = ik_module._solve(chain, state, 200, None, start)
    assert on.e2 > state.e2 * (1.0 - 1e-9), (state.e2, on.e2)


def test_a_refused_step_is_not_tried_again(monkeypatch):
    """The arm reaching a target where a slow (BFGS) step is refused: the damping is
    ``max(mu, e1)^2``, and raising ``mu`` while it was below the residual ``e1`` tried the very
    same step again (four more evaluations of one point, 12 iterations against 9). No point
    is evaluated with its Jacobians twice."""
    joints = [
        Joint(
            "swing_twist",
            (0.244, -0.138, -0.116),
            swing_limit=(math.radians(70), math.radians(110)),
            twist_limit=(math.radians(-40), math.radians(80)),
        ),
        hinge(bend=0.866),
        Joint("rq", (-0.205, 0.328, -0.381), offset=offset(0.9)),
    ]
    evaluated: list[bytes] = []
    evaluate = ik_module._Chain.evaluate

    def logged(self, p, jacobians):
        if jacobians:
            evaluated.append(p.tobytes())
        return evaluate(self, p, jacobians)

    monkeypatch.setattr(ik_module._Chain, "evaluate", logged)
    result = solve_chain(joints, TIP, (0.435, 0.838, 1.199))
    assert result.distance < 1e-9
    assert len(set(evaluated)) == len(evaluated)


def _slsqp_distance(joints, target):
    """The reach of SciPy's SLSQP with the ellipses as inequalities (numerical Jacobians)."""
    bounds, constraints = [], []
    for i, joint in enumerate(joints):
        a, b, lo, hi = rq.effective_limits(*joint.swing_limit, *joint.twist_limit)
        bounds += [(-a, a), (-b, b), (lo, hi)]
        constraints.append(
            {
                "type": "ineq",
                "fun": lambda x, i=i, a=a, b=b: 1 - (x[3 * i] / a) ** 2 - (x[3 * i + 1] / b) ** 2,
            }
        )

    def f(x):
        d = end_effector(joints, x.reshape(-1, 3)) - target
        return float(d @ d)

    x0 = start_of(joints).ravel()
    best = minimize(
        f,
        x0,
        method="SLSQP",
        bounds=bounds,
        constraints=constraints,
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return math.sqrt(best.fun)


@pytest.mark.parametrize("seed", range(5))
def test_out_of_reach_with_limits_is_as_close_as_slsqp_gets(seed):
    """Swing/twist chains against targets their limits keep out of reach: the distance left is
    SciPy SLSQP's (from the same start, run to ``ftol=1e-15``) within 1e-6 of it, or less, and
    the result lies on its limits. (With every joint on its limits the solver's active set
    converges linearly; it stops within about 1e-7 of the chain's length.)"""
    rng = np.random.default_rng(300 + seed)
    joints = arm(rng, 3, "swing_twist", swing_limit=(0.6, 0.9), twist_limit=(-0.3, 0.3))
    target = random_unit(rng, 1)[0] * rng.uniform(1.0, 4.0)
    target[1] = -abs(target[1])  # behind the shoulder: out of reach
    result = solve_chain(joints, TIP, target)
    assert result.distance > 0.1
    assert result.distance <= _slsqp_distance(joints, target) * (1.0 + 1e-6)
    assert any(result.active)


def test_out_of_reach_a_straight_chain_is_not_rolled_about_its_line():
    """An arm (RQ clavicle, swing/twist upper arm with its limits, RQ forearm and hand) posed,
    then aimed 1.2 beyond its reach: every pose of the chain stretched towards the target
    approaches as closely, whatever each bone's roll about the line. The angles were
    minimized in the reach Jacobian's null space, whose bending directions lose the reach at
    second order: every step was refused, and the bones kept the rolls the reach gave them
    (squared angles 2.88, the upper arm turned 60 degrees). Along the reach's flat
    directions alone (`CLOSEST_FLAT`) the rolls are undone: 2.109, the least a search over
    the four rolls finds (Nelder-Mead)."""
    root = np.array([[0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 1, 1.5], [0, 0, 0, 1]], float)
    joints = [
        Joint("rq", (0.1, 0.2, 0.3), offset=root),
        Joint(
            "swing_twist",
            (0.4, -0.6, 0.3),
            offset=offset(0.3),
            swing_limit=(math.radians(60), math.radians(90)),
            twist_limit=(math.radians(-45), math.radians(45)),
        ),
        Joint("rq", (0.0, 0.0, 1.2), offset=offset(0.7)),
        Joint("rq", (0.2, -0.3, 0.1), offset=offset(0.6)),
    ]
    tip = (0.0, 0.2, 0.0)
    result = solve_chain(joints, tip, (3.0, 0.0, 1.5))
    assert result.distance == pytest.approx(1.2, abs=1e-9)
    chain = ik_module._Chain(joints, np.array(tip), np.zeros(3), None, 1.0)
    chain.start(start_of(joints))
    assert chain.evaluate(result.params, jacobians=False).e2 < 2.11


def test_out_of_reach_the_angles_follow_a_curved_valley_of_closest_poses():
    """A tail of six swing/twist joints (ellipses 0.5 x 0.7, twists -0.3..0.3) held by its
    ellipses 1.2 short of a target: along the poses that approach as closely the angles'
    steps lose reach at third order along the residual, where chord steps cannot take it
    back; they were halved until they gained next to nothing, and the solve crept along to
    `max_iterations` (0.67 s), its squared angles 1.2908. Newton's steps on the reach pull
    each step back (`_retract`): 1.28283 in 38 iterations, as close to the target (SLSQP,
    the reach allowed 1e-9 farther: 1.28279)."""
    params = [
        (0.1040, 0.1528, 0.0011),
        (-0.0104, 0.0377, 0.0162),
        (0.0891, 0.1321, 0.0979),
        (-0.1123, 0.1564, -0.0080),
        (-0.1043, -0.0738, -0.0716),
        (-0.1076, 0.1045, -0.0512),
    ]
    joints = tail(params)
    target = np.array([-2.7025, -0.9889, -2.5333])
    result = solve_chain(joints, TIP, target)
    assert result.iterations < 40
    assert result.distance == pytest.approx(1.2068203, abs=1e-7)
    assert squared_angles(joints, result.params) < 1.2829


def test_a_limit_the_step_no_longer_crosses_is_let_go():
    """The benchmark's arm reaching a target: the steps' active set held the shoulder's
    ellipse and its twist's lower end, each joined when a step crossed it, and the solve
    ended on both (squared angles 6.80) although the angles' gradient pulls the shoulder
    back inside (a negative weight on the twist's end). Each limit held is let go where the
    step without it crosses no limit: the pose reached is first-order optimal with its
    limits (none active), squared angles 5.81, the least SLSQP finds from 40 random starts."""
    joints = [
        Joint(
            "swing_twist",
            (-0.200, 0.014, -0.229),
            swing_limit=(math.radians(70), math.radians(110)),
            twist_limit=(math.radians(-40), math.radians(80)),
        ),
        hinge(bend=0.744),
        Joint("rq", (-0.173, 0.155, 0.005), offset=offset(0.9)),
    ]
    target = np.array([-1.091, -0.882, -0.937])
    result = solve_chain(joints, TIP, target)
    assert result.distance < 1e-9
    assert_first_order(joints, target, result.params)
    assert squared_angles(joints, result.params) < 5.9


def random_chain(rng):
    """The benchmark's arm (a shoulder with an ellipse and a twist range, a hinge elbow, an RQ
    wrist), that arm with an Euler hand locked about Y, or a tail of 3-10 swing/twist joints
    (ellipse 0.5 x 0.7, twist -0.3..0.3, bones 0.4), from a random start pose."""
    kind = rng.integers(3)
    if kind == 1:
        count = int(rng.integers(3, 11))
        return tail([(*rng.uniform(-0.2, 0.2, 2), rng.uniform(-0.1, 0.1)) for _ in range(count)])
    joints = [
        Joint(
            "swing_twist",
            (*rng.uniform(-0.3, 0.3, 2), rng.uniform(-0.3, 0.3)),
            swing_limit=(math.radians(70), math.radians(110)),
            twist_limit=(math.radians(-40), math.radians(80)),
        ),
        hinge(rng.uniform(0.2, 1.0)),
        Joint("rq", rng.normal(0.0, 0.3, 3), offset=offset(0.9)),
    ]
    if kind == 2:
        joints.append(
            Joint("euler", rng.normal(0, 0.3, 3), offset=offset(0.3), locks=(False, True, False))
        )
    return joints


@pytest.mark.parametrize("seed", range(1, 5))
def test_random_solves_are_first_order_optimal_with_their_limits(seed):
    """150 random chains (`random_chain`), each to the tip of a random pose within its limits,
    moved off it by 0, 0.3 or 1 (out of reach): reached, the pose is first-order optimal for
    the angles with its limits (`assert_first_order`: no limit held that the angles would
    leave); out of reach, solving on from the result comes no closer than 1e-5 of the
    distance. Seed 2 had two reached solves end holding a limit with a negative weight
    (squared angles 0.5583 and 6.80 against 0.5577 and 5.81), seed 4 one out of reach 0.19%
    short (a step's fourth round of limits held by the projection alone)."""
    rng = np.random.default_rng(seed)
    for _ in range(150):
        joints = random_chain(rng)
        chain = ik_module._Chain(joints, TIP, np.zeros(3), None, 1.0)
        start = start_of(joints)
        pose = chain.project(start + rng.normal(0.0, rng.choice([0.3, 0.8, 1.5]), start.shape))
        target = end_effector(joints, pose) + rng.normal(0.0, rng.choice([0.0, 0.3, 1.0]), 3)
        result = solve_chain(joints, TIP, target)
        if result.distance < 1e-9:
            assert_first_order(joints, target, result.params, tolerance=1e-4)
            continue
        chain = ik_module._Chain(joints, TIP, target, None, 1.0)
        chain.start(start)
        state = chain.evaluate(result.params, jacobians=True)
        on, _ = ik_module._solve(chain, state, 200, None, start)
        assert on.e1 >= state.e1 * (1.0 - 1e-5), (state.e1, on.e1)


def test_dragging_past_the_reach_does_not_crawl():
    """A 10-joint tail (ellipses 0.5 x 0.7, twists -0.3..0.3, bones 0.4) dragged around a
    circle 1.6 chain lengths out, each solve from the last pose, as Auto IK does: the reach's
    residual is large, and its slow steps (the BFGS model's) crawled to `max_iterations`
    (200) on every target. After `NEWTON_AFTER` slow steps they are Newton's on the reach's
    exact Hessian (`_reach_hessian`): every solve under 100 iterations (27-45), within the
    limits, and within 1e-6 of the distance that solving on from its result finds (seven of
    the eight exactly, one 3.7e-8 short). Two stopped 3.4e-5 short while a held twist's end
    pulled the wrong way (a negative multiplier: `_constrained_step` now lets it go); the
    BFGS steps stopped up to 2.2e-5 short, at 200 iterations."""
    joints = [
        Joint(
            "swing_twist",
            (0.1, -0.1, 0.05),
            offset=offset(0.4) if i else np.eye(4),
            swing_limit=(0.5, 0.7),
            twist_limit=(-0.3, 0.3),
        )
        for i in range(10)
    ]
    for angle in np.linspace(0.0, 2.0 * math.pi, 9)[:-1]:
        target = 1.6 * 4.6 * np.array([math.cos(angle), 0.5, math.sin(angle)])
        result = solve_chain(joints, TIP, target)
        assert result.iterations < 100, result.iterations
        assert all(within_limits(j, q) for j, q in zip(joints, result.params, strict=True))
        chain = ik_module._Chain(joints, TIP, target, None, 1.0)
        start = start_of(joints)
        chain.start(start)
        state = chain.evaluate(result.params, jacobians=True)
        on, _ = ik_module._solve(chain, state, 200, None, start)
        assert on.e1 >= state.e1 * (1.0 - 1e-6), (state.e1, on.e1)
        joints = [
            Joint(j.kind, p, j.offset, j.locks, j.swing_limit, j.twist_limit, j.euler_order)
            for j, p in zip(joints, result.params, strict=True)
        ]


# -- locks and bad input ------------------------------------------------------------------------


def test_locked_axes_stay_put(rng):
    """An Euler bone locked about X and Z turns about Y only (a hinge); a locked RQ
    component keeps its value."""
    joints = [
        Joint("euler", (0.3, 0.1, -0.2), euler_order="XYZ", locks=(True, False, True)),
        Joint("rq", (0.2, 0.4, 0.1), offset=offset(), locks=(False, True, False)),
    ]
    target = np.array([0.6, 1.2, 0.9])
    result = solve_chain(joints, TIP, target)
    assert result.params[0, 0] == 0.3 and result.params[0, 2] == -0.2
    assert result.params[1, 1] == 0.4
    assert result.params[0, 1] != 0.1


def test_bad_input_is_refused_with_a_clear_error():
    joint = Joint("rq", (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="target contains NaN or inf"):
        solve_chain([joint], TIP, (0.0, math.nan, 0.0))
    with pytest.raises(ValueError, match="target contains NaN or inf"):
        solve_chain([joint], TIP, (math.inf, 0.0, 0.0))
    with pytest.raises(ValueError, match="no joints"):
        solve_chain([], TIP, (0.0, 1.0, 0.0))
    with pytest.raises(ValueError, match="zero length"):
        solve_chain([joint, Joint("rq", (0.1, 0.0, 0.0))], (0.0, 0.0, 0.0), (0.0, 1.0, 0.0))
    with pytest.raises(ValueError, match="locked"):
        solve_chain(
            [
                Joint("euler", (0, 0, 0), locks=(True, True, True)),
                Joint(
                    "swing_twist",
                    (0, 0, 0),
                    offset=offset(),
                    swing_limit=(0, -1),
                    twist_limit=(0.2, 0.2),
                ),
            ],
            TIP,
            (0.0, 1.0, 0.0),
        )
    with pytest.raises(ValueError, match="joint params contains NaN"):
        Joint("rq", (0.0, math.nan, 0.0))
    with pytest.raises(ValueError, match="joint kind"):
        Joint("quaternion", (0.0, 0.0, 0.0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="joint offset must have shape"):
        Joint("rq", (0.0, 0.0, 0.0), offset=np.eye(3))
    with pytest.raises(ValueError, match="order"):
        Joint("euler", (0.0, 0.0, 0.0), euler_order="XYX")


def test_a_drag_stops_on_a_converged_step_with_the_angles_stationary(monkeypatch, rng):
    """A short curved step that reaches ends the solve: no further step is computed just to
    find it short (most drag steps end so), and the result is stationary for the angles on
    the reaching set (their gradient along the reach Jacobian's null space vanishes)."""
    steps: list[int] = []
    real = ik_module._constrained_step
    monkeypatch.setattr(
        ik_module, "_constrained_step", lambda *a, **k: steps.append(1) or real(*a, **k)
    )
    joints = mixed_chain(rng)
    base = end_effector(joints, start_of(joints))
    stopped = 0
    for t in np.linspace(0.0, 0.2, 21)[1:]:
        target = base + 0.5 * np.array([math.sin(t), math.cos(t) - 1, -t])
        steps.clear()
        result = solve_chain(joints, TIP, target)
        assert result.distance < 1e-10
        stopped += len(steps) == result.iterations
        if not any(result.active):
            chain = ik_module._Chain(joints, TIP, target, None, 1.0)
            chain.start(start_of(joints))
            state = chain.evaluate(result.params, jacobians=True)
            z = chain.free_basis
            null = np.linalg.svd(state.j1 @ z)[2][3:].T
            gradient = null.T @ z.T @ state.j2.T @ state.delta.ravel()
            assert np.abs(gradient).max() < 1e-7
        joints = [
            Joint(j.kind, p, j.offset, j.locks, j.swing_limit, j.twist_limit, j.euler_order)
            for j, p in zip(joints, result.params, strict=True)
        ]
    assert stopped >= 10


def test_chains_of_the_same_joints_share_one_read_only_layout():
    """The arrays the joints' kinds and limits fix are built once per distinct chain and
    shared read-only between solves (a drag solves the same chain at every step)."""
    joints = mixed_chain(np.random.default_rng(1))
    moved = [
        Joint(
            j.kind, j.params + 0.01, j.offset, j.locks, j.swing_limit, j.twist_limit, j.euler_order
        )
        for j in joints
    ]
    first = ik_module._Chain(joints, TIP, np.zeros(3), None, 1.0)
    again = ik_module._Chain(moved, TIP, np.ones(3), None, 1.0)
    assert again.lower is first.lower and again.curvature_weights is first.curvature_weights
    with pytest.raises(ValueError, match="read-only"):
        first.fixed[0] = True
    other = list(joints)
    other[0] = Joint("swing_twist", joints[0].params, swing_limit=(0.5, 1.1))
    changed = ik_module._Chain(other, TIP, np.zeros(3), None, 1.0)
    assert changed.ellipse[0].tolist() == [0.5, 1.1]
    assert first.ellipse[0].tolist() == [0.7, 1.1]


def test_output_skips_the_nearest_equivalent_only_where_it_is_the_vector_itself(rng):
    """`_output` hands out free RQ vectors closest to their start; its shortcut (no search
    when ``|v| + |start| < pi``) gives what the search gives, on both sides of that bound."""
    joints = [Joint("rq", (0.0, 0.0, 0.0)), Joint("rq", (0.0, 0.0, 0.0), offset=offset())]
    chain = ik_module._Chain(joints, TIP, np.zeros(3), None, 1.0)
    searched = 0
    for _ in range(400):
        p = random_unit(rng, 2) * rng.uniform(0.0, math.pi, (2, 1))
        start = random_unit(rng, 2) * rng.uniform(0.0, 2.5 * math.pi, (2, 1))
        expected = rq.quat_to_rq(rq.rq_to_quat(p), near=start)
        np.testing.assert_allclose(ik_module._output(chain, p, start), expected, atol=1e-12)
        searched += bool(np.any(np.abs(ik_module._output(chain, p, start) - p) > 1e-9))
    assert searched > 50  # the search moved vectors too


def test_multipliers_are_the_least_squares_ones(rng):
    """`_multipliers` solves the normal equations in Python floats where the reach Jacobian
    is well conditioned and falls back to ``lstsq`` elsewhere: the same multipliers, to the
    normal equations' accuracy (``eps cond^2``), also rank-deficient and with orientation rows."""

    def lstsq(j1, g):
        return -np.linalg.lstsq(j1.T, g, rcond=None)[0]

    for cond in (1.0, 1e2, 1e4):
        for _ in range(20):
            u = np.linalg.qr(rng.normal(size=(3, 3)))[0]
            v = np.linalg.qr(rng.normal(size=(9, 3)))[0]
            j1 = u @ np.diag([1.0, 0.5, 1.0 / cond]) @ v.T
            g = rng.normal(size=9)
            expected = lstsq(j1, g)
            got = ik_module._multipliers(j1, g)
            tol = 1e-13 * cond**2 * np.abs(expected).max()
            np.testing.assert_allclose(got, expected, rtol=0, atol=tol)
    straight = np.zeros((3, 9))
    straight[0, :3] = straight[2, 3:6] = 1.0  # nothing moves the end along Y: rank 2
    g = rng.normal(size=9)
    np.testing.assert_array_equal(ik_module._multipliers(straight, g), lstsq(straight, g))
    with_orientation = rng.normal(size=(12, 15))
    g = rng.normal(size=15)
    got = ik_module._multipliers(with_orientation, g)
    np.testing.assert_array_equal(got, lstsq(with_orientation, g))


def test_multipliers_make_the_free_parameters_stationary_at_a_solution(rng):
    """At a reached pose without active limits, the multipliers `_lagrangian` weights the
    reach's curvature with make the Lagrangian's gradient vanish on the free parameters (first
    order optimality): they are fitted to the free parameters' columns alone. The mixed
    chain's hinge and locked Euler angle have columns whose gradient the optimum leaves
    nonzero; fitted to them too, the multipliers were off (and the arm's far reaches took 7%
    more iterations)."""
    checked = 0
    for joints, target in far_reaches(rng, 12):
        result = solve_chain(joints, TIP, target)
        if result.distance > 1e-9 or any(result.active):
            continue
        assert_stationary(joints, target, result.params)
        checked += 1
    assert checked >= 6


def test_small_positive_solves_in_python_match_numpy(monkeypatch, rng):
    """`_solve_positive` on matrices up to `SMALL` rows (Cholesky factorizations in Python
    floats) gives numpy's solution, on positive definite matrices, on ones whose smallest
    eigenvalue is below the floor (shifted up: the eigenvalues' path) and indefinite ones."""
    cases = []
    for k in range(1, ik_module.SMALL + 1):
        for low in (2.0, 1e-3, 1e-5, -0.5):
            q = np.linalg.qr(rng.normal(size=(k, k)))[0]
            eigenvalues = rng.uniform(0.5, 3.0, k)
            eigenvalues[0] = low
            cases.append(((q * eigenvalues) @ q.T, rng.normal(size=k)))
    got = [ik_module._solve_positive(m, b, 1e-3) for m, b in cases]
    monkeypatch.setattr(ik_module, "SMALL", 0)
    for (m, b), x in zip(cases, got, strict=True):
        expected = ik_module._solve_positive(m, b, 1e-3)
        np.testing.assert_allclose(x, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


def test_far_steps_are_levenberg_marquardt_steps_of_the_svd(rng):
    """`_levenberg_marquardt` (the Gram matrix's solve, no SVD) gives ``-V S (S^2 + damping)^-1
    U^T r1`` from the SVD, bounded to `MAX_STEP`: on the position rows (3) and with an
    orientation target (12), on reach Jacobians of full rank, of rank 2 (a straight chain)
    and with fewer columns than rows, at dampings of at least ``CURVED_NEAR^2`` (as far
    targets'), some steps bounded."""
    bounded = 0
    for rows, columns, rank in ((3, 7, 3), (3, 9, 2), (3, 2, 2), (12, 9, 9), (12, 30, 8)):
        for _ in range(10):
            a1 = rng.normal(size=(rows, rank)) @ rng.normal(size=(rank, columns))
            r1 = rng.normal(size=rows) * rng.uniform(0.2, 2.0)
            damping = max(ik_module.CURVED_NEAR, rng.uniform(0.0, 1.0) * np.linalg.norm(r1)) ** 2
            u, s, vt = np.linalg.svd(a1, full_matrices=False)
            expected = -vt.T @ (s / (s * s + damping) * (u.T @ r1))
            length = np.linalg.norm(expected)
            if length > ik_module.MAX_STEP:
                expected *= ik_module.MAX_STEP / length
                bounded += 1
            got = ik_module._levenberg_marquardt(a1, r1, damping)
            np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-13)
    assert 5 <= bounded <= 45


def test_inverse_matches_numpy(rng):
    """`_inverse` (the adjugate in Python floats) against ``np.linalg.inv`` on rotations times
    scales and on general matrices."""
    rotations = Rotation.random(8, random_state=1).as_matrix()
    scaled = rotations * rng.uniform(0.01, 100.0, (8, 1, 3))
    general = rng.normal(size=(8, 3, 3))
    for m in (rotations, scaled, general):
        expected = np.linalg.inv(m)
        got = [np.reshape(ik_module._inverse(tuple(x.ravel().tolist())), (3, 3)) for x in m]
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def far_reaches(rng, count):
    """``count`` (joints, target) pairs: the mixed chain and the tip of a random pose of it
    (within its limits by construction: the solver's own projection)."""
    for _ in range(count):
        joints = mixed_chain(rng)
        chain = ik_module._Chain(joints, TIP, np.zeros(3), None, 1.0)
        pose = chain.project(start_of(joints) + rng.normal(0.0, 0.6, (4, 3)))
        yield joints, end_effector(joints, pose)


def test_far_reaches_last_steps_contract_quadratically(monkeypatch, rng):
    """Near the target a far reach's steps are Newton's on the Lagrangian (`_Chain.curvature`:
    its Hessian in closed form, the multipliers fitted to the free parameters): on most far
    reaches, once a step is shorter than 0.01 rad, the next is at most ten times its square.
    (With Gauss-Newton's model of the angles, or the angles' own curvature learned by secant
    updates, the last steps shrank by about a tenth each: 1e-3, 1e-4, 1e-5. A reach whose
    angles' part is cut to the square root of the distance left converges linearly still.)
    The angles' tolerance is tightened so that the solve takes the steps its stopping rule
    predicts (see the next test)."""
    monkeypatch.setattr(ik_module, "STEP_TOLERANCE", 1e-12)
    quadratic = 0
    for joints, target in far_reaches(rng, 12):
        seen: list[np.ndarray] = []
        result = solve_chain(joints, TIP, target, callback=lambda i, p, seen=seen: seen.append(p))
        assert result.distance < 1e-9
        steps = [float(np.linalg.norm(b - a)) for a, b in zip(seen, seen[1:], strict=False)]
        short = [(a, b) for a, b in zip(steps, steps[1:], strict=False) if a < 1e-2]
        quadratic += bool(short) and all(b <= 10.0 * a * a for a, b in short)
    assert quadratic >= 10


def test_a_step_whose_predicted_successor_is_short_ends_the_solve(monkeypatch, rng):
    """A curved step after which the next is predicted (from the last two steps' quadratic
    contraction) below the angles' tolerance ends the solve, its reach taken back by chord
    steps: along a dragged loop most solves take 2 iterations, far reaches one fewer than when
    solved to a tolerance of 1e-12, and both end within 1e-5 rad per joint of that tighter
    solve's pose, reaching within 1e-9."""
    solves = list(far_reaches(rng, 12))
    joints = mixed_chain(rng)
    base = end_effector(joints, start_of(joints))
    for t in np.linspace(0.0, 1.0, 31)[1:]:
        target = base + 0.5 * np.array(
            [math.sin(2 * math.pi * t), math.cos(2 * math.pi * t) - 1, -t]
        )
        solves.append((joints, target))
        joints = [
            Joint(j.kind, p, j.offset, j.locks, j.swing_limit, j.twist_limit, j.euler_order)
            for j, p in zip(joints, solve_chain(joints, TIP, target).params, strict=True)
        ]
    results = [solve_chain(j, TIP, target) for j, target in solves]
    monkeypatch.setattr(ik_module, "STEP_TOLERANCE", 1e-12)
    tight = [solve_chain(j, TIP, target) for j, target in solves]
    for (j, _), ours, reference in zip(solves, results, tight, strict=True):
        assert ours.distance < 1e-9
        assert joint_angles(j, ours.params, reference.params).max() < 1e-5
    drags = [r.iterations for r in results[12:]]
    assert sum(i <= 2 for i in drags) >= 20, drags  # 23 of 30 (none before the rule)
    fewer = sum(r.iterations < t.iterations for r, t in zip(results[:12], tight, strict=False))
    assert fewer >= 8, fewer  # 11 of 12


def _dragged_loop(joints, before):
    """Solve 100 targets along a loop dragged from the chain's tip, each from the last pose
    (as Auto IK does), yielding each result (it reaches within 1e-9); ``before()`` runs
    before each solve (a test's call log is cleared there)."""
    base = end_effector(joints, start_of(joints))
    for t in np.linspace(0.0, 1.0, 101)[1:]:
        target = base + 0.5 * np.array(
            [math.sin(2 * math.pi * t), math.cos(2 * math.pi * t) - 1, -t]
        )
        before()
        result = solve_chain(joints, TIP, target)
        assert result.distance < 1e-9
        yield result
        joints = [
            Joint(j.kind, p, j.offset, j.locks, j.swing_limit, j.twist_limit, j.euler_order)
            for j, p in zip(joints, result.params, strict=True)
        ]


def test_most_drag_steps_take_three_iterations_and_compute_no_further_step(monkeypatch, rng):
    """The damping's start (`MU_START`) leaves a drag's second step nearly Gauss-Newton's:
    along the dragged loop, at least 90 of 100 solves take 3 iterations or fewer (85 with
    the damping started at 1e-2). And most end on their last iteration's step, without
    computing another one to find it short: at least 80 (62 when only a step shorter than
    the angles' tolerance ended a solve, not one that shrank enough against the last)."""
    steps: list[int] = []
    real = ik_module._constrained_step
    monkeypatch.setattr(
        ik_module, "_constrained_step", lambda *a, **k: steps.append(1) or real(*a, **k)
    )
    short = stopped = 0
    for result in _dragged_loop(mixed_chain(rng), before=steps.clear):
        short += result.iterations <= 3
        stopped += len(steps) == result.iterations
    assert short >= 90
    assert stopped >= 80


def test_a_drag_ends_on_a_step_evaluated_without_the_jacobians(monkeypatch, rng):
    """A step that should end the solve (short enough that its second-order reach error is
    below the tolerance) is evaluated without the Jacobians, which are taken only if the solve
    goes on: along a dragged loop most solves end on such an evaluation, and a point is
    evaluated a second time (with the Jacobians) on few of them."""
    calls: list[tuple[bytes, bool]] = []
    real = ik_module._Chain.evaluate

    def evaluate(self, p, jacobians):
        calls.append((p.tobytes(), jacobians))
        return real(self, p, jacobians)

    monkeypatch.setattr(ik_module._Chain, "evaluate", evaluate)
    bare_last = twice = 0
    for _ in _dragged_loop(mixed_chain(rng), before=calls.clear):
        bare_last += not calls[-1][1]
        points = [p for p, _ in calls]
        twice += len(set(points)) < len(points)
    assert bare_last >= 70, bare_last  # 79 of 100 with the fixture's seed
    assert twice <= 10, twice


def test_active_names_the_limits_a_pose_lies_on():
    """`IKResult.active`'s names: an ellipse or a hinge's end is "swing", the twist range's
    ends "twist_min" / "twist_max" (the lower one where a range is narrower than the
    boundary's tolerance and both hold)."""
    tip = np.array([0.0, 1.0, 0.0])

    def active(joint, params):
        chain = ik_module._Chain([joint], tip, np.zeros(3), None, 1.0)
        return ik_module._active(chain, np.array([params], dtype=float))[0]

    shoulder = Joint("swing_twist", (0, 0, 0), swing_limit=(0.5, 0.7), twist_limit=(-0.3, 0.4))
    assert active(shoulder, (0.0, 0.0, -0.3)) == ("twist_min",)
    assert active(shoulder, (0.0, 0.0, 0.4)) == ("twist_max",)
    assert active(shoulder, (0.5, 0.0, 0.4)) == ("swing", "twist_max")
    assert active(shoulder, (0.2, 0.3, 0.0)) == ()
    narrow = Joint("swing_twist", (0, 0, 0), twist_limit=(0.1, 0.1 + 1e-10))
    assert active(narrow, (0.0, 0.0, 0.1 + 5e-11)) == ("twist_min",)
    elbow = hinge(limit=2.5)
    assert active(elbow, (-2.5, 0.0, 0.0)) == ("swing",)
    assert active(elbow, (1.0, 0.0, 0.0)) == ()


def test_only_the_limits_that_hold_the_chain_back_are_holding():
    """Out of reach, `IKResult.active` lists the limits the pose lies on and `holding` those
    that hold the end effector back. A chain stretched straight at a target ahead, too short,
    keeps its twist at the end of its range (nothing turns it): the twist is active but holds
    nothing ("stopped by UpperArm twist min" read a report on a straight arm 0.45 short). Aimed
    sideways past the ellipse, the swing holds it back."""
    joints = [
        Joint(
            "swing_twist",
            (0.0, 0.0, -0.3),
            offset=offset(1.0) if i else np.eye(4),
            swing_limit=(0.5, 0.5),
            twist_limit=(-0.3, 0.3),
        )
        for i in range(2)
    ]
    tip = (0.0, 1.0, 0.0)
    ahead = solve_chain(joints, tip, (0.0, 2.45, 0.0))
    assert ahead.distance == pytest.approx(0.45, abs=1e-9)
    assert ahead.active[0] == ("twist_min",)
    assert ahead.holding == ((), ())
    aside = solve_chain(joints, tip, (3.0, 0.5, 0.0))
    assert aside.distance > 1.0
    assert all("swing" in names for names in aside.holding), aside.holding
    assert all("swing" in names for names in aside.active)
    reached = solve_chain(joints, tip, (0.2, 1.95, 0.0))
    assert reached.distance < 1e-9 and reached.holding == ((), ())


def test_a_zero_width_limit_that_holds_the_chain_back_is_named():
    """A hinge (the swing's Z semi-axis 0) and a twist range of one value hold a coordinate
    at one value: aimed where only that coordinate would turn the chain, it holds the end
    effector back and is named, in `holding` and `active` ("Out of reach by 1.03" named no
    limit in a review, where a Z semi-axis of 0.05 read "stopped by Elbow swing limit").
    Aimed where the hinge turns, nothing holds. A lock is no limit and is not named."""
    hinge = Joint("swing_twist", (0.3, 0.0, 0.0), swing_limit=(1.0, 0.0), twist_limit=(0, 0))
    tip = (0.0, 1.0, 0.0)
    aside = solve_chain([hinge], tip, (-2.0, 0.5, 0.0))  # (turning about Z: the pinned one)
    assert aside.distance > 1.0
    assert aside.holding == (("swing",),) and aside.active == (("swing",),)
    in_plane = solve_chain([hinge], tip, (0.0, math.cos(0.5), math.sin(0.5)))
    assert in_plane.distance < 1e-9 and in_plane.holding == ((),)
    # the hinge's twist held at 0.2: a tip off the bone's Y axis turned about Y past it
    twist = Joint("swing_twist", (0.0, 0.0, 0.2), swing_limit=(1.0, 0.0), twist_limit=(0.2, 0.2))
    for angle, name in ((0.6, "twist_max"), (0.0, "twist_min")):
        target = (0.5 * math.cos(angle), 1.0, -0.5 * math.sin(angle))
        result = solve_chain([twist], (0.5, 1.0, 0.0), target)
        assert result.distance > 0.005  # (out of reach)
        assert name in result.holding[0], (angle, result.holding)
    locked = Joint("rq", (0.0, 0.0, 0.0), locks=(True, True, False))
    result = solve_chain([locked], tip, (0.0, 0.0, 1.0))
    assert result.distance > 0.5 and result.holding == ((),)
