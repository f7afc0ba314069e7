# SPDX-License-Identifier: GPL-3.0-or-later
"""``bash dev.sh sweep``: the Blender test layer on every minor release with a wheel on PyPI.

``dev.sh`` sets up ``.venvs/bpy-X.Y`` for each release in ``RQ_BLENDER_VERSIONS`` and runs
this script, which runs ``tests/blender`` in all of them through the outer runner (one
pytest session; the suites run side by side), counts the results per release and writes
the "Tested with" table between the ``<!-- tested-with:begin -->`` and
``<!-- tested-with:end -->`` markers in the README. Extra arguments go to pytest.
"""

from __future__ import annotations

import datetime
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

REPO = pathlib.Path(__file__).resolve().parents[1]
VENVS = pathlib.Path(os.environ.get("RQ_VENVS", REPO / ".venvs"))
README = REPO / "README.md"
BEGIN, END = "<!-- tested-with:begin -->", "<!-- tested-with:end -->"
VERSIONS = os.environ.get("RQ_BLENDER_VERSIONS", "").split()
# Support as of the README's writing (Blender's release cycle): LTS releases get two years.
SUPPORT = {
    "4.2": "LTS, ended July 2026",
    "4.3": "ended",
    "4.4": "ended",
    "4.5": "LTS, to July 2027",
    "5.0": "ended",
    "5.1": "ended",
    "5.2": "LTS, to July 2028",
}

PROBE = (
    "import sys, bpy, numpy; print(bpy.app.version_string.split()[0], "
    "'%d.%d.%d' % sys.version_info[:3], numpy.__version__)"
)


def environment(version: str) -> tuple[str, str, str]:
    """(Blender, Python, numpy) versions of ``.venvs/bpy-<version>``."""
    python = VENVS / f"bpy-{version}" / "bin" / "python"
    out = subprocess.run(
        [str(python), "-c", PROBE], capture_output=True, text=True, check=True, cwd="/"
    ).stdout.split()
    return out[-3], out[-2], out[-1]


def counts(junit: pathlib.Path) -> dict[str, dict[str, int]]:
    """Outcomes per release from the outer session's JUnit report."""
    found: dict[str, dict[str, int]] = {
        v: {"passed": 0, "failed": 0, "skipped": 0} for v in VERSIONS
    }
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        match = re.search(r"bpy-(\d+\.\d+)\]$", case.get("name", ""))
        if match is None or match.group(1) not in found:
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        found[match.group(1)][outcome] += 1
    return found


def table(results: dict[str, dict[str, int]]) -> str:
    lines = [
        f"Written by `bash dev.sh sweep` on {datetime.date.today().isoformat()}: the Blender "
        "layer (`tests/blender`, packaging included) in each release's `bpy` wheel. "
        "5.3 (November 2026) has no wheel on PyPI yet, so it is not tested.",
        "",
        "| Blender | support | Python | numpy | passed | failed | skipped |",
        "|---|---|---|---|---|---|---|",
    ]
    for version in VERSIONS:
        blender, python, numpy = environment(version)
        c = results[version]
        lines.append(
            f"| {blender} | {SUPPORT.get(version, '')} | {python} | {numpy} | "
            f"{c['passed']} | {c['failed']} | {c['skipped']} |"
        )
    return "\n".join(lines)


def main() -> int:
    junit = REPO / "build" / "test-logs" / "sweep.xml"
    command = [
        sys.executable,
        "-m",
        "pytest",
        "tests/blender",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *sys.argv[1:],
    ]
    code = subprocess.run(command, cwd=REPO, check=False).returncode
    results = counts(junit)
    text = README.read_text()
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    README.write_text(text[:start] + "\n" + table(results) + "\n" + text[end:])
    print(table(results))
    return code


if __name__ == "__main__":
    sys.exit(main())
