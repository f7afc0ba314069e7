"""rq_rotation: the RQ (exponential map) rotation library, pure numpy.

Conventions
-----------
* Quaternions are ``(w, x, y, z)`` arrays (Blender's order, scalar first), Hamilton product,
  active rotations, column vectors: a matrix ``R`` rotates ``p`` as ``R @ p``.
  ``quat_multiply(p, q)`` (``p * q``) means ``q`` first, then ``p``.
* Rotation vectors ("RQ vectors") are ``(..., 3)`` arrays in radians: direction = axis,
  length = angle (right-hand rule). ``-v`` is the inverse rotation, *not* the same rotation.
* Angular velocity: *world* frame means ``dq/dt = 0.5 * (0, omega) * q``; *local* (body) frame
  means ``dq/dt = 0.5 * q * (0, omega)``.
* For bones the twist axis is the bone's local Y; a swing is ``(r_x, r_z)``, the rotation vector
  ``(r_x, 0, r_z)``; a pose is ``q = swing * twist`` (twist about Y first, then the swing).
* Euler triples store the angles about X, Y, Z; order ``'XYZ'`` applies X first
  (``R = Rz @ Ry @ Rx``), like Blender.
* Every function works on stacks (leading dimensions broadcast), float64; a single input gives a
  single output; empty stacks give empty results; NaN/inf or a wrong shape raise ``ValueError``
  naming the argument; non-unit quaternions are normalized, a zero quaternion is rejected.

Import as ``import rq_rotation`` from a source checkout, or inside Blender (extension
installed) as ``from bl_ext.user_default.rq_rotations import rq_rotation``. The package never
imports ``bpy``, ``mathutils`` or ``scipy``.
"""

from .axis_angle import (
    axis_angle_to_quat,
    axis_angle_to_rq,
    blender_axis_angle_to_quat,
    blender_axis_angle_to_rq,
    quat_to_axis_angle,
    quat_to_blender_axis_angle,
    rq_to_axis_angle,
    rq_to_blender_axis_angle,
)
from .compare import FIGURE2_KEYS, angular_speed, compare_interpolations, figure2_experiment
from .derivatives import (
    SMALL_ANGLE_DERIVATIVES,
    quat_matrix_jacobian,
    rq_angular_velocity,
    rq_matrix_jacobian,
    rq_quat_jacobian,
    rq_velocity,
    swing_matrix_jacobian,
    swing_quat_jacobian,
)
from .euler import (
    EULER_ORDERS,
    euler_to_matrix,
    euler_to_quat,
    matrix_to_euler,
    quat_to_euler,
)
from .ik import IKResult, Joint, chain_end, solve_chain
from .mirror import mirror_quat, mirror_rq, mirror_swing_twist, mirror_twist_limit
from .quaternion import (
    align_quat_signs,
    matrix_to_quat,
    quat_angle_between,
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_to_matrix,
)
from .rq import (
    SMALL_ANGLE_RQ_TO_QUAT,
    SMALL_RATIO_QUAT_TO_RQ,
    matrix_to_rq,
    quat_to_rq,
    rq_sequence_continuous,
    rq_to_matrix,
    rq_to_quat,
)
from .shells import reparameterize, shell_distance, shell_index
from .spherical import slerp, slerp_keys, spherical_bezier, squad, squad_controls, squad_keys
from .splines import (
    KINDS,
    RQSpline,
    bezier_control_points,
    bezier_derivatives,
    bezier_values,
    rq_spline,
)
from .swing_twist import (
    clamp_swing_ellipse,
    clamp_twist,
    effective_limits,
    quat_to_swing_twist,
    scale_swing_into_ellipse,
    swing_in_ellipse,
    swing_of,
    swing_twist_sequence_continuous,
    swing_twist_to_quat,
    swing_vector,
)

__all__ = [
    "EULER_ORDERS",
    "FIGURE2_KEYS",
    "KINDS",
    "SMALL_ANGLE_DERIVATIVES",
    "SMALL_ANGLE_RQ_TO_QUAT",
    "SMALL_RATIO_QUAT_TO_RQ",
    "IKResult",
    "Joint",
    "RQSpline",
    "align_quat_signs",
    "angular_speed",
    "axis_angle_to_quat",
    "axis_angle_to_rq",
    "bezier_control_points",
    "bezier_derivatives",
    "bezier_values",
    "blender_axis_angle_to_quat",
    "blender_axis_angle_to_rq",
    "chain_end",
    "clamp_swing_ellipse",
    "clamp_twist",
    "compare_interpolations",
    "effective_limits",
    "euler_to_matrix",
    "euler_to_quat",
    "figure2_experiment",
    "matrix_to_euler",
    "matrix_to_quat",
    "matrix_to_rq",
    "mirror_quat",
    "mirror_rq",
    "mirror_swing_twist",
    "mirror_twist_limit",
    "quat_angle_between",
    "quat_conjugate",
    "quat_matrix_jacobian",
    "quat_multiply",
    "quat_normalize",
    "quat_rotate",
    "quat_to_axis_angle",
    "quat_to_blender_axis_angle",
    "quat_to_euler",
    "quat_to_matrix",
    "quat_to_rq",
    "quat_to_swing_twist",
    "reparameterize",
    "rq_angular_velocity",
    "rq_matrix_jacobian",
    "rq_quat_jacobian",
    "rq_sequence_continuous",
    "rq_spline",
    "rq_to_axis_angle",
    "rq_to_blender_axis_angle",
    "rq_to_matrix",
    "rq_to_quat",
    "rq_velocity",
    "scale_swing_into_ellipse",
    "shell_distance",
    "shell_index",
    "slerp",
    "slerp_keys",
    "solve_chain",
    "spherical_bezier",
    "squad",
    "squad_controls",
    "squad_keys",
    "swing_in_ellipse",
    "swing_matrix_jacobian",
    "swing_of",
    "swing_quat_jacobian",
    "swing_twist_sequence_continuous",
    "swing_twist_to_quat",
    "swing_vector",
]
