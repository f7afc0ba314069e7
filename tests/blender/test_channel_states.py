# SPDX-License-Identifier: GPL-3.0-or-later
"""What the user set on the F-curves an operator rewrites: muted, locked, modifiers, and an
action shared with another armature (a sixth fresh-eyes review found each silently lost or
played: a shared action's other armature moved by 103 degrees, a muted channel converted as
if live by 54, a Noise modifier dropped by Keep Key Times by 41, a Cycles modifier's repeat
lost after the last key by 58). Each is refused before anything changes, with the bone and
the curve named, or, where the operator can honour it (a sampled conversion or a bake keys a
modifier's effect within its frames), reported."""

import math

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro
from whole_state import differences, whole_state

FRAMES = (1, 20, 40, 60)


def _euler_rig(name="Rig", chain=True):
    obj = rigs.armature(("A", "B"), chain=chain)
    obj.name = name
    values = [(0.1, 0.2, 0.3), (0.6, 0.0, 0.8), (1.2, 0.3, 0.4), (0.7, 0.9, 0.4)]
    for pose_bone in obj.pose.bones:
        rigs.key_rotation(pose_bone, "XYZ", list(zip(FRAMES, values, strict=True)))
    return obj


def _curves(obj, bone):
    return [fc for fc in rigs.fcurves_of(obj) if f'"{bone}"' in fc.data_path]


def _refused(call, match, *objects):
    """``call`` raises the error report ``match`` and changes nothing on ``objects`` (their
    state taken after an update, which ``bpy.ops`` runs first: the animated values)."""
    bpy.context.view_layer.update()
    before = [whole_state(obj) for obj in objects]
    with pytest.raises(RuntimeError, match=match):
        call()
    for obj, state in zip(objects, before, strict=True):
        assert differences(state, whole_state(obj)) == []


def _second_player(obj):
    """Another armature playing ``obj``'s action through the same slot, its bones in XYZ."""
    bpy.ops.object.mode_set(mode="OBJECT")
    other = bpy.data.objects.new("Other", obj.data.copy())
    bpy.context.scene.collection.objects.link(other)
    other.animation_data_create()
    other.animation_data.action = obj.animation_data.action
    if hasattr(other.animation_data, "action_slot"):
        other.animation_data.action_slot = obj.animation_data.action_slot
    bpy.context.view_layer.update()  # (a new armature object gets its pose there)
    for pose_bone in other.pose.bones:
        pose_bone.rotation_mode = "XYZ"
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    return other


def test_an_action_another_armature_plays_is_not_converted_or_baked(addon):
    obj = _euler_rig()
    other = _second_player(obj)
    poses = rigs.pose_matrices(other, FRAMES)
    for strategy in ("KEYS", "SAMPLED"):
        _refused(
            lambda s=strategy: bpy.ops.pose.rq_set_mode(mode="RQ", strategy=s),
            "action '.*' also animates it on Other.*single-user",
            obj,
            other,
        )
    # its own copy of the action: converted, the other armature plays on as before
    obj.animation_data.action = obj.animation_data.action.copy()
    if hasattr(obj.animation_data, "action_slot"):
        obj.animation_data.action_slot = obj.animation_data.action.slots[0]
    assert bpy.ops.pose.rq_set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    np.testing.assert_allclose(rigs.pose_matrices(other, FRAMES), poses, atol=1e-6)
    # the RQ bones' action shared again: the bake to quaternions refused too
    other.animation_data.action = obj.animation_data.action
    if hasattr(other.animation_data, "action_slot"):
        other.animation_data.action_slot = obj.animation_data.action_slot
    _refused(lambda: bpy.ops.pose.rq_bake(target="QUATERNION"), "also animates it", obj, other)


def test_an_armature_without_those_bones_does_not_block_the_conversion(addon):
    obj = _euler_rig()
    other = _second_player(obj)
    bpy.ops.object.mode_set(mode="OBJECT")
    other.data = bpy.data.armatures.new("Empty")
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    assert bpy.ops.pose.rq_set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}


@pytest.mark.parametrize("strategy", ["KEYS", "SAMPLED"])
def test_a_muted_or_locked_curve_is_not_converted(addon, strategy):
    obj = _euler_rig()
    _curves(obj, "A")[1].mute = True
    _refused(
        lambda: bpy.ops.pose.rq_set_mode(mode="RQ", strategy=strategy),
        r"bone 'A': its F-curve rotation_euler\[1\] in action '.*' is muted: unmute or delete",
        obj,
    )
    _curves(obj, "A")[1].mute = False
    _curves(obj, "B")[2].lock = True
    _refused(
        lambda: bpy.ops.pose.rq_set_mode(mode="SWING_TWIST", strategy=strategy),
        r"bone 'B': its F-curve rotation_euler\[2\] .* is locked: unlock it first",
        obj,
    )


def test_a_muted_or_locked_rq_curve_is_not_baked_and_a_locked_one_not_edited(addon):
    rng = np.random.default_rng(4)
    obj = ro.rq_rig({"A": [(f, rng.normal(0.0, 1.0, 3)) for f in FRAMES]})
    vector = _curves(obj, "A")
    vector[1].mute = True
    _refused(lambda: bpy.ops.pose.rq_bake(target="QUATERNION"), "is muted", obj)
    vector[1].mute = False
    vector[0].lock = True
    _refused(lambda: bpy.ops.pose.rq_bake(target="XYZ"), "is locked", obj)
    _refused(
        lambda: bpy.ops.pose.rq_spline_interpolate(),
        r"F-curve \[\"rq_vector\"\]\[0\] in action '.*' is locked: unlock it first",
        obj,
    )
    _refused(lambda: bpy.ops.pose.rq_continuity_filter(), "is locked", obj)


def test_modifiers_are_refused_by_keep_key_times_and_keyed_by_sampling(addon, capsys):
    obj = _euler_rig(chain=False)  # (each bone's error its own: within the tolerance)
    for fcurve in _curves(obj, "A"):
        fcurve.modifiers.new("CYCLES")
    noise = _curves(obj, "B")[1].modifiers.new("NOISE")
    noise.strength = 2.0
    _refused(
        lambda: bpy.ops.pose.rq_set_mode(mode="RQ", strategy="KEYS"),
        r"bone 'A': .* has modifiers \(Cycles\), which Keep Key Times cannot carry",
        obj,
    )
    frames = np.arange(1, 61, dtype=float)
    before = rigs.pose_matrices(obj, frames)
    capsys.readouterr()
    tolerance = math.radians(0.5)
    assert bpy.ops.pose.rq_set_mode(mode="RQ", strategy="SAMPLED", tolerance=tolerance) == {
        "FINISHED"
    }
    out = capsys.readouterr().out
    assert "F-curve modifiers keyed" in out, out
    assert "F-curve modifiers (Cycles, Noise) on A and B: their effect within the sampled" in out
    # within the sampled frames the noise and the cycle's first pass are in the keys
    angles = ro.matrix_angles(before, rigs.pose_matrices(obj, frames))
    assert angles.max() <= tolerance + 1e-5, math.degrees(angles.max())


def test_keep_key_times_names_the_widest_gaps_first(addon, capsys):
    """A review read "Keys up to 179 degrees apart on RightToe, RightShoulder, RightWrist and
    1 more" where the 179 degrees were on the one left unnamed."""
    obj = rigs.armature(("A", "B", "C", "D"))
    for pose_bone, turn in zip(obj.pose.bones, (0.4, 0.5, 0.6, 3.0), strict=True):
        rigs.key_rotation(pose_bone, "XYZ", [(1, (0.0, 0.0, 0.0)), (10, (turn, 0.0, 0.0))])
    capsys.readouterr()
    assert bpy.ops.pose.rq_set_mode(mode="RQ", strategy="KEYS") == {"FINISHED"}
    assert "Keys up to 172° apart on D, C, B and 1 more" in capsys.readouterr().out


def _linked_action_rig(tmp_path):
    """A rig whose bone A is RQ, animated by an action linked from a library file (as a
    library override's action often is; Blender does not let the shot edit it)."""
    obj = rigs.armature(("A", "B"))
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    bone_modes.enter_mode(obj.pose.bones["A"], "RQ", (0.0, 0.0, 0.0))
    for frame, x in zip(FRAMES, (3.0, -3.0, 3.0, -3.0), strict=True):
        obj.pose.bones["A"]["rq_vector"] = [x, 0.0, 0.0]
        obj.pose.bones["A"].keyframe_insert('["rq_vector"]', frame=frame)
    action = obj.animation_data.action
    action.name = "Library Walk"
    library = tmp_path / "walk.blend"
    bpy.data.libraries.write(str(library), {action})
    obj.animation_data.action = None
    bpy.data.actions.remove(action)
    with bpy.data.libraries.load(str(library), link=True) as (_, linked):
        linked.actions = ["Library Walk"]
    obj.animation_data.action = linked.actions[0]
    if hasattr(obj.animation_data, "action_slot"):
        obj.animation_data.action_slot = linked.actions[0].slots[0]
    assert not obj.animation_data.action.is_editable
    for pose_bone in obj.pose.bones:
        rigs.select(pose_bone, pose_bone.name == "A")
    obj.data.bones.active = obj.data.bones["A"]
    return obj


LINKED = r"action 'Library Walk' is linked from .*walk\.blend and cannot be edited"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: bpy.ops.pose.rq_spline_interpolate(), LINKED),
        (lambda: bpy.ops.pose.rq_spline_interpolate(convert_native=False), LINKED),
        (lambda: bpy.ops.pose.rq_continuity_filter(), LINKED),
        (lambda: bpy.ops.pose.rq_keyframe_insert(), LINKED),
        (lambda: bpy.ops.pose.rq_bake(target="QUATERNION"), LINKED),
        (lambda: bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=10), LINKED),
        (lambda: bpy.ops.pose.rq_set_mode(mode="QUATERNION"), "is linked and cannot be edited"),
    ],
    ids=["spline", "spline_no_convert", "filter", "keyframe", "bake", "bake_visual", "set_mode"],
)
def test_an_action_linked_from_a_library_is_refused(addon, tmp_path, call, match):
    """A review found the spline writing into it, the filter reporting keys changed that
    stayed as they were, I reporting bones keyed, and the bake asking to make it single-user
    on the library's own object. (Switch Mode's poll refuses it already.)"""
    obj = _linked_action_rig(tmp_path)
    _refused(call, match, obj)
