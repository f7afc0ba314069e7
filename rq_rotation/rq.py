"""RQ vectors (rotation vectors, the exponential map) <-> quaternions and matrices.

An RQ vector ``v`` (shape ``(..., 3)``, radians) is the rotation by ``theta = |v|`` about the
axis ``v / theta`` (right-hand rule). Its quaternion is ``q = (cos(theta/2), sin(theta/2) v/theta)``
(Grassia 1997, section 3). ``-v`` is the inverse rotation. The map is smooth everywhere and
singular (not locally invertible) on the shells ``|v| = 2 pi k``, ``k >= 1``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import (
    as_matrices,
    as_near,
    as_quats,
    as_vectors,
    check_zero_quats,
    norm,
    run_chunked,
    sum_of_squares,
)
from .quaternion import _matrix_to_quat, _quat_to_matrix_unit

__all__ = [
    "SMALL_ANGLE_RQ_TO_QUAT",
    "SMALL_RATIO_QUAT_TO_RQ",
    "matrix_to_rq",
    "quat_to_rq",
    "rq_sequence_continuous",
    "rq_to_matrix",
    "rq_to_quat",
]

TWO_PI = 2.0 * math.pi

#: Below this angle ``|v|`` (radians) ``rq_to_quat`` uses the Taylor series of
#: ``sin(theta/2)/theta = 1/2 - theta^2/48 + theta^4/3840 - theta^6/645120``. At 1e-2 the first
#: omitted term (``theta^8/185794560``) is 5e-25 and its derivative 4e-22, so value and
#: derivative of the two branches agree to machine precision across the threshold. The closed
#: form has no cancellation, so the threshold only has to keep ``theta`` away from 0.
SMALL_ANGLE_RQ_TO_QUAT = 1e-2

#: Coefficients of that series in powers of ``theta^2`` (also used by ``rq_quat_jacobian``).
_SIN_HALF_SERIES = (0.5, -1.0 / 48.0, 1.0 / 3840.0, -1.0 / 645120.0)

#: ``quat_to_rq`` computes ``theta / |q_xyz| = 2 atan(r) / (r |w|)`` with ``r = |q_xyz| / |w|``;
#: below this ``r`` it uses ``atan(r)/r = 1 - r^2/3 + r^4/5 - r^6/7``. At 1e-3 the first omitted
#: term (``r^8/9``) is 1e-25 and its derivative 1e-21.
SMALL_RATIO_QUAT_TO_RQ = 1e-3

#: Coefficients of that series in powers of ``r^2``.
_ATAN_RATIO_SERIES = (1.0, -1.0 / 3.0, 1.0 / 5.0, -1.0 / 7.0)


def _poly(coeffs: Sequence[float], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Horner evaluation of ``sum coeffs[i] x^i``."""
    out = np.full_like(x, coeffs[-1])
    for c in coeffs[-2::-1]:
        out *= x
        out += c
    return out


def _series_where(
    mask: NDArray[np.bool_],
    x: NDArray[np.float64],
    coeffs: Sequence[float],
    out: NDArray[np.float64],
) -> NDArray[np.float64]:
    """``out[mask] = poly(coeffs, x[mask])`` in place, evaluating the series only where ``mask``
    (small angles are rare: a branch-free ``np.where`` spent a third of ``rq_to_quat``'s time
    on the series)."""
    idx = np.flatnonzero(mask)
    if idx.size:
        out[idx] = _poly(coeffs, x[idx])
    return out


def _rq_to_quat_block(v: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """``rq_to_quat`` kernel for a block ``v`` (n, 3) -> ``out`` (n, 4).

    One transcendental call: with ``t = tan(theta/4)``,
    ``cos(theta/2) = (1 - t^2) / (1 + t^2)`` and ``sin(theta/2) = 2 t / (1 + t^2)``.
    """
    th2 = sum_of_squares(v)
    th = np.sqrt(th2)
    t = np.multiply(th, 0.25)
    np.tan(t, out=t)
    t2 = t * t
    d = np.add(t2, 1.0)
    np.divide(1.0, d, out=d)  # d = 1 / (1 + t^2)
    w = np.subtract(1.0, t2, out=t2)
    np.multiply(w, d, out=out[..., 0])
    # k = sin(theta/2) / theta
    k = np.multiply(t, d, out=t)
    k += k
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(k, th, out=k)
    # sin(theta/2)/theta = c0 + c1 theta^2 + c2 theta^4 + c3 theta^6 near 0
    _series_where(th < SMALL_ANGLE_RQ_TO_QUAT, th2, _SIN_HALF_SERIES, k)
    for j in range(3):  # (column by column: a (n, 1) factor broadcast over (n, 3) loops per row)
        np.multiply(v[:, j], k, out=out[:, j + 1])


def _rq_to_quat(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """Core of ``rq_to_quat`` on a validated float64 array (..., 3) -> (..., 4)."""
    return run_chunked(_rq_to_quat_block, v, (4,))


def rq_to_quat(v: ArrayLike) -> NDArray[np.float64]:
    """Quaternions of RQ vectors.

    Parameters
    ----------
    v : array_like, shape (..., 3)
        RQ vectors (radians); any magnitude.

    Returns
    -------
    ndarray, shape (..., 4)
        ``q = (cos(theta/2), sin(theta/2) v / theta)`` with ``theta = |v|``, ``(w, x, y, z)``.
        The sign is *not* canonicalized: ``w < 0`` for ``2 pi k + pi < theta < 2 pi k + 3 pi``,
        which keeps ``q`` a smooth function of ``v``. ``v = 0`` gives exactly ``(1, 0, 0, 0)``.

    Notes
    -----
    Computed with a single ``tan(theta/4)`` (half-angle tangent formulas) and a Taylor series
    below ``SMALL_ANGLE_RQ_TO_QUAT``.

    Examples
    --------
    A quarter turn about Z, and the identity:

    >>> import numpy as np
    >>> from rq_rotation import rq_to_quat
    >>> rq_to_quat([0.0, 0.0, np.pi / 2]).round(6)
    array([0.707107, 0.      , 0.      , 0.707107])
    >>> rq_to_quat(np.zeros((2, 3)))
    array([[1., 0., 0., 0.],
           [1., 0., 0., 0.]])
    """
    return _rq_to_quat(as_vectors(v, "v"))


def _quat_to_rq_block(q: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """``quat_to_rq`` kernel (no ``near``) for a block ``q`` (n, 4) -> ``out`` (n, 3)."""
    w = q[:, 0]
    xyz = q[:, 1:]
    n2 = sum_of_squares(xyz)
    n = np.sqrt(n2)
    aw = np.abs(w)
    f = np.arctan2(n, aw)
    f += f  # theta in [0, pi]
    with np.errstate(divide="ignore", invalid="ignore"):
        f /= n
    # series where r = n/|w| is small: theta / n = (2/|w|) atan(r)/r
    small = np.flatnonzero(n < aw * SMALL_RATIO_QUAT_TO_RQ)
    if small.size:
        inv = 1.0 / aw[small]
        r2 = n2[small] * inv
        r2 *= inv
        f[small] = _poly(_ATAN_RATIO_SERIES, r2) * (inv + inv)
    np.copysign(f, w, out=f)
    for j in range(3):  # (column by column, as in `_rq_to_quat_block`)
        np.multiply(xyz[:, j], f, out=out[:, j])


def _quat_to_rq(
    q: NDArray[np.float64], near: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """Core of ``quat_to_rq``; ``q`` validated (any nonzero norm), ``near`` validated or None."""
    v = run_chunked(_quat_to_rq_block, q, (3,))
    # a zero quaternion gives NaN (0/0) in its row: test cheaply, then exactly
    with np.errstate(invalid="ignore", over="ignore"):
        total = np.add.reduce(v, axis=None)
    if np.isnan(total):
        check_zero_quats(np.einsum("...i,...i->...", q, q), "q")
    if near is None:
        return v
    return _nearest_equivalent(v, near)


def _nearest_equivalent(v: NDArray[np.float64], near: NDArray[np.float64]) -> NDArray[np.float64]:
    """The vector of ``v``'s rotation closest to ``near`` (validated, broadcast), (..., 3).

    Equivalent vectors: ``u (theta + 2 pi k)``, ``u = v / |v|``, ``k`` any integer; the closest
    to ``near`` has the signed length closest to ``near . u``. For the identity (``v = 0``)
    every shell point is equivalent: ``2 pi round(|near| / 2 pi)`` along ``near``.
    """
    return _nearest_along(*_length_direction(v), near)


def _length_direction(v: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(|v|, v / |v|)`` of vectors (..., 3): shapes (...,) and (..., 3), the direction NaN
    where ``|v|`` is 0 (as `_nearest_along` takes them)."""
    ang = norm(v)
    with np.errstate(divide="ignore", invalid="ignore"):
        return ang, v / ang[..., None]


def _nearest_along(
    ang: NDArray[np.float64], u: NDArray[np.float64], near: NDArray[np.float64]
) -> NDArray[np.float64]:
    """`_nearest_equivalent` of ``v`` given as its length ``ang = |v|`` (...,) and direction
    ``u = v / ang`` (..., 3) (NaN where ``ang`` is 0): for a caller converting many vectors
    whose lengths and directions it computed in one pass (the continuity chain's columns).
    The identity's case costs only where some ``ang`` is 0."""
    s = np.einsum("...i,...i->...", near, u)
    k = np.round((s - ang) / TWO_PI)
    mag = ang + TWO_PI * k
    vn = u * mag[..., None]
    if not (ang == 0.0).any():
        return vn
    nn = norm(near)
    kk = np.round(nn / TWO_PI)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(kk > 0, TWO_PI * kk / nn, 0.0)
    v_id = near * scale[..., None]
    return np.where((ang == 0.0)[..., None], v_id, vn)


def quat_to_rq(q: ArrayLike, near: ArrayLike | None = None) -> NDArray[np.float64]:
    """RQ vectors of quaternions.

    Parameters
    ----------
    q : array_like, shape (..., 4)
        ``(w, x, y, z)``; any nonzero norm (the result does not depend on it); ``q`` and ``-q``
        give the same result.
    near : array_like, shape (..., 3), optional
        Reference RQ vectors (broadcast against ``q``'s stack).

    Returns
    -------
    ndarray, shape (..., 3)
        Without ``near``: ``v = 2 atan2(|q_xyz|, |w|) sign(w) q_xyz / |q_xyz|``, so ``|v| <= pi``
        (the identity gives 0). With ``near``: among the vectors of the same rotation,
        ``v + 2 pi k v/|v|`` for every integer ``k``, the one closest to ``near``; for the
        identity (every shell ``|v| = 2 pi k``) that is ``2 pi round(|near| / 2 pi)`` along
        ``near`` (0 when ``near`` is 0). This is the tool for continuity over time.

    Examples
    --------
    The shortest vector, then the one closest to a vector that has turned past pi:

    >>> import numpy as np
    >>> from rq_rotation import quat_to_rq, rq_to_quat
    >>> q = rq_to_quat([0.0, 0.0, 3.5])  # 3.5 rad about Z
    >>> quat_to_rq(q).round(6) + 0.0  # the same rotation, 2 pi - 3.5 the other way
    array([ 0.      ,  0.      , -2.783185])
    >>> quat_to_rq(q, near=[0.0, 0.0, 3.4]).round(6)
    array([0. , 0. , 3.5])
    """
    q = as_quats(q, "q", normalize=False)
    if near is not None:
        near = as_near(near, q.shape[:-1])
    return _quat_to_rq(q, near)


def rq_to_matrix(v: ArrayLike) -> NDArray[np.float64]:
    """Rotation matrices of RQ vectors.

    Parameters
    ----------
    v : array_like, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 3, 3)
        ``R = I + sin(theta) [a]x + (1 - cos(theta)) [a]x^2`` (Rodrigues, ``a = v/theta``),
        computed through the quaternion; ``R @ p`` rotates ``p``.
    """
    return _quat_to_matrix_unit(_rq_to_quat(as_vectors(v, "v")))


def matrix_to_rq(m: ArrayLike, near: ArrayLike | None = None) -> NDArray[np.float64]:
    """RQ vectors of rotation matrices, shape (..., 3, 3) -> (..., 3).

    ``quat_to_rq(matrix_to_quat(m), near)``: ``|v| <= pi`` without ``near``; the equivalent
    vector closest to ``near`` with it. Like ``matrix_to_quat``, it does not refuse matrices
    far from a rotation.
    """
    m = as_matrices(m, "m")
    if near is not None:
        near = as_near(near, m.shape[:-2])
    return _quat_to_rq(_matrix_to_quat(m), near)


def rq_sequence_continuous(v: ArrayLike, restart: ArrayLike | None = None) -> NDArray[np.float64]:
    """Make a time sequence of RQ vectors continuous.

    Parameters
    ----------
    v : array_like, shape (N, 3)
    restart : array_like of bool, shape (N,), optional
        Rows kept as given, where the chain starts again: many sequences concatenated, each
        made continuous on its own in one call (row 0 always starts one).

    Returns
    -------
    ndarray, shape (N, 3)
        ``out[0] = v[0]`` as given; ``out[i] = quat_to_rq(rq_to_quat(v[i]), near=out[i-1])``: each
        vector replaced by the equivalent one (same rotation) closest to its predecessor. Removes
        the jumps of ``2 pi`` in angle that per-frame conversions produce.
    """
    v = as_vectors(v, "v")
    if v.ndim != 2:
        raise ValueError(f"v must have shape (N, 3), got {v.shape}")
    starts = np.zeros(len(v), dtype=bool)
    if restart is not None:
        starts = np.asarray(restart, dtype=bool)
        if starts.shape != (len(v),):
            raise ValueError(f"restart must have shape ({len(v)},), got {starts.shape}")
    out = v.copy()
    if len(v) < 2:
        return out
    q = _rq_to_quat(v)
    w = q[:, 0]
    xyz = q[:, 1:]
    n = norm(xyz)
    ang = 2.0 * np.arctan2(n, np.abs(w))
    with np.errstate(divide="ignore", invalid="ignore"):
        u = xyz * (np.copysign(1.0, w) / n)[:, None]
    ident = (n == 0.0).tolist()
    ul = u.tolist()
    al = ang.tolist()
    vl = v.tolist()
    fresh = starts.tolist()
    px, py, pz = vl[0]
    res: list[tuple[float, float, float] | None] = [None] * len(v)
    for i in range(1, len(v)):
        if fresh[i]:
            px, py, pz = vl[i]
        elif ident[i]:
            nn = math.sqrt(px * px + py * py + pz * pz)
            kk = round(nn / TWO_PI)
            sc = TWO_PI * kk / nn if kk > 0 else 0.0
            px, py, pz = px * sc, py * sc, pz * sc
        else:
            ux, uy, uz = ul[i]
            k = round((px * ux + py * uy + pz * uz - al[i]) / TWO_PI)
            mag = al[i] + TWO_PI * k
            px, py, pz = ux * mag, uy * mag, uz * mag
        res[i] = (px, py, pz)
    out[1:] = res[1:]
    return out
