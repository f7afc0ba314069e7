# SPDX-License-Identifier: GPL-3.0-or-later
"""`rq_blender.bone_modes`: entering and leaving the add-on's modes, reading the mode back
from a reopened file, property UI data, and clear errors for bad input."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import rigs
from rigs import armature, evaluate


def rotation(pose_bone) -> np.ndarray:
    return np.array(pose_bone.matrix_basis, dtype=np.float64)[:3, :3]


def test_entering_rq_from_the_current_rotation_does_not_move_the_bone(addon):
    modes = addon.rq_blender.bone_modes
    obj = armature(["A", "B"])
    rng = np.random.default_rng(2)
    for pose_bone in obj.pose.bones:
        pose_bone.rotation_mode = 'QUATERNION'
        pose_bone.rotation_quaternion = rng.normal(size=4)
    evaluate(obj)
    before = {pb.name: rotation(pb) for pb in obj.pose.bones}
    for pose_bone in obj.pose.bones:
        vector = pose_bone.rotation_quaternion.normalized().to_exponential_map()
        modes.enter_mode(pose_bone, "RQ", tuple(vector))
        assert modes.current_mode(pose_bone) == "RQ"
    evaluate(obj)
    for pose_bone in obj.pose.bones:
        assert np.abs(rotation(pose_bone) - before[pose_bone.name]).max() <= 1e-6


def test_properties_carry_ui_data_and_are_overridable(addon):
    modes = addon.rq_blender.bone_modes
    obj = armature(["A"])
    pose_bone = obj.pose.bones["A"]
    modes.enter_mode(pose_bone, "SWING_TWIST", ((0.1, 0.2), 0.3))
    assert tuple(pose_bone["rq_swing"]) == pytest.approx((0.1, 0.2))
    assert pose_bone["rq_twist"] == pytest.approx(0.3)
    for name in ("rq_swing", "rq_twist", "rq_swing_limit", "rq_twist_limit"):
        ui = pose_bone.id_properties_ui(name).as_dict()
        assert ui["subtype"] == 'ANGLE' and ui["description"], name
        assert pose_bone.is_property_overridable_library(f'["{name}"]'), name
    limit_ui = pose_bone.id_properties_ui("rq_swing_limit").as_dict()
    # A widened limit (a converted spin) up to 2 pi survives an edit in the UI.
    assert limit_ui["min"] == 0.0 and limit_ui["max"] == pytest.approx(2 * math.pi)
    assert modes.parameter_values(pose_bone, "SWING_TWIST") == pytest.approx((0.1, 0.2, 0.3))


def test_switching_between_addon_modes_and_back_to_native(addon):
    modes = addon.rq_blender.bone_modes
    obj = armature(["A"])
    pose_bone = obj.pose.bones["A"]
    modes.enter_mode(pose_bone, "SWING_TWIST", ((0.1, 0.2), 0.3))
    pose_bone["rq_swing_limit"] = (0.5, 0.6)
    modes.enter_mode(pose_bone, "RQ", (0.3, 0.2, 0.1))
    assert modes.current_mode(pose_bone) == "RQ"
    assert "rq_swing" not in pose_bone and "rq_twist" not in pose_bone
    assert len(obj.animation_data.drivers) == 4
    modes.leave_mode(pose_bone, "XYZ")
    assert modes.current_mode(pose_bone) == "XYZ" and pose_bone.rotation_mode == 'XYZ'
    assert "rq_vector" not in pose_bone and len(obj.animation_data.drivers) == 0
    # limits stay (inert) so that switching back keeps them
    assert tuple(pose_bone["rq_swing_limit"]) == pytest.approx((0.5, 0.6))
    modes.enter_mode(pose_bone, "SWING_TWIST", ((0.0, 0.0), 0.0))
    assert tuple(pose_bone["rq_swing_limit"]) == pytest.approx((0.5, 0.6))


def test_mode_is_read_back_from_a_reopened_file(addon, tmp_path):
    modes = addon.rq_blender.bone_modes
    obj = armature(["A", "B", "C", "D"])
    modes.enter_mode(obj.pose.bones["A"], "RQ", (0.1, 0.2, 0.3))
    modes.enter_mode(obj.pose.bones["B"], "SWING_TWIST", ((0.1, 0.2), 0.3))
    obj.pose.bones["C"].rotation_mode = 'AXIS_ANGLE'
    obj.pose.bones["D"].rotation_mode = 'ZXY'
    path = tmp_path / "modes.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    bones = bpy.data.objects["Rig"].pose.bones
    got = [modes.current_mode(bones[name]) for name in "ABCD"]
    assert got == ["RQ", "SWING_TWIST", "AXIS_ANGLE", "ZXY"]


@pytest.mark.parametrize(
    ("mode", "values", "message"),
    [
        ("EULER", (0.0, 0.0, 0.0), "mode must be one of"),
        ("RQ", (0.0, 0.0), "length-3"),
        ("RQ", (0.0, math.nan, 0.0), "finite"),
        ("RQ", "abc", "cannot read"),
        ("SWING_TWIST", (0.0, 0.0, 0.0), "cannot read|pair"),
        ("SWING_TWIST", ((0.0, 0.0, 0.0), 0.0), "pair"),
        ("SWING_TWIST", ((0.0, math.inf), 0.0), "finite"),
    ],
)
def test_bad_input_is_refused_clearly(addon, mode, values, message):
    modes = addon.rq_blender.bone_modes
    pose_bone = armature(["A"]).pose.bones["A"]
    with pytest.raises(ValueError, match=message):
        modes.enter_mode(pose_bone, mode, values)
    assert "rq_vector" not in pose_bone and pose_bone.rotation_mode != 'AXIS_ANGLE'


def test_a_channel_driven_by_someone_else_is_refused(addon):
    modes = addon.rq_blender.bone_modes
    pose_bone = armature(["A"]).pose.bones["A"]
    pose_bone.driver_add("rotation_axis_angle", 2)
    with pytest.raises(ValueError, match="already driven"):
        modes.enter_mode(pose_bone, "RQ", (0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="native_mode must be one of"):
        modes.leave_mode(pose_bone, "RQ")


def test_a_pose_batch_sets_what_assignments_set(addon):
    """`PoseBatch` writes modes and rotations of many bones in bulk: the same modes and
    rotation values (all three channels, bit for bit) as assigning them bone by bone, a mode
    alone converting the bone's rotation as the assignment does; other bones untouched."""
    bone_modes = addon.rq_blender.bone_modes
    names = ("A", "B", "C", "D", "E")
    changes = {
        "A": ("XYZ", (0.1, -0.2, 0.3)),
        "B": ("QUATERNION", None),
        "C": ("AXIS_ANGLE", (0.5, 0.0, 1.0, 0.0)),
        "E": ("ZXY", None),
    }
    rigs = []
    for batched in (False, True):
        obj = armature(names)
        modes = ("QUATERNION", "AXIS_ANGLE", "XYZ", "YZX", "QUATERNION")
        for pose_bone, mode in zip(obj.pose.bones, modes, strict=True):
            pose_bone.rotation_mode = mode
            pose_bone.rotation_quaternion = (0.5, 0.5, -0.5, 0.5)
            pose_bone.rotation_euler = (0.3, 0.2, 0.1)
            pose_bone.rotation_axis_angle = (1.0, 0.0, 0.6, 0.8)
        batch = bone_modes.PoseBatch(obj)
        for name, (mode, values) in changes.items():
            pose_bone = obj.pose.bones[name]
            if batched:
                batch.add(pose_bone, "YXZ", (9.0, 9.0, 9.0))  # replaced by the next call
                batch.add(pose_bone, mode, values)
                continue
            pose_bone.rotation_mode = mode
            if values is not None:
                prop = {"XYZ": "rotation_euler", "AXIS_ANGLE": "rotation_axis_angle"}[mode]
                setattr(pose_bone, prop, values)
        batch.write()
        rigs.append(obj)
    for one, other in zip(*(r.pose.bones for r in rigs), strict=True):
        assert one.rotation_mode == other.rotation_mode
        for prop in ("rotation_quaternion", "rotation_euler", "rotation_axis_angle"):
            assert tuple(getattr(one, prop)) == tuple(getattr(other, prop)), (one.name, prop)
    assert [pb.rotation_mode for pb in rigs[1].pose.bones] == [
        "XYZ",
        "QUATERNION",
        "AXIS_ANGLE",
        "YZX",
        "ZXY",
    ]


def test_a_library_override_refuses_mode_switches(addon, tmp_path):
    """Drivers and properties added to (or removed from) an override are not saved: refused,
    nothing changed. Keys on the override's add-on bones stay allowed."""
    modes = addon.rq_blender.bone_modes
    obj = armature(["A", "B"])
    modes.enter_mode(obj.pose.bones["A"], "RQ", (0.1, 0.2, 0.3))
    collection = bpy.data.collections.new("RigCollection")
    bpy.context.scene.collection.children.link(collection)
    bpy.context.scene.collection.objects.unlink(obj)
    collection.objects.link(obj)
    bpy.ops.object.mode_set(mode='OBJECT')
    library = tmp_path / "library.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library))
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(library), link=True) as (_, linked):
        linked.collections = ["RigCollection"]
    instance = bpy.data.objects.new("Instance", None)
    instance.instance_type = 'COLLECTION'
    instance.instance_collection = linked.collections[0]
    bpy.context.scene.collection.objects.link(instance)
    overridden = linked.collections[0].override_hierarchy_create(
        bpy.context.scene, bpy.context.view_layer, reference=instance, do_fully_editable=True
    )
    (rig,) = [o for o in overridden.all_objects if o.type == 'ARMATURE']
    assert rig.override_library is not None
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='POSE')
    bones = rig.pose.bones
    before = {b.name: (b.rotation_mode, sorted(b.keys())) for b in bones}
    for name in ("A", "B"):
        rigs.select(bones[name], True)
    with pytest.raises(RuntimeError, match=r"'Rig' is a library override: .*/library\.blend"):
        bpy.ops.pose.rq_set_mode(mode='SWING_TWIST')
    assert {b.name: (b.rotation_mode, sorted(b.keys())) for b in bones} == before
    with pytest.raises(ValueError, match="library override"):
        modes.leave_mode(bones["A"], "QUATERNION")
    bones["A"]["rq_vector"] = [0.2, 0.0, 0.0]
    assert bones["A"].keyframe_insert('["rq_vector"]', frame=1)
