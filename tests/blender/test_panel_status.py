# SPDX-License-Identifier: GPL-3.0-or-later
"""What the bone panel says about a swing against its limits matches what the drivers pose,
hinges (a zero semi-axis) included; written values never show as "-0"."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rigs
from rigs_operators import addon_module

HINGE = (0.0, 1.5)  # bends about Z alone, up to 1.5 rad


@pytest.mark.parametrize(
    "swing, limit, icon, text",
    [
        ((0.3, 0.2), (1.0, 1.0), 'CHECKMARK', "Swing inside (36% of the limit)"),
        ((0.6, 0.8), (1.0, 1.0), 'DECORATE_KEYFRAME', "Swing on the limit"),
        ((1.2, 1.6), (1.0, 1.0), 'ERROR', "Swing clamped by 57.3°"),
        # A hinge: along its segment inside, on its ends on the limit (it read "on the limit"
        # for every bend).
        ((0.0, 1.2), HINGE, 'CHECKMARK', "Swing inside (80% of the limit)"),
        ((0.0, -1.5), HINGE, 'DECORATE_KEYFRAME', "Swing on the limit"),
        # Off the hinge's axis by 0.006 degrees: the drivers pose no swing at all (the radial
        # scaling's limit), which the panel said nothing of (the closest point is within 0.01).
        ((1e-4, 1.2), HINGE, 'ERROR', "Swing X must be 0 (its limit is 0): clamped by 68.8°"),
        ((0.0, 0.0), (0.0, 0.0), 'DECORATE_KEYFRAME', "Swing on the limit"),
    ],
)
def test_swing_status_says_what_the_drivers_pose(addon, swing, limit, icon, text):
    bone_panel = addon_module("panels.bone")
    assert bone_panel.swing_status(np.array(swing), np.array(limit)) == (icon, text)


def test_a_hinge_swing_off_its_axis_is_drawn_as_the_panel_says(addon):
    """The drivers' pose of the hinge above, read back: no rotation, as the message says
    (68.8 degrees, the whole bend, clamped away)."""
    bone_modes = addon_module("rq_blender.bone_modes")
    obj = rigs.armature(["Upper"])
    pose_bone = obj.pose.bones[0]
    bone_modes.enter_mode(pose_bone, "SWING_TWIST", ((1e-4, 1.2), 0.0))
    pose_bone["rq_swing_limit"] = list(HINGE)
    rigs.evaluate(obj)
    assert math.degrees(pose_bone.rotation_axis_angle[0]) < 1e-3


def test_written_parameters_store_no_negative_zero(addon):
    """A -0.0 is the same rotation but shows as "-0°" in the fields: stored as 0.0."""
    bone_modes = addon_module("rq_blender.bone_modes")
    obj = rigs.armature(["Upper"])
    pose_bone = obj.pose.bones[0]
    bone_modes.enter_mode(pose_bone, "SWING_TWIST", ((0.1, 0.2), 0.3))
    bone_modes.write_parameters(pose_bone, {"rq_swing": np.array([-0.0, 0.5]), "rq_twist": -0.0})
    assert [math.copysign(1.0, v) for v in pose_bone["rq_swing"]] == [1.0, 1.0]
    assert math.copysign(1.0, pose_bone["rq_twist"]) == 1.0
