# SPDX-License-Identifier: GPL-3.0-or-later
"""The add-on in a real Blender 4.3 window: start-up, panels, overlay, keymap, posing."""

from __future__ import annotations

import re

ADDON = "bl_ext.user_default.rq_rotations"
# A Python error printed by Blender (drawing code, handlers, operators).
PYTHON_ERROR = re.compile(r"Traceback \(most recent call last\)|\w+Error: ")


def test_blender_window_runs_with_the_extension_enabled(gui):
    info = gui.run(
        "result = {'version': bpy.app.version_string, 'background': bpy.app.background,\n"
        f"          'enabled': {ADDON!r} in bpy.context.preferences.addons,\n"
        "          'size': [bpy.context.window_manager.windows[0].width,\n"
        "                   bpy.context.window_manager.windows[0].height]}"
    )
    assert info["version"].startswith("4.3")
    assert info["background"] is False
    assert info["enabled"] is True
    shot = gui.screenshot("startup")
    assert shot.stat().st_size > 10_000
    assert not PYTHON_ERROR.search(gui.log_text()), gui.log_text()
