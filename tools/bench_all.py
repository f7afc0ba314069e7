# SPDX-License-Identifier: GPL-3.0-or-later
"""``bash dev.sh bench``: run every benchmark and write the table into README.md.

Each benchmark in ``benchmarks/`` runs in the environments it needs (the core against scipy
with the newest numpy, and inside the Blender 5.2 wheel with its numpy and mathutils; the
Blender benchmarks in the two LTS releases users run, 4.5 and 5.2) and
exposes ``readme_rows()``: a list of ``{measurement, ours, peer, ratio, target}`` strings,
every ratio measured against its peer in the same run. The table replaces the text between
the ``<!-- benchmarks:begin -->`` and ``<!-- benchmarks:end -->`` markers in the README.

``bash dev.sh bench MODULE...`` runs only the named benchmarks and takes every other one's
rows from its last run on this checkout (``build/bench/``), so a long table can be measured
piece by piece, each piece on an idle machine; without names every benchmark runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import platform
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
VENVS = pathlib.Path(os.environ.get("RQ_VENVS", REPO / ".venvs"))
README = REPO / "README.md"
BEGIN, END = "<!-- benchmarks:begin -->", "<!-- benchmarks:end -->"
MARK = "README_ROWS "
CACHE = REPO / "build" / "bench"

# (benchmark module, the environments in .venvs/ it runs in)
BENCHMARKS = (
    ("bench_core", ("dev", "bpy-5.2")),
    ("bench_ik", ("dev",)),
    ("bench_playback", ("bpy-4.5", "bpy-5.2")),
    ("bench_convert", ("bpy-4.5", "bpy-5.2")),
    ("bench_operators", ("bpy-4.5", "bpy-5.2")),
    ("bench_bake_visual", ("bpy-4.5", "bpy-5.2")),
    ("bench_scale", ("bpy-4.5", "bpy-5.2")),
)

# The benchmark module first: the Blender ones set Blender's user folder before bpy starts;
# then bpy where there is one, which makes mathutils importable for the core's comparison.
RUNNER = f"""
import json, platform, sys
sys.path[:0] = ["benchmarks", "tools"]
module = __import__(sys.argv[1])
try:
    import bpy
    where = "Blender " + bpy.app.version_string.split()[0]
except ImportError:
    import numpy
    where = "Python " + platform.python_version() + ", numpy " + numpy.__version__
print({MARK!r} + json.dumps([where, module.readme_rows()]))
"""


def run(module: str, environment: str) -> tuple[str, list[dict[str, str]]]:
    """Run ``module.readme_rows()`` in ``.venvs/<environment>``: (where, rows), also kept in
    ``build/bench/`` for `cached`."""
    python = VENVS / environment / "bin" / "python"
    print(f"[bench] {module} in {environment} ...", flush=True)
    result = subprocess.run(
        [str(python), "-c", RUNNER, module], cwd=REPO, capture_output=True, text=True, check=False
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith(MARK)]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"{module} failed in {environment}:\n{result.stdout}\n{result.stderr}")
    where, rows = json.loads(lines[-1][len(MARK) :])
    CACHE.mkdir(parents=True, exist_ok=True)
    (CACHE / f"{module}-{environment}.json").write_text(json.dumps([where, rows]))
    return where, rows


def cached(module: str, environment: str) -> tuple[str, list[dict[str, str]]] | None:
    """The rows of the last `run` of ``module`` in ``environment`` on this checkout, or None
    (with a warning: the table leaves them out) when it has not run here."""
    path = CACHE / f"{module}-{environment}.json"
    if not path.is_file():
        print(f"[bench] {module} in {environment} has not run here: left out", flush=True)
        return None
    print(f"[bench] {module} in {environment}: rows of the last run ({path})", flush=True)
    where, rows = json.loads(path.read_text())
    return where, rows


def machine() -> str:
    cpu = ""
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    return f"{platform.machine()} {cpu}, {os.cpu_count()} cores, {platform.system()}"


def table(results: list[tuple[str, list[dict[str, str]]]]) -> str:
    lines = [
        f"Measured by `bash dev.sh bench` on {machine()}. Every ratio compares against the "
        "peer in the same run; absolute times on a shared machine are noise.",
        "",
        "| where | measurement | ours | peer | ratio | target |",
        "|---|---|---|---|---|---|",
    ]
    for where, rows in results:
        lines.extend(
            f"| {where} | {row['measurement']} | {row['ours']} | {row['peer']} | "
            f"{row['ratio']} | {row['target']} |"
            for row in rows
        )
    return "\n".join(lines)


def main(names: list[str]) -> int:
    unknown = set(names) - {module for module, _ in BENCHMARKS}
    if unknown:
        print(
            f"no benchmark named {sorted(unknown)}; the benchmarks: "
            f"{[module for module, _ in BENCHMARKS]}",
            file=sys.stderr,
        )
        return 2
    measured = [
        run(module, environment) if not names or module in names else cached(module, environment)
        for module, environments in BENCHMARKS
        for environment in environments
    ]
    results = [result for result in measured if result is not None]
    text = table(results)
    print(text)
    readme = README.read_text()
    if BEGIN not in readme or END not in readme:
        print(f"README.md has no {BEGIN} ... {END} section", file=sys.stderr)
        return 1
    head, rest = readme.split(BEGIN, 1)
    README.write_text(f"{head}{BEGIN}\n{text}\n{END}{rest.split(END, 1)[1]}")
    print(f"[bench] wrote the table into {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
