# SPDX-License-Identifier: GPL-3.0-or-later
"""All or nothing: an operator that fails leaves the user's data exactly as it was.

The operators plan and validate before their first write, but a write can still fail (an API
error, a bug, data found bad late). `all_or_nothing` records, before the first write, every
piece of a bone's rotation state an operator may change, and writes it all back when the
block raises:

- the pose bone: ``rotation_mode``, the quaternion, Euler and axis-angle values, and every ID
  property with its UI data (``id_properties_ui``) and library-override flag;
- the bone's F-curves in every action animating the object (`animdata.actions_of`): keys
  (co, handles, handle types, interpolation, easing and its parameters, key type, selection),
  extrapolation, modifiers, channel group and flags (mute, lock, hide, select, colour,
  auto-smoothing);
- the drivers on the bone's properties: the same, plus the driver's type, expression,
  ``use_self``, variables with their targets, and ``is_valid``;
- the object's active action and slot: an action the block made (auto-keying a bone of an
  unanimated object) is unassigned and removed.

F-curves and drivers the block created are removed, removed ones are created again, and
changed ones are rewritten in place; channel groups the block created are removed. Each
action is recorded as a copy (``Action.copy``, one C-level copy however many curves it holds:
reading every touched curve's 14 key attributes with ``foreach_get`` cost more than the
operators' own work on a keyed-every-frame clip), and the bones' drivers as copies in a
scratch object's animation data (``AnimDataDrivers.from_existing``, one call per driver); the
copies are read only on failure and removed when the block ends. Bone properties are Python
data. A block that changes only keys (``keys_only``: the spline, the continuity filter when
it rewrites a channel) records the actions alone.

A block whose only writes shift the values of existing keys (`shifted_keys`: the continuity
filter, usually) keeps a journal instead: the points of each curve as `animdata.shift_keys`
read them, written back on failure. Copying and removing an action costs little itself,
but any datablock added or removed makes Blender rebuild the dependency graph's relations at
its next update: 6 ms on a 200-bone rig, a fifth of the filter's time.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import bpy
import numpy as np

from . import animdata, compat, screen

# Keyframe attributes read and written in bulk (with their numpy types).
KEY_ATTRIBUTES = animdata.KEY_ATTRIBUTES
FCURVE_ATTRIBUTES = (
    "extrapolation",
    "color_mode",
    "color",
    "select",
    "lock",
    "mute",
    "hide",
    "auto_smoothing",
)
DRIVER_ATTRIBUTES = ("type", "expression", "use_self")
ROTATION_ATTRIBUTES = ("rotation_quaternion", "rotation_euler", "rotation_axis_angle")


@dataclass
class CurveRecord:
    """One F-curve (of an action or a driver) as plain data."""

    data_path: str
    index: int
    group: str | None
    attributes: dict[str, Any]
    keys: dict[str, np.ndarray]
    modifiers: list[tuple[str, dict[str, Any], list[tuple[float, float, float]]]]
    driver: dict[str, Any] | None = None


@dataclass
class OwnerRecord:
    """The recorded curves of some bones in one F-curve owner (a channelbag, an action
    before 4.4, or the object's drivers)."""

    owner: Any
    curves: dict[tuple[str, int], CurveRecord] = field(default_factory=dict)
    groups: set[str] = field(default_factory=set)
    # Every curve of the owner in channel-list order, with its group: (path, index, group).
    order: list[tuple[str, int, str | None]] = field(default_factory=list)


@dataclass
class BoneRecord:
    name: str
    rotation_mode: str
    rotation: dict[str, tuple[float, ...]]
    # name -> (value, UI data or None, library-overridable)
    properties: dict[str, tuple[Any, dict[str, Any] | None, bool]]


@dataclass
class ActionCopy:
    """The F-curves of one action use as they were: ``owner`` is the live channelbag (or
    4.2/4.3 action), ``copy`` the channelbag of the same slot in a copy of the action."""

    owner: Any
    copy: Any


@dataclass
class ObjectRecord:
    obj: bpy.types.Object
    prefixes: frozenset[str]  # data-path prefixes of the recorded bones
    had_animation_data: bool
    action: bpy.types.Action | None  # the active action and its slot (4.4+; else None)
    slot: Any
    bones: list[BoneRecord]
    owners: list[ActionCopy]  # the actions' channelbags, recorded as copies
    drivers: Any  # the copies of the bones' drivers (`scratch`'s), or None
    copies: list[bpy.types.Action]  # the action copies, removed when the block ends
    scratch: bpy.types.Object | None  # holds the drivers' copies, removed when it ends


@contextmanager
def all_or_nothing(
    bones: Iterable[tuple[bpy.types.Object, str]], keys_only: bool = False
) -> Iterator[None]:
    """Restore the rotation state of ``bones`` (``(object, bone name)`` pairs) if the block
    raises; the exception propagates after the restore. When it succeeds, every editor is
    redrawn to show the change (`screen.show_changes`).

    ``keys_only``: the block changes nothing but the bones' F-curves in the actions (no
    pose bone value, property or mode, no driver), so only the actions are recorded (the
    drivers' copies and the bones' properties cost 3-4 ms on 200 bones)."""
    by_object: dict[str, tuple[bpy.types.Object, set[str]]] = {}
    for obj, name in bones:
        by_object.setdefault(obj.name_full, (obj, set()))[1].add(name)
    records: list[ObjectRecord] = []
    try:
        for obj, names in by_object.values():
            records.append(_record_object(obj, sorted(names), keys_only))
        known_actions = set(bpy.data.actions)  # with the records' copies
        try:
            yield
        except BaseException:
            for record in records:
                _restore_object(record)
            for action in set(bpy.data.actions) - known_actions:
                bpy.data.actions.remove(action)
            raise
    finally:
        for record in records:
            for copy in record.copies:
                bpy.data.actions.remove(copy)
            if record.scratch is not None:
                bpy.data.objects.remove(record.scratch)
    screen.show_changes()


class ShiftJournal:
    """The points of the keys `animdata.shift_keys` changed, as they were (see
    `shifted_keys`)."""

    def __init__(self) -> None:
        self._kept: list[tuple[bpy.types.FCurve, np.ndarray]] = []

    def keep(self, fcurve: bpy.types.FCurve, points: np.ndarray) -> None:
        """Remember ``points`` (`animdata.POINT_ATTRIBUTES`, shape (3, n, 2) float32) of
        ``fcurve``, read before its first change."""
        self._kept.append((fcurve, points))

    def restore(self) -> None:
        """Write every kept curve's points back, as they were read (no ``update()``: the
        handles are Blender's own values already)."""
        for fcurve, points in reversed(self._kept):
            keyframe_points = fcurve.keyframe_points
            for attribute, array in zip(animdata.POINT_ATTRIBUTES, points, strict=True):
                keyframe_points.foreach_set(attribute, array.ravel())


@contextmanager
def shifted_keys() -> Iterator[ShiftJournal]:
    """All or nothing for a block whose only writes are `animdata.shift_keys` with the
    journal's ``keep``, each on keys for which `animdata.shifts_restorably` holds: if the
    block raises, every shifted curve gets its points back (its other key attributes were
    never written) and the exception propagates. When it succeeds, every editor is redrawn
    to show the change (`screen.show_changes`)."""
    journal = ShiftJournal()
    try:
        yield journal
    except BaseException:
        journal.restore()
        raise
    screen.show_changes()


def report_failure(operator: bpy.types.Operator, error: BaseException) -> set[Any]:
    """Report a failed operator (its data already restored) and return ``{'CANCELLED'}``.

    Expected refusals (ValueError, KeyError) read as the message alone; anything else is a
    bug, whose traceback goes to the console for the bug report.
    """
    if not isinstance(error, (ValueError, KeyError)):
        traceback.print_exception(error, file=sys.stderr)
    text = error.args[0] if isinstance(error, KeyError) and error.args else error
    operator.report({'ERROR'}, f"Nothing changed: {text}")
    return {'CANCELLED'}


# -- recording ----------------------------------------------------------------------------


def _prefix(bone_name: str) -> str:
    return f'pose.bones["{bpy.utils.escape_identifier(bone_name)}"]'


def _owned(data_path: str, prefixes: frozenset[str]) -> bool:
    """Whether ``data_path`` is a property of one of the bones whose `_prefix` is in
    ``prefixes`` (a set lookup per ``"]`` in the path, not a scan of every bone)."""
    end = data_path.find('"]', 12)
    while end != -1:
        if data_path[: end + 2] in prefixes and data_path[end + 2 : end + 3] in ('.', '['):
            return True
        end = data_path.find('"]', end + 1)
    return False


def _record_object(obj: bpy.types.Object, names: list[str], keys_only: bool) -> ObjectRecord:
    prefixes = frozenset(_prefix(name) for name in names)
    owners = []
    copies: dict[str, bpy.types.Action] = {}
    for use in animdata.actions_of(obj):
        owner = animdata.fcurve_owner(use)
        # (An action linked from a library: no operator writes it (`animdata.check_editable`),
        # and writing a copy back into it on a failure would.)
        if owner is None or not use.action.is_editable:
            continue
        copy = copies.get(use.action.name_full)
        if copy is None:
            copy = copies[use.action.name_full] = use.action.copy()
        # (Slots exist from 4.4; before, use.slot is None.)
        slots = None if use.slot is None else getattr(copy, "slots")  # noqa: B009
        slot = None if slots is None else slots[use.slot.identifier]
        owners.append(ActionCopy(owner, compat.channelbag(copy, slot)))
    anim = obj.animation_data
    drivers = None
    scratch = None
    if anim is not None and not keys_only:
        scratch = bpy.data.objects.new("rq: recorded drivers", None)  # in no scene: inert
        drivers = scratch.animation_data_create().drivers
        for fcurve in anim.drivers:
            if _owned(fcurve.data_path, prefixes):
                drivers.from_existing(src_driver=fcurve)
    return ObjectRecord(
        obj=obj,
        prefixes=prefixes,
        had_animation_data=anim is not None,
        action=None if anim is None else anim.action,
        slot=None if anim is None else compat.assigned_slot(anim),
        bones=[] if keys_only else [_record_bone(obj.pose.bones[name]) for name in names],
        owners=owners,
        drivers=drivers,
        copies=list(copies.values()),
        scratch=scratch,
    )


def _record_owner(owner: Any, prefixes: frozenset[str], drivers: bool = False) -> OwnerRecord:
    collection = owner if drivers else owner.fcurves
    record = OwnerRecord(owner)
    if not drivers:
        record.groups = {group.name for group in getattr(owner, "groups")}  # noqa: B009
    for fcurve in collection:
        if not drivers:
            group = fcurve.group
            record.order.append(
                (fcurve.data_path, fcurve.array_index, None if group is None else group.name)
            )
        if _owned(fcurve.data_path, prefixes):
            record.curves[(fcurve.data_path, fcurve.array_index)] = _record_curve(fcurve)
    return record


def _record_curve(fcurve: bpy.types.FCurve) -> CurveRecord:
    points = fcurve.keyframe_points
    n = len(points)
    keys = {}
    for name, dtype, width in KEY_ATTRIBUTES:
        array = np.empty(n * width, dtype=dtype)
        if n:  # a driver usually has no keys: no call into Blender
            points.foreach_get(name, array)
        keys[name] = array
    driver = None
    if fcurve.driver is not None:
        d = fcurve.driver
        driver = {name: getattr(d, name) for name in DRIVER_ATTRIBUTES}
        driver["is_valid"] = d.is_valid
        driver["variables"] = [
            (v.name, v.type, [_properties(t) for t in v.targets]) for v in d.variables
        ]
    return CurveRecord(
        data_path=fcurve.data_path,
        index=fcurve.array_index,
        group=None if fcurve.group is None else fcurve.group.name,
        attributes={name: _plain(getattr(fcurve, name)) for name in FCURVE_ATTRIBUTES},
        keys=keys,
        modifiers=[
            (
                m.type,
                _properties(m),
                [(p.frame, p.min, p.max) for p in getattr(m, "control_points", ())],
            )
            for m in fcurve.modifiers
        ],
        driver=driver,
    )


def _properties(struct: Any) -> dict[str, Any]:
    """The writable, non-pointer RNA properties of ``struct`` (a modifier, a driver target),
    in RNA order."""
    out = {}
    for identifier in _writable(struct.bl_rna):
        if identifier == "id":  # a driver target's ID (a pointer, writable)
            out["id"] = struct.id
        else:
            out[identifier] = _plain(getattr(struct, identifier))
    return out


# RNA struct identifier -> the identifiers `_properties` records (`_writable`).
_WRITABLE: dict[str, tuple[str, ...]] = {}


def _writable(rna: Any) -> tuple[str, ...]:
    """The identifiers `_properties` records of a struct type (``bl_rna``), listed once per
    type: the writable non-pointer properties and a driver target's ``id``."""
    found = _WRITABLE.get(rna.identifier)
    if found is None:
        found = _WRITABLE[rna.identifier] = tuple(
            prop.identifier
            for prop in rna.properties
            if prop.identifier == "id"
            or not (
                prop.identifier == "rna_type"
                or prop.is_readonly
                or prop.type in ('POINTER', 'COLLECTION')
            )
        )
    return found


def _plain(value: Any) -> Any:
    """RNA arrays as tuples; everything else as it is."""
    if hasattr(value, "__len__") and not isinstance(value, str):
        return tuple(value)
    return value


def _id_property_value(value: Any) -> Any:
    """An ID property's value as plain Python: groups as dicts, arrays as lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value


def _record_bone(pose_bone: bpy.types.PoseBone) -> BoneRecord:
    properties = {}
    for key in list(cast(Any, pose_bone).keys()):  # an ID-property view (4.2 stubs: None)
        plain = _id_property_value(pose_bone[key])
        ui = None
        if isinstance(plain, (int, float, str, list)) and not isinstance(plain, bool):
            ui = cast(Any, pose_bone.id_properties_ui(key)).as_dict()  # stubs: None
        overridable = pose_bone.is_property_overridable_library(f'["{key}"]')
        properties[key] = (plain, ui, overridable)
    return BoneRecord(
        name=pose_bone.name,
        rotation_mode=pose_bone.rotation_mode,
        rotation={name: tuple(getattr(pose_bone, name)) for name in ROTATION_ATTRIBUTES},
        properties=properties,
    )


# -- restoring ----------------------------------------------------------------------------


def _restore_object(record: ObjectRecord) -> None:
    obj = record.obj
    for bone in record.bones:
        _restore_bone(obj.pose.bones[bone.name], bone)
    anim = obj.animation_data
    if anim is not None and record.had_animation_data:
        if anim.action != record.action:
            anim.action = record.action
        if record.action is not None and compat.assigned_slot(anim) != record.slot:
            setattr(anim, "action_slot", record.slot)  # noqa: B010 (4.4+)
    for use in record.owners:
        # The copy's curves as plain data, then written into the live owner.
        owner = _record_owner(use.copy, record.prefixes)
        owner.owner = use.owner
        _restore_owner(owner, record.prefixes, drivers=False)
    if record.drivers is not None and anim is not None:
        drivers = _record_owner(record.drivers, record.prefixes, drivers=True)
        drivers.owner = anim.drivers
        _restore_owner(drivers, record.prefixes, drivers=True)
    elif anim is not None and not record.had_animation_data:
        obj.animation_data_clear()
    obj.update_tag()


def _restore_bone(pose_bone: bpy.types.PoseBone, record: BoneRecord) -> None:
    for key in set(cast(Any, pose_bone).keys()) - set(record.properties):
        del pose_bone[key]
    for key, (value, ui, overridable) in record.properties.items():
        current = pose_bone.get(key)  # type: ignore[func-returns-value]
        if current is None or _id_property_value(current) != value:
            pose_bone[key] = value
        if ui is not None:
            data: Any = pose_bone.id_properties_ui(key)  # the stubs say None
            data.clear()
            data.update(**ui)
        pose_bone.property_overridable_library_set(f'["{key}"]', overridable)
    pose_bone.rotation_mode = record.rotation_mode  # type: ignore[assignment]
    for name, value in record.rotation.items():
        setattr(pose_bone, name, value)


def _restore_owner(record: OwnerRecord, prefixes: frozenset[str], drivers: bool) -> None:
    """Rewrite the recorded curves (creating removed ones), then remove the curves and groups
    the block created, then put curves back in their recorded order within their groups.
    Recreating before removing keeps every recorded group non-empty (Blender 4.4+ drops an
    empty group, and a group made again would move to the end of the list)."""
    collection = record.owner if drivers else record.owner.fcurves
    created = [
        fcurve
        for fcurve in collection
        if _owned(fcurve.data_path, prefixes)
        and (fcurve.data_path, fcurve.array_index) not in record.curves
    ]
    for (data_path, index), curve in record.curves.items():
        fcurve = collection.find(data_path, index=index)
        if fcurve is None:
            if drivers:
                fcurve = collection.new(data_path, index=index)
            else:
                fcurve = compat.new_fcurve(record.owner, data_path, index, curve.group)
        _restore_curve(fcurve, curve, None if drivers else record.owner)
    for fcurve in created:
        collection.remove(fcurve)
    if drivers:
        return
    groups = getattr(record.owner, "groups")  # noqa: B009
    for group in list(groups):
        if group.name not in record.groups and len(group.channels) == 0:
            groups.remove(group)
    _restore_order(record)


def _restore_order(record: OwnerRecord) -> None:
    """Move curves back to their recorded order inside each group. A curve moved to another
    group and back lands at the end of its group; a group with two or more curves never
    empties on the way. (The parking group empties after each move: Blender 4.4+ then drops
    it, so it is looked up again.)"""
    fcurves = record.owner.fcurves
    current = [
        (fc.data_path, fc.array_index, None if fc.group is None else fc.group.name)
        for fc in fcurves
    ]
    if current == record.order:
        return
    groups = getattr(record.owner, "groups")  # noqa: B009
    members: dict[str, list[tuple[str, int]]] = {}
    for data_path, index, group in record.order:
        if group is not None:
            members.setdefault(group, []).append((data_path, index))
    wanted = {
        name: keys
        for name, keys in members.items()
        if [c[:2] for c in current if c[2] == name] != keys
    }
    if not wanted:
        return
    parking_name = "rq: restoring order"
    for name, keys in wanted.items():
        group = groups.get(name)
        for data_path, index in keys:
            fcurve = fcurves.find(data_path, index=index)
            fcurve.group = groups.get(parking_name) or groups.new(parking_name)
            fcurve.group = group
    parking = groups.get(parking_name)
    if parking is not None:  # before 4.4 an empty group stays
        groups.remove(parking)


def _restore_curve(fcurve: bpy.types.FCurve, record: CurveRecord, owner: Any) -> None:
    # (No release lets ``FCurve.group`` be set to None: a recorded ungrouped curve was
    # recreated ungrouped, and the operators never group an existing one.)
    if (
        owner is not None
        and record.group is not None
        and (fcurve.group is None or fcurve.group.name != record.group)
    ):
        groups = getattr(owner, "groups")  # noqa: B009
        fcurve.group = groups.get(record.group) or groups.new(record.group)
    for name, value in record.attributes.items():
        setattr(fcurve, name, value)
    while len(fcurve.modifiers):
        fcurve.modifiers.remove(fcurve.modifiers[0])
    for kind, properties, control_points in record.modifiers:
        modifier: Any = cast(Any, fcurve.modifiers).new(kind)  # a recorded modifier type
        _set_properties(modifier, properties)
        for frame, low, high in control_points:
            point = modifier.control_points.add(frame)
            point.min, point.max = low, high
    points = fcurve.keyframe_points
    points.clear()
    n = len(record.keys["co"]) // 2
    points.add(n)
    for name, _, _ in KEY_ATTRIBUTES:
        points.foreach_set(name, record.keys[name])
    # No FCurve.update(): the recorded keys are sorted and their handles are the ones
    # Blender computed, written back exactly.
    if record.driver is not None:
        _restore_driver(cast(Any, fcurve.driver), record.driver)


def _set_properties(struct: Any, properties: dict[str, Any]) -> None:
    """Write recorded properties that differ (some are editable only in some states, such
    as a driver target's ``id_type``), twice: some clamp against others (frame ranges)."""
    for _ in range(2):
        for name, value in properties.items():
            if _plain(getattr(struct, name)) != value:
                setattr(struct, name, value)


def _restore_driver(driver: bpy.types.Driver, record: dict[str, Any]) -> None:
    for name in DRIVER_ATTRIBUTES:
        setattr(driver, name, record[name])
    while len(driver.variables):
        driver.variables.remove(driver.variables[0])
    for name, kind, targets in record["variables"]:
        variable = driver.variables.new()
        variable.name = name
        variable.type = kind
        for target, properties in zip(variable.targets, targets, strict=True):
            properties = dict(properties)
            if "id_type" in properties:  # before the ID: it decides which IDs are allowed
                target.id_type = properties.pop("id_type")
            _set_properties(target, properties)
    driver.is_valid = record["is_valid"]
