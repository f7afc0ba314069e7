"""Quaternion algebra and quaternion <-> matrix conversion.

Quaternions are ``(w, x, y, z)`` arrays (Blender's order, scalar first), Hamilton product,
active rotations of column vectors: ``R @ p`` rotates ``p`` and ``quat_multiply(p, q)`` is the
rotation ``q`` first, then ``p``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_matrices, as_quats, as_vectors, norm

__all__ = [
    "align_quat_signs",
    "matrix_to_quat",
    "quat_angle_between",
    "quat_conjugate",
    "quat_multiply",
    "quat_normalize",
    "quat_rotate",
    "quat_to_matrix",
]


def _qmul(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Hamilton product of validated arrays (no normalization)."""
    pw, px, py, pz = np.moveaxis(p, -1, 0)
    qw, qx, qy, qz = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            pw * qw - px * qx - py * qy - pz * qz,
            pw * qx + px * qw + py * qz - pz * qy,
            pw * qy - px * qz + py * qw + pz * qx,
            pw * qz + px * qy - py * qx + pz * qw,
        ],
        axis=-1,
    )


def _conj(q: NDArray[np.float64]) -> NDArray[np.float64]:
    out = -q
    out[..., 0] = q[..., 0]
    return out


def quat_multiply(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """Hamilton product ``p * q``: the rotation ``q`` first, then ``p``.

    Parameters
    ----------
    p, q : array_like, shape (..., 4)
        Quaternions ``(w, x, y, z)``; normalized first; broadcast against each other.

    Returns
    -------
    ndarray, shape (..., 4)
        ``(pw qw - p.q, pw q + qw p + p x q)`` (vector parts ``p``, ``q``).

    Examples
    --------
    ``q`` first, then ``p``: a quarter turn about X after one about Z.

    >>> import numpy as np
    >>> from rq_rotation import quat_multiply, quat_rotate, rq_to_quat
    >>> p, q = rq_to_quat([np.pi / 2, 0.0, 0.0]), rq_to_quat([0.0, 0.0, np.pi / 2])
    >>> quat_rotate(quat_multiply(p, q), [1.0, 0.0, 0.0]).round(6)  # X -> Y -> Z
    array([0., 0., 1.])
    """
    return _qmul(as_quats(p, "p"), as_quats(q, "q"))


def quat_conjugate(q: ArrayLike) -> NDArray[np.float64]:
    """Conjugate ``(w, -x, -y, -z)`` of the normalized ``q`` (..., 4): the inverse rotation."""
    return _conj(as_quats(q, "q"))


def quat_normalize(q: ArrayLike) -> NDArray[np.float64]:
    """``q / |q|``, shape (..., 4). A zero quaternion raises ``ValueError``."""
    return as_quats(q, "q")


def quat_rotate(q: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """Rotate points ``p`` (..., 3) by quaternions ``q`` (..., 4): ``q * (0, p) * q^-1``.

    Equals ``quat_to_matrix(q) @ p`` (active rotation of column vectors); broadcasts.
    """
    q = as_quats(q, "q")
    p = as_vectors(p, "p")
    w = q[..., :1]
    u = q[..., 1:]
    t = 2.0 * np.cross(u, p)
    return p + w * t + np.cross(u, t)


def _quat_to_matrix_unit(q: NDArray[np.float64]) -> NDArray[np.float64]:
    w, x, y, z = np.moveaxis(q, -1, 0)
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz = x * y, x * z, y * z
    wx, wy, wz = w * x, w * y, w * z
    m = np.empty(q.shape[:-1] + (3, 3))
    m[..., 0, 0] = 1.0 - 2.0 * (yy + zz)
    m[..., 0, 1] = 2.0 * (xy - wz)
    m[..., 0, 2] = 2.0 * (xz + wy)
    m[..., 1, 0] = 2.0 * (xy + wz)
    m[..., 1, 1] = 1.0 - 2.0 * (xx + zz)
    m[..., 1, 2] = 2.0 * (yz - wx)
    m[..., 2, 0] = 2.0 * (xz - wy)
    m[..., 2, 1] = 2.0 * (yz + wx)
    m[..., 2, 2] = 1.0 - 2.0 * (xx + yy)
    return m


def quat_to_matrix(q: ArrayLike) -> NDArray[np.float64]:
    """Rotation matrices of quaternions.

    Parameters
    ----------
    q : array_like, shape (..., 4)
        ``(w, x, y, z)``, normalized first.

    Returns
    -------
    ndarray, shape (..., 3, 3)
        ``R`` with ``R @ p`` rotating the column vector ``p``:
        ``R = I + 2 w [u]x + 2 [u]x^2`` with ``u = (x, y, z)``.
    """
    return _quat_to_matrix_unit(as_quats(q, "q"))


def _matrix_to_quat(m: NDArray[np.float64]) -> NDArray[np.float64]:
    # Shepperd's method: build the quaternion from the largest of 4w^2, 4x^2, 4y^2, 4z^2 so
    # that the division is by a number >= 1 (well conditioned everywhere).
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    tr = m00 + m11 + m22
    decision = np.stack([m00, m11, m22, tr], axis=-1)
    choice = np.argmax(decision, axis=-1)
    q = np.empty(m.shape[:-2] + (4,))
    # case i in (0, 1, 2): x_i is largest
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        sel = choice == i
        if not np.any(sel):
            continue
        ms = m[sel]
        qs = np.empty(ms.shape[:-2] + (4,))
        qs[..., 1 + i] = 1.0 - tr[sel] + 2.0 * ms[..., i, i]
        qs[..., 1 + j] = ms[..., j, i] + ms[..., i, j]
        qs[..., 1 + k] = ms[..., k, i] + ms[..., i, k]
        qs[..., 0] = ms[..., k, j] - ms[..., j, k]
        q[sel] = qs
    sel = choice == 3
    if np.any(sel):
        ms = m[sel]
        qs = np.empty(ms.shape[:-2] + (4,))
        qs[..., 0] = 1.0 + tr[sel]
        qs[..., 1] = ms[..., 2, 1] - ms[..., 1, 2]
        qs[..., 2] = ms[..., 0, 2] - ms[..., 2, 0]
        qs[..., 3] = ms[..., 1, 0] - ms[..., 0, 1]
        q[sel] = qs
    q /= np.sqrt(np.einsum("...i,...i->...", q, q))[..., None]
    np.negative(q, out=q, where=(q[..., :1] < 0.0))
    return q


def matrix_to_quat(m: ArrayLike) -> NDArray[np.float64]:
    """Quaternions of rotation matrices, with ``w >= 0``.

    Parameters
    ----------
    m : array_like, shape (..., 3, 3)
        Rotation matrices (``R @ p`` rotates ``p``). Slightly non-orthogonal input gives the
        normalized quaternion of Shepperd's method (as scipy does). Matrices far from a
        rotation are not refused (checking costs as much as the conversion): zeros give 180
        degrees about X, a matrix of ones the identity, and a rotation of 21 degrees scaled
        by 2.5 one 3.8 degrees off it. Normalize the columns of a scaled pose matrix first.

    Returns
    -------
    ndarray, shape (..., 4)
        ``(w, x, y, z)`` with ``w >= 0``.
    """
    return _matrix_to_quat(as_matrices(m, "m"))


def quat_angle_between(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """Rotation angle of ``p^-1 * q`` in radians, in ``[0, pi]``; shape (...).

    Computed as ``2 * atan2(|d_xyz|, |d_w|)`` with ``d = p^-1 * q``, which stays accurate for
    tiny angles (``arccos`` of the dot product would lose half the digits there). The sign of
    either quaternion does not matter.
    """
    d = _qmul(_conj(as_quats(p, "p")), as_quats(q, "q"))
    return 2.0 * np.arctan2(norm(d[..., 1:]), np.abs(d[..., 0]))


def align_quat_signs(q: ArrayLike) -> NDArray[np.float64]:
    """Hemisphere continuity for time sequences of quaternions.

    Parameters
    ----------
    q : array_like, shape (..., N, 4)
        Sequences along the second-to-last axis, normalized first.

    Returns
    -------
    ndarray, shape (..., N, 4)
        ``q[..., 0, :]`` unchanged, and every later quaternion negated where needed so that
        ``dot(q[..., i, :], q[..., i-1, :]) >= 0`` (same rotations, no jump to the antipode).
    """
    q = as_quats(q, "q")
    if q.ndim < 2:
        raise ValueError(f"q must have shape (..., N, 4), got {q.shape}")
    if q.shape[-2] < 2:
        return q.copy()
    dots = np.einsum("...ij,...ij->...i", q[..., 1:, :], q[..., :-1, :])
    flips = np.where(dots < 0.0, -1.0, 1.0)
    signs = np.concatenate([np.ones((*q.shape[:-2], 1)), np.cumprod(flips, axis=-1)], axis=-1)
    return q * signs[..., None]
