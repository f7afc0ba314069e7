# SPDX-License-Identifier: GPL-3.0-or-later
"""The rotation modes of a pose bone, Blender's and the add-on's, in one table (`MODES`).

A mode stores a rotation as *channel values*, rows of shape (k,), in its parameters (`Mode`):

==============  ==  ============================================================
mode            k   channel values, in this order
==============  ==  ============================================================
QUATERNION      4   ``rotation_quaternion`` ``(w, x, y, z)`` (normalized by Blender)
XYZ ... ZYX     3   ``rotation_euler`` (angles about X, Y, Z)
AXIS_ANGLE      4   ``rotation_axis_angle`` ``(angle, x, y, z)``
RQ              3   ``pose_bone["rq_vector"]``: the rotation vector
SWING_TWIST     3   ``pose_bone["rq_swing"]`` ``(r_x, r_z)``, then ``pose_bone["rq_twist"]``
==============  ==  ============================================================

The add-on's parameters are ID properties (path ``["name"]`` from the pose bone), Blender's
are RNA properties (path ``name``); `Parameter.path` gives either. A swing ``(r_x, r_z)`` is
the rotation vector ``(r_x, 0, r_z)`` (``swing_vector``, ``swing_of`` from
``rq_rotation.swing_twist``), acting after the twist about Y.
Swing/twist bones also carry joint limits (`LIMITS`), whose meaning is the core's
``effective_limits``.

This module is the one place that spells a mode's name, label or properties; the Blender
layer, the operators and the panels read it.

Examples
--------
>>> [p.path for p in MODES['SWING_TWIST'].parameters]
['["rq_swing"]', '["rq_twist"]']
>>> MODES['XYZ'].label, MODES['XYZ'].size
('XYZ Euler', 3)
>>> values_to_quat('SWING_TWIST', [0.0, 0.0, np.pi]).round(12)  # half a turn about Y
array([0., 0., 1., 0.])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import norm
from .axis_angle import blender_axis_angle_to_quat, blender_axis_angle_to_rq
from .euler import EULER_ORDERS, euler_to_quat, quat_to_euler
from .rq import quat_to_rq, rq_to_quat
from .swing_twist import quat_to_swing_twist, swing_twist_to_quat

__all__ = [
    "ADDON_MODES",
    "EULER_ORDERS",
    "LIMITS",
    "MODES",
    "NATIVE_MODES",
    "PARAMETERS",
    "PROPERTIES",
    "RQ",
    "RQ_VECTOR",
    "SWING",
    "SWING_LIMIT",
    "SWING_TWIST",
    "TWIST",
    "TWIST_LIMIT",
    "Mode",
    "Parameter",
    "flat_values",
    "mode_label",
    "nearest_values",
    "parameters_of",
    "rotation_vectors",
    "values_to_quat",
]


@dataclass(frozen=True)
class Parameter:
    """One property holding (part of) a mode's channel values.

    ``size`` 1 is a scalar property (F-curve array index 0). ``id_property`` says whether it
    is an ID custom property of the pose bone (the add-on's) or an RNA property (Blender's).
    """

    name: str
    size: int
    id_property: bool
    description: str = ""

    @property
    def path(self) -> str:
        """The property's data path relative to the pose bone: ``rotation_euler`` or
        ``["rq_vector"]``."""
        return f'["{self.name}"]' if self.id_property else self.name


@dataclass(frozen=True)
class Mode:
    """A rotation mode: its identifier (Blender's ``rotation_mode`` for native modes), UI
    label and description, and the parameters holding its channel values in order."""

    name: str
    label: str
    description: str
    parameters: tuple[Parameter, ...]

    @property
    def addon(self) -> bool:
        """Whether the add-on provides the mode (its parameters are ID properties)."""
        return self.parameters[0].id_property

    @property
    def size(self) -> int:
        """k, the number of channel values."""
        return sum(p.size for p in self.parameters)


def _native(name: str, label: str, description: str, prop: str, size: int) -> Mode:
    return Mode(name, label, description, (Parameter(prop, size, False),))


#: The add-on's modes.
RQ = "RQ"
SWING_TWIST = "SWING_TWIST"

#: The add-on's ID properties on a pose bone (radians, the bone's local axes).
RQ_VECTOR = Parameter(
    "rq_vector",
    3,
    True,
    "Rotation vector (exponential map): axis times angle, in the bone's local space",
)
SWING = Parameter(
    "rq_swing",
    2,
    True,
    "Swing rotation vector about the bone's local X and Z (acts after the twist)",
)
TWIST = Parameter("rq_twist", 1, True, "Twist about the bone's local Y (acts before the swing)")
SWING_LIMIT = Parameter(
    "rq_swing_limit",
    2,
    True,
    "Semi-axes of the swing ellipse about X and Z; the swing is scaled into it",
)
TWIST_LIMIT = Parameter(
    "rq_twist_limit", 2, True, "Lowest and highest twist; the twist is clamped to this range"
)

#: The joint limits of swing/twist bones by name, with their defaults (which clamp nothing
#: for a swing of at most pi and a twist in [-pi, pi]). Their meaning: ``effective_limits``.
LIMITS: dict[str, tuple[float, float]] = {
    SWING_LIMIT.name: (math.pi, math.pi),
    TWIST_LIMIT.name: (-math.pi, math.pi),
}
#: The animatable parameters of the add-on's modes by name.
PARAMETERS: dict[str, Parameter] = {p.name: p for p in (RQ_VECTOR, SWING, TWIST)}
#: Every ID property of the add-on by name.
PROPERTIES: dict[str, Parameter] = {
    p.name: p for p in (RQ_VECTOR, SWING, TWIST, SWING_LIMIT, TWIST_LIMIT)
}

_EULER_FIRST = {"X": "X first", "Y": "Y first", "Z": "Z first"}

#: Every mode by identifier, in the order menus list them.
MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            RQ,
            "RQ",
            "Rotation vector (exponential map): three channels, the axis times the angle",
            (RQ_VECTOR,),
        ),
        Mode(
            SWING_TWIST,
            "Swing/Twist",
            "Swing (X, Z) after a twist about the bone's Y axis. Limits that restrict nothing "
            "(the defaults) are widened to cover spinning animation; set joint limits keep "
            "every key inside them (an equivalent angle where one fits, else the closest "
            "limit)",
            (SWING, TWIST),
        ),
        _native(
            "QUATERNION", "Quaternion (WXYZ)", "Blender's quaternion mode", "rotation_quaternion", 4
        ),
        *(
            _native(
                order,
                f"{order} Euler",
                f"Blender's Euler mode, {_EULER_FIRST[order[0]]}",
                "rotation_euler",
                3,
            )
            for order in EULER_ORDERS
        ),
        _native(
            "AXIS_ANGLE",
            "Axis Angle",
            "Blender's axis-angle mode (W is the angle)",
            "rotation_axis_angle",
            4,
        ),
    )
}
ADDON_MODES = tuple(name for name, mode in MODES.items() if mode.addon)
NATIVE_MODES = tuple(name for name, mode in MODES.items() if not mode.addon)


def mode_label(mode: str) -> str:
    """The UI label of a mode; an identifier not in `MODES` (a newer Blender's) as it is."""
    known = MODES.get(mode)
    return known.label if known is not None else mode


def parameters_of(mode: str, flat: Sequence[float]) -> dict[str, float | list[float]]:
    """An add-on mode's flat channel values (k,) as ``{property name: value}``: a float for
    a size-1 property, a list otherwise (what the Blender layer stores).

    >>> parameters_of('SWING_TWIST', [0.1, 0.2, 0.3])
    {'rq_swing': [0.1, 0.2], 'rq_twist': 0.3}
    """
    out: dict[str, float | list[float]] = {}
    offset = 0
    for parameter in MODES[mode].parameters:
        chunk = [float(x) for x in flat[offset : offset + parameter.size]]
        out[parameter.name] = chunk[0] if parameter.size == 1 else chunk
        offset += parameter.size
    return out


def flat_values(mode: str, parameters: Mapping[str, Any]) -> NDArray[np.float64]:
    """`parameters_of`'s inverse: ``{property name: value}`` -> channel values (k,)."""
    return np.array(
        [x for p in MODES[mode].parameters for x in np.atleast_1d(parameters[p.name])],
        dtype=np.float64,
    )


def values_to_quat(mode: str, values: ArrayLike) -> NDArray[np.float64]:
    """Rotations of channel values (see the module table), shape (..., k) -> (..., 4).

    A zero quaternion poses as the identity, as in Blender.
    """
    values = np.asarray(values, dtype=np.float64)
    if mode == "QUATERNION":
        size = norm(values)[..., None]
        return np.where(size > 0, values / np.where(size > 0, size, 1.0), [1.0, 0, 0, 0])
    if mode == "AXIS_ANGLE":
        return blender_axis_angle_to_quat(values)
    if mode in EULER_ORDERS:
        return euler_to_quat(values, mode)
    if mode == RQ:
        return rq_to_quat(values)
    if mode == SWING_TWIST:
        return swing_twist_to_quat(values[..., :2], values[..., 2])
    raise ValueError(f"unknown rotation mode {mode!r}; one of {tuple(MODES)}")


def nearest_values(mode: str, q: ArrayLike, near: NDArray[np.float64]) -> NDArray[np.float64]:
    """Channel values of rotations ``q`` (m, 4) in ``mode`` (Euler, SWING_TWIST or RQ), each
    row the equivalent closest to its row of ``near`` (m, k): the core's ``near``
    conversions."""
    if mode in EULER_ORDERS:
        return quat_to_euler(q, mode, near=near)
    if mode == SWING_TWIST:
        swing, twist = quat_to_swing_twist(q, near=(near[:, :2], near[:, 2]))
        return np.concatenate([swing, np.asarray(twist)[:, None]], axis=1)
    if mode == RQ:
        return quat_to_rq(q, near=near)
    raise ValueError(f"mode {mode!r} has no nearest equivalents; one of Euler, SWING_TWIST, RQ")


def rotation_vectors(mode: str, values: ArrayLike) -> NDArray[np.float64]:
    """Rotation vectors that keep the extra revolutions channel values show, (..., k) ->
    (..., 3): where a continuity chain starts.

    RQ: the vector itself; AXIS_ANGLE: angle times axis; Euler: the three angles as a vector
    (exact for a rotation about one axis, a guess otherwise); SWING_TWIST: ``(r_x, twist,
    r_z)``; QUATERNION: the shortest vector (a quaternion holds no revolutions).
    """
    values = np.asarray(values, dtype=np.float64)
    if mode in EULER_ORDERS or mode == RQ:
        return values
    if mode == "AXIS_ANGLE":
        return blender_axis_angle_to_rq(values)
    if mode == SWING_TWIST:
        return values[..., [0, 2, 1]]
    return quat_to_rq(values_to_quat(mode, values))
