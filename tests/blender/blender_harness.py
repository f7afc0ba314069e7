# SPDX-License-Identifier: GPL-3.0-or-later
"""pytest plugin for the tests that run inside real Blender (the `bpy` wheel).

Loaded with ``-p blender_harness`` by the outer runner (``tests/conftest.py``), once per
Blender version, each in its own virtual environment. At start-up it

1. points ``BLENDER_USER_RESOURCES`` at a temporary folder (the user's own Blender
   configuration is never touched),
2. records what Blender has registered before the add-on exists (for the leak checks),
3. builds the extension zip with Blender's own ``blender_ext.py`` and installs and enables
   it with ``bpy.ops.extensions.package_install_files``.

Every test then runs against the installed extension, ``bl_ext.user_default.rq_rotations``,
exactly as a user would have it, in a fresh empty file.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
ADDON_ID = "rq_rotations"
ADDON_MODULE = f"bl_ext.user_default.{ADDON_ID}"

_user_resources = tempfile.mkdtemp(prefix="rq-blender-user-")
os.environ["BLENDER_USER_RESOURCES"] = _user_resources

import bpy  # noqa: E402  (must follow the environment set-up above)

# The state of Blender before the add-on was ever enabled; see `registration_snapshot`.
BASELINE: dict[str, frozenset[str]] = {}
ZIP_PATH: pathlib.Path | None = None


def blender_ext_script() -> pathlib.Path:
    """Blender's extension command-line tool, as shipped inside the bpy wheel."""
    scripts = pathlib.Path(bpy.utils.system_resource("SCRIPTS"))
    return scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"


def run_blender_ext(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(blender_ext_script()), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def build_zip(output_dir: pathlib.Path) -> pathlib.Path:
    """Build the extension zip from the working tree with Blender's own tool."""
    output_dir.mkdir(parents=True, exist_ok=True)
    result = run_blender_ext("build", "--source-dir", str(REPO), "--output-dir", str(output_dir))
    if result.returncode != 0:
        raise RuntimeError(f"blender_ext.py build failed:\n{result.stdout}\n{result.stderr}")
    (zip_path,) = output_dir.glob(f"{ADDON_ID}-*.zip")
    return zip_path


def registration_snapshot() -> dict[str, frozenset[str]]:
    """Everything an add-on can leave behind, as sets of names.

    Classes in ``bpy.types``, RNA properties of the ID and pose-bone types the add-on
    extends, operators, handler functions, ``driver_namespace`` entries and menu draw
    functions.
    """
    types = bpy.types
    extended = ("PoseBone", "Bone", "Object", "Armature", "Scene", "WindowManager", "Action")
    snapshot = {
        "classes": frozenset(dir(types)),
        "properties": frozenset(
            f"{name}.{prop}" for name in extended for prop in getattr(types, name).bl_rna.properties.keys()
        ),
        "operators": frozenset(
            f"{category}.{op}" for category in dir(bpy.ops) for op in dir(getattr(bpy.ops, category))
        ),
        "handlers": frozenset(
            f"{name}:{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', repr(func))}"
            for name in dir(bpy.app.handlers)
            if not name.startswith("_") and isinstance(getattr(bpy.app.handlers, name), list)
            for func in getattr(bpy.app.handlers, name)
        ),
        "driver_namespace": frozenset(bpy.app.driver_namespace.keys()),
    }
    menus = []
    for name in dir(types):
        cls = getattr(types, name)
        funcs = getattr(getattr(cls, "draw", None), "_draw_funcs", None)
        if funcs:
            menus.extend(f"{name}:{getattr(f, '__module__', '')}.{f.__qualname__}" for f in funcs)
    snapshot["menu_entries"] = frozenset(menus)
    return snapshot


def install_extension() -> None:
    global ZIP_PATH
    ZIP_PATH = build_zip(pathlib.Path(_user_resources) / "dist")
    result = bpy.ops.extensions.package_install_files(
        filepath=str(ZIP_PATH), repo="user_default", enable_on_install=True
    )
    if result != {"FINISHED"} or ADDON_MODULE not in bpy.context.preferences.addons:
        raise RuntimeError(f"installing {ZIP_PATH} failed: {result}")


def pytest_configure(config: pytest.Config) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    BASELINE.update(registration_snapshot())
    install_extension()
    config.addinivalue_line("markers", "blender: runs inside real Blender")


def pytest_report_header(config: pytest.Config) -> str:
    return f"blender: {bpy.app.version_string}, extension zip: {ZIP_PATH}"


@pytest.fixture(scope="session")
def addon():
    """The installed and enabled extension's top-level module."""
    return importlib.import_module(ADDON_MODULE)


@pytest.fixture(scope="session")
def rq(addon):
    """The numpy core as shipped inside the extension."""
    return addon.rq_rotation


@pytest.fixture(autouse=True)
def fresh_file():
    """Every test starts from an empty file (the add-on stays enabled)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    yield
