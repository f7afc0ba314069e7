# SPDX-License-Identifier: GPL-3.0-or-later
"""``bash dev.sh demo``, stage 1 of 2: the add-on at work in real Blender (the bpy wheel).

Builds the extension zip with Blender's own tool, installs it into a throwaway Blender user
folder, and builds a demo rig:

- an arm whose shoulder is a swing/twist joint with an elliptical swing limit and a twist
  range, an elbow that is a hinge (swing/twist with a flat ellipse and no twist), an RQ
  wrist, and a prop in the hand that spins through several revolutions across the 2*pi
  shells (keys less than half a turn apart);
- animated with RQ and swing/twist keys, the prop keyed with the shortest vectors so that its
  spins are lost until the continuity filter restores them;
- then runs the continuity filter, RQ-spline interpolation and the bake (on a copy, for
  export), and saves ``demo.blend``.

It writes ``demo_data.npz`` with the numbers behind the pictures that stage 2
(``tools/demo_figures.py``, outside Blender, with matplotlib) draws.

Usage: ``python tools/demo.py OUTPUT_DIR`` inside a Python that has the bpy wheel.
"""

from __future__ import annotations

import math
import pathlib
import sys

from blender_extension import REPO, build_zip, install, use_temporary_user_resources

use_temporary_user_resources()

import bpy  # noqa: E402  (Blender reads BLENDER_USER_RESOURCES when it starts)
import numpy as np  # noqa: E402

FRAMES = (1, 121)
SHOULDER_LIMIT = (math.radians(70), math.radians(110))  # semi-axes about X and Z
SHOULDER_TWIST = (math.radians(-40), math.radians(80))
ELBOW_LIMIT = (math.radians(145), 0.0)  # a hinge about X: a flat ellipse
PROP_TURN_PER_KEY = math.radians(150)  # less than half a turn between keys
PROP_KEY_STEP = 8  # frames


def step(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def make_arm(name: str = "Arm") -> bpy.types.Object:
    """Upper arm, forearm, hand along +Y, and a prop held in the hand; in Pose mode."""
    armature = bpy.data.armatures.new(name)
    rig = bpy.data.objects.new(name, armature)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='EDIT')
    parent = None
    for name, head, tail in (
        ("Shoulder", (0, 0, 0), (0, 1.0, 0)),
        ("Elbow", (0, 1.0, 0), (0, 1.9, 0)),
        ("Wrist", (0, 1.9, 0), (0, 2.15, 0)),
        ("Prop", (0, 2.15, 0), (0, 2.15, 0.6)),
    ):
        bone = armature.edit_bones.new(name)
        bone.head, bone.tail = head, tail
        bone.parent = parent
        parent = bone
    bpy.ops.object.mode_set(mode='POSE')
    return rig


def give_joints(rig: bpy.types.Object) -> None:
    """Shoulder and elbow swing/twist with their limits, wrist and prop RQ."""
    select_only(rig, "Shoulder", "Elbow")
    bpy.ops.pose.rq_set_mode(mode='SWING_TWIST')
    select_only(rig, "Wrist", "Prop")
    bpy.ops.pose.rq_set_mode(mode='RQ')
    shoulder, elbow = rig.pose.bones["Shoulder"], rig.pose.bones["Elbow"]
    shoulder["rq_swing_limit"], shoulder["rq_twist_limit"] = SHOULDER_LIMIT, SHOULDER_TWIST
    elbow["rq_swing_limit"], elbow["rq_twist_limit"] = ELBOW_LIMIT, (0.0, 0.0)


def ik_targets() -> np.ndarray:
    """Points for the hand (the wrist's tail) to reach, (n, 3): a loop in front of the
    shoulder, then points out of reach (2.5 from a shoulder whose arm is 2.15 long) and
    behind it, where the shoulder's ellipse stops the arm."""
    angle = np.linspace(0.0, 2.0 * math.pi, 16, endpoint=False)
    loop = np.stack(
        [0.9 * np.cos(angle), 1.2 + 0.3 * np.sin(2.0 * angle), 0.9 * np.sin(angle)], axis=1
    )
    far = 2.5 * np.array([[0.0, 0.6, 0.8], [0.6, 0.8, 0.0], [0.0, -0.3, 0.95]])
    behind = np.array([[0.0, -1.2, 0.6], [-0.8, -1.0, -0.8]])
    return np.concatenate([loop, far, behind])


def ik_scene() -> dict[str, np.ndarray]:
    """A second arm, straight at rest, reaching `ik_targets` one after the other with
    ``pose.rq_ik_reach`` (the wrist active, the chain up to the shoulder), each from the pose
    of the previous:
    where the hand went, the distance left, and the shoulder's swings."""
    rig = make_arm("Arm_ik")
    rig.location = (3.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    give_joints(rig)
    # Straight, as rigs rest: its first target lies in front, in the plane where the elbow
    # hinge cannot bend, a saddle of the reach that the solver leaves (`ik._escape`).
    select_only(rig, "Wrist")
    rig.data.bones.active = rig.data.bones["Wrist"]
    targets = ik_targets() + np.array(rig.location)
    hands, distances, swings, twists = [], [], [], []
    for target in targets:
        bpy.ops.pose.rq_ik_reach(target=tuple(target), chain_length=3)
        bpy.context.view_layer.update()
        hand = np.array(rig.matrix_world @ rig.pose.bones["Wrist"].tail)
        hands.append(hand)
        distances.append(float(np.linalg.norm(hand - target)))
        shoulder = rig.pose.bones["Shoulder"]
        swings.append(np.array(shoulder["rq_swing"], dtype=float))
        twists.append(float(shoulder["rq_twist"]))
    bpy.ops.object.mode_set(mode='OBJECT')
    return {
        "ik_targets": targets,
        "ik_hands": np.array(hands),
        "ik_distances": np.array(distances),
        "ik_shoulder_swings": np.array(swings),
        "ik_shoulder_twists": np.array(twists),
        "ik_reach": 1.0 + 0.9 + 0.25,
    }


def select_only(rig: bpy.types.Object, *names: str) -> None:
    """Select exactly the named pose bones (Blender 4.2 and 5.0 store selection differently)."""
    for pose_bone in rig.pose.bones:
        selected = pose_bone.name in names
        target = pose_bone if hasattr(pose_bone, "select") else pose_bone.bone
        target.select = selected
    rig.data.bones.active = rig.data.bones[names[0]]


def key_property(pose_bone, name: str, frames, values) -> None:
    for frame, value in zip(frames, values, strict=True):
        pose_bone[name] = value.tolist() if isinstance(value, np.ndarray) else value
        pose_bone.keyframe_insert(f'["{name}"]', frame=frame)


def animate(rig, rq) -> dict[str, np.ndarray]:
    """Key the arm; returns the keyed values the pictures need."""
    frames = np.array([1, 25, 49, 73, 97, 121])
    rng = np.random.default_rng(7)

    shoulder = rig.pose.bones["Shoulder"]
    # Swings reaching past the ellipse on purpose: the evaluation scales them onto it.
    swings = np.array([[0.0, 0.0], [0.9, 0.6], [1.5, -1.2], [-0.4, 2.1], [-1.3, -0.5], [0.0, 0.0]])
    twists = np.array([0.0, 0.6, 1.3, -0.9, 0.2, 0.0])
    key_property(shoulder, "rq_swing", frames, swings)
    key_property(shoulder, "rq_twist", frames, twists)

    elbow = rig.pose.bones["Elbow"]
    key_property(
        elbow,
        "rq_swing",
        frames,
        np.column_stack([[0.0, 1.2, 2.3, 0.8, 1.9, 0.0], np.zeros(len(frames))]),
    )

    wrist = rig.pose.bones["Wrist"]
    wrist_keys = rng.normal(scale=0.6, size=(len(frames), 3))
    wrist_keys[0] = wrist_keys[-1] = 0.0
    key_property(wrist, "rq_vector", frames, wrist_keys)

    # The prop spins about a tilted axis, 150 degrees per key: 6.25 turns over the shot.
    prop = rig.pose.bones["Prop"]
    prop_frames = np.arange(FRAMES[0], FRAMES[1] + 1, PROP_KEY_STEP)
    axis = np.array([0.3, 0.2, 1.0]) / np.linalg.norm([0.3, 0.2, 1.0])
    spinning = PROP_TURN_PER_KEY * np.arange(len(prop_frames))[:, None] * axis
    # Keyed as an animator's tool would by default: the shortest vector of each rotation.
    key_property(prop, "rq_vector", prop_frames, rq.quat_to_rq(rq.rq_to_quat(spinning)))
    return {
        "frames": frames,
        "shoulder_swing": swings,
        "wrist_keys": wrist_keys,
        "prop_frames": prop_frames,
        "prop_spin": spinning,
    }


def sample_rotation(rig, bone: str, frames) -> np.ndarray:
    """The bone's evaluated local rotation (quaternion) at each frame."""
    scene, quats = bpy.context.scene, []
    for frame in frames:
        scene.frame_set(int(frame))
        quats.append(rig.pose.bones[bone].matrix_basis.to_quaternion())
    return np.array(quats)


def blender_quaternion_curves(addon, times, keys_quat) -> tuple[np.ndarray, np.ndarray]:
    """Blender's own per-component interpolation of quaternion keys: a native bone keyed with
    the same quaternions (default Bezier, auto-clamped handles), sampled densely through the
    add-on's F-curve boundary."""
    animdata = addon.rq_blender.animdata
    armature = bpy.data.armatures.new("Probe")
    probe = bpy.data.objects.new("Probe", armature)
    bpy.context.scene.collection.objects.link(probe)
    bpy.context.view_layer.objects.active = probe
    bpy.ops.object.mode_set(mode='EDIT')
    armature.edit_bones.new("Bone").tail = (0, 1, 0)
    bpy.ops.object.mode_set(mode='POSE')
    pose_bone = probe.pose.bones["Bone"]
    pose_bone.rotation_mode = 'QUATERNION'
    for frame, q in zip(times, addon.rq_rotation.align_quat_signs(keys_quat), strict=True):
        pose_bone.rotation_quaternion = q
        pose_bone.keyframe_insert("rotation_quaternion", frame=float(frame))
    (use,) = animdata.actions_of(probe)
    channels = animdata.read_channels(
        animdata.fcurve_owner(use), animdata.bone_data_path("Bone", "rotation_quaternion"), 4
    )
    samples = np.linspace(times[0], times[-1], 400)
    values = animdata.evaluate_channels(channels, (1.0, 0.0, 0.0, 0.0), samples)
    bpy.ops.object.mode_set(mode='OBJECT')
    bpy.data.objects.remove(probe)
    return samples, values / np.linalg.norm(values, axis=1, keepdims=True)


def main(output: pathlib.Path) -> int:
    output.mkdir(parents=True, exist_ok=True)
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    step(f"Blender {bpy.app.version_string}")
    zip_path = build_zip(REPO / "dist")
    step(f"built {zip_path.relative_to(REPO)} with Blender's own blender_ext.py")
    addon = install(zip_path)
    rq = addon.rq_rotation
    step(f"installed and enabled {addon.__name__}")

    rig = make_arm()
    give_joints(rig)
    step(
        "shoulder: swing/twist, ellipse 70 x 110 degrees, twist -40..80; "
        "elbow: hinge (ellipse 145 x 0, no twist); wrist and prop: RQ"
    )

    keyed = animate(rig, rq)
    spin_frames = keyed["prop_frames"]
    before = sample_rotation(rig, "Prop", spin_frames)
    turns_before = prop_turns(rig, spin_frames[0], spin_frames[-1])
    select_only(rig, "Prop")
    bpy.ops.pose.rq_continuity_filter()
    after = sample_rotation(rig, "Prop", spin_frames)
    turns_after = prop_turns(rig, spin_frames[0], spin_frames[-1])
    pose_change = np.degrees(rq.quat_angle_between(before, after).max())
    step(
        f"continuity filter on the prop: {turns_before:.2f} -> {turns_after:.2f} turns "
        f"between first and last key, poses at keys moved by at most {pose_change:.1e} deg"
    )

    select_only(rig, "Shoulder", "Elbow", "Wrist", "Prop")
    result = bpy.ops.pose.rq_spline_interpolate()
    step(f"RQ-spline interpolation on the selected bones: {sorted(result)}")

    # The bake writes native keys for export, on a copy so demo.blend keeps the RQ rig.
    export = rig.copy()
    export.data = rig.data.copy()
    export.animation_data.action = rig.animation_data.action.copy()
    export.name = "Arm_export"
    scene.collection.objects.link(export)
    rig_frames = np.arange(FRAMES[0], FRAMES[1] + 1)
    source = {name: sample_rotation(rig, name, rig_frames) for name in ("Shoulder", "Prop")}
    bpy.ops.object.mode_set(mode='OBJECT')
    bpy.context.view_layer.objects.active = export
    bpy.ops.object.mode_set(mode='POSE')
    select_only(export, "Shoulder", "Elbow", "Wrist", "Prop")
    bpy.ops.pose.rq_bake(target='QUATERNION', keys='EVERY_FRAME')
    bake_error = max(
        np.degrees(
            rq.quat_angle_between(source[name], sample_rotation(export, name, rig_frames)).max()
        )
        for name in source
    )
    step(f"baked a copy to quaternion keys for export: largest difference {bake_error:.1e} deg")
    bpy.ops.object.mode_set(mode='OBJECT')
    export.hide_set(True)
    bpy.context.view_layer.objects.active = rig

    ik = ik_scene()
    reached = int(np.count_nonzero(ik["ik_distances"] < 1e-4 * ik["ik_reach"]))
    step(
        f"IK: the second arm reached {reached} of {len(ik['ik_targets'])} targets with "
        f"pose.rq_ik_reach; the rest are out of reach or behind the shoulder's ellipse "
        f"(closest {ik['ik_distances'][ik['ik_distances'] >= 1e-4].min():.3f} away)"
    )
    bpy.context.view_layer.objects.active = rig

    # The numbers behind the pictures.
    evaluated_swings = rq.quat_to_swing_twist(sample_rotation(rig, "Shoulder", keyed["frames"]))[0]
    wrist_quats = rq.rq_to_quat(keyed["wrist_keys"])
    blender_t, blender_q = blender_quaternion_curves(addon, keyed["frames"], wrist_quats)
    np.savez(
        output / "demo_data.npz",
        shoulder_limit=np.array(SHOULDER_LIMIT),
        shoulder_swing_keys=keyed["shoulder_swing"],
        shoulder_swing_evaluated=evaluated_swings,
        wrist_times=keyed["frames"],
        wrist_quats=wrist_quats,
        blender_t=blender_t,
        blender_quats=blender_q,
        bake_error_deg=bake_error,
        prop_turns=(turns_before, turns_after),
        **ik,
        blender_version=bpy.app.version_string,
    )
    blend = output / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    step(f"saved {blend}")
    return 0


def prop_turns(rig, first_frame: int, last_frame: int) -> float:
    """Revolutions the prop's rotation vector gains between two keyed frames,
    (|v_last| - |v_first|) / 2pi: the spins its keys hold."""
    prop, lengths = rig.pose.bones["Prop"], []
    for frame in (first_frame, last_frame):
        bpy.context.scene.frame_set(frame)
        lengths.append(float(np.linalg.norm(prop["rq_vector"])))
    return (lengths[1] - lengths[0]) / (2 * math.pi)


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "demo_output").resolve()))
