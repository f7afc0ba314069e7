# SPDX-License-Identifier: GPL-3.0-or-later
"""Put pose bones into and out of the add-on's rotation modes.

A bone in an add-on mode keeps its animatable parameters in ID custom properties (the
table of modes and properties is ``rq_rotation.modes``), which Blender saves, keys,
overrides and shows without the add-on, and its rotation comes from drivers Blender
evaluates without Python (`drivers`): the bone's ``rotation_mode`` is ``'AXIS_ANGLE'`` and
``rotation_axis_angle`` is driven. The mode is therefore read back from the file itself
(`current_mode`), also in a file the add-on saved and Blender reopened.

Parameter conventions (radians, the bone's local axes):

* ``'RQ'``: ``pose_bone["rq_vector"]``, 3 floats, the rotation vector (exponential map).
* ``'SWING_TWIST'``: ``pose_bone["rq_swing"]``, 2 floats ``(r_x, r_z)``, the swing's rotation
  vector ``(r_x, 0, r_z)``; ``pose_bone["rq_twist"]``, one float (a scalar property), the
  twist about the bone's Y. The rotation is ``swing * twist``: the twist acts first.
  Limits: ``pose_bone["rq_swing_limit"] = [a, b]`` (semi-axes about X and Z, at most 2 pi:
  the drivers pose swings shorter than 2 pi, and converting a spinning bone may widen the
  limits past pi) and ``pose_bone["rq_twist_limit"] = [min, max]``; at evaluation the swing
  is scaled radially into the ellipse and the twist clamped. The defaults (pi, pi) and
  (-pi, pi) clamp nothing for a swing of at most pi and a twist in [-pi, pi].

Any limit values mean something (the core's ``rq_rotation.effective_limits``): a negative
semi-axis acts as zero (a hinge) and an inverted twist range holds the twist at its first
value; the drivers and every tool agree on that. Values that are not finite numbers of the
right count (NaN, inf, a wrong length) are refused by every tool (`check_values`) and shown
with a reset button in the panel (`value_problems`, `reset_property`).

Limits stay on the bone when it leaves swing/twist mode (they are inert without the drivers),
so a bone switched away and back keeps its joint limits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import bpy
import numpy as np

from .. import rq_rotation as rq
from ..rq_rotation.modes import (
    ADDON_MODES,
    LIMITS,
    MODES,
    NATIVE_MODES,
    PROPERTIES,
    RQ,
    RQ_VECTOR,
    SWING,
    SWING_LIMIT,
    SWING_TWIST,
    TWIST,
    TWIST_LIMIT,
    flat_values,
    parameters_of,
)
from . import drivers


def current_mode(pose_bone: bpy.types.PoseBone) -> str:
    """'RQ', 'SWING_TWIST', or the bone's native ``rotation_mode``.

    Derived from the file alone: an add-on mode is a bone in ``'AXIS_ANGLE'`` mode whose
    angle driver reads that mode's first parameter property (`drivers.angle_mode`,
    remembered inside a `drivers.lookups` block).
    """
    native = pose_bone.rotation_mode
    if native != drivers.DRIVEN_MODE:
        return native
    return drivers.angle_mode(pose_bone) or native


def selected_addon_bones(context: bpy.types.Context) -> list[bpy.types.PoseBone]:
    """The selected pose bones in an add-on mode."""
    return [pb for pb in (context.selected_pose_bones or ()) if current_mode(pb) in ADDON_MODES]


def parameter_values(pose_bone: bpy.types.PoseBone, mode: str) -> tuple[float, ...]:
    """The mode's parameters stored on the bone, flattened in their order (``modes.MODES``)."""
    values: list[float] = []
    for parameter in MODES[_addon_mode(mode)].parameters:
        stored = pose_bone[parameter.name]
        values.extend([float(stored)] if parameter.size == 1 else (float(v) for v in stored))
    return tuple(values)


def read_parameters(pose_bone: bpy.types.PoseBone, mode: str) -> dict[str, Any]:
    """The mode's parameters stored on the bone as ``{name: value}`` (``modes.parameters_of``:
    a float for ``rq_twist``), the form `write_parameters` takes."""
    return parameters_of(mode, parameter_values(pose_bone, mode))


def limited_swing_twist(
    pose_bone: bpy.types.PoseBone, swing: Any, twist: float
) -> tuple[dict[str, Any], bool]:
    """A swing/twist pair limited as the bone's drivers limit it, as parameters: the closest
    point of the swing ellipse, the twist clamped to the range. Also whether it changed."""
    (a, b), (low, high) = joint_limits(pose_bone)
    swing = np.asarray(swing, dtype=np.float64)
    limited = rq.clamp_swing_ellipse(swing, a, b)
    limited_twist = float(rq.clamp_twist(float(twist), low, high))
    changed = bool(np.any(limited != swing)) or limited_twist != float(twist)
    return {SWING.name: [float(x) for x in limited], TWIST.name: limited_twist}, changed


def parameters_for_rotation(
    pose_bone: bpy.types.PoseBone, q: Any, near: dict[str, Any] | None = None
) -> tuple[dict[str, Any], bool]:
    """The parameters (as `read_parameters` gives them) that pose an add-on bone at the
    rotation ``q`` (a quaternion ``(w, x, y, z)``, the bone's local rotation), with
    continuity: the equivalent closest to ``near`` (parameters; default the stored ones).
    A swing/twist bone's pair is then limited (`limited_swing_twist`); also returns whether
    that changed it (the bone cannot reach ``q``)."""
    mode = current_mode(pose_bone)
    near_values = flat_values(mode, near if near is not None else read_parameters(pose_bone, mode))
    q = np.asarray(q, dtype=np.float64)
    if mode == RQ:
        return {RQ_VECTOR.name: [float(x) for x in rq.quat_to_rq(q, near=near_values)]}, False
    swing, twist = rq.quat_to_swing_twist(q, near=(near_values[:2], near_values[2]))
    return limited_swing_twist(pose_bone, swing, float(twist))


class PoseBatch:
    """Rotation modes and static rotations of many bones of one armature object, set in bulk
    (`write`): ``foreach_set`` over all its pose bones, one call per property; the caller tags
    the object once when all its changes are made (`conversion.apply_plan`, after the keys
    and limits too: 45 us a tag at 200 bones on 5.2, 160 us at 1000). Setting
    ``rotation_mode`` or a rotation of one bone runs an RNA update that tags the armature,
    whose cost grows with its bones (300 us a call at 1000 bones with drivers on 5.2, under
    10 us at 100); ``foreach_set`` runs the same setter (a mode change converts the bone's
    rotation values as an assignment does) without the update.
    """

    def __init__(self, obj: bpy.types.Object) -> None:
        self.obj = obj
        # Bone name -> (rotation_mode, the mode's rotation values, or None: the mode only).
        self.bones: dict[str, tuple[str, Sequence[float] | np.ndarray | None]] = {}

    def add(
        self,
        pose_bone: bpy.types.PoseBone,
        mode: str,
        values: Sequence[float] | np.ndarray | None = None,
    ) -> None:
        """Set the bone's ``rotation_mode`` to ``mode`` (native) and its rotation property in
        that mode to ``values`` (4 for quaternion and axis-angle, 3 for Euler), on `write`;
        a later call for the same bone replaces an earlier one."""
        self.bones[pose_bone.name] = (mode, values)

    def write(self) -> None:
        """Write every added bone's mode, then its values (the object is not tagged: the
        caller's job)."""
        if not self.bones:
            return
        bones = self.obj.pose.bones
        place = {pose_bone.name: i for i, pose_bone in enumerate(bones)}
        # ``foreach`` reads and writes an enum as its items' numbers.
        rna: Any = bpy.types.PoseBone.bl_rna.properties["rotation_mode"]
        items = rna.enum_items
        modes = np.empty(len(bones), dtype=np.int32)
        bones.foreach_get("rotation_mode", modes)
        for name, (mode, _) in self.bones.items():
            modes[place[name]] = items[mode].value
        bones.foreach_set("rotation_mode", modes)
        channels: dict[str, list[tuple[int, Sequence[float] | np.ndarray]]] = {}
        for name, (mode, values) in self.bones.items():
            if values is not None:
                (parameter,) = MODES[mode].parameters
                channels.setdefault(parameter.name, []).append((place[name], values))
        for prop, rows in channels.items():
            array = np.empty((len(bones), len(rows[0][1])), dtype=np.float32)
            bones.foreach_get(prop, array.ravel())
            for row, values in rows:
                array[row] = values
            bones.foreach_set(prop, array.ravel())


def enter_mode(
    pose_bone: bpy.types.PoseBone,
    mode: str,
    values: object,
    batch: PoseBatch | None = None,
    undriven: bool = False,
) -> None:
    """Switch the bone to an add-on mode with the given parameter values.

    ``values``: for ``'RQ'`` a length-3 rotation vector; for ``'SWING_TWIST'`` a pair
    ``(swing, twist)`` with a length-2 swing and a float twist. Creates the parameter
    properties (with UI data, library-overridable), for swing/twist the limit properties
    if missing (existing limits are kept), sets the bone's rotation mode and static channel
    to the same rotation, and installs the drivers. A bone already in an add-on mode is
    first taken out of it. The bone's own F-curves are left alone: writing keys is the
    caller's job. With a ``batch``, the rotation mode and static channel are set by
    ``batch.write()`` and the object is tagged for evaluation by the caller: a caller
    switching many bones sets them in bulk and tags once (tagging an armature costs time
    proportional to its bones: 160 us a call at 1000 bones). ``undriven``: the caller has
    made sure the bone's driven channel carries no driver (`conversion.plan_conversion` asks
    of every bone before anything changes), so it is not asked again.

    Raises ValueError for an unknown mode, values of the wrong shape or not finite, a
    rotation channel already driven by something else, or a library override
    (`check_switchable`).
    """
    mode = _addon_mode(mode)
    flat = _flatten(mode, values)
    check_switchable(pose_bone)
    if current_mode(pose_bone) in ADDON_MODES:
        _remove_addon_data(pose_bone)
    elif not undriven and drivers.bone_drivers(pose_bone):
        raise ValueError(
            f"bone '{pose_bone.name}': its {drivers.DRIVEN_PROPERTY} is already driven; "
            "remove those drivers first"
        )
    offset = 0
    for parameter in MODES[mode].parameters:
        chunk = flat[offset : offset + parameter.size]
        offset += parameter.size
        _set_property(pose_bone, parameter.name, chunk[0] if parameter.size == 1 else list(chunk))
    if mode == SWING_TWIST:
        for name, default in LIMITS.items():
            if not _has_property(pose_bone, name):
                _set_property(pose_bone, name, list(default))
    static = static_axis_angle(pose_bone, mode, flat)
    if batch is None:
        pose_bone.rotation_mode = drivers.DRIVEN_MODE
        # (A tuple: the 5.2 stubs accept only a bpy_prop_array for the attribute.)
        setattr(pose_bone, "rotation_axis_angle", static)  # noqa: B010
    else:
        batch.add(pose_bone, drivers.DRIVEN_MODE, static)
    drivers.install(pose_bone, drivers.DRIVERS[mode])
    if batch is None:
        pose_bone.id_data.update_tag()


def check_switchable(pose_bone: bpy.types.PoseBone) -> None:
    """Refuse (ValueError) to add or remove a bone's add-on mode on a library override.

    Blender saves an override's changes to the properties the library defines, but not
    drivers or ID properties added to it, nor the removal of the library's: a switch made
    there worked until the shot was reopened, then the library's modes and drivers came
    back under the shot's keys (a review: bones 39 to 109 degrees off, on 4.2, 4.5 and
    5.2). Keying an add-on bone of an override, editing its limits or posing it are
    saved and stay allowed."""
    obj = pose_bone.id_data
    override = obj.override_library
    if override is None:
        return
    library = getattr(getattr(override.reference, "library", None), "filepath", "")
    where = f" ({library})" if library else ""
    raise ValueError(
        f"'{obj.name}' is a library override: Blender does not save the drivers and "
        "properties a mode switch adds or removes there, so the switch would be undone when "
        f"the file is reopened; switch modes in the library file{where}"
    )


def leave_mode(
    pose_bone: bpy.types.PoseBone, native_mode: str, batch: PoseBatch | None = None
) -> None:
    """Take the bone out of its add-on mode and set ``rotation_mode = native_mode``.

    Removes the drivers and the parameter properties (the limits stay, see the module
    docstring). F-curves of the parameters are the caller's: remove them, and write the new
    native rotation values or keys, after this call. A bone in a native mode only changes
    its ``rotation_mode``. ``batch``: as in `enter_mode`.
    """
    if native_mode not in NATIVE_MODES:
        raise ValueError(f"native_mode must be one of {NATIVE_MODES}, not {native_mode!r}")
    if current_mode(pose_bone) in ADDON_MODES:
        check_switchable(pose_bone)
        _remove_addon_data(pose_bone)
    if batch is not None:
        batch.add(pose_bone, native_mode)
        return
    # Checked against NATIVE_MODES above.
    pose_bone.rotation_mode = cast(Any, native_mode)
    pose_bone.id_data.update_tag()


def write_parameters(pose_bone: bpy.types.PoseBone, values: dict[str, Any]) -> None:
    """Store new values of existing parameter properties (``{"rq_vector": [x, y, z]}``, a
    float for ``rq_twist``) and tag the armature: drivers read ID properties set from Python
    only after that. A -0.0 is stored as 0.0 (the same rotation; the fields would show
    "-0°")."""
    stored: Any = pose_bone
    for name, value in values.items():
        stored[name] = [float(v) + 0.0 for v in value] if np.ndim(value) else float(value) + 0.0
    pose_bone.id_data.update_tag()


def joint_limits(
    pose_bone: bpy.types.PoseBone,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The bone's swing limit ``(a, b)`` and twist limit ``(min, max)``; the defaults
    (`LIMITS`) where the bone has none (yet)."""
    swing, twist = (
        (float(stored[0]), float(stored[1]))
        for stored in (
            pose_bone[name] if _has_property(pose_bone, name) else default
            for name, default in LIMITS.items()
        )
    )
    return swing, twist


def _property_names(pose_bone: bpy.types.PoseBone, target: str | None) -> list[tuple[str, int]]:
    """``(name, size)`` of the properties the bone's add-on mode reads, and the limits also
    when ``target`` is ``'SWING_TWIST'`` (a bone switching there keeps its stored limits)."""
    mode = current_mode(pose_bone)
    names = [(p.name, p.size) for p in MODES[mode].parameters] if mode in ADDON_MODES else []
    if SWING_TWIST in (mode, target):
        names.extend(
            (name, 2) for name in LIMITS if mode == SWING_TWIST or _has_property(pose_bone, name)
        )
    return names


def _problem(pose_bone: bpy.types.PoseBone, name: str, size: int) -> str | None:
    """What is wrong with the stored property ``name`` (``size`` floats, 1 a scalar), or
    None: missing, not numbers, the wrong count, NaN or infinite."""
    what = f"{name} of {pose_bone.name}"
    stored: Any = pose_bone.get(name)
    if stored is None:
        return f"{what} is missing"
    try:
        values = [float(stored)] if size == 1 else [float(v) for v in stored]
    except (TypeError, ValueError):
        return f"{what} is not {'a number' if size == 1 else f'{size} numbers'}"
    if len(values) != size:
        return f"{what} has {len(values)} values, not {size}"
    if any(math.isnan(v) for v in values):
        return f"{what} is not a number"
    if not all(math.isfinite(v) for v in values):
        return f"{what} is infinite"
    return None


def value_problems(
    pose_bone: bpy.types.PoseBone, target: str | None = None
) -> list[tuple[str, str]]:
    """``(property name, message)`` for each parameter or limit property of the bone that no
    tool can use (see `check_values`); empty when all are fine."""
    found = (
        (name, _problem(pose_bone, name, size)) for name, size in _property_names(pose_bone, target)
    )
    return [(name, message) for name, message in found if message is not None]


def check_values(pose_bone: bpy.types.PoseBone, target: str | None = None) -> None:
    """Refuse a bone whose stored values a tool cannot use.

    Checks the parameters of the bone's add-on mode and, for swing/twist (the bone's mode
    or ``target``), its limits: each must hold finite numbers of the right count. Raises
    ValueError naming the bone and the property (``"rq_vector of Spine is not a number"``).
    Every operator calls this before it changes anything.
    """
    problems = value_problems(pose_bone, target)
    if problems:
        raise ValueError("; ".join(message for _, message in problems))


def default_value(name: str) -> float | list[float]:
    """The default of a parameter (zero rotation) or limit property (`LIMITS`)."""
    if name in LIMITS:
        return list(LIMITS[name])
    if name in PROPERTIES:
        size = PROPERTIES[name].size
        return 0.0 if size == 1 else [0.0] * size
    raise ValueError(f"{name!r} is not a property of the add-on")


def reset_property(pose_bone: bpy.types.PoseBone, name: str) -> None:
    """Store the default of ``name`` (`default_value`) on the bone, recreated with its UI
    data, and tag the armature. Raises ValueError for a name that is not the add-on's."""
    _set_property(pose_bone, name, default_value(name))
    pose_bone.id_data.update_tag()


def limit_warnings(swing_limit: Sequence[float], twist_limit: Sequence[float]) -> list[str]:
    """What the limits mean beyond their face value: negative semi-axes (acting as zero)
    and an inverted twist range (holding the twist at its first value)."""
    warnings = [
        f"Swing semi-axis {axis} is negative: it acts as 0 (a hinge)"
        for axis, value in zip("XZ", swing_limit, strict=True)
        if value < 0.0
    ]
    if twist_limit[0] > twist_limit[1]:
        warnings.append(
            f"Twist range is inverted: the twist is held at {math.degrees(twist_limit[0]):.1f}°"
        )
    return warnings


def fix_limits(pose_bone: bpy.types.PoseBone) -> list[str]:
    """Set negative swing semi-axes to 0 and swap an inverted twist range; what changed.

    Only finite limits stored on the bone are touched (see `check_values`)."""
    changes: list[str] = []
    (a, b), (low, high) = joint_limits(pose_bone)
    if a < 0.0 or b < 0.0:
        pose_bone[SWING_LIMIT.name] = [max(a, 0.0), max(b, 0.0)]
        changes.append("set negative swing semi-axes to 0")
    if low > high:
        pose_bone[TWIST_LIMIT.name] = [high, low]
        changes.append(
            f"swapped the twist range to [{math.degrees(high):.1f}°, {math.degrees(low):.1f}°]"
        )
    if changes:
        pose_bone.id_data.update_tag()
    return changes


def static_axis_angle(
    pose_bone: bpy.types.PoseBone, mode: str, values: Sequence[float]
) -> tuple[float, float, float, float]:
    """What the drivers compute from the parameters ``values``, ``(angle, x, y, z)``, in
    Python.

    ``values``: the mode's parameters as stored on the bone, flattened in their order
    (`parameter_values`; ``(x, y, z)`` for RQ, ``(x, z, twist)`` for swing/twist, whose
    limits are read from the bone). Used to give the driven channel its value before the
    first evaluation; the same formulas as the driver expressions (see `drivers`).
    """
    if mode == RQ:
        x, y, z = values
        return (math.sqrt(x * x + y * y + z * z), x, y, z)
    x, z, t = values
    swing_limit, (low, high) = joint_limits(pose_bone)
    a, b = (max(limit, 1e-12) for limit in swing_limit)
    n = math.sqrt(x * x + z * z)
    half_swing = n / max(2.0, 2.0 * math.sqrt((x / a) ** 2 + (z / b) ** 2))
    half_twist = float(rq.clamp_twist(t, low, high)) / 2.0
    cos_t, sin_t = math.cos(half_twist), math.sin(half_twist)
    cot_scaled = math.cos(half_swing) * (n + 2e-30) / (math.sin(half_swing) + 1e-30)
    return (
        2.0 * math.acos(math.cos(half_swing) * cos_t),
        (x * cos_t - z * sin_t) / (1.0 + n),
        sin_t * cot_scaled / (1.0 + n),
        (z * cos_t + x * sin_t) / (1.0 + n),
    )


def repair_driver_paths(armature_object: bpy.types.Object) -> int:
    """Point the add-on's driver variables at the bone their driver drives; revalidate.

    Blender renames a driver's own data path with its bone but not always the paths its
    variables read; this rewrites each variable that reads one of the add-on's properties to
    read it from the driven bone. A driver evaluated while a rename was half done (leaving
    Edit mode evaluates drivers before the pose is rebuilt) stays flagged invalid even with
    correct paths: writing its paths again clears the flag, and the next evaluation sets it
    again only if the driver really fails. A driver that read NaN or inf (a domain error
    flags it too) is revalidated the same way once every value it reads is finite again, so
    the bone turns again after the value is fixed. Returns how many drivers changed.
    """
    animation = armature_object.animation_data
    if animation is None:
        return 0
    suffix = "." + drivers.DRIVEN_PROPERTY
    names = set(PROPERTIES)
    changed = 0
    for fcurve in animation.drivers:
        path = fcurve.data_path
        if not (path.startswith("pose.bones[") and path.endswith(suffix)):
            continue
        bone_path = path[: -len(suffix)]
        ours = []
        for variable in fcurve.driver.variables:
            target = variable.targets[0]
            start = target.data_path.find('["rq_')
            name = target.data_path[start + 2 :].split('"', 1)[0]
            if target.id == armature_object and start >= 0 and name in names:
                ours.append((target, bone_path + target.data_path[start:]))
        if not ours:
            continue
        stale = any(t.data_path != new for t, new in ours)
        if stale or (
            not fcurve.driver.is_valid and _reads_finite(armature_object, [new for _, new in ours])
        ):
            for target, new in ours:
                target.data_path = new
            changed += 1
    return changed


def has_invalid_driver(armature_object: bpy.types.Object) -> bool:
    """Whether any driver of the object is flagged invalid (one attribute read per driver)."""
    animation = armature_object.animation_data
    return animation is not None and not all(f.driver.is_valid for f in animation.drivers)


def _reads_finite(armature_object: bpy.types.Object, paths: Sequence[str]) -> bool:
    """Whether every data path (from the object) resolves to a finite number."""
    for path in paths:
        try:
            value = float(cast(Any, armature_object.path_resolve(path)))
        except (ValueError, TypeError):
            return False
        if not math.isfinite(value):
            return False
    return True


def _addon_mode(mode: str) -> str:
    if mode not in ADDON_MODES:
        raise ValueError(f"mode must be one of {ADDON_MODES}, not {mode!r}")
    return mode


def _flatten(mode: str, values: object) -> tuple[float, ...]:
    """The parameter values as one flat tuple of finite floats, checked against the mode."""
    try:
        if mode == RQ:
            flat = tuple(float(v) for v in values)  # type: ignore[attr-defined]
            expected = "a length-3 rotation vector"
            ok = len(flat) == 3
        else:
            swing, twist = cast(Sequence[Any], values)
            flat = (*(float(v) for v in swing), float(twist))
            expected = "a pair (swing of length 2, twist)"
            ok = len(flat) == 3
    except (TypeError, ValueError) as error:
        raise ValueError(f"{mode} values: cannot read {values!r} ({error})") from None
    if not ok:
        raise ValueError(f"{mode} values must be {expected}, got {values!r}")
    if not all(math.isfinite(v) for v in flat):
        raise ValueError(f"{mode} values must be finite, got {values!r}")
    return flat


def _has_property(pose_bone: bpy.types.PoseBone, name: str) -> bool:
    """Whether the pose bone has the ID property ``name`` (an ID property is never None)."""
    return pose_bone.get(name) is not None


def _set_property(pose_bone: bpy.types.PoseBone, name: str, value: float | Sequence[float]) -> None:
    """Create or set an ID property with angle UI data, overridable in library overrides."""
    if _has_property(pose_bone, name):
        del pose_bone[name]  # a fresh property gets the right type and size
    pose_bone[name] = value
    ui: Any = pose_bone.id_properties_ui(name)  # the stubs say None: it is a UI manager
    ui.update(subtype='ANGLE', description=PROPERTIES[name].description, precision=4)
    if name == SWING_LIMIT.name:
        # Joints live within pi (the slider's range); widened limits may reach 2 pi.
        ui.update(min=0.0, max=2.0 * math.pi, soft_min=0.0, soft_max=math.pi)
    pose_bone.property_overridable_library_set(PROPERTIES[name].path, True)


def _remove_addon_data(pose_bone: bpy.types.PoseBone) -> None:
    """Remove the drivers and the parameter properties of every add-on mode."""
    drivers.remove(pose_bone)
    for mode in ADDON_MODES:
        for parameter in MODES[mode].parameters:
            if _has_property(pose_bone, parameter.name):
                del pose_bone[parameter.name]
