# SPDX-License-Identifier: GPL-3.0-or-later
"""The outer test runner: one pytest session, one summary line, every layer.

- ``tests/core`` and ``tests/static`` run here, in the development environment.
- ``tests/blender`` runs inside real Blender: the bpy wheels of Blender 4.2 (the manifest's
  minimum), 4.5 LTS and 5.2 LTS, each in its own virtual environment (``.venvs/bpy-4.2`` ...,
  made by ``bash dev.sh test``); ``RQ_BLENDER_VERSIONS`` (space-separated, set by ``dev.sh``)
  chooses others. The suites run side by side in subprocesses with the ``blender_harness``
  plugin; each inner test comes back as an item of this
  session named ``test_name[bpy-5.2]``, passing, failing (with Blender's traceback) or
  skipping as it did inside Blender. Options such as ``-k`` and node ids are passed on.

One Blender suite: ``bash dev.sh test blender 4.5 [pytest args]``.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
VENVS = pathlib.Path(os.environ.get("RQ_VENVS", REPO / ".venvs"))
BLENDER_TESTS = REPO / "tests" / "blender"
BLENDER_VERSIONS = tuple(os.environ.get("RQ_BLENDER_VERSIONS", "4.2 4.5 5.2").split())
# A whole Blender suite must finish well inside CI's 90 minutes.
SUITE_TIMEOUT_S = 40 * 60


@dataclass(frozen=True)
class InnerResult:
    outcome: str  # "passed", "failed", "skipped"
    message: str = ""
    details: str = ""


class BlenderSuite:
    """One run of ``tests/blender`` inside one Blender version, started on demand."""

    def __init__(self, version: str, log_dir: pathlib.Path, selection: list[str]):
        self.version = version
        self.python = VENVS / f"bpy-{version}" / "bin" / "python"
        self.junit = log_dir / f"blender-{version}.xml"
        self.log = log_dir / f"blender-{version}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.results: dict[str, dict[str, InnerResult]] | None = None
        self.problem = ""
        self.selection = selection  # pytest arguments choosing the inner tests

    @property
    def available(self) -> bool:
        return self.python.exists()

    def start(self) -> None:
        if not self.available or self.process is not None:
            return
        env = dict(os.environ, PYTHONPATH=str(BLENDER_TESTS), PYTHONDONTWRITEBYTECODE="1")
        command = [
            str(self.python),
            "-m",
            "pytest",
            *self.selection,
            "-p",
            "blender_harness",
            "-p",
            "no:cacheprovider",
            f"--confcutdir={BLENDER_TESTS}",
            f"--rootdir={BLENDER_TESTS}",
            "-o",
            "addopts=",
            f"--junitxml={self.junit}",
            "-q",
        ]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)

    def wait(self) -> dict[str, dict[str, InnerResult]]:
        """Results by test file name, then by test name (with parameters)."""
        if self.results is not None:
            return self.results
        self.start()
        self.results = {}
        if self.process is None:
            return self.results
        try:
            returncode = self.process.wait(timeout=SUITE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            returncode = None
        if not self.junit.exists():
            tail = self.log.read_text(errors="replace")[-4000:]
            self.problem = (
                f"Blender {self.version} suite ended ({returncode}) with no report:\n{tail}"
            )
            return self.results
        for case in ElementTree.parse(self.junit).getroot().iter("testcase"):
            module = case.get("classname", "").split(".")
            file_name = next((part for part in module if part.startswith("test_")), "")
            self.results.setdefault(f"{file_name}.py", {})[case.get("name", "")] = _outcome(case)
        return self.results


def _outcome(case: ElementTree.Element) -> InnerResult:
    for tag in ("failure", "error"):
        node = case.find(tag)
        if node is not None:
            return InnerResult("failed", node.get("message", ""), node.text or "")
    node = case.find("skipped")
    if node is not None:
        return InnerResult("skipped", node.get("message", ""))
    return InnerResult("passed")


class BlenderTestError(Exception):
    """A test failed inside Blender; carries Blender's own report."""


class BlenderModule(pytest.File):
    """A ``tests/blender/test_*.py`` file, collected as its results inside each Blender."""

    def collect(self):
        suites: dict[str, BlenderSuite] = self.config.stash[SUITES_KEY]
        for suite in suites.values():  # both Blender versions run side by side
            suite.start()
        for version, suite in suites.items():
            tag = f"bpy-{version}"
            if not suite.available:
                problem = f"no {suite.python}: `bash dev.sh test blender {version}` makes it"
                yield BlenderItem.from_parent(
                    self, name=f"[{tag}]", result=InnerResult("failed", problem, problem)
                )
                continue
            results = suite.wait().get(self.path.name)
            if not results and suite.selection != [str(BLENDER_TESTS)]:
                continue  # a narrowed run chose nothing from this file
            if not results:
                problem = suite.problem or f"Blender {version} collected no test from this file"
                yield BlenderItem.from_parent(
                    self, name=f"[{tag}]", result=InnerResult("failed", problem, problem)
                )
                continue
            for name, result in results.items():
                yield BlenderItem.from_parent(self, name=_tagged(name, tag), result=result)


def _tagged(name: str, tag: str) -> str:
    """``test_x[a]`` -> ``test_x[a-bpy-5.0]``; ``test_x`` -> ``test_x[bpy-5.0]``."""
    if name.endswith("]"):
        return f"{name[:-1]}-{tag}]"
    return f"{name}[{tag}]"


class BlenderItem(pytest.Item):
    def __init__(self, *, result: InnerResult, **kwargs):
        super().__init__(**kwargs)
        self.result = result

    def runtest(self) -> None:
        if self.result.outcome == "skipped":
            pytest.skip(self.result.message)
        if self.result.outcome == "failed":
            raise BlenderTestError(self.result.details or self.result.message)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, BlenderTestError):
            return f"inside Blender:\n{excinfo.value}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, self.name


SUITES_KEY = pytest.StashKey[dict[str, BlenderSuite]]()


def pytest_configure(config: pytest.Config) -> None:
    # One folder per session: two sessions at once (a sweep and a test run) must not read
    # each other's reports.
    (REPO / "build" / "test-logs").mkdir(parents=True, exist_ok=True)
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix="session-", dir=REPO / "build" / "test-logs"))
    selection = _inner_selection(config)
    config.stash[SUITES_KEY] = {v: BlenderSuite(v, log_dir, selection) for v in BLENDER_VERSIONS}


def _inner_selection(config: pytest.Config) -> list[str]:
    """The outer session's choice of Blender tests, as arguments for the inner runs: the
    paths and node ids under ``tests/blender`` (all of it when none is named), and ``-k``."""
    paths = []
    for argument in config.args:
        path, _, node = argument.partition("::")
        resolved = pathlib.Path(config.invocation_params.dir, path).resolve()
        if resolved == BLENDER_TESTS or BLENDER_TESTS in resolved.parents:
            paths.append(str(resolved) + (f"::{node}" if node else ""))
    keyword = ["-k", config.option.keyword] if config.option.keyword else []
    return (paths or [str(BLENDER_TESTS)]) + keyword


def pytest_pycollect_makemodule(module_path: pathlib.Path, parent):
    if module_path.parent == BLENDER_TESTS:
        return BlenderModule.from_parent(parent, path=module_path)
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    for suite in config.stash.get(SUITES_KEY, {}).values():
        if suite.process is not None and suite.process.poll() is None:
            suite.process.kill()


def _layer(nodeid: str) -> str:
    """The test layer of a node id: core, static, demo, gui, or Blender's with its version
    (packaging reported apart)."""
    parts = nodeid.split("/")
    layer = parts[1] if parts[0] == "tests" and len(parts) > 2 else parts[0]
    if layer != "blender":
        return layer
    version = nodeid.rsplit("bpy-", 1)[-1].rstrip("]")
    kind = "packaging" if "test_packaging.py" in nodeid else "blender"
    return f"{kind} [bpy-{version}]"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """A count per layer before pytest's own summary line."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed", "skipped", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", "call") in ("call", "setup") and hasattr(report, "nodeid"):
                layer = counts.setdefault(_layer(report.nodeid), {})
                layer[outcome] = layer.get(outcome, 0) + 1
    if not counts:
        return
    terminalreporter.section("tests per layer")
    for layer in sorted(counts):
        line = ", ".join(f"{n} {outcome}" for outcome, n in counts[layer].items())
        terminalreporter.write_line(f"{layer:22s} {line}")
