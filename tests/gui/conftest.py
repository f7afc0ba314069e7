# SPDX-License-Identifier: GPL-3.0-or-later
"""The GUI layer: one real Blender 4.3 window for the whole session (see `gui_session`).

Only Blender 4.3 (Debian 13's) is tested with a GUI; the headless layers cover 4.2 and 5.0.
Building the Debian root needs root: elsewhere every GUI test skips with the reason.
"""

from __future__ import annotations

import pytest
from gui_session import ARTIFACTS, GuiBlender, GuiUnavailableError, build_zip, ensure_root


@pytest.fixture(scope="session")
def gui():
    """The running Blender GUI, with the extension installed and enabled."""
    try:
        root = ensure_root()
        zip_path = build_zip(ARTIFACTS / "dist")
    except GuiUnavailableError as reason:
        pytest.skip(f"GUI tests need the Debian 13 root: {reason}")
    blender = GuiBlender(root, zip_path)
    try:
        blender.start()
        yield blender
    finally:
        blender.stop()
