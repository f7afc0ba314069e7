# SPDX-License-Identifier: GPL-3.0-or-later
"""The drivers that pose RQ and swing/twist bones, in real Blender (4.2 and 5.0).

Expected rotations are computed here in float64 numpy from the float32 values Blender's
drivers read, independently of the add-on (and cross-checked against the core where it
applies). Blender's pose math is float32: poses must match within 1e-6 + 2^-23 * |v|.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import time

import bpy
import numpy as np
import pytest
from rigs import armature, evaluate

TINY = (0.0, 1e-12, -1e-12, 1e-6, -1e-6, 5e-5, -5e-5, 1e-4, 1.5e-4)


# ---------------------------------------------------------------- independent references


def quat_multiply(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hamilton product of (w, x, y, z) quaternions: q first, then p."""
    pw, pv, qw, qv = p[0], p[1:], q[0], q[1:]
    return np.concatenate([[pw * qw - pv @ qv], pw * qv + qw * pv + np.cross(pv, qv)])


def rq_quat(v) -> np.ndarray:
    """exp of the rotation vector v, float64."""
    v = np.asarray(v, dtype=np.float64)
    angle = np.linalg.norm(v)
    if angle == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * v / angle])


def radial_scale(x: float, z: float, a: float, b: float) -> float:
    """1 / max(1, sqrt((x/a)^2 + (z/b)^2)), with 0/0 = 0 and c/0 = inf for c != 0."""

    def ratio(u: float, limit: float) -> float:
        if limit > 0:
            return (u / limit) ** 2
        return 0.0 if u == 0 else math.inf

    return 1.0 / max(1.0, math.sqrt(ratio(x, a) + ratio(z, b)))


def swing_twist_quat(x, z, t, a=math.pi, b=math.pi, low=-math.pi, high=math.pi) -> np.ndarray:
    """swing * twist with the evaluation clamp (radial swing scaling, clamped twist)."""
    scale = radial_scale(x, z, a, b)
    swing = rq_quat([x * scale, 0.0, z * scale])
    twist = rq_quat([0.0, min(max(t, low), max(low, high)), 0.0])
    return quat_multiply(swing, twist)


def quat_matrix(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def f32(values) -> list[float]:
    """What a driver variable reads: the value rounded to float32."""
    return [float(np.float32(v)) for v in values]


def basis_rotation(pose_bone) -> np.ndarray:
    return np.array(pose_bone.matrix_basis, dtype=np.float64)[:3, :3]


def tolerance(magnitude: float) -> float:
    return 1e-6 + 2.0**-23 * magnitude


# ---------------------------------------------------------------- fixtures


def random_vectors(seed: int = 7) -> list[tuple[float, float, float]]:
    rng = np.random.default_rng(seed)
    vectors = [(0.0, 0.0, 0.0)]
    for tiny in TINY[1:]:
        vectors += [(tiny, 0.0, 0.0), (0.0, tiny, 0.0), (0.0, 0.0, tiny), (tiny, -tiny, tiny)]
    for angle in (
        math.pi - 1e-6,
        math.pi,
        math.pi + 1e-6,
        2 * math.pi - 1e-6,
        2 * math.pi,
        2 * math.pi + 1e-5,
        3 * math.pi,
        10.0,
        100.0,
        1000.0,
    ):
        direction = rng.normal(size=3)
        vectors.append(tuple(angle * direction / np.linalg.norm(direction)))
        vectors.append((0.0, -angle, 0.0))
    vectors += [tuple(v) for v in rng.normal(scale=1.5, size=(60, 3))]
    vectors += [tuple(v) for v in rng.uniform(-20, 20, size=(20, 3))]
    return vectors


def rig_in_mode(addon, count: int, mode: str):
    obj = armature([f"B{i}" for i in range(count)], chain=False)
    initial = (0.0, 0.0, 0.0) if mode == "RQ" else ((0.0, 0.0), 0.0)
    for pose_bone in obj.pose.bones:
        addon.rq_blender.bone_modes.enter_mode(pose_bone, mode, initial)
    return obj


def all_drivers(obj) -> list:
    return list(obj.animation_data.drivers)


def assert_drivers_native_and_valid(obj) -> None:
    for fcurve in all_drivers(obj):
        driver = fcurve.driver
        assert driver.is_valid, (fcurve.data_path, fcurve.array_index, driver.expression)
        assert not fcurve.mute
        if driver.type == 'SCRIPTED':
            assert driver.is_simple_expression, driver.expression
            assert len(driver.expression) <= 255
        else:
            assert driver.type in {'AVERAGE', 'SUM', 'MIN', 'MAX'}
        assert len(fcurve.keyframe_points) == 0 and len(fcurve.modifiers) == 0
        for variable in driver.variables:
            assert variable.type == 'SINGLE_PROP'
            assert '["rq_' in variable.targets[0].data_path  # ID properties, not add-on RNA


# ---------------------------------------------------------------- RQ mode


def test_rq_drivers_are_built_in_or_simple_expressions(addon):
    obj = rig_in_mode(addon, 3, "RQ")
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    assert len(all_drivers(obj)) == 3 * 4
    assert not bpy.app.driver_namespace.get("rq_rotations")


def test_rq_pose_matches_the_exponential_map(addon, rq):
    vectors = random_vectors()
    obj = rig_in_mode(addon, len(vectors), "RQ")
    for pose_bone, v in zip(obj.pose.bones, vectors, strict=True):
        pose_bone["rq_vector"] = v
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    worst = 0.0
    for pose_bone, v in zip(obj.pose.bones, vectors, strict=True):
        expected = quat_matrix(rq_quat(f32(v)))
        error = np.abs(basis_rotation(pose_bone) - expected).max()
        assert error <= tolerance(np.linalg.norm(v)), (v, error)
        worst = max(worst, error / tolerance(np.linalg.norm(v)))
        core = quat_matrix(np.asarray(rq.rq_to_quat(np.asarray(f32(v)))))
        np.testing.assert_allclose(core, expected, atol=1e-12)
    assert worst > 0.0 or len(vectors) == 0


@pytest.mark.parametrize("tiny", [t for t in TINY if t != 0.0])
def test_rq_tiny_rotations_survive_and_never_invalidate(addon, tiny):
    """Blender 5.0 zeroes driver outputs in (0, 1e-4] on its default driver curve: not ours."""
    obj = rig_in_mode(addon, 1, "RQ")
    pose_bone = obj.pose.bones[0]
    zero = (0.0, 0.0, 0.0)
    for v in [zero, (tiny, 0.0, 0.0), zero, (0.0, tiny, -tiny), zero]:
        pose_bone["rq_vector"] = v
        evaluate(obj)
        assert tuple(pose_bone.rotation_axis_angle)[1:] == tuple(f32(v)), v  # passed exactly
        expected = quat_matrix(rq_quat(f32(v)))
        # float32 resolution, far below the rotation itself
        assert np.abs(basis_rotation(pose_bone) - expected).max() <= 1e-7
    pose_bone["rq_vector"] = (0.5, -0.25, 1.0)
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    expected = quat_matrix(rq_quat(f32((0.5, -0.25, 1.0))))
    assert np.abs(basis_rotation(pose_bone) - expected).max() <= 1e-6


def test_rq_keyed_tiny_values_play_back(addon):
    obj = rig_in_mode(addon, 1, "RQ")
    pose_bone = obj.pose.bones[0]
    keys = {1: (5e-5, -5e-5, 2e-5), 2: (1e-7, 0.0, -1e-7), 3: (0.0, 0.0, 0.0), 4: (3.0, -2.0, 1.0)}
    for frame, v in keys.items():
        pose_bone["rq_vector"] = v
        pose_bone.keyframe_insert('["rq_vector"]', frame=frame)
    for frame, v in keys.items():
        bpy.context.scene.frame_set(frame)
        expected = quat_matrix(rq_quat(f32(v)))
        assert np.abs(basis_rotation(pose_bone) - expected).max() <= tolerance(np.linalg.norm(v))
    assert_drivers_native_and_valid(obj)


# ---------------------------------------------------------------- swing/twist mode

# (swing x, swing z, twist, a, b, twist min, twist max)
SWING_TWIST_CASES = [
    (0.0, 0.0, 0.0, math.pi, math.pi, -math.pi, math.pi),
    (0.3, -0.7, 1.1, math.pi, math.pi, -math.pi, math.pi),
    (-2.0, 1.5, -3.0, math.pi, math.pi, -math.pi, math.pi),
    (0.1, 0.2, 0.3, 0.5, 0.5, -1.0, 1.0),  # inside
    (1.0, 0.2, 2.0, 0.5, 0.8, -1.0, 1.0),  # outside both
    (-1.0, -3.0, -2.0, 0.5, 0.8, -1.0, 1.0),
    (0.4, 0.0, 0.0, 0.0, 1.0, -1.0, 1.0),  # a = 0, off the segment: scaled to 0
    (0.0, 0.4, 0.2, 0.0, 1.0, -1.0, 1.0),  # a = 0, on the segment
    (0.0, 1.4, 0.2, 0.0, 1.0, -1.0, 1.0),  # a = 0, beyond the segment
    (0.0, 0.4, 0.2, 1.0, 0.0, -1.0, 1.0),  # b = 0, off the segment
    (0.7, 0.0, 0.2, 1.0, 0.0, -1.0, 1.0),  # b = 0, on the segment
    (0.7, 0.5, 0.2, 0.0, 0.0, -1.0, 1.0),  # a = b = 0
    (0.7, 0.5, 0.9, 1.0, 1.0, 0.0, 0.0),  # twist range [0, 0]: 2 DOF
    (0.7, 0.5, -0.9, 1.0, 1.0, 0.0, 0.0),
    (math.pi, 0.0, 0.5, math.pi, math.pi, -math.pi, math.pi),  # swing of pi
    (0.0, -math.pi, -0.5, math.pi, math.pi, -math.pi, math.pi),
    (1e-12, -1e-12, 1e-12, math.pi, math.pi, -math.pi, math.pi),
    (5e-5, 5e-5, 5e-5, math.pi, math.pi, -math.pi, math.pi),
    (-5e-5, 1e-6, -5e-5, math.pi, math.pi, -math.pi, math.pi),
    (5e-5, 0.0, 2.5, math.pi, math.pi, -math.pi, math.pi),
    (0.0, 0.0, 1e-30, math.pi, math.pi, -math.pi, math.pi),
    (0.0, 0.0, math.pi, math.pi, math.pi, -math.pi, math.pi),
    (0.0, 0.0, -math.pi, math.pi, math.pi, -math.pi, math.pi),
    (3e-20, 0.0, 1.0, math.pi, math.pi, -math.pi, math.pi),
    (1e30, -1e30, 1e30, math.pi, math.pi, -math.pi, math.pi),  # huge: clamped to the ellipse
]


def random_swing_twist_cases(seed: int = 11) -> list[tuple[float, ...]]:
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(60):
        x, z = rng.normal(scale=1.2, size=2)
        t = rng.uniform(-4, 4)
        a, b = rng.uniform(0.05, math.pi, size=2)
        low = rng.uniform(-math.pi, 0.5)
        cases.append((x, z, t, a, b, low, low + rng.uniform(0, 2)))
    return cases


def set_swing_twist(pose_bone, case) -> None:
    x, z, t, a, b, low, high = case
    pose_bone["rq_swing"] = (x, z)
    pose_bone["rq_twist"] = t
    pose_bone["rq_swing_limit"] = (a, b)
    pose_bone["rq_twist_limit"] = (low, high)


def test_swing_twist_drivers_are_simple_expressions(addon):
    obj = rig_in_mode(addon, 2, "SWING_TWIST")
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    assert len(all_drivers(obj)) == 2 * 4


def test_swing_twist_pose_matches_with_limits(addon, rq):
    cases = SWING_TWIST_CASES + random_swing_twist_cases()
    obj = rig_in_mode(addon, len(cases), "SWING_TWIST")
    for pose_bone, case in zip(obj.pose.bones, cases, strict=True):
        set_swing_twist(pose_bone, case)
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    for pose_bone, case in zip(obj.pose.bones, cases, strict=True):
        expected = quat_matrix(swing_twist_quat(*f32(case)))
        error = np.abs(basis_rotation(pose_bone) - expected).max()
        assert error <= tolerance(2 * math.pi), (case, error)
        x, z, t, a, b, low, high = f32(case)
        if a > 0 and b > 0 and abs(x) < 1e20:
            core = rq.swing_twist_to_quat(
                rq.scale_swing_into_ellipse(np.array([x, z]), a, b), rq.clamp_twist(t, low, high)
            )
            np.testing.assert_allclose(quat_matrix(np.asarray(core)), expected, atol=1e-12)


def limit_cases(seed: int = 13) -> list[tuple[float, ...]]:
    """Swing/twist cases with inverted twist ranges and negative or zero semi-axes."""
    rng = np.random.default_rng(seed)
    axes = [
        (-0.5, 1.0),
        (1.0, -0.3),
        (0.0, 1.2),
        (0.8, 0.0),
        (-1.0, -1.0),
        (0.0, 0.0),
        (-2.0, 0.0),
        (0.7, 0.9),
    ]
    ranges = [(0.5, -0.5), (1.0, 0.2), (-0.3, -2.5), (2.0, 2.0), (-1.0, 1.0)]
    cases = []
    for a, b in axes:
        for low, high in ranges:
            for x, z, t in rng.uniform(-2.5, 2.5, size=(6, 3)):
                cases.append((x, z, t, a, b, low, high))
            cases.append((0.0, 0.4, low - 0.1, a, b, low, high))  # on a hinge's axis
            cases.append((-0.6, 0.0, high + 0.1, a, b, low, high))
    return cases


def test_limits_of_any_sign_and_order_pose_as_the_core_clamps(addon, rq):
    """Inverted twist ranges hold the twist at their first value, negative semi-axes act as
    zero (a hinge): the driven pose is the core's clamp_twist and scale_swing_into_ellipse
    (what R, the overlay, conversion and the panel use), sampled over many values."""
    cases = limit_cases()
    obj = rig_in_mode(addon, len(cases), "SWING_TWIST")
    for pose_bone, case in zip(obj.pose.bones, cases, strict=True):
        set_swing_twist(pose_bone, case)
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    for pose_bone, case in zip(obj.pose.bones, cases, strict=True):
        x, z, t, a, b, low, high = f32(case)
        core = rq.swing_twist_to_quat(
            rq.scale_swing_into_ellipse(np.array([x, z]), a, b), rq.clamp_twist(t, low, high)
        )
        error = np.abs(basis_rotation(pose_bone) - quat_matrix(np.asarray(core))).max()
        assert error <= tolerance(2 * math.pi), (case, error)
        bone_modes = addon.rq_blender.bone_modes
        stored = bone_modes.parameter_values(pose_bone, "SWING_TWIST")
        static = bone_modes.static_axis_angle(pose_bone, "SWING_TWIST", stored)
        driven = np.asarray(pose_bone.rotation_axis_angle)
        assert driven == pytest.approx(static, rel=1e-5, abs=1e-5)  # the Python twin agrees


def test_swing_twist_defaults_clamp_nothing(addon):
    obj = rig_in_mode(addon, 1, "SWING_TWIST")
    pose_bone = obj.pose.bones[0]
    assert tuple(pose_bone["rq_swing_limit"]) == (math.pi, math.pi)
    assert tuple(pose_bone["rq_twist_limit"]) == (-math.pi, math.pi)
    rng = np.random.default_rng(5)
    for _ in range(20):
        direction = rng.normal(size=2)
        swing = direction / np.linalg.norm(direction) * rng.uniform(0, math.pi)
        twist = rng.uniform(-math.pi, math.pi)
        pose_bone["rq_swing"] = tuple(swing)
        pose_bone["rq_twist"] = twist
        evaluate(obj)
        x, z, t = f32((*swing, twist))
        unclamped = quat_multiply(rq_quat([x, 0.0, z]), rq_quat([0.0, t, 0.0]))
        assert np.abs(basis_rotation(pose_bone) - quat_matrix(unclamped)).max() <= 2e-6


def test_swing_twist_survives_zero_and_tiny_inputs(addon):
    obj = rig_in_mode(addon, 1, "SWING_TWIST")
    pose_bone = obj.pose.bones[0]
    for tiny in TINY:
        for limits in ((math.pi, math.pi, -math.pi, math.pi), (0.0,) * 4, (0.0, 1.0, 0.0, 1.0)):
            case = (tiny, -tiny, tiny, *limits)
            set_swing_twist(pose_bone, case)
            evaluate(obj)
            expected = quat_matrix(swing_twist_quat(*f32(case)))
            assert np.abs(basis_rotation(pose_bone) - expected).max() <= 1e-6, case
    set_swing_twist(pose_bone, (0.4, -0.3, 0.2, 1.0, 1.0, -1.0, 1.0))
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    expected = quat_matrix(swing_twist_quat(*f32((0.4, -0.3, 0.2, 1.0, 1.0, -1.0, 1.0))))
    assert np.abs(basis_rotation(pose_bone) - expected).max() <= 1e-6


# ---------------------------------------------------------------- portability

REOPEN_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import bpy
    preferences = bpy.context.preferences
    preferences.filepaths.use_scripts_auto_execute = False
    bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False, use_scripts=False)
    assert not any("rq_rotations" in name for name in preferences.addons.keys())
    obj = bpy.data.objects["Rig"]
    scene = bpy.context.scene
    poses = {}
    for frame in json.loads(sys.argv[2]):
        scene.frame_set(frame)
        poses[frame] = [[list(row) for row in pb.matrix_basis] for pb in obj.pose.bones]
    valid = all(fc.driver.is_valid for fc in obj.animation_data.drivers)
    print("RESULT" + json.dumps({"poses": poses, "valid": valid}))
    """
)


def poses_at(obj, frames) -> dict[str, list]:
    poses = {}
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        poses[str(frame)] = [[list(row) for row in pb.matrix_basis] for pb in obj.pose.bones]
    return poses


def test_saved_file_plays_identically_without_the_addon_and_auto_run(addon, tmp_path):
    modes = addon.rq_blender.bone_modes
    obj = armature([f"B{i}" for i in range(6)])
    rng = np.random.default_rng(3)
    for i, pose_bone in enumerate(obj.pose.bones):
        mode = "RQ" if i % 2 == 0 else "SWING_TWIST"
        start = (0.0, 0.0, 0.0) if mode == "RQ" else ((0.0, 0.0), 0.0)
        modes.enter_mode(pose_bone, mode, start)
        if mode == "SWING_TWIST":
            pose_bone["rq_swing_limit"] = (0.9, 0.6)
            pose_bone["rq_twist_limit"] = (-0.5, 0.7)
        for frame in (1, 7, 13, 20):
            if mode == "RQ":
                pose_bone["rq_vector"] = tuple(rng.normal(scale=2.0, size=3))
                pose_bone.keyframe_insert('["rq_vector"]', frame=frame)
            else:
                pose_bone["rq_swing"] = tuple(rng.normal(scale=1.0, size=2))
                pose_bone["rq_twist"] = float(rng.normal())
                pose_bone.keyframe_insert('["rq_swing"]', frame=frame)
                pose_bone.keyframe_insert('["rq_twist"]', frame=frame)
    path = tmp_path / "rig.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    frames = list(range(0, 22))
    here = poses_at(obj, frames)

    environment = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "no-addons"))
    result = subprocess.run(
        [sys.executable, "-c", REOPEN_SCRIPT, str(path), json.dumps(frames)],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT"))
    there = json.loads(line[len("RESULT") :])
    assert there["valid"]
    assert there["poses"] == here  # bit for bit (floats round-trip through JSON exactly)
    moving = {json.dumps(pose) for pose in here.values()}
    # the rig moves (it holds before the first and after the last key)
    assert len(moving) == len(frames) - 2


# ---------------------------------------------------------------- renames


@pytest.mark.parametrize("how", ["pose_bone", "bone", "edit_bone"])
def test_renaming_a_bone_keeps_drivers_valid(addon, how):
    obj = rig_in_mode(addon, 2, "RQ")
    modes = addon.rq_blender.bone_modes
    modes.enter_mode(obj.pose.bones["B1"], "SWING_TWIST", ((0.2, 0.3), 0.4))
    if how == "pose_bone":
        obj.pose.bones["B0"].name = 'New "name" \\ 0'
        obj.pose.bones["B1"].name = "New1"
    elif how == "bone":
        obj.data.bones["B0"].name = 'New "name" \\ 0'
        obj.data.bones["B1"].name = "New1"
    else:
        bpy.ops.object.mode_set(mode='EDIT')
        obj.data.edit_bones["B0"].name = 'New "name" \\ 0'
        obj.data.edit_bones["B1"].name = "New1"
        bpy.ops.object.mode_set(mode='POSE')
    first, second = obj.pose.bones['New "name" \\ 0'], obj.pose.bones["New1"]
    first["rq_vector"] = (0.3, -0.2, 0.9)
    evaluate(obj)  # the add-on's handler repairs after this update ...
    evaluate(obj)  # ... and the repaired drivers evaluate in the next one
    assert_drivers_native_and_valid(obj)
    assert modes.current_mode(first) == "RQ" and modes.current_mode(second) == "SWING_TWIST"
    expected = quat_matrix(rq_quat(f32((0.3, -0.2, 0.9))))
    assert np.abs(basis_rotation(first) - expected).max() <= 1e-6
    expected = quat_matrix(swing_twist_quat(*f32((0.2, 0.3, 0.4))))
    assert np.abs(basis_rotation(second) - expected).max() <= 1e-6


def test_repair_rewrites_stale_variable_paths(addon, tmp_path):
    """A file renamed where nothing fixed the paths: the add-on repairs them, directly and,
    through its handlers, when the file is opened."""
    obj = rig_in_mode(addon, 2, "RQ")
    modes = addon.rq_blender.bone_modes

    def make_stale(bone):
        for fcurve in obj.animation_data.drivers:
            for variable in fcurve.driver.variables:
                target = variable.targets[0]
                target.data_path = target.data_path.replace(f'bones["{bone}"]', 'bones["Gone"]')

    make_stale("B1")
    assert modes.repair_driver_paths(obj) == 4  # the four drivers of B1
    assert modes.repair_driver_paths(obj) == 0
    for fcurve in obj.animation_data.drivers:
        bone_path = fcurve.data_path.rsplit(".", 1)[0]
        assert all(v.targets[0].data_path.startswith(bone_path) for v in fcurve.driver.variables)
    # the same through the registered handlers, on a file saved with stale paths
    make_stale("B0")
    obj.pose.bones["B0"]["rq_vector"] = (0.1, 0.2, 0.3)
    path, name = tmp_path / "stale.blend", obj.name
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects[name]
    evaluate(obj)
    assert modes.repair_driver_paths(obj) == 0
    assert_drivers_native_and_valid(obj)
    expected = quat_matrix(rq_quat(f32((0.1, 0.2, 0.3))))
    assert np.abs(basis_rotation(obj.pose.bones["B0"]) - expected).max() <= 1e-6


def test_update_handler_scans_drivers_only_after_a_rename(addon, monkeypatch):
    """Every depsgraph update of an armature (each mouse move of a drag) looks at its bone
    names only; the driver scan runs when they changed."""
    obj = rig_in_mode(addon, 2, "RQ")
    handlers = addon.rq_blender.handlers
    scans = []
    real = handlers.repair_driver_paths
    monkeypatch.setattr(handlers, "repair_driver_paths", lambda o: scans.append(o.name) or real(o))
    for value in (0.1, 0.2, 0.3):
        obj.pose.bones["B0"]["rq_vector"] = (value, 0.0, 0.0)
        evaluate(obj)
    assert len(scans) <= 1  # at most the first look at this armature
    scans.clear()
    obj.pose.bones["B1"].name = "Renamed"
    evaluate(obj)
    assert scans == [obj.name]
    assert_drivers_native_and_valid(obj)


@pytest.mark.parametrize(
    "name, bad, good",
    [
        ("rq_swing", (math.nan, 0.3), (0.2, 0.3)),
        ("rq_twist", math.nan, 0.4),
        ("rq_twist_limit", (math.nan, 1.0), (-1.0, 1.0)),
        ("rq_swing_limit", (0.5, math.nan), (0.5, 1.0)),
    ],
)
def test_update_handler_revalidates_drivers_once_values_are_finite(addon, name, bad, good):
    """NaN or inf makes Blender flag the drivers invalid for good; the update handler clears
    the flag once the values are finite again, so the bone turns again."""
    obj = rig_in_mode(addon, 2, "SWING_TWIST")
    pose_bone = obj.pose.bones["B1"]
    set_swing_twist(pose_bone, (0.2, 0.3, 0.4, 0.5, 1.0, -1.0, 1.0))
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    pose_bone[name] = bad
    evaluate(obj)
    evaluate(obj)
    assert not all(f.driver.is_valid for f in all_drivers(obj))  # what Blender does
    pose_bone[name] = good
    evaluate(obj)
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    expected = quat_matrix(swing_twist_quat(*f32((0.2, 0.3, 0.4, 0.5, 1.0, -1.0, 1.0))))
    assert np.abs(basis_rotation(pose_bone) - expected).max() <= 1e-6


def test_update_handler_leaves_drivers_reading_nan_alone(addon):
    """While a value is still NaN the scan changes nothing (no update loop)."""
    obj = rig_in_mode(addon, 1, "SWING_TWIST")
    obj.pose.bones[0]["rq_swing"] = (math.nan, 0.0)
    evaluate(obj)
    evaluate(obj)
    assert addon.rq_blender.bone_modes.has_invalid_driver(obj)
    assert addon.rq_blender.bone_modes.repair_driver_paths(obj) == 0
    obj.pose.bones[0]["rq_swing"] = (0.0, 0.5)
    evaluate(obj)
    evaluate(obj)
    assert_drivers_native_and_valid(obj)
    expected = quat_matrix(rq_quat(f32((0.0, 0.0, 0.5))))
    assert np.abs(basis_rotation(obj.pose.bones[0]) - expected).max() <= 1e-6


def test_handlers_are_registered_while_enabled(addon):
    handlers = addon.rq_blender.handlers
    assert handlers.rq_repair_after_update in bpy.app.handlers.depsgraph_update_post
    assert handlers.rq_repair_after_load in bpy.app.handlers.load_post


def test_update_handler_costs_little_per_drag_update(addon):
    """Each depsgraph update of a 200-bone swing/twist rig (a mouse move of a drag) pays one
    look at the bone names and one at the drivers' flags: a small part of the update."""
    obj = rig_in_mode(addon, 200, "SWING_TWIST")
    evaluate(obj)
    handlers = addon.rq_blender.handlers
    handlers._repair([obj], only_renamed=True)  # settled: a scan found nothing to change
    pose_bone = obj.pose.bones["B7"]
    update_times, look_times = [], []
    for step in range(30):
        pose_bone["rq_swing"] = (0.01 * step, 0.2)
        obj.update_tag()
        start = time.perf_counter()
        bpy.context.view_layer.update()  # the handler runs in here too
        update_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        handlers._repair([obj], only_renamed=True)
        look_times.append(time.perf_counter() - start)
    update, look = float(np.median(update_times)), float(np.median(look_times))
    assert look < 0.1 * update, f"update {1e3 * update:.2f} ms, handler {1e3 * look:.3f} ms"


def test_driver_lookups_in_a_workbench_match_blenders_find(addon):
    """Inside a `workbench` or `lookups` block drivers are looked up through an index
    (`drivers.find`): after installs, removals, a channel driven twice (removing one leaves
    the other) and a nested block, every lookup gives what ``AnimDataDrivers.find`` gives."""
    drivers = addon.rq_blender.drivers
    bone_modes = addon.rq_blender.bone_modes
    obj = armature(("A", "B", "C"))
    a, b, c = obj.pose.bones
    bone_modes.enter_mode(a, "RQ", (0.1, 0.2, 0.3))
    paths = [drivers.driven_path(pose_bone) for pose_bone in obj.pose.bones]

    def check():
        found = obj.animation_data.drivers
        for path in paths:
            for index in range(4):
                assert drivers.find(obj, path, index) == found.find(path, index=index)

    for block in (drivers.workbench, drivers.lookups):  # apply_plan's, or an operator's
        bone_modes.enter_mode(b, "SWING_TWIST", ((0.1, 0.2), 0.3))
        twice = obj.animation_data.drivers.from_existing(src_driver=drivers.bone_drivers(b)[1])
        with block():
            check()  # the index read from the object
            drivers.remove(b)  # the first of the two on index 1 too
            assert drivers.find(obj, paths[1], 1) == twice
            check()
            with drivers.workbench():
                bone_modes.enter_mode(c, "RQ", (0.0, 0.0, 1.0))
                check()
            check()
            bone_modes.enter_mode(a, "SWING_TWIST", ((0.3, 0.0), 0.0))  # replaces A's drivers
            check()
            drivers.remove(b)  # the other one
            assert drivers.bone_drivers(b) == []
        check()  # outside: Blender's find itself
    assert bone_modes.current_mode(a) == "SWING_TWIST" and bone_modes.current_mode(c) == "RQ"


def test_modes_remembered_in_a_lookups_block_follow_install_and_remove(addon):
    """Inside a `lookups` block the mode a bone's angle driver reads is remembered
    (`drivers.angle_mode`, asked by every `bone_modes.current_mode`) until `install` or
    `remove` changes the bone's drivers: entering a mode, leaving it for axis-angle (the
    driven mode itself) and switching between add-on modes each give the bone's new mode,
    as outside a block."""
    drivers = addon.rq_blender.drivers
    bone_modes = addon.rq_blender.bone_modes
    obj = armature(("A", "B"))
    a, b = obj.pose.bones
    a.rotation_mode = 'AXIS_ANGLE'
    bone_modes.enter_mode(b, "RQ", (0.1, 0.2, 0.3))
    with drivers.lookups():
        assert bone_modes.current_mode(a) == 'AXIS_ANGLE'  # remembered: no driver
        read = drivers._read_angle_mode
        calls = []
        drivers._read_angle_mode = lambda *args: calls.append(args) or read(*args)
        try:
            assert [drivers.angle_mode(b), drivers.angle_mode(b)] == ["RQ", "RQ"]
        finally:
            drivers._read_angle_mode = read
        assert len(calls) == 1  # remembered, not read anew
        assert bone_modes.current_mode(b) == "RQ"
        bone_modes.enter_mode(a, "RQ", (0.0, 0.5, 0.0))  # `install` forgets A's
        assert bone_modes.current_mode(a) == "RQ"
        bone_modes.leave_mode(a, 'AXIS_ANGLE')  # `remove` forgets it
        assert bone_modes.current_mode(a) == 'AXIS_ANGLE'
        bone_modes.enter_mode(b, "SWING_TWIST", ((0.1, 0.2), 0.3))
        assert bone_modes.current_mode(b) == "SWING_TWIST"
    assert bone_modes.current_mode(a) == 'AXIS_ANGLE'
    assert bone_modes.current_mode(b) == "SWING_TWIST"


def _driver_record(fcurve) -> tuple:
    """What a driver F-curve is: path, index, keys, modifiers, type, expression, variables."""
    driver = fcurve.driver
    variables = tuple(
        (v.name, v.type, v.targets[0].id_type, v.targets[0].id.name, v.targets[0].data_path)
        for v in driver.variables
    )
    return (
        fcurve.data_path,
        fcurve.array_index,
        len(fcurve.keyframe_points),
        len(fcurve.modifiers),
        driver.type,
        driver.expression if driver.type == 'SCRIPTED' else "",
        variables,
    )


def test_one_workbench_builds_each_bones_drivers_as_a_block_of_its_own(addon):
    """Drivers installed in one `workbench` are copies of prototypes shared by its bones: in
    RQ and swing/twist mode alike, on two armatures and over bones switched twice, each bone
    gets the drivers a block of its own gives it, and they pose it."""
    drivers = addon.rq_blender.drivers
    bone_modes = addon.rq_blender.bone_modes
    names = ("A", "B", "C", "D")
    values = {"RQ": (0.3, -0.2, 0.5), "SWING_TWIST": ((0.3, -0.4), 0.7)}
    modes = ("RQ", "SWING_TWIST", "RQ", "SWING_TWIST")
    alone = armature(names)
    for pose_bone, mode in zip(alone.pose.bones, modes, strict=True):
        with drivers.workbench():
            bone_modes.enter_mode(pose_bone, mode, values[mode])
    shared = [armature(names), armature(names)]
    with drivers.workbench():
        for obj in shared:
            for pose_bone, mode in zip(obj.pose.bones, modes, strict=True):
                other = "RQ" if mode == "SWING_TWIST" else "SWING_TWIST"
                bone_modes.enter_mode(pose_bone, other, values[other])
                bone_modes.enter_mode(pose_bone, mode, values[mode])
    bpy.context.view_layer.update()

    def records(obj):
        own = sorted(_driver_record(f) for f in obj.animation_data.drivers)
        return [r[:3] + r[3:6] + (tuple(v[:3] + v[4:] for v in r[6]),) for r in own]

    want = records(alone)
    assert len(want) == 4 * len(names)
    for obj in shared:
        assert records(obj) == want
        for fcurve in obj.animation_data.drivers:  # each reads its own armature
            assert all(v.targets[0].id == obj for v in fcurve.driver.variables)
            assert fcurve.driver.is_valid
        for pose_bone, own in zip(obj.pose.bones, alone.pose.bones, strict=True):
            assert bone_modes.current_mode(pose_bone) == bone_modes.current_mode(own)
            np.testing.assert_allclose(
                pose_bone.matrix_basis, own.matrix_basis, rtol=0.0, atol=1e-6
            )
