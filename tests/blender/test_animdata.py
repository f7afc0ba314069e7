# SPDX-License-Identifier: GPL-3.0-or-later
"""The animation-data boundary: version differences, bulk reads and writes, and the numpy
F-curve evaluation checked against Blender's own ``FCurve.evaluate``."""

import importlib

import bpy
import numpy as np
import pytest
import rigs
from blender_harness import ADDON_MODULE

INTERPOLATIONS = ("CONSTANT", "LINEAR", "BEZIER")
HANDLE_TYPES = ("AUTO", "AUTO_CLAMPED", "VECTOR", "ALIGNED", "FREE")


@pytest.fixture
def animdata(addon):
    return importlib.import_module(f"{ADDON_MODULE}.rq_blender.animdata")


@pytest.fixture
def fcurve_math(addon):
    return importlib.import_module(f"{ADDON_MODULE}.rq_rotation.keyframes.fcurve_math")


def _owner(animdata, obj):
    (use,) = animdata.actions_of(obj)
    return animdata.fcurve_owner(use)


def _random_curve(animdata, obj, rng, n, extrapolation):
    """One F-curve with random keys, interpolations, handle types and free handles (some
    overlong, so that Blender's handle correction matters)."""
    owner = _owner(animdata, obj)
    times = np.cumsum(rng.uniform(0.3, 6.0, n)) - 3.0
    values = rng.normal(0.0, 3.0, n)
    fcurve = animdata.write_keys(owner, "location", 0, "Test", times, values)
    fcurve.extrapolation = extrapolation
    for point in fcurve.keyframe_points:
        point.interpolation = INTERPOLATIONS[rng.integers(3)]
        kind = HANDLE_TYPES[rng.integers(len(HANDLE_TYPES))]
        point.handle_left_type = point.handle_right_type = kind
        if kind == "FREE":
            x, y = point.co
            point.handle_left = (x - rng.uniform(0.0, 8.0), y + rng.normal(0.0, 4.0))
            point.handle_right = (x + rng.uniform(0.0, 8.0), y + rng.normal(0.0, 4.0))
    fcurve.update()
    return fcurve


def _keyed_object():
    obj = bpy.data.objects.new("Empty", None)
    bpy.context.scene.collection.objects.link(obj)
    obj.keyframe_insert("location", index=1, frame=1)
    return obj


@pytest.mark.parametrize("extrapolation", ["CONSTANT", "LINEAR"])
def test_numpy_evaluation_matches_blender(animdata, fcurve_math, extrapolation):
    rng = np.random.default_rng(7)
    obj = _keyed_object()
    for trial in range(40):
        fcurve = _random_curve(animdata, obj, rng, 1 + trial % 7, extrapolation)
        keys = animdata.read_keys(fcurve)
        assert keys.supported
        first, last = keys.times[0], keys.times[-1]
        t = np.concatenate(
            [
                np.linspace(first - 5.0, last + 5.0, 400),
                keys.times,
                keys.times + 5e-5,  # within Blender's exact-hit threshold
                keys.times - 2e-4,
                keys.times + 1e-3,
            ]
        ).astype(np.float32)
        expected = np.array([fcurve.evaluate(float(x)) for x in t])
        got = fcurve_math.evaluate(keys, t)
        tol = 1e-6 * np.maximum(1.0, np.abs(expected))
        bad = np.abs(got - expected) > tol
        assert not bad.any(), (trial, t[bad][:5], got[bad][:5], expected[bad][:5])


def test_unsupported_curves_fall_back_to_blender(animdata):
    obj = _keyed_object()
    owner = _owner(animdata, obj)
    times, values = np.array([0.0, 10.0]), np.array([0.0, 1.0])
    fcurve = animdata.write_keys(owner, "location", 0, "Test", times, values)
    fcurve.keyframe_points[0].interpolation = "ELASTIC"
    (channel,) = animdata.read_channels(owner, "location", 1)
    assert not channel.keys.supported
    t = np.linspace(-1, 11, 25)
    assert np.allclose(channel.evaluate(t), [fcurve.evaluate(x) for x in t], atol=1e-7)
    fcurve.keyframe_points[0].interpolation = "BEZIER"
    fcurve.modifiers.new("NOISE")
    (channel,) = animdata.read_channels(owner, "location", 1)
    assert not channel.keys.supported
    assert np.allclose(channel.evaluate(t), [fcurve.evaluate(x) for x in t], atol=1e-7)


def test_channel_stack_holds_where_every_curve_of_a_line_holds(animdata):
    obj = _keyed_object()
    owner = _owner(animdata, obj)
    times = np.array([1.0, 4.0, 4.0101, 9.0])
    constant, bezier = 0, 2
    both = np.array([bezier, constant, bezier, bezier])
    # Line 0: location X and Y held from 4 to 4.0101 (Z has no curve: it holds its static).
    for index in (0, 1):
        animdata.write_keys(owner, "location", index, "T", times, times * (index + 1), both)
    # Line 1: rotation X held there, rotation Y not: the rotation is not held.
    animdata.write_keys(owner, "rotation_euler", 0, "T", times, times, both)
    animdata.write_keys(owner, "rotation_euler", 1, "T", times, times, np.full(4, bezier))
    # Line 2: scale X held from 1 to 4 and 4 to 4.0101, but with a modifier numpy does not
    # evaluate: no holds.
    held = animdata.write_keys(
        owner, "scale", 0, "T", times, times, np.array([constant, constant, 2, 2])
    )
    held.modifiers.new("NOISE")
    lines = [animdata.read_channels(owner, path, 3) for path in ("location", "rotation_euler")]
    lines.append(animdata.read_channels(owner, "scale", 3))
    stack = animdata.ChannelStack(lines, np.zeros((3, 3)))
    line, start, end = stack.holds()
    assert line.tolist() == [0]
    np.testing.assert_array_equal(start, [4.0])
    np.testing.assert_allclose(end, [4.0101], atol=1e-6)  # float32 key frames
    # Without the modifier, scale X alone is held twice.
    held.modifiers.remove(held.modifiers[0])
    lines[2] = animdata.read_channels(owner, "scale", 3)
    line, start, _ = animdata.ChannelStack(lines, np.zeros((3, 3))).holds()
    assert line.tolist() == [0, 2, 2]
    np.testing.assert_array_equal(start, [4.0, 1.0, 4.0])


def test_channel_stack_of_vectors_keyed_together_gives_each_curves_values(animdata):
    # Every line keyed on all three channels: the stack's values are its curves' values
    # (the path that skips the static values), also when only some lines are asked for; a
    # line with a missing channel takes the general path, the static value there.
    obj = _keyed_object()
    owner = _owner(animdata, obj)
    rng = np.random.default_rng(7)
    for path in ("location", "rotation_euler", "scale"):
        times = np.cumsum(rng.uniform(1.0, 9.0, 6))
        for index in range(3):
            animdata.write_keys(owner, path, index, "T", times, rng.normal(0.0, 2.0, 6))
    paths = ("location", "rotation_euler", "scale")
    lines = [animdata.read_channels(owner, path, 3) for path in paths]
    statics = rng.normal(size=(3, 3))
    stack = animdata.ChannelStack(lines, statics)
    line = rng.integers(0, 3, 400)
    t = rng.uniform(-5.0, 60.0, 400)
    expected = [animdata.evaluate_channels(lines[i], statics[i], t[line == i]) for i in range(3)]
    got = stack.evaluate(line, t)
    for i in range(3):
        np.testing.assert_array_equal(got[line == i], expected[i])
    np.testing.assert_array_equal(stack.evaluate(line[line == 2], t[line == 2]), expected[2])
    # Scale Y missing: that line holds its static Y, the others are unchanged.
    lines[2] = [lines[2][0], None, lines[2][2]]
    got = animdata.ChannelStack(lines, statics).evaluate(line, t)
    np.testing.assert_array_equal(got[line == 2, 1], statics[2, 1])
    np.testing.assert_array_equal(got[line == 0], expected[0])


def test_write_read_remove_round_trip(animdata):
    obj = _keyed_object()
    owner = _owner(animdata, obj)
    times = np.array([1.0, 2.5, 7.0])
    values = np.array([0.1, -2.0, 3.0])
    ipo = np.array([0, 1, 2])
    animdata.write_keys(owner, "rotation_euler", 2, "Object Transforms", times, values, ipo)
    channels = animdata.read_channels(owner, "rotation_euler", 3)
    assert channels[0] is None and channels[1] is None
    keys = channels[2].keys
    assert np.allclose(keys.times, times) and np.allclose(keys.values, values, atol=1e-7)
    assert list(keys.interpolation) == [0, 1, 2]
    # Rewriting replaces the keys (fewer this time), with explicit free handles.
    left = np.array([[0.0, 1.0], [5.0, 2.0]])
    right = np.array([[2.0, 1.0], [8.0, 4.0]])
    animdata.write_keys(
        owner, "rotation_euler", 2, "X", times[[0, 2]], values[[0, 2]], handles=(left, right)
    )
    keys = animdata.read_channels(owner, "rotation_euler", 3)[2].keys
    assert len(keys.times) == 2
    assert np.allclose(keys.handle_left, left) and np.allclose(keys.handle_right, right)
    static = [9.0, 8.0, 7.0]
    channels = animdata.read_channels(owner, "rotation_euler", 3)
    assert np.allclose(animdata.evaluate_channels(channels, static, times)[:, :2], [9.0, 8.0])
    assert np.allclose(animdata.key_times(channels), [1.0, 7.0])
    removed = [channel.fcurve for channel in channels if channel is not None]
    assert animdata.remove_fcurves(owner, removed) == 1
    assert animdata.read_channels(owner, "rotation_euler", 3) == [None, None, None]


def test_bulk_write_is_fast(animdata):
    import time

    obj = _keyed_object()
    owner = _owner(animdata, obj)
    n = 20000
    start = time.perf_counter()
    animdata.write_keys(owner, "location", 0, "T", np.arange(n, dtype=float), np.sin(np.arange(n)))
    assert time.perf_counter() - start < 0.5
    assert len(animdata.read_channels(owner, "location", 1)[0].keys.times) == n


def test_actions_of_walks_active_action_and_nla_strips_with_slots(animdata):
    obj = rigs.armature(["A"])
    pose_bone = obj.pose.bones["A"]
    rigs.key_rotation(pose_bone, "XYZ", [(1, (0, 0, 0)), (5, (1, 0, 0))])
    first = obj.animation_data.action
    rigs.push_to_nla(obj, 10)
    rigs.key_rotation(pose_bone, "XYZ", [(1, (0, 1, 0))])
    second = obj.animation_data.action
    assert first != second
    uses = animdata.actions_of(obj)
    assert [u.action for u in uses] == [second, first]
    assert uses[0].strip is None and uses[1].strip is not None
    path = animdata.bone_data_path("A", "rotation_euler")
    for use in uses:
        if hasattr(use.action, "slots"):
            assert use.slot is not None
        channels = animdata.read_channels(animdata.fcurve_owner(use), path, 3)
        assert channels[0] is not None
    assert animdata.bone_data_path('a"b', '["rq_vector"]') == 'pose.bones["a\\"b"]["rq_vector"]'


def test_pose_bone_selection_compat(addon):
    compat = importlib.import_module(f"{ADDON_MODULE}.rq_blender.compat")
    obj = rigs.armature(["A", "B"])
    a, b = obj.pose.bones
    compat.set_pose_bone_selected(b, False)
    assert compat.pose_bone_selected(a) and not compat.pose_bone_selected(b)
    assert (bpy.app.version >= (4, 4, 0)) == compat.SLOTTED_ACTIONS


def _curve_state(fcurve):
    """Every RNA property of an F-curve but its name: plain values, the group's name, the
    number of keys, sampled points and modifiers."""
    state = {}
    for prop in fcurve.bl_rna.properties:
        name = prop.identifier
        if name in ("rna_type", "data_path", "array_index"):
            continue
        value = getattr(fcurve, name)
        if prop.type == 'COLLECTION':
            value = len(value)
        elif name == "group":
            value = None if value is None else value.name
        elif name == "driver":
            value = value is None
        elif prop.type == 'FLOAT':
            value = tuple(value)
        state[name] = value
    return state


# A value unlike a new F-curve's for each of its writable properties (`FRESH_FCURVE`).
UNLIKE_NEW = {
    "extrapolation": 'LINEAR',
    "color_mode": 'CUSTOM',
    "color": (0.5, 0.25, 1.0),
    "select": False,
    "lock": True,
    "mute": True,
    "hide": True,
    "auto_smoothing": 'NONE',
    "is_valid": False,
}


def test_a_reused_fcurve_is_what_a_new_one_would_be(animdata):
    """`reuse_fcurve` renames a curve and resets everything else: compared with a curve made
    by ``compat.new_fcurve``, property by property (every RNA property the curve has on this
    release), after the old curve had every writable property changed."""
    compat = importlib.import_module(f"{ADDON_MODULE}.rq_blender.compat")
    obj = _keyed_object()
    owner = _owner(animdata, obj)
    old = animdata.write_keys(owner, "rotation_euler", 2, "Old", np.arange(3.0), np.ones(3))
    old.modifiers.new('NOISE')
    changed = UNLIKE_NEW
    writable = {
        p.identifier
        for p in old.bl_rna.properties
        if not p.is_readonly and p.type not in ('POINTER', 'COLLECTION')
    }
    assert writable - {"data_path", "array_index"} == set(changed) == set(animdata.FRESH_FCURVE)
    for name, value in changed.items():
        setattr(old, name, value)
    fresh = compat.new_fcurve(owner, "scale", 0, "New")
    reused = animdata.reuse_fcurve(owner, old, "scale", 1, "New")
    assert reused == old
    assert (reused.data_path, reused.array_index) == ("scale", 1)
    assert _curve_state(reused) == _curve_state(fresh)
    assert owner.fcurves.find("scale", index=1) == reused
    assert owner.fcurves.find("rotation_euler", index=2) is None
    fresh.keyframe_points.add(1)
    fresh.convert_to_samples(0, 2)
    assert animdata.reusable(reused) and not animdata.reusable(fresh)


def test_unlike_new_finds_each_property_that_differs_from_a_new_curve(animdata):
    """`unlike_new` reads every `FRESH_FCURVE` property of all curves in bulk: a curve with
    any one of them changed (each enum, flag and the color) is named, the new curves and one
    only renamed and rekeyed (like new, so `reuse_fcurve` skips reading them) are not."""
    compat = importlib.import_module(f"{ADDON_MODULE}.rq_blender.compat")
    obj = _keyed_object()
    owner = _owner(animdata, obj)
    changed = UNLIKE_NEW
    assert set(changed) == set(animdata.FRESH_FCURVE)
    for index, (name, value) in enumerate(changed.items()):
        setattr(compat.new_fcurve(owner, "pose.bones[\"Changed\"].scale", index, "G"), name, value)
    for index in range(3):
        compat.new_fcurve(owner, "scale", index, "G")
    renamed = animdata.write_keys(owner, "rotation_euler", 0, "G", np.arange(3.0), np.ones(3))
    renamed.data_path = "delta_location"
    unlike = animdata.unlike_new(owner)
    one_at_a_time = {
        (fcurve.data_path, fcurve.array_index)
        for fcurve in owner.fcurves
        for name, value in animdata.FRESH_FCURVE.items()
        if (tuple(getattr(fcurve, name)) if name == "color" else getattr(fcurve, name)) != value
    }
    assert unlike == one_at_a_time  # (with the keyed curve `_keyed_object` made, if unlike)
    changed_keys = {("pose.bones[\"Changed\"].scale", i) for i in range(len(changed))}
    assert changed_keys <= unlike
    assert not unlike & {("scale", 0), ("scale", 1), ("scale", 2), ("delta_location", 0)}
