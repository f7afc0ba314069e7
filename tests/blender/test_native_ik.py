# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_copy_limits_to_ik``: a swing/twist bone's limits on Blender's own IK limits.

Blender's IK solver itself is the judge: a one-bone IK chain reaching far outside the
ellipse must stop on the swing boundary `rq_blender.native_ik` predicts from the solver's
source (``sin(theta / 2)`` on an ellipse of ``sin`` semi-axes), in the direction of the
target; an orientation goal twisting past the range must stop at its ends. The difference
to the add-on's own ellipse is then measured around the boundary.
"""

from __future__ import annotations

import math
import re

import bpy
import mathutils
import numpy as np
import pytest
import rigs
import rigs_operators as ro

REPORT = re.compile(r"^(Info|Warning): (.*)$", re.MULTILINE)


def _swing_twist_bone(swing_limit, twist_limit):
    """One swing/twist bone "Arm" at zero swing and twist with the given limits, and one RQ
    bone "Other"; both selected."""
    obj = rigs.armature(("Arm", "Other"), chain=False)
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    arm = obj.pose.bones["Arm"]
    bone_modes.enter_mode(arm, "SWING_TWIST", ((0.0, 0.0), 0.0))
    arm["rq_swing_limit"] = list(swing_limit)
    arm["rq_twist_limit"] = list(twist_limit)
    bone_modes.enter_mode(obj.pose.bones["Other"], "RQ", (0.0, 0.0, 0.0))
    obj.update_tag()
    return obj


def _ik_to(obj, name):
    """An IK constraint (chain of one bone) on ``name`` to a new empty; the empty."""
    target = bpy.data.objects.new("Goal", None)
    bpy.context.scene.collection.objects.link(target)
    ik = obj.pose.bones[name].constraints.new('IK')
    ik.target = target
    ik.chain_count = 1
    ik.iterations = 500
    return ik, target


def _local_swing_twist(obj, name):
    """The bone's evaluated rotation relative to rest as ``(swing (r_x, r_z), twist)``."""
    bpy.context.view_layer.update()
    pose_bone = obj.pose.bones[name]
    local = obj.convert_space(
        pose_bone=pose_bone, matrix=pose_bone.matrix, from_space='POSE', to_space='LOCAL'
    )
    q = np.array(local.to_quaternion())
    core = ro.addon_module("rq_rotation")
    swing, twist = core.quat_to_swing_twist(q)
    return np.asarray(swing), float(twist)


def _rest(obj, name):
    """The bone's rest frame in world space (its pose with no rotation)."""
    return obj.matrix_world @ obj.data.bones[name].matrix_local


def test_copies_the_limits_and_leaves_other_bones_alone(addon, capsys):
    obj = _swing_twist_bone((0.9, 0.4), (-0.3, 0.5))
    capsys.readouterr()
    assert bpy.ops.pose.rq_copy_limits_to_ik() == {'FINISHED'}
    arm = obj.pose.bones["Arm"]
    expected = {
        "ik_min_x": -0.9,
        "ik_max_x": 0.9,
        "ik_min_y": -0.3,
        "ik_max_y": 0.5,
        "ik_min_z": -0.4,
        "ik_max_z": 0.4,
    }
    for name, value in expected.items():
        assert getattr(arm, name) == pytest.approx(value, abs=1e-6), name
    assert arm.use_ik_limit_x and arm.use_ik_limit_y and arm.use_ik_limit_z
    other = obj.pose.bones["Other"]
    assert not (other.use_ik_limit_x or other.use_ik_limit_y or other.use_ik_limit_z)
    found = REPORT.findall(capsys.readouterr().out)
    level, headline = found[-1]
    assert level == "Info"
    assert re.fullmatch(r"Copied joint limits to IK: 1 bone, boundaries within 0\.\d\d°", headline)


# The README's table (Known limits): semi-axes (radians) and the largest difference it
# states, in degrees, with the precision it is stated to.
README_ROWS = [
    (math.radians(60), math.radians(60), 0.0, 0.005),
    (1.4, 0.5, 0.11, 0.005),
    (math.radians(90), math.radians(30), 0.21, 0.005),
    (math.radians(120), math.radians(45), 0.99, 0.005),
    (2.6, 0.6, 4.18, 0.005),
    (math.radians(150), math.radians(20), 4.56, 0.005),
]


@pytest.mark.parametrize(("a", "b", "stated", "precision"), README_ROWS)
def test_blenders_ik_stops_on_the_predicted_swing_boundary(addon, a, b, stated, precision):
    """Targets outside the ellipse (a swing of 2.9 rad) in 24 directions and in the direction
    of the largest difference: the solver's swing lies on the IK boundary
    `native_ik.boundary_radii` gives (within 1e-5 rad), in the target's direction, inside
    (or on) the add-on's ellipse, and where they differ most by what the README states."""
    native_ik = ro.addon_module("rq_blender.native_ik")
    obj = _swing_twist_bone((a, b), (-math.pi, math.pi))
    assert bpy.ops.pose.rq_copy_limits_to_ik() == {'FINISHED'}
    _, target = _ik_to(obj, "Arm")
    rest = _rest(obj, "Arm")
    predicted, worst = native_ik.boundary_difference(a, b)
    directions = [*np.linspace(0.0, 2.0 * math.pi, 24, endpoint=False), math.radians(worst)]
    measured = []
    for phi in directions:
        axis = mathutils.Vector((math.cos(phi), 0.0, math.sin(phi)))
        reach = mathutils.Quaternion(axis, 2.9) @ mathutils.Vector((0.0, 3.0, 0.0))
        target.location = rest @ reach
        swing, _ = _local_swing_twist(obj, "Arm")
        radius = float(np.hypot(*swing))
        direction = math.atan2(swing[1], swing[0])
        addon_radius, ik_radius = native_ik.boundary_radii(a, b, np.array([direction]))
        assert radius == pytest.approx(float(ik_radius[0]), abs=1e-5), math.degrees(phi)
        assert math.cos(direction - phi) > 1.0 - 1e-9  # the target's direction
        measured.append(math.degrees(radius - float(addon_radius[0])))
    assert max(measured) <= 1e-4  # the IK's boundary is inside (or on) the ellipse
    assert min(measured) >= predicted - 1e-3
    assert measured[-1] == pytest.approx(predicted, abs=1e-3)
    assert abs(measured[-1]) == pytest.approx(stated, abs=precision)


@pytest.mark.parametrize(("twist", "stop"), [(1.2, 0.5), (-1.2, -0.3)])
def test_blenders_ik_stops_at_the_twist_range(addon, twist, stop):
    """An orientation goal twisted about the bone's Y past the range (position reached at
    rest): the solver stops at the end of the copied range."""
    obj = _swing_twist_bone((1.0, 1.0), (-0.3, 0.5))
    assert bpy.ops.pose.rq_copy_limits_to_ik() == {'FINISHED'}
    ik, target = _ik_to(obj, "Arm")
    ik.use_rotation = True
    rest = _rest(obj, "Arm")
    target.matrix_world = rest @ mathutils.Matrix.Rotation(twist, 4, 'Y')
    target.location = rest @ mathutils.Vector((0.0, obj.data.bones["Arm"].length, 0.0))
    swing, measured = _local_swing_twist(obj, "Arm")
    assert measured == pytest.approx(stop, abs=1e-3)
    assert np.hypot(*swing) < 1e-3


def test_a_hinge_is_copied_and_reported_in_numbers(addon, capsys):
    """A hinge (Z semi-axis 0): the boundary radii are the X semi-axis along X and 0 off it
    (0 / 0 along X gave NaN, and the report read "differs from the ellipse by up to nan°")."""
    native_ik = ro.addon_module("rq_blender.native_ik")
    a = math.radians(140)
    addon_radius, ik_radius = native_ik.boundary_radii(a, 0.0, np.array([0.0, 0.3, 0.5 * math.pi]))
    assert addon_radius.tolist() == pytest.approx([a, 0.0, 0.0])
    assert ik_radius.tolist() == pytest.approx([a, 0.0, 0.0])
    obj = _swing_twist_bone((a, 0.0), (-0.3, 0.5))
    capsys.readouterr()
    assert bpy.ops.pose.rq_copy_limits_to_ik() == {'FINISHED'}
    out = capsys.readouterr().out
    assert "nan" not in out.lower(), out
    arm = obj.pose.bones["Arm"]
    assert (arm.ik_min_z, arm.ik_max_z) == pytest.approx((0.0, 0.0), abs=1e-6)


def test_what_cannot_be_copied_exactly_is_reported(addon, capsys):
    obj = _swing_twist_bone((4.0, 0.5), (0.2, 0.6))
    capsys.readouterr()
    assert bpy.ops.pose.rq_copy_limits_to_ik() == {'FINISHED'}
    arm = obj.pose.bones["Arm"]
    assert arm.ik_max_x == pytest.approx(math.pi, abs=1e-6)
    assert (arm.ik_min_y, arm.ik_max_y) == pytest.approx((0.0, 0.6), abs=1e-6)
    found = REPORT.findall(capsys.readouterr().out)
    assert found[-1][0] == "Warning" and found[-1][1].endswith("; some not exact"), found
    texts = [text for _, text in found]
    assert "Arm: the X semi-axis 229.2° is beyond the IK's 180°: copied as 180°" in texts
    assert any(
        t.startswith("Arm: the twist range [11.5°, 34.4°] became [0.0°, 34.4°]") for t in texts
    )


def test_itasc_is_warned_about(addon, capsys):
    """The iTaSC solver does not keep to the IK limits as the Standard solver does: an upper
    arm (along +Z) with a 60 x 20 degree ellipse copied, in a 2-bone IK chain reaching below
    and behind, swings 60 degrees about Z under iTaSC (a review's measurement) and stays on
    its 20 degrees under the Standard solver; the report says to use the Standard one."""
    data = bpy.data.armatures.new("Arm")
    obj = bpy.data.objects.new("Arm", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    root, upper, lower = (data.edit_bones.new(n) for n in ("Root", "Upper", "Lower"))
    root.head, root.tail = (0.0, 0.0, -0.3), (0.0, 0.0, 0.0)
    upper.head, upper.tail, upper.parent, upper.use_connect = (0, 0, 0), (0, 0, 1), root, True
    lower.head, lower.tail, lower.parent, lower.use_connect = (0, 0, 1), (0, 0, 2), upper, True
    bpy.ops.object.mode_set(mode='POSE')
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    arm = obj.pose.bones["Upper"]
    bone_modes.enter_mode(arm, "SWING_TWIST", ((0.0, 0.0), 0.0))
    arm["rq_swing_limit"] = [math.radians(60), math.radians(20)]
    arm["rq_twist_limit"] = [math.radians(-10), math.radians(30)]
    for pose_bone in obj.pose.bones:
        rigs.select(pose_bone, pose_bone.name == "Upper")
    obj.pose.ik_solver = 'ITASC'
    capsys.readouterr()
    assert bpy.ops.pose.rq_copy_limits_to_ik() == {'FINISHED'}
    found = REPORT.findall(capsys.readouterr().out)
    assert found[-1][0] == "Warning" and found[-1][1].endswith("; iTaSC does not keep to them")
    assert any(text.startswith("Arm uses the iTaSC IK solver") for _, text in found)
    target = bpy.data.objects.new("Goal", None)
    bpy.context.scene.collection.objects.link(target)
    target.location = (0.8, -0.01, -1.7)
    ik = obj.pose.bones["Lower"].constraints.new('IK')
    ik.target, ik.chain_count = target, 2
    swing, _ = _local_swing_twist(obj, "Upper")
    assert abs(swing[1]) > math.radians(50), np.degrees(swing)
    obj.pose.ik_solver = 'LEGACY'  # the Standard solver
    swing, _ = _local_swing_twist(obj, "Upper")
    assert (swing[0] / math.radians(60)) ** 2 + (swing[1] / math.radians(20)) ** 2 <= 1 + 1e-4


def test_bad_input_changes_nothing(addon, capsys):
    obj = _swing_twist_bone((0.9, 0.4), (-0.3, 0.5))
    native_ik = ro.addon_module("rq_blender.native_ik")
    arm = obj.pose.bones["Arm"]
    state = native_ik.ik_state(arm)
    rigs.select(arm, False)
    capsys.readouterr()
    assert bpy.ops.pose.rq_copy_limits_to_ik() == {'CANCELLED'}
    assert REPORT.findall(capsys.readouterr().out)[-1] == (
        "Warning",
        "Nothing copied: no selected bone is in Swing/Twist mode",
    )
    rigs.select(arm, True)
    arm["rq_twist_limit"] = [math.nan, 0.5]
    with pytest.raises(
        RuntimeError, match="Nothing changed: rq_twist_limit of Arm is not a number"
    ):
        bpy.ops.pose.rq_copy_limits_to_ik()
    assert native_ik.ik_state(arm) == state
