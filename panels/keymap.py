# SPDX-License-Identifier: GPL-3.0-or-later
"""Keys for the add-on's bones in the add-on keyconfig's Pose keymap: R (``pose.rq_rotate``),
G with Auto IK (``pose.rq_ik_grab``), and Alt+R, I, Ctrl+C, Ctrl+V and Ctrl+Shift+V
(``operators/pose_tools.py``).

The operators live in ``operators/`` and register with the others (before the UI); only the
key bindings are part of the interaction layer. Each sits ahead of Blender's own item for the
same key, and its poll lets the key fall through to Blender's tool where it has nothing to add.
"""

from __future__ import annotations

from typing import Any

import bpy

ROTATE = "pose.rq_rotate"
IK_GRAB = "pose.rq_ik_grab"
# (operator, key, modifiers, properties) after R.
POSE_TOOLS: tuple[tuple[str, Any, dict[str, Any], dict[str, Any]], ...] = (
    ("pose.rq_rot_clear", 'R', {"alt": True}, {}),
    ("pose.rq_keyframe_insert", 'I', {}, {}),
    ("pose.rq_copy", 'C', {"ctrl": True}, {}),
    ("pose.rq_paste", 'V', {"ctrl": True}, {"flipped": False}),
    ("pose.rq_paste", 'V', {"ctrl": True, "shift": True}, {"flipped": True}),
)
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
    # G likewise, ahead of transform.translate: only with Auto IK on a chain of add-on bones.
    _keymap_items.append((keymap, keymap.keymap_items.new(IK_GRAB, 'G', 'PRESS')))
    for idname, key, modifiers, properties in POSE_TOOLS:
        item = keymap.keymap_items.new(idname, key, 'PRESS', **modifiers)
        for name, value in properties.items():
            setattr(item.properties, name, value)
        _keymap_items.append((keymap, item))


def unregister() -> None:
    while _keymap_items:
        keymap, item = _keymap_items.pop()
        keymap.keymap_items.remove(item)
