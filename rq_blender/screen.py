# SPDX-License-Identifier: GPL-3.0-or-later
"""Make the screen show what the add-on wrote.

Blender redraws an editor when an operator sends a notifier; Python cannot send one, and writing
an ID property from Python (``pose_bone["rq_vector"] = ...``) sends none. Without a redraw the
3D View keeps the old pose during an R drag although the depsgraph has the new one, and the
Properties editor and the sidebar keep the old numbers after an operator run from a menu.
"""

from __future__ import annotations

import bpy


def show_changes() -> None:
    """Tag every area of every window for redraw; Blender evaluates the depsgraph (the drivers
    included) before it draws them. Costs a flag per area: cheap enough for every mouse move."""
    window_manager = bpy.context.window_manager
    if window_manager is None:  # the bpy module without windows, or Blender quitting
        return
    for window in window_manager.windows:
        for area in window.screen.areas:
            area.tag_redraw()
