# SPDX-License-Identifier: GPL-3.0-or-later
"""Menu entries: an "RQ Rotation" submenu in the 3D View's Pose menu, Clear Rotation (RQ)
in its Clear Transform submenu, and the key tools in the Graph Editor's Key menu (they act on
the selected channels there)."""

from __future__ import annotations

from typing import Any

import bpy

from ..rq_blender.registration import register_classes_factory

GRAPH_OPERATORS = ("pose.rq_continuity_filter", "pose.rq_spline_interpolate")
# pose.rq_rotate is here as Blender lists Rotate under Pose > Transform: a menu entry is what
# F3 search finds (its usual ways in are R and the rotate gizmo).
POSE_OPERATORS = (
    "pose.rq_rotate",
    "pose.rq_ik_reach",
    "pose.rq_reparameterize",
    *GRAPH_OPERATORS,
    "pose.rq_bake",
    "pose.rq_compare_interpolation",
)


class VIEW3D_MT_pose_rq_rotation(bpy.types.Menu):
    """Rotation modes and the tools of RQ and swing/twist bones"""

    bl_label = "RQ Rotation"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        assert layout is not None
        layout.operator_menu_enum("pose.rq_set_mode", "mode")
        layout.separator()
        for idname in POSE_OPERATORS:
            layout.operator(idname)


def draw_pose_menu(self: Any, context: bpy.types.Context) -> None:
    """Appended to the 3D View's Pose menu."""
    self.layout.separator()
    self.layout.menu(VIEW3D_MT_pose_rq_rotation.__name__)


def draw_clear_transform_menu(self: Any, context: bpy.types.Context) -> None:
    """Appended to Pose > Clear Transform: the clear that also resets RQ and swing/twist
    bones (Alt+R runs it; its redo panel's All Transforms clears location and scale too). One
    entry with the operator's own label, as everywhere."""
    self.layout.separator()
    self.layout.operator("pose.rq_rot_clear")


def draw_graph_key_menu(self: Any, context: bpy.types.Context) -> None:
    """Appended to the Graph Editor's Key menu."""
    self.layout.separator()
    for idname in GRAPH_OPERATORS:
        self.layout.operator(idname)


_register_classes, _unregister_classes = register_classes_factory((VIEW3D_MT_pose_rq_rotation,))
MENUS = (
    ("VIEW3D_MT_pose", draw_pose_menu),
    ("VIEW3D_MT_pose_transform", draw_clear_transform_menu),
    ("GRAPH_MT_key", draw_graph_key_menu),
)


def register() -> None:
    _register_classes()
    for menu, draw in MENUS:
        getattr(bpy.types, menu).append(draw)


def unregister() -> None:
    for menu, draw in reversed(MENUS):
        getattr(bpy.types, menu).remove(draw)
    _unregister_classes()
