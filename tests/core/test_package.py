"""The core as a package of its own: ``pip install .`` from a checkout, and the ``Examples`` in
its docstrings, which must run as written."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil
import shutil
import subprocess
import sys

import pytest

import rq_rotation

REPO = pathlib.Path(__file__).resolve().parents[2]
MODULES = sorted(
    info.name for info in pkgutil.walk_packages(rq_rotation.__path__, prefix="rq_rotation.")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run_as_written(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} example(s) of {name} failed"


def test_the_public_entry_points_have_examples():
    documented = [
        name
        for name in (
            "rq_to_quat",
            "quat_to_rq",
            "reparameterize",
            "swing_twist_to_quat",
            "quat_to_swing_twist",
            "quat_multiply",
            "euler_to_quat",
            "rq_spline",
        )
        if ">>> " in (getattr(rq_rotation, name).__doc__ or "")
    ]
    assert len(documented) == 8, documented


def test_pip_install_from_a_checkout_gives_the_core_alone(tmp_path):
    """Installed from a copy of the checkout's files (the build writes ``*.egg-info`` next to
    the sources), the wheel holds ``rq_rotation`` and nothing of the Blender add-on, requires
    numpy only, carries the ``py.typed`` marker (PEP 561: type checkers read its annotations)
    and imports without bpy from anywhere. pip builds it as a user's ``pip install .``
    does, in an isolated environment with setuptools from PyPI."""
    source = tmp_path / "checkout"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    shutil.copytree(
        REPO / "rq_rotation", source / "rq_rotation", ignore=shutil.ignore_patterns("__pycache__")
    )
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    installed = sorted(p.name for p in target.iterdir())
    packages = [name for name in installed if not name.endswith(".dist-info")]
    assert packages == ["rq_rotation"], installed
    assert (target / "rq_rotation" / "py.typed").is_file()
    (info,) = target.glob("rq_rotation-*.dist-info")
    metadata = (info / "METADATA").read_text()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == ["Requires-Dist: numpy>=1.26"], requires
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, rq_rotation\n"
            "print(rq_rotation.__file__)\n"
            "print(sorted(m for m in ('bpy', 'mathutils', 'scipy') if m in sys.modules))\n"
            "print(rq_rotation.rq_to_quat([0.0, 0.0, 0.0]).tolist())\n"
            "import rq_rotation.keyframes.spline_keys",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(target)},
        check=True,
        capture_output=True,
        text=True,
    )
    location, imported, identity = probe.stdout.splitlines()
    assert pathlib.Path(location).is_relative_to(target)
    assert imported == "[]"
    assert identity == "[1.0, 0.0, 0.0, 0.0]"
