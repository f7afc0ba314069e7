# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators at production scale (issue 12): spinning rigs, a scaling series, peak memory.

Rigs (`spinning_rig`): unchained RQ bones keyed every 25 to 50 frames (irregular, per bone),
each bone turning by 1 to 3 radians per key about an axis that changes from key to key
(``rigs.spinning_keys``, shared with the tests), so the rotation vectors cross the
2*pi shells and keep spinning (the refinement of the sample
grids and the SAMPLED reduction do real work, unlike a random walk keyed every 10 frames).

Measurements, every ratio against ``nla.bake`` with visual keying on the same rig in the
same run (`blender_timing.time_nla_bake`):

- ``chain``: continuity filter + spline interpolate + bake (every frame) on 200 bones at 300
  and at 1000 frames, the median of 3 runs of each operator and of ``nla.bake``; target
  >= 20x.
- ``convert``: on 200 bones x 1000 frames, ``rq_set_mode`` SAMPLED (tolerance 0.1 degree)
  RQ -> quaternion, quaternion -> RQ, RQ -> swing/twist, swing/twist -> RQ (target >= 10x),
  and the same with KEYS (target >= 50x). Each the median of 3 runs from fresh rigs in the
  source mode (built with a KEYS conversion, untimed), against ``nla.bake`` of that rig.
- ``scaling``: 20, 100, 500, 1000 bones x 1000 frames, seconds per bone-frame of each
  operator; target: the 1000-bone figure at most 1.5x the 100-bone one.
- ``memory``: the peak resident memory of each operator on 1000 bones x 1000 frames, each in
  a subprocess of its own (the kernel's high-water mark, reset after the rig is built: no
  tracer slows the timed runs); target < 1 GB above the process before the operator.

Run with a Python that has the ``bpy`` wheel::

    .venvs/bpy-5.2/bin/python benchmarks/bench_scale.py chain --bones 200 --frames 300
    .venvs/bpy-5.2/bin/python benchmarks/bench_scale.py convert
    .venvs/bpy-5.2/bin/python benchmarks/bench_scale.py scaling
    .venvs/bpy-5.2/bin/python benchmarks/bench_scale.py memory
    .venvs/bpy-5.2/bin/python benchmarks/bench_scale.py profile bake   # cProfile, top 25
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools"), str(REPO / "tests" / "blender"), str(REPO / "benchmarks")]

import blender_extension  # noqa: E402

USER_RESOURCES = blender_extension.use_temporary_user_resources()

import bpy  # noqa: E402  (Blender reads BLENDER_USER_RESOURCES when it starts)
import numpy as np  # noqa: E402
import rigs  # noqa: E402
from blender_timing import time_nla_bake, timed  # noqa: E402

TOLERANCE = math.radians(0.1)
CHAIN_TARGET = 20.0
SAMPLED_TARGET = 10.0
KEYS_TARGET = 50.0
SCALING_TARGET = 1.5
MEMORY_TARGET_MB = 1024.0
SCALING_BONES = (20, 100, 500, 1000)
# Runs per operator and bone count in the scaling series (their median is reported).
SCALING_REPEATS = 3
# Runs of the chain and of its peer (each on a fresh rig; their medians are reported).
CHAIN_REPEATS = 3
# Runs of each conversion (each on a fresh rig; the median is reported; its peer, a bake of
# tens of seconds, runs once per source mode).
CONVERT_REPEATS = 3
# (label, source mode, target mode) of the timed conversions.
CONVERSIONS = (
    ("RQ to quaternion", "RQ", "QUATERNION"),
    ("quaternion to RQ", "QUATERNION", "RQ"),
    ("RQ to swing/twist", "RQ", "SWING_TWIST"),
    ("swing/twist to RQ", "SWING_TWIST", "RQ"),
)
# The operators of the scaling series and the memory runs: name -> call.
OPERATORS: dict[str, Callable[[], set[str]]] = {
    "continuity filter": lambda: bpy.ops.pose.rq_continuity_filter(),
    "spline interpolate": lambda: bpy.ops.pose.rq_spline_interpolate(),
    "bake": lambda: bpy.ops.pose.rq_bake(target='QUATERNION'),
    "SAMPLED to quaternion": lambda: bpy.ops.pose.rq_set_mode(
        mode='QUATERNION', strategy='SAMPLED', tolerance=TOLERANCE
    ),
    "KEYS to quaternion": lambda: bpy.ops.pose.rq_set_mode(mode='QUATERNION', strategy='KEYS'),
}


def _addon(name: str):
    import importlib

    return importlib.import_module(f"{blender_extension.ADDON_MODULE}.{name}")


def fresh_file() -> None:
    """An empty file with the add-on built and installed."""
    bpy.ops.wm.read_homefile(use_empty=True)
    blender_extension.install(blender_extension.build_zip(USER_RESOURCES / "dist"))


def spinning_rig(bones: int, frames: int, seed: int = 12) -> bpy.types.Object:
    """An armature of ``bones`` unchained RQ bones keyed by ``spinning_keys``, written in bulk,
    active, in Pose mode, every bone selected."""
    bone_modes = _addon("rq_blender.bone_modes")
    animdata = _addon("rq_blender.animdata")
    obj = rigs.armature(tuple(f"B{i:04d}" for i in range(bones)), chain=False)
    rng = np.random.default_rng(seed)
    obj.animation_data_create()
    action = bpy.data.actions.new("Spin")
    obj.animation_data.action = action
    if hasattr(action, "slots"):
        slot = action.slots.new(id_type='OBJECT', name=obj.name)
        obj.animation_data.action_slot = slot
    (use,) = animdata.actions_of(obj)
    owner = animdata.fcurve_owner(use, ensure=True)
    with _addon("rq_blender.drivers").workbench():
        for pose_bone in obj.pose.bones:
            times, vectors = rigs.spinning_keys(frames, rng)
            bone_modes.enter_mode(pose_bone, "RQ", tuple(vectors[0]))
            path = animdata.bone_data_path(pose_bone.name, '["rq_vector"]')
            for index in range(3):
                animdata.write_keys(owner, path, index, pose_bone.name, times, vectors[:, index])
    obj.update_tag()
    bpy.context.view_layer.update()
    return obj


_WARM: list[bool] = []


def warm_up() -> None:
    """Run every operator once on a small rig, untimed, once per process: the first call of
    an operator in a process pays for imports and first-use setup (0.2 s and more)."""
    if _WARM:
        return
    for call in (*OPERATORS.values(), lambda: _set_all("SWING_TWIST", "SAMPLED", TOLERANCE)):
        fresh_file()
        spinning_rig(4, 120)
        assert call() == {"FINISHED"}
    _WARM.append(True)


def _set_all(mode: str, strategy: str = "KEYS", tolerance: float = 0.0) -> set[str]:
    return bpy.ops.pose.rq_set_mode(mode=mode, strategy=strategy, tolerance=tolerance)


def chain(bones: int, frames: int, repeats: int = CHAIN_REPEATS) -> dict:
    """Filter + spline + bake on a fresh spinning rig against ``nla.bake`` of it, ``repeats``
    times (each on a fresh rig): the median of each operator's time and of ``nla.bake``'s.
    Single runs vary too much for a target at 20x: four of the 200 x 300 chain on 4.5
    within ten minutes (a shared machine) gave 9.3x, 12.9x, 15.5x and 19.8x."""
    warm_up()
    runs: list[tuple[float, dict[str, float]]] = []
    for _ in range(repeats):
        fresh_file()
        obj = spinning_rig(bones, frames)
        baseline = time_nla_bake(obj, 1, frames)
        seconds = {
            "continuity filter": timed(bpy.ops.pose.rq_continuity_filter),
            "spline interpolate": timed(bpy.ops.pose.rq_spline_interpolate),
            "bake": timed(lambda: bpy.ops.pose.rq_bake(target='QUATERNION')),
        }
        runs.append((baseline, seconds))
    return {
        "bones": bones,
        "frames": frames,
        "nla_bake": float(np.median([baseline for baseline, _ in runs])),
        "seconds": {
            name: float(np.median([seconds[name] for _, seconds in runs])) for name in runs[0][1]
        },
    }


def convert(bones: int, frames: int, repeats: int = CONVERT_REPEATS) -> list[dict]:
    """Each of `CONVERSIONS` with SAMPLED and with KEYS, the median of ``repeats`` runs, each
    from a fresh spinning rig in the source mode, against ``nla.bake`` of that rig (one bake
    per source mode: a single run of the 200 x 1000 Keep Key Times conversion from
    quaternions, 0.15-0.20 s, moved its ratio between 38x and 53x)."""
    warm_up()
    out = []
    bakes: dict[str, float] = {}
    for label, source, target in CONVERSIONS:
        for strategy in ("SAMPLED", "KEYS"):
            runs = []
            for _ in range(repeats):
                fresh_file()
                obj = spinning_rig(bones, frames)
                if source != "RQ":
                    assert _set_all(source) == {"FINISHED"}
                    bpy.context.view_layer.update()
                if source not in bakes:
                    bakes[source] = time_nla_bake(obj, 1, frames)
                tolerance = TOLERANCE if strategy == "SAMPLED" else 0.0
                runs.append(timed(lambda t=target, s=strategy, tol=tolerance: _set_all(t, s, tol)))
            out.append(
                {
                    "label": label,
                    "strategy": strategy,
                    "bones": bones,
                    "frames": frames,
                    "seconds": float(np.median(runs)),
                    "nla_bake": bakes[source],
                }
            )
    return out


def scaling(
    frames: int = 1000, bone_counts: tuple[int, ...] = SCALING_BONES, repeats: int = SCALING_REPEATS
) -> dict:
    """Seconds per bone-frame of each of `OPERATORS` for each bone count, the median of
    ``repeats`` runs, each on a fresh spinning rig (one run's wall time at 20 or 100 bones
    varied by up to 1.5x between runs on an idle machine)."""
    warm_up()
    out: dict[str, dict[int, float]] = {name: {} for name in OPERATORS}
    for bones in bone_counts:
        for name, call in OPERATORS.items():
            runs = []
            for _ in range(repeats):
                fresh_file()
                spinning_rig(bones, frames)
                runs.append(timed(call))
            out[name][bones] = float(np.median(runs)) / (bones * frames)
    return out


def _status_mb(field: str) -> float:
    """A ``VmRSS`` / ``VmHWM`` line of /proc/self/status, in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {field} in /proc/self/status")


def memory_one(name: str, bones: int, frames: int) -> dict:
    """Resident memory (MB) of this process with a fresh spinning rig built, and its peak
    while operator ``name`` runs on it. Building the rig peaks higher than most operators,
    so the high-water mark is reset first (Linux: ``5`` into /proc/self/clear_refs)."""
    fresh_file()
    spinning_rig(bones, frames)
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")
    before = _status_mb("VmRSS")
    assert OPERATORS[name]() == {"FINISHED"}
    return {"name": name, "before_mb": before, "after_mb": _status_mb("VmHWM")}


def memory(bones: int = 1000, frames: int = 1000) -> list[dict]:
    """`memory_one` of each operator, each in a subprocess of this Python."""
    out = []
    for name in OPERATORS:
        result = subprocess.run(
            [sys.executable, __file__, "memory-one", name, "--bones", str(bones),
             "--frames", str(frames)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        lines = [line for line in result.stdout.splitlines() if line.startswith("MEMORY ")]
        if result.returncode != 0 or not lines:
            raise RuntimeError(f"memory run of {name} failed:\n{result.stdout}\n{result.stderr}")
        out.append(json.loads(lines[-1][len("MEMORY ") :]))
    return out


def profile(name: str, bones: int, frames: int, top: int = 25) -> None:
    """cProfile of one operator (or the mocap clip to RQ: ``mocap``; a conversion between
    two modes: ``SAMPLED:<source>:<target>`` or ``KEYS:...``), cumulative CPU time."""
    import cProfile
    import pstats

    warm_up()
    fresh_file()
    if name == "mocap":
        obj = rigs.import_mocap()
        for pose_bone in obj.pose.bones:
            rigs.select(pose_bone, True)

        def call():
            return bpy.ops.pose.rq_set_mode(mode='RQ', strategy='KEYS')
    elif name.startswith(("SAMPLED:", "KEYS:")):  # <strategy>:<source mode>:<target mode>
        strategy, source, target = name.split(":")
        spinning_rig(bones, frames)
        if source != "RQ":
            assert _set_all(source) == {"FINISHED"}

        def call():
            return _set_all(target, strategy, TOLERANCE if strategy == "SAMPLED" else 0.0)
    else:
        spinning_rig(bones, frames)
        call = OPERATORS[name]
    profiler = cProfile.Profile(time.process_time)  # CPU time: less noise from other jobs
    profiler.enable()
    assert call() == {"FINISHED"}
    profiler.disable()
    pstats.Stats(profiler).sort_stats(os.environ.get("RQ_PROFILE_SORT", "cumulative")).print_stats(
        top
    )


def _ratio_row(measurement: str, seconds: float, baseline: float, target: float) -> dict:
    return {
        "measurement": measurement,
        "ours": f"{seconds:.2f} s",
        "peer": f"{baseline:.2f} s (nla.bake, visual keying)",
        "ratio": f"{baseline / seconds:.1f}x faster",
        "target": f">= {target:g}x",
    }


def readme_rows(
    bones: int = 200,
    chain_frames: tuple[int, ...] = (300, 1000),
    frames: int = 1000,
    series: tuple[int, ...] = SCALING_BONES,
) -> list[dict[str, str]]:
    """The rows of the README's benchmark table (see ``tools/bench_all.py``): the chain on
    ``bones`` at each of ``chain_frames``, the conversions on ``bones`` x ``frames``, the
    scaling ``series`` x ``frames`` (growth from its second to its last size: 100 to 1000
    bones) and the peak memory on ``series[-1]`` x ``frames``."""
    rows = []
    for length in chain_frames:
        result = chain(bones, length)
        total = sum(result["seconds"].values())
        parts = ", ".join(f"{name} {s:.2f}" for name, s in result["seconds"].items())
        rows.append(
            _ratio_row(
                f"spinning rig, {bones} RQ bones x {length} frames: filter + spline + bake "
                f"({parts} s)",
                total,
                result["nla_bake"],
                CHAIN_TARGET,
            )
        )
    for row in convert(bones, frames):
        target = SAMPLED_TARGET if row["strategy"] == "SAMPLED" else KEYS_TARGET
        how = "sampled, 0.1 degree" if row["strategy"] == "SAMPLED" else "keep key times"
        rows.append(
            _ratio_row(
                f"spinning rig, {bones} bones x {frames} frames: {row['label']} ({how})",
                row["seconds"],
                row["nla_bake"],
                target,
            )
        )
    low, high = series[1], series[-1]
    for name, per in scaling(frames, series).items():
        rows.append(
            {
                "measurement": f"scaling, spinning rig x {frames} frames: {name}, "
                + ", ".join(f"{b} bones {1e6 * s:.2f}" for b, s in per.items())
                + " us per bone-frame",
                "ours": f"{1e6 * per[high]:.2f} us ({high} bones)",
                "peer": f"{1e6 * per[low]:.2f} us ({low} bones)",
                "ratio": f"{per[high] / per[low]:.2f}x",
                "target": f"<= {SCALING_TARGET:g}x",
            }
        )
    for row in memory(high, frames):
        rows.append(
            {
                "measurement": f"peak memory, {high} bones x {frames} frames: {row['name']}",
                "ours": f"{row['after_mb'] - row['before_mb']:.0f} MB above the rig",
                "peer": f"{row['after_mb']:.0f} MB process peak",
                "ratio": "",
                "target": f"< {MEMORY_TARGET_MB:g} MB",
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "what", choices=("chain", "convert", "scaling", "memory", "memory-one", "profile")
    )
    parser.add_argument("name", nargs="?", help="operator of memory-one / profile, or 'mocap'")
    parser.add_argument("--bones", type=int, default=200)
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--series", type=str, default=",".join(map(str, SCALING_BONES)))
    args = parser.parse_args()
    print(f"Blender {bpy.app.version_string}")
    if args.what == "chain":
        result = chain(args.bones, args.frames)
        total = sum(result["seconds"].values())
        for name, seconds in result["seconds"].items():
            print(f"{name:20s} {seconds:8.3f} s")
        ratio = result["nla_bake"] / total
        print(
            f"chain {total:.3f} s, nla.bake {result['nla_bake']:.3f} s: {ratio:.1f}x "
            f"(target >= {CHAIN_TARGET:g}x: {'met' if ratio >= CHAIN_TARGET else 'NOT met'})"
        )
    elif args.what == "convert":
        for row in convert(args.bones, args.frames):
            ratio = row["nla_bake"] / row["seconds"]
            target = SAMPLED_TARGET if row["strategy"] == "SAMPLED" else KEYS_TARGET
            print(
                f"{row['label']:20s} {row['strategy']:8s} {row['seconds']:8.3f} s  nla.bake "
                f"{row['nla_bake']:8.3f} s  {ratio:6.1f}x  "
                f"(target >= {target:g}x: {'met' if ratio >= target else 'NOT met'})"
            )
    elif args.what == "scaling":
        bone_counts = tuple(int(b) for b in args.series.split(","))
        for name, per in scaling(args.frames, bone_counts).items():
            cells = "  ".join(f"{b:5d}: {1e6 * s:7.3f}" for b, s in per.items())
            print(f"{name:22s} us per bone-frame  {cells}")
    elif args.what == "memory":
        for row in memory(args.bones, args.frames):
            print(
                f"{row['name']:22s} peak {row['after_mb']:8.0f} MB, "
                f"{row['after_mb'] - row['before_mb']:6.0f} MB above the rig"
            )
    elif args.what == "memory-one":
        print("MEMORY " + json.dumps(memory_one(args.name, args.bones, args.frames)))
    else:
        profile(args.name, args.bones, args.frames)


if __name__ == "__main__":
    main()
