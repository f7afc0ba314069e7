# SPDX-License-Identifier: GPL-3.0-or-later
"""The drivers that pose a bone from its ID custom properties, without Python.

Every add-on mode drives the same channel: the bone's ``rotation_axis_angle`` in
``'AXIS_ANGLE'`` mode, ``[angle, axis_x, axis_y, axis_z]``. Blender normalizes the axis
itself (so any positive multiple of it may be driven) and treats a zero axis as no rotation.

RQ mode (``pose_bone["rq_vector"] = v``)::

    angle = |v|            one scripted simple expression (3 variables)
    axis  = v              three AVERAGE drivers with one variable each

Swing/twist mode (``rq_swing = (x, z)``, ``rq_twist = t``, ``rq_swing_limit = (a, b)``,
``rq_twist_limit = (l, h)``): the rotation is ``q = swing * twist`` (the twist about the
bone's Y acts first). With ``n = |(x, z)|``, the swing scaled radially into the ellipse,
``s = n / max(1, sqrt((x/a)^2 + (z/b)^2))`` (its angle), and the clamped twist
``T = min(max(t, l), max(l, h))``::

    q = (cos(s/2) cos(T/2),
         sin(s/2)/n * (x cos(T/2) - z sin(T/2)),
         cos(s/2) sin(T/2),
         sin(s/2)/n * (z cos(T/2) + x sin(T/2)))

    angle = 2 acos(cos(s/2) cos(T/2))
    axis  = (x cos(T/2) - z sin(T/2),  n cot(s/2) sin(T/2),  z cos(T/2) + x sin(T/2)) / (1 + n)

i.e. the axis is q's vector part divided by ``(1 + n) sin(s/2) / n`` (positive for
0 < s < 2*pi), so only the Y component needs the clamped swing angle. Four scripted simple
expressions.

Guards (a division by zero or a domain error marks a driver invalid for good) and float32
limits (Blender normalizes the axis in float32: a squared length above 3.4e38 overflows and
one below 1e-35 counts as zero, either way no rotation):

* ``acos`` gets a product of two cosines, never outside [-1, 1].
* The limits mean what the core's ``clamp_twist`` and ``scale_swing_into_ellipse`` say for
  any values (``rq_rotation.effective_limits``): ``T`` is the usual clamp for ``l <= h`` and
  holds the twist at ``l`` for an inverted range (``clamp(t, l, h)`` would jump from ``l`` to
  ``h`` as ``t`` passes ``l``); a negative semi-axis enters as ``1e-12``, like zero.
* The ellipse semi-axes enter as ``max(a, 1e-12)``: ``a <= 0`` or ``b <= 0`` become a
  degenerate ellipse whose scale factor is (nearly) 0 off its segment, the radial scaling's
  limit; the rotation differs from the exact limit by at most 1e-12.
* ``n cot(s/2)`` is ``cos(u) (n + 2e-30) / (sin(u) + 1e-30)`` with ``u = s/2``: the
  denominator is positive for ``0 <= u < pi``, and at ``n = 0`` (where ``s/2 = n/2``) the
  value is the limit 2, so a pure twist keeps its Y axis. Elsewhere the relative change is
  about ``1e-30/u``; it only matters for swings below about 1e-29 rad, where it moves the
  rotation by less than the swing itself.
* ``max(1, ...)`` and ``max(2, ...)`` keep the other denominators at 1 or more.
* Dividing by ``1 + n`` keeps the axis below about 1e13 (``n cot(s/2) <= pi/2 * 2e12 n``
  with the 1e-12 floor) and its X and Z parts below 1, so even absurd swings are posed
  (clamped into the ellipse) instead of overflowing. An axis below 3e-18 means a rotation
  below that angle too.

Driver inputs are float32 (a driver variable's value is a C ``float``) and expressions
evaluate in double, so no product here overflows. The limits are meant to lie in
``0 <= a, b <= pi`` (``s <= max(a, b)``; beyond ``2*pi`` the Y component's sign would be
wrong, though the driver stays valid).

Blender 5.0 gives a new driver F-curve two Bezier keys (0, 0) and (1, 1) that map the driver
value through the curve; evaluating near 0 that returns exactly 0.0 for values in
(0, about 1e-4]. Blender 4.2 adds a Generator modifier instead. The add-on removes both, so
the channel receives the driver's value itself, on every version (and it is slightly faster).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, cast

import bpy

from ..rq_rotation.modes import ADDON_MODES, MODES, RQ, SWING_TWIST

DRIVEN_MODE: Final = 'AXIS_ANGLE'
DRIVEN_PROPERTY = "rotation_axis_angle"


@dataclass(frozen=True)
class VariableSpec:
    """One driver variable: ``name`` reads ``pose_bone[prop]`` (``[index]`` if not None)."""

    name: str
    prop: str
    index: int | None


@dataclass(frozen=True)
class DriverSpec:
    """The driver on ``rotation_axis_angle[array_index]``."""

    array_index: int
    driver_type: str
    expression: str
    variables: tuple[VariableSpec, ...]


def _variables(spec: str) -> tuple[VariableSpec, ...]:
    """Variables from ``"x=rq_vector[0] t=rq_twist"`` notation."""
    result = []
    for item in spec.split():
        name, target = item.split("=")
        prop, _, index = target.partition("[")
        result.append(VariableSpec(name, prop, int(index.rstrip("]")) if index else None))
    return tuple(result)


_RQ_XYZ = _variables("x=rq_vector[0] y=rq_vector[1] z=rq_vector[2]")

RQ_DRIVERS = (
    DriverSpec(0, 'SCRIPTED', "sqrt(x*x+y*y+z*z)", _RQ_XYZ),
    DriverSpec(1, 'AVERAGE', "", _RQ_XYZ[0:1]),
    DriverSpec(2, 'AVERAGE', "", _RQ_XYZ[1:2]),
    DriverSpec(3, 'AVERAGE', "", _RQ_XYZ[2:3]),
)

_SWING_TWIST = _variables(
    "x=rq_swing[0] z=rq_swing[1] t=rq_twist l=rq_twist_limit[0] h=rq_twist_limit[1]"
)
_SWING_TWIST_LIMITED = _SWING_TWIST + _variables("a=rq_swing_limit[0] b=rq_swing_limit[1]")
_NORM = "sqrt(x*x+z*z)"
# Half the clamped swing angle, s/2 = n / max(2, 2 sqrt((x/a)^2 + (z/b)^2)).
_HALF_SWING = "sqrt(x*x+z*z)/max(2,2*sqrt(pow(x/max(a,1e-12),2)+pow(z/max(b,1e-12),2)))"
# Half the clamped twist, T/2 (the core's clamp_twist).
_HALF_TWIST = "min(max(t,l),max(l,h))/2"

_AXIS_X = f"(x*cos({_HALF_TWIST})-z*sin({_HALF_TWIST}))/(1+{_NORM})"
_AXIS_Z = f"(z*cos({_HALF_TWIST})+x*sin({_HALF_TWIST}))/(1+{_NORM})"

SWING_TWIST_DRIVERS = (
    DriverSpec(
        0, 'SCRIPTED', f"2*acos(cos({_HALF_SWING})*cos({_HALF_TWIST}))", _SWING_TWIST_LIMITED
    ),
    DriverSpec(1, 'SCRIPTED', _AXIS_X, _SWING_TWIST),
    DriverSpec(
        2,
        'SCRIPTED',
        f"sin({_HALF_TWIST})*cos({_HALF_SWING})*({_NORM}+2e-30)/(sin({_HALF_SWING})+1e-30)"
        f"/(1+{_NORM})",
        _SWING_TWIST_LIMITED,
    ),
    DriverSpec(3, 'SCRIPTED', _AXIS_Z, _SWING_TWIST),
)

DRIVERS: dict[str, tuple[DriverSpec, ...]] = {RQ: RQ_DRIVERS, SWING_TWIST: SWING_TWIST_DRIVERS}


def driven_path(pose_bone: bpy.types.PoseBone) -> str:
    """The armature object's data path of the channel the drivers drive."""
    return f"{pose_bone.path_from_id()}.{DRIVEN_PROPERTY}"


def variable_path(bone_path: str, variable: VariableSpec) -> str:
    """The data path (from the armature object) that ``variable`` reads."""
    index = "" if variable.index is None else f"[{variable.index}]"
    return f'{bone_path}["{variable.prop}"]{index}'


def find(obj: bpy.types.Object, data_path: str, index: int) -> bpy.types.FCurve | None:
    """The object's driver F-curve of ``data_path[index]``, or None (the first, as
    ``AnimDataDrivers.find``).

    Inside a `lookups` block (and a `workbench` block, which opens one) through an index of
    the object's drivers, read once per block and kept up to date by `install` and `remove`:
    ``AnimDataDrivers.find`` compares every driver's path, so a rig-wide operator that looks
    up each bone's drivers was quadratic in the bones (4000 drivers: 40-250 us a lookup on
    5.2). Inside a block, drivers are therefore added and removed only through `install` and
    `remove`."""
    animation = obj.animation_data
    if animation is None:
        return None
    if not _INDEXES:
        return animation.drivers.find(data_path, index=index)
    found = _driver_index(obj).get((data_path, index))
    return found[0] if found else None


def bone_drivers(pose_bone: bpy.types.PoseBone) -> list[bpy.types.FCurve]:
    """The driver F-curves on the bone's driven channel, in array-index order (inside a
    `lookups` block, the index read once for the four channels: a rig-wide operator asks
    this of every bone)."""
    obj = cast(bpy.types.Object, pose_bone.id_data)
    path = driven_path(pose_bone)
    if not _INDEXES:
        found = (find(obj, path, index) for index in range(4))
        return [fcurve for fcurve in found if fcurve is not None]
    if obj.animation_data is None:
        return []
    index = _driver_index(obj)
    return [fcurves[0] for fcurves in (index.get((path, i)) for i in range(4)) if fcurves]


def angle_mode(pose_bone: bpy.types.PoseBone) -> str | None:
    """The add-on mode whose first parameter property a variable of the driver on the bone's
    angle channel (index 0 of its driven channel) reads, or None (not driven, or by
    something else). The variables are read in order until one decides (the add-on's own
    drivers read the first parameter first: one RNA read of a path, not one per variable).

    Inside a `lookups` block remembered per bone until `install` or `remove` changes its
    drivers: a rig-wide operator asks for a bone's mode (``bone_modes.current_mode``) several
    times (the bake: choosing the bones, planning, checking values, leaving the mode), and
    reading a driver's variables costs RNA calls each time."""
    obj = cast(bpy.types.Object, pose_bone.id_data)
    if not _INDEXES:
        return _read_angle_mode(obj, pose_bone)
    key = (obj.as_pointer(), pose_bone.name)
    if key not in _ANGLE_MODES:
        _ANGLE_MODES[key] = _read_angle_mode(obj, pose_bone)
    return _ANGLE_MODES[key]


# Each add-on mode's first parameter property (what `angle_mode` looks for in a path).
_FIRST_PARAMETERS: Final = tuple((mode, MODES[mode].parameters[0].path) for mode in ADDON_MODES)


def _read_angle_mode(obj: bpy.types.Object, pose_bone: bpy.types.PoseBone) -> str | None:
    """`angle_mode` looked up anew."""
    angle = find(obj, driven_path(pose_bone), 0)
    if angle is None:
        return None
    for variable in angle.driver.variables:
        path = variable.targets[0].data_path
        for mode, first_parameter in _FIRST_PARAMETERS:
            if first_parameter in path:
                return mode
    return None


# The open `workbench` blocks, innermost last.
_WORKBENCHES: list[_Workbench] = []
# The outermost open `lookups` block's driver indexes (`find`) by object pointer; empty list
# outside any block.
_INDEXES: list[dict[int, dict[tuple[str, int], list[bpy.types.FCurve]]]] = []
# The outermost open `lookups` block's `angle_mode` by (object pointer, bone name); empty
# outside any block.
_ANGLE_MODES: dict[tuple[int, str], str | None] = {}


@contextmanager
def lookups() -> Iterator[None]:
    """Look drivers up through an index inside the block (`find`); nested blocks share the
    outermost one's. Inside, drivers change only through `install` and `remove`."""
    if _INDEXES:
        yield
        return
    _INDEXES.append({})
    try:
        yield
    finally:
        _INDEXES.clear()
        _ANGLE_MODES.clear()


def with_lookups(execute: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """An operator's ``execute(self, context)`` run inside a `lookups` block (Blender checks
    the method's argument count when it registers the class: the wrapper keeps it)."""

    @functools.wraps(execute)
    def run(self: Any, context: Any) -> Any:
        with lookups():
            return execute(self, context)

    return run


def _driver_index(obj: bpy.types.Object) -> dict[tuple[str, int], list[bpy.types.FCurve]]:
    """The open `lookups` block's index of the object's drivers: by ``(data path, array
    index)``, the drivers on that channel in list order (usually one), read on first use."""
    indexes = _INDEXES[0]
    index = indexes.get(obj.as_pointer())
    if index is None:
        index = {}
        animation = obj.animation_data
        for fcurve in () if animation is None else animation.drivers:
            index.setdefault((fcurve.data_path, fcurve.array_index), []).append(fcurve)
        indexes[obj.as_pointer()] = index
    return index


@dataclass
class _Workbench:
    """An open `workbench` block: its scratch object, the (object, data path, index) of the
    last driver installed through it, and its prototype drivers (`_prototypes`) by driver
    specs and armature object pointer."""

    scratch: bpy.types.Object
    last: tuple[bpy.types.Object, str, int] | None = None
    # By (id of the specs tuple, object pointer): the tuple (held, so its id stays its own)
    # and its prototypes.
    prototypes: dict[tuple[int, int], tuple[tuple[DriverSpec, ...], list[_Prototype]]] = field(
        default_factory=dict
    )


@dataclass
class _Prototype:
    """A driver built once on a workbench's scratch object from ``spec``, its variables
    reading the armature object: each bone's copy only changes the F-curve's data path and
    the variables' paths (``targets``, in ``spec.variables`` order) before the copy."""

    fcurve: bpy.types.FCurve
    spec: DriverSpec
    targets: list[bpy.types.DriverTarget]


@contextmanager
def workbench() -> Iterator[None]:
    """Build every driver `install` creates inside the block on one scratch object, removed
    at the end (removing an object scans the file's data: once per block, not per bone).
    On success the dependency graph is told about the new drivers once. Drivers are looked
    up through an index inside (`lookups`)."""
    scratch = bpy.data.objects.new("rq: building drivers", None)  # in no scene: inert
    scratch.animation_data_create()
    entry = _Workbench(scratch)
    _WORKBENCHES.append(entry)
    try:
        with lookups():
            yield
    finally:
        _WORKBENCHES.remove(entry)
        bpy.data.objects.remove(scratch)
    if entry.last is not None:
        obj, path, index = entry.last
        fcurve = find(obj, path, index)
        if fcurve is not None:  # a copied driver is no RNA change: this assignment is
            fcurve.driver.type = fcurve.driver.type


def install(pose_bone: bpy.types.PoseBone, specs: Sequence[DriverSpec]) -> None:
    """Create the drivers of ``specs`` on the bone (its channel must not be driven yet).

    Each driver is a copy (``AnimDataDrivers.from_existing``) of a prototype built once per
    `workbench` block on its scratch object (`_prototypes`), with the bone's data paths
    written into the prototype first: Blender answers every change of a driver variable
    (name, target, path) by updating *every* driver of the object that owns it, so building
    the drivers in place costs time proportional to the drivers already there (quadratic in
    the bones: 400 bones took 7 s), while on the scratch object it updates only the
    prototypes. Every RNA assignment runs update callbacks, so a bone costs one assignment
    per variable path and per driver data path, and one copy per driver (creating each
    driver and its variables anew cost 3 to 6 times as much).
    """
    if not _WORKBENCHES:
        with workbench():
            install(pose_bone, specs)
        return
    entry = _WORKBENCHES[-1]
    armature_object = cast(bpy.types.Object, pose_bone.id_data)
    bone_path = pose_bone.path_from_id()
    target_drivers = armature_object.animation_data_create().drivers
    index = _driver_index(armature_object)
    _ANGLE_MODES.pop((armature_object.as_pointer(), pose_bone.name), None)
    path = f"{bone_path}.{DRIVEN_PROPERTY}"  # driven_path
    for prototype in _prototypes(entry, tuple(specs), armature_object):
        spec = prototype.spec
        prototype.fcurve.data_path = path
        for target, variable in zip(prototype.targets, spec.variables, strict=True):
            target.data_path = variable_path(bone_path, variable)
        copied = target_drivers.from_existing(src_driver=prototype.fcurve)
        index.setdefault((path, spec.array_index), []).append(copied)
        entry.last = (armature_object, path, spec.array_index)


def _prototypes(
    entry: _Workbench, specs: tuple[DriverSpec, ...], armature_object: bpy.types.Object
) -> list[_Prototype]:
    """The workbench's prototypes of ``specs`` reading ``armature_object``, built on first
    use: each driver of the spec with its type, expression and named variables, each
    reading a single property (``'SINGLE_PROP'``, a new variable's type) of the object
    (``id_type`` ``'OBJECT'``, a new target's), and with no keys or modifiers, so the
    channel receives the driver's value itself (see the module docstring). Their data paths
    are set per bone (`install`); each set of prototypes has data paths of its own until
    then (``AnimDataDrivers.new`` refuses a path and index already driven)."""
    key = (id(specs), armature_object.as_pointer())  # (hashing the specs costs more)
    known = entry.prototypes.get(key)
    if known is not None:
        return known[1]
    workbench_drivers = entry.scratch.animation_data.drivers
    placeholder = f'["rq prototype {len(entry.prototypes)}"]'
    found = []
    for spec in specs:
        fcurve = workbench_drivers.new(placeholder, index=spec.array_index)
        points = fcurve.keyframe_points
        if len(points):
            points.clear()
        modifiers = fcurve.modifiers
        while len(modifiers):
            modifiers.remove(modifiers[0])
        driver = fcurve.driver
        if driver.type != spec.driver_type:
            driver.type = spec.driver_type
        targets = []
        for variable in spec.variables:
            created = driver.variables.new()
            created.name = variable.name
            target = created.targets[0]
            target.id = armature_object
            targets.append(target)
        if spec.driver_type == 'SCRIPTED':
            driver.expression = spec.expression
        found.append(_Prototype(fcurve, spec, targets))
    entry.prototypes[key] = (specs, found)
    return found


def remove(pose_bone: bpy.types.PoseBone) -> None:
    """Remove every driver on the bone's driven channel."""
    obj = cast(bpy.types.Object, pose_bone.id_data)
    if not _INDEXES:
        for fcurve in bone_drivers(pose_bone):
            obj.animation_data.drivers.remove(fcurve)
        return
    _ANGLE_MODES.pop((obj.as_pointer(), pose_bone.name), None)
    if obj.animation_data is None:
        return
    # Through the index: each driver's path and index are its key (no RNA reads).
    index, path = _driver_index(obj), driven_path(pose_bone)
    animation_drivers = obj.animation_data.drivers
    for array_index in range(4):
        found = index.get((path, array_index))
        if found:
            animation_drivers.remove(found.pop(0))
