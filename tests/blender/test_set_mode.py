# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_set_mode``: switching modes never moves a bone, animation included.

Poses are compared as ``pose_bone.matrix`` (armature space) before and after, within the
float32 bound ``1e-5 + 2^-23 |v|`` (`rigs.matrix_bound`), at the keys (KEYS strategy) or at
every frame (SAMPLED at tolerance 0, sources keyed on every frame).
"""

import math

import bpy
import numpy as np
import pytest
import rigs

NATIVE = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")
FRAMES = (1, 6, 13, 20)


def _random_values(rng, mode):
    if mode == "QUATERNION":
        q = rng.normal(size=4)
        return tuple(q / np.linalg.norm(q))
    if mode == "AXIS_ANGLE":
        return (rng.uniform(-4, 4), *rng.normal(size=3))
    return tuple(rng.uniform(-2.5, 2.5, 3))


def _keyed_rig(mode, seed=0, names=("A", "B")):
    rng = np.random.default_rng(seed)
    obj = rigs.armature(names)
    for pose_bone in obj.pose.bones:
        rigs.key_rotation(pose_bone, mode, [(f, _random_values(rng, mode)) for f in FRAMES])
    return obj


def _set_mode(**kwargs):
    return bpy.ops.pose.rq_set_mode(**kwargs)


def _assert_close(before, after, where=""):
    error = np.abs(after - before)
    bound = rigs.matrix_bound(before)
    assert (error <= bound).all(), f"{where} max error {error.max():.3g}"


@pytest.mark.parametrize("source", NATIVE)
def test_each_native_mode_to_rq_is_exact_at_keys_and_removes_old_curves(addon, source):
    obj = _keyed_rig(source, seed=NATIVE.index(source))
    before = rigs.pose_matrices(obj, FRAMES)
    assert _set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, FRAMES), source)
    paths = {fc.data_path for fc in rigs.fcurves_of(obj)}
    assert paths == {'pose.bones["A"]["rq_vector"]', 'pose.bones["B"]["rq_vector"]'}
    for fcurve in rigs.fcurves_of(obj):
        assert [p.co[0] for p in fcurve.keyframe_points] == list(FRAMES)


@pytest.mark.parametrize("target", ["RQ", "SWING_TWIST", "QUATERNION"])
def test_converted_curves_keep_their_channel_group(addon, target):
    """Channel groups are made differently on each release (``action_group`` on 4.2/4.3, an
    assigned ``FCurve.group`` on 4.4/4.5, ``group_name`` from 5.0): each bone's new curves
    land in the group its old curves were in (the bone's name, or "Object Transforms" where
    4.3's ``keyframe_insert`` puts them), at the group's old place; ungrouped curves (4.2's
    ``keyframe_insert``) get a group named after the bone."""
    obj = _keyed_rig("XYZ" if target == "QUATERNION" else "QUATERNION")
    groups_before = [group.name for group in rigs.channel_groups(obj)]
    old_group = {
        fc.data_path.split('"')[1]: fc.group.name if fc.group else fc.data_path.split('"')[1]
        for fc in rigs.fcurves_of(obj)
    }
    assert _set_mode(mode=target, strategy="KEYS") == {"FINISHED"}
    fcurves = rigs.fcurves_of(obj)
    assert len(fcurves) == 2 * (4 if target == "QUATERNION" else 3)
    for fcurve in fcurves:
        bone = fcurve.data_path.split('"')[1]
        assert fcurve.group is not None, fcurve.data_path
        assert fcurve.group.name == old_group[bone], fcurve.data_path
    after = [group.name for group in rigs.channel_groups(obj)]
    assert [name for name in after if name in groups_before] == groups_before


@pytest.mark.parametrize("target", NATIVE)
def test_rq_round_trip_to_each_native_mode_every_frame(addon, target):
    obj = _keyed_rig("XYZ", seed=3)
    frames = range(1, 21)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="RQ", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "to RQ")
    assert _set_mode(mode=target, strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), f"back to {target}")
    assert all(pb.rotation_mode == target for pb in obj.pose.bones)
    assert not any("rq_" in fc.data_path for fc in rigs.fcurves_of(obj))
    assert not any("rq_vector" in pb for pb in obj.pose.bones)


def test_native_to_native_sampled_tolerance_zero_every_frame(addon):
    obj = _keyed_rig("QUATERNION", seed=5)
    frames = range(1, 21)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="ZXY", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames))
    for fcurve in rigs.fcurves_of(obj):
        assert len(fcurve.keyframe_points) == 20


def _basis_angles(obj, frames):
    """Rotation of each bone's matrix_basis at each frame, as quaternions (F, B, 4)."""
    out = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        out.append([tuple(pb.matrix_basis.to_quaternion()) for pb in obj.pose.bones])
    return np.array(out)


@pytest.mark.parametrize("mode", ["RQ", "SWING_TWIST", "XYZ"])
def test_sampled_with_tolerance_stays_within_it_and_reduces_keys(addon, rq, mode):
    obj = rigs.armature(["A"])
    pose_bone = obj.pose.bones["A"]
    # A smooth, slow motion on every frame: reducible.
    keys = [(f, (0.8 * math.sin(f / 9), 0.5 * math.cos(f / 7), 0.02 * f)) for f in range(1, 41)]
    rigs.key_rotation(pose_bone, "XYZ" if mode != "XYZ" else "ZYX", keys)
    frames = range(1, 41)
    before = _basis_angles(obj, frames)
    tolerance = math.radians(0.5)
    assert _set_mode(mode=mode, strategy="SAMPLED", tolerance=tolerance) == {"FINISHED"}
    after = _basis_angles(obj, frames)
    error = rq.quat_angle_between(before, after)
    assert error.max() <= tolerance + 1e-6
    counts = [len(fc.keyframe_points) for fc in rigs.fcurves_of(obj)]
    assert max(counts) < 40, counts


def test_keys_more_than_half_a_turn_apart_keep_their_revolutions(addon):
    obj = rigs.armature(["A"])
    pose_bone = obj.pose.bones["A"]
    keys = [(1, (0, 0, 0)), (11, (4 * math.pi, 0, 0))]
    rigs.key_rotation(pose_bone, "XYZ", keys, interpolation="LINEAR")
    frames = range(1, 12)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    bpy.context.scene.frame_set(11)
    assert np.allclose(pose_bone["rq_vector"], (4 * math.pi, 0, 0), atol=1e-5)
    # Linear RQ keys on one axis follow the same spin in between.
    _assert_close(before, rigs.pose_matrices(obj, frames))
    assert _set_mode(mode="XYZ", strategy="KEYS") == {"FINISHED"}
    bpy.context.scene.frame_set(11)
    assert pose_bone.rotation_euler[0] == pytest.approx(4 * math.pi, abs=1e-5)


def test_keep_key_times_keeps_each_keys_interpolation(addon):
    # Bone A keyed on every channel at 1, 5, 9, 13: CONSTANT, LINEAR, BEZIER, BEZIER.
    # Bone B's W channel keyed at 1 and 13 only (an easing at 1, which numpy does not
    # evaluate), X at every time (LINEAR at 5): each key takes the first channel keyed there
    # (W, else X), easings becoming BEZIER.
    obj = rigs.armature(["A", "B"])
    a, b = obj.pose.bones
    keys = [(f, (math.cos(0.1 * f), math.sin(0.1 * f), 0.0, 0.0)) for f in (1, 5, 9, 13)]
    rigs.key_rotation(a, "QUATERNION", keys)
    rigs.key_rotation(b, "QUATERNION", keys[::3], indices=(0,))
    rigs.key_rotation(b, "QUATERNION", keys, indices=(1, 2, 3))
    for fcurve in rigs.fcurves_of(obj):
        points = fcurve.keyframe_points
        if '"A"' in fcurve.data_path:
            for point, how in zip(points, ("CONSTANT", "LINEAR", "BEZIER", "BEZIER"), strict=True):
                point.interpolation = how
        elif fcurve.array_index == 0:
            points[0].interpolation = "SINE"
        elif fcurve.array_index == 1:
            points[1].interpolation = "LINEAR"
    frames = range(1, 14)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    expected = {
        "A": ["CONSTANT", "LINEAR", "BEZIER", "BEZIER"],
        "B": ["BEZIER", "LINEAR"] + 2 * ["BEZIER"],
    }
    for fcurve in rigs.fcurves_of(obj):
        bone = "A" if '"A"' in fcurve.data_path else "B"
        assert [p.co[0] for p in fcurve.keyframe_points] == [1.0, 5.0, 9.0, 13.0]
        assert [p.interpolation for p in fcurve.keyframe_points] == expected[bone], bone
    at_keys = [0, 4, 8, 12]
    _assert_close(before[at_keys], rigs.pose_matrices(obj, frames)[at_keys])


def test_partially_keyed_channels(addon):
    obj = rigs.armature(["A", "B"])
    a, b = obj.pose.bones
    a.rotation_mode = "QUATERNION"
    a.rotation_quaternion = (0.9, 0.1, 0.3, -0.2)
    keys = [(1, (1, 0, 0, 0)), (9, (0.5, 0.5, 0.5, 0.5))]
    rigs.key_rotation(a, "QUATERNION", keys, indices=(0, 2))
    b.rotation_euler = (0.3, -0.4, 0.0)
    rigs.key_rotation(b, "YXZ", [(3, (0.3, -0.4, 0.2)), (7, (0.3, -0.4, 2.2))], indices=(2,))
    frames = range(1, 11)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="RQ", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames))
    assert _set_mode(mode="QUATERNION", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames))


def test_actions_in_nla_strips_convert_in_their_own_time(addon):
    obj = _keyed_rig("ZYX", seed=9, names=("A",))
    strip = rigs.push_to_nla(obj, frame_start=30)
    action = strip.action
    frames = range(30, 50)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="RQ", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames))
    keyed = rigs.fcurves_of(obj, action)
    assert {fc.data_path for fc in keyed} == {'pose.bones["A"]["rq_vector"]'}
    assert keyed[0].keyframe_points[0].co[0] == 1.0  # the action's own frame range


def test_blended_actions_are_reported(addon, capsys):
    """NLA blends each F-curve channel on its own: an active action at influence 0.5 over a
    strip blends Euler angles one way and RQ vectors another, so the converted pose changes
    where they blend (a review measured up to 33 degrees). The conversion says so; a strip
    alone, replacing at full influence, gets no such line."""
    obj = _keyed_rig("XYZ", seed=3, names=("A",))
    rigs.push_to_nla(obj)
    capsys.readouterr()
    assert _set_mode(mode="RQ", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    assert "blend" not in capsys.readouterr().out
    assert _set_mode(mode="XYZ", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    pose_bone = obj.pose.bones["A"]
    for frame, angle in ((1, 0.3), (9, -0.6)):
        pose_bone.rotation_euler = (angle, 0.2, 0.1)
        pose_bone.keyframe_insert("rotation_euler", frame=frame)
    obj.animation_data.action_influence = 0.5
    capsys.readouterr()
    assert _set_mode(mode="RQ", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    out = capsys.readouterr().out
    assert "action '" in out and "blends with the animation below" in out, out


def test_keep_key_times_says_where_keys_are_far_apart(addon, capsys):
    """Keep Key Times poses the bone exactly at its keys; between them the new channels
    interpolate in another parameterization (a review measured a steady spin, RQ to
    swing/twist, moved by 57 degrees between keys 115 degrees apart, with no word in the
    report). Keys farther apart than `conversion.KEY_GAP_NOTE` are named; close keys, and
    the same keys converted by Sample and Reduce, are not."""
    axis = np.array([0.3, 0.2, 0.9]) / np.linalg.norm([0.3, 0.2, 0.9])
    for step, noted in ((math.radians(115), True), (math.radians(5), False)):
        obj = rigs.armature(("A",))
        rigs.key_rotation(
            obj.pose.bones["A"], "AXIS_ANGLE", [(1 + 10 * k, (k * step, *axis)) for k in range(4)]
        )
        capsys.readouterr()
        assert _set_mode(mode="RQ") == {"FINISHED"}
        out = capsys.readouterr().out
        assert ("in-betweens may change" in out) == noted, out
        if noted:
            assert "Keys up to 115° apart on A" in out, out
            assert _set_mode(mode="QUATERNION", strategy="SAMPLED") == {"FINISHED"}
            assert "apart" not in capsys.readouterr().out
        bpy.data.objects.remove(obj)


def test_unkeyed_bones_just_change_mode(addon):
    obj = rigs.armature(["A"])
    pose_bone = obj.pose.bones["A"]
    pose_bone.rotation_mode = "XZY"
    pose_bone.rotation_euler = (0.4, 2.0, -1.0)
    before = rigs.pose_matrices(obj, [1])
    assert _set_mode(mode="SWING_TWIST") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, [1]))
    assert obj.animation_data is None or obj.animation_data.action is None
    assert _set_mode(mode="AXIS_ANGLE") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, [1]))


def test_unkeyed_bones_of_mixed_modes_keep_each_its_own_pose(addon):
    # Each bone's static rotation is its own (they are read for the whole armature at once),
    # also when an unselected bone sits between them.
    obj = rigs.armature(["A", "B", "C", "D"], chain=False)
    bones = obj.pose.bones
    for pose_bone, mode, values in (
        (bones["A"], "QUATERNION", (0.9, 0.1, 0.3, -0.2)),
        (bones["B"], "QUATERNION", (0.5, -0.5, 0.5, 0.5)),
        (bones["C"], "ZXY", (0.4, 2.0, -1.0)),
        (bones["D"], "AXIS_ANGLE", (2.5, 0.2, -0.7, 0.4)),
    ):
        pose_bone.rotation_mode = mode
        if mode == "QUATERNION":
            pose_bone.rotation_quaternion = values
        elif mode == "AXIS_ANGLE":
            pose_bone.rotation_axis_angle = values
        else:
            pose_bone.rotation_euler = values
    rigs.select(bones["B"], False)
    before = rigs.pose_matrices(obj, [1])
    assert _set_mode(mode="RQ") == {"FINISHED"}
    assert [pose_bone.rotation_mode for pose_bone in bones][1] == "QUATERNION"
    assert all("rq_vector" in bones[name] for name in "ACD")
    _assert_close(before, rigs.pose_matrices(obj, [1]))


def test_swing_twist_round_trip_every_frame(addon):
    obj = _keyed_rig("YZX", seed=11)
    frames = range(1, 21)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="SWING_TWIST", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "to swing/twist")
    assert _set_mode(mode="RQ", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "to RQ")
    assert _set_mode(mode="YZX", strategy="SAMPLED", tolerance=0.0) == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "back")


@pytest.mark.skipif(not rigs.mocap_available(), reason=rigs.MOCAP_MISSING)
def test_cmu_clip_to_rq_and_back_every_frame(addon):
    obj = rigs.import_mocap()
    assert len(obj.pose.bones) == 31
    modes = {pb.name: pb.rotation_mode for pb in obj.pose.bones}
    assert set(modes.values()) <= {"ZYX", "ZXY"}
    start, end = (int(x) for x in obj.animation_data.action.frame_range)
    frames = range(start, end + 1)
    before = rigs.pose_matrices(obj, frames)
    assert _set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, frames), "to RQ")
    for order in set(modes.values()):
        for pose_bone in obj.pose.bones:
            rigs.select(pose_bone, modes[pose_bone.name] == order)
        assert _set_mode(mode=order, strategy="KEYS") == {"FINISHED"}
    assert {pb.name: pb.rotation_mode for pb in obj.pose.bones} == modes
    _assert_close(before, rigs.pose_matrices(obj, frames), "back to Euler")


def test_only_selected_bones_change_and_report(addon):
    obj = _keyed_rig("XYZ", names=("A", "B"))
    rigs.select(obj.pose.bones["B"], False)
    assert _set_mode(mode="RQ") == {"FINISHED"}
    assert "rq_vector" in obj.pose.bones["A"]
    assert obj.pose.bones["B"].rotation_mode == "XYZ"
    # Already in the mode: done, nothing to change.
    assert _set_mode(mode="RQ") == {"FINISHED"}


def test_wrong_context_fails_poll(addon):
    assert not bpy.ops.pose.rq_set_mode.poll()  # nothing at all
    obj = rigs.armature(["A"])
    for pose_bone in obj.pose.bones:
        rigs.select(pose_bone, False)
    assert not bpy.ops.pose.rq_set_mode.poll()  # nothing selected
    rigs.select(obj.pose.bones["A"], True)
    assert bpy.ops.pose.rq_set_mode.poll()
    bpy.ops.object.mode_set(mode="OBJECT")
    assert not bpy.ops.pose.rq_set_mode.poll()  # not in Pose mode
    mesh = bpy.data.objects.new("Mesh", bpy.data.meshes.new("Mesh"))
    bpy.context.scene.collection.objects.link(mesh)
    bpy.context.view_layer.objects.active = mesh
    assert not bpy.ops.pose.rq_set_mode.poll()  # not an armature


def test_linked_armature_fails_poll(addon, tmp_path):
    rigs.armature(["A"])
    bpy.ops.object.mode_set(mode="OBJECT")
    library = tmp_path / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(library), copy=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(library), link=True) as (_, data_to):
        data_to.objects = ["Rig"]
    obj = data_to.objects[0]
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    assert obj.library is not None
    assert not bpy.ops.pose.rq_set_mode.poll()


def test_bad_input_reports_and_changes_nothing(addon):
    obj = _keyed_rig("XYZ", names=("A", "B"))
    obj.pose.bones["B"].driver_add("rotation_axis_angle", 0)  # someone else's driver
    keys_before = sorted((fc.data_path, fc.array_index) for fc in rigs.fcurves_of(obj))
    with pytest.raises(RuntimeError, match="already driven"):
        _set_mode(mode="RQ")
    assert sorted((fc.data_path, fc.array_index) for fc in rigs.fcurves_of(obj)) == keys_before
    assert [pb.rotation_mode for pb in obj.pose.bones] == ["XYZ", "XYZ"]
    assert not any("rq_vector" in pb for pb in obj.pose.bones)


def test_undo_restores_the_rig_and_redo_reapplies(addon):
    obj = _keyed_rig("XYZ", names=("A",))
    frames = range(1, 21)
    before = rigs.pose_matrices(obj, frames)
    bpy.ops.ed.undo_push(message="keyed")
    assert _set_mode(mode="RQ") == {"FINISHED"}
    if not bpy.ops.ed.undo.poll():
        pytest.skip("the bpy module has no window: ed.undo cannot run headless")
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Rig"]
    assert obj.pose.bones["A"].rotation_mode == "XYZ"
    assert "rq_vector" not in obj.pose.bones["A"]
    _assert_close(before, rigs.pose_matrices(obj, frames), "after undo")
    bpy.ops.ed.redo()
    obj = bpy.data.objects["Rig"]
    assert "rq_vector" in obj.pose.bones["A"]
    _assert_close(before, rigs.pose_matrices(obj, frames), "after redo")


@pytest.mark.parametrize(
    ("source", "target", "after", "reused"),
    [
        ("QUATERNION", "RQ", False, 3),
        ("QUATERNION", "RQ", True, 3),
        ("RQ", "QUATERNION", False, 3),
        ("RQ", "QUATERNION", True, 0),
        ("XYZ", "ZXY", True, 3),
        ("AXIS_ANGLE", "SWING_TWIST", True, 3),
    ],
)
def test_converted_curves_reuse_the_old_ones_in_value_order(addon, source, target, after, reused):
    """A bone's old rotation curves become its new ones in their place (the same curves,
    renamed, keys rewritten), extra ones are removed and missing ones created at the group's
    end; when another curve of the group follows the old ones (``after``), missing ones
    would land behind it, so all are created anew. Either way the rotation channels stay
    together, in value order."""
    obj = _keyed_rig("XYZ" if source == "RQ" else source, names=("A",))
    pose_bone = obj.pose.bones["A"]
    if source == "RQ":
        assert _set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    first = rigs.fcurves_of(obj)[0]
    group = "A" if first.group is None else first.group.name  # 4.2 keys ungrouped
    if after:
        pose_bone.keyframe_insert("scale", index=0, frame=1, group=group)
    old = [fc.as_pointer() for fc in rigs.fcurves_of(obj) if "scale" not in fc.data_path]
    before = rigs.pose_matrices(obj, FRAMES)
    assert _set_mode(mode=target, strategy="KEYS") == {"FINISHED"}
    _assert_close(before, rigs.pose_matrices(obj, FRAMES), target)
    fcurves = rigs.fcurves_of(obj)
    places = [i for i, fc in enumerate(fcurves) if "scale" not in fc.data_path]
    rotation = [fcurves[i] for i in places]
    assert places == list(range(places[0], places[0] + len(places)))  # together
    size = 4 if target == "QUATERNION" else 3
    expected = [(fc.data_path, i) for fc in rotation[:1] for i in range(size)]
    if target == "SWING_TWIST":
        expected = [(rotation[0].data_path, 0), (rotation[0].data_path, 1)]
        expected.append((rotation[2].data_path, 0))
        assert rotation[2].data_path.endswith('["rq_twist"]')
    assert [(fc.data_path, fc.array_index) for fc in rotation] == expected
    assert [fc.as_pointer() for fc in rotation[:reused]] == old[:reused]
    assert not {fc.as_pointer() for fc in rotation[reused:]} & set(old)
    assert all(fc.group.name == group for fc in fcurves)
    assert all(len(fc.keyframe_points) == len(FRAMES) for fc in rotation)
    assert sum("scale" in fc.data_path for fc in fcurves) == after


def test_selected_bones_in_a_hidden_bone_collection_are_left_alone(addon):
    """As Blender's own tools do (a review found them converted on rigs whose hidden MCH
    layers still had bones selected)."""
    obj = _keyed_rig("QUATERNION")
    hidden = obj.data.collections.new("MCH")
    hidden.assign(obj.data.bones["B"])
    hidden.is_visible = False
    assert _set_mode(mode='RQ') == {'FINISHED'}
    assert "rq_vector" in obj.pose.bones["A"]
    assert "rq_vector" not in obj.pose.bones["B"]
    assert obj.pose.bones["B"].rotation_mode == 'QUATERNION'
