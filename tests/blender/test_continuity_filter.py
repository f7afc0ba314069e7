# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_continuity_filter``: keys jump to the equivalent vector nearest the previous key;
the poses at the keys never change."""

import math

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro

TWO_PI = 2.0 * math.pi
RQ_PATH = 'pose.bones["{}"]["rq_vector"]'


def _continuous_spiral(n=12, start=1.0, step=1.5):
    """RQ keys winding through several shells with steps well under half a turn."""
    t = np.arange(n)
    axis = np.stack([np.cos(0.4 * t), np.sin(0.4 * t), 0.5 * np.ones(n)], axis=1)
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    angles = 0.3 + 0.9 * t  # past 4 pi
    return [(start + step * i, angles[i] * axis[i]) for i in range(n)]


def _jumpy(keys, rq):
    """The same rotations, each reduced into the first shell (|v| <= pi): 2 pi jumps."""
    return [(f, rq.reparameterize(v)) for f, v in keys]


def _vectors(obj, bone, action=None):
    curves = ro.fcurve_map(obj, action)
    cols = [ro.key_values(curves[(RQ_PATH.format(bone), i)]) for i in range(3)]
    return cols[0][:, 0], np.stack([c[:, 1] for c in cols], axis=1)


def _assert_poses(before, after):
    error = np.abs(after - before)
    assert (error <= rigs.matrix_bound(before)).all(), f"max error {error.max():.3g}"


def test_filter_restores_continuity_and_keeps_poses_at_keys(addon, rq):
    smooth = _continuous_spiral()
    # A key sitting exactly on the 2 pi shell (the identity) and a sub-frame key.
    smooth[7] = (smooth[7][0] + 0.25, TWO_PI * smooth[7][1] / np.linalg.norm(smooth[7][1]))
    reverse = [(f, -v) for (f, _), (_, v) in zip(smooth, _continuous_spiral(), strict=True)]
    obj = ro.rq_rig({"A": _jumpy(smooth, rq), "B": _jumpy(reverse, rq)})
    times = [f for f, _ in smooth]
    before = rigs.pose_matrices(obj, times)
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    _assert_poses(before, rigs.pose_matrices(obj, times))
    _, values = _vectors(obj, "A")
    np.testing.assert_allclose(values, np.array([v for _, v in smooth]), atol=2e-6)


def test_free_handles_move_with_their_keys(addon, rq):
    smooth = _continuous_spiral(6)
    obj = ro.rq_rig({"A": _jumpy(smooth, rq)})
    curves = ro.fcurve_map(obj)
    fcurve = curves[(RQ_PATH.format("A"), 0)]
    for point in fcurve.keyframe_points:
        point.handle_left_type = point.handle_right_type = 'FREE'
        point.handle_left = (point.co[0] - 0.5, point.co[1] + 0.1)
        point.handle_right = (point.co[0] + 0.5, point.co[1] - 0.2)
    fcurve.update()
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    for point in fcurve.keyframe_points:
        assert point.handle_left_type == 'FREE'
        assert point.handle_left[1] == pytest.approx(point.co[1] + 0.1, abs=1e-5)
        assert point.handle_right[1] == pytest.approx(point.co[1] - 0.2, abs=1e-5)


def test_partially_keyed_channels_get_keys_at_every_key_time(addon, rq):
    smooth = _continuous_spiral(8)
    obj = ro.rq_rig({"A": _jumpy(smooth, rq)})
    # Component 2 loses its keys at odd keys: its value there comes from interpolation.
    fcurve = ro.fcurve_map(obj)[(RQ_PATH.format("A"), 2)]
    for point in list(fcurve.keyframe_points)[1::2][::-1]:
        fcurve.keyframe_points.remove(point)
    times = [f for f, _ in smooth]
    before = rigs.pose_matrices(obj, times)
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    _assert_poses(before, rigs.pose_matrices(obj, times))
    assert len(fcurve.keyframe_points) == len(times)


def test_twist_unwraps_only_within_its_limits(addon):
    obj = rigs.armature(("Wide", "Default"), chain=False)
    twists = [0.0, 2.5, -2.0 + 0.2, -0.5, 1.0]  # 2.5 -> -1.8 is a jump of 2 pi - 1.98
    for name in ("Wide", "Default"):
        ro.key_swing_twist(
            obj.pose.bones[name], [(1.0 + 4 * i, (0.2, -0.1), t) for i, t in enumerate(twists)]
        )
    obj.pose.bones["Wide"]["rq_twist_limit"] = [-20.0, 20.0]
    times = [1.0 + 4 * i for i in range(len(twists))]
    before = rigs.pose_matrices(obj, times)
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    _assert_poses(before, rigs.pose_matrices(obj, times))
    curves = ro.fcurve_map(obj)
    wide = ro.key_values(curves[('pose.bones["Wide"]["rq_twist"]', 0)])[:, 1]
    default = ro.key_values(curves[('pose.bones["Default"]["rq_twist"]', 0)])[:, 1]
    np.testing.assert_allclose(wide, np.unwrap(twists), atol=1e-6)
    np.testing.assert_allclose(default, twists, atol=1e-6)


def test_action_in_nla_strip_is_filtered_in_its_own_time(addon, rq):
    smooth = _continuous_spiral()
    obj = ro.rq_rig({"A": _jumpy(smooth, rq)})
    action = obj.animation_data.action
    rigs.push_to_nla(obj, frame_start=20)
    scene_times = [f + 19.0 for f, _ in smooth]
    before = rigs.pose_matrices(obj, scene_times)
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    _assert_poses(before, rigs.pose_matrices(obj, scene_times))
    _, values = _vectors(obj, "A", action)
    np.testing.assert_allclose(values, np.array([v for _, v in smooth]), atol=2e-6)


def test_single_key_and_continuous_keys_change_nothing(addon):
    obj = ro.rq_rig({"One": [(3.0, (0.0, 7.0, 0.0))], "Two": _continuous_spiral(5)})
    before = {k: ro.key_values(fc) for k, fc in ro.fcurve_map(obj).items()}
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    for key, fcurve in ro.fcurve_map(obj).items():
        np.testing.assert_array_equal(ro.key_values(fcurve), before[key])


def test_no_rq_channels_cancels(addon):
    obj = rigs.armature(("Native",))
    rigs.key_rotation(obj.pose.bones["Native"], "XYZ", [(1, (0, 0, 0)), (5, (7, 0, 0))])
    assert bpy.ops.pose.rq_continuity_filter() == {'CANCELLED'}
    bpy.ops.object.mode_set(mode='OBJECT')
    assert not bpy.ops.pose.rq_continuity_filter.poll()


@pytest.mark.skipif(not rigs.mocap_available(), reason=rigs.MOCAP_MISSING)
def test_cmu_clip_jumps_are_removed(addon, rq):
    obj = rigs.import_mocap()
    assert bpy.ops.pose.rq_set_mode(mode='RQ', strategy='KEYS') == {'FINISHED'}
    # Reduce every key into the first shell: jumps wherever the clip passes |v| = pi.
    curves = ro.fcurve_map(obj)
    for path in {path for path, _ in curves if path.endswith('["rq_vector"]')}:
        fcurves = [curves[(path, i)] for i in range(3)]
        reduced = rq.reparameterize(np.stack([ro.key_values(fc)[:, 1] for fc in fcurves], axis=1))
        for i, fcurve in enumerate(fcurves):
            co = ro.key_values(fcurve)
            co[:, 1] = reduced[:, i]
            fcurve.keyframe_points.foreach_set("co", co.astype(np.float32).ravel())
            fcurve.update()
    frames = [float(f) for f in range(1, 996, 9)]
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    _assert_poses(before, rigs.pose_matrices(obj, frames))
    for (path, _), fcurve in ro.fcurve_map(obj).items():
        if path.endswith('["rq_vector"]'):
            assert np.abs(np.diff(ro.key_values(fcurve)[:, 1])).max() < math.pi, path


def test_filter_after_the_spline_operator_keeps_its_held_jumps(addon, rq):
    # The spline operator writes each chart change as a CONSTANT key and the equivalent
    # vector 0.0101 frames later; the filter must not fold them back into one chart.
    rng = np.random.default_rng(2)
    frames = 1.0 + 6.0 * np.arange(20)
    walk = TWO_PI * np.array([0.0, 0.6, 0.8]) + np.cumsum(rng.normal(0.0, 0.5, (20, 3)), axis=0)
    obj = ro.rq_rig({"A": list(zip(frames, walk, strict=True))})
    assert bpy.ops.pose.rq_spline_interpolate() == {'FINISHED'}
    curves = ro.fcurve_map(obj)
    assert any(
        p.interpolation == 'CONSTANT' for p in curves[(RQ_PATH.format("A"), 0)].keyframe_points
    )
    times, before = _vectors(obj, "A")
    samples = np.linspace(times[0], times[-1], 700)
    curve_before = [
        [curves[(RQ_PATH.format("A"), i)].evaluate(float(t)) for i in range(3)] for t in samples
    ]
    bpy.ops.pose.rq_continuity_filter()
    after_times, after = _vectors(obj, "A")
    np.testing.assert_array_equal(after_times, times)
    np.testing.assert_allclose(after, before, atol=1e-6)
    curves = ro.fcurve_map(obj)
    curve_after = [
        [curves[(RQ_PATH.format("A"), i)].evaluate(float(t)) for i in range(3)] for t in samples
    ]
    np.testing.assert_allclose(curve_after, curve_before, atol=1e-6)


def test_a_stepped_key_a_frame_apart_is_still_filtered(addon, rq):
    # Stepped (CONSTANT) blocking keys are no held jump: the filter still unwinds them.
    smooth = _continuous_spiral(6)
    obj = ro.rq_rig({"A": _jumpy(smooth, rq)}, interpolation='CONSTANT')
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    _, values = _vectors(obj, "A")
    np.testing.assert_allclose(values, np.array([v for _, v in smooth]), atol=2e-6)
