# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_ik_reach``: the active bone's tail reaches the target (the 3D cursor by default)
within 1e-4 of the chain's length; every bone keeps its mode, its limits and locks; driven
bones are held; auto-keying keys; bad input changes nothing."""

import math
import re

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro

REPORT = re.compile(r"^(Info|Warning): (.*)$", re.MULTILINE)


def _reports(capsys):
    """``(level, text)`` of the reports printed since the last call (headless ``bpy.ops``
    prints them; the last is the status bar's headline)."""
    return REPORT.findall(capsys.readouterr().out)


def _rig(modes=("SWING_TWIST", "QUATERNION", "RQ")):
    """A chain of three bones (Upper, Lower, Hand) in ``modes``; the active bone is Hand."""
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    obj = rigs.armature(("Upper", "Lower", "Hand"))
    for pose_bone, mode in zip(obj.pose.bones, modes, strict=True):
        if mode == "RQ":
            bone_modes.enter_mode(pose_bone, "RQ", (0.1, 0.0, 0.2))
        elif mode == "SWING_TWIST":
            bone_modes.enter_mode(pose_bone, "SWING_TWIST", ((0.2, -0.1), 0.1))
            pose_bone["rq_swing_limit"] = [0.8, 1.2]
            pose_bone["rq_twist_limit"] = [-0.5, 0.5]
        else:
            pose_bone.rotation_mode = mode
    obj.data.bones.active = obj.data.bones["Hand"]
    obj.update_tag()
    bpy.context.view_layer.update()
    return obj


def _tail(obj, name="Hand"):
    return np.array(obj.matrix_world @ obj.pose.bones[name].tail)


def _length(obj):
    return sum(bone.length for bone in obj.data.bones)


def _state(obj):
    """Every bone's mode, native channels and parameters, for 'nothing changed'."""
    out = {}
    for pb in obj.pose.bones:
        out[pb.name] = (
            pb.rotation_mode,
            tuple(pb.rotation_quaternion),
            tuple(pb.rotation_euler),
            {k: (list(v) if hasattr(v, "__len__") else v) for k, v in pb.items()},
        )
    return out


def _inside(pose_bone):
    a, b = pose_bone["rq_swing_limit"]
    lo, hi = pose_bone["rq_twist_limit"]
    x, z = pose_bone["rq_swing"]
    return (x / a) ** 2 + (z / b) ** 2 <= 1 + 1e-9 and lo - 1e-9 <= pose_bone[
        "rq_twist"
    ] <= hi + 1e-9


def test_the_tail_reaches_the_target_and_every_bone_keeps_its_mode(addon, capsys):
    obj = _rig()
    target = _tail(obj) + np.array([0.4, -0.5, 0.3])
    _reports(capsys)
    assert bpy.ops.pose.rq_ik_reach(target=tuple(target)) == {'FINISHED'}
    assert _reports(capsys)[-1] == ("Info", "Reached the target, turned 3 bones")
    bpy.context.view_layer.update()
    assert np.linalg.norm(_tail(obj) - target) <= 1e-4 * _length(obj)
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    modes = [bone_modes.current_mode(pb) for pb in obj.pose.bones]
    assert modes == ["SWING_TWIST", "QUATERNION", "RQ"]
    assert _inside(obj.pose.bones["Upper"])


def test_the_3d_cursor_is_the_default_target(addon):
    obj = _rig()
    cursor = _tail(obj) + np.array([-0.3, -0.4, 0.2])
    bpy.context.scene.cursor.location = tuple(cursor)
    assert bpy.ops.pose.rq_ik_reach() == {'FINISHED'}
    bpy.context.view_layer.update()
    assert np.linalg.norm(_tail(obj) - cursor) <= 1e-4 * _length(obj)


def test_chain_length_counts_the_active_bone(addon):
    obj = _rig()
    before = _state(obj)
    target = _tail(obj) + np.array([0.2, -0.1, 0.1])
    assert bpy.ops.pose.rq_ik_reach(target=tuple(target), chain_length=1) == {'FINISHED'}
    after = _state(obj)
    assert after["Upper"] == before["Upper"] and after["Lower"] == before["Lower"]
    assert after["Hand"] != before["Hand"]


def test_locked_euler_axes_and_driven_bones_stay(addon):
    obj = _rig(("XYZ", "XYZ", "QUATERNION"))
    lower = obj.pose.bones["Lower"]
    lower.lock_rotation = (True, False, True)
    lower.rotation_euler = (0.2, 0.1, -0.3)
    upper = obj.pose.bones["Upper"]
    driver = upper.driver_add("rotation_euler", 0).driver
    driver.expression = "0.25"
    bpy.context.view_layer.update()
    held = tuple(upper.rotation_euler)
    target = _tail(obj) + np.array([0.3, -0.3, 0.2])
    assert bpy.ops.pose.rq_ik_reach(target=tuple(target)) == {'FINISHED'}
    bpy.context.view_layer.update()
    assert lower.rotation_euler[0] == np.float32(0.2)
    assert lower.rotation_euler[2] == np.float32(-0.3)
    assert tuple(upper.rotation_euler) == held


def test_out_of_reach_stops_on_the_limits_and_reports_it(addon, capsys):
    obj = _rig(("SWING_TWIST", "SWING_TWIST", "SWING_TWIST"))
    for pb in obj.pose.bones:
        pb["rq_swing_limit"] = [0.3, 0.3]
        pb["rq_twist_limit"] = [0.0, 0.0]
    obj.update_tag()
    bpy.context.view_layer.update()
    target = (5.0, -2.0, 0.0)
    _reports(capsys)
    assert bpy.ops.pose.rq_ik_reach(target=target) == {'FINISHED'}
    bpy.context.view_layer.update()
    for pb in obj.pose.bones:
        assert _inside(pb)
    distance = np.linalg.norm(_tail(obj) - target)
    assert distance > 1.0
    found = _reports(capsys)
    level, headline = found[-1]
    assert level == "Warning" and len(headline) <= 70
    assert headline.startswith(f"{distance:.3g}"[:4]) and "short of the target" in headline
    assert headline.endswith("short of the target: limits of Upper, Lower and Hand")
    assert found[0][1].startswith("Limits reached: Upper: swing limit")


def test_auto_keying_keys_the_bones_it_turns(addon):
    obj = _rig()
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    try:
        assert bpy.ops.pose.rq_ik_reach(target=tuple(_tail(obj) + (0.2, -0.3, 0.2))) == {'FINISHED'}
    finally:
        bpy.context.scene.tool_settings.use_keyframe_insert_auto = False
    paths = {fc.data_path for fc in rigs.fcurves_of(obj)}
    assert 'pose.bones["Hand"]["rq_vector"]' in paths
    assert 'pose.bones["Lower"].rotation_quaternion' in paths
    assert 'pose.bones["Upper"]["rq_swing"]' in paths


def test_bad_input_changes_nothing(addon):
    obj = _rig()
    before = _state(obj)
    for target in ((math.nan, 0.0, 0.0), (math.inf, 0.0, 0.0)):
        with pytest.raises(RuntimeError, match="Nothing changed: the target is not a finite"):
            bpy.ops.pose.rq_ik_reach(target=target)
    assert _state(obj) == before
    obj.pose.bones["Hand"]["rq_vector"] = [math.nan, 0.0, 0.0]
    before = _state(obj)
    with pytest.raises(RuntimeError, match="Nothing changed: rq_vector of Hand is not a number"):
        bpy.ops.pose.rq_ik_reach(target=(1.0, 1.0, 1.0))
    assert str(_state(obj)) == str(before)  # (NaN is not equal to itself)


def test_everything_locked_changes_nothing(addon):
    obj = _rig(("XYZ", "XYZ", "XYZ"))
    for pb in obj.pose.bones:
        pb.lock_rotation = (True, True, True)
    before = _state(obj)
    with pytest.raises(RuntimeError, match=r"Nothing changed: every rotation axis .* locked"):
        bpy.ops.pose.rq_ik_reach(target=(1.0, 1.0, 1.0))
    assert _state(obj) == before


def test_rq_bones_keep_their_turns(addon):
    """An RQ bone a turn and a half radian around keeps its turn: the vector written is the
    equivalent one closest to the one it had."""
    obj = _rig()
    spin = [0.0, 2.0 * math.pi + 0.5, 0.0]
    obj.pose.bones["Hand"]["rq_vector"] = spin
    obj.update_tag()
    bpy.context.view_layer.update()
    target = _tail(obj) + np.array([0.2, -0.3, 0.2])
    assert bpy.ops.pose.rq_ik_reach(target=tuple(target)) == {'FINISHED'}
    bpy.context.view_layer.update()
    assert np.linalg.norm(_tail(obj) - target) <= 1e-4 * _length(obj)
    vector = np.array(obj.pose.bones["Hand"]["rq_vector"])
    assert np.linalg.norm(vector) > 2.0 * math.pi
    rq = ro.addon_module("rq_rotation")
    np.testing.assert_allclose(
        vector, rq.quat_to_rq(rq.rq_to_quat(vector), near=np.array(spin)), atol=1e-9
    )
