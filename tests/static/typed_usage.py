# mypy: warn-unused-ignores, disallow-untyped-defs
"""The numpy core as a user's type checker sees it (checked by test_static.py, which also
runs it): calls with lists and arrays give the documented types, pairs unpack as tuples, and
the calls in `rejected` are refused. Each of those carries ``# type: ignore[arg-type]``:
if a signature stopped rejecting the call, the ignore would be unused, which is an error
here."""

from __future__ import annotations

from typing import assert_type

import numpy as np
from numpy.typing import NDArray

import rq_rotation as rq
from rq_rotation import modes
from rq_rotation.keyframes import fcurve_math, spline_keys

Floats = NDArray[np.float64]

# Array inputs accept nested lists and arrays; results are float64 arrays.
q = rq.rq_to_quat([0.0, 0.0, 1.0])
assert_type(q, Floats)
assert_type(rq.quat_to_rq(q, near=[0.0, 0.0, 7.0]), Floats)
assert_type(rq.quat_multiply(q, [1.0, 0.0, 0.0, 0.0]), Floats)
assert_type(rq.euler_to_quat([0.1, 0.2, 0.3], "ZXY"), Floats)
assert_type(rq.quat_to_euler(q, "YZX", near=[0.0, 0.0, 6.0]), Floats)
assert_type(rq.rq_velocity([0.1, 0.0, 0.0], [0.0, 1.0, 0.0], frame="local"), Floats)
assert_type(rq.shell_index([7.0, 0.0, 0.0]), NDArray[np.int64])
assert_type(rq.swing_in_ellipse([0.1, 0.2], 1.0, 1.0), NDArray[np.bool_])

# Functions returning two (or four) arrays return tuples.
axis, angle = rq.quat_to_axis_angle(q)
assert_type(angle, Floats)
swing, twist = rq.quat_to_swing_twist(q, near=([0.1, 0.0], 0.0))
assert_type(twist, Floats)
a, b, low, high = rq.effective_limits(1.0, 0.5, -1.0, 1.0)
assert_type(high, Floats)

# Splines and the keyframe algorithms.
spline = rq.rq_spline([0.0, 1.0, 2.0], np.zeros((3, 3)), "bspline")
assert_type(spline, rq.RQSpline)
assert_type(spline.angular_velocity(0.5, frame="local"), Floats)
starts, ends, control_points, charts = spline.bezier_segments()
assert_type(charts, NDArray[np.intp])
assert_type(modes.values_to_quat("SWING_TWIST", [0.0, 0.0, 1.0]), Floats)
assert_type(
    fcurve_math.evaluate_segments([0.5], [[0.0, 0.0, 1.0, 1.0]], [[0.0, 0.0, 1.0, 1.0]]), np.ndarray
)
fitted = spline_keys.fit_scalar(np.array([0.0, 1.0]), np.array([0.0, 1.0]), "catmull_rom")
assert_type(fitted, spline_keys.SplineKeys)


def rejected() -> None:
    """Calls the signatures refuse (never run)."""
    rq.euler_to_quat([0.1, 0.2, 0.3], "XYX")  # type: ignore[arg-type]
    rq.quat_to_euler(q, order="xyz")  # type: ignore[arg-type]
    rq.rq_velocity([0.1, 0.0, 0.0], [0.0, 1.0, 0.0], frame="body")  # type: ignore[arg-type]
    rq.rq_spline([0.0, 1.0], np.zeros((2, 3)), kind="linear")  # type: ignore[arg-type]
    rq.bezier_values([[0.0, 0.0, 0.0]] * 4, 0.5)  # type: ignore[arg-type]
    rq.rq_to_quat(q).append(1.0)  # type: ignore[attr-defined]
    spline_keys.fit_many([], "akima", 1e-3)  # type: ignore[arg-type]
