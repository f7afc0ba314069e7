"""Axis-angle conversions, including Blender's 4-array layout ``(angle, x, y, z)``.

Axis-angle ``(axis, angle)``: rotation by ``angle`` radians about the unit vector ``axis``
(right-hand rule). The RQ vector of the pair is ``angle * axis``; converting between RQ and
axis-angle is exact and keeps angles beyond ``pi`` (windings), unlike going through a quaternion.
Blender's ``rotation_axis_angle`` property stores ``(angle, x, y, z)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_quats, as_scalars, as_vectors

__all__ = [
    "axis_angle_to_quat",
    "axis_angle_to_rq",
    "blender_axis_angle_to_quat",
    "blender_axis_angle_to_rq",
    "quat_to_axis_angle",
    "quat_to_blender_axis_angle",
    "rq_to_axis_angle",
    "rq_to_blender_axis_angle",
]

#: Axis returned for the identity (and used by Blender's default axis-angle ``(0, 0, 1, 0)``).
IDENTITY_AXIS = np.array([0.0, 1.0, 0.0])


def _unit_axis(axis: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    n = np.linalg.norm(axis, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = axis / n
    return np.where(n > 0.0, u, 0.0), n[..., 0] > 0.0


def axis_angle_to_quat(axis: ArrayLike, angle: ArrayLike) -> NDArray[np.float64]:
    """Quaternions of axis-angle pairs.

    Parameters
    ----------
    axis : array_like, shape (..., 3)
        Rotation axes, normalized here. A zero axis gives the identity (as in Blender).
    angle : array_like, shape (...)
        Angles in radians, broadcast against ``axis[..., 0]``.

    Returns
    -------
    ndarray, shape (..., 4)
        ``(cos(angle/2), sin(angle/2) axis/|axis|)``; not sign-canonicalized.
    """
    u, ok = _unit_axis(as_vectors(axis, "axis"))
    angle = as_scalars(angle, "angle")
    half = 0.5 * np.where(ok, angle, 0.0)
    shape = np.broadcast_shapes(u.shape[:-1], half.shape)
    half = np.broadcast_to(half, shape)
    out = np.empty(shape + (4,))
    out[..., 0] = np.cos(half)
    out[..., 1:] = u * np.sin(half)[..., None]
    return out


def quat_to_axis_angle(q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Axis-angle of quaternions, like Blender's ``Quaternion.to_axis_angle()``.

    Parameters
    ----------
    q : array_like, shape (..., 4)
        ``(w, x, y, z)``, normalized first.

    Returns
    -------
    axis : ndarray, shape (..., 3)
        Unit axis ``q_xyz / |q_xyz|``; ``(0, 1, 0)`` for the identity.
    angle : ndarray, shape (...)
        ``2 atan2(|q_xyz|, w)`` in ``[0, 2 pi]``: the sign of ``q`` is kept, so that
        ``axis_angle_to_quat(*quat_to_axis_angle(q)) == q`` (not only up to sign).
    """
    q = as_quats(q, "q")
    xyz = q[..., 1:]
    n = np.linalg.norm(xyz, axis=-1)
    angle = 2.0 * np.arctan2(n, q[..., 0])
    with np.errstate(divide="ignore", invalid="ignore"):
        axis = xyz / n[..., None]
    axis = np.where((n > 0.0)[..., None], axis, IDENTITY_AXIS)
    return axis, angle


def axis_angle_to_rq(axis: ArrayLike, angle: ArrayLike) -> NDArray[np.float64]:
    """RQ vectors ``angle * axis / |axis|`` (..., 3); exact, keeps any angle. Zero axis -> 0."""
    u, _ = _unit_axis(as_vectors(axis, "axis"))
    angle = as_scalars(angle, "angle")
    return u * np.asarray(angle)[..., None]


def rq_to_axis_angle(v: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Axis ``v / |v|`` (..., 3) and angle ``|v|`` (...) of RQ vectors; ``(0, 1, 0)``, 0 at 0."""
    v = as_vectors(v, "v")
    n = np.linalg.norm(v, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        axis = v / n[..., None]
    return np.where((n > 0.0)[..., None], axis, IDENTITY_AXIS), n


def blender_axis_angle_to_quat(aa: ArrayLike) -> NDArray[np.float64]:
    """Quaternions (..., 4) from Blender's axis-angle layout ``(angle, x, y, z)`` (..., 4)."""
    aa = as_vectors(aa, "aa", 4)
    return axis_angle_to_quat(aa[..., 1:], aa[..., 0])


def quat_to_blender_axis_angle(q: ArrayLike) -> NDArray[np.float64]:
    """Blender's axis-angle layout ``(angle, x, y, z)`` (..., 4) of quaternions (..., 4).

    Same values as ``quat_to_axis_angle``: angle in ``[0, 2 pi]``, axis ``(0, 1, 0)`` for the
    identity.
    """
    axis, angle = quat_to_axis_angle(q)
    return np.concatenate([angle[..., None], axis], axis=-1)


def blender_axis_angle_to_rq(aa: ArrayLike) -> NDArray[np.float64]:
    """RQ vectors (..., 3) from Blender's ``(angle, x, y, z)`` (..., 4): ``angle * axis``."""
    aa = as_vectors(aa, "aa", 4)
    return axis_angle_to_rq(aa[..., 1:], aa[..., 0])


def rq_to_blender_axis_angle(v: ArrayLike) -> NDArray[np.float64]:
    """Blender's ``(angle, x, y, z)`` (..., 4) of RQ vectors: ``(|v|, v/|v|)``, exact."""
    axis, angle = rq_to_axis_angle(v)
    return np.concatenate([angle[..., None], axis], axis=-1)
