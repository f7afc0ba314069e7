# SPDX-License-Identifier: GPL-3.0-or-later
"""Packaging: Blender's own tool validates and builds the zip, which installs, enables and
disables cleanly. (Keymap items are checked in the GUI layer: headless Blender has no
add-on keyconfig.)"""

import zipfile

import addon_utils
import bpy
import pytest
from blender_harness import (
    ADDON_MODULE,
    BASELINE,
    REPO,
    build_zip,
    registration_snapshot,
    run_blender_ext,
)


def test_manifest_validates_with_blender_ext():
    result = run_blender_ext("validate", str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr


def test_zip_holds_the_addon_and_nothing_of_the_development_tree(tmp_path):
    names = zipfile.ZipFile(build_zip(tmp_path)).namelist()
    assert "blender_manifest.toml" in names and "__init__.py" in names
    assert any(name.startswith("rq_rotation/") for name in names)
    development_tree = (
        "tests/",
        "benchmarks/",
        "tools/",
        ".ci/",
        ".venvs/",
        "dev.sh",
        "pyproject.toml",
    )
    for dev_only in development_tree:
        assert not any(name.startswith(dev_only) for name in names), dev_only
    assert not any("__pycache__" in name for name in names)


def test_extension_is_installed_and_enabled(addon):
    assert ADDON_MODULE in bpy.context.preferences.addons
    assert addon.__name__ == ADDON_MODULE
    preferences = bpy.context.preferences.addons[ADDON_MODULE].preferences
    assert preferences is not None and preferences.conversion_tolerance >= 0.0


def _added(before, after):
    return {key: sorted(after[key] - before[key]) for key in after if after[key] - before[key]}


def test_disable_leaves_nothing_behind_and_enable_restores():
    enabled = registration_snapshot()
    added = _added(BASELINE, enabled)
    # The snapshot sees what the add-on adds, so the check below can fail.
    for kind in ("registered_classes", "operators", "properties", "handlers", "menu_entries"):
        assert added.get(kind), f"no {kind} seen from the enabled add-on"
    addon_utils.disable(ADDON_MODULE, default_set=True)
    try:
        assert _added(BASELINE, registration_snapshot()) == {}
    finally:
        addon_utils.enable(ADDON_MODULE, default_set=True)
    assert ADDON_MODULE in bpy.context.preferences.addons
    assert registration_snapshot() == enabled


@pytest.mark.parametrize("cycles", [2])
def test_repeated_enable_disable_is_stable(cycles):
    enabled = registration_snapshot()
    for _ in range(cycles):
        addon_utils.disable(ADDON_MODULE, default_set=True)
        addon_utils.enable(ADDON_MODULE, default_set=True)
    assert registration_snapshot() == enabled
