# SPDX-License-Identifier: GPL-3.0-or-later
"""Operator speed (issue 5): continuity filter, spline interpolation and bake of a 200-bone,
1000-frame RQ action, each against ``bpy.ops.nla.bake`` with visual keying over the same bones
and frames in the same run. Target: each operator under 1/20 of the bake.

The action is a single active action without NLA strips (the fast path). Every bone is keyed
every 10 frames (101 keys per channel, random smooth motion through the 2*pi shell), so the
spline operator works on hand-keyed-style keys and the bake writes 1000 frames.

Run with a Python that has the ``bpy`` wheel::

    .venvs/bpy-5.0/bin/python benchmarks/bench_operators.py [--bones 200] [--frames 1000]
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

KEY_STEP = 10


def _rq_rig(bones: int, frames: int, seed: int = 1) -> bpy.types.Object:
    """An unchained armature of RQ bones keyed every `KEY_STEP` frames, written in bulk."""
    import importlib

    addon = importlib.import_module(blender_extension.ADDON_MODULE)
    bone_modes = addon.rq_blender.bone_modes
    animdata = addon.rq_blender.animdata
    obj = rigs.armature(tuple(f"B{i:03d}" for i in range(bones)), chain=False)
    rng = np.random.default_rng(seed)
    times = np.arange(1, frames + 1, KEY_STEP, dtype=np.float64)
    obj.animation_data_create()
    action = bpy.data.actions.new("Bench")
    obj.animation_data.action = action
    if hasattr(action, "slots"):
        slot = action.slots.new(id_type='OBJECT', name=obj.name)
        obj.animation_data.action_slot = slot
    (use,) = animdata.actions_of(obj)
    owner = animdata.fcurve_owner(use, ensure=True)
    for pose_bone in obj.pose.bones:
        walk = np.cumsum(rng.normal(0.0, 0.6, (len(times), 3)), axis=0)
        bone_modes.enter_mode(pose_bone, "RQ", tuple(walk[0]))
        path = animdata.bone_data_path(pose_bone.name, '["rq_vector"]')
        for index in range(3):
            animdata.write_keys(owner, path, index, pose_bone.name, times, walk[:, index])
    obj.update_tag()
    return obj


def measure(bones: int = 200, frames: int = 1000) -> tuple[float, list[tuple[str, float]]]:
    """``(nla.bake seconds, [(operator, seconds)])``, all in this run, on a fresh rig."""
    bpy.ops.wm.read_homefile(use_empty=True)
    blender_extension.install(blender_extension.build_zip(USER_RESOURCES / "dist"))
    obj = _rq_rig(bones, frames)
    baseline = time_nla_bake(obj, 1, frames)
    return baseline, [
        ("continuity filter", timed(bpy.ops.pose.rq_continuity_filter)),
        ("spline interpolate", timed(bpy.ops.pose.rq_spline_interpolate)),
        ("bake (every frame)", timed(lambda: bpy.ops.pose.rq_bake(target='QUATERNION'))),
    ]


def readme_rows(bones: int = 200, frames: int = 1000) -> list[dict[str, str]]:
    """The rows of the README's benchmark table (see ``tools/bench_all.py``)."""
    baseline, rows = measure(bones, frames)
    return [
        {
            "measurement": f"{name}, {bones} RQ bones x {frames} frames",
            "ours": f"{seconds:.3f} s",
            "peer": f"{baseline:.2f} s (nla.bake, visual keying)",
            "ratio": f"{seconds / baseline:.3f} of it",
            "target": "< 0.05",
        }
        for name, seconds in rows
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bones", type=int, default=200)
    parser.add_argument("--frames", type=int, default=1000)
    args = parser.parse_args()
    print(
        f"Blender {bpy.app.version_string}: {args.bones} RQ bones, {args.frames} frames, "
        f"keys every {KEY_STEP} frames"
    )
    baseline, rows = measure(args.bones, args.frames)
    print(f"nla.bake (visual keying) {baseline:8.3f} s")
    for name, seconds in rows:
        ratio = seconds / baseline
        print(
            f"{name:22s} {seconds:8.3f} s   {ratio:7.4f} of nla.bake   "
            f"target < 0.05: {'met' if ratio < 0.05 else 'NOT met'}"
        )


if __name__ == "__main__":
    main()
