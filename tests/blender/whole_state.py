# SPDX-License-Identifier: GPL-3.0-or-later
"""Everything an operator could change on an armature, as plain comparable data.

Written apart from the add-on's own recorder (``rq_blender/transaction.py``), by walking RNA
generically, so a property that recorder forgets shows up here as a difference.
"""

from __future__ import annotations

from typing import Any

import bpy

# Derived or transient RNA properties that are not user data.
SKIPPED = {"rna_type", "co_ui", "is_empty", "sampled_points", "bl_rna"}


def rna(struct: Any, depth: int = 0) -> Any:
    """Every RNA property of ``struct``: IDs by name, nested structs and collections walked
    (to a small depth: channel groups point back at their curves)."""
    if struct is None:
        return None
    if isinstance(struct, bpy.types.ID):
        return ("ID", struct.name_full)
    out = {}
    for prop in struct.bl_rna.properties:
        name = prop.identifier
        if name in SKIPPED:
            continue
        value = getattr(struct, name)
        if prop.type == 'POINTER':
            out[name] = ("…", getattr(value, "name", None)) if depth >= 3 else rna(value, depth + 1)
        elif prop.type == 'COLLECTION':
            out[name] = len(value) if depth >= 3 else [rna(item, depth + 1) for item in value]
        elif hasattr(value, "__len__") and not isinstance(value, str):
            out[name] = tuple(value)
        else:
            out[name] = value
    return out


def _id_property(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value


def _bone(pose_bone: bpy.types.PoseBone) -> dict:
    props = {}
    for key in list(pose_bone.keys()):
        value = _id_property(pose_bone[key])
        try:
            ui = pose_bone.id_properties_ui(key).as_dict()
        except TypeError:  # groups have no UI data
            ui = None
        props[key] = (value, ui, pose_bone.is_property_overridable_library(f'["{key}"]'))
    return {
        "rotation_mode": pose_bone.rotation_mode,
        "rotation_quaternion": tuple(pose_bone.rotation_quaternion),
        "rotation_euler": tuple(pose_bone.rotation_euler),
        "rotation_axis_angle": tuple(pose_bone.rotation_axis_angle),
        "properties": props,
    }


def _curves(collection) -> dict:
    """F-curves by (data path, index), each with every RNA property (keys, modifiers, group
    and driver included)."""
    return {(fc.data_path, fc.array_index): rna(fc) for fc in collection}


def _action(action: bpy.types.Action) -> dict:
    if not hasattr(action, "layers"):  # 4.2/4.3
        return {"groups": [g.name for g in action.groups], "fcurves": _curves(action.fcurves)}
    bags = {}
    for layer in action.layers:
        for strip in layer.strips:
            for bag in strip.channelbags:
                bags[(layer.name, bag.slot.identifier)] = {
                    "groups": [g.name for g in bag.groups],
                    "fcurves": _curves(bag.fcurves),
                }
    return {"slots": [s.identifier for s in action.slots], "channelbags": bags}


def whole_state(obj: bpy.types.Object) -> dict:
    """The armature's pose bones, every action in the file and the object's drivers."""
    anim = obj.animation_data
    return {
        "bones": {pb.name: _bone(pb) for pb in obj.pose.bones},
        "actions": {a.name: _action(a) for a in bpy.data.actions},
        "drivers": None if anim is None else _curves(anim.drivers),
        "drivers_valid": None
        if anim is None
        else {(fc.data_path, fc.array_index): fc.driver.is_valid for fc in anim.drivers},
    }


def differences(before: dict, after: dict, path: str = "") -> list[str]:
    """Where two states differ, as readable paths (empty when equal)."""
    if isinstance(before, dict) and isinstance(after, dict):
        found = []
        for key in sorted(set(before) | set(after), key=repr):
            if key not in before or key not in after:
                found.append(f"{path}/{key!r}: only {'after' if key in after else 'before'}")
            else:
                found += differences(before[key], after[key], f"{path}/{key!r}")
        return found
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            d
            for i, (b, a) in enumerate(zip(before, after, strict=True))
            for d in differences(b, a, f"{path}[{i}]")
        ]
    return [] if before == after else [f"{path}: {before!r} -> {after!r}"]
