# SPDX-License-Identifier: GPL-3.0-or-later
"""Visual bake speed (issue 14): ``pose.rq_bake_visual`` against ``bpy.ops.nla.bake`` with
visual keying on the same bones and frames, in the same run. Target: at least as fast (a
ratio of at most 1).

The rig: unchained RQ bones, each keyed at the first and last frame and following an
animated empty with a constraint (Damped Track and Copy Rotation alternately), so every bone
needs its evaluated pose.

Run with a Python that has the ``bpy`` wheel::

    .venvs/bpy-5.2/bin/python benchmarks/bench_bake_visual.py [--bones 200] [--frames 250]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools"), str(REPO / "tests" / "blender")]

import blender_extension  # noqa: E402

USER_RESOURCES = blender_extension.use_temporary_user_resources()

import bpy  # noqa: E402  (Blender reads BLENDER_USER_RESOURCES when it starts)
import numpy as np  # noqa: E402
import rigs  # noqa: E402
from blender_timing import time_nla_bake, timed  # noqa: E402


def _constrained_rig(bones: int, frames: int, seed: int = 1) -> bpy.types.Object:
    """Unchained RQ bones keyed at frames 1 and ``frames`` (written in bulk), each with a
    Damped Track or a Copy Rotation (alternately) following an animated empty."""
    import importlib

    addon = importlib.import_module(blender_extension.ADDON_MODULE)
    bone_modes = addon.rq_blender.bone_modes
    animdata = addon.rq_blender.animdata
    target = bpy.data.objects.new("Target", None)
    bpy.context.scene.collection.objects.link(target)
    for frame, location, rotation in ((1, (2, 3, 1), (0, 0, 0)), (frames, (-2, 1, 3), (1, 2, 3))):
        target.location, target.rotation_euler = location, rotation
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    obj = rigs.armature(tuple(f"B{i:03d}" for i in range(bones)), chain=False)
    bpy.context.view_layer.objects.active = obj
    rng = np.random.default_rng(seed)
    times = np.array([1.0, float(frames)])
    obj.animation_data_create()
    action = bpy.data.actions.new("Bench")
    obj.animation_data.action = action
    if hasattr(action, "slots"):
        slot = action.slots.new(id_type='OBJECT', name=obj.name)
        obj.animation_data.action_slot = slot
    (use,) = animdata.actions_of(obj)
    owner = animdata.fcurve_owner(use, ensure=True)
    for index, pose_bone in enumerate(obj.pose.bones):
        values = rng.normal(0.0, 0.6, (2, 3))
        bone_modes.enter_mode(pose_bone, "RQ", tuple(values[0]))
        path = animdata.bone_data_path(pose_bone.name, '["rq_vector"]')
        for channel in range(3):
            animdata.write_keys(owner, path, channel, pose_bone.name, times, values[:, channel])
        constraint = pose_bone.constraints.new('DAMPED_TRACK' if index % 2 else 'COPY_ROTATION')
        constraint.target = target
        constraint.influence = 0.8
    obj.update_tag()
    return obj


def measure(bones: int = 200, frames: int = 250) -> tuple[float, float]:
    """``(nla.bake seconds, rq_bake_visual seconds)`` on a fresh rig, in this run."""
    bpy.ops.wm.read_homefile(use_empty=True)
    blender_extension.install(blender_extension.build_zip(USER_RESOURCES / "dist"))
    obj = _constrained_rig(bones, frames)
    baseline = time_nla_bake(obj, 1, frames)
    ours = timed(lambda: bpy.ops.pose.rq_bake_visual(frame_start=1, frame_end=frames))
    return baseline, ours


def readme_rows(bones: int = 200, frames: int = 250) -> list[dict[str, str]]:
    """The row of the README's benchmark table (see ``tools/bench_all.py``)."""
    baseline, ours = measure(bones, frames)
    return [
        {
            "measurement": f"visual bake, {bones} constrained RQ bones x {frames} frames",
            "ours": f"{ours:.2f} s",
            "peer": f"{baseline:.2f} s (nla.bake, visual keying)",
            "ratio": f"{ours / baseline:.2f} of it",
            "target": "<= 1",
        }
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bones", type=int, default=200)
    parser.add_argument("--frames", type=int, default=250)
    args = parser.parse_args()
    print(
        f"Blender {bpy.app.version_string}: {args.bones} constrained RQ bones, {args.frames} frames"
    )
    baseline, ours = measure(args.bones, args.frames)
    ratio = ours / baseline
    print(f"nla.bake (visual keying) {baseline:8.3f} s")
    print(
        f"rq_bake_visual           {ours:8.3f} s   {ratio:6.3f} of nla.bake   "
        f"target <= 1: {'met' if ratio <= 1 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
