"""Mirroring poses across the X axis, as Blender's Paste Flipped and X-Axis Mirror do.

Blender mirrors a bone's local rotation ``R`` onto the bone with the flipped name as
``P R P`` with ``P = diag(-1, 1, 1)``, the reflection through the YZ plane of the bone's
local space (a quaternion ``(w, x, y, z)`` becomes ``(w, x, -y, -z)``, an Euler triple
``(x, y, z)`` becomes ``(x, -y, -z)``). For a rotation vector ``v``, ``P R(v) P = R(det(P) P v)
= R((v_x, -v_y, -v_z))``: an axial vector reflects with the opposite sign. So:

* RQ: ``(x, y, z) -> (x, -y, -z)``; the length (angle, extra turns included) is kept.
* Swing/twist: ``P (S T) P = (P S P)(P T P)``; the swing ``(r_x, 0, r_z)`` becomes
  ``(r_x, 0, -r_z)`` (still perpendicular to Y, so still a swing) and the twist about Y
  becomes its negative: ``(r_x, r_z, t) -> (r_x, -r_z, -t)``. A twist range ``[lo, hi]``
  mirrors to ``[-hi, -lo]``; the swing ellipse's semi-axes ``(a, b)`` are unchanged.

Each map is its own inverse. ``tests/core`` checks them against ``P R P`` of the rotation
matrices.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_quats, as_scalars, as_vectors

__all__ = ["mirror_quat", "mirror_rq", "mirror_swing_twist", "mirror_twist_limit"]

_FLIP_YZ = np.array([1.0, -1.0, -1.0])


def mirror_quat(q: ArrayLike) -> NDArray[np.float64]:
    """Mirrored quaternions (..., 4): ``(w, x, y, z) -> (w, x, -y, -z)`` (normalized)."""
    q = as_quats(q, "q")
    return q * np.array([1.0, 1.0, -1.0, -1.0])


def mirror_rq(v: ArrayLike) -> NDArray[np.float64]:
    """Mirrored RQ vectors (..., 3): ``(x, y, z) -> (x, -y, -z)``."""
    return as_vectors(v, "v", 3) * _FLIP_YZ


def mirror_swing_twist(
    swing: ArrayLike, twist: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mirrored swing ``(r_x, r_z)`` (..., 2) and twist (...): ``(r_x, -r_z)`` and ``-t``."""
    swing = as_vectors(swing, "swing", 2)
    twist = as_scalars(twist, "twist")
    return swing * np.array([1.0, -1.0]), -twist


def mirror_twist_limit(
    lo: ArrayLike, hi: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The twist range ``[lo, hi]`` of the mirrored bone: ``(-hi, -lo)``.

    An inverted range (``lo > hi``) holds the twist at ``lo`` (`clamp_twist`); its mirror
    ``(-lo, hi - 2 lo)`` holds it at ``-lo`` and is inverted by as much, so mirroring twice
    gives the range back."""
    lo = as_scalars(lo, "lo")
    hi = as_scalars(hi, "hi")
    inverted = lo > hi
    return np.where(inverted, -lo, -hi), np.where(inverted, hi - 2.0 * lo, -lo)
