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
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
from blender_extension import (
    ADDON_MODULE,
    REPO,
    build_zip,
    install,
    run_blender_ext,
    use_temporary_user_resources,
)

USER_RESOURCES = use_temporary_user_resources()

import bpy  # noqa: E402  (Blender reads BLENDER_USER_RESOURCES when it starts)

__all__ = [
    "ADDON_MODULE",
    "BASELINE",
    "REPO",
    "build_zip",
    "registration_snapshot",
    "run_blender_ext",
]

# The state of Blender before the add-on was ever enabled; see `registration_snapshot`.
BASELINE: dict[str, frozenset[str]] = {}
ZIP_PATH: pathlib.Path | None = None


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
            f"{name}.{prop.identifier}"
            for name in extended
            for prop in getattr(types, name).bl_rna.properties
        ),
        "operators": frozenset(
            f"{category}.{op}"
            for category in dir(bpy.ops)
            for op in dir(getattr(bpy.ops, category))
        ),
        "handlers": frozenset(
            f"{name}:{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', repr(func))}"
            for name in dir(bpy.app.handlers)
            if not name.startswith("_") and isinstance(getattr(bpy.app.handlers, name), list)
            for func in getattr(bpy.app.handlers, name)
        ),
        "driver_namespace": frozenset(bpy.app.driver_namespace.keys()),
    }
    registered, pending = [], [bpy.types.bpy_struct]
    while pending:
        for cls in pending.pop().__subclasses__():
            pending.append(cls)
            if cls.__module__.startswith(ADDON_MODULE) and getattr(cls, "is_registered", False):
                registered.append(f"{cls.__module__}.{cls.__qualname__}")
    snapshot["registered_classes"] = frozenset(registered)
    # Draw functions appended to menus and panels. The first append makes Blender wrap the
    # menu's own draw in a list that stays after removal, so only functions that are not
    # Blender's own count.
    menus = []
    for name in dir(types):
        cls = getattr(types, name)
        for func in getattr(getattr(cls, "draw", None), "_draw_funcs", None) or ():
            module = getattr(func, "__module__", "") or ""
            if not module.startswith(("bl_ui", "bl_operators", "bpy_types", "_bpy_types")):
                menus.append(f"{name}:{module}.{func.__qualname__}")
    snapshot["menu_entries"] = frozenset(menus)
    return snapshot


def pytest_configure(config: pytest.Config) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    BASELINE.update(registration_snapshot())
    global ZIP_PATH
    ZIP_PATH = build_zip(USER_RESOURCES / "dist")
    install(ZIP_PATH)
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
