# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_bake``: RQ and swing/twist animation to native keys for export.

Poses are ``pose_bone.matrix`` (armature space) read with ``frame_set`` before and after. The
every-frame bake agrees within the float32 bound ``1e-5 + 2^-23 |v|`` (`rigs.matrix_bound`) at
every frame; the reduced bake within its angular tolerance at every frame.
"""

import math

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro

QUAT_PATH = 'pose.bones["{}"].rotation_quaternion'


def _assert_matches(before, after, where=""):
    error = np.abs(after - before)
    bad = error > rigs.matrix_bound(before)
    assert not bad.any(), f"{where}: max error {error.max():.3g} at {np.argwhere(bad)[:3]}"


def _quaternion_keys(obj, bone, action=None):
    curves = ro.fcurve_map(obj, action)
    keys = [ro.key_values(curves[(QUAT_PATH.format(bone), i)]) for i in range(4)]
    return keys[0][:, 0], np.stack([k[:, 1] for k in keys], axis=1)


def _no_parameter_curves(obj, action=None):
    return not any("rq_" in path for path, _ in ro.fcurve_map(obj, action))


def test_every_frame_bake_matches_shells_spins_and_subframe_keys(addon):
    rng = np.random.default_rng(3)
    obj = ro.rq_rig(
        {
            "Shell": ro.shell_keys(),
            "Random": [(f, rng.normal(0.0, 1.5, 3)) for f in (1.0, 5.5, 11.0, 16.0, 23.0)],
        }
    )
    frames = ro.frame_range(obj)
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_bake(target='QUATERNION', keys='EVERY_FRAME') == {'FINISHED'}
    _assert_matches(before, rigs.pose_matrices(obj, frames), "every frame")
    assert _no_parameter_curves(obj)
    for name in ("Shell", "Random"):
        assert obj.pose.bones[name].rotation_mode == 'QUATERNION'
        assert "rq_vector" not in obj.pose.bones[name]
        times, q = _quaternion_keys(obj, name)
        np.testing.assert_array_equal(times, frames)
        assert (np.einsum("ij,ij->i", q[1:], q[:-1]) > 0).all(), "quaternion sign flip"


@pytest.mark.parametrize("keys", ["EVERY_FRAME", "REDUCED"])
def test_bake_writes_the_curves_it_prepared_without_searching_the_action(addon, monkeypatch, keys):
    """Every curve the bake writes is one `conversion.apply_plan` prepared (reused or made)
    or wrote before: `animdata.write_keys` never searches the action (``FCurves.find`` scans
    every curve, quadratic over a rig's bones). The pose still matches at every frame."""
    animdata = ro.addon_module("rq_blender.animdata")
    real = animdata.write_keys
    given = []

    def recording(*args, **kwargs):
        given.append(kwargs.get("fcurve") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(animdata, "write_keys", recording)
    obj = ro.rq_rig({"Shell": ro.shell_keys(), "Turn": [(1.0, (0, 0, 0)), (9.0, (0, 3.0, 1.0))]})
    frames = ro.frame_range(obj)
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_bake(target='QUATERNION', keys=keys) == {'FINISHED'}
    assert len(given) >= 8 and all(given), given
    if keys == "EVERY_FRAME":
        _assert_matches(before, rigs.pose_matrices(obj, frames), "every frame")


def test_frame_range_bakes_those_frames_only(addon):
    """``use_frame_range`` with ``frame_start``/``frame_end`` (as ``nla.bake`` names them):
    keys on exactly those frames, also past the bone's last key, each matching the pose."""
    obj = ro.rq_rig({"Spin": ro.shell_keys()})
    last = max(ro.frame_range(obj))
    frames = [float(f) for f in range(5, int(last) + 4)]
    before = rigs.pose_matrices(obj, frames)
    result = bpy.ops.pose.rq_bake(
        target='QUATERNION', use_frame_range=True, frame_start=5, frame_end=int(last) + 3
    )
    assert result == {'FINISHED'}
    times, _ = _quaternion_keys(obj, "Spin")
    np.testing.assert_array_equal(times, frames)
    _assert_matches(before, rigs.pose_matrices(obj, frames), "frame range")


def test_a_frame_range_is_reported_where_it_cuts_keys_and_not_remembered(addon, capsys):
    """Keys outside the range are lost to the bake (the bone holds the range's end poses
    there): the report says so. And the range is not remembered: in Blender's window a range
    seen only in the redo panel cut the next bake (a button press) to it without a word.
    Blender keeps an operator's last properties in the window only, so headless what can be
    checked is the flag that keeps it from them (as for the conversion's strategy)."""
    obj = ro.rq_rig({"Spin": ro.shell_keys()})
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake(use_frame_range=True, frame_start=5, frame_end=12) == {'FINISHED'}
    out = capsys.readouterr().out
    assert "1 bone had keys outside frames 5-12, which now hold the range's end poses" in out
    times, _ = _quaternion_keys(obj, "Spin")
    assert (times[0], times[-1]) == (5.0, 12.0)
    for operator, names in (
        (bpy.ops.pose.rq_bake, ("use_frame_range", "frame_start", "frame_end")),
        (bpy.ops.pose.rq_set_mode, ("strategy",)),
    ):
        properties = operator.get_rna_type().properties
        assert all(properties[name].is_skip_save for name in names)


def test_frame_range_that_ends_before_it_starts_changes_nothing(addon):
    obj = ro.rq_rig({"Spin": ro.shell_keys()})
    before = rigs.pose_matrices(obj, ro.frame_range(obj))
    with pytest.raises(RuntimeError, match=r"ends \(4\) before it starts \(10\)"):
        bpy.ops.pose.rq_bake(use_frame_range=True, frame_start=10, frame_end=4)
    assert obj.pose.bones["Spin"]["rq_vector"] is not None
    _assert_matches(before, rigs.pose_matrices(obj, ro.frame_range(obj)), "refused")


@pytest.mark.parametrize("order", ["XYZ", "ZXY"])
def test_euler_bake_uses_nearest_equivalent_angles(addon, order):
    obj = ro.rq_rig({"Spin": ro.shell_keys((0.1, 0.2, 1.0))})
    frames = ro.frame_range(obj)
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_bake(target=order) == {'FINISHED'}
    _assert_matches(before, rigs.pose_matrices(obj, frames), order)
    curves = ro.fcurve_map(obj)
    euler = np.stack(
        [ro.key_values(curves[('pose.bones["Spin"].rotation_euler', i)])[:, 1] for i in range(3)],
        axis=1,
    )
    # Compat: a spin of many revolutions keeps winding instead of jumping back by 2 pi.
    assert np.abs(np.diff(euler, axis=0)).max() < math.pi
    assert np.abs(euler).max() > 4 * math.pi


def test_reduced_bake_stays_within_tolerance_at_every_frame(addon):
    rng = np.random.default_rng(5)
    tolerance = math.radians(0.5)
    keys = {
        f"B{i}": [(f, rng.normal(0.0, 1.0, 3)) for f in (1.0, 11.0, 20.5, 31.0, 41.0)]
        for i in range(3)
    }
    keys["Shell"] = ro.shell_keys()  # fast spins: nearly every frame stays
    obj = ro.rq_rig(keys, chain=False)
    frames = ro.frame_range(obj)
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_bake(keys='REDUCED', tolerance=tolerance) == {'FINISHED'}
    error = ro.matrix_angles(before, rigs.pose_matrices(obj, frames))
    assert error.max() <= tolerance * (1 + 1e-3) + 1e-5
    times, _ = _quaternion_keys(obj, "B0")
    assert len(times) < 0.75 * len(frames)


def test_swing_twist_bake(addon):
    obj = rigs.armature(("Arm",))
    ro.key_swing_twist(
        obj.pose.bones["Arm"],
        [
            (1.0, (0.3, -0.2), 0.5),
            (8.0, (2.6, 1.4), -2.0),
            (15.5, (-0.4, 0.1), 3.0),
            (20.0, (0, 0), 0),
        ],
    )
    frames = ro.frame_range(obj)
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_bake() == {'FINISHED'}
    _assert_matches(before, rigs.pose_matrices(obj, frames), "swing/twist")
    assert _no_parameter_curves(obj)
    assert "rq_swing" not in obj.pose.bones["Arm"]


def test_single_key_bakes_to_one_key(addon):
    obj = ro.rq_rig({"One": [(4.0, (0.5, 7.0, -0.2))]})
    before = rigs.pose_matrices(obj, [1.0, 4.0, 9.0])
    assert bpy.ops.pose.rq_bake() == {'FINISHED'}
    _assert_matches(before, rigs.pose_matrices(obj, [1.0, 4.0, 9.0]), "single key")
    times, _ = _quaternion_keys(obj, "One")
    np.testing.assert_array_equal(times, [4.0])


def test_action_in_nla_strip_bakes_in_its_own_time(addon):
    obj = ro.rq_rig({"A": ro.shell_keys(), "B": [(1.0, (0, 0, 0)), (12.0, (1.0, 2.0, 7.0))]})
    action = obj.animation_data.action
    scene_frames = [f + 29.0 for f in ro.frame_range(obj)]  # the action starts at frame 1
    rigs.push_to_nla(obj, frame_start=30)
    before = rigs.pose_matrices(obj, scene_frames)
    assert bpy.ops.pose.rq_bake() == {'FINISHED'}
    _assert_matches(before, rigs.pose_matrices(obj, scene_frames), "NLA strip")
    assert obj.animation_data.action is None
    assert _no_parameter_curves(obj, action)
    times, _ = _quaternion_keys(obj, "A", action)
    assert times[0] == 1.0  # the action's own time


def test_nothing_to_bake_changes_nothing(addon):
    obj = rigs.armature(("Native",))
    rigs.key_rotation(obj.pose.bones["Native"], "QUATERNION", [(1, (1, 0, 0, 0))])
    before = set(ro.fcurve_map(obj))
    assert bpy.ops.pose.rq_bake() == {'CANCELLED'}
    assert set(ro.fcurve_map(obj)) == before


def test_poll_needs_pose_mode_or_graph_editor(addon):
    obj = ro.rq_rig({"A": [(1.0, (0.1, 0.2, 0.3))]})
    bpy.ops.object.mode_set(mode='OBJECT')
    assert not bpy.ops.pose.rq_bake.poll()
    bpy.context.view_layer.objects.active = None
    assert not bpy.ops.pose.rq_bake.poll()
    assert "rq_vector" in obj.pose.bones["A"]


@pytest.mark.skipif(not rigs.mocap_available(), reason=rigs.MOCAP_MISSING)
def test_cmu_clip_round_trip_through_rq_bakes_back_exactly(addon):
    obj = rigs.import_mocap()
    frames = [float(f) for f in range(1, 996, 7)]
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_set_mode(mode='RQ', strategy='KEYS') == {'FINISHED'}
    assert bpy.ops.pose.rq_bake(target='QUATERNION') == {'FINISHED'}
    _assert_matches(before, rigs.pose_matrices(obj, frames), "CMU clip")
