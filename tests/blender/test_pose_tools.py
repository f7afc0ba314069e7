# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's pose tools on the add-on's bones (`operators/pose_tools.py`, `rq_blender.pose_mirror`):
Clear Rotation, Insert Keyframe, Copy / Paste / Paste Flipped, and X-Axis Mirror's helper."""

from __future__ import annotations

import math
import time

import bpy
import numpy as np
import pytest
import rigs
from rigs_operators import addon_module

P = np.diag([-1.0, 1.0, 1.0])


def rotation(pose_bone) -> np.ndarray:
    return np.array(pose_bone.matrix_basis, dtype=np.float64)[:3, :3]


def evaluate(obj) -> None:
    obj.update_tag()
    bpy.context.view_layer.update()


def symmetric_rig(modes: dict[str, str]) -> bpy.types.Object:
    """Bones named in ``modes`` (name -> 'RQ', 'SWING_TWIST' or a native mode), unchained,
    all selected, posed away from rest."""
    bone_modes = addon_module("rq_blender.bone_modes")
    obj = rigs.armature(tuple(modes), chain=False)
    for name, mode in modes.items():
        pose_bone = obj.pose.bones[name]
        if mode == "RQ":
            bone_modes.enter_mode(pose_bone, "RQ", (0.1, 0.2, 0.3))
        elif mode == "SWING_TWIST":
            bone_modes.enter_mode(pose_bone, "SWING_TWIST", ((0.3, -0.4), 0.25))
        else:
            pose_bone.rotation_mode = mode
            pose_bone.rotation_quaternion = (0.9, 0.2, -0.3, 0.1)
    evaluate(obj)
    return obj


def fcurve_paths(obj) -> set[tuple[str, int, str | None]]:
    return {
        (fc.data_path, fc.array_index, fc.group.name if fc.group else None)
        for fc in rigs.fcurves_of(obj)
    }


def test_clear_rotation_zeroes_parameters_and_clears_native_bones(addon):
    obj = symmetric_rig({"A": "RQ", "B": "SWING_TWIST", "N": "QUATERNION", "Off": "RQ"})
    bones = obj.pose.bones
    bones["B"]["rq_twist_limit"] = [0.2, 0.5]  # 0 is outside: the drivers pose 0.2
    rigs.select(bones["Off"], False)
    assert bpy.ops.pose.rq_rot_clear() == {'FINISHED'}
    evaluate(obj)
    assert list(bones["A"]["rq_vector"]) == [0.0, 0.0, 0.0]
    assert list(bones["B"]["rq_swing"]) == [0.0, 0.0] and bones["B"]["rq_twist"] == 0.2
    assert tuple(bones["N"].rotation_quaternion) == (1.0, 0.0, 0.0, 0.0)
    assert list(bones["Off"]["rq_vector"]) == pytest.approx([0.1, 0.2, 0.3])  # not selected
    np.testing.assert_allclose(rotation(bones["A"]), np.eye(3), atol=1e-6)
    assert all(rigs_select_state(b) for b in bones if b.name != "Off")  # selection kept
    assert obj.animation_data is None or obj.animation_data.action is None  # no auto-keying


def rigs_select_state(pose_bone) -> bool:
    return addon_module("rq_blender.compat").pose_bone_selected(pose_bone)


def test_clear_rotation_auto_keys_the_parameters(addon):
    obj = symmetric_rig({"A": "RQ", "B": "SWING_TWIST"})
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    try:
        assert bpy.ops.pose.rq_rot_clear() == {'FINISHED'}
    finally:
        bpy.context.scene.tool_settings.use_keyframe_insert_auto = False
    assert fcurve_paths(obj) == {('pose.bones["A"]["rq_vector"]', i, "A") for i in range(3)} | {
        ('pose.bones["B"]["rq_swing"]', i, "B") for i in range(2)
    } | {('pose.bones["B"]["rq_twist"]', 0, "B")}


def test_clear_all_transforms_also_clears_location_and_scale(addon):
    obj = symmetric_rig({"A": "RQ", "N": "XYZ"})
    for pose_bone in obj.pose.bones:
        pose_bone.location = (0.1, 0.2, 0.3)
        pose_bone.scale = (2.0, 1.0, 1.0)
    assert bpy.ops.pose.rq_rot_clear(clear_all=True) == {'FINISHED'}
    for pose_bone in obj.pose.bones:
        assert tuple(pose_bone.location) == (0.0, 0.0, 0.0)
        assert tuple(pose_bone.scale) == (1.0, 1.0, 1.0)
    assert list(obj.pose.bones["A"]["rq_vector"]) == [0.0, 0.0, 0.0]


def test_clear_rotation_polls_false_without_addon_bones(addon):
    symmetric_rig({"N": "QUATERNION"})
    assert not bpy.ops.pose.rq_rot_clear.poll()


@pytest.fixture
def keying_channels():
    """The preferences' default keying channels, restored after the test."""
    edit = bpy.context.preferences.edit
    kept = set(edit.key_insert_channels)
    yield edit
    edit.key_insert_channels = kept


@pytest.mark.parametrize(
    ("channels", "expected"),
    [
        ({"ROTATION"}, {'["rq_vector"]', '["rq_swing"]', '["rq_twist"]'}),
        ({"LOCATION", "SCALE"}, {".location", ".scale"}),
        # the user's own properties, not the joint limits (rig settings: keyed, a limit
        # changed later came back at the next frame change)
        (
            {"ROTATION", "CUSTOM_PROPS"},
            {'["rq_vector"]', '["rq_swing"]', '["rq_twist"]', '["mine"]'},
        ),
    ],
)
def test_insert_keyframe_keys_parameters_for_rotation(addon, keying_channels, channels, expected):
    obj = symmetric_rig({"A": "RQ", "B": "SWING_TWIST"})
    obj.pose.bones["B"]["mine"] = 0.5
    keying_channels.key_insert_channels = channels
    assert bpy.ops.pose.rq_keyframe_insert() == {'FINISHED'}
    keyed = fcurve_paths(obj)
    assert {path.split('"]', 1)[1] for path, _, _ in keyed} == expected
    assert all(group == path.split('"')[1] for path, _, group in keyed)
    assert not any("rotation_axis_angle" in path for path, _, _ in keyed)


def test_insert_keyframe_reports_the_channels_blender_refuses(addon, keying_channels, capsys):
    """A locked curve takes no key (Blender's ``keyframe_insert`` refuses it); the report says
    which (a review: "Keyed 1 bone" read where Blender had keyed nothing)."""
    obj = symmetric_rig({"A": "RQ", "B": "RQ"})
    keying_channels.key_insert_channels = {"ROTATION"}
    assert bpy.ops.pose.rq_keyframe_insert() == {'FINISHED'}
    for fcurve in rigs.fcurves_of(obj):
        fcurve.lock = fcurve.data_path.startswith('pose.bones["A"]')
    bpy.context.scene.frame_set(5)
    capsys.readouterr()
    assert bpy.ops.pose.rq_keyframe_insert() == {'FINISHED'}
    out = capsys.readouterr().out
    assert "Warning: Keyed 2 bones; 1 bone not fully keyed" in out, out
    assert 'Info: A: ["rq_vector"] not keyed: Blender refused it' in out, out
    keys = {(f.data_path, len(f.keyframe_points)) for f in rigs.fcurves_of(obj)}
    assert keys == {('pose.bones["A"]["rq_vector"]', 1), ('pose.bones["B"]["rq_vector"]', 2)}


def test_insert_keyframe_follows_the_rotation_keying_set(addon, keying_channels):
    obj = symmetric_rig({"A": "RQ"})
    keying_channels.key_insert_channels = {"LOCATION"}
    scene = bpy.context.scene
    scene.keying_sets_all.active = next(
        k for k in scene.keying_sets_all if k.bl_idname == "Rotation"
    )
    assert bpy.ops.pose.rq_keyframe_insert() == {'FINISHED'}
    assert fcurve_paths(obj) == {('pose.bones["A"]["rq_vector"]', i, "A") for i in range(3)}
    # A keying set it does not know is Blender's own I's.
    scene.keying_sets_all.active = next(
        k for k in scene.keying_sets_all if k.bl_idname == "Available"
    )
    assert not bpy.ops.pose.rq_keyframe_insert.poll()


def mirrored_matrix(pose_bone) -> np.ndarray:
    return P @ rotation(pose_bone) @ P


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("RQ", "RQ"),
        ("SWING_TWIST", "SWING_TWIST"),
        ("QUATERNION", "RQ"),
        ("RQ", "SWING_TWIST"),
        ("SWING_TWIST", "QUATERNION"),
    ],
)
def test_paste_flipped_mirrors_the_rotation_onto_the_flipped_bone(addon, left, right):
    obj = symmetric_rig({"Arm.L": left, "Arm.R": right})
    bones = obj.pose.bones
    if left == "RQ":
        bones["Arm.L"]["rq_vector"] = [0.4, -1.1, 2.9]  # near pi
    evaluate(obj)
    rigs.select(bones["Arm.R"], False)
    assert bpy.ops.pose.rq_copy() == {'FINISHED'}
    assert bpy.ops.pose.rq_paste(flipped=True) == {'FINISHED'}
    evaluate(obj)
    np.testing.assert_allclose(rotation(bones["Arm.R"]), mirrored_matrix(bones["Arm.L"]), atol=1e-5)
    if left == right == "RQ":
        assert list(bones["Arm.R"]["rq_vector"]) == pytest.approx([0.4, 1.1, -2.9])
    if left == right == "SWING_TWIST":
        assert list(bones["Arm.R"]["rq_swing"]) == pytest.approx([0.3, 0.4])
        assert bones["Arm.R"]["rq_twist"] == pytest.approx(-0.25)


def test_paste_flipped_mirrors_the_twist_range(addon):
    obj = symmetric_rig({"Arm.L": "SWING_TWIST", "Arm.R": "SWING_TWIST"})
    bones = obj.pose.bones
    bones["Arm.L"]["rq_twist_limit"] = [0.1, 0.6]
    bones["Arm.L"]["rq_swing_limit"] = [1.0, 1.2]
    rigs.select(bones["Arm.R"], False)
    bpy.ops.pose.rq_copy()
    bpy.ops.pose.rq_paste(flipped=True)
    assert list(bones["Arm.R"]["rq_twist_limit"]) == pytest.approx([-0.6, -0.1])
    assert list(bones["Arm.R"]["rq_swing_limit"]) == pytest.approx([1.0, 1.2])
    assert bones["Arm.R"]["rq_twist"] == pytest.approx(-0.25)


def test_paste_without_flip_copies_the_parameters(addon):
    obj = symmetric_rig({"A": "RQ", "B": "SWING_TWIST"})
    bones = obj.pose.bones
    bpy.ops.pose.rq_copy()
    bones["A"]["rq_vector"] = [0.0, 0.0, 0.0]
    bones["B"]["rq_swing"] = [0.0, 0.0]
    bones["B"]["rq_twist"] = 0.0
    assert bpy.ops.pose.rq_paste() == {'FINISHED'}
    assert list(bones["A"]["rq_vector"]) == pytest.approx([0.1, 0.2, 0.3])
    assert list(bones["B"]["rq_swing"]) == pytest.approx([0.3, -0.4])
    assert bones["B"]["rq_twist"] == pytest.approx(0.25)


def test_blender_alone_leaves_the_parameters_unflipped_and_unclear(addon):
    """The premise of the pose tools: what Blender's own operators do with the parameters."""
    obj = symmetric_rig({"Arm.L": "RQ", "Arm.R": "RQ"})
    bones = obj.pose.bones
    rigs.select(bones["Arm.R"], False)
    bpy.ops.pose.copy()
    bpy.ops.pose.paste(flipped=True)
    evaluate(obj)
    assert list(bones["Arm.R"]["rq_vector"]) == pytest.approx([0.1, 0.2, 0.3])  # unflipped
    assert bpy.ops.pose.rot_clear() == {'FINISHED'}
    assert list(bones["Arm.L"]["rq_vector"]) == pytest.approx([0.1, 0.2, 0.3])  # not cleared


def test_a_copy_made_without_the_addon_leaves_paste_to_blender(addon):
    symmetric_rig({"A": "RQ"})
    bpy.ops.pose.rq_copy()
    assert bpy.ops.pose.rq_paste.poll()
    time.sleep(0.02)  # past the file system's time stamp granularity
    bpy.ops.pose.copy()  # Blender's own copy (the Pose menu, a script): a new buffer
    assert not bpy.ops.pose.rq_paste.poll()


def test_mirror_follow_and_restore(addon):
    """X-Axis Mirror's helper, as `pose.rq_rotate` uses it while dragging Arm.L."""
    pose_mirror = addon_module("rq_blender.pose_mirror")
    obj = symmetric_rig(
        {"Arm.L": "SWING_TWIST", "Arm.R": "SWING_TWIST", "Hand.L": "RQ", "Hand.R": "QUATERNION"}
    )
    bones = obj.pose.bones
    for name in ("Arm.R", "Hand.R"):
        rigs.select(bones[name], False)
    assert pose_mirror.mirrors([bones["Arm.L"], bones["Hand.L"]]) == []  # mirror off
    obj.pose.use_mirror_x = True
    found = pose_mirror.mirrors([bones["Arm.L"], bones["Hand.L"]])
    assert [(m.source, m.target) for m in found] == [("Arm.L", "Arm.R"), ("Hand.L", "Hand.R")]
    before = {name: rotation(bones[name]) for name in ("Arm.R", "Hand.R")}
    pose_mirror.follow(
        found, bones["Arm.L"], "SWING_TWIST", {"rq_swing": [0.5, 0.2], "rq_twist": -0.3}
    )
    pose_mirror.follow(found, bones["Hand.L"], "RQ", {"rq_vector": [0.2, 0.7, -0.1]})
    assert list(bones["Arm.R"]["rq_swing"]) == pytest.approx([0.5, -0.2])
    assert bones["Arm.R"]["rq_twist"] == pytest.approx(0.3)
    bones["Arm.L"]["rq_swing"] = [0.5, 0.2]
    bones["Arm.L"]["rq_twist"] = -0.3
    bones["Hand.L"]["rq_vector"] = [0.2, 0.7, -0.1]
    evaluate(obj)
    for name in ("Arm", "Hand"):
        np.testing.assert_allclose(
            rotation(bones[f"{name}.R"]), mirrored_matrix(bones[f"{name}.L"]), atol=1e-5
        )
    pose_mirror.restore(found)
    evaluate(obj)
    for name, matrix in before.items():
        np.testing.assert_allclose(rotation(bones[name]), matrix, atol=1e-6)


def test_mirror_respects_the_target_limits(addon):
    pose_mirror = addon_module("rq_blender.pose_mirror")
    obj = symmetric_rig({"Arm.L": "SWING_TWIST", "Arm.R": "SWING_TWIST"})
    bones = obj.pose.bones
    bones["Arm.R"]["rq_twist_limit"] = [-0.1, 0.1]
    written = pose_mirror.transferred(
        "SWING_TWIST", {"rq_swing": [0.0, 0.0], "rq_twist": -0.5}, bones["Arm.R"], flip=True
    )
    assert written == {"rq_swing": [0.0, 0.0], "rq_twist": pytest.approx(0.1)}
    assert math.isclose(written["rq_twist"], 0.1)


def test_copy_with_nothing_selected_forgets_the_last_copy(addon):
    obj = symmetric_rig({"A": "RQ"})
    bpy.ops.pose.rq_copy()
    rigs.select(obj.pose.bones["A"], False)
    try:
        bpy.ops.pose.rq_copy()
    except RuntimeError as refused:  # a refusal reads as Blender's report, not a traceback
        assert "Traceback" not in str(refused)
    assert not bpy.ops.pose.rq_paste.poll()
