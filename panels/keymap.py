# SPDX-License-Identifier: GPL-3.0-or-later
"""The R key for the add-on's bones: ``pose.rq_rotate`` in the add-on keyconfig's Pose keymap.

The operator itself lives in ``operators/posing.py`` and registers with the other operators
(before the UI); only the key binding is part of the interaction layer.
"""

from __future__ import annotations

from typing import Any

import bpy

ROTATE = "pose.rq_rotate"
_keymap_items: list[tuple[Any, Any]] = []


def register() -> None:
    window_manager = bpy.context.window_manager
    keyconfig = window_manager.keyconfigs.addon if window_manager is not None else None
    if keyconfig is None:  # background Blender has no add-on keyconfig
        return
    keymap = keyconfig.keymaps.new(name="Pose", space_type='EMPTY')
    # Ahead of Blender's own R in the Pose keymap; the operator's poll lets R fall through to
    # transform.rotate when no selected bone is in an add-on mode.
    _keymap_items.append((keymap, keymap.keymap_items.new(ROTATE, 'R', 'PRESS')))


def unregister() -> None:
    while _keymap_items:
        keymap, item = _keymap_items.pop()
        keymap.keymap_items.remove(item)
