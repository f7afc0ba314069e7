# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_spline_interpolate``: the written Bezier F-curves, evaluated densely by Blender
itself (``FCurve.evaluate``), follow the core's RQ spline within the tolerance in rotation."""

import math
import re

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
    keys = [
        (1.0, (0.1, 0.2, 0.3)),
        (8.0, (0.5, -0.2, 0.9)),
        (15.0, (1.0, 0.4, -0.3)),
        (22.0, (0.2, 0.1, 0.0)),
    ]
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


def _random_axes_on_the_shell():
    rng = np.random.default_rng(9)
    axes = rng.normal(size=(12, 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    vectors = 2.0 * math.pi * axes  # every key is the identity, on the shell
    vectors[1::3] *= 1.0 + rng.uniform(-0.08, 0.08, (4, 1))  # some next to it
    return list(zip(1.0 + 5.0 * np.arange(12), vectors, strict=True))


@pytest.mark.parametrize(
    "keys",
    [ro.shell_keys(), _random_axes_on_the_shell()],
    ids=["shell-keys", "random-axes-on-the-shell"],
)
def test_fast_turns_at_the_shell_are_followed_or_reported_honestly(addon, rq, capsys, keys):
    # The axis turns at up to 20 radians per frame next to the identity on the shell: a held
    # jump stands still for 0.0101 frames, and one continuous chart swings along the shell.
    # Whatever is left must be reported, as measured.
    obj = ro.rq_rig({"A": keys})
    times, values = _keys_of(obj, "A")
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    out = capsys.readouterr().out
    spline = rq.rq_spline(times, values, "catmull_rom")
    deviation = _dense_deviation(rq, obj, RQ_PATH.format("A"), 3, spline)
    reported = math.radians(float(re.findall(r"largest deviation ([0-9.e+-]+) degrees", out)[-1]))
    assert reported >= 0.95 * deviation - 1e-5, (reported, deviation)
    if deviation > TOLERANCE * 1.05 + 1e-5:
        assert "beyond the tolerance on A" in out


def test_single_key_changes_nothing(addon):
    # Done with nothing to change (the redo panel's B-Spline on two keys lands here too).
    obj = ro.rq_rig({"One": [(3.0, (0.1, 0.2, 0.3))]})
    assert bpy.ops.pose.rq_spline_interpolate() == {'FINISHED'}
    assert len(ro.fcurve_map(obj)[(RQ_PATH.format("One"), 0)].keyframe_points) == 1


def test_convert_native_animation_in_the_same_step(addon, rq):
    obj = rigs.armature(("Q",))
    rigs.key_rotation(
        obj.pose.bones["Q"],
        "QUATERNION",
        [
            (1, (1, 0, 0, 0)),
            (10, (0.7, 0.7, 0.1, 0.0)),
            (20, (0.0, 0.6, 0.8, 0.0)),
        ],
    )
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


def test_convert_native_leaves_swing_twist_bones_in_their_mode(addon):
    obj = rigs.armature(("Q", "S"))
    rigs.key_rotation(
        obj.pose.bones["Q"],
        "QUATERNION",
        [
            (1, (1, 0, 0, 0)),
            (10, (0.7, 0.7, 0.1, 0.0)),
            (20, (0.0, 0.6, 0.8, 0.0)),
        ],
    )
    ro.key_swing_twist(
        obj.pose.bones["S"],
        [
            (1, (0.1, 0.2), 0.3),
            (10, (0.4, 0.1), 0.2),
            (20, (0.2, 0.5), -0.1),
        ],
    )
    for pose_bone in obj.pose.bones:
        rigs.select(pose_bone, True)
    assert bpy.ops.pose.rq_spline_interpolate(convert_native=True) == {'FINISHED'}
    modes = ro.addon_module("rq_blender.bone_modes")
    assert [modes.current_mode(pb) for pb in obj.pose.bones] == ["RQ", "SWING_TWIST"]


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
    scalar = rq.rq_spline(
        times, twist_keys, core_kind, max_extent=math.inf, reparameterize_segments=False
    )
    twist = [curves[(TWIST_PATH.format("S"), 0)].evaluate(float(f)) for f in t]
    np.testing.assert_allclose(twist, scalar.evaluate(t)[:, 0], atol=1e-5)
    if kind == "CATMULL_ROM":
        written = ro.key_values(curves[(TWIST_PATH.format("S"), 0)])
        np.testing.assert_array_equal(written[:, 0], frames)


# --- Chart changes as held jumps (a CONSTANT key, the equivalent vector 0.0101 frames later) ---


def _written(obj, path, size):
    """``(times, values (n, size), constant (n,) bool)`` of a vector's channels, checking
    that they are keyed at the same frames and hold (CONSTANT) at the same keys."""
    curves = ro.fcurve_map(obj)
    cols = [curves[(path, i)] for i in range(size)]
    keys = [ro.key_values(c) for c in cols]
    for other in keys[1:]:
        np.testing.assert_array_equal(other[:, 0], keys[0][:, 0])
    constant = [np.array([p.interpolation == 'CONSTANT' for p in c.keyframe_points]) for c in cols]
    for other in constant[1:]:
        np.testing.assert_array_equal(other, constant[0])
    return keys[0][:, 0], np.stack([k[:, 1] for k in keys], axis=1), constant[0]


def _dense_deviation(rq, obj, path, size, spline, planar=False):
    """Largest rotation angle between the written channels and ``spline``: numpy's
    evaluation (``fcurve_math``) at 50 samples per frame and every 0.0005 frames within 0.03
    of each key, and Blender's ``FCurve.evaluate`` on every 7th of those samples and at every
    sample within 0.03 of a held jump (which must agree with numpy's)."""
    animdata = ro.addon_module("rq_blender.animdata")
    fcurve_math = ro.addon_module("rq_rotation.keyframes.fcurve_math")
    curves = ro.fcurve_map(obj)
    cols = [curves[(path, i)] for i in range(size)]
    times, _, constant = _written(obj, path, size)
    near = (times[:, None] + np.arange(-0.03, 0.0301, 0.0005)).ravel()
    t = np.concatenate(
        [np.linspace(times[0], times[-1], int(50 * (times[-1] - times[0])) + 1), near]
    )
    t = np.unique(t[(t >= times[0]) & (t <= times[-1])].astype(np.float32)).astype(np.float64)

    def as_vectors(values):
        if planar:
            return np.stack([values[:, 0], np.zeros(len(values)), values[:, 1]], axis=1)
        return values

    fitted = as_vectors(
        np.stack([fcurve_math.evaluate(animdata.read_keys(c), t) for c in cols], axis=1)
    )
    angle = rq.quat_angle_between(rq.rq_to_quat(fitted), spline.evaluate_quat(t))
    jumps = times[:-1][constant[:-1]]
    subset = np.zeros(len(t), dtype=bool)
    subset[::7] = True
    if len(jumps):
        subset |= np.abs(t[:, None] - jumps[None, :]).min(axis=1) <= 0.03
    native = as_vectors(np.array([[c.evaluate(float(x)) for c in cols] for x in t[subset]]))
    np.testing.assert_allclose(native, fitted[subset], atol=2e-5 * max(1.0, np.abs(fitted).max()))
    blender_angle = rq.quat_angle_between(rq.rq_to_quat(native), spline.evaluate_quat(t[subset]))
    return max(angle.max(), blender_angle.max())


def _jumps_reported(out):
    found = re.findall(r"(\d+) held jumps? between charts", out)
    assert found, out
    return int(found[-1])


def _walk(rng, n, step, start):
    return start + np.cumsum(rng.normal(0.0, step, (n, 3)), axis=0)


@pytest.mark.parametrize(
    ("kind", "seed"), [("CATMULL_ROM", 3), ("CATMULL_ROM", 11), ("BSPLINE", 5), ("BEZIER", 8)]
)
def test_random_walks_through_the_shells_follow_the_spline(addon, rq, capsys, kind, seed):
    # Walks around the 2 pi shell, keyed every 4 frames: charts change often, most of them
    # as held jumps, some where the bone turns fast (lifted into the keys' chart).
    rng = np.random.default_rng(seed)
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    frames = 1.0 + 4.0 * np.arange(30)
    walks = {f"W{i}": _walk(rng, len(frames), 0.7, 2.0 * math.pi * axis) for i in range(4)}
    obj = ro.rq_rig({name: list(zip(frames, walk, strict=True)) for name, walk in walks.items()})
    stored = {name: _keys_of(obj, name) for name in walks}  # float32, as Blender keeps them
    assert bpy.ops.pose.rq_spline_interpolate(kind=kind, tolerance=TOLERANCE) == {'FINISHED'}
    out = capsys.readouterr().out
    assert "beyond the tolerance" not in out
    assert _jumps_reported(out) > 0
    for name, (times, values) in stored.items():
        spline = rq.rq_spline(times, values, kind.lower())
        written, _, _ = _written(obj, RQ_PATH.format(name), 3)
        assert set(times) <= set(written)
        deviation = _dense_deviation(rq, obj, RQ_PATH.format(name), 3, spline)
        assert deviation <= TOLERANCE * 1.05 + 1e-5, f"{name}: {math.degrees(deviation):.3g} deg"


def test_held_jumps_are_constant_keys_a_hundredth_of_a_frame_before_the_change(addon, rq):
    rng = np.random.default_rng(2)
    frames = 1.0 + 6.0 * np.arange(20)
    walk = _walk(rng, len(frames), 0.5, np.array([0.0, 0.0, 2.0 * math.pi]))
    obj = ro.rq_rig({"A": list(zip(frames, walk, strict=True))})
    times, values = _keys_of(obj, "A")
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    written, vectors, constant = _written(obj, RQ_PATH.format("A"), 3)
    assert constant.any()
    held = np.flatnonzero(constant)
    gaps = written[held + 1] - written[held]
    assert (gaps >= 0.01).all() and (gaps < 0.012).all()
    # The two keys of a jump: nearly the same rotation, RQ values in different charts.
    angle = rq.quat_angle_between(rq.rq_to_quat(vectors[held]), rq.rq_to_quat(vectors[held + 1]))
    assert angle.max() < 0.01
    shells = np.abs(
        np.linalg.norm(vectors[held], axis=1) - np.linalg.norm(vectors[held + 1], axis=1)
    )
    assert shells.min() > 2.0
    spline = rq.rq_spline(times, values, "catmull_rom")
    assert _dense_deviation(rq, obj, RQ_PATH.format("A"), 3, spline) <= TOLERANCE * 1.05 + 1e-5


def test_keys_exactly_on_the_shell_with_turning_axes(addon, rq, capsys):
    # Keys at the identity on the shell, the axis turning 20 degrees from one to the next,
    # some keys just inside or outside the shell.
    phase = np.radians(20.0) * np.arange(12)
    axes = np.stack([np.cos(phase), np.sin(phase), 0.4 * np.ones(12)], axis=1)
    vectors = 2.0 * math.pi * axes / np.linalg.norm(axes, axis=1, keepdims=True)
    vectors[1::3] *= 1.05
    vectors[2::4] *= 0.97
    obj = ro.rq_rig({"S": list(zip(1.0 + 6.0 * np.arange(12), vectors, strict=True))})
    times, values = _keys_of(obj, "S")
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    assert "beyond the tolerance" not in capsys.readouterr().out
    spline = rq.rq_spline(times, values, "catmull_rom")
    assert _dense_deviation(rq, obj, RQ_PATH.format("S"), 3, spline) <= TOLERANCE * 1.05 + 1e-5


def test_many_revolutions_with_a_wobbling_axis(addon, rq, capsys):
    # Twelve turns in 60 frames (fast through every shell: lifted, not held) with an axis
    # that wobbles, then slowly back through the shells (held jumps).
    frames = np.concatenate([1.0 + 3.0 * np.arange(21), 61.0 + 8.0 * np.arange(1, 12)])
    angle = np.concatenate(
        [np.linspace(0.3, 24.0 * math.pi, 21), np.linspace(24.0 * math.pi, 20.0 * math.pi, 12)[1:]]
    )
    phase = 0.3 * np.arange(len(frames))
    axis = np.stack([0.3 * np.cos(phase), 0.3 * np.sin(phase), np.ones(len(frames))], axis=1)
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    obj = ro.rq_rig({"Spin": list(zip(frames, angle[:, None] * axis, strict=True))})
    times, values = _keys_of(obj, "Spin")
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    assert "beyond the tolerance" not in capsys.readouterr().out
    spline = rq.rq_spline(times, values, "catmull_rom")
    deviation = _dense_deviation(rq, obj, RQ_PATH.format("Spin"), 3, spline)
    assert deviation <= TOLERANCE * 1.05 + 1e-5, math.degrees(deviation)


def test_swing_through_the_shell_jumps_on_both_channels(addon, rq, capsys):
    frames = 1.0 + 6.0 * np.arange(12)
    radius = np.array([3.5, 4.6, 5.6, 6.1, 6.5, 6.0, 5.2, 6.3, 6.6, 5.9, 4.8, 4.0])
    phase = 0.45 * np.arange(12)
    swings = np.stack([radius * np.cos(phase), radius * np.sin(phase)], axis=1)
    obj = rigs.armature(("S",))
    ro.key_swing_twist(
        obj.pose.bones["S"], [(f, tuple(s), 0.0) for f, s in zip(frames, swings, strict=True)]
    )
    curves = ro.fcurve_map(obj)
    stored = np.stack(
        [ro.key_values(curves[(SWING_PATH.format("S"), i)])[:, 1] for i in range(2)], axis=1
    )
    assert bpy.ops.pose.rq_spline_interpolate(tolerance=TOLERANCE) == {'FINISHED'}
    out = capsys.readouterr().out
    assert _jumps_reported(out) > 0
    assert "beyond the tolerance" not in out
    _, _, constant = _written(obj, SWING_PATH.format("S"), 2)  # both channels at once
    assert constant.any()
    keys = np.stack([stored[:, 0], np.zeros(len(stored)), stored[:, 1]], axis=1)
    spline = rq.rq_spline(frames, keys, "catmull_rom")
    deviation = _dense_deviation(rq, obj, SWING_PATH.format("S"), 2, spline, planar=True)
    assert deviation <= TOLERANCE * 1.05 + 1e-5, math.degrees(deviation)


def test_key_values_are_each_parameters_values_at_its_keys(addon):
    """`parameter_splines.key_values` evaluates every parameter of a name in one stacked pass:
    the same values as each parameter's own `ParameterCurves.values`, also for a component
    keyed at other frames, one without keys, a curve with a modifier (Blender evaluates it)
    and the swing/twist parameters."""
    parameter_curves = ro.addon_module("rq_blender.parameter_curves")
    parameter_splines = ro.addon_module("rq_blender.parameter_splines")
    obj = ro.rq_rig(
        {
            "A": [(1.0, (0.1, 0.2, 0.3)), (7.0, (2.0, -1.0, 0.5)), (12.0, (4.0, 1.0, -3.0))],
            "B": [(2.0, (0.3, 0.0, -0.2)), (9.0, (-0.5, 1.5, 0.4))],
        },
        chain=False,
    )
    curves = ro.fcurve_map(obj)
    curves[(RQ_PATH.format("A"), 1)].keyframe_points.insert(4.0, 0.7)  # another key time
    curves[(RQ_PATH.format("B"), 2)].modifiers.new('NOISE')
    animdata = ro.addon_module("rq_blender.animdata")
    (use,) = animdata.actions_of(obj)
    animdata.fcurve_owner(use).fcurves.remove(curves[(RQ_PATH.format("B"), 0)])  # no keys
    twist_bone = rigs.armature(("S",), chain=False)
    ro.key_swing_twist(
        twist_bone.pose.bones["S"], [(1.0, (0.2, -0.4), 0.5), (6.0, (1.5, 0.3), -2.0)]
    )
    found = []
    for armature in (obj, twist_bone):
        (use,) = animdata.actions_of(armature)
        for bone in armature.pose.bones:
            for name in ("rq_vector", "rq_swing", "rq_twist"):
                read = parameter_curves.read_parameter(armature, use, bone.name, name)
                if read is not None:
                    found.append(read)
    assert sorted((p.bone_name, p.name) for p in found) == [
        ("A", "rq_vector"), ("B", "rq_vector"), ("S", "rq_swing"), ("S", "rq_twist"),
    ]  # fmt: skip
    times = [p.key_times() for p in found]
    got = parameter_splines.key_values(found, times)
    for parameter, at, values in zip(found, times, got, strict=True):
        assert np.array_equal(values, parameter.values(at)), (parameter.bone_name, parameter.name)
