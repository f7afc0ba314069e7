# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the extension with Blender's own tool and install it into a throwaway Blender
user folder. Used by the test harness, the demo and ``bash dev.sh zip``.

Runs inside a Python that has the ``bpy`` wheel. Call `use_temporary_user_resources`
before the first ``import bpy``: Blender reads ``BLENDER_USER_RESOURCES`` when it starts.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys
import tempfile
from types import ModuleType

REPO = pathlib.Path(__file__).resolve().parents[1]
ADDON_ID = "rq_rotations"
ADDON_MODULE = f"bl_ext.user_default.{ADDON_ID}"


def use_temporary_user_resources() -> pathlib.Path:
    """Point Blender's user folder (preferences, extensions) at a new temporary folder, and
    its temporary files at a folder inside it: Blender keeps the pose copy buffer in its
    temporary folder's base (``TMPDIR``), where Blenders running at once (the test layers of
    each release) would share it."""
    if "bpy" in sys.modules:
        raise RuntimeError("call use_temporary_user_resources() before importing bpy")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="rq-blender-user-"))
    os.environ["BLENDER_USER_RESOURCES"] = str(folder)
    (folder / "tmp").mkdir()
    os.environ["TMPDIR"] = str(folder / "tmp")
    return folder


def blender_ext_script() -> pathlib.Path:
    """Blender's extension command-line tool, as shipped inside the bpy wheel."""
    import bpy

    scripts = pathlib.Path(bpy.utils.system_resource("SCRIPTS"))
    return scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"


def run_blender_ext(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``blender_ext.py`` with the current interpreter; returns the finished process."""
    return subprocess.run(
        [sys.executable, str(blender_ext_script()), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def build_zip(output_dir: pathlib.Path) -> pathlib.Path:
    """Validate the manifest and build the extension zip from the working tree."""
    output_dir.mkdir(parents=True, exist_ok=True)
    for old in output_dir.glob(f"{ADDON_ID}-*.zip"):
        old.unlink()
    for args in (
        ("validate", str(REPO)),
        ("build", "--source-dir", str(REPO), "--output-dir", str(output_dir)),
    ):
        result = run_blender_ext(*args)
        if result.returncode != 0:
            raise RuntimeError(f"blender_ext.py {args[0]} failed:\n{result.stdout}{result.stderr}")
    (zip_path,) = output_dir.glob(f"{ADDON_ID}-*.zip")
    return zip_path


def install(zip_path: pathlib.Path) -> ModuleType:
    """Install and enable the zip in the running Blender; returns the add-on's module."""
    import bpy

    result = bpy.ops.extensions.package_install_files(
        filepath=str(zip_path), repo="user_default", enable_on_install=True
    )
    if result != {"FINISHED"} or ADDON_MODULE not in bpy.context.preferences.addons:
        raise RuntimeError(f"installing {zip_path} failed: {result}")
    return importlib.import_module(ADDON_MODULE)
