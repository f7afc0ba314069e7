# SPDX-License-Identifier: GPL-3.0-or-later
"""Mocap conversion speed: the CMU clip (31 bones, a key on every frame) to RQ and back.

Each way is timed against ``bpy.ops.nla.bake`` with visual keying over the same bones and
frames, in the same run. Targets (issue 4): each way at least 10x faster than the bake and
under 2 s, with bone matrices within ``1e-5 + 2^-23 |v|`` of the original at every frame.

Run with a Python that has the ``bpy`` wheel (the add-on is built and installed the same way
as in the tests)::

    /tmp/venv-bpy50/bin/python benchmarks/bench_convert.py
"""

from __future__ import annotations

import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools"), str(REPO / "tests" / "blender")]

import blender_extension  # noqa: E402

USER_RESOURCES = blender_extension.use_temporary_user_resources()

import bpy  # noqa: E402  (Blender reads BLENDER_USER_RESOURCES when it starts)
import numpy as np  # noqa: E402
import rigs  # noqa: E402


def _timed(call) -> float:
    start = time.perf_counter()
    result = call()
    elapsed = time.perf_counter() - start
    assert result == {"FINISHED"}, result
    return elapsed


def _bake(obj, frames) -> float:
    """Time ``nla.bake`` with visual keying of the selected bones into a scratch action,
    then put the original action back."""
    action = obj.animation_data.action
    elapsed = _timed(
        lambda: bpy.ops.nla.bake(
            frame_start=frames[0],
            frame_end=frames[-1],
            only_selected=True,
            visual_keying=True,
            use_current_action=False,
            bake_types={'POSE'},
        )
    )
    scratch = obj.animation_data.action
    obj.animation_data.action = action
    if scratch is not action:
        bpy.data.actions.remove(scratch)
    return elapsed


def main() -> None:
    if not rigs.mocap_available():
        print(f"skipped: {rigs.MOCAP_MISSING}")
        return
    bpy.ops.wm.read_homefile(use_empty=True)
    blender_extension.install(blender_extension.build_zip(USER_RESOURCES / "dist"))
    obj = rigs.import_mocap()
    modes = {pb.name: pb.rotation_mode for pb in obj.pose.bones}
    start, end = (int(x) for x in obj.animation_data.action.frame_range)
    frames = list(range(start, end + 1))
    reference = rigs.pose_matrices(obj, frames)
    print(f"Blender {bpy.app.version_string}: {len(obj.pose.bones)} bones, {len(frames)} frames")

    rows = []
    bake = _bake(obj, frames)
    to_rq = _timed(lambda: bpy.ops.pose.rq_set_mode(mode='RQ', strategy='KEYS'))
    error = np.abs(rigs.pose_matrices(obj, frames) - reference)
    rows.append(("to RQ", to_rq, bake, error))

    bake = _bake(obj, frames)
    back = 0.0
    for order in sorted(set(modes.values())):
        for pose_bone in obj.pose.bones:
            rigs.select(pose_bone, modes[pose_bone.name] == order)
        back += _timed(lambda order=order: bpy.ops.pose.rq_set_mode(mode=order, strategy='KEYS'))
    error = np.abs(rigs.pose_matrices(obj, frames) - reference)
    rows.append(("back to Euler", back, bake, error))

    bound = rigs.matrix_bound(reference)
    for name, seconds, baked, err in rows:
        print(
            f"{name:14s} {seconds:7.3f} s   nla.bake {baked:7.3f} s   "
            f"ratio {baked / seconds:6.1f}x   max matrix error {err.max():.2e}   "
            f"within bound: {bool((err <= bound).all())}"
        )


if __name__ == "__main__":
    main()
