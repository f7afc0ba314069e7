# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_spline_interpolate``: the written Bezier F-curves, evaluated densely by Blender
itself (``FCurve.evaluate``), follow the core's RQ spline within the tolerance in rotation."""

import math

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro

RQ_PATH = 'pose.bones["{}"]["rq_vector"]'
TOLERANCE = math.radians(0.1)


def _keys_of(obj, bone):
    curves = ro.fcurve_map(obj)
    cols = [ro.key_values(curves[(RQ_PATH.format(bone), i)]) for i in range(3)]
    return cols[0][:, 0], np.stack([c[:, 1] for c in cols], axis=1)


def _blender_curve(obj, bone, t, action=None):
    curves = ro.fcurve_map(obj, action)
    return np.array(
        [[curves[(RQ_PATH.format(bone), i)].evaluate(float(x)) for i in range(3)] for x in t]
    )


def _assert_follows(rq, obj, bone, times, keys, kind, action=None):
    spline = rq.rq_spline(times, keys, kind)
    t = np.linspace(times[0], times[-1], int(20 * (times[-1] - times[0])) + 1)
    angle = rq.quat_angle_between(
        rq.rq_to_quat(_blender_curve(obj, bone, t, action)), spline.evaluate_quat(t)
    )
    assert angle.max() <= TOLERANCE * 1.05 + 1e-5, f"{kind}: {math.degrees(angle.max()):.3g} deg"
    return spline


@pytest.mark.parametrize("kind", ["CATMULL_ROM", "BEZIER", "BSPLINE"])
def test_curves_follow_the_core_spline_across_shells_and_spins(addon, rq, kind):
    # Crosses and sits on 2 pi, many revolutions, sub-frame keys.
    keys = ro.shell_keys(turning_axis=False)
    obj = ro.rq_rig({"A": keys})
    times = np.array([f for f, _ in keys])
    values = np.array([v for _, v in keys], dtype=np.float32).astype(np.float64)
    assert bpy.ops.pose.rq_spline_interpolate(kind=kind, tolerance=TOLERANCE) == {'FINISHED'}
    core_kind = kind.lower() if kind != "BEZIER" else "bezier"
    _assert_follows(rq, obj, "A", times, values, core_kind)
    written, _ = _keys_of(obj, "A")
    assert set(times) <= set(written)  # the keys stay; extra keys only where needed


def test_plain_segments_need_no_extra_keys(addon, rq):
    keys = [(1.0, (0.1, 0.2, 0.3)), (8.0, (0.5, -0.2, 0.9)), (15.0, (1.0, 0.4, -0.3)),
            (22.0, (0.2, 0.1, 0.0))]
    obj = ro.rq_rig({"A": keys})
    assert bpy.ops.pose.rq_spline_interpolate() == {'FINISHED'}
    times, values = _keys_of(obj, "A")
    np.testing.assert_array_equal(times, [1.0, 8.0, 15.0, 22.0])
    np.testing.assert_allclose(values, [v for _, v in keys], atol=1e-6)
    _assert_follows(rq, obj, "A", times, values, "catmull_rom")
    for fcurve in rigs.fcurves_of(obj):
        assert all(p.interpolation == 'BEZIER' for p in fcurve.keyframe_points)


def test_keys_more_than_a_revolution_apart_get_hidden_keys(addon, rq):
    axis = np.array([0.0, 0.6, 0.8])
    keys = [(1.0, 0.1 * axis), (5.0, 9.0 * axis), (9.0, 20.0 * axis)]
    obj = ro.rq_rig({"Spin": keys})
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    times, _ = _keys_of(obj, "Spin")
    assert len(times) > 3
    values = np.array([v for _, v in keys], dtype=np.float32).astype(np.float64)
    _assert_follows(rq, obj, "Spin", np.array([1.0, 5.0, 9.0]), values, "catmull_rom")


def test_hermite_uses_the_current_angular_velocity(addon, rq):
    keys = [(1.0, (0.1, 0.2, 0.3)), (6.0, (0.5, -0.2, 0.9)), (12.0, (1.0, 0.4, -0.3))]
    obj = ro.rq_rig({"A": keys}, interpolation='LINEAR')
    assert bpy.ops.pose.rq_spline_interpolate(kind='HERMITE') == {'FINISHED'}
    _, values = _keys_of(obj, "A")
    np.testing.assert_allclose(values[[0, -1]], [keys[0][1], keys[-1][1]], atol=1e-6)
    # Linear source: the tangent at the first key is the first segment's slope.
    fcurve = ro.fcurve_map(obj)[(RQ_PATH.format("A"), 0)]
    point = fcurve.keyframe_points[0]
    slope = (point.handle_right[1] - point.co[1]) / (point.handle_right[0] - point.co[0])
    assert slope == pytest.approx((0.5 - 0.1) / 5.0, rel=1e-3)


def test_turning_axis_at_the_shell_is_followed_or_reported(addon, rq, capsys):
    keys = ro.shell_keys()
    obj = ro.rq_rig({"A": keys})
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    times = np.array([f for f, _ in keys])
    values = np.array([v for _, v in keys], dtype=np.float32).astype(np.float64)
    try:
        _assert_follows(rq, obj, "A", times, values, "catmull_rom")
    except AssertionError:
        assert "beyond the tolerance on A" in capsys.readouterr().out


def test_single_key_cancels(addon):
    obj = ro.rq_rig({"One": [(3.0, (0.1, 0.2, 0.3))]})
    assert bpy.ops.pose.rq_spline_interpolate() == {'CANCELLED'}
    assert len(ro.fcurve_map(obj)[(RQ_PATH.format("One"), 0)].keyframe_points) == 1


def test_convert_native_animation_in_the_same_step(addon, rq):
    obj = rigs.armature(("Q",))
    rigs.key_rotation(obj.pose.bones["Q"], "QUATERNION", [
        (1, (1, 0, 0, 0)), (10, (0.7, 0.7, 0.1, 0.0)), (20, (0.0, 0.6, 0.8, 0.0)),
    ])
    before = rigs.pose_matrices(obj, [1.0, 10.0, 20.0])
    assert bpy.ops.pose.rq_spline_interpolate(convert_native=True) == {'FINISHED'}
    assert not any("rotation_quaternion" in p for p, _ in ro.fcurve_map(obj))
    after = rigs.pose_matrices(obj, [1.0, 10.0, 20.0])
    assert (np.abs(after - before) <= rigs.matrix_bound(before)).all()


def test_action_in_nla_strip(addon, rq):
    keys = ro.shell_keys(turning_axis=False)
    obj = ro.rq_rig({"A": keys})
    action = obj.animation_data.action
    rigs.push_to_nla(obj, frame_start=40)
    assert bpy.ops.pose.rq_spline_interpolate() == {'FINISHED'}
    values = np.array([v for _, v in keys], dtype=np.float32).astype(np.float64)
    _assert_follows(rq, obj, "A", np.array([f for f, _ in keys]), values, "catmull_rom", action)


@pytest.mark.skipif(not rigs.mocap_available(), reason=rigs.MOCAP_MISSING)
def test_cmu_clip_converted_and_interpolated(addon, rq):
    obj = rigs.import_mocap()
    names = [pb.name for pb in obj.pose.bones][:6]
    for pose_bone in obj.pose.bones:
        rigs.select(pose_bone, pose_bone.name in names)
    assert bpy.ops.pose.rq_spline_interpolate(convert_native=True) == {'FINISHED'}
    times, values = _keys_of(obj, names[1])
    _assert_follows(rq, obj, names[1], times[:200], values[:200], "catmull_rom")


def test_keys_away_from_the_shells_need_no_extra_keys_beyond_pi(addon, rq):
    # |v| about 3 pi + 0.4, more than the core's reparameterize_margin from 2 pi and 4 pi: the
    # spline is the plain Catmull-Rom of the keys, which Bezier keys reproduce exactly.
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    rng = np.random.default_rng(4)
    vectors = (3 * math.pi + 0.4) * axis + rng.normal(0.0, 0.3, (6, 3))
    keys = [(1.0 + 7.0 * i, tuple(v)) for i, v in enumerate(vectors)]
    obj = ro.rq_rig({"A": keys})
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    times, values = _keys_of(obj, "A")
    np.testing.assert_array_equal(times, [f for f, _ in keys])
    np.testing.assert_allclose(values, vectors, atol=1e-5)
    _assert_follows(rq, obj, "A", times, values, "catmull_rom")


SWING_PATH = 'pose.bones["{}"]["rq_swing"]'
TWIST_PATH = 'pose.bones["{}"]["rq_twist"]'


@pytest.mark.parametrize("kind", ["CATMULL_ROM", "BSPLINE"])
def test_swing_and_twist_channels(addon, rq, kind):
    # The swing goes past pi (away from the 2 pi shell); the twist is a plain angle, past 2 pi.
    frames = [1.0, 6.0, 11.0, 16.0, 21.0]
    swings = [(0.2, 0.1), (1.5, 0.5), (2.0, 1.5), (3.0, 2.5), (0.5, 3.0)]
    twists = [0.0, 0.8, -0.4, 2.5, 7.0]
    obj = rigs.armature(("S",))
    ro.key_swing_twist(obj.pose.bones["S"], list(zip(frames, swings, twists, strict=True)))
    assert bpy.ops.pose.rq_spline_interpolate(kind=kind, tolerance=TOLERANCE) == {'FINISHED'}
    curves = ro.fcurve_map(obj)
    assert (SWING_PATH.format("S"), 2) not in curves
    core_kind = kind.lower()
    times = np.array(frames)
    t = np.linspace(times[0], times[-1], 801)
    # swing: the planar RQ spline of (r_x, 0, r_z)
    keys = np.array([(x, 0.0, z) for x, z in swings], dtype=np.float32).astype(np.float64)
    spline = rq.rq_spline(times, keys, core_kind)
    x, z = ([curves[(SWING_PATH.format("S"), i)].evaluate(float(f)) for f in t] for i in (0, 1))
    fitted = np.stack([x, np.zeros_like(x), z], axis=1)
    angle = rq.quat_angle_between(rq.rq_to_quat(fitted), spline.evaluate_quat(t))
    assert angle.max() <= TOLERANCE * 1.05 + 1e-5, math.degrees(angle.max())
    # twist: the scalar cubic of the same kind, exactly (no charts for an angle)
    twist_keys = np.array([(w, 0.0, 0.0) for w in twists], dtype=np.float32).astype(np.float64)
    scalar = rq.rq_spline(times, twist_keys, core_kind, max_extent=math.inf,
                          reparameterize_segments=False)
    twist = [curves[(TWIST_PATH.format("S"), 0)].evaluate(float(f)) for f in t]
    np.testing.assert_allclose(twist, scalar.evaluate(t)[:, 0], atol=1e-5)
    if kind == "CATMULL_ROM":
        written = ro.key_values(curves[(TWIST_PATH.format("S"), 0)])
        np.testing.assert_array_equal(written[:, 0], frames)
