# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_set_mode`` and swing/twist joint limits, and extra revolutions at the first key.

Limits that restrict nothing (the defaults) must never change the animation: the conversion
widens them to cover spins. User-set limits keep the stored keys inside them.
"""

import math

import bpy
import numpy as np
import rigs

TWO_PI = 2.0 * math.pi


def _assert_close(before, after, where=""):
    error = np.abs(after - before)
    assert (error <= rigs.matrix_bound(before)).all(), f"{where} max error {error.max():.3g}"


def _curve_values(obj, path, index):
    (fcurve,) = [
        fc for fc in rigs.fcurves_of(obj) if fc.data_path == path and fc.array_index == index
    ]
    return np.array([p.co[1] for p in fcurve.keyframe_points])


def test_twist_spinning_three_turns_keeps_every_frame(addon):
    obj = rigs.armature(["A"])
    pose_bone = obj.pose.bones["A"]
    frames = range(1, 62)
    # Three turns about the bone's Y (a twist) with a small swing, keyed on every frame.
    keys = [(f, (0.3 * math.sin(f / 5), 3 * TWO_PI * (f - 1) / 60, 0.2)) for f in frames]
    rigs.key_rotation(pose_bone, "YXZ", keys)
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_set_mode(mode="SWING_TWIST", strategy="KEYS") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "to swing/twist")
    twist = _curve_values(obj, 'pose.bones["A"]["rq_twist"]', 0)
    assert twist.max() > 5 * math.pi  # the spin is kept, not wrapped
    low, high = pose_bone["rq_twist_limit"]
    assert low <= -math.pi and high >= twist.max()
    assert bpy.ops.pose.rq_set_mode(mode="YXZ", strategy="KEYS") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "back")


def test_swing_spinning_past_two_pi_keeps_every_frame(addon):
    obj = rigs.armature(["A"])
    frames = range(1, 42)
    # A windmill: two turns about the bone's X (a swing, not a twist).
    keys = [(f, (2 * TWO_PI * (f - 1) / 40, 0.0, 0.1)) for f in frames]
    rigs.key_rotation(obj.pose.bones["A"], "XYZ", keys)
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_set_mode(mode="SWING_TWIST", strategy="KEYS") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "to swing/twist")
    swing_x = _curve_values(obj, 'pose.bones["A"]["rq_swing"]', 0)
    assert np.abs(swing_x).max() < 2 * math.pi  # the drivers pose swings below 2 pi only


def test_user_limited_bone_stays_inside_its_limits(addon):
    obj = rigs.armature(["A"])
    pose_bone = obj.pose.bones["A"]
    assert bpy.ops.pose.rq_set_mode(mode="SWING_TWIST") == {"FINISHED"}
    # A joint that twists "around the back" only, and swings at most 1 rad about X, 0.5 about Z.
    pose_bone["rq_twist_limit"] = [math.pi / 2, 3 * math.pi / 2]
    pose_bone["rq_swing_limit"] = [1.0, 0.5]
    assert bpy.ops.pose.rq_set_mode(mode="YXZ") == {"FINISHED"}
    # Twists of about -3.0, 2.0, 3.0, -2.5 have equivalents inside (+ 2 pi); 0.5 has none.
    # The swing about X of 0.4 fits; 0.9 about Z does not.
    twists = (-3.0, 2.0, 3.0, -2.5, 0.5)
    swings_z = (0.0, 0.0, 0.0, 0.0, 0.9)
    keys = [(1 + 5 * i, (0.4, t, z)) for i, (t, z) in enumerate(zip(twists, swings_z, strict=True))]
    rigs.key_rotation(pose_bone, "YXZ", keys)
    frames = [f for f, _ in keys]
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_set_mode(mode="SWING_TWIST", strategy="KEYS") == {"FINISHED"}
    after = rigs.pose_matrices(obj, frames)
    _assert_close(before[:4], after[:4], "keys with an equivalent inside the limits")
    assert np.abs(after[4] - before[4]).max() > 1e-3  # the last pose is out of reach
    twist = _curve_values(obj, 'pose.bones["A"]["rq_twist"]', 0)
    swing = np.stack([_curve_values(obj, 'pose.bones["A"]["rq_swing"]', i) for i in (0, 1)], 1)
    assert ((twist >= math.pi / 2 - 1e-6) & (twist <= 1.5 * math.pi + 1e-6)).all(), twist
    assert (((swing[:, 0] / 1.0) ** 2 + (swing[:, 1] / 0.5) ** 2) <= 1 + 1e-5).all(), swing
    assert list(pose_bone["rq_twist_limit"]) == [math.pi / 2, 3 * math.pi / 2]  # untouched


def test_extra_revolutions_at_the_first_key_are_kept(addon):
    obj = rigs.armature(["A", "B"])
    a, b = obj.pose.bones
    rigs.key_rotation(a, "XYZ", [(1, (2 * TWO_PI + 0.2, 0, 0)), (5, (2 * TWO_PI + 0.4, 0, 0))])
    rigs.key_rotation(b, "XYZ", [(1, (0, TWO_PI + 0.3, 0)), (5, (0, TWO_PI + 0.5, 0))])
    rigs.select(b, False)
    assert bpy.ops.pose.rq_set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    vector = _curve_values(obj, 'pose.bones["A"]["rq_vector"]', 0)
    assert np.allclose(vector, [2 * TWO_PI + 0.2, 2 * TWO_PI + 0.4], atol=1e-5)
    rigs.select(a, False)
    rigs.select(b, True)
    assert bpy.ops.pose.rq_set_mode(mode="SWING_TWIST", strategy="KEYS") == {"FINISHED"}
    twist = _curve_values(obj, 'pose.bones["B"]["rq_twist"]', 0)
    assert np.allclose(twist, [TWO_PI + 0.3, TWO_PI + 0.5], atol=1e-5)


def test_swing_twist_keys_outside_the_limits_convert_to_the_pose_blender_shows(addon):
    """Stored values outside the limits are posed clamped (radial swing scaling, twist
    clamp); leaving swing/twist and baking keep that pose, not the raw values."""
    obj = rigs.armature(["A"])
    pose_bone = obj.pose.bones["A"]
    bpy.ops.pose.rq_set_mode(mode="SWING_TWIST")
    pose_bone["rq_swing_limit"] = (0.6, 0.0)  # a hinge about X: a = 0.6, b = 0
    pose_bone["rq_twist_limit"] = (-0.2, 0.3)
    keys = {
        1: ((0.2, 0.0), 0.1),
        11: ((1.4, 0.0), -0.9),
        21: ((0.9, 0.7), 0.8),
        31: ((-2.0, 0.0), 0.25),
    }
    for frame, (swing, twist) in keys.items():
        pose_bone["rq_swing"], pose_bone["rq_twist"] = swing, twist
        pose_bone.keyframe_insert('["rq_swing"]', frame=frame)
        pose_bone.keyframe_insert('["rq_twist"]', frame=frame)
    frames = range(1, 32)
    before = rigs.pose_matrices(obj, frames)
    # The drivers do clamp: frame 21's swing has a component off the hinge, so no swing.
    bpy.context.scene.frame_set(21)
    posed = np.array(pose_bone.matrix_basis.to_quaternion())
    expected = addon.rq_rotation.swing_twist_to_quat([0.0, 0.0], 0.3)
    assert min(np.abs(posed - expected).max(), np.abs(posed + expected).max()) < 1e-6
    assert bpy.ops.pose.rq_set_mode(mode="QUATERNION", strategy="SAMPLED", tolerance=0.0) == {
        "FINISHED"
    }
    _assert_close(before, rigs.pose_matrices(obj, frames), "to quaternion")
