# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_bake_visual``: what constraints show, keyed into the bones' own RQ and
swing/twist channels.

Poses are ``pose_bone.matrix`` (armature space) read with ``frame_set``. With rotation-only
constraints the keys, with the constraints muted, reproduce the constrained poses within the
float32 bound ``1e-5 + 2^-23 |v|`` (`rigs.matrix_bound`) at every frame.
"""

from __future__ import annotations

import math
import re

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro
from whole_state import differences, whole_state

FRAMES = [float(f) for f in range(1, 25)]
REPORT = re.compile(r"^(Info|Warning): (.*)$", re.MULTILINE)


def _target(name, keys):
    """An empty keyed at ``(frame, location, rotation_euler)``."""
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    for frame, location, rotation in keys:
        empty.location = location
        empty.rotation_euler = rotation
        empty.keyframe_insert("location", frame=frame)
        empty.keyframe_insert("rotation_euler", frame=frame)
    return empty


def _constrained_rig():
    """A chain A (RQ), B (swing/twist), C (RQ), each keyed, with rotation-only constraints:
    Copy Rotation on A, Damped Track on B and IK (no stretch, chain of 2: C and B) on C,
    each following an animated empty. Back in Pose mode with the rig active."""
    obj = rigs.armature(("A", "B", "C"))
    ro.key_rq(obj.pose.bones["A"], [(1.0, (0.1, 0.2, 0.3)), (24.0, (0.5, -0.4, 1.0))])
    ro.key_swing_twist(obj.pose.bones["B"], [(1.0, (0.2, 0.1), 0.3), (24.0, (-0.4, 0.5), -0.6)])
    ro.key_rq(obj.pose.bones["C"], [(1.0, (0.0, 0.0, 0.0)), (24.0, (0.3, 0.3, 0.3))])
    spin = _target("Spin", [(1.0, (0, 0, 0), (0, 0, 0)), (24.0, (0, 0, 0), (1.2, -0.7, 2.5))])
    aim = _target("Aim", [(1.0, (2.0, 3.0, 1.0), (0, 0, 0)), (24.0, (-1.0, 2.0, 2.5), (0, 0, 0))])
    goal = _target("Goal", [(1.0, (1.0, 2.5, 1.5), (0, 0, 0)), (24.0, (-0.5, 2.0, 1.0), (0, 0, 0))])
    copy = obj.pose.bones["A"].constraints.new('COPY_ROTATION')
    copy.target = spin
    copy.influence = 0.8
    track = obj.pose.bones["B"].constraints.new('DAMPED_TRACK')
    track.target = aim
    ik = obj.pose.bones["C"].constraints.new('IK')
    ik.target = goal
    ik.chain_count = 2
    ik.use_stretch = False
    bpy.context.view_layer.objects.active = obj
    obj.update_tag()
    return obj


def _reports(capsys):
    return REPORT.findall(capsys.readouterr().out)


def _assert_matches(before, after, where=""):
    error = np.abs(after - before)
    bad = error > rigs.matrix_bound(before)
    assert not bad.any(), f"{where}: max error {error.max():.3g} at {np.argwhere(bad)[:3]}"


def _keys(obj, bone, name, size):
    curves = ro.fcurve_map(obj)
    keys = [ro.key_values(curves[(f'pose.bones["{bone}"]["{name}"]', i)]) for i in range(size)]
    return keys[0][:, 0], np.stack([k[:, 1] for k in keys], axis=1)


def _mutes(obj):
    return [(pb.name, c.name, c.mute) for pb in obj.pose.bones for c in pb.constraints]


def test_keys_with_constraints_muted_reproduce_the_constrained_pose(addon, capsys):
    obj = _constrained_rig()
    before = rigs.pose_matrices(obj, FRAMES)
    bpy.context.scene.frame_set(7)
    capsys.readouterr()
    result = bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=24, mute_constraints=True)
    assert result == {'FINISHED'}
    assert bpy.context.scene.frame_current == 7
    found = _reports(capsys)
    assert found[-1] == ("Info", "Baked visual rotation: 3 bones, 24 frames"), found
    assert ("Info", "Muted 3 constraints posing the baked bones") in found
    assert all(mute for *_, mute in _mutes(obj))
    _assert_matches(before, rigs.pose_matrices(obj, FRAMES), "constraints muted")
    for bone, name, size in (("A", "rq_vector", 3), ("B", "rq_swing", 2), ("B", "rq_twist", 1)):
        times, _ = _keys(obj, bone, name, size)
        np.testing.assert_array_equal(times, FRAMES)
    # Muted, not removed: unmuting gives the constraints back.
    assert [(bone, name) for bone, name, _ in _mutes(obj)] == [
        ("A", "Copy Rotation"),
        ("B", "Damped Track"),
        ("C", "IK"),
    ]


def test_scene_range_by_default_and_constraints_kept_unless_asked(addon):
    obj = _constrained_rig()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 3, 12
    assert bpy.ops.pose.rq_bake_visual() == {'FINISHED'}
    times, _ = _keys(obj, "A", "rq_vector", 3)
    # The keys A had at 1 and 24 stay; 3..12 are the bake's.
    np.testing.assert_array_equal(times, [1.0, *range(3, 13), 24.0])
    assert not any(mute for *_, mute in _mutes(obj))


def test_continuity_follows_a_spin_past_the_shells(addon):
    """Copy Rotation (local spaces) of a bone spinning 4.75 turns about its Z: the RQ keys
    wind on to 9.5 pi (each frame the equivalent nearest the previous one) instead of jumping
    back at each turn. (No frame lands on a shell, where float32 noise picks the axis.)"""
    obj = rigs.armature(("Spin", "Spinner"), chain=False)
    ro.key_rq(obj.pose.bones["Spin"], [(1.0, (0.0, 0.0, 0.0))])
    rigs.key_rotation(
        obj.pose.bones["Spinner"],
        "XYZ",
        [(1.0, (0, 0, 0)), (41.0, (0, 0, 9.5 * math.pi))],
        interpolation='LINEAR',
    )
    copy = obj.pose.bones["Spin"].constraints.new('COPY_ROTATION')
    copy.target = obj
    copy.subtarget = "Spinner"
    copy.owner_space = copy.target_space = 'LOCAL'
    frames = [float(f) for f in range(1, 42)]
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=41, mute_constraints=True) == {
        'FINISHED'
    }
    _assert_matches(before, rigs.pose_matrices(obj, frames), "spin")
    _, v = _keys(obj, "Spin", "rq_vector", 3)
    expected = np.zeros((41, 3))
    expected[:, 2] = np.linspace(0.0, 9.5 * math.pi, 41)
    np.testing.assert_allclose(v, expected, atol=1e-5)


def test_current_frame_only_keys_that_frame_and_keeps_the_other_keys(addon):
    obj = _constrained_rig()
    pose_bone = obj.pose.bones["A"]
    ro.key_rq(pose_bone, [(12.0, (0.2, 0.2, 0.2))])
    curve = ro.fcurve_map(obj)[('pose.bones["A"]["rq_vector"]', 0)]
    first, last = curve.keyframe_points[0], curve.keyframe_points[2]
    first.interpolation = 'CONSTANT'
    first.handle_right_type = 'FREE'
    first.handle_right = (3.0, 0.7)
    last.handle_left_type = 'VECTOR'
    # What the splice must keep (the automatic handles of the old keys follow their new
    # neighbour, as in Blender's own key insertion).
    names = ("co", "interpolation", "handle_left_type", "handle_right_type")
    wanted = {0: (*names, "handle_right"), 2: names}

    def state():
        return [
            (key, name, tuple(value) if name in ("co", "handle_right") else value)
            for key, key_names in wanted.items()
            for name in key_names
            for value in [getattr(curve.keyframe_points[key], name)]
        ]

    kept = state()
    bpy.context.scene.frame_set(12)
    before = rigs.pose_matrices(obj, [12.0])
    assert bpy.ops.pose.rq_bake_visual(current_frame_only=True, mute_constraints=True) == {
        'FINISHED'
    }
    times, _ = _keys(obj, "A", "rq_vector", 3)
    np.testing.assert_array_equal(times, [1.0, 12.0, 24.0])
    assert state() == kept
    _assert_matches(before, rigs.pose_matrices(obj, [12.0]), "current frame")


def test_broken_limits_are_reported_with_frames_and_degrees(addon, capsys):
    """A Damped Track aiming a swing/twist bone far outside its ellipse: the keys stay in the
    limits, the report gives the frames and the largest angle, which is what the bone
    then misses the constrained pose by."""
    obj = rigs.armature(("Root", "Arm"))
    pose_bone = obj.pose.bones["Arm"]
    ro.key_swing_twist(pose_bone, [(1.0, (0.0, 0.0), 0.0)])
    pose_bone["rq_swing_limit"] = [0.4, 0.2]
    pose_bone["rq_twist_limit"] = [-0.1, 0.1]
    aim = _target("Aim", [(1.0, (0.3, 6.0, 0.2), (0, 0, 0)), (24.0, (4.0, 2.0, 3.0), (0, 0, 0))])
    track = pose_bone.constraints.new('DAMPED_TRACK')
    track.target = aim
    rigs.select(obj.pose.bones["Root"], False)
    before = rigs.pose_matrices(obj, FRAMES)
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=24, mute_constraints=True) == {
        'FINISHED'
    }
    found = _reports(capsys)
    level, headline = found[-1]
    assert (level, headline) == ("Warning", "Visual bake: 1 bone, 24 frames; check limits")
    (detail,) = [text for _, text in found if "left its joint limits" in text]
    runs = re.findall(r"(\d+)(?:-(\d+))? \((?:up to )?([\d.]+)°\)", detail)
    assert runs, detail
    missed = np.degrees(ro.matrix_angles(before[:, 1], rigs.pose_matrices(obj, FRAMES)[:, 1]))
    reported = np.zeros(len(FRAMES))
    for first, last, degrees in runs:
        reported[int(first) - 1 : int(last or first)] = float(degrees)
    assert (missed[reported == 0] < 1e-3).all()
    for first, last, degrees in runs:
        peak = missed[int(first) - 1 : int(last or first)].max()
        assert abs(peak - float(degrees)) < 0.01 + 1e-3 * peak, (first, last, degrees, peak)
    swing = _keys(obj, "Arm", "rq_swing", 2)[1]
    twist = _keys(obj, "Arm", "rq_twist", 1)[1][:, 0]
    assert ((swing[:, 0] / 0.4) ** 2 + (swing[:, 1] / 0.2) ** 2 <= 1 + 1e-5).all()
    assert (np.abs(twist) <= 0.1 + 1e-6).all()


def test_location_and_scale_that_constraints_add_are_reported(addon, capsys):
    obj = rigs.armature(("Moved", "Scaled"), chain=False)
    ro.key_rq(obj.pose.bones["Moved"], [(1.0, (0.1, 0.0, 0.0))])
    ro.key_rq(obj.pose.bones["Scaled"], [(1.0, (0.0, 0.2, 0.0))])
    mover = _target("Mover", [(1.0, (0, 0, 0), (0, 0, 0)), (24.0, (1.0, 2.0, 0.5), (0, 0, 0))])
    copy = obj.pose.bones["Moved"].constraints.new('COPY_LOCATION')
    copy.target = mover
    limit = obj.pose.bones["Scaled"].constraints.new('LIMIT_SCALE')
    limit.use_max_y = True
    limit.max_y = 0.5
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=24) == {'FINISHED'}
    found = _reports(capsys)
    assert found[-1] == ("Warning", "Visual bake: 2 bones, 24 frames; check location, scale")
    texts = [text for _, text in found]
    assert any(
        t.startswith("Moved: the location that constraints add is not captured") for t in texts
    )
    assert any(
        t.startswith("Scaled: the scale that constraints add is not captured") for t in texts
    )
    assert not any(t.startswith("Moved: the scale") for t in texts)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("inverted", r"ends \(4\) before it starts \(10\)"),
        ("nan", r"rq_swing_limit of B is not a number"),
        ("inf", r"rq_swing_limit of B is infinite"),
        # (a review found keys written into both, reported as baked: a muted curve does not
        # play, so with Mute Constraints the bone fell back to rest)
        ("mute", r"bone 'B': its F-curve \[\"rq_swing\"\]\[0\] in action .* is muted"),
        ("lock", r"bone 'B': its F-curve \[\"rq_swing\"\]\[0\] in action .* is locked"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(addon, change, message):
    obj = _constrained_rig()
    kwargs = {"frame_start": 1, "frame_end": 24}
    if change == "inverted":
        kwargs = {"frame_start": 10, "frame_end": 4}
    elif change in ("mute", "lock"):
        obj.pose.bones["B"].keyframe_insert('["rq_swing"]', frame=1)
        (fcurve,) = [
            f
            for f in rigs.fcurves_of(obj)
            if f.data_path == 'pose.bones["B"]["rq_swing"]' and f.array_index == 0
        ]
        setattr(fcurve, change, True)
    else:
        obj.pose.bones["B"]["rq_swing_limit"] = [getattr(math, change), 1.0]
    bpy.context.scene.frame_set(5)
    state, mutes = whole_state(obj), _mutes(obj)
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.pose.rq_bake_visual(mute_constraints=True, **kwargs)
    changed = differences(state, whole_state(obj))
    if change == "nan":  # NaN != NaN: the one difference is the NaN itself, still there
        assert len(changed) == 1 and "rq_swing_limit" in changed[0], changed
        assert math.isnan(obj.pose.bones["B"]["rq_swing_limit"][0])
    else:
        assert changed == []
    assert _mutes(obj) == mutes
    assert bpy.context.scene.frame_current == 5


def test_no_addon_bone_selected_changes_nothing(addon, capsys):
    obj = _constrained_rig()
    for pose_bone in obj.pose.bones:
        rigs.select(pose_bone, False)
    bpy.context.scene.frame_set(5)
    state = whole_state(obj)
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake_visual() == {'CANCELLED'}
    assert _reports(capsys)[-1] == (
        "Warning",
        "Nothing baked: no selected bone is in RQ or Swing/Twist mode",
    )
    assert differences(state, whole_state(obj)) == []


def test_failure_while_writing_restores_everything(addon, monkeypatch):
    """A write that fails halfway (the second channel) on bones without an action: the action
    made for the keys is removed again, mute flags and every curve are as they were."""
    obj = rigs.armature(("A", "B"))
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    bone_modes.enter_mode(obj.pose.bones["A"], "RQ", (0.1, 0.2, 0.3))
    bone_modes.enter_mode(obj.pose.bones["B"], "SWING_TWIST", ((0.1, 0.2), 0.3))
    obj.pose.bones["B"].constraints.new('COPY_ROTATION').target = _target(
        "T", [(1.0, (0, 0, 0), (0.3, 0.2, 0.1))]
    )
    assert obj.animation_data.action is None
    animdata = ro.addon_module("rq_blender.animdata")
    original = animdata.splice_keys
    calls = {"count": 0}

    def failing(*args, **kwargs):
        calls["count"] += 1
        if calls["count"] == 2:
            raise RuntimeError("injected fault")
        return original(*args, **kwargs)

    monkeypatch.setattr(animdata, "splice_keys", failing)
    state, mutes, actions = whole_state(obj), _mutes(obj), set(bpy.data.actions.keys())
    with pytest.raises(RuntimeError, match="Nothing changed: injected fault"):
        bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=5, mute_constraints=True)
    assert calls["count"] == 2
    assert obj.animation_data.action is None
    assert set(bpy.data.actions.keys()) == actions
    assert differences(state, whole_state(obj)) == []
    assert _mutes(obj) == mutes


def test_headline_fits_the_status_bar_at_its_longest(addon):
    reports = ro.addon_module("rq_blender.reports")
    operator = ro.addon_module("operators.bake_visual")
    visual_bake = ro.addon_module("rq_blender.visual_bake")
    obj = rigs.armature(("A",))
    bone = visual_bake.BakeBone(obj, "A", "RQ")
    frames = np.arange(1.0, 10000.0)
    bad = np.ones(len(frames))
    plan = visual_bake.BonePlan(bone, np.zeros((len(frames), 3)), bad, bad, bad, True, False)
    _, headline, _ = operator.bake_visual_message([plan] * 99, frames, 3, ["B"])
    assert headline == "Visual bake: 99 bones, 9999 frames; check limits, location, scale, IK"
    assert len(headline) <= reports.STATUS_LENGTH


def test_frame_runs(addon):
    operator = ro.addon_module("operators.bake_visual")
    frames = np.arange(1.0, 11.0)
    amounts = np.array([0, 2.0, 3.5, 0, 0, 1.25, 0, 1, 1, 1])
    assert (
        operator.frame_runs(frames, amounts, "°") == "2-3 (up to 3.5°), 6 (1.25°), 8-10 (up to 1°)"
    )


def _bake_muting(obj, baked, frame_end, capsys):
    """Bake the bone ``baked`` of ``obj`` alone (the others deselected) from frame 1 with Mute
    Constraints; the reports."""
    for pose_bone in obj.pose.bones:
        rigs.select(pose_bone, pose_bone.name == baked)
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake_visual(
        frame_start=1, frame_end=frame_end, mute_constraints=True
    ) == {'FINISHED'}
    return _reports(capsys)


def test_muting_ik_names_the_unbaked_bones_it_turned(addon, capsys):
    obj = _constrained_rig()
    found = _bake_muting(obj, "C", 3, capsys)
    assert found[-1] == ("Warning", "Visual bake: 1 bone, 3 frames; check IK")
    assert ("Info", "Muting IK also frees B, not baked: their pose changes") in found


def test_muting_mutes_an_ik_on_an_unbaked_bone_that_turns_baked_ones(addon, capsys):
    """The IK on C (chain of 2) turns B: baking B alone with Mute Constraints muted only B's
    own Damped Track and said nothing of the IK, which then started from the baked pose and
    moved B again (19 degrees in a review). The IK is muted too, and C, not baked, is named:
    B's keys reproduce the constrained pose with every constraint that posed it muted."""
    obj = _constrained_rig()
    before = rigs.pose_matrices(obj, FRAMES)
    found = _bake_muting(obj, "B", 24, capsys)
    assert ("Info", "Muted 2 constraints posing the baked bones") in found, found
    assert ("Info", "Muting IK also frees C, not baked: their pose changes") in found, found
    assert _mutes(obj) == [
        ("A", "Copy Rotation", False),
        ("B", "Damped Track", True),
        ("C", "IK", True),
    ]
    after = rigs.pose_matrices(obj, FRAMES)
    b = list(obj.pose.bones.keys()).index("B")
    _assert_matches(before[:, b], after[:, b], "B with the IK on C muted")


def test_a_child_keeps_its_orientation_when_its_parent_is_held_in_its_limits(addon, capsys):
    """A swing/twist parent turned past its ellipse by Copy Rotation is keyed at the closest
    pose inside it; its child, turned by its own Copy Rotation, was keyed against the parent
    as the constraint posed it, so it ended turned by the parent's clamp (43 degrees in a
    review, with only the parent named). It is keyed against the parent as keyed: with the
    constraints muted it points where the constraint had it."""
    obj = rigs.armature(("A", "B"))
    ro.key_swing_twist(obj.pose.bones["A"], [(1.0, (0.0, 0.0), 0.0)])
    obj.pose.bones["A"]["rq_swing_limit"] = [0.3, 0.3]
    ro.key_rq(obj.pose.bones["B"], [(1.0, (0.0, 0.0, 0.0))])
    spin = _target("Spin", [(1.0, (0, 0, 0), (0.2, 0, 0)), (24.0, (0, 0, 0), (1.1, 0.4, 0))])
    point = _target("Point", [(1.0, (0, 0, 0), (0, 0.3, 0.2)), (24.0, (0, 0, 0), (-0.5, 1.0, 2.0))])
    for bone, target in (("A", spin), ("B", point)):
        copy = obj.pose.bones[bone].constraints.new('COPY_ROTATION')
        copy.target = target
    bpy.context.view_layer.objects.active = obj
    obj.update_tag()
    before = rigs.pose_matrices(obj, FRAMES)
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=24, mute_constraints=True) == {
        'FINISHED'
    }
    found = _reports(capsys)
    assert any(
        text.startswith("A: the constrained pose left its joint limits") for _, text in found
    )
    after = rigs.pose_matrices(obj, FRAMES)

    def rotation(m):
        return m[..., :3, :3] / np.linalg.norm(m[..., :3, :3], axis=-2, keepdims=True)

    assert np.abs(rotation(after[:, 0]) - rotation(before[:, 0])).max() > 0.1  # A was held
    error = np.abs(rotation(after[:, 1]) - rotation(before[:, 1])).max()
    assert error < 1e-5, error  # B points where Copy Rotation had it


def test_a_pose_on_the_limit_is_not_reported_as_breaking_it(addon, capsys):
    """Copy Rotation (local spaces) putting a swing/twist bone exactly on its ellipse and at
    the end of its twist range: float32 noise on the boundary is no broken limit."""
    obj = rigs.armature(("Arm", "Source"), chain=False)
    ro.key_swing_twist(obj.pose.bones["Arm"], [(1.0, (0.0, 0.0), 0.0)])
    arm = obj.pose.bones["Arm"]
    arm["rq_swing_limit"] = [0.5, 0.3]
    arm["rq_twist_limit"] = [-0.2, 0.2]
    rigs.key_rotation(
        obj.pose.bones["Source"], "XYZ", [(1.0, (0.5, 0.0, 0.0)), (3.0, (0.0, 0.2, 0.0))]
    )
    copy = arm.constraints.new('COPY_ROTATION')
    copy.target = obj
    copy.subtarget = "Source"
    copy.owner_space = copy.target_space = 'LOCAL'
    frames = [1.0, 3.0]
    before = rigs.pose_matrices(obj, frames)
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=3, mute_constraints=True) == {
        'FINISHED'
    }
    assert _reports(capsys)[-1] == ("Info", "Baked visual rotation: 1 bone, 3 frames")
    _assert_matches(before, rigs.pose_matrices(obj, frames), "on the limit")


def test_the_frame_range_stops_at_blenders_last_frame(addon):
    """Blender's frames end at 1,048,574 (`Scene.frame_set` stops there): a range past it is
    cut there, as Blender's own frame properties are (a review found the five frames past it
    keyed with the last frame's pose, and a range at 2^31 keyed at 2147483648.0)."""
    obj = _constrained_rig()
    last = ro.addon_module("rq_blender.animdata").MAX_FRAME
    assert last == bpy.types.Scene.bl_rna.properties["frame_current"].hard_max
    assert bpy.ops.pose.rq_bake_visual(frame_start=last - 4, frame_end=last + 5) == {'FINISHED'}
    times, _ = _keys(obj, "B", "rq_swing", 2)
    assert times[-5:].tolist() == [float(f) for f in range(last - 4, last + 1)]
    assert times.max() == last


@pytest.mark.parametrize("operator", ["rq_bake", "rq_bake_visual"])
def test_both_bakes_take_frames_within_blenders(addon, operator):
    scene_frames = bpy.types.Scene.bl_rna.properties["frame_current"]
    properties = getattr(bpy.ops.pose, operator).get_rna_type().properties
    for name in ("frame_start", "frame_end"):
        assert (properties[name].hard_min, properties[name].hard_max) == (
            scene_frames.hard_min,
            scene_frames.hard_max,
        )
