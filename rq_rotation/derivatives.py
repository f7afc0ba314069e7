"""Derivatives of the RQ map: Jacobians (Grassia 1997, Appendix A) and rates (Appendix B).

Shapes: ``rq_quat_jacobian(v)`` is ``(..., 4, 3)`` with ``J[..., a, j] = dq_a / dv_j``
(``q = (w, x, y, z)``); ``rq_matrix_jacobian(v)`` is ``(..., 3, 3, 3)`` with
``J[..., k, :, :] = dR / dv_k``.

Angular velocity frames: *world* means ``dq/dt = 0.5 * (0, omega) * q`` (omega in the parent /
world axes), *local* (body) means ``dq/dt = 0.5 * q * (0, omega)`` (omega in the rotated axes).
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_quats, as_vectors, run_chunked
from .quaternion import _conj, _qmul
from .rq import _SIN_HALF_SERIES, SMALL_ANGLE_RQ_TO_QUAT, _poly, _rq_to_quat, _series_where
from .swing_twist import swing_vector

_ONES3 = np.ones(3)

#: The frame of an angular velocity (see the module docstring).
Frame = Literal["world", "local"]

__all__ = [
    "SMALL_ANGLE_DERIVATIVES",
    "quat_matrix_jacobian",
    "rq_angular_velocity",
    "rq_matrix_jacobian",
    "rq_quat_jacobian",
    "rq_velocity",
    "swing_matrix_jacobian",
    "swing_quat_jacobian",
]

#: Below this angle ``|v|`` the Jacobian and the velocity use Taylor series for the
#: coefficients whose closed forms cancel (``g`` and ``b`` below). At 0.25 the closed forms lose
#: about ``eps / theta^2 ~ 4e-15`` (relative) and the series' first omitted terms are below
#: 1e-21, so both branches agree to the rounding of the closed form; in the products that use
#: them (``g v_i v_j``, ``b (v.omega) v``) that is below 1e-16 absolute.
SMALL_ANGLE_DERIVATIVES = 0.25

# g(theta) = (cos(theta/2)/2 - sin(theta/2)/theta) / theta^2 = d/dtheta(sin(theta/2)/theta) / theta
#          = sum_{k>=1} (-1)^k 2k theta^(2k-2) / (2^(2k+1) (2k+1)!)
_G_COEFFS = tuple(
    float(Fraction((-1) ** k * 2 * k, 2 ** (2 * k + 1) * factorial(2 * k + 1))) for k in range(1, 8)
)
# b(theta) = (1 - (theta/2) cot(theta/2)) / theta^2 = -sum_{n>=1} (-1)^n B_2n theta^(2n-2) / (2n)!
_BERNOULLI = (
    Fraction(1, 6),
    Fraction(-1, 30),
    Fraction(1, 42),
    Fraction(-1, 30),
    Fraction(5, 66),
    Fraction(-691, 2730),
    Fraction(7, 6),
    Fraction(-3617, 510),
)
_B_COEFFS = tuple(float(-((-1) ** n) * _BERNOULLI[n - 1] / factorial(2 * n)) for n in range(1, 9))


def _jac_block(v: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    # Component-major layout: every operation below runs on contiguous rows of length n, and
    # the interleaved (n, 4, 3) result is written by a single transposing copy at the end.
    vt = np.ascontiguousarray(v.T)
    th2 = vt[0] * vt[0]
    th2 += vt[1] * vt[1]
    th2 += vt[2] * vt[2]
    th = np.sqrt(th2)
    t = np.tan(0.25 * th)
    t2 = t * t
    d = 1.0 / (1.0 + t2)
    c = (1.0 - t2) * d  # cos(theta/2)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (2.0 * t) * d / th  # sin(theta/2)/theta
        s = _series_where(th < SMALL_ANGLE_RQ_TO_QUAT, th2, _SIN_HALF_SERIES, s)
        g = (0.5 * c - s) / th2
    g = _series_where(th < SMALL_ANGLE_DERIVATIVES, th2, _G_COEFFS, g)
    left = np.empty((4, v.shape[0]))
    np.multiply(s, -0.5, out=left[0])
    np.multiply(vt, g, out=left[1:])
    jt = left[:, None, :] * vt[None, :, :]
    jt[1, 0] += s
    jt[2, 1] += s
    jt[3, 2] += s
    out[...] = jt.transpose(2, 0, 1)


def rq_quat_jacobian(v: ArrayLike) -> NDArray[np.float64]:
    """Jacobian ``dq/dv`` of ``rq_to_quat``.

    Parameters
    ----------
    v : array_like, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 4, 3)
        With ``theta = |v|``, ``s = sin(theta/2)/theta`` and
        ``g = (cos(theta/2)/2 - s)/theta^2`` (= ``ds/dtheta / theta``):
        ``dq_w/dv_j = -s v_j / 2`` and ``dq_i/dv_j = s delta_ij + g v_i v_j`` (Appendix A;
        its small-angle forms are only first order, so here ``g`` uses its Taylor series below
        ``SMALL_ANGLE_DERIVATIVES``: ``g = -1/24 + theta^2/960 - ...``). The columns are singular
        only on the shells ``|v| = 2 pi k``, ``k >= 1``.
    """
    v = as_vectors(v, "v")
    return run_chunked(_jac_block, v, (4, 3))


def quat_matrix_jacobian(q: ArrayLike) -> NDArray[np.float64]:
    """``dR/dq`` of ``quat_to_matrix`` restricted to unit quaternions, shape (..., 4, 3, 3).

    ``out[..., a, :, :] = dR/dq_a`` for the homogeneous form
    ``R = (w^2 - u.u) I + 2 u u^T + 2 w [u]x`` (equal to the usual one on the unit sphere, and the
    one whose derivative along the sphere is the true one).
    """
    q = as_quats(q, "q")
    w, x, y, z = np.moveaxis(q, -1, 0)
    d = [
        [[w, -z, y], [z, w, -x], [-y, x, w]],
        [[x, y, z], [y, -x, -w], [z, w, -x]],
        [[-y, x, w], [x, y, z], [-w, z, -y]],
        [[-z, -w, x], [w, -z, y], [x, y, z]],
    ]
    out = np.stack([np.stack([np.stack(r, -1) for r in m], -2) for m in d], -3)
    return 2.0 * out


def rq_matrix_jacobian(v: ArrayLike) -> NDArray[np.float64]:
    """Jacobian of ``rq_to_matrix``: shape (..., 3, 3, 3), ``J[..., k, :, :] = dR/dv_k``.

    Chain rule ``dR/dv_k = sum_a dR/dq_a dq_a/dv_k`` (section 3.1) with ``rq_quat_jacobian``.
    """
    v = as_vectors(v, "v")
    q = _rq_to_quat(v)
    return np.einsum("...aij,...ak->...kij", quat_matrix_jacobian(q), rq_quat_jacobian(v))


def swing_quat_jacobian(swing: ArrayLike) -> NDArray[np.float64]:
    """``dq/dr`` of a swing ``r = (r_x, r_z)`` (the RQ vector ``(r_x, 0, r_z)``): (..., 4, 2).

    The 2-DOF chain rule of section 5: ``dq/dr = dq/dv dv/dr`` with ``dv/dr_x = (1, 0, 0)`` and
    ``dv/dr_z = (0, 0, 1)``, i.e. columns 0 and 2 of ``rq_quat_jacobian``.
    """
    return rq_quat_jacobian(swing_vector(as_vectors(swing, "swing", 2)))[..., [0, 2]]


def swing_matrix_jacobian(swing: ArrayLike) -> NDArray[np.float64]:
    """``dR/dr`` of a swing ``(r_x, r_z)``: (..., 2, 3, 3), ``out[..., k] = dR/dr_k``."""
    return rq_matrix_jacobian(swing_vector(as_vectors(swing, "swing", 2)))[..., [0, 2], :, :]


def rq_velocity(v: ArrayLike, omega: ArrayLike, frame: Frame = "world") -> NDArray[np.float64]:
    """Rate ``dv/dt`` of an RQ vector rotating with angular velocity ``omega``.

    Parameters
    ----------
    v : array_like, shape (..., 3)
        Current RQ vector (not on a shell ``|v| = 2 pi k``, ``k >= 1``, where the rate is
        infinite: reparameterize first).
    omega : array_like, shape (..., 3)
        Angular velocity (rad / time unit), broadcast against ``v``.
    frame : {"world", "local"}
        ``"world"``: ``dq/dt = 0.5 * (0, omega) * q``; ``"local"`` (body): ``dq/dt = 0.5 * q *
        (0, omega)``.

    Returns
    -------
    ndarray, shape (..., 3)
        With ``theta = |v|``, ``a = (theta/2) cot(theta/2)`` and ``b = (1 - a) / theta^2``::

            local:  dv/dt = a omega + (v x omega) / 2 + b (v . omega) v
            world:  dv/dt = a omega - (v x omega) / 2 + b (v . omega) v

        Appendix B writes ``1/2 (gamma omega - eta v + p)`` with ``gamma = theta cot(theta/2)``,
        ``eta = (v . omega)/theta (cot(theta/2) - 2/theta)``, ``p = v x omega``: that is the
        *local* formula (verified by differentiating along the flow in the tests), although
        the paper quotes the world-frame ``dq/dt = 1/2 omega q`` next to it. The world formula
        follows from ``omega_local = R^T omega_world`` (or flipping the sign of ``p``). Near 0
        the appendix gives ``dv/dt = omega``, which is only the zeroth order; here ``b`` uses
        its series below ``SMALL_ANGLE_DERIVATIVES`` (``b = 1/12 + theta^2/720 + ...``), so the
        ``(v x omega)/2`` term is kept.
    """
    v = as_vectors(v, "v")
    omega = as_vectors(omega, "omega")
    if frame not in ("world", "local"):
        raise ValueError(f"frame must be 'world' or 'local', got {frame!r}")
    v, omega = np.broadcast_arrays(v, omega)
    th2 = np.einsum("...i,...i->...", v, v)
    th = np.sqrt(th2)
    t = np.tan(0.25 * th)
    with np.errstate(divide="ignore", invalid="ignore"):
        a_closed = th * (1.0 - t * t) / (4.0 * t)  # (theta/2) cot(theta/2)
        b = (1.0 - a_closed) / th2
    b = np.where(th < SMALL_ANGLE_DERIVATIVES, _poly(_B_COEFFS, th2), b)
    a = 1.0 - b * th2
    vw = np.einsum("...i,...i->...", v, omega)
    cross = 0.5 * np.cross(v, omega)
    if frame == "world":
        cross = -cross
    return a[..., None] * omega + cross + (b * vw)[..., None] * v


def rq_angular_velocity(
    v: ArrayLike, vdot: ArrayLike, frame: Frame = "world"
) -> NDArray[np.float64]:
    """Angular velocity (..., 3) of an RQ curve at ``v`` with rate ``vdot`` (both (..., 3)).

    ``omega = 2 vec(dq/dt * q^-1)`` (world) or ``2 vec(q^-1 * dq/dt)`` (local), with
    ``dq/dt = rq_quat_jacobian(v) @ vdot``. Inverse of ``rq_velocity`` away from the shells.
    """
    v = as_vectors(v, "v")
    vdot = as_vectors(vdot, "vdot")
    if frame not in ("world", "local"):
        raise ValueError(f"frame must be 'world' or 'local', got {frame!r}")
    v, vdot = np.broadcast_arrays(v, vdot)
    q = _rq_to_quat(v)
    qdot = np.einsum("...aj,...j->...a", rq_quat_jacobian(v), vdot)
    if frame == "world":
        w = _qmul(qdot, _conj(q))
    else:
        w = _qmul(_conj(q), qdot)
    return 2.0 * w[..., 1:]
