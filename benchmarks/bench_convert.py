# SPDX-License-Identifier: GPL-3.0-or-later
"""Mocap conversion speed: the CMU clip (31 bones, a key on every frame) to RQ and back.

Each way is timed against ``bpy.ops.nla.bake`` with visual keying over the same bones and
frames, in the same run. Targets (issue 4): each way at least 10x faster than the bake and
under 2 s, with bone matrices within ``1e-5 + 2^-23 |v|`` of the original at every frame.

Run with a Python that has the ``bpy`` wheel (the add-on is built and installed the same way
as in the tests)::

    .venvs/bpy-5.0/bin/python benchmarks/bench_convert.py   # or .venvs/bpy-4.2

``rows()`` returns the measurements, ``readme_rows()`` the README table's rows (see
``tools/bench_all.py``).
"""

from __future__ import annotations

import math
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

# Issue 4: each way at least this much faster than nla.bake, and under this many seconds.
TARGET_RATIO = 10.0
TARGET_SECONDS = 2.0


def rows(repeats: int = 5) -> list[dict]:
    """Time the CMU clip to RQ and back against ``nla.bake``, best of ``repeats`` each.

    Each repeat bakes, converts to RQ (``KEYS`` strategy: the clip is keyed on every frame),
    bakes again (now through the drivers) and converts back to each bone's Euler order; the
    pose is compared with the original at every frame after each conversion. Returns one
    dict per direction: ``direction``, ``seconds``, ``bake_seconds``, ``ratio`` (bake /
    conversion), ``max_error``, ``within_bound`` (``1e-5 + 2^-23 |v|`` at every frame and
    in every repeat), ``blender``, ``bones`` and ``frames``; an empty list when the clip is
    missing.
    """
    if not rigs.mocap_available():
        return []
    bpy.ops.wm.read_homefile(use_empty=True)
    blender_extension.install(blender_extension.build_zip(USER_RESOURCES / "dist"))
    obj = rigs.import_mocap()
    modes = {pb.name: pb.rotation_mode for pb in obj.pose.bones}
    start, end = (int(x) for x in obj.animation_data.action.frame_range)
    frames = list(range(start, end + 1))
    reference = rigs.pose_matrices(obj, frames)
    bound = rigs.matrix_bound(reference)
    best = {
        name: {"seconds": math.inf, "bake_seconds": math.inf, "max_error": 0.0, "ok": True}
        for name in ("to RQ", "back to Euler")
    }

    def record(name: str, seconds: float, bake: float) -> None:
        error = np.abs(rigs.pose_matrices(obj, frames) - reference)
        entry = best[name]
        entry["seconds"] = min(entry["seconds"], seconds)
        entry["bake_seconds"] = min(entry["bake_seconds"], bake)
        entry["max_error"] = max(entry["max_error"], float(error.max()))
        entry["ok"] = entry["ok"] and bool((error <= bound).all())

    for _ in range(repeats):
        for pose_bone in obj.pose.bones:
            rigs.select(pose_bone, True)
        bake = time_nla_bake(obj, frames[0], frames[-1])
        record("to RQ", timed(lambda: bpy.ops.pose.rq_set_mode(mode='RQ', strategy='KEYS')), bake)
        bake = time_nla_bake(obj, frames[0], frames[-1])
        back = 0.0
        for order in sorted(set(modes.values())):
            for pose_bone in obj.pose.bones:
                rigs.select(pose_bone, modes[pose_bone.name] == order)
            back += timed(lambda order=order: bpy.ops.pose.rq_set_mode(mode=order, strategy='KEYS'))
        record("back to Euler", back, bake)
    return [
        {
            "direction": name,
            "seconds": entry["seconds"],
            "bake_seconds": entry["bake_seconds"],
            "ratio": entry["bake_seconds"] / entry["seconds"],
            "max_error": entry["max_error"],
            "within_bound": entry["ok"],
            "blender": bpy.app.version_string,
            "bones": len(obj.pose.bones),
            "frames": len(frames),
        }
        for name, entry in best.items()
    ]


def readme_rows() -> list[dict[str, str]]:
    """The rows of the README's benchmark table (see ``tools/bench_all.py``); none without
    the clip."""
    return [
        {
            "measurement": f"mocap clip {row['direction']} ({row['bones']} bones, "
            f"{row['frames']} frames, max matrix error {row['max_error']:.1e}"
            f"{'' if row['within_bound'] else ' OUTSIDE the bound'})",
            "ours": f"{1e3 * row['seconds']:.0f} ms (pose.rq_set_mode)",
            "peer": f"{1e3 * row['bake_seconds']:.0f} ms (nla.bake, visual keying)",
            "ratio": f"{row['ratio']:.1f}x faster",
            "target": f">= {TARGET_RATIO:g}x, < {TARGET_SECONDS:g} s",
        }
        for row in rows()
    ]


def main() -> None:
    table = rows()
    if not table:
        print(f"skipped: {rigs.MOCAP_MISSING}")
        return
    first = table[0]
    print(f"Blender {first['blender']}: CMU clip, {first['bones']} bones, {first['frames']} frames")
    print("| direction | rq_set_mode | nla.bake (visual) | ratio | target | max matrix error |")
    print("|---|---|---|---|---|---|")
    for row in table:
        met = row["ratio"] >= TARGET_RATIO and row["seconds"] < TARGET_SECONDS
        print(
            f"| {row['direction']} | {row['seconds']:.3f} s | {row['bake_seconds']:.3f} s | "
            f"{row['ratio']:.1f}x | {'met' if met else 'MISSED'} (>= {TARGET_RATIO:g}x, "
            f"< {TARGET_SECONDS:g} s) | {row['max_error']:.1e} "
            f"({'within' if row['within_bound'] else 'OUTSIDE'} bound) |"
        )


if __name__ == "__main__":
    main()
