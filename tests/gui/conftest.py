# SPDX-License-Identifier: GPL-3.0-or-later
"""The GUI layer: one real Blender 5.2 LTS window for the whole session (see `gui_session`).

The window is Debian sid's Blender (5.2.2 when this was written; sid moves on, so the layer
prints the version it ran); the headless layers cover 4.2, 4.5 and 5.2. Building the Debian
root needs root: elsewhere every GUI test skips with the reason.
"""

from __future__ import annotations

import pytest
from gui_session import ARTIFACTS, GuiBlender, GuiUnavailableError, build_zip, ensure_root

GUI_VERSION_KEY = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """Name the Blender the window ran: sid's package changes under the tests."""
    version = config.stash.get(GUI_VERSION_KEY, None)
    if version is not None:
        terminalreporter.write_line(f"GUI layer ran Blender {version} (Debian sid)")


@pytest.fixture(scope="session")
def gui(request):
    """The running Blender GUI, with the extension installed and enabled."""
    try:
        root = ensure_root()
        zip_path = build_zip(ARTIFACTS / "dist")
    except GuiUnavailableError as reason:
        pytest.skip(f"GUI tests need the Debian sid root: {reason}")
    blender = GuiBlender(root, zip_path)
    try:
        blender.start()
        request.config.stash[GUI_VERSION_KEY] = blender.run(
            "import bpy\nresult = bpy.app.version_string"
        )
        yield blender
    finally:
        blender.stop()
