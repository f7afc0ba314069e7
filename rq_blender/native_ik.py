# SPDX-License-Identifier: GPL-3.0-or-later
"""A swing/twist bone's joint limits as Blender's own IK limits (``ik_min_x`` ... with
``use_ik_limit_x/y/z``), so a native IK constraint respects about the same joint.

What Blender's IK does with those limits (read in ``intern/iksolver``; checked against the
solver's results by ``tests/blender/test_native_ik.py``): a bone with all three rotation
axes free is an ``IK_QSphericalSegment`` (``IK_Solver.cpp``, ``CreateSegment``), whose
rotation relative to rest is split as swing * twist, the twist about Y acting first
(``IK_Math.h``: ``ComputeTwist``, ``SphericalRangeParameters``), as the add-on's swing/twist
mode splits it, on the same bone axes. ``IK_QSphericalSegment::SetLimit``
(``IK_QSegment.cpp``) keeps the Y range as a range of the twist angle, and turns the X and Z
ranges into ``sin(angle / 2)``; with both limited, ``UpdateAngle`` clamps the swing
quaternion's ``(x, z)`` into an ellipse with those semi-axes (``EllipseClamp``: one quarter
per sign of x and z, each scaled radially). So with ``X: [-a, a]``, ``Z: [-b, b]`` the IK's
swing boundary is ``sin(theta / 2) u`` on the ellipse ``(sin(a/2), sin(b/2))``, against
``theta u`` on ``(a, b)`` for the add-on: the same on the X and Z axes and for a circle
(``a = b``), slightly inside elsewhere (`boundary_difference`), and the clamp is radial in
both, so directions agree.

What cannot be copied exactly: Blender's ranges are ``ik_min_* in [-180°, 0]`` and
``ik_max_* in [0, 180°]`` (RNA), so semi-axes beyond 180° (limits widened to cover spinning
animation) become 180° and a twist range that leaves out 0 is stretched to reach it
(`ik_limits` says which).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import bpy
import numpy as np

from ..rq_rotation import effective_limits

# The pose-bone properties written, in order: the X, Y (twist) and Z ranges, then the flags.
IK_RANGES = ("ik_min_x", "ik_max_x", "ik_min_y", "ik_max_y", "ik_min_z", "ik_max_z")
IK_FLAGS = ("use_ik_limit_x", "use_ik_limit_y", "use_ik_limit_z")
# Directions sampled (per quarter of the ellipse) by `boundary_difference`.
BOUNDARY_SAMPLES = 2001


def ik_limits(
    swing_limit: Sequence[float], twist_limit: Sequence[float]
) -> tuple[dict[str, float], list[str]]:
    """Blender IK limits (radians, `IK_RANGES`) for a swing/twist joint with semi-axes
    ``(a, b)`` and twist range ``(min, max)``, as the drivers apply them
    (``effective_limits``), and what could not be copied exactly (sentences)."""
    a, b, low, high = (float(x) for x in effective_limits(*swing_limit, *twist_limit))
    notes = []
    semi = []
    for axis, value in (("X", a), ("Z", b)):
        if value > math.pi:
            notes.append(
                f"the {axis} semi-axis {math.degrees(value):.1f}° is beyond the IK's 180°: "
                "copied as 180°"
            )
        semi.append(min(value, math.pi))
    ik_low, ik_high = min(max(low, -math.pi), 0.0), max(min(high, math.pi), 0.0)
    if (ik_low, ik_high) != (low, high):
        notes.append(
            f"the twist range [{math.degrees(low):.1f}°, {math.degrees(high):.1f}°] "
            f"became [{math.degrees(ik_low):.1f}°, {math.degrees(ik_high):.1f}°] (an IK range "
            "contains 0 and stays within 180°)"
        )
    values = dict(
        zip(IK_RANGES, (-semi[0], semi[0], ik_low, ik_high, -semi[1], semi[1]), strict=True)
    )
    return values, notes


def boundary_radii(a: float, b: float, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The swing angle (radians) at which each boundary is crossed in the swing directions
    ``phi`` (m,) (``u = (cos phi, sin phi)`` in the (X, Z) plane), for semi-axes ``a, b`` in
    ``[0, pi]``: ``(add-on, IK)``, each (m,). The add-on's: ``1 / |(cos phi / a, sin phi /
    b)|``; Blender's IK: ``2 asin(1 / |(cos phi / sin(a/2), sin phi / sin(b/2))|)``. A zero
    semi-axis gives radius 0 off the other axis."""
    c, s = np.cos(phi), np.sin(phi)

    def ratio(x: np.ndarray, y: float) -> np.ndarray:
        # x / y, with 0 along a zero semi-axis's own axis (0 / 0: a hinge bends there)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x == 0.0, 0.0, x / y)

    with np.errstate(divide="ignore"):
        addon = 1.0 / np.hypot(ratio(c, a), ratio(s, b))
        ik = 2.0 * np.arcsin(
            np.minimum(1.0, 1.0 / np.hypot(ratio(c, math.sin(a / 2)), ratio(s, math.sin(b / 2))))
        )
    return addon, ik


def boundary_difference(a: float, b: float) -> tuple[float, float]:
    """The largest difference between the IK's swing boundary and the add-on's ellipse for
    semi-axes ``a, b`` in ``[0, pi]``: ``(degrees, direction in degrees from X towards Z)``,
    sampled at `BOUNDARY_SAMPLES` directions of a quarter (the boundaries are symmetric
    about both axes). The difference is IK minus add-on: negative where the IK's boundary
    lies inside."""
    phi = np.linspace(0.0, 0.5 * math.pi, BOUNDARY_SAMPLES)
    addon, ik = boundary_radii(a, b, phi)
    difference = ik - addon
    worst = int(np.argmax(np.abs(difference)))
    return math.degrees(float(difference[worst])), math.degrees(float(phi[worst]))


def copy_to_ik(pose_bone: bpy.types.PoseBone, values: dict[str, float]) -> None:
    """Write ``values`` (`ik_limits`) on the pose bone and turn the three IK limits on."""
    for name, value in values.items():
        setattr(pose_bone, name, value)
    for flag in IK_FLAGS:
        setattr(pose_bone, flag, True)


def ik_state(pose_bone: bpy.types.PoseBone) -> dict[str, float | bool]:
    """The bone's IK limit properties (`IK_RANGES`, `IK_FLAGS`), to restore them."""
    return {name: getattr(pose_bone, name) for name in (*IK_RANGES, *IK_FLAGS)}
