# SPDX-License-Identifier: GPL-3.0-or-later
"""Static checks: ruff's lint and format check over the whole tree, a type check of the
bpy-side code against the API stubs of the tested Blender versions (fake-bpy-module 4.2, 4.5
and 5.2), so code that exists in only some of those APIs is caught, and a strict type check
of the numpy core, so a signature that disagrees with its body or its documented use fails."""

import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
VENVS = pathlib.Path(os.environ.get("RQ_VENVS", REPO / ".venvs"))


def test_ruff_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    """The tree is laid out by ``ruff format`` (Blender's quote convention kept, see
    pyproject.toml): run it before committing."""
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("version", ["4.2", "4.5", "5.2"])
def test_bpy_side_type_checks(version, tmp_path):
    python = VENVS / f"types-{version}" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no {python}: run `bash dev.sh test`")
    # The add-on is a package named after its extension id; link the checkout under that
    # name so relative imports resolve as they do inside Blender.
    (tmp_path / "rq_rotations").symlink_to(REPO, target_is_directory=True)
    result = subprocess.run(
        [
            str(python),
            "-m",
            "mypy",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "-p",
            "rq_rotations",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_core_type_checks_strictly(tmp_path):
    """mypy on ``rq_rotation`` with every function typed (pyproject.toml's override for the
    core) and on typed_usage.py, the core as a user's checker sees it: lists where arrays go,
    pairs as tuples, wrong Euler orders, frames and spline kinds refused."""
    python = VENVS / "types-5.2" / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no {python}: run `bash dev.sh test static`")
    result = subprocess.run(
        [
            str(python),
            "-m",
            "mypy",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            "-p",
            "rq_rotation",
            "-m",
            "typed_usage",
        ],
        cwd=REPO,
        env={**os.environ, "MYPYPATH": str(REPO / "tests" / "static")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_typed_usage_runs():
    """typed_usage.py's calls are real ones: the file runs."""
    result = subprocess.run(
        [sys.executable, str(REPO / "tests" / "static" / "typed_usage.py")],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
