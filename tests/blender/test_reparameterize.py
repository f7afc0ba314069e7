# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_reparameterize``: long rotation vectors of unanimated bones become the shortest
equivalent; the pose never changes; animated channels are left alone."""

import math

import bpy
import numpy as np
import rigs
import rigs_operators as ro

TWO_PI = 2.0 * math.pi
AXIS = np.array([0.36, -0.48, 0.8])


def _posed_rig(vectors):
    """One unanimated RQ bone per vector (not chained)."""
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    obj = rigs.armature(tuple(f"B{i}" for i in range(len(vectors))), chain=False)
    for pose_bone, vector in zip(obj.pose.bones, vectors, strict=True):
        bone_modes.enter_mode(pose_bone, "RQ", tuple(vector))
    return obj


def _vectors(obj):
    return np.array([list(pb["rq_vector"]) for pb in obj.pose.bones])


def test_long_vectors_become_shortest_and_poses_stay(addon):
    lengths = [5.0, TWO_PI, 3 * TWO_PI + 1.0, 2.0, math.pi + 0.01]
    obj = _posed_rig([length * AXIS for length in lengths])
    before = rigs.pose_matrices(obj, [1.0])
    assert bpy.ops.pose.rq_reparameterize() == {'FINISHED'}
    after = rigs.pose_matrices(obj, [1.0])
    assert (np.abs(after - before) <= rigs.matrix_bound(before)).all()
    expected = [5.0 - TWO_PI, 0.0, 1.0, 2.0, math.pi + 0.01 - TWO_PI]
    np.testing.assert_allclose(_vectors(obj), np.outer(expected, AXIS), atol=1e-6)


def test_threshold_leaves_vectors_below_it(addon):
    obj = _posed_rig([4.0 * AXIS, 5.0 * AXIS])
    assert bpy.ops.pose.rq_reparameterize(threshold=4.5) == {'FINISHED'}
    np.testing.assert_allclose(_vectors(obj), np.outer([4.0, 5.0 - TWO_PI], AXIS), atol=1e-6)


def test_animated_channels_are_left_alone(addon):
    obj = ro.rq_rig({"A": [(1.0, 5.0 * AXIS), (10.0, 5.5 * AXIS)]})
    before = {k: ro.key_values(fc) for k, fc in ro.fcurve_map(obj).items()}
    assert bpy.ops.pose.rq_reparameterize() == {'FINISHED'}
    for key, fcurve in ro.fcurve_map(obj).items():
        np.testing.assert_array_equal(ro.key_values(fcurve), before[key])


def test_swings_within_limits_need_nothing(addon):
    obj = rigs.armature(("S",))
    ro.addon_module("rq_blender.bone_modes").enter_mode(
        obj.pose.bones["S"], "SWING_TWIST", ((2.0, -1.0), 0.5)
    )
    assert bpy.ops.pose.rq_reparameterize() == {'FINISHED'}
    np.testing.assert_allclose(list(obj.pose.bones["S"]["rq_swing"]), (2.0, -1.0))


def test_wrong_context(addon):
    obj = rigs.armature(("Native",))
    assert bpy.ops.pose.rq_reparameterize() == {'CANCELLED'}
    bpy.ops.object.mode_set(mode='OBJECT')
    assert not bpy.ops.pose.rq_reparameterize.poll()
    assert obj.pose.bones["Native"].rotation_mode == 'QUATERNION'
