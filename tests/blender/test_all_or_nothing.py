# SPDX-License-Identifier: GPL-3.0-or-later
"""Fault injection: an operator whose write fails halfway through a multi-bone change leaves
the armature exactly as it was (modes, values, ID properties and their UI data, every
F-curve with its keys, modifiers, group and flags, drivers and their validity) and reports an
error (which ``bpy.ops`` raises as RuntimeError in a headless Blender). The state is
compared with `whole_state`, a generic RNA walk written apart from the add-on's recorder."""

from __future__ import annotations

import gc
import math

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro
from whole_state import differences, whole_state

NAMES = ("A", "B", "C")
FRAMES = (1.0, 5.0, 9.0, 14.0)


class InjectedFaultError(RuntimeError):
    pass


@pytest.fixture
def fault(monkeypatch):
    """``fault(targets, at)``: wrap the add-on functions ``targets`` (``(module, name)``
    pairs) so that their ``at``-th call, counted together, raises; returns the call count."""

    def inject(targets, at):
        calls = {"count": 0}
        for module_name, function_name in targets:
            module = ro.addon_module(module_name)
            original = getattr(module, function_name)

            def failing(*args, _original=original, **kwargs):
                calls["count"] += 1
                if calls["count"] == at:
                    raise InjectedFaultError(f"injected fault in call {at}")
                return _original(*args, **kwargs)

            monkeypatch.setattr(module, function_name, failing)
        return calls

    return inject


WRITES = [
    ("rq_blender.animdata", name) for name in ("write_keys", "remove_fcurves", "shift_keys")
] + [("rq_blender.bone_modes", name) for name in ("enter_mode", "leave_mode", "write_parameters")]


def _decorate(obj, modifier=False):
    """User data no operator may lose: channel flags, a modifier, easing and handle types, a
    user property with UI data, and a driver on another channel of a converted bone. A muted
    or locked rotation curve is refused before anything changes (`test_channel_states`), and
    a modifier by Keep Key Times: those flags (and the modifier unless ``modifier``, for the
    sampled operators, which key its effect) are on a location curve of a converted bone."""
    pose_bone = obj.pose.bones["B"]
    pose_bone.keyframe_insert("location", index=1, frame=3.0)  # after the rotation, in group B
    curves = rigs.fcurves_of(obj)
    location = next(fc for fc in curves if fc.data_path.endswith(".location"))
    curves.remove(location)
    location.mute = True
    location.lock = True
    curves[2].hide = True
    curves[3].select = False
    (curves[4] if modifier else location).modifiers.new('NOISE').strength = 0.01
    point = curves[5].keyframe_points[1]
    point.interpolation = 'BACK'
    point.easing = 'EASE_IN'
    point.back = 2.5
    curves[6].keyframe_points[2].handle_left_type = 'VECTOR'
    pose_bone["user_weight"] = 0.25
    pose_bone.id_properties_ui("user_weight").update(min=0.0, max=1.0, description="mine")
    location = pose_bone.driver_add("location", 0)
    location.driver.type = 'SCRIPTED'
    location.driver.expression = "frame / 100"
    obj.update_tag()
    bpy.context.view_layer.update()


def _native_rig(mode="XYZ", modifier=False):
    rng = np.random.default_rng(4)
    obj = rigs.armature(NAMES)
    for pose_bone in obj.pose.bones:
        values = [(f, tuple(rng.uniform(-2.0, 2.0, 3))) for f in FRAMES]
        if mode == "QUATERNION":
            values = [(f, tuple(np.r_[1.0, v] / np.linalg.norm(np.r_[1.0, v]))) for f, v in values]
        rigs.key_rotation(pose_bone, mode, values)
    _decorate(obj, modifier)
    return obj


def _rq_rig(vectors=None, modifier=False):
    rng = np.random.default_rng(5)
    obj = ro.rq_rig(
        {name: vectors or [(f, rng.normal(0.0, 1.5, 3)) for f in FRAMES] for name in NAMES}
    )
    _decorate(obj, modifier)
    return obj


def _check(fault, obj, operator, at, targets=WRITES, **properties):
    """Run ``operator`` with a fault at call ``at`` of the ``targets`` (default: the writes):
    nothing changes and it reports the error. Then run it without a fault: it changes the
    state (so the comparison can fail)."""
    before = whole_state(obj)
    calls = fault(targets, at)
    with pytest.raises(RuntimeError, match=f"Nothing changed: injected fault in call {at}$"):
        operator(**properties)
    assert calls["count"] >= at, f"the fault never fired ({calls['count']} write calls)"
    assert differences(before, whole_state(obj)) == []
    fault([], 0)
    assert operator(**properties) == {'FINISHED'}
    assert differences(before, whole_state(obj)) != []


@pytest.mark.parametrize(
    ("source", "target", "at"),
    [
        ("XYZ", "RQ", 5),  # fails on the second bone, after the first is done
        ("QUATERNION", "SWING_TWIST", 9),  # fails on the third bone
        ("RQ", "QUATERNION", 4),
        ("RQ", "ZXY", 2),
    ],
)
def test_set_mode_failing_halfway_changes_nothing(addon, fault, source, target, at):
    obj = _rq_rig() if source == "RQ" else _native_rig(source)
    _check(fault, obj, bpy.ops.pose.rq_set_mode, at, mode=target, strategy='KEYS')


@pytest.mark.parametrize(("source", "target"), [("QUATERNION", "RQ"), ("RQ", "XYZ")])
def test_set_mode_failing_in_a_reused_curve_changes_nothing(addon, fault, source, target):
    """A conversion turns the old curves into the new ones (``animdata.reuse_fcurve``): a
    fault on the second bone's second curve, the first bone done and one curve of the second
    renamed, restores every curve with its name, place, keys and flags."""
    obj = _rq_rig() if source == "RQ" else _native_rig(source)
    reuse = [("rq_blender.animdata", "reuse_fcurve")]
    _check(fault, obj, bpy.ops.pose.rq_set_mode, 5, reuse, mode=target, strategy='KEYS')


def test_set_mode_sampled_failing_halfway_changes_nothing(addon, fault):
    obj = _native_rig("XYZ", modifier=True)
    _check(
        fault,
        obj,
        bpy.ops.pose.rq_set_mode,
        6,
        mode='RQ',
        strategy='SAMPLED',
        tolerance=math.radians(0.1),
    )


def test_bake_failing_halfway_changes_nothing(addon, fault):
    obj = _rq_rig(modifier=True)
    _check(fault, obj, bpy.ops.pose.rq_bake, 7, target='QUATERNION', keys='REDUCED')


def test_spline_interpolate_failing_halfway_changes_nothing(addon, fault):
    _check(fault, _rq_rig(), bpy.ops.pose.rq_spline_interpolate, 5, kind='CATMULL_ROM')


def test_spline_with_conversion_failing_halfway_changes_nothing(addon, fault):
    obj = _native_rig("XYZ")
    # Fails while interpolating, after all three bones were converted to RQ.
    _check(fault, obj, bpy.ops.pose.rq_spline_interpolate, 12, kind='HERMITE', convert_native=True)


def _jumpy_rig(rq):
    unit = np.array([0.36, -0.48, 0.8])
    jumpy = [(1.0 + 3 * i, rq.reparameterize((0.5 + 1.2 * i) * unit)) for i in range(8)]
    return _rq_rig(jumpy)


def _recorded_by(monkeypatch, name):
    """Count the calls of ``transaction.<name>`` (the filter's choice of record)."""
    transaction = ro.addon_module("rq_blender.transaction")
    calls = {"count": 0}
    original = getattr(transaction, name)

    def counting(*args, **kwargs):
        calls["count"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(transaction, name, counting)
    return calls


def test_continuity_filter_failing_halfway_changes_nothing(addon, fault, rq, monkeypatch):
    # Every component keyed at every time: the keys are only shifted, and the journal of
    # their points (`transaction.shifted_keys`) is the whole record.
    journal = _recorded_by(monkeypatch, "shifted_keys")
    _check(fault, _jumpy_rig(rq), bpy.ops.pose.rq_continuity_filter, 4)
    assert journal["count"] == 2


def test_continuity_filter_rewriting_a_channel_records_the_actions(addon, fault, rq, monkeypatch):
    # Components without a key where the filter changes the vector are rewritten (not
    # shifted): the actions are copied instead. It fails on the second such write, after the
    # first and the shifts.
    obj = _jumpy_rig(rq)
    for curve in rigs.fcurves_of(obj):  # the first component of bones B and C
        if curve.array_index == 0 and curve.data_path in (
            'pose.bones["B"]["rq_vector"]',
            'pose.bones["C"]["rq_vector"]',
        ):
            curve.keyframe_points.remove(curve.keyframe_points[4])
    journal = _recorded_by(monkeypatch, "shifted_keys")
    _check(
        fault, obj, bpy.ops.pose.rq_continuity_filter, 2, [("rq_blender.animdata", "write_keys")]
    )
    assert journal["count"] == 0


def test_continuity_filter_on_keys_update_would_merge_records_the_actions(
    addon, fault, rq, monkeypatch
):
    # Two keys 0.005 frames apart (written in bulk, never updated): the shift's
    # FCurve.update() merges them, which writing the points back cannot undo.
    obj = _jumpy_rig(rq)
    vector = [c for c in rigs.fcurves_of(obj) if c.data_path == 'pose.bones["B"]["rq_vector"]']
    assert len(vector) == 3
    for curve in vector:
        points = curve.keyframe_points
        co = np.empty(2 * len(points), dtype=np.float32)
        points.foreach_get("co", co)
        co[2] = co[0] + 0.005
        points.foreach_set("co", co)
    journal = _recorded_by(monkeypatch, "shifted_keys")
    _check(fault, obj, bpy.ops.pose.rq_continuity_filter, 5)
    assert journal["count"] == 0


def test_reparameterize_failing_halfway_changes_nothing(addon, fault):
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    obj = rigs.armature(NAMES, chain=False)
    for i, pose_bone in enumerate(obj.pose.bones):
        bone_modes.enter_mode(pose_bone, "RQ", tuple((4.0 + i) * np.array([0.6, 0.0, 0.8])))
    _decorate_unanimated(obj)
    _check(fault, obj, bpy.ops.pose.rq_reparameterize, 2)


def _decorate_unanimated(obj):
    pose_bone = obj.pose.bones["B"]
    pose_bone["user_weight"] = 0.25
    pose_bone.id_properties_ui("user_weight").update(min=0.0, max=1.0, description="mine")


def test_an_unexpected_error_is_reported_not_raised(addon, fault):
    """A bug (not a refusal) late in an operator is an error report naming it, not a Python
    traceback: a raising operator would make bpy.ops say "Python: Traceback"."""
    obj = _native_rig("XYZ")
    before = whole_state(obj)
    fault([("rq_blender.conversion", "widen_limits")], 1)
    with pytest.raises(RuntimeError) as raised:
        bpy.ops.pose.rq_set_mode(mode='SWING_TWIST')
    assert "Nothing changed: injected fault in call 1" in str(raised.value)
    assert "Traceback" not in str(raised.value)
    assert differences(before, whole_state(obj)) == []


def test_ik_reach_failing_halfway_changes_nothing(addon, fault):
    """Three RQ bones turned by pose.rq_ik_reach: the third write fails after two bones took
    their new parameters."""
    obj = _rq_rig()
    obj.data.bones.active = obj.data.bones["C"]
    bpy.context.view_layer.update()
    tail = np.array(obj.matrix_world @ obj.pose.bones["C"].tail)
    _check(fault, obj, bpy.ops.pose.rq_ik_reach, 3, target=tuple(tail + (0.3, -0.4, 0.2)))


def test_auto_key_failing_removes_the_action_it_made(addon, fault):
    """pose.rq_ik_reach with auto-keying on an unanimated RQ chain: the first bone's key
    makes the object's action, the second bone's key fails. The action is unassigned and
    removed (the record of the actions that existed cannot hold it)."""
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    obj = rigs.armature(NAMES)
    for pose_bone in obj.pose.bones:
        bone_modes.enter_mode(pose_bone, "RQ", (0.1, 0.2, 0.3))
    obj.data.bones.active = obj.data.bones["C"]
    bpy.context.view_layer.update()
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    target = tuple(np.array(obj.matrix_world @ obj.pose.bones["C"].tail) + (0.3, -0.4, 0.2))
    actions = set(bpy.data.actions)
    before = whole_state(obj)
    calls = fault([("rq_blender.pose_mirror", "key_rotation")], 2)
    with pytest.raises(RuntimeError, match=r"Nothing changed: injected fault in call 2$"):
        bpy.ops.pose.rq_ik_reach(target=target)
    assert calls["count"] == 2
    assert obj.animation_data.action is None
    assert set(bpy.data.actions) == actions
    assert differences(before, whole_state(obj)) == []
    fault([], 0)
    assert bpy.ops.pose.rq_ik_reach(target=target) == {'FINISHED'}
    assert obj.animation_data.action is not None  # so the checks above could fail


@pytest.mark.parametrize(
    ("operator", "properties"),
    [
        (bpy.ops.pose.rq_continuity_filter, {}),
        (bpy.ops.pose.rq_spline_interpolate, {"kind": 'CATMULL_ROM'}),
        (bpy.ops.pose.rq_bake, {"target": 'QUATERNION'}),
        (bpy.ops.pose.rq_set_mode, {"mode": 'SWING_TWIST', "strategy": 'KEYS'}),
    ],
)
def test_rig_wide_operators_pause_the_collector_only_while_they_work(
    addon, fault, rq, monkeypatch, operator, properties
):
    """``collector.while_paused``: the operators write with Python's cyclic garbage
    collector paused, and it runs again after them, also after a failure; one that was off
    before stays off."""
    seen: list[bool] = []
    module = ro.addon_module("rq_blender.animdata")
    for name in ("write_keys", "shift_keys"):
        original = getattr(module, name)

        def recording(*args, _original=original, **kwargs):
            seen.append(gc.isenabled())
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, recording)
    unit = np.array([0.36, -0.48, 0.8])
    jumpy = [(1.0 + 3 * i, rq.reparameterize((0.5 + 1.2 * i) * unit)) for i in range(8)]
    obj = _rq_rig(jumpy)
    before = whole_state(obj)
    fault(WRITES, 2)
    with pytest.raises(RuntimeError, match=r"Nothing changed: injected fault in call 2$"):
        operator(**properties)
    assert gc.isenabled()
    assert differences(before, whole_state(obj)) == []
    fault([], 0)
    seen.clear()
    assert operator(**properties) == {'FINISHED'}
    assert seen and not any(seen), "the writes ran with the collector on"
    assert gc.isenabled()
    gc.disable()
    try:
        operator(**properties)  # (whatever is left to do)
        assert not gc.isenabled()
    finally:
        gc.enable()
