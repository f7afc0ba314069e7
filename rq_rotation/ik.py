"""Limit-aware inverse kinematics for chains of RQ, swing/twist and Euler joints.

The paper's first application of RQ (Grassia 1997, section 4.1) is differential control: the
analytic derivatives ``dR/dv`` drive inverse kinematics, and ball-and-socket limits are plain
inequalities on the parameters (section 5). `solve_chain` is such a solver.

The chain
---------
A chain is a sequence of `Joint` records from the root to the tip. Joint ``i`` has three
parameters ``p_i``, a rotation ``R_i(p_i)`` (3x3, see *Joint kinds*) and an ``offset`` ``O_i``
(4x4 affine): the joint's rest frame expressed in the frame of joint ``i - 1`` *after* that
joint's rotation (for joint 0: in world space). The frames are::

    F_-1 = I,    F_i = F_(i-1) @ O_i @ [[R_i, 0], [0, 1]]

and the end effector is the point ``F_(n-1) @ (tip, 1)``. For a chain of Blender pose bones
(matrices as in ``PoseBone.matrix = parent.matrix @ parent_rest^-1 @ rest @ basis``):
``O_i = S_(i-1) @ rest_(i-1)^-1 @ rest_i @ T(location_i)`` (its translation puts the head at
the parent's tail, so it holds the parent bone's length; ``S`` is the parent's scale), ``O_0``
holds the armature's world matrix and the pose of the bones above the chain, and
``tip = S_(n-1) @ (0, length, 0)``: the last bone's tail.

Joint kinds (parameters ``p = (p0, p1, p2)``, rotation ``R``)
-------------------------------------------------------------
* ``"rq"``: ``p`` is the RQ vector ``v``, ``R = rq_to_matrix(v)``. While solving, a joint
  without locks is moved away from the singular shells (``reparameterize``, section 3.2.2);
  the result is the equivalent vector closest to the start (``quat_to_rq(..., near=start)``).
* ``"swing_twist"``: ``p = (swing x, swing z, twist)``, ``R`` of ``swing * twist`` (the twist
  about the bone's Y acts first), with the swing ellipse ``swing_limit = (a, b)`` and the
  twist range ``twist_limit = (lo, hi)``, meant as everywhere in the core
  (`effective_limits`: a negative semi-axis acts as 0, which holds that coordinate at 0; an
  inverted range holds the twist at ``lo``).
* ``"euler"``: ``p`` holds the angles about X, Y and Z, ``R = euler_to_matrix(p, order)``
  (order ``'XYZ'`` applies X first, as Blender).

``locks[k]`` holds ``p[k]`` at its start value. This models Blender's ``lock_rotation``: an
Euler bone locks its angles. Blender limits a quaternion or axis-angle bone with locks by
converting it to XYZ Euler angles and back (its transform tools do), so such a bone is
modelled as an ``"euler"`` joint of order ``'XYZ'`` (and as an ``"rq"`` joint when no axis is
locked). On ``"rq"`` joints a lock holds a component of ``v``.

What is solved
--------------
Lexicographically: first the end effector as close to ``target`` as the limits allow (and,
with ``target_rotation``, the last frame's linear part ``F_(n-1)[:3, :3]`` close to it in the
Frobenius norm, weighted by ``orientation_weight`` per unit of chain length); among those
poses, the one closest to the start pose: the smallest sum of squared joint rotation angles
``sum_i angle(R_i(start)^T R_i)^2``. Targets out of reach give the closest reachable pose.
The solution found is a local one: the closest pose connected to the start, which is what
dragging wants.

Method (`_solve`): sequential quadratic programming from the analytic Jacobians
(``rq_quat_jacobian`` of every elementary rotation, chained into body angular velocities; the
angles' Jacobian is ``rq_velocity`` in the local frame, as a matrix). While reaching, a
Levenberg-Marquardt step for the reach (BFGS-corrected while it falls slowly, out of reach,
and after a long crawl Newton's on its exact Hessian);
near the target, plus a Newton step for the angles in the reach's null space (the
Lagrangian's Hessian in closed form, the angles' and the end effector's second derivatives
weighted by the multipliers, so the last steps contract quadratically; once the next step is
predicted below the angles' tolerance from that contraction, the solve ends, the reach taken
back by chord Gauss-Newton steps); once reached, steps along the reaching set
for the angles (that Hessian, corrected by secant updates where an orientation target adds
curvature it leaves out), pulled back by chord Gauss-Newton steps.
Limits hold at every iterate: box bounds (the twist range, a hinge's segment) and the ellipse
as the paper's inequality ``(r_x/a)^2 + (r_z/b)^2 <= 1``. A limit the step pushes against is
held (an active set: the bound fixed, the swing moved along the ellipse's tangent and projected
back onto it), and let go again where the step without it crosses no limit; a step that
would cross a limit stops on it.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_float_array, check_order
from .rq import _nearest_equivalent
from .shells import reparameterize
from .swing_twist import effective_limits

__all__ = ["IKResult", "Joint", "chain_end", "solve_chain"]

#: ``solve_chain``'s callback: ``(iteration, params (n, 3))``.
_Callback = Callable[[int, NDArray[np.float64]], None]

JointKind = Literal["rq", "swing_twist", "euler"]
KINDS: tuple[str, ...] = ("rq", "swing_twist", "euler")

#: Relative reach tolerance: the solver stops reaching once the end effector is this close
#: to the target, in units of the chain's length.
REACH_TOLERANCE = 1e-11

#: Longest step (radians, all parameters together) while reaching; the angles' part and the
#: reach's part are bounded separately.
MAX_STEP = 0.5

#: While reaching, once the reach's residual is below this (in chain lengths) and falls fast,
#: the angles' model includes the reach's curvature weighted by the multipliers
#: (`_lagrangian`), which mean something that near the reaching set: the steps are then
#: those of sequential quadratic programming, and the angles converge with the reach (fewer
#: iterations: drags 3.6 -> 3.3 on the 3-joint arm, reaches 22.4 -> 19.7 on the 10-joint chain).
#: Farther, a step is the reach's alone (`_levenberg_marquardt`): an angles' part from the
#: Gauss-Newton model ``J2^T J2`` there left the iterations about as they were (the arm's far
#: reaches 6.3 on average either way, the 10-joint chain's 7.3 with it, 7.5 without) and cost
#: 7% of the arm's far reaches' time, 11% of the 10-joint chain's.
CURVED_NEAR = 0.2

#: The Levenberg-Marquardt parameter's start (chain lengths: the damping is
#: ``max(mu, |r1|)^2``). The reach's residual outweighs it until it falls below; from there
#: the ratio test moves it. At ``1e-2`` a drag's second step was still damped by a few percent
#: on the arm (whose smallest singular values are near ``0.05``), which cost a fourth
#: iteration on some drags; the reaches' iterations do not change.
MU_START = 1e-3

#: The angles are minimized until a step is shorter than this (radians), or until the next
#: step predicted from the contraction of the last two is (see `_solve`). At ``1e-6`` a drag
#: took a third iteration (its next step is near ``3e-6``); the angles then stop within about
#: this of the closest pose (the closest property is checked to ``1e-3``).
STEP_TOLERANCE = 1e-5

#: While the angles are minimized, a step may leave the reach off by this times its squared
#: length (in chain lengths) after restoring; the next step's Gauss-Newton part takes it back.
RESTORE_SLACK = 1e-3

#: While reaching near the target, a curved step's angles' part is kept within the square
#: root of the reach's residual, so that its second-order effect on the end effector does not
#: undo the reach's progress. Where the angles want more (their closest pose far along the
#: reaching set), that bound shrank with the residual and the solve crawled: the residual
#: fell by a constant factor a step, the step by its square root (20 iterations on two of the
#: benchmark's 30 far reaches of the 3-joint arm, 32 on one of the 10-joint chain's, 38 for
#: a straight 10-joint tail folding). Such a step is taken wide instead: its angles' part
#: bounded by `MAX_STEP` alone (in the same basis: the same limits held), the reach it
#: leaves taken back by chord steps (`_restore`) to this fraction of the residual. Where the
#: chords fall short (a wide step from a residual already small), the step is the reach's
#: part alone, which reaches at once; the angles then move on the reaching set. (The
#: fallback within the square root, or the reach's part alone without trying wide: 26 and
#: 22 iterations on that 10-joint reach, 21 with both.)
WIDE_RESTORE = 0.5

#: Out of reach the reach's residual is large and its slow steps (the BFGS model's, damped
#: by that residual) crawled: dragged past the reach (a target circling at 1.6 chain
#: lengths) the arm took 75 iterations a solve, a 5-joint tail 137, a 10-joint tail the 200
#: of `max_iterations`. After this many slow steps in a row the step is Newton's on the
#: reach's exact Hessian (`_reach_hessian`), damped by its own trust region (``nu``, steered
#: by the ratio to that quadratic model's prediction): 24, 27 and 26 iterations (with
#: `NEWTON_DONE`, the slow steps counted through escapes off saddles). After 2, 14-21, but
#: on random chains and targets some solves stopped short of reachable targets that the BFGS
#: steps reached (Newton's steps find the reach's other local minima).
NEWTON_AFTER = 16
#: ``nu``'s start: the Newton steps' damping is ``nu^2``.
NU_START = 1e-2
#: A Newton step on the reach shorter than this (radians) has converged (the next would be
#: of the order of its square, below what the residual's rounding shows): the reach is
#: settled, as after a zero step (tiny steps refused and retried had cost 4-6 iterations a
#: solve dragged past the reach).
NEWTON_DONE = 1e-8

#: The angles' Hessian model is kept positive definite with eigenvalues at least this (the
#: Gauss-Newton term alone has eigenvalues near 1; its smallest, ``(theta/2) cot(theta/2)``,
#: falls to 0 only at a joint turned by pi).
ANGLES_FLOOR = 1e-3

#: A swing is on its ellipse (a limit that can be active) when
#: ``(r_x/a)^2 + (r_z/b)^2 >= 1 - ON_BOUNDARY``; a bounded parameter when it is this close to
#: its bound (radians).
ON_BOUNDARY = 1e-9

#: A reach that stops improving with its residual above the tolerance is a closest pose only
#: if no direction within the limits bends the chain closer at second order: the reach's
#: Hessian (Gauss-Newton's ``J^T J`` plus the residual-weighted curvature, `_escape`) must have
#: no eigenvalue below ``-ESCAPE_CURVATURE`` (chain lengths squared per radian squared) there.
#: A straight chain whose target lies nearer on its line is such a saddle: every first-order
#: move is across the line, so Gauss-Newton's step is zero. At most `ESCAPES` such steps a
#: solve.
ESCAPE_CURVATURE = 1e-8
ESCAPES = 4
#: Slow steps (the BFGS model's) each gaining less than this fraction of the residual are a
#: crawl worth testing for a saddle (the demo's straight arm crawled at 0.2% a step); a slow
#: reach that still gains more keeps its course (at 16% a step, an early escape led a
#: 3-joint reach into a crawl 1.4e-5 short).
ESCAPE_CRAWL = 1e-2
#: The first length tried of a step off a saddle found in a crawl (radians, all parameters
#: together), halved until it gains: enough to leave it, after which the usual steps take
#: over. A step of `MAX_STEP` there led out-of-reach solves on their limits to closest poses
#: worse than SLSQP's (a core test); off a zero step (an exact saddle: a straight chain) the
#: first length is `MAX_STEP` (at 0.05 a straight 10-joint tail toward the middle of its line
#: then crawled, 1.6e-5 short).
ESCAPE_STEP = 0.05

#: Out of reach, the poses that approach the target as closely as the one found are, to
#: second order, those along the directions in which the reach's Hessian (`_position_hessian`)
#: has at most this curvature (chain lengths squared per radian squared): a straight chain
#: turned about its own line. Along the others (bending it, which the reach's Jacobian alone
#: does not see at first order) the end effector falls back at second order, and no chord
#: step can take that back: the angles' steps there were refused until the solve stopped,
#: an arm aimed two thirds of its length beyond its reach rolled 60 degrees where 41 do.
CLOSEST_FLAT = 1e-8
#: Along those directions a step's end is pulled back by Newton steps on the reach
#: (`_retract`): a step along them loses reach at third order along the residual, where the
#: reach's Jacobian cannot act, so chord steps could not take it back and a 6-joint tail
#: crept along to `max_iterations` (0.64 s, its squared angles 0.7% above the least SLSQP
#: finds). The reach may fall back by at most `FLAT_SLACK` of the residual a step (and
#: `_settled`'s cap of 1e-9 in all; at the cap's 1e-9 a step, a stretched arm ended 1e-9
#: farther); the minimization ends once a step gains less than `FLAT_GAIN` of the squared
#: angles (at 1e-9 six of 687 random solves out of reach zigzagged along a curved valley of
#: closest poses to `max_iterations`, gaining 1e-7 a step). `_retract` takes at most
#: `RETRACT_STEPS` Newton steps.
FLAT_SLACK = 1e-10
FLAT_GAIN = 1e-6
RETRACT_STEPS = 6

#: Below this angle the kernels use the first two terms of their series (whose next terms
#: are below 1e-20 relative there) instead of the closed forms' 0/0.
_TINY = 1e-4

#: Below this angle `_factor_curvature` uses its series (see there).
_SERIES = 0.05

# [v]x / 2 as a matrix: v @ _HALF_CROSS, reshaped (3, 3), is [v]x / 2, ([v]x)_ij = -eps_ijk v_k
_HALF_CROSS = np.zeros((3, 3, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    _HALF_CROSS[_k, _i, _j] = -0.5
    _HALF_CROSS[_k, _j, _i] = 0.5
_HALF_CROSS = _HALF_CROSS.reshape(3, 9)

# The kinematics work in Python floats: a chain has a handful of joints, where numpy's cost
# per call dominates (a 3-joint evaluation with its Jacobians took 160 us in three dozen
# small array operations, against a few hundred float operations). Tuples: 3x3 matrices
# row-major as 9 floats, quaternions (w, x, y, z).
_Vec = tuple[float, float, float]
_Mat = tuple[float, float, float, float, float, float, float, float, float]
_Quat = tuple[float, float, float, float]


def _factor(x: float, y: float, z: float) -> tuple[_Quat, _Mat]:
    """The quaternion of the RQ vector ``v = (x, y, z)`` and its body angular velocities.

    ``q = (cos(theta/2), s v)`` with ``s = sin(theta/2)/theta`` (``rq_to_quat``); ``M`` with
    ``omega = 2 vec(conj(q) dq) = M dv`` (from ``rq_quat_jacobian``'s ``dq/dv``: ``dq_w/dv_j =
    -s v_j / 2``, ``dq_i/dv_j = s delta_ij + g v_i v_j``, ``g = (cos(theta/2)/2 - s)/theta^2``):
    ``M = 2 c s I + (2 c g + s^2) v v^T - 2 s^2 [v]x``, ``c = cos(theta/2)`` (the right
    Jacobian of the exponential map; tested against those functions within 4e-16). ``g``'s
    closed form cancels near 0, losing ``eps/theta^2`` absolutely, but it only enters as
    ``g v v^T`` (of size ``theta^2``), which keeps it at ``eps``; below ``_TINY`` the first two
    terms of the series (exact there to far below ``eps``) replace the 0/0.
    """
    t2 = x * x + y * y + z * z
    th = math.sqrt(t2)
    c = math.cos(0.5 * th)
    if th < _TINY:
        s, g = 0.5 - t2 / 48.0, t2 / 960.0 - 1.0 / 24.0
    else:
        s = math.sin(0.5 * th) / th
        g = (0.5 * c - s) / t2
    d, k, h = 2.0 * c * s, 2.0 * c * g + s * s, 2.0 * s * s
    kx, ky, kz = k * x, k * y, k * z
    hx, hy, hz = h * x, h * y, h * z
    m = (
        *(kx * x + d, kx * y + hz, kx * z - hy),
        *(ky * x - hz, ky * y + d, ky * z + hx),
        *(kz * x + hy, kz * y - hx, kz * z + d),
    )
    return (c, s * x, s * y, s * z), m


def _factor_curvature(x: float, y: float, z: float, q: _Vec) -> _Mat:
    """``S_ab . q`` (3x3, symmetric) with ``S_ab = (dw_a/dv_b + dw_b/dv_a) / 2`` for an RQ
    vector ``v = (x, y, z)``, ``w_a`` the columns of `_factor`'s matrix ``M`` (the exponential
    map's right Jacobian), and a vector ``q``.

    ``M = d I + k v v^T - h [v]x`` with ``d = sin(theta)/theta``, ``k = (theta - sin(theta)) /
    theta^3``, ``h = (1 - cos(theta)) / theta^2``; differentiating (``d theta/dv_b = v_b /
    theta``) and symmetrizing (``[e_b]x e_a`` cancels): ``S_ab = (d'/theta + k) (v_b e_a + v_a
    e_b) / 2 + (k'/theta) v_a v_b v + k delta_ab v - (h'/theta) (v_b (v x e_a) + v_a (v x
    e_b)) / 2``. Contracted with ``q`` (``(v x e_a) . q = (q x v)_a``): ``(u v^T + v u^T) / 2 +
    (v . q) (k'/theta v v^T + k I)``, ``u = (d'/theta + k) q - (h'/theta) q x v``. The closed
    forms of ``d'/theta, k'/theta, h'/theta`` cancel like ``eps / theta^4``: below ``_SERIES``
    their series' first three terms (exact there to far below ``eps``). Tested against
    differences of `_factor`.
    """
    t2 = x * x + y * y + z * z
    if t2 < _SERIES * _SERIES:
        t4 = t2 * t2
        dt = -1.0 / 3.0 + t2 / 30.0 - t4 / 840.0
        k = 1.0 / 6.0 - t2 / 120.0 + t4 / 5040.0
        kt = -1.0 / 60.0 + t2 / 1260.0 - t4 / 60480.0
        ht = -1.0 / 12.0 + t2 / 180.0 - t4 / 6720.0
    else:
        th = math.sqrt(t2)
        sin, cos = math.sin(th), math.cos(th)
        k = (th - sin) / (th * t2)
        dt = (th * cos - sin) / (th * t2)
        kt = (1.0 - cos) / (t2 * t2) - 3.0 * k / t2
        ht = (th * sin - 2.0 * (1.0 - cos)) / (t2 * t2)
    q0, q1, q2 = q
    f, vq = dt + k, x * q0 + y * q1 + z * q2
    u0 = 0.5 * (f * q0 - ht * (q1 * z - q2 * y))
    u1 = 0.5 * (f * q1 - ht * (q2 * x - q0 * z))
    u2 = 0.5 * (f * q2 - ht * (q0 * y - q1 * x))
    kv, d = kt * vq, k * vq
    kx, ky, kz = kv * x, kv * y, kv * z
    s01, s02, s12 = u0 * y + x * u1 + kx * y, u0 * z + x * u2 + kx * z, u1 * z + y * u2 + ky * z
    return (
        *(2.0 * u0 * x + kx * x + d, s01, s02),
        *(s01, 2.0 * u1 * y + ky * y + d, s12),
        *(s02, s12, 2.0 * u2 * z + kz * z + d),
    )


def _log(w: float, x: float, y: float, z: float) -> _Vec:
    """The RQ vector with ``|v| <= pi`` of a unit quaternion (``quat_to_rq``)."""
    norm = math.sqrt(x * x + y * y + z * z)
    f = math.copysign(2.0 * math.atan2(norm, abs(w)) / max(norm, 1e-300), w)
    return x * f, y * f, z * f


def _log_jacobian(x: float, y: float, z: float) -> _Mat:
    """``A(delta)`` with ``d delta/dt = A omega`` for a body-frame angular velocity.

    ``rq_velocity(delta, omega, "local") = a omega + (delta x omega)/2 + b (delta . omega)
    delta`` as a matrix, ``b = (1 - (theta/2) cot(theta/2)) / theta^2``, ``a = 1 - b theta^2``
    (tested equal). As in `_factor`, ``b``'s cancellation costs nothing where it enters
    (``b delta delta^T``, ``b theta^2``); below ``_TINY`` its series' first two terms.
    """
    t2 = x * x + y * y + z * z
    th = math.sqrt(t2)
    if th < _TINY:
        b = 1.0 / 12.0 + t2 / 720.0
    else:
        b = (1.0 - 0.5 * th / math.tan(0.5 * th)) / t2
    a = 1.0 - b * t2
    bx, by, bz = b * x, b * y, b * z
    hx, hy, hz = 0.5 * x, 0.5 * y, 0.5 * z  # [delta]x / 2
    return (
        *(bx * x + a, bx * y - hz, bx * z + hy),
        *(by * x + hz, by * y + a, by * z - hx),
        *(bz * x - hy, bz * y + hx, bz * z + a),
    )


def _inverse(m: _Mat) -> _Mat:
    """The inverse of a 3x3 matrix by its adjugate. The matrices are the frames' linear parts
    (rotations times the bones' scales), far from singular; a singular one raises
    ``ZeroDivisionError``."""
    a, b, c, d, e, f, g, h, i = m
    c0, c1, c2 = e * i - f * h, f * g - d * i, d * h - e * g  # cofactors of row 0
    r = 1.0 / (a * c0 + b * c1 + c * c2)
    return (
        *(c0 * r, (c * h - b * i) * r, (b * f - c * e) * r),
        *(c1 * r, (a * i - c * g) * r, (c * d - a * f) * r),
        *(c2 * r, (b * g - a * h) * r, (a * e - b * d) * r),
    )


def _matmul(a: _Mat, b: _Mat) -> _Mat:
    """``a @ b`` of two 3x3 matrices."""
    a0, a1, a2, a3, a4, a5, a6, a7, a8 = a
    b0, b1, b2, b3, b4, b5, b6, b7, b8 = b
    return (
        *(a0 * b0 + a1 * b3 + a2 * b6, a0 * b1 + a1 * b4 + a2 * b7, a0 * b2 + a1 * b5 + a2 * b8),
        *(a3 * b0 + a4 * b3 + a5 * b6, a3 * b1 + a4 * b4 + a5 * b7, a3 * b2 + a4 * b5 + a5 * b8),
        *(a6 * b0 + a7 * b3 + a8 * b6, a6 * b1 + a7 * b4 + a8 * b7, a6 * b2 + a7 * b5 + a8 * b8),
    )


def _apply(m: _Mat, x: float, y: float, z: float) -> _Vec:
    """``m @ (x, y, z)``."""
    return (
        m[0] * x + m[1] * y + m[2] * z,
        m[3] * x + m[4] * y + m[5] * z,
        m[6] * x + m[7] * y + m[8] * z,
    )


def _rotate_back(q: _Quat, x: float, y: float, z: float) -> _Vec:
    """``R(q)^T (x, y, z)`` of a unit quaternion ``q = (w, u)``: ``x - 2 w (u x x) + 2 u x (u x
    x)``."""
    w, ux, uy, uz = q
    tx, ty, tz = uy * z - uz * y, uz * x - ux * z, ux * y - uy * x
    return (
        x - 2.0 * (w * tx - uy * tz + uz * ty),
        y - 2.0 * (w * ty - uz * tx + ux * tz),
        z - 2.0 * (w * tz - ux * ty + uy * tx),
    )


def _quat_matrix(q: _Quat) -> _Mat:
    """The rotation matrix of a unit quaternion (``quat_to_matrix``)."""
    w, x, y, z = q
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz, wx, wy, wz = x * y, x * z, y * z, w * x, w * y, w * z
    return (
        *(1.0 - 2.0 * (yy + zz), 2.0 * (xy - wz), 2.0 * (xz + wy)),
        *(2.0 * (xy + wz), 1.0 - 2.0 * (xx + zz), 2.0 * (yz - wx)),
        *(2.0 * (xz - wy), 2.0 * (yz + wx), 1.0 - 2.0 * (xx + yy)),
    )


# Elementary rotations per joint: each joint's rotation is the product of its factors', the
# first acting first. A factor is the RQ vector whose components ``axis`` are the joint's
# parameters ``param``: a tuple of ``(axis, param)`` pairs.
_Factor = tuple[tuple[int, int], ...]


def _factors(kind: str, order: str) -> tuple[_Factor, ...]:
    """The factors of a joint kind (and Euler order), the first acting first."""
    if kind == "rq":
        return (((0, 0), (1, 1), (2, 2)),)
    if kind == "swing_twist":  # the twist (0, t, 0) first, then the swing (x, 0, z)
        return (((1, 2),), ((0, 0), (2, 1)))
    return tuple((("XYZ".index(c), "XYZ".index(c)),) for c in order)


def _joint_rotation(
    kind: str, factors: tuple[_Factor, ...], params: list[float]
) -> tuple[_Quat, list[_Vec]]:
    """A joint's quaternion and its body angular velocities: per parameter ``c``, ``w_c`` with
    ``R^T dR/dp_c = [w_c]x``.

    With ``R = R_2 R_1 R_0`` (factor 0 first), a parameter of factor ``f`` turns by its
    factor's ``omega`` seen through the factors before: ``w_c = (R_(f-1) ... R_0)^T omega``.
    An RQ joint is one factor (``omega`` from `_factor`'s matrix); a swing/twist joint's twist
    about Y turns about Y and its swing's ``omega`` (`_factor` of ``(x, 0, z)``) is seen
    through the twist; an Euler joint's factors each turn about their axis.
    """
    if kind == "rq":
        q, m = _factor(*params)
        return q, [(m[0], m[3], m[6]), (m[1], m[4], m[7]), (m[2], m[5], m[8])]
    if kind == "swing_twist":  # the swing times the twist (0, sin(t/2), 0)
        x, z, t = params
        ct, st = math.cos(0.5 * t), math.sin(0.5 * t)
        (sw, sx, _, sz), m = _factor(x, 0.0, z)
        q = (sw * ct, ct * sx - st * sz, sw * st, ct * sz + st * sx)
        c, s = ct * ct - st * st, 2.0 * st * ct  # R_twist^T (a, b, d) = (c a - s d, b, s a + c d)
        return q, [
            (c * m[0] - s * m[6], m[3], s * m[0] + c * m[6]),
            (c * m[2] - s * m[8], m[5], s * m[2] + c * m[8]),
            (0.0, 1.0, 0.0),
        ]
    qw, qx, qy, qz = 1.0, 0.0, 0.0, 0.0
    w: list[_Vec] = [(0.0, 0.0, 0.0)] * 3
    for ((axis, c),) in factors:  # Euler: one angle per factor, about its axis
        omega = (float(axis == 0), float(axis == 1), float(axis == 2))
        w[c] = _rotate_back((qw, qx, qy, qz), *omega)
        half = 0.5 * params[c]
        f = [0.0, 0.0, 0.0]
        f[axis] = math.sin(half)
        fw, (fx, fy, fz) = math.cos(half), f
        qw, qx, qy, qz = (  # the factor times the rotation so far
            fw * qw - fx * qx - fy * qy - fz * qz,
            fw * qx + qw * fx + fy * qz - fz * qy,
            fw * qy + qw * fy + fz * qx - fx * qz,
            fw * qz + qw * fz + fx * qy - fy * qx,
        )
    return (qw, qx, qy, qz), w


@dataclass(frozen=True, eq=False)
class Joint:
    """One joint of a chain (see the module's docstring for the frames and the kinds).

    Attributes
    ----------
    kind : {"rq", "swing_twist", "euler"}
    params : ndarray, shape (3,)
        The start pose: the RQ vector; (swing x, swing z, twist); or the Euler angles about
        X, Y, Z (radians).
    offset : ndarray, shape (4, 4)
        Affine rest frame in the parent joint's rotated frame (joint 0: in world space).
    locks : tuple of 3 bool
        ``locks[k]`` holds ``params[k]`` at its start value.
    swing_limit : (a, b)
        Swing ellipse semi-axes (``"swing_twist"`` only), radians.
    twist_limit : (lo, hi)
        Twist range (``"swing_twist"`` only), radians.
    euler_order : str
        Blender's Euler order (``"euler"`` only).

    Bad values (NaN, inf, wrong shapes, an unknown kind or order) raise ``ValueError`` naming
    the field.
    """

    kind: JointKind
    params: ArrayLike  # stored as a read-only float64 ndarray (3,)
    offset: ArrayLike = field(default_factory=lambda: np.eye(4))  # stored as ndarray (4, 4)
    locks: Sequence[bool] = (False, False, False)  # stored as a tuple
    swing_limit: tuple[float, float] = (math.pi, math.pi)
    twist_limit: tuple[float, float] = (-math.pi, math.pi)
    euler_order: str = "XYZ"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"joint kind must be one of {KINDS}, got {self.kind!r}")
        params = as_float_array(self.params, "joint params")
        if params.shape != (3,):
            raise ValueError(f"joint params must have shape (3,), got {params.shape}")
        offset = as_float_array(self.offset, "joint offset")
        if offset.shape != (4, 4):
            raise ValueError(f"joint offset must have shape (4, 4), got {offset.shape}")
        locks = tuple(bool(x) for x in self.locks)
        if len(locks) != 3:
            raise ValueError(f"joint locks must be 3 booleans, got {self.locks!r}")
        swing_limit = as_float_array(self.swing_limit, "joint swing_limit")
        twist_limit = as_float_array(self.twist_limit, "joint twist_limit")
        if swing_limit.shape != (2,) or twist_limit.shape != (2,):
            raise ValueError("joint swing_limit and twist_limit must be pairs of numbers")
        order = check_order(self.euler_order)
        for name, value in (
            ("params", params),
            ("offset", offset),
            ("locks", locks),
            ("swing_limit", tuple(float(x) for x in swing_limit)),
            ("twist_limit", tuple(float(x) for x in twist_limit)),
            ("euler_order", order),
        ):
            object.__setattr__(self, name, value)
        params.flags.writeable = False
        offset.flags.writeable = False


@dataclass(frozen=True, eq=False)
class IKResult:
    """What `solve_chain` found.

    Attributes
    ----------
    params : ndarray, shape (n, 3)
        The new parameters of each joint (in the joint's own convention; RQ vectors closest
        to the start's, so a dragged chain stays continuous).
    distance : float
        Distance left from the end effector to the target (world units).
    orientation_error : float or None
        With ``target_rotation``: the Frobenius norm of ``F_(n-1)[:3, :3] - target_rotation``
        (for a rigid chain ``2 sqrt(2) sin(angle / 2)`` of the angle between them).
    active : tuple of tuple of str
        Per joint, the limits the result lies on: ``"swing"`` (on the ellipse, or at an end of
        a hinge's segment), ``"twist_min"``, ``"twist_max"``; and a zero-width limit (a hinge's
        zero semi-axis, a twist range of one value) where it holds the end effector back.
    holding : tuple of tuple of str
        Of those, the ones that hold the end effector back (empty where the target is
        reached): letting one go would bring it closer (a positive multiplier of the reach,
        `_holding`). A chain stretched straight and too short has none, whatever limits its
        pose happens to lie on.
    iterations : int
        Gauss-Newton iterations taken.
    moved : float
        ``sqrt(sum of squared joint rotation angles)`` from the start pose (radians).
    """

    params: NDArray[np.float64]
    distance: float
    orientation_error: float | None
    active: tuple[tuple[str, ...], ...]
    holding: tuple[tuple[str, ...], ...]
    iterations: int
    moved: float


class _Layout:
    """What a chain's joint kinds, orders, locks and limits fix (not its offsets or pose).

    Built once per distinct chain by `_layout` and shared, read-only, by every `_Chain` of the
    same joints: a drag solves the same chain again and again, and building this took a tenth
    of a 3-joint solve.
    """

    def __init__(self, key: tuple[tuple[str, str, tuple[bool, ...], tuple, tuple], ...]) -> None:
        n = len(key)
        self.n = n
        self.kinds = [kind for kind, *_ in key]
        self.factors = [_factors(kind, order) for kind, order, *_ in key]
        lower = np.full((n, 3), -np.inf)
        upper = np.full((n, 3), np.inf)
        ellipse = np.zeros((n, 2))  # semi-axes where both are positive, else 0
        fixed = np.array([locks for _, _, locks, _, _ in key], dtype=bool)
        swing_twist = [i for i, (kind, *_) in enumerate(key) if kind == "swing_twist"]
        limits = np.array([[*key[i][3], *key[i][4]] for i in swing_twist])
        effective = np.stack(effective_limits(*limits.T), axis=1) if swing_twist else limits
        for i, (a, b, lo, hi) in zip(swing_twist, effective.tolist(), strict=True):
            lower[i, 2], upper[i, 2] = lo, hi
            if a > 0 and b > 0:
                ellipse[i] = a, b
            else:  # a hinge (one coordinate on a segment) or no swing at all
                lower[i, :2], upper[i, :2] = (-a, -b), (a, b)
        self.lower, self.upper, self.ellipse = lower, upper, ellipse
        self.identity = np.eye(3 * n)
        # (joint, a, b) of the joints with an ellipse, as Python numbers for scalar work
        self.ellipses = [(int(i), *ellipse[i].tolist()) for i in np.flatnonzero(ellipse[:, 0] > 0)]
        # the coordinates a zero-width limit holds (a hinge's other swing coordinate, a twist
        # range of one value), not a lock: flat indices
        self.pinned = np.flatnonzero(((lower == upper) & ~fixed).ravel()).tolist()
        fixed |= lower == upper
        self.fixed = fixed.ravel()
        self.free = ~self.fixed
        # 1.0 where free (None: all are)
        self.free_mask = None if self.free.all() else self.free.astype(float)
        # (flat index, lower, upper) of the free parameters with a finite bound, as Python
        # numbers: the box bounds' scalar tests (a twist range, a hinge's segment)
        self.box = [
            (k, lo, hi)
            for k, (lo, hi, free) in enumerate(
                zip(
                    lower.ravel().tolist(),
                    upper.ravel().tolist(),
                    self.free.tolist(),
                    strict=True,
                )
            )
            if free and (math.isfinite(lo) or math.isfinite(hi))
        ]
        self.free_basis = self.identity[:, self.free]  # (3n, free): the step's basis, none held
        # (flat index, lower, upper) of every parameter with a finite bound: `_Chain.project_flat`'s
        # clipping in Python floats
        self.clip = [
            (k, lo, hi)
            for k, (lo, hi) in enumerate(
                zip(lower.ravel().tolist(), upper.ravel().tolist(), strict=True)
            )
            if math.isfinite(lo) or math.isfinite(hi)
        ]
        # `curvature`'s weights (3n, 3n) of the entry (a, b), a of joint i, b of joint j:
        # 1 where its formula is exact in that order (j > i, or j = i and a's factor acts after
        # b's), 1/2 within a factor, 0 else (the transpose has it)
        factor = np.zeros((n, 3), dtype=int)  # each parameter's factor
        for i, factors in enumerate(self.factors):
            for number, pairs in enumerate(factors):
                for _, c in pairs:
                    factor[i, c] = number
        order = (np.arange(n)[:, None] * 3 + (2 - factor)).ravel()  # proximal first
        later = order[None, :] - order[:, None]
        self.curvature_weights = np.where(later > 0, 1.0, np.where(later == 0, 0.5, 0.0)).ravel()
        # flat indices into (3n, 3n): the diagonal blocks' entries, block by block, row by row;
        # the joints with a factor of several parameters (an RQ vector, a swing: their ``w``
        # change with their own parameters, see `_Chain.curvature`) and those entries of their
        # blocks, in order
        rows, columns = np.divmod(np.arange(9), 3)
        self.block_index = (
            (3 * np.arange(n)[:, None] + rows) * 3 * n + 3 * np.arange(n)[:, None] + columns
        ).ravel()
        self.within_factors = [i for i, kind in enumerate(self.kinds) if kind != "euler"]
        self.within_index = np.array(
            [
                (3 * i + r) * 3 * n + 3 * i + c
                for i in self.within_factors
                for r, c in (
                    zip(rows, columns, strict=True)
                    if self.kinds[i] == "rq"
                    else ((0, 0), (0, 1), (1, 0), (1, 1))
                )
            ],
            dtype=int,
        )
        self.free_rq = np.array([kind == "rq" and not any(locks) for kind, _, locks, *_ in key])
        self.free_rq_joints = np.flatnonzero(self.free_rq).tolist()
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False


@functools.lru_cache(maxsize=64)
def _layout(key: tuple[tuple[str, str, tuple[bool, ...], tuple, tuple], ...]) -> _Layout:
    """The shared `_Layout` of the joints' ``(kind, euler_order, locks, swing_limit,
    twist_limit)`` records (as `Joint` stores them: hashable)."""
    return _Layout(key)


class _Chain:
    """The chain's constant arrays, validated, and its kinematics.

    The arrays its joints' kinds and limits fix come from the shared `_Layout` (read-only):
    ``n``, ``kinds``, ``factors``, ``lower``, ``upper``, ``ellipse``, ``identity``,
    ``ellipses``, ``fixed``, ``pinned``, ``free``, ``free_mask``, ``box``, ``free_basis``,
    ``clip``, ``curvature_weights``, ``block_index``, ``within_factors``,
    ``within_index``, ``free_rq``, ``free_rq_joints``.
    """

    def __init__(
        self,
        joints: Sequence[Joint],
        tip: NDArray[np.float64],
        target: NDArray[np.float64],
        target_rotation: NDArray[np.float64] | None,
        orientation_weight: float,
    ) -> None:
        layout = _layout(
            tuple((j.kind, j.euler_order, j.locks, j.swing_limit, j.twist_limit) for j in joints)
        )
        self.n = layout.n
        self.kinds, self.factors = layout.kinds, layout.factors
        self.within_factors, self.within_index = layout.within_factors, layout.within_index
        self.block_index = layout.block_index
        self.lower, self.upper, self.ellipse = layout.lower, layout.upper, layout.ellipse
        self.identity = layout.identity
        self.ellipses = layout.ellipses
        self.fixed, self.curvature_weights = layout.fixed, layout.curvature_weights
        self.pinned = layout.pinned
        self.free, self.box, self.free_basis = layout.free, layout.box, layout.free_basis
        self.free_mask, self.clip = layout.free_mask, layout.clip
        self.free_rq, self.free_rq_joints = layout.free_rq, layout.free_rq_joints
        # each offset's linear part (row-major) and translation
        self.offsets: list[tuple[_Mat, _Vec]] = [
            ((*r0[:3], *r1[:3], *r2[:3]), (r0[3], r1[3], r2[3]))
            for r0, r1, r2, _ in (np.asarray(j.offset).tolist() for j in joints)
        ]
        self.tip: _Vec = tuple(tip.tolist())
        self.target: _Vec = tuple(target.tolist())
        self.target_rotation = target_rotation
        self.orientation_weight = orientation_weight
        self.scale = 1.0  # (the chain's length: set by the first `evaluate`)
        self.q0_inv: list[_Quat] | None = None  # the start's inverses, set by the first `evaluate`

    def start(self, p: NDArray[np.float64]) -> _State:
        """Make ``p`` (n, 3) the pose the angles are measured from; measure the chain's length
        (``scale``, the unit of the reach's residual). Returns the state at ``p``."""
        self.q0_inv = None  # evaluate takes the rotations at p as the start's, measures there
        return self.evaluate(p, jacobians=True)

    # -- limits ---------------------------------------------------------------------------

    def project(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """The closest point of the limits (box bounds, then the ellipses) to ``p`` (n, 3).

        In Python floats (a chain's few bounded parameters), one array built at the end. The
        limits are tested one by one, as everywhere on the flat list of parameters: a
        vectorized prefilter of the ellipses cost more than ten scalar tests.
        """
        return np.array(self.project_flat(p.ravel().tolist())).reshape(self.n, 3)

    def project_flat(self, flat: list[float]) -> list[float]:
        """`project` on the parameters as a flat list (3n), in place; returns it."""
        for k, lo, hi in self.clip:
            flat[k] = min(max(flat[k], lo), hi)
        for i, a, b in self.ellipses:  # (a swing with an ellipse has no box)
            flat[3 * i], flat[3 * i + 1] = _project_ellipse(flat[3 * i], flat[3 * i + 1], a, b)
        return flat

    # -- kinematics -----------------------------------------------------------------------

    def evaluate(self, p: NDArray[np.float64], jacobians: bool) -> _State:
        """Residuals (and with ``jacobians`` their Jacobians) at ``p`` (n, 3).

        The first evaluation (a new chain, or after `start`) makes ``p`` the start: its
        rotations the ones the angles are measured from, its chain length ``scale``. In Python
        floats (see `_factor`), the arrays built once at the end.
        """
        n, scale = self.n, self.scale
        rows = p.tolist()
        first = self.q0_inv is None  # then the rotations at p are the start's
        q0_inv: list[_Quat] = [] if self.q0_inv is None else self.q0_inv
        deltas: list[_Vec] = []
        omegas: list[list[_Vec]] = []  # per joint, per parameter: w (body frame)
        glin: list[_Mat] = []  # per joint: its rotated frame's world linear part
        pivots: list[_Vec] = []  # and its translation
        e2 = 0.0  # the sum of squared joint angles from the start
        for i in range(n):
            q, w = _joint_rotation(self.kinds[i], self.factors[i], rows[i])
            if first:
                q0_inv.append((q[0], -q[1], -q[2], -q[3]))
            aw, ax, ay, az = q0_inv[i]
            qw, qx, qy, qz = q
            dx, dy, dz = _log(
                aw * qw - ax * qx - ay * qy - az * qz,
                aw * qx + qw * ax + ay * qz - az * qy,
                aw * qy + qw * ay + az * qx - ax * qz,
                aw * qz + qw * az + ax * qy - ay * qx,
            )
            deltas.append((dx, dy, dz))
            e2 += dx * dx + dy * dy + dz * dz
            omegas.append(w)
            # F_i = F_(i-1) @ O_i @ [[R_i, 0], [0, 1]]: the frame before the rotation, then G_i
            linear, (tx, ty, tz) = self.offsets[i]
            if i:
                (bx, by, bz), before = pivots[-1], glin[-1]
                ox, oy, oz = _apply(before, tx, ty, tz)
                tx, ty, tz = ox + bx, oy + by, oz + bz
                linear = _matmul(before, linear)
            pivots.append((tx, ty, tz))
            glin.append(_matmul(linear, _quat_matrix(q)))
        frame, (tx, ty, tz) = glin[-1], pivots[-1]
        ex, ey, ez = _apply(frame, *self.tip)
        ex, ey, ez = ex + tx, ey + ty, ez + tz
        if first:
            self.q0_inv = q0_inv
            self.scale = _path_length([*pivots, (ex, ey, ez)])
            scale = self.scale or 1.0  # (a chain of zero length: `solve_chain` refuses it)
        gx, gy, gz = self.target
        rx, ry, rz = (ex - gx) / scale, (ey - gy) / scale, (ez - gz) / scale
        r1 = np.array((rx, ry, rz))
        e1 = math.sqrt(rx * rx + ry * ry + rz * rz)
        if self.target_rotation is not None:
            rows_r = self.orientation_weight * (np.reshape(frame, (3, 3)) - self.target_rotation)
            r1 = np.concatenate([r1, rows_r.ravel()])
            e1 = math.sqrt(r1 @ r1)
        state = _State(
            p,
            np.array((ex, ey, ez)),
            frame,
            pivots,
            r1,
            e1,
            np.array(deltas),
            e2,
        )
        if not jacobians:
            return state
        # the end effector (x) in each joint's rotated frame, whose world linear part is G:
        # d end/dp_c = G (w_c x x); the angles: d delta/dp_c = A(delta) w_c (block i of J2)
        rows1: tuple[list[float], list[float], list[float]] = ([], [], [])
        blocks: list[float] = []
        state.local = []
        for g, (bx, by, bz), w, delta in zip(glin, pivots, omegas, deltas, strict=True):
            h = _inverse(g)
            x0, x1, x2 = _apply(h, ex - bx, ey - by, ez - bz)
            g0, g1, g2, g3, g4, g5, g6, g7, g8 = g
            for w0, w1, w2 in w:
                cx, cy, cz = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
                rows1[0].append((g0 * cx + g1 * cy + g2 * cz) / scale)
                rows1[1].append((g3 * cx + g4 * cy + g5 * cz) / scale)
                rows1[2].append((g6 * cx + g7 * cy + g8 * cz) / scale)
            a = _log_jacobian(*delta)
            (w00, w01, w02), (w10, w11, w12), (w20, w21, w22) = w  # w[c][k]
            block: list[float] = []
            for r in (0, 3, 6):
                a0, a1, a2 = a[r], a[r + 1], a[r + 2]
                block += (
                    a0 * w00 + a1 * w01 + a2 * w02,
                    a0 * w10 + a1 * w11 + a2 * w12,
                    a0 * w20 + a1 * w21 + a2 * w22,
                )
            blocks += block
            state.local.append((g, (x0, x1, x2), w, delta, h))
        j1 = np.array(rows1)
        if self.target_rotation is not None:  # d F/dp_c = G [w_c]x G^-1 F
            glin_a, ginv_a, omega = state.frames()
            wx = (omega @ _HALF_CROSS).reshape(n, 3, 3, 3)  # [w_c]x / 2
            below = ginv_a @ np.reshape(frame, (3, 3))
            dframe = (2.0 * self.orientation_weight) * (glin_a[:, None] @ wx @ below[:, None])
            j1 = np.concatenate([j1, dframe.reshape(3 * n, 9).T])
        state.j1 = j1
        j2 = np.zeros(9 * n * n)
        j2[self.block_index] = blocks  # A(delta_i) W_i^T, row by row
        state.j2 = j2.reshape(3 * n, 3 * n)
        return state

    def curvature(
        self, state: _State, multiplier: NDArray[np.float64], angles: bool = True
    ) -> NDArray[np.float64]:
        """The Lagrangian's Hessian (3n, 3n) in closed form: the angles' ``|delta|^2 / 2`` plus
        ``sum_k multiplier_k d^2 r1_k / dp^2`` of the position rows (the orientation rows' are
        left to the secant update); without ``angles``, the second part alone.

        With ``G_i`` the world linear part of joint ``i``'s rotated frame and ``w_a`` parameter
        ``a``'s body angular velocity (``R_i^T dR_i/dp_a = [w_a]x``), a parameter ``b`` of a
        joint ``j >= i`` moves the end effector by ``J_b``, and turning joint ``i`` by ``a``
        turns that by ``G_i [w_a]x G_i^-1``: ``d^2 end/dp_a dp_b = G_i (w_a x (G_i^-1 J_b))``,
        exact where ``a`` acts after ``b`` (a later joint, or a later factor of one joint: then
        ``dw_b/dp_a = 0``). Within a factor, with ``S_ab = (dw_a/dp_b + dw_b/dp_a) / 2``,
        ``R^T d^2R/dp_a dp_b`` (``[w_b]x [w_a]x + [dw_a/dp_b]x``, symmetric in ``a, b``) is its
        symmetric part ``([w_a]x [w_b]x + [w_b]x [w_a]x) / 2 + [S_ab]x``: the same formula
        halved and symmetrized, plus ``m . (S_ab x x) = S_ab . (x x m)`` (``m = G^T lambda``,
        ``x`` the end effector in the joint's rotated frame). The angles (``d delta/dp_a = A
        w_a``, ``A^T delta = delta``, hence ``delta^T dA[u] = u^T (I - A)``) have the Hessian
        ``w_a . A w_b + delta . dw_a/dp_b``. Across factors, ``dw_b/dp_a = 0`` for ``a`` acting
        after ``b``, and ``dw_a/dp_b = w_b x w_a + dw_b/dp_a`` make that ``w_b . A w_a`` (the
        transposed order, as above); within a factor, ``(w_a . A w_b + w_b . A w_a) / 2 +
        delta . S_ab`` (``W A W^T = W J2_i``, ``W``'s rows the ``w_a``). ``S`` is
        `_factor_curvature`'s within an RQ vector or a swing (seen through its twist); a twist
        or an Euler angle does not change its own ``w``.
        """
        n, scale = self.n, self.scale
        lx, ly, lz = multiplier[:3].tolist()
        # in Python floats (a few dozen numpy calls on 3x3 blocks cost more): rows a (joint i),
        # columns b: m_i . (w_a x G_i^-1 J_b) = (G_i^-T (m_i x w_a)) . J_b, m_i = G_i^T lambda,
        # one product with J; and the angles' w_b . A w_a = J2_ka (W^T)_kb, W^T block-diagonal
        # (its blocks W_i^T, as J2's are A(delta_i) W_i^T: one product with J2)
        turned: list[float] = []  # G_i^-T (m_i x w_a), per parameter
        spread: list[float] = []  # W^T's diagonal blocks, row by row
        moments: list[_Vec] = []  # m_i
        for g, _, w, _, h in state.local:
            m0 = g[0] * lx + g[3] * ly + g[6] * lz
            m1 = g[1] * lx + g[4] * ly + g[7] * lz
            m2 = g[2] * lx + g[5] * ly + g[8] * lz
            moments.append((m0, m1, m2))
            for w0, w1, w2 in w:
                c0, c1, c2 = m1 * w2 - m2 * w1, m2 * w0 - m0 * w2, m0 * w1 - m1 * w0
                turned += (
                    h[0] * c0 + h[3] * c1 + h[6] * c2,
                    h[1] * c0 + h[4] * c1 + h[7] * c2,
                    h[2] * c0 + h[5] * c1 + h[8] * c2,
                )
            (a0, a1, a2), (b0, b1, b2), (d0, d1, d2) = w
            spread += (a0, b0, d0, a1, b1, d1, a2, b2, d2)
        upper = np.array(turned).reshape(3 * n, 3) @ state.j1[:3]
        if angles:
            blocks = np.zeros(9 * n * n)
            blocks[self.block_index] = spread
            upper += state.j2.T @ blocks.reshape(3 * n, 3 * n)
        upper = upper.ravel()  # kept where the order is exact (halved within a factor)
        upper *= self.curvature_weights
        if self.within_factors:  # S_ab . (delta + x x m / scale) within a factor, halved
            half = 0.5 / scale
            rows = state.p.tolist()
            values: list[float] = []
            for i in self.within_factors:
                _, (x0, x1, x2), _, (dx, dy, dz), _ = state.local[i]
                half_angle = 0.5 if angles else 0.0  # (S . q is linear in q)
                dx, dy, dz = half_angle * dx, half_angle * dy, half_angle * dz
                m0, m1, m2 = moments[i]
                q0 = dx + half * (x1 * m2 - x2 * m1)
                q1 = dy + half * (x2 * m0 - x0 * m2)
                q2 = dz + half * (x0 * m1 - x1 * m0)
                a, b, t = rows[i]
                if self.kinds[i] == "rq":
                    values += _factor_curvature(a, b, t, (q0, q1, q2))
                else:  # the swing (x, 0, z) seen through the twist t: q turned by R_twist
                    c, s = math.cos(t), math.sin(t)
                    own = _factor_curvature(a, 0.0, b, (c * q0 + s * q2, q1, c * q2 - s * q0))
                    values += (own[0], own[2], own[6], own[8])
            upper[self.within_index] += values
        square = upper.reshape(3 * n, 3 * n)
        return square + square.T


class _State:
    """Residuals at a point: ``r1`` the reach (normalized), ``delta`` the angles' vectors;
    ``linear`` the last frame's linear part (row-major) and ``pivots`` each joint's, in
    Python floats."""

    __slots__ = (
        "delta",
        "e1",
        "e2",
        "end",
        "j1",
        "j2",
        "linear",
        "local",
        "p",
        "pivots",
        "r1",
    )

    def __init__(
        self,
        p: NDArray[np.float64],
        end: NDArray[np.float64],
        linear: _Mat,
        pivots: list[_Vec],
        r1: NDArray[np.float64],
        e1: float,
        delta: NDArray[np.float64],
        e2: float,
    ) -> None:
        self.p, self.end, self.linear, self.pivots = p, end, linear, pivots
        self.r1, self.delta = r1, delta
        self.e1 = e1  # |r1|: the reach's residual, in chain lengths
        self.e2 = e2  # |delta|^2: the sum of squared joint angles from the start
        self.j1: NDArray[np.float64]
        self.j2: NDArray[np.float64]
        # per joint, in Python floats: (G, the end effector in its rotated frame (unscaled),
        # w per parameter, delta, G^-1)
        self.local: list[tuple[_Mat, _Vec, list[_Vec], _Vec, _Mat]]

    def frames(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """``(G, G^-1, W)``, each (n, 3, 3), from `local` (a state with Jacobians): each rotated
        frame's world linear part, its inverse, and per parameter its ``w`` (body frame, rows).
        Built on demand (by an orientation target's Jacobian) in one
        array, read from one flat iterator (``np.array`` of tuples costs twice as much on ten
        joints): most states never need them."""
        n = len(self.local)
        flat = itertools.chain.from_iterable
        values = itertools.chain(
            flat([g for g, *_ in self.local]),
            flat([h for *_, h in self.local]),
            flat(flat([w for _, _, w, _, _ in self.local])),
        )
        glin, ginv, omega = np.fromiter(values, np.float64, 27 * n).reshape(3, n, 3, 3)
        return glin, ginv, omega


def _project_ellipse(px: float, pz: float, a: float, b: float) -> tuple[float, float]:
    """Closest point of the filled ellipse ``(x/a)^2 + (z/b)^2 <= 1`` (``a, b > 0``) to a point.

    The same projection as ``clamp_swing_ellipse``, for one point in Python floats: Newton's
    method on ``f(t) = (a px/(t + a^2))^2 + (b pz/(t + b^2))^2 - 1`` from the lower bound
    ``max(a |px| - a^2, b |pz| - b^2, 0)`` of its root (``f`` is convex and decreasing, so the
    iterates rise monotonically to the root).
    """
    if (px / a) ** 2 + (pz / b) ** 2 <= 1.0:
        return px, pz
    a2, b2 = a * a, b * b
    ax, bz = a * abs(px), b * abs(pz)
    t = max(ax - a2, bz - b2, 0.0)
    for _ in range(100):
        u, w = ax / (t + a2), bz / (t + b2)
        f = u * u + w * w - 1.0
        if f <= 0.0:
            break
        df = -2.0 * (u * u / (t + a2) + w * w / (t + b2))
        step = -f / df
        t += step
        if step <= 1e-16 * t:
            break
    return a2 * px / (t + a2), b2 * pz / (t + b2)


def _ellipse_normal(flat: list[float], i: int, a: float, b: float) -> tuple[float, float] | None:
    """Outward normal ``(x/a^2, z/b^2)`` of joint ``i``'s ellipse if its swing is on it
    (``flat``: the parameters (3n) in Python floats)."""
    x, z = flat[3 * i], flat[3 * i + 1]
    if (x / a) ** 2 + (z / b) ** 2 < 1.0 - ON_BOUNDARY:
        return None
    return x / (a * a), z / (b * b)


def _basis(
    chain: _Chain,
    held_box: list[int],
    held_ellipse: list[int],
    normals: dict[int, tuple[float, float]],
) -> NDArray[np.float64]:
    """Directions the step may take (3n, m): free parameters, tangents of held ellipses
    (``held_box``: the flat indices of the held box bounds)."""
    if not held_ellipse and not held_box:
        return chain.free_basis
    free = chain.free.copy()
    free[held_box] = False
    for i in held_ellipse:
        free[3 * i : 3 * i + 2] = False
    cols = [chain.identity[:, free]]
    for i in held_ellipse:
        n0, n1 = normals[i]
        t = np.zeros(3 * chain.n)
        if not chain.fixed[3 * i] and not chain.fixed[3 * i + 1]:
            length = math.hypot(n0, n1)
            t[3 * i], t[3 * i + 1] = -n1 / length, n0 / length
            cols.append(t[:, None])
    return np.concatenate(cols, axis=1) if len(cols) > 1 else cols[0]


def _limits_at(
    chain: _Chain, p: NDArray[np.float64]
) -> tuple[list[tuple[int, float]], dict[int, tuple[float, float]]]:
    """The limits ``p`` (n, 3) lies on: ``(index, direction)`` of each box bound (a step
    along ``direction`` crosses it; the lower bounds first) and each ellipse's outward
    normal by joint."""
    flat = p.ravel().tolist()
    on_box = [(k, -1.0) for k, lo, _ in chain.box if flat[k] <= lo + ON_BOUNDARY]
    on_box += [(k, 1.0) for k, _, hi in chain.box if flat[k] >= hi - ON_BOUNDARY]
    normals = {}
    for i, a, b in chain.ellipses:
        nrm = _ellipse_normal(flat, i, a, b)
        if nrm is not None:
            normals[i] = nrm
    return on_box, normals


def _constrained_step(
    chain: _Chain,
    state: _State,
    solve: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    release: bool = False,
    face: bool = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64], list[int], list[int]]:
    """``solve(Z)`` (a step in the basis) with the active set grown until no limit is crossed,
    and with ``release``, each limit held then let go where the step without it crosses none.

    A limit joins the active set when ``state.p`` lies on it and the step would cross it, and
    the step is solved again: the one returned is always the step of the limits returned as
    held (up to four rounds; a fourth round's limits were held by `_advance`'s projection
    alone, and a 9-joint tail out of reach stopped 0.19% short of its closest pose). With
    two limits or more held, one may have joined only because the step crossed it before the
    others were held: where the step without it crosses no limit, its multiplier had the
    wrong sign (on a convex model), and holding it can stop the solve on that face: a reach
    of the benchmark's arm ended at squared angles of 6.80 instead of 5.81, a 10-joint tail
    out of reach 3.4e-5 short of its closest pose. Each test is a solve, so `_solve` asks for
    them only where a step is too short to go on. Returns ``(step (3n,), Z, held_box,
    held_ellipse)``: the flat indices of the held box bounds and the joints of the held
    ellipses (lists, empty when none is held); ``solve``'s last call is the returned step's.
    """

    def in_basis(z: NDArray[np.float64]) -> NDArray[np.float64]:
        return z @ solve(z) if z.shape[1] else np.zeros(3 * chain.n)

    on_box, normals = _limits_at(chain, state.p)
    held_box: list[int] = [k for k, _ in on_box] if face else []
    held_ellipse: list[int] = sorted(normals) if face else []
    z = _basis(chain, held_box, held_ellipse, normals)
    step = in_basis(z)
    if face or (not on_box and not normals):  # every limit held, or none to cross
        return step, z, held_box, held_ellipse
    for _ in range(4):
        crossed, ellipse = _crossed(step, on_box, normals, held_box, held_ellipse)
        if not crossed and not ellipse:
            break
        held_box = held_box + crossed
        held_ellipse = sorted(held_ellipse + ellipse)
        z = _basis(chain, held_box, held_ellipse, normals)
        step = in_basis(z)
    else:
        return step, z, held_box, held_ellipse
    if not release or len(held_box) + len(held_ellipse) < 2:
        return step, z, held_box, held_ellipse
    solved_last = True  # whether solve's last call gave the step kept
    for limit in [("box", k) for k in held_box] + [("ellipse", i) for i in held_ellipse]:
        box = [k for k in held_box if ("box", k) != limit]
        ellipses = [i for i in held_ellipse if ("ellipse", i) != limit]
        trial_z = _basis(chain, box, ellipses, normals)
        trial = in_basis(trial_z)
        solved_last = _crossed(trial, on_box, normals, box, ellipses) == ([], [])
        if solved_last:
            held_box, held_ellipse, step, z = box, ellipses, trial, trial_z
    if not solved_last:
        step = in_basis(z)
    return step, z, held_box, held_ellipse


def _crossed(
    step: NDArray[np.float64],
    on_box: list[tuple[int, float]],
    normals: dict[int, tuple[float, float]],
    held_box: list[int],
    held_ellipse: list[int],
) -> tuple[list[int], list[int]]:
    """The limits `_limits_at` found (``on_box``, ``normals``) that ``step`` (3n,) crosses and
    that are not held: ``(box indices, ellipse joints)``."""
    moves = step.tolist()
    box = [k for k, side in on_box if moves[k] * side > 0.0 and k not in held_box]
    ellipse = [
        i
        for i, (n0, n1) in normals.items()
        if i not in held_ellipse and n0 * moves[3 * i] + n1 * moves[3 * i + 1] > 0
    ]
    return box, ellipse


def _advance(
    chain: _Chain,
    p: NDArray[np.float64],
    step: NDArray[np.float64],
    held_box: list[int],
    held_ellipse: list[int],
) -> NDArray[np.float64]:
    """``p + alpha step`` (n, 3), ``alpha <= 1`` stopping at the first limit not held (the
    held ones as `_constrained_step` returns them).

    The step runs along the held limits (their tangents); its end is projected back onto
    them. A limit the step would cross from inside stops it there, so the next step finds
    that limit on its boundary and holds it (an active-set method).
    """
    alpha = 1.0
    at, moves = p.ravel().tolist(), step.tolist()  # (Python floats: a chain's few parameters)
    for k, lo, hi in chain.box:
        d = moves[k]
        if d and k not in held_box:
            alpha = min(alpha, ((hi if d > 0.0 else lo) - at[k]) / d)  # inf: unbounded
    ends = [x + d for x, d in zip(at, moves, strict=True)]
    for i, a, b in chain.ellipses:
        # the step's end inside (with a margin for rounding: the exact test is below), or held
        if (ends[3 * i] / a) ** 2 + (ends[3 * i + 1] / b) ** 2 < 1.0 - 1e-12 or i in held_ellipse:
            continue
        x, z = at[3 * i] / a, at[3 * i + 1] / b
        dx, dz = moves[3 * i] / a, moves[3 * i + 1] / b
        qa = dx * dx + dz * dz
        if qa == 0.0 or (x + dx) ** 2 + (z + dz) ** 2 <= 1.0:
            continue
        qb = x * dx + z * dz
        qc = x * x + z * z - 1.0  # <= 0 inside
        alpha = min(alpha, (-qb + math.sqrt(max(qb * qb - qa * qc, 0.0))) / qa)
    if alpha != 1.0:
        alpha = max(alpha, 0.0)
        ends = [x + alpha * d for x, d in zip(at, moves, strict=True)]
    return np.array(chain.project_flat(ends)).reshape(-1, 3)


def _svd_parts(
    a1: NDArray[np.float64],
) -> tuple[NDArray[np.float64], list[float], NDArray[np.float64], int]:
    """``(U, s, Vt, rank)`` of the reach Jacobian in the step basis, rank relative to ``s[0]``
    (the singular values ``s`` in Python floats: their few scalar uses cost numpy more)."""
    u, s, vt = np.linalg.svd(a1, full_matrices=True)
    values: list[float] = s.tolist()
    rank = sum(x > 1e-10 * values[0] for x in values) if values and values[0] > 0 else 0
    return u, values, vt, rank


def solve_chain(
    joints: Sequence[Joint],
    tip: ArrayLike,
    target: ArrayLike,
    *,
    target_rotation: ArrayLike | None = None,
    orientation_weight: float = 1.0,
    max_iterations: int = 200,
    callback: Callable[[int, NDArray[np.float64]], None] | None = None,
) -> IKResult:
    """Turn the joints of a chain so that the end effector reaches ``target``.

    Parameters
    ----------
    joints : sequence of Joint
        From the root to the tip; their ``params`` are the start pose.
    tip : array_like, shape (3,)
        The end effector in the last joint's rotated frame (a bone's tail: ``(0, length, 0)``).
    target : array_like, shape (3,)
        World position to reach.
    target_rotation : array_like, shape (3, 3), optional
        The last frame's linear part ``F_(n-1)[:3, :3]`` to match too (a rotation matrix for
        rigid chains).
    orientation_weight : float
        Weight of the orientation residual against the position residual measured in chain
        lengths.
    max_iterations : int
        Gauss-Newton iterations at most.
    callback : callable(iteration, params), optional
        Called with every accepted iterate (iteration 0 is the start, moved into the limits),
        ``params`` of shape (n, 3) as `IKResult.params`.

    Returns
    -------
    IKResult

    Raises
    ------
    ValueError
        No joints; NaN or inf in ``tip``, ``target`` or ``target_rotation``; a chain of zero
        length (the end effector on the first joint's pivot and no offset between joints);
        every parameter of the chain locked (by ``locks`` or by zero-width limits).

    Examples
    --------
    Two unit bones along Y, swing/twist joints without twist: a shoulder with a swing ellipse
    of 1 radian about X and 1.5 about Z, and an elbow bent 0.3 radians about X. The hand
    reaches a point in front; the elbow bends, the shoulder barely moves:

    >>> import numpy as np
    >>> from rq_rotation import Joint, solve_chain
    >>> up = np.eye(4)
    >>> up[1, 3] = 1.0  # the elbow at the upper arm's tail
    >>> chain = [
    ...     Joint("swing_twist", (0.0, 0.0, 0.0), swing_limit=(1.0, 1.5), twist_limit=(0, 0)),
    ...     Joint("swing_twist", (0.3, 0.0, 0.0), offset=up, twist_limit=(0, 0)),
    ... ]
    >>> result = solve_chain(chain, (0.0, 1.0, 0.0), (0.0, 1.2, 1.0))
    >>> bool(result.distance < 1e-9), result.active, result.params[:, 0].round(4)
    (True, ((), ()), array([0.0202, 1.349 ]))

    Out of reach, the shoulder stops on its ellipse and the elbow points the hand at the
    target; the distance left is reported:

    >>> result = solve_chain(chain, (0.0, 1.0, 0.0), (0.0, 0.0, 3.0))
    >>> round(result.distance, 4), result.active, result.params[:, 0].round(4)
    (1.2251, (('swing',), ()), array([1.    , 0.8161]))
    """
    joints = list(joints)
    if not joints:
        raise ValueError("the chain has no joints")
    for i, joint in enumerate(joints):
        if not isinstance(joint, Joint):
            raise ValueError(f"joint {i} is not a Joint record, got {type(joint).__name__}")
    tip_a = as_float_array(tip, "tip")
    target_a = as_float_array(target, "target")
    if tip_a.shape != (3,) or target_a.shape != (3,):
        raise ValueError("tip and target must have shape (3,)")
    rot_target = None
    if target_rotation is not None:
        rot_target = as_float_array(target_rotation, "target_rotation")
        if rot_target.shape != (3, 3):
            raise ValueError(f"target_rotation must have shape (3, 3), got {rot_target.shape}")
    weight = float(as_float_array(orientation_weight, "orientation_weight"))
    chain = _Chain(joints, tip_a, target_a, rot_target, weight)
    if chain.fixed.all():
        raise ValueError("every rotation axis of the chain is locked: nothing can turn")

    start = np.array([j.params for j in joints])
    p = chain.project(start)  # (a new array)
    if _beyond_first_shell(chain, p):
        p[chain.free_rq] = reparameterize(p[chain.free_rq])
    state = chain.start(p)
    if chain.scale == 0.0:
        raise ValueError("the chain has zero length: its end effector never moves")
    if callback is not None:
        callback(0, _output(chain, p, start))

    state, iterations = _solve(chain, state, max_iterations, callback, start)

    holding = _holding(chain, state)
    rot_err = None
    if rot_target is not None:
        rot_err = float(np.linalg.norm(np.reshape(state.linear, (3, 3)) - rot_target))
    return IKResult(
        params=_output(chain, state.p, start),
        distance=math.dist(state.end.tolist(), target_a.tolist()),
        orientation_error=rot_err,
        active=tuple(
            tuple(dict.fromkeys(on + held))
            for on, held in zip(_active(chain, state.p), holding, strict=True)
        ),
        holding=holding,
        iterations=iterations,
        moved=math.sqrt(state.e2),
    )


def chain_end(
    joints: Sequence[Joint], tip: ArrayLike, params: ArrayLike | None = None
) -> tuple[NDArray[np.float64], float]:
    """The end effector (3,) of a chain posed at ``params`` (n, 3; default the joints'
    ``params``), and the chain's length at that pose (the distances between consecutive
    pivots and from the last pivot to the end effector; `solve_chain`'s unit).

    Examples
    --------
    >>> import numpy as np
    >>> from rq_rotation import Joint, chain_end
    >>> up = np.eye(4)
    >>> up[1, 3] = 1.0
    >>> joints = [Joint("rq", (0, 0, np.pi / 2)), Joint("rq", (0, 0, 0), up)]
    >>> end, length = chain_end(joints, (0, 1, 0))  # a quarter turn about Z: along -X
    >>> end.round(6), length
    (array([-2.,  0.,  0.]), 2.0)
    """
    if not joints:
        raise ValueError("the chain has no joints")
    tip_a = as_float_array(tip, "tip")
    chain = _Chain(list(joints), tip_a, np.zeros(3), None, 1.0)
    p = np.stack([j.params for j in joints]) if params is None else as_float_array(params, "params")
    if p.shape != (len(joints), 3):
        raise ValueError(f"params must have shape ({len(joints)}, 3), got {p.shape}")
    state = chain.evaluate(p, jacobians=False)
    return state.end, chain.scale


def _path_length(points: Sequence[Sequence[float]]) -> float:
    """Sum of the distances between consecutive points (in Python floats: a chain has a
    handful of points)."""
    return math.fsum(math.dist(a, b) for a, b in zip(points, points[1:], strict=False))


def _output(
    chain: _Chain, p: NDArray[np.float64], start: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Parameters to hand out: free RQ joints' vectors closest to their start.

    A vector ``v`` with ``|v| + |start| < pi`` is that one already (its equivalents are at
    least ``2 pi - |v|`` long, farther from the start than ``v``): tested in Python first, as
    drags mostly stay there.
    """
    out = p.copy()
    rows, near = p.tolist(), start.tolist()
    if any(math.hypot(*rows[i]) + math.hypot(*near[i]) >= math.pi for i in chain.free_rq_joints):
        out[chain.free_rq] = _nearest_equivalent(p[chain.free_rq], start[chain.free_rq])
    return out


def _beyond_first_shell(chain: _Chain, p: NDArray[np.float64]) -> bool:
    """Whether a free RQ joint's vector in ``p`` (n, 3) is longer than pi (`reparameterize`
    would move it), tested in Python on the chain's few joints."""
    rows = p.tolist()
    for i in chain.free_rq_joints:  # (a loop: generators cost more on a few joints)
        x, y, z = rows[i]
        if x * x + y * y + z * z > math.pi**2:
            return True
    return False


def _accept(
    chain: _Chain,
    state: _State,
    callback: _Callback | None,
    iteration: int,
    start: NDArray[np.float64],
) -> tuple[_State, bool]:
    """The next iterate: free RQ joints moved inside the first shell, reported to ``callback``.

    Returns ``(state, jumped)``, ``jumped`` when a vector was reparameterized.
    """
    jumped = False
    if _beyond_first_shell(chain, state.p):
        p = state.p.copy()
        p[chain.free_rq] = reparameterize(p[chain.free_rq])
        state = chain.evaluate(p, jacobians=True)
        jumped = True
    if callback is not None:
        callback(iteration, _output(chain, state.p, start))
    return state, jumped


#: `_pseudo_inverse`'s arguments.
_Chord = tuple[NDArray[np.float64], NDArray[np.float64], list[float], NDArray[np.float64]]


class _StepParts:
    """What a step's last solve leaves for the rest of its iteration: ``chord``, the chord's
    factors (`_pseudo_inverse`'s arguments; where a chord may be taken), ``capped``,
    whether its angles' part was cut to the square root of the residual (`WIDE_RESTORE`),
    and ``pieces``, a curved step's parts before that cut (`_assembled`'s ``z``, ``vt``,
    ``reach``, ``tangent``, ``wanted``), from which `_wide_step` takes it wide without
    solving again."""

    __slots__ = ("capped", "chord", "pieces")

    def __init__(self) -> None:
        self.chord: _Chord | None = None
        self.capped = False
        self.pieces: (
            tuple[NDArray[np.float64], NDArray[np.float64], list[float], NDArray[np.float64], float]
            | None
        ) = None

    def pseudo_inverse(self) -> NDArray[np.float64]:
        """`_pseudo_inverse` of ``chord``."""
        assert self.chord is not None  # (set by the curved and the minimizing steps' solves)
        return _pseudo_inverse(*self.chord)


def _pseudo_inverse(
    z: NDArray[np.float64], vr: NDArray[np.float64], sr: list[float], ur: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The reach Jacobian's pseudo-inverse (3n, rows of r1) in the parameters, from its SVD in
    the step basis ``z`` (3n, m): ``z V_r diag(1/s_r) U_r^T`` (the ``rank`` leading singular
    vectors ``vr`` (m, rank), ``ur`` (rows, rank) and values ``sr``). Built only for the
    steps whose chord is taken (`_restore`)."""
    return z @ (vr / sr) @ ur.T


def _levenberg_marquardt(
    a1: NDArray[np.float64], r1: NDArray[np.float64], damping: float
) -> NDArray[np.float64]:
    """The reach's Levenberg-Marquardt step in a step basis, bounded to `MAX_STEP`: ``-(A^T A +
    damping I)^-1 A^T r1 = -A^T (A A^T + damping I)^-1 r1`` (``A = a1``, (rows of r1, m): the
    reach Jacobian in the basis; the Gram matrix of its 3 rows, 12 with an orientation target,
    solved in Python floats up to `SMALL` rows). Far from the target, where it serves
    (`CURVED_NEAR`), the damping is at least ``CURVED_NEAR^2`` (`_solve`'s ``max(mu,
    |r1|)^2``): the Gram matrix's condition is fine, and the SVD that the curved steps need for
    the null space is spared (with ``U S V^T = A``: ``-V S (S^2 + damping)^-1 U^T r1``, the
    same step)."""
    gram = a1 @ a1.T
    gram.flat[:: len(gram) + 1] += damping
    return _bounded(-(a1.T @ _solve_positive(gram, r1, 0.5 * damping)), MAX_STEP)


def _bounded(step: NDArray[np.float64], bound: float) -> NDArray[np.float64]:
    """``step`` scaled down to length ``bound`` if longer."""
    length = math.sqrt(step @ step)
    return step * (bound / length) if length > bound else step


def _bfgs(
    model: NDArray[np.float64], s: NDArray[np.float64], y: NDArray[np.float64]
) -> NDArray[np.float64]:
    """BFGS update of a Hessian model with Powell's damping (it stays positive definite)."""
    bs = model @ s
    sbs = s @ bs
    if sbs <= 0.0:
        return model
    sy = s @ y
    if sy < 0.2 * sbs:
        theta = 0.8 * sbs / (sbs - sy)
        y = theta * y + (1.0 - theta) * bs
        sy = s @ y
    return model + np.outer(y, y) / sy - np.outer(bs, bs) / sbs


#: Matrices up to this size are factorized in Python floats (`_cholesky`); numpy's wrappers
#: cost more than the arithmetic below it (a Cholesky factorization of ``k`` rows takes about
#: ``k^3 / 6`` multiplications). A solve of 5 rows took 12 us either way, of 6, 7 and 8 rows
#: 17, 22 and 30 us in Python floats against 14 us with numpy (the 3-joint arm's BFGS steps
#: solve 7 rows).
SMALL = 5


def _cholesky(rows: list[list[float]], shift: float, floor: float) -> list[list[float]] | None:
    """The lower Cholesky factor (rows) of ``rows - shift I`` (symmetric; only the lower
    triangle is read), or None when a pivot is not above ``floor`` (not positive definite for
    ``floor = 0``). Plain loops: generators cost more than the arithmetic on a few rows."""
    factor: list[list[float]] = []
    for i, row in enumerate(rows):
        li: list[float] = []
        for j in range(i):
            lj = factor[j]
            acc = row[j]
            for m in range(j):
                acc -= li[m] * lj[m]
            li.append(acc / lj[j])
        pivot = row[i] - shift
        for a in li:
            pivot -= a * a
        if not pivot > floor:
            return None
        li.append(math.sqrt(pivot))
        factor.append(li)
    return factor


def _cholesky_solve(factor: list[list[float]], rhs: list[float]) -> list[float]:
    """``x`` with ``L L^T x = rhs`` for a lower Cholesky factor ``L`` (rows, `_cholesky`)."""
    k = len(rhs)
    y = rhs[:]
    for i in range(k):
        li = factor[i]
        acc = y[i]
        for m in range(i):
            acc -= li[m] * y[m]
        y[i] = acc / li[i]
    for i in range(k - 1, -1, -1):
        acc = y[i]
        for m in range(i + 1, k):
            acc -= factor[m][i] * y[m]
        y[i] = acc / factor[i][i]
    return y


def _solve_positive(
    matrix: NDArray[np.float64], rhs: NDArray[np.float64], floor: float
) -> NDArray[np.float64]:
    """``matrix^-1 rhs`` with ``matrix`` (symmetric) shifted up to eigenvalues ``>= floor``.

    (The floor is at least ``1e-12`` of the largest eigenvalue, to stay solvable.) A Cholesky
    factorization of ``matrix`` minus a floor at least as high (``1e-12`` of the trace, which
    bounds the largest eigenvalue of a positive definite matrix) proves that no shift is due
    at a fraction of the eigenvalues' cost (a fifth on 30 parameters, where OpenBLAS also
    threads the eigensolver). Up to `SMALL` rows both factorizations and the solve are in
    Python floats (`_cholesky`): a 3-joint chain's few rows cost numpy's wrappers more than
    the arithmetic.
    """
    if len(matrix) <= SMALL:
        rows = matrix.tolist()
        high = max(floor, 1e-12 * abs(sum(row[i] for i, row in enumerate(rows))), 1e-300)
        if _cholesky(rows, high, 0.0) is not None:
            factor = _cholesky(rows, 0.0, 0.0)
            if factor is not None:
                return np.array(_cholesky_solve(factor, rhs.tolist()))
    high = max(floor, 1e-12 * abs(float(np.trace(matrix))), 1e-300)
    lowered = matrix.copy()
    lowered.flat[:: len(matrix) + 1] -= high
    try:
        np.linalg.cholesky(lowered)
    except np.linalg.LinAlgError:
        pass
    else:
        return np.linalg.solve(matrix, rhs)
    eigenvalues = np.linalg.eigvalsh(matrix)
    floor = max(floor, 1e-12 * abs(eigenvalues[-1]), 1e-300)
    shift = max(floor - eigenvalues[0], 0.0)
    return np.linalg.solve(matrix + shift * np.eye(len(matrix)) if shift else matrix, rhs)


def _secant(
    curvature: NDArray[np.float64],
    s: NDArray[np.float64],
    change: NDArray[np.float64],
    exact: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Structured PSB update: ``E + S`` maps the step ``s`` to the gradient's ``change``.

    ``E`` (``exact``) is the part of the Lagrangian's Hessian known in closed form at the new
    point (`_lagrangian`): ``S s = change - E s`` is imposed with the least change to ``S``.
    """
    ss = s @ s
    if ss == 0.0:
        return curvature
    r = change - exact @ s - curvature @ s
    rs = np.outer(r, s)
    return curvature + (rs + rs.T) / ss - (r @ s) * np.outer(s, s) / (ss * ss)


def _secant_step(
    chain: _Chain,
    old: _State,
    state: _State,
    gradient: NDArray[np.float64],
    curvature: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """After a step from ``old`` to ``state``: ``(exact, S)``, `_lagrangian`'s Hessian part at
    ``state`` (3n, 3n) and ``curvature`` (``S``) updated by `_secant` to the Lagrangian's
    gradient change (``gradient``: the angles' ``J2^T delta`` at ``old``; the multipliers
    ``state``'s)."""
    grad_new = state.j2.T @ state.delta.ravel()
    exact, multiplier = _lagrangian(chain, state, grad_new)
    change = grad_new - gradient + (state.j1 - old.j1).T @ multiplier
    return exact, _secant(curvature, (state.p - old.p).ravel(), change, exact)


def _lagrangian(
    chain: _Chain, state: _State, gradient: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The known part of the Lagrangian's Hessian (3n, 3n) at ``state`` and the multipliers.

    The multipliers ``lambda`` of the reach rows make the Lagrangian ``|delta|^2 / 2 + lambda .
    r1`` stationary in the least-squares sense over the free parameters (``gradient`` is the
    angles' ``J2^T delta``). A locked or zero-width parameter's column is zeroed: the
    optimum leaves its gradient nonzero, and fitting it too skewed the multipliers and the
    curvature they weight (the 3-joint arm's far reaches took 7% more iterations). The
    Hessian in closed form is `_Chain.curvature`'s (all of it but an orientation target's).
    At the start pose (``delta = 0``, as at the start of every solve: a drag's first step)
    the gradient and so the multipliers vanish, and that Hessian is Gauss-Newton's ``J2^T
    J2`` (``A(0) = I``): taken as such.
    """
    if state.e2 == 0.0:
        return state.j2.T @ state.j2, np.zeros(len(state.r1))
    j1 = state.j1 if chain.free_mask is None else state.j1 * chain.free_mask
    multiplier = _multipliers(j1, gradient)
    exact = chain.curvature(state, multiplier)
    return exact, multiplier


def _multipliers(j1: NDArray[np.float64], gradient: NDArray[np.float64]) -> NDArray[np.float64]:
    """``lambda`` (rows of ``j1``) minimizing ``|j1^T lambda + gradient|``: ``lstsq``'s.

    With the three position rows alone (no orientation target) and ``j1`` well conditioned
    (every pivot of ``j1 j1^T``'s Cholesky factorization above ``1e-12`` of its trace:
    ``cond(j1)`` below about ``1e6``), the normal equations are solved in Python floats:
    ``lstsq`` cost a tenth of a 3-joint solve, and the multipliers only weight curvature
    terms of a model, where the normal equations' relative error (``eps cond(j1)^2``, at most
    about ``1e-4``) does not matter. Else ``lstsq`` (rank-deficient or ill-conditioned reach
    Jacobians: a straight chain).
    """
    if len(j1) == 3:
        rows = (j1 @ j1.T).tolist()
        factor = _cholesky(rows, 0.0, 1e-12 * (rows[0][0] + rows[1][1] + rows[2][2]))
        if factor is not None:
            return -np.array(_cholesky_solve(factor, (j1 @ gradient).tolist()))
    result: NDArray[np.float64] = -np.linalg.lstsq(j1.T, gradient, rcond=None)[0]
    return result


def _solve(
    chain: _Chain,
    state: _State,
    max_iterations: int,
    callback: _Callback | None,
    start: NDArray[np.float64],
    iterations: int = 0,
    again: bool = True,
) -> tuple[_State, int]:
    """Sequential quadratic programming on "reach, then the angles" (see the module's text).

    Every step has a (Levenberg-Marquardt damped) Gauss-Newton part for the reach,
    minimum-norm, and near the target (`CURVED_NEAR`; farther the reach's part alone) a part
    in the reach Jacobian's null space that minimizes a quadratic model of the angles: the
    Lagrangian's Hessian in closed form (`_lagrangian`; at the start pose Gauss-Newton's
    ``J2^T J2``), and once reached plus ``S``, what is left of it (an orientation target's
    curvature), from a structured Powell-symmetric-Broyden secant update of the Lagrangian's
    gradient. While the reach falls slowly (out of reach, a large residual) its part comes
    from a BFGS model instead (Fletcher and Xu's hybrid), restricted to the directions that
    move the end effector; after `NEWTON_AFTER` such steps, from the reach's exact Hessian
    (`_reach_hessian`), whole, damped by a trust region on that quadratic model. While the
    end effector approaches the target a step counts when the reach improves enough against
    its linear model (a trust region's ratio test steers
    the damping, at least the residual; a curved step whose angles' part the square root of
    the residual cuts is taken wide, its reach restored by chords, `WIDE_RESTORE`). Once it
    reaches (or, out of reach, stops improving), a step counts when the angles decrease and
    the reach stays within its tolerance (plus the order of the step squared, which the next
    step's Gauss-Newton part takes back); the end of a step is first pulled back to the
    reaching set by chord Gauss-Newton steps. The step is halved until it counts. Out of
    reach the angles move along the reach Hessian's flat directions alone (`CLOSEST_FLAT`,
    every limit the pose lies on held), and where they moved, the solve reaches once more
    from there (``again``): along the poses that approached as closely, a way closer may open.
    ``iterations`` counts on from a first round's.
    """
    size = 3 * chain.n
    curvature = np.zeros((size, size))
    mu = MU_START
    nu = NU_START
    slow = False  # the reach falls slowly: out of reach, a large residual
    slowly = 0
    model = np.zeros((size, size))  # then a BFGS model of the reach's Hessian
    reaching = state.e1 > REACH_TOLERANCE
    cap, anchor = _settled(state)
    crawling = 0
    crawl = 0  # slow steps in a row, escapes off saddles counted through (`NEWTON_AFTER`)
    escapes = 0  # steps off saddles of the reach (`_escape`)
    last = math.inf  # the length of the last accepted step, when curved
    flat_moves = 0  # steps along the poses that approach as closely (`CLOSEST_FLAT`)
    trial: _State | None
    exact: NDArray[np.float64] | None = None  # `_lagrangian` at state, while minimizing
    corrected = False  # whether `curvature` has been updated since it was last zero
    release = False  # whether the limits held are tested (`_constrained_step`): a short step
    while iterations < max_iterations:
        gradient = state.j2.T @ state.delta.ravel()
        # the step is sequential quadratic programming's on the whole problem (see below)
        curved = reaching and not slow and state.e1 < CURVED_NEAR
        if reaching and not curved:  # the reach's model alone
            hessian = None
        else:
            if exact is None:
                exact = _lagrangian(chain, state, gradient)[0]
            hessian = exact + curvature if corrected else exact
        # the Levenberg-Marquardt parameter at least the reach's residual (in chain lengths):
        # a far target's steps damped in proportion to the distance left, which spares the
        # trust region's refusals (Fan and Yuan's choice of parameter; reach iterations mean
        # 3-joint 16.2 -> 10.6, 10-joint 19.7 -> 11.5, drags unchanged)
        damping = max(mu, state.e1) ** 2 if reaching else 0.0
        # a long slow crawl without an orientation target (whose curvature `_reach_hessian`
        # leaves out): Newton's steps on the reach (`NEWTON_AFTER`)
        newton = reaching and slow and crawl >= NEWTON_AFTER and chain.target_rotation is None
        if newton:
            model, damping = _reach_hessian(chain, state), nu * nu
        # out of reach, minimizing the angles: the reach's Hessian, whose flat directions are
        # the ones along the poses that approach as closely (`CLOSEST_FLAT`)
        flat = (
            _position_hessian(chain, state)
            if not reaching and cap > REACH_TOLERANCE and chain.target_rotation is None
            else None
        )
        parts = _StepParts()

        def solve(
            z: NDArray[np.float64],
            state: _State = state,
            parts: _StepParts = parts,
            hessian: NDArray[np.float64] | None = hessian,
            gradient: NDArray[np.float64] = gradient,
            damping: float = damping,
            reaching: bool = reaching,
            slow: bool = slow,
            curved: bool = curved,
            model: NDArray[np.float64] = model,
            newton: bool = newton,
            flat: NDArray[np.float64] | None = flat,
        ) -> NDArray[np.float64]:
            if hessian is None and not slow:  # far from the target (`CURVED_NEAR`)
                return _levenberg_marquardt(state.j1 @ z, state.r1, damping)
            u, s, vt, rank = _svd_parts(state.j1 @ z)
            ur, sr, vr = u[:, :rank], s[:rank], vt[:rank].T
            if not reaching or curved:  # the chord (`_restore`): the reach's pseudo-inverse
                parts.chord = z, vr, sr, ur
            if reaching and slow:
                # the BFGS model's step, kept out of the directions that do not move the end
                # effector at all (a twist about a bone pointing at a target out of reach),
                # where the model knows nothing and the angles decide later; Newton's, whose
                # model knows them, whole
                hz = z.T @ model @ z + damping * np.eye(z.shape[1])
                y = -_solve_positive(hz, z.T @ (state.j1.T @ state.r1), max(damping, 1e-12))
                return y if newton else vr @ (vr.T @ y)
            if flat is not None:  # the angles' model along the reach's flat directions alone
                values, vectors = np.linalg.eigh(z.T @ flat @ z)
                keep = vectors[:, values <= CLOSEST_FLAT * max(float(values[-1]), 1.0)]
                assert hessian is not None  # (minimizing the angles)
                tz = z @ keep
                return keep @ -_solve_positive(tz.T @ hessian @ tz, tz.T @ gradient, ANGLES_FLOOR)
            # in the SVD's directions (the basis turned by vt.T, orthonormal as the basis is):
            # the first rank move the end effector, the reach's damped Gauss-Newton part; the
            # others do not, the angles' model minimized there (one projection of the Hessian)
            along = (ur.T @ state.r1).tolist()
            reach = [-x * c / (x * x + damping) for x, c in zip(sr, along, strict=True)]
            if rank == len(vt):
                return vr @ reach
            assert hessian is not None  # (the far and slow steps returned above)
            turned = z @ vt.T  # (3n, m)
            hq = turned.T @ (hessian @ turned)
            g = turned[:, rank:].T @ gradient + hq[rank:, :rank] @ reach
            reduced = hq[rank:, rank:]
            if damping:
                reduced.flat[:: len(reduced) + 1] += damping
            tangent = -_solve_positive(reduced, g, ANGLES_FLOOR)
            if reaching:
                # the reach's part within the step bound, the angles' part shorter than the
                # square root of the reach's residual: it moves the end effector at second
                # order, which must not undo the reach's progress
                length = math.hypot(*reach)
                if length > MAX_STEP:
                    reach = [c * (MAX_STEP / length) for c in reach]
                limit = min(MAX_STEP, math.sqrt(state.e1))
                # (a curved step whose angles' part is cut by sqrt(e1): `WIDE_RESTORE`)
                wanted = math.sqrt(tangent @ tangent)
                parts.capped = curved and wanted > limit
                parts.pieces = z, vt, reach, tangent, wanted
                return _assembled(vt, reach, tangent, wanted, limit)
            return vt.T @ np.concatenate((reach, tangent))

        step, _, held_box, held_ellipse = _constrained_step(
            chain, state, solve, release, face=flat is not None
        )
        length = math.sqrt(step @ step)
        if length < (1e-14 if reaching else STEP_TOLERANCE) or (newton and length < NEWTON_DONE):
            if not release and len(held_box) + len(held_ellipse) >= 2:
                release = True  # (a limit held the wrong way may be what stops it)
                continue
            release = False
            if not reaching:
                break
            escaped = _escape(chain, state, MAX_STEP) if escapes < ESCAPES else None
            if escaped is not None:  # a saddle (a straight chain): off it, reaching on
                escapes, iterations, exact = escapes + 1, iterations + 1, None
                state, _ = _accept(chain, escaped, callback, iterations, start)
                continue
            reaching, cap, anchor = False, *_settled(state)
            continue
        release = False
        bound = (2.0 if reaching else 1.0) * MAX_STEP
        if length > bound:  # (`_bounded`, its length known)
            step = step * (bound / length)
        iterations += 1
        if reaching:
            # a curved step taken whole (no limit on its way or held, its angles' part not
            # cut to sqrt(e1) > its length) after which the next one, from the same model,
            # would be shorter than the angles' tolerance: sequential quadratic programming's
            # steps contract quadratically, next = C length^2, and the last two give C =
            # length / last^2, so the next is estimated at length^3 / last^2 (on the 3-joint
            # arm's drags and far reaches within a factor 2 of the step that followed). Then
            # the angles have converged with the reach and the solve ends on this step (it
            # spares a drag its third model and step, a far reach its last): it is evaluated
            # without the Jacobians, and the reach it leaves (of second order in the step:
            # the end effector's second derivatives are at most the chain's length) is taken
            # back by chord steps (`_restore`, with this step's pseudo-inverse). After the
            # first curved step (no last) only a step that reaches at once ends the solve
            p = _advance(chain, state.p, step, held_box, held_ellipse)
            converged = (
                curved
                and not parts.capped  # (then taken wide: `WIDE_RESTORE`)
                and length * (length / last) ** 2 < STEP_TOLERANCE
                and length <= math.sqrt(state.e1)
                and not held_ellipse
                and not held_box
                and p.ravel().tolist() == (state.p.ravel() + step).tolist()
            )
            restorable = converged and last < math.inf
            bare = restorable or (converged and length * length < REACH_TOLERANCE)
            if parts.capped:  # wide, else the reach's part alone
                step, p = _wide_step(chain, state, held_box, held_ellipse, parts)
                length = math.sqrt(step @ step)
            trial = chain.evaluate(p, not bare)
            # the gain against the linear model's: a step that gains less than a tenth of it
            # is refused, the damping follows the ratio (a trust region's rule)
            linear = state.r1 + state.j1 @ step
            predicted = state.e1**2 - float(linear @ linear)
            if newton:  # (its own quadratic model's)
                gradient_r = state.j1.T @ state.r1
                predicted = -float(2.0 * (gradient_r @ step) + step @ model @ step)
            ratio = (state.e1**2 - trial.e1**2) / predicted if predicted > 0 else -1.0
            gain = state.e1 - trial.e1
            if gain > 0.0 and (ratio > 0.1 or slow):
                if bare and trial.e1 > min(REACH_TOLERANCE, 0.5 * state.e1):
                    restored = None
                    if restorable and trial.e1 <= length * length:
                        pinv = parts.pseudo_inverse()
                        restored = _restore(chain, trial, pinv, 0.0, REACH_TOLERANCE)
                    # it goes on (or BFGS) unless the chords reached
                    trial = restored or chain.evaluate(trial.p, jacobians=True)
                last = length if curved else math.inf
                # Fletcher and Xu's hybrid: Gauss-Newton while the reach falls fast, else BFGS
                if trial.e1 > 0.5 * state.e1:
                    if not slow or newton:
                        model = state.j1.T @ state.j1
                    g_old, g_new = state.j1.T @ state.r1, trial.j1.T @ trial.r1
                    model = _bfgs(model, (trial.p - state.p).ravel(), g_new - g_old)
                    slowly += 1
                    crawl += 1
                    slow = slowly >= 2
                else:
                    slow, slowly, crawl = False, 0, 0
                state, jumped = _accept(chain, trial, callback, iterations, start)
                slow = slow and not jumped
                if newton:
                    nu = (
                        max(nu / 4.0, 1e-6) if ratio > 0.75 else nu * (1.0 if ratio > 0.25 else 4.0)
                    )
                else:
                    mu = max(mu / 4.0, 1e-9) if ratio > 0.5 else mu * (1.0 if ratio > 0.25 else 4.0)
                # out of reach, along a flat valley of closest poses: on to the angles
                crawling = crawling + 1 if gain <= 1e-12 * state.e1 else 0
                # a saddle may also show as a crawl (a straight elbow whose hinge bends out of
                # the target's plane): looked for after 4, 8, 16, ... slow steps, when the last
                # gained under `ESCAPE_CRAWL` of the residual
                looked = (
                    slow
                    and slowly >= 4
                    and slowly & (slowly - 1) == 0
                    and gain < ESCAPE_CRAWL * state.e1
                )
                if (crawling >= 2 or looked) and escapes < ESCAPES:
                    escaped = _escape(chain, state)
                    if escaped is not None:
                        escapes, iterations = escapes + 1, iterations + 1
                        crawling, slow, slowly = 0, False, 0
                        state, _ = _accept(chain, escaped, callback, iterations, start)
                        exact = None
                        continue
                if state.e1 <= REACH_TOLERANCE or crawling >= 2:
                    reaching, cap, anchor = False, *_settled(state)
                    if converged and not jumped and state.e1 <= REACH_TOLERANCE:
                        break
                exact = None
            else:
                # (the damping is max(mu, e1)^2: below e1, a larger mu tried the same step
                # again, up to five times on a 3-joint reach)
                if newton:
                    nu *= 8.0
                else:
                    mu = 8.0 * max(mu, state.e1)
                if mu > 1e8:
                    reaching, cap, anchor = False, *_settled(state)
            continue
        trial = None
        chords = parts.pseudo_inverse() if flat is None else None
        for _ in range(10):
            # (out of reach the reach is kept where it is: a step along the flat directions
            # is pulled back by Newton's steps on the reach, which see what it loses)
            p = _advance(chain, state.p, step, held_box, held_ellipse)
            if chords is not None:
                slack = cap + RESTORE_SLACK * float(step @ step)
                trial = _restore(chain, chain.evaluate(p, False), chords, anchor, slack)
            else:
                slack = min(cap, state.e1 * (1.0 + FLAT_SLACK))
                trial = _retract(chain, p, held_box, held_ellipse, slack)
            if trial is not None and trial.e2 < state.e2:
                break
            trial = None
            step = 0.5 * step
        if trial is None:
            # an accepted step's slack left the reach off (by up to RESTORE_SLACK |step|^2),
            # and a step that restores it must also beat the angles of that point off the
            # reaching set: back onto it first (a wide step's active-set dance had a 8-joint
            # tail stop there, its angles 1.6% above the closest pose's), then on
            if state.e1 > cap:
                polished, iterations = _polish(
                    chain, state, cap, anchor, iterations, callback, start
                )
                if polished.e1 < state.e1:
                    state, exact = polished, None
                    curvature[:] = 0.0
                    corrected = False
                    continue
            if not curvature.any():
                break
            curvature[:] = 0.0  # the model misled: start again from Gauss-Newton
            corrected = False
            continue
        gain = state.e2 - trial.e2
        flat_moves += flat is not None
        old = state
        # (`_retract`'s states carry their Jacobians; `_restore`'s do not)
        state = trial if chords is None else chain.evaluate(trial.p, jacobians=True)
        exact, curvature = _secant_step(chain, old, state, gradient, curvature)
        corrected = True
        state, jumped = _accept(chain, state, callback, iterations, start)
        if jumped:
            curvature[:] = 0.0
            corrected = False
            exact = None
        if gain <= (1e-12 if flat is None else FLAT_GAIN) * state.e2 + 1e-300:
            break
    state, iterations = _polish(chain, state, cap, anchor, iterations, callback, start)
    if flat_moves and again and iterations < max_iterations:
        # along the poses that approached as closely the reach may have found a way closer:
        # reaching again, once (a 9-joint tail 6.9e-5 closer)
        return _solve(chain, state, max_iterations, callback, start, iterations, again=False)
    return state, iterations


def _position_hessian(chain: _Chain, state: _State) -> NDArray[np.float64]:
    """The Hessian (3n, 3n) of the position rows' ``|r1[:3]|^2 / 2`` at ``state`` (a state
    with Jacobians): ``J^T J + sum_k r_k d^2 r_k / dp^2``, the second part `_Chain.curvature`'s
    with the residual as the multipliers (it reads the position rows' alone), without its
    angles' part. Shared by `_escape` and `_reach_hessian`."""
    j1 = state.j1[:3]
    return j1.T @ j1 + chain.curvature(state, state.r1, angles=False)


def _reach_hessian(chain: _Chain, state: _State) -> NDArray[np.float64]:
    """The Hessian (3n, 3n) of the reach's ``|r1|^2 / 2`` at ``state`` (a state with
    Jacobians, without an orientation target: ``r1`` the position rows alone):
    `_position_hessian`'s ``J1^T J1 + sum_k r1_k d^2 r1_k / dp^2``, plus, for each swing on
    its ellipse ``c = (x/a)^2 + (z/b)^2 - 1 = 0`` that the reach's gradient ``g`` pushes
    outward, the constraint's curvature weighted by its multiplier ``lambda = -(g . grad c) /
    |grad c|^2 > 0``: ``lambda diag(2 / a^2, 2 / b^2)`` (the Lagrangian's, so that a step
    along the held ellipse's tangent, then projected back onto it, is Newton's there too)."""
    hessian = _position_hessian(chain, state)
    gradient = (state.j1.T @ state.r1).tolist()
    flat = state.p.ravel().tolist()
    for i, a, b in chain.ellipses:
        normal = _ellipse_normal(flat, i, a, b)  # grad c / 2
        if normal is None:
            continue
        n0, n1 = normal
        multiplier = -(gradient[3 * i] * n0 + gradient[3 * i + 1] * n1) / (
            2.0 * (n0 * n0 + n1 * n1)
        )
        if multiplier > 0.0:
            hessian[3 * i, 3 * i] += 2.0 * multiplier / (a * a)
            hessian[3 * i + 1, 3 * i + 1] += 2.0 * multiplier / (b * b)
    return hessian


def _assembled(
    vt: NDArray[np.float64],
    reach: list[float],
    tangent: NDArray[np.float64],
    wanted: float,
    bound: float,
) -> NDArray[np.float64]:
    """A curved step in its basis from its parts in the SVD's directions (rows of ``vt``): the
    reach's part, then the angles' part ``tangent`` (of length ``wanted``) cut to ``bound``
    (`_bounded`, its length known)."""
    if wanted > bound:
        tangent = tangent * (bound / wanted)
    return vt.T @ np.concatenate((reach, tangent))


def _wide_step(
    chain: _Chain,
    state: _State,
    held_box: list[int],
    held_ellipse: list[int],
    parts: _StepParts,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A curved step whose angles' part was cut to ``sqrt(e1)`` taken wide (`WIDE_RESTORE`):
    ``(step (3n,), the point it leads to (n, 3))``.

    From that step's parts (``parts.pieces``: its basis ``z`` and the limits held), the angles'
    part bounded by `MAX_STEP`; the point is its end pulled back by chord steps (the reach's
    pseudo-inverse in ``parts``, the same in that basis) until the residual is at most
    `WIDE_RESTORE` of ``state``'s. Where they fall short, the step's reach part alone.
    """
    assert parts.pieces is not None  # (set by the curved step's solve)
    z, vt, reach_part, tangent, wanted = parts.pieces
    wide = z @ _assembled(vt, reach_part, tangent, wanted, MAX_STEP)
    end = chain.evaluate(_advance(chain, state.p, wide, held_box, held_ellipse), False)
    pinv = parts.pseudo_inverse()
    restored = _restore(chain, end, pinv, 0.0, WIDE_RESTORE * state.e1)
    if restored is not None:
        return wide, restored.p
    reach = z @ _assembled(vt, reach_part, tangent, wanted, 0.0)
    return reach, _advance(chain, state.p, reach, held_box, held_ellipse)


def _escape(chain: _Chain, state: _State, length: float = ESCAPE_STEP) -> _State | None:
    """A step off a saddle of the reach, or None at a closest pose (see `ESCAPE_CURVATURE`).

    Within the limits the point lies on (their tangents, `_basis`), the reach's Hessian
    ``J^T J + sum_k r_k d^2 r_k / dp^2`` (its second part `_Chain.curvature`'s with the
    residual as multipliers, without its angles' part) is tested for negative curvature; along
    its lowest eigenvector (downhill, if the gradient has a component there) a step of
    ``length`` (radians), halved until it lowers the residual (`_advance` stops it at the
    limits).
    Only a step that brings the end effector closer is returned, so a closest pose out of
    reach is never left for a worse one.
    """
    on_box, normals = _limits_at(chain, state.p)
    held_box = [k for k, _ in on_box]
    held_ellipse = sorted(normals)
    z = _basis(chain, held_box, held_ellipse, normals)
    if not z.shape[1]:
        return None
    hessian = _position_hessian(chain, state)
    low, vectors = np.linalg.eigh(z.T @ hessian @ z)
    if low[0] >= -ESCAPE_CURVATURE:
        return None
    direction = z @ vectors[:, 0]
    if (state.j1[:3].T @ state.r1[:3]) @ direction > 0.0:
        direction = -direction
    for _ in range(20):  # (down to ESCAPE_STEP / 2^20: 5e-8 rad)
        p = _advance(chain, state.p, length * direction, held_box, held_ellipse)
        trial = chain.evaluate(p, jacobians=True)
        if trial.e1 < state.e1:
            return trial
        length *= 0.5
    return None


def _settled(state: _State) -> tuple[float, NDArray[np.float64] | float]:
    """The reach kept while the angles are minimized: ``(cap on |r1|, r1 to restore to)``.

    Reached: ``r1 = 0``. Out of reach: the closest approach's residual, within ``1e-9`` of it.
    """
    if state.e1 <= REACH_TOLERANCE:
        return REACH_TOLERANCE, 0.0
    return state.e1 * (1.0 + 1e-9) + REACH_TOLERANCE, state.r1.copy()


def _polish(
    chain: _Chain,
    state: _State,
    cap: float,
    anchor: NDArray[np.float64] | float,
    iterations: int,
    callback: _Callback | None,
    start: NDArray[np.float64],
) -> tuple[_State, int]:
    """A few minimum-norm Gauss-Newton steps on the reach alone towards the residual
    ``anchor`` (`_settled`: zero, or out of reach the closest approach's), down to ``cap``."""
    for _ in range(5):
        if state.e1 <= cap:
            break

        def solve(z: NDArray[np.float64], state: _State = state) -> NDArray[np.float64]:
            return -np.linalg.pinv(state.j1 @ z, rcond=1e-10) @ (state.r1 - anchor)

        step, _, held_box, held_ellipse = _constrained_step(chain, state, solve)
        trial = chain.evaluate(_advance(chain, state.p, step, held_box, held_ellipse), True)
        if trial.e1 >= state.e1:
            break
        iterations += 1
        state = _accept(chain, trial, callback, iterations, start)[0]
    return state, iterations


def _retract(
    chain: _Chain,
    p: NDArray[np.float64],
    held_box: list[int],
    held_ellipse: list[int],
    cap: float,
) -> _State | None:
    """Newton steps on the reach ``|r1|^2 / 2`` (no orientation target) from ``p`` (n, 3) on
    the limits held, along the directions its Hessian (`_reach_hessian`) curves in, until
    ``|r1|`` is within ``cap`` (else None, after `RETRACT_STEPS`): back to the closest
    approach after a step along its flat directions (`CLOSEST_FLAT`), which loses reach at
    third order along the residual, where the reach's Jacobian cannot act. Each step is
    taken in the basis of its own start point: the held ellipses' tangents turn with the
    point, and the reach's gradient along their normals is large (a basis kept from the
    step before made every Newton step climb). Returns the state with Jacobians."""
    state = chain.evaluate(p, jacobians=True)
    for _ in range(RETRACT_STEPS):
        if state.e1 <= cap:
            return state
        basis = _basis(chain, held_box, held_ellipse, _limits_at(chain, state.p)[1])
        values, vectors = np.linalg.eigh(basis.T @ _reach_hessian(chain, state) @ basis)
        curved = values > CLOSEST_FLAT * max(float(values[-1]), 1.0)
        along = vectors[:, curved].T @ (basis.T @ (state.j1.T @ state.r1))
        step = basis @ (vectors[:, curved] @ -(along / values[curved]))
        state = chain.evaluate(_advance(chain, state.p, step, held_box, held_ellipse), True)
    return state if state.e1 <= cap else None


def _restore(
    chain: _Chain,
    trial: _State,
    pinv: NDArray[np.float64],
    r1: NDArray[np.float64] | float,
    cap: float,
) -> _State | None:
    """Chord Gauss-Newton steps from ``trial`` (a state evaluated without the Jacobians) back
    to the reach residual ``r1`` (see `_settled`), until ``|r1|`` is within ``cap`` (else
    None).

    ``pinv`` (3n, rows of r1): the pseudo-inverse of the reach Jacobian at the last iterate,
    whose residual was ``r1``: zero when the target is reached, the closest approach when it
    is out of reach (aiming at zero there would leave the set of closest poses). The states
    are evaluated without the Jacobians (the caller takes those of the one it keeps).
    """
    p = trial.p
    for _ in range(6):
        if trial.e1 <= cap:
            return trial
        p = chain.project(p - (pinv @ (trial.r1 - r1)).reshape(-1, 3))
        trial = chain.evaluate(p, jacobians=False)
    return trial if trial.e1 <= cap else None


#: A limit holds the end effector back (`_holding`) where its multiplier of the reach exceeds
#: this fraction of the residual (the multipliers of limits that do are of the residual's
#: order; of those that do not, of the gradient's rounding).
HOLDING = 1e-6


def _holding(chain: _Chain, state: _State) -> tuple[tuple[str, ...], ...]:
    """`_active`'s limits at ``state`` that hold the end effector back (`IKResult.holding`):
    the multipliers ``mu`` of ``g + N mu = 0`` over the free parameters (``g`` the reach's
    gradient ``J1^T r1``, ``N`` the limits' outward normals), fitted by least squares, above
    `HOLDING` of the residual; and the zero-width limits (``pinned``) whose coordinate's
    gradient is that large (alone on its coordinate, its multiplier is the gradient's size,
    the bound on the side the gradient pushes to). None where the target is reached."""
    if state.e1 <= REACH_TOLERANCE:
        return ((),) * chain.n
    state = chain.evaluate(state.p, jacobians=True)  # (a solve may end on a bare state)
    on_box, normals = _limits_at(chain, state.p)
    gradient = state.j1.T @ state.r1
    pushes = gradient.tolist()
    held_box = [
        (k, -1.0 if pushes[k] > 0.0 else 1.0)  # (-g: the way the coordinate would go)
        for k in chain.pinned
        if abs(pushes[k]) > HOLDING * state.e1
    ]
    columns = _limit_normals(chain, on_box, normals)
    if not columns:
        return _names(chain, held_box, set())
    mu = np.linalg.lstsq(np.array(columns).T[chain.free], -gradient[chain.free], rcond=None)[0]
    held = mu > HOLDING * state.e1
    return _names(
        chain,
        [limit for limit, h in zip(on_box, held[: len(on_box)], strict=True) if h] + held_box,
        {i for i, h in zip(normals, held[len(on_box) :], strict=True) if h},
    )


def _limit_normals(
    chain: _Chain, on_box: list[tuple[int, float]], normals: dict[int, tuple[float, float]]
) -> list[NDArray[np.float64]]:
    """The outward unit normals (3n,) of the limits `_limits_at` found: the box bounds', then
    the ellipses'."""
    columns = []
    for k, side in on_box:
        column = np.zeros(3 * chain.n)
        column[k] = side
        columns.append(column)
    for i, (n0, n1) in normals.items():
        column = np.zeros(3 * chain.n)
        column[3 * i], column[3 * i + 1] = n0, n1
        columns.append(column / math.hypot(n0, n1))
    return columns


def _active(chain: _Chain, p: NDArray[np.float64]) -> tuple[tuple[str, ...], ...]:
    """Per joint, the names of the limits ``p`` lies on (see `IKResult.active`), from
    `_limits_at`: its ellipse or a hinge's end ("swing"), its twist range's ends (the lower
    one named if both are within `ON_BOUNDARY`)."""
    on_box, normals = _limits_at(chain, p)
    return _names(chain, on_box, set(normals))


def _names(
    chain: _Chain, on_box: list[tuple[int, float]], ellipses: set[int]
) -> tuple[tuple[str, ...], ...]:
    """Per joint, the names of limits: box bounds ``(index, direction)`` (the lower bounds
    first) and the joints of ellipses (see `IKResult.active`)."""
    swing = set(ellipses)
    twist: dict[int, str] = {}
    for k, side in on_box:  # (the lower ends first)
        joint, axis = divmod(k, 3)
        if axis < 2:
            swing.add(joint)
        elif joint not in twist:
            twist[joint] = "twist_min" if side < 0 else "twist_max"
    return tuple(
        ("swing",) * (i in swing) + ((twist[i],) if i in twist else ()) for i in range(chain.n)
    )
