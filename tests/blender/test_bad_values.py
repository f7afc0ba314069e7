# SPDX-License-Identifier: GPL-3.0-or-later
"""Stored values no tool can use (NaN, inf, a wrong length, missing) are refused by every
operator with a message naming the bone and the property, and nothing changes; limits of any
sign and order convert without loss (`bone_modes.check_values`, the core's limits)."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro
from whole_state import differences, whole_state

FRAMES = (1.0, 5.0, 9.0)


def _rq_bone(value) -> bpy.types.Object:
    """One RQ bone (unkeyed) whose ``rq_vector`` is then set to ``value``."""
    obj = rigs.armature(["Spine"])
    ro.addon_module("rq_blender.bone_modes").enter_mode(obj.pose.bones[0], "RQ", (0.1, 0.2, 0.3))
    del obj.pose.bones[0]["rq_vector"]  # (a new length needs a new property)
    obj.pose.bones[0]["rq_vector"] = value
    return obj


def _keyed_swing_twist(limit_name: str, value) -> bpy.types.Object:
    """One keyed swing/twist bone whose (unkeyed) limit ``limit_name`` is set to ``value``."""
    obj = rigs.armature(["Spine"])
    ro.key_swing_twist(obj.pose.bones[0], [(f, (0.1 * f, 0.2), 3.0 * f) for f in FRAMES])
    del obj.pose.bones[0][limit_name]
    obj.pose.bones[0][limit_name] = value
    return obj


def _refused(obj: bpy.types.Object, operator, message: str, **kwargs) -> None:
    """``operator`` fails with ``message`` and leaves ``obj`` as it was (NaN included)."""
    obj.update_tag()
    bpy.context.view_layer.update()  # what a drawn frame does; not the operator's change
    before = whole_state(obj)
    with pytest.raises(RuntimeError, match=message):
        operator(**kwargs)
    after = whole_state(obj)
    assert repr(after) == repr(before), differences(before, after)


@pytest.mark.parametrize(
    "value, message",
    [
        ((math.nan, 0.0, 0.0), "rq_vector of Spine is not a number"),
        ((0.0, math.inf, 0.0), "rq_vector of Spine is infinite"),
        ((0.1, 0.2), "rq_vector of Spine has 2 values, not 3"),
    ],
)
@pytest.mark.parametrize(
    "operator, kwargs",
    [
        ("rq_set_mode", {"mode": "SWING_TWIST"}),
        ("rq_set_mode", {"mode": "QUATERNION"}),
        ("rq_bake", {}),
        ("rq_reparameterize", {}),
    ],
)
def test_operators_refuse_bad_parameters_and_change_nothing(
    addon, value, message, operator, kwargs
):
    _refused(_rq_bone(value), getattr(bpy.ops.pose, operator), message, **kwargs)


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("rq_swing_limit", (math.nan, 1.0), "rq_swing_limit of Spine is not a number"),
        ("rq_twist_limit", (0.0,), "rq_twist_limit of Spine has 1 values, not 2"),
        ("rq_twist_limit", (-math.inf, 1.0), "rq_twist_limit of Spine is infinite"),
    ],
)
@pytest.mark.parametrize(
    "operator",
    [
        "rq_set_mode",
        "rq_bake",
        "rq_reparameterize",
        "rq_spline_interpolate",
        "rq_continuity_filter",
    ],
)
def test_operators_refuse_bad_limits_and_change_nothing(addon, name, value, message, operator):
    kwargs = {"mode": "RQ"} if operator == "rq_set_mode" else {}
    _refused(_keyed_swing_twist(name, value), getattr(bpy.ops.pose, operator), message, **kwargs)


def test_entering_swing_twist_refuses_bad_stored_limits(addon):
    """Limits stay on a bone that leaves swing/twist; switching back reads them."""
    obj = rigs.armature(["Spine"])
    assert bpy.ops.pose.rq_set_mode(mode="SWING_TWIST") == {'FINISHED'}
    assert bpy.ops.pose.rq_set_mode(mode="QUATERNION") == {'FINISHED'}
    obj.pose.bones[0]["rq_twist_limit"] = (math.nan, 0.0)
    _refused(
        obj, bpy.ops.pose.rq_set_mode, "rq_twist_limit of Spine is not a number", mode="SWING_TWIST"
    )


def test_value_problems_and_reset(addon):
    modes = ro.addon_module("rq_blender.bone_modes")
    obj = _keyed_swing_twist("rq_twist_limit", (math.nan, 1.0))
    pose_bone = obj.pose.bones[0]
    del pose_bone["rq_swing"]
    pose_bone["rq_swing"] = "text"
    del pose_bone["rq_twist"]
    assert modes.value_problems(pose_bone) == [
        ("rq_swing", "rq_swing of Spine is not 2 numbers"),
        ("rq_twist", "rq_twist of Spine is missing"),
        ("rq_twist_limit", "rq_twist_limit of Spine is not a number"),
    ]
    for name, _ in modes.value_problems(pose_bone):
        modes.reset_property(pose_bone, name)
    assert modes.value_problems(pose_bone) == []
    assert tuple(pose_bone["rq_twist_limit"]) == pytest.approx((-math.pi, math.pi))
    assert pose_bone.id_properties_ui("rq_swing").as_dict()["subtype"] == 'ANGLE'
    with pytest.raises(ValueError, match="not a property of the add-on"):
        modes.reset_property(pose_bone, "location")


def test_inverted_twist_range_converts_there_and_back_keeping_every_frame(addon):
    """SWING_TWIST -> RQ -> SWING_TWIST with an upside-down twist range and a negative
    semi-axis: the pose Blender shows is kept at every frame (it used to raise)."""
    obj = rigs.armature(["Spine"])
    pose_bone = obj.pose.bones[0]
    ro.key_swing_twist(
        pose_bone,
        [
            (1, (0.3, 0.1), -0.5),
            (6, (0.6, -0.4), 0.9),
            (11, (-0.2, 0.7), 1.4),
            (16, (0.1, 0.0), 0.2),
        ],
    )
    pose_bone["rq_twist_limit"] = (math.radians(60), math.radians(45))
    pose_bone["rq_swing_limit"] = (1.0, -0.2)
    frames = range(1, 17)
    before = rigs.pose_matrices(obj, frames)
    assert np.abs(before[0] - before[-1]).max() > 1e-3  # the bone does move
    for mode in ("RQ", "SWING_TWIST"):
        assert bpy.ops.pose.rq_set_mode(mode=mode, strategy="SAMPLED") == {'FINISHED'}
        error = np.abs(rigs.pose_matrices(obj, frames) - before)
        assert (error <= rigs.matrix_bound(before)).all(), (mode, error.max())
    assert tuple(pose_bone["rq_twist_limit"]) == pytest.approx((math.radians(60), math.radians(45)))


def test_fix_limits_operator_sets_negative_axes_to_zero_and_swaps_an_inverted_range(addon):
    obj = rigs.armature(["Spine"])
    assert bpy.ops.pose.rq_set_mode(mode="SWING_TWIST") == {'FINISHED'}
    pose_bone = obj.pose.bones[0]
    pose_bone["rq_swing_limit"] = (-0.2, 1.0)
    pose_bone["rq_twist_limit"] = (1.0, 0.5)
    modes = ro.addon_module("rq_blender.bone_modes")
    assert len(modes.limit_warnings(*modes.joint_limits(pose_bone))) == 2
    assert bpy.ops.pose.rq_fix_limits(bone="Spine") == {'FINISHED'}
    assert tuple(pose_bone["rq_swing_limit"]) == pytest.approx((0.0, 1.0))
    assert tuple(pose_bone["rq_twist_limit"]) == pytest.approx((0.5, 1.0))
    assert modes.limit_warnings(*modes.joint_limits(pose_bone)) == []
    assert bpy.ops.pose.rq_fix_limits(bone="Spine") == {'CANCELLED'}  # nothing left to fix


def test_reset_property_operator(addon):
    obj = _rq_bone((math.nan, 0.0, 0.0))
    assert bpy.ops.pose.rq_reset_property(name="rq_vector", bone="Spine") == {'FINISHED'}
    assert tuple(obj.pose.bones[0]["rq_vector"]) == (0.0, 0.0, 0.0)
    with pytest.raises(RuntimeError, match="not a property of the add-on"):
        bpy.ops.pose.rq_reset_property(name="location", bone="Spine")
