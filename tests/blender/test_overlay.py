# SPDX-License-Identifier: GPL-3.0-or-later
"""The limits overlay's joint frames (`panels.overlay`): where each bone's limits are drawn.
(The drawing itself is tested in the GUI layer.)"""

import bpy
import mathutils
import numpy as np
import rigs
import rigs_operators as ro


def _frame(obj, name):
    return np.array(ro.addon_module("panels.overlay")._joint_frame(obj.pose.bones[name]))


def test_the_joint_frame_is_the_posed_parents_not_the_constrained_bones(addon):
    """The limits turn with the parent, not with the bone: under a constraint on the bone the
    frame was ``matrix @ matrix_basis^-1`` (the constrained matrix with the keyed rotation
    taken off), and an IK turned an elbow's limits 37-46 degrees away from the joint."""
    obj = rigs.armature(("Upper", "Lower"))
    upper, lower = obj.pose.bones["Upper"], obj.pose.bones["Lower"]
    for pose_bone, angle in ((upper, 0.4), (lower, 0.7)):
        pose_bone.rotation_mode = 'XYZ'
        pose_bone.rotation_euler = (angle, 0.2, -0.3)
    lower.location = (0.1, 0.0, 0.05)
    bpy.context.view_layer.update()
    unconstrained = np.array(lower.matrix @ lower.matrix_basis.inverted())
    # (with no constraint the two agree, the bone's location included)
    expected = unconstrained @ np.array(mathutils.Matrix.Translation(lower.location))
    assert np.abs(_frame(obj, "Lower") - expected).max() < 1e-6
    constraint = lower.constraints.new('COPY_ROTATION')
    constraint.target = obj
    constraint.subtarget = "Upper"
    bpy.context.view_layer.update()
    assert np.abs(_frame(obj, "Lower") - expected).max() < 1e-6  # the parent did not move
    turned = np.array(lower.matrix @ lower.matrix_basis.inverted())
    assert np.abs(turned - unconstrained).max() > 0.1  # (what the old frame would have drawn)
    upper.rotation_euler = (0.1, -0.5, 0.2)
    bpy.context.view_layer.update()
    parent = np.array(upper.matrix) @ np.linalg.inv(np.array(upper.bone.matrix_local))
    rest = np.array(lower.bone.matrix_local) @ np.array(
        mathutils.Matrix.Translation(lower.location)
    )
    assert np.abs(_frame(obj, "Lower") - parent @ rest).max() < 1e-6
