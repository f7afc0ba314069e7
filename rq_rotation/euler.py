"""Euler angles in Blender's six orders.

An Euler triple ``e`` (shape ``(..., 3)``, radians) always stores the angles about X, Y and Z
in that slot order, whatever the rotation order (as ``mathutils.Euler`` does). The order string
names the axes in the order they are *applied*: ``'XYZ'`` rotates about X first, then Y, then Z,
so its matrix is ``Rz @ Ry @ Rx`` and its quaternion ``qz * qy * qx`` (active rotations, column
vectors, Hamilton product). Orders: ``'XYZ', 'XZY', 'YXZ', 'YZX', 'ZXY', 'ZYX'``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import (
    EULER_ORDERS,
    EulerOrder,
    as_matrices,
    as_near,
    as_quats,
    as_vectors,
    check_order,
)
from .quaternion import _quat_to_matrix_unit

__all__ = [
    "EULER_ORDERS",
    "euler_to_matrix",
    "euler_to_quat",
    "matrix_to_euler",
    "quat_to_euler",
]

_AXIS = {"X": 0, "Y": 1, "Z": 2}
TWO_PI = 2.0 * math.pi
#: Below this value of ``cos(middle angle)`` the matrix is treated as gimbal locked: the last
#: angle is set to 0 and the first absorbs the whole rotation about the common axis.
GIMBAL_EPS = 16.0 * np.finfo(np.float64).eps


#: `euler_to_quat` works in blocks of this many angle sets: its temporaries (3 x 4096 float64,
#: 96 KiB) stay in the CPU cache and below malloc's fresh-pages threshold, about 4x faster on
#: tens of thousands of sets than whole-array expressions (and than `CHUNK_ROWS` blocks).
EULER_BLOCK_ROWS = 4096


def _euler_to_quat_block(
    e: NDArray[np.float64], out: NDArray[np.float64], i: int, j: int, k: int
) -> None:
    """`euler_to_quat` of a block of angle sets (n, 3) into ``out`` (n, 4), order axes i, j, k.

    Half-angle cosines and sines from ``t = tan(e/4)``: ``cos = (1 - t)(1 + t) / (1 + t^2)``,
    ``sin = 2 t / (1 + t^2)``. One tangent instead of a sine and a cosine: numpy vectorizes
    ``tan`` for float64 on many CPUs but not ``sin``/``cos`` (about 15x faster there), and the
    results stay within a few 1e-16 of ``cos``/``sin`` (``1 - t`` is exact near ``t = 1``; ``t^2``
    never overflows: no double is within 1e-30 of an odd multiple of ``pi/2``). Then the closed
    form of ``q_C * q_B * q_A`` (the two Hamilton products with their zero terms dropped), with
    ``s = +1`` for the cyclic orders (XYZ, YZX, ZXY) and ``-1`` otherwise::

        w   = ca cb cc + s sa sb sc        q_A = sa cb cc - s ca sb sc
        q_B = ca sb cc + s sa cb sc        q_C = ca cb sc - s sa sb cc
    """
    t = np.multiply(0.25, e.T, order="C")  # rows: angles about X, Y, Z
    np.tan(t, out=t)
    scale = t * t
    scale += 1.0
    np.reciprocal(scale, out=scale)
    cos = 1.0 - t
    cos *= 1.0 + t
    cos *= scale
    sin = np.multiply(t, 2.0, out=t)
    sin *= scale
    ca, cb, cc = cos[i], cos[j], cos[k]
    sa, sb, sc = sin[i], sin[j], sin[k]
    cb_cc, sb_sc, sb_cc, cb_sc = cb * cc, sb * sc, sb * cc, cb * sc
    left, right = scale[0], scale[1]  # scratch rows, no longer needed
    plus, minus = (np.add, np.subtract) if (j - i) % 3 == 1 else (np.subtract, np.add)
    for column, x, y, z, w, combine in (
        (0, ca, cb_cc, sa, sb_sc, plus),
        (1 + i, sa, cb_cc, ca, sb_sc, minus),
        (1 + j, ca, sb_cc, sa, cb_sc, plus),
        (1 + k, ca, cb_sc, sa, sb_cc, minus),
    ):
        np.multiply(x, y, out=left)
        np.multiply(z, w, out=right)
        combine(left, right, out=out[:, column])


def euler_to_quat(e: ArrayLike, order: EulerOrder = "XYZ") -> NDArray[np.float64]:
    """Quaternions of Euler angles.

    Parameters
    ----------
    e : array_like, shape (..., 3)
        Angles about X, Y, Z (radians), in that slot order for every rotation order.
    order : str
        One of ``EULER_ORDERS``; ``'XYZ'`` applies X first (``q = qz * qy * qx``).

    Returns
    -------
    ndarray, shape (..., 4)
        ``(w, x, y, z)``, ``q = q_C * q_B * q_A`` for order ``'ABC'``, with
        ``q_X(a) = (cos(a/2), sin(a/2), 0, 0)`` etc. (computed in closed form, see
        `_euler_to_quat_block`).

    Examples
    --------
    >>> import numpy as np
    >>> from rq_rotation import euler_to_quat
    >>> euler_to_quat([0.0, 0.0, np.pi / 2], "XYZ").round(6)
    array([0.707107, 0.      , 0.      , 0.707107])
    """
    e = as_vectors(e, "e")
    order = check_order(order)
    i, j, k = (_AXIS[c] for c in order)
    flat = e.reshape(-1, 3)
    out = np.empty((len(flat), 4))
    for start in range(0, len(flat), EULER_BLOCK_ROWS):
        stop = start + EULER_BLOCK_ROWS
        _euler_to_quat_block(flat[start:stop], out[start:stop], i, j, k)
    return out.reshape(e.shape[:-1] + (4,))


def euler_to_matrix(e: ArrayLike, order: EulerOrder = "XYZ") -> NDArray[np.float64]:
    """Rotation matrices (..., 3, 3) of Euler angles (..., 3): ``R_C @ R_B @ R_A`` for ``'ABC'``."""
    return _quat_to_matrix_unit(euler_to_quat(e, order))


def _two_solutions(
    m: NDArray[np.float64], order: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    i, j, k = (_AXIS[c] for c in order)
    sig = 1.0 if (j - i) % 3 == 1 else -1.0  # +1 for the cyclic orders XYZ, YZX, ZXY
    mii = m[..., i, i]
    mji = m[..., j, i]
    cy = np.hypot(mii, mji)
    e1 = np.empty(m.shape[:-2] + (3,))
    e2 = np.empty_like(e1)
    regular = cy > GIMBAL_EPS
    a1 = np.arctan2(sig * m[..., k, j], m[..., k, k])
    a2 = np.arctan2(-sig * m[..., k, j], -m[..., k, k])
    b1 = np.arctan2(-sig * m[..., k, i], cy)
    b2 = np.arctan2(-sig * m[..., k, i], -cy)
    c1 = np.arctan2(sig * mji, mii)
    c2 = np.arctan2(-sig * mji, -mii)
    a_lock = np.arctan2(-sig * m[..., j, k], m[..., j, j])
    e1[..., i] = np.where(regular, a1, a_lock)
    e1[..., j] = b1
    e1[..., k] = np.where(regular, c1, 0.0)
    e2[..., i] = np.where(regular, a2, a_lock)
    e2[..., j] = np.where(regular, b2, b1)
    e2[..., k] = np.where(regular, c2, 0.0)
    return e1, e2


def _select(
    e1: NDArray[np.float64], e2: NDArray[np.float64], near: NDArray[np.float64] | None
) -> NDArray[np.float64]:
    if near is None:
        # Blender's choice: the solution with the smaller sum of absolute angles.
        pick2 = np.abs(e1).sum(-1) > np.abs(e2).sum(-1)
    else:
        e1 = e1 + TWO_PI * np.round((near - e1) / TWO_PI)
        e2 = e2 + TWO_PI * np.round((near - e2) / TWO_PI)
        pick2 = np.abs(e1 - near).sum(-1) > np.abs(e2 - near).sum(-1)
    return np.where(pick2[..., None], e2, e1)


def matrix_to_euler(
    m: ArrayLike, order: EulerOrder = "XYZ", near: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Euler angles (..., 3) of rotation matrices (..., 3, 3).

    Parameters
    ----------
    m : array_like, shape (..., 3, 3)
        Rotation matrices (``R @ p`` rotates ``p``).
    order : str
        One of ``EULER_ORDERS``.
    near : array_like, shape (..., 3), optional
        Reference Euler angles (like ``mathutils`` ``to_euler(order, compat)``).

    Returns
    -------
    ndarray, shape (..., 3)
        Angles about X, Y, Z. For order ``'ABC'`` with parity ``s = +1`` for the cyclic orders
        (XYZ, YZX, ZXY) and ``-1`` otherwise: ``b = atan2(-s R[C,A], hypot(R[A,A], R[B,A]))``,
        ``a = atan2(s R[C,B], R[C,C])``, ``c = atan2(s R[B,A], R[A,A])``; the second solution is
        ``(a + pi, pi - b, c + pi)`` (wrapped). Without ``near`` the solution with the smaller
        sum of absolute angles is returned (Blender's rule). With ``near`` each solution's
        angles are shifted by multiples of ``2 pi`` to the closest to ``near`` and the solution
        with the smaller sum of absolute differences is returned (Blender uses heuristic
        thresholds for the shifts; this returns the exact closest). At gimbal lock
        (``cos b < GIMBAL_EPS``) the last angle is 0.
    """
    m = as_matrices(m, "m")
    order = check_order(order)
    if near is not None:
        near = as_near(near, m.shape[:-2])
    e1, e2 = _two_solutions(m, order)
    return _select(e1, e2, near)


def quat_to_euler(
    q: ArrayLike, order: EulerOrder = "XYZ", near: ArrayLike | None = None
) -> NDArray[np.float64]:
    """Euler angles (..., 3) of quaternions (..., 4), through the rotation matrix.

    Same rules as ``matrix_to_euler`` (as Blender's ``Quaternion.to_euler(order, compat)``).
    """
    q = as_quats(q, "q")
    return matrix_to_euler(_quat_to_matrix_unit(q), order, near)
