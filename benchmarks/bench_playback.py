# SPDX-License-Identifier: GPL-3.0-or-later
"""Playback speed of driven RQ and swing/twist bones against native quaternion keys.

A 200-bone rig (20 chains of 10), every bone keyed at two frames, ``scene.frame_set`` over
100 frames. The rigs are built alternately in one process (a warm-up rig first: the first
rig built in a process runs cold), each timed as the best of several passes, and every ratio
is against the native-quaternion rig of the same run. Targets (issue 4): RQ at most 1.5x,
swing/twist at most 2x. The "parameters only" row keys the same ID properties with no
drivers: the cost of the data alone.

Run with a Python that has the ``bpy`` wheel (the add-on is built and installed the same way
as in the tests)::

    /tmp/venv-bpy50/bin/python benchmarks/bench_playback.py
"""

from __future__ import annotations

import pathlib
import platform
import sys
import time
from types import ModuleType

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools")]

import blender_extension  # noqa: E402

USER_RESOURCES = blender_extension.use_temporary_user_resources()

import bpy  # noqa: E402  (Blender reads BLENDER_USER_RESOURCES when it starts)
import numpy as np  # noqa: E402

BONES = 200
CHAIN = 10
FRAMES = 100
LAYOUTS = ("native quaternion", "parameters only", "RQ", "swing/twist")
TARGETS = {"RQ": 1.5, "swing/twist": 2.0}


def build_rig(layout: str, bone_modes: ModuleType, seed: int = 1) -> bpy.types.Object:
    """A fresh file with the benchmark rig in ``layout``, keyed at frames 1 and FRAMES."""
    bpy.ops.wm.read_homefile(use_empty=True)
    data = bpy.data.armatures.new("Rig")
    obj = bpy.data.objects.new("Rig", data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    previous = None
    for i in range(BONES):
        bone = data.edit_bones.new(f"B{i}")
        bone.head = (i // CHAIN, 0.0, float(i % CHAIN))
        bone.tail = (i // CHAIN, 0.0, float(i % CHAIN) + 1.0)
        bone.parent = previous if i % CHAIN else None
        previous = bone
    bpy.ops.object.mode_set(mode='OBJECT')
    rng = np.random.default_rng(seed)
    for pose_bone in obj.pose.bones:
        if layout == "native quaternion":
            pose_bone.rotation_mode = 'QUATERNION'
            for frame in (1, FRAMES):
                pose_bone.rotation_quaternion = rng.normal(size=4)
                pose_bone.keyframe_insert("rotation_quaternion", frame=frame)
            continue
        if layout == "swing/twist":
            bone_modes.enter_mode(pose_bone, "SWING_TWIST", ((0.0, 0.0), 0.0))
            names = ["rq_swing", "rq_twist"]
        else:
            if layout == "RQ":
                bone_modes.enter_mode(pose_bone, "RQ", (0.0, 0.0, 0.0))
            names = ["rq_vector"]
        for frame in (1, FRAMES):
            for name in names:
                current = pose_bone.get(name, (0.0, 0.0, 0.0))
                size = 1 if isinstance(current, float) else len(current)
                pose_bone[name] = float(rng.normal()) if size == 1 else list(rng.normal(size=size))
                pose_bone.keyframe_insert(f'["{name}"]', frame=frame)
    return obj


def time_playback(passes: int) -> float:
    """Best time per frame (ms) of ``frame_set`` over FRAMES frames."""
    scene = bpy.context.scene
    best = float("inf")
    for _ in range(passes):
        start = time.perf_counter()
        for frame in range(1, FRAMES + 1):
            scene.frame_set(frame)
        best = min(best, time.perf_counter() - start)
    return 1000.0 * best / FRAMES


def playback_rows(
    bone_modes: ModuleType, rounds: int = 3, passes: int = 3
) -> list[tuple[str, float, float]]:
    """``(layout, ms per frame, ratio to native quaternion)`` for every layout.

    Each round builds every rig once, in turn; each rig's time is its best pass, and each
    layout's time the best over the rounds.
    """
    build_rig("native quaternion", bone_modes)  # warm-up: the first rig runs cold
    time_playback(1)
    best = dict.fromkeys(LAYOUTS, float("inf"))
    for _ in range(rounds):
        for layout in LAYOUTS:
            build_rig(layout, bone_modes)
            best[layout] = min(best[layout], time_playback(passes))
    native = best["native quaternion"]
    return [(layout, best[layout], best[layout] / native) for layout in LAYOUTS]


def install_addon() -> ModuleType:
    """Build and install the extension; returns its ``rq_blender.bone_modes`` module."""
    bpy.ops.wm.read_homefile(use_empty=True)
    addon = blender_extension.install(blender_extension.build_zip(USER_RESOURCES / "dist"))
    return addon.rq_blender.bone_modes


def readme_rows() -> list[dict[str, str]]:
    """The rows of the README's benchmark table (see ``tools/bench_all.py``)."""
    rows = playback_rows(install_addon())
    native = next(ms for layout, ms, _ in rows if layout == "native quaternion")
    return [
        {
            "measurement": f"playback, {layout} ({BONES} bones, {FRAMES} frames)",
            "ours": f"{ms:.2f} ms/frame",
            "peer": f"{native:.2f} ms/frame (native quaternion keys)",
            "ratio": f"{ratio:.2f}x",
            "target": f"<= {TARGETS[layout]}x",
        }
        for layout, ms, ratio in rows
        if layout in TARGETS
    ]


def main() -> None:
    bone_modes = install_addon()
    print(
        f"Blender {bpy.app.version_string}, {platform.machine()}, {platform.processor() or ''}"
        f" {platform.system()}, Python {platform.python_version()}"
    )
    print(f"{BONES} bones keyed at 2 frames, frame_set over {FRAMES} frames, best of runs")
    for layout, ms, ratio in playback_rows(bone_modes):
        target = TARGETS.get(layout)
        verdict = "" if target is None else f"  target <= {target}x: {ratio <= target}"
        print(f"{layout:18s} {ms:7.3f} ms/frame  {ratio:5.2f}x{verdict}")


if __name__ == "__main__":
    main()
