# SPDX-License-Identifier: GPL-3.0-or-later
"""The bone panels: Bone Properties (active bone) and the 3D View sidebar (selected bones).

Both draw the same controls for the active pose bone. The values are the bone's ID
properties themselves (``pose_bone["rq_vector"]`` ...), so they key, drive and override like
any Blender property; the mode menu runs ``pose.rq_set_mode`` (one undo step, converts
animation) on the selected bones. The limit status and the shell warning are computed with
the numpy core on each redraw (a handful of floats: cheap).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import bpy
import numpy as np

from ..rq_blender import bone_modes, compat
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation import (
    effective_limits,
    scale_swing_into_ellipse,
    shell_distance,
    swing_vector,
)
from ..rq_rotation.modes import (
    PROPERTIES,
    RQ,
    RQ_VECTOR,
    SWING,
    SWING_LIMIT,
    SWING_TWIST,
    TWIST,
    TWIST_LIMIT,
    mode_label,
)
from .overlay import settings as overlay_settings

# The API stubs type icons as a Literal of every icon name.
Icon = Any
# A stored value within this of a limit is "on the limit" (RNA floats are 32-bit).
ON_LIMIT = math.radians(0.01)
# Warn when |v| is within this of a singular shell |v| = 2 pi k: the rotation velocity and
# Euclidean interpolation of the vector distort like 1 / (distance to the shell).
SHELL_WARNING = math.radians(20.0)
# The animation tools of the add-on's bones: (operator, icon). Buttons show the operator's
# label, as the menus and the operator search do.
ANIMATION_OPERATORS: tuple[tuple[str, Icon], ...] = (
    ("pose.rq_continuity_filter", 'IPO_EASE_IN_OUT'),
    ("pose.rq_spline_interpolate", 'IPO_BEZIER'),
    ("pose.rq_bake", 'ACTION'),
    ("pose.rq_bake_visual", 'KEYINGSET'),
    ("pose.rq_ik_reach", 'CON_KINEMATIC'),
    ("pose.rq_compare_interpolation", 'GRAPH'),
)


def swing_status(swing: np.ndarray, limit: np.ndarray) -> tuple[Icon, str]:
    """``(icon, text)`` saying where a swing lies against its ellipse limit [a, b]: against
    what the drivers pose (the radial scaling, whose limit at a zero semi-axis scales a swing
    with a component along it to nothing: a posed bone made a hinge is drawn unbent)."""
    a, b = float(limit[0]), float(limit[1])
    moved = float(np.linalg.norm(swing - scale_swing_into_ellipse(swing, a, b)))
    if moved > ON_LIMIT:
        degrees = math.degrees(moved)
        for axis, value, semi_axis in (("X", swing[0], a), ("Z", swing[1], b)):
            if semi_axis <= 0.0 and value != 0.0:
                text = f"Swing {axis} must be 0 (its limit is 0): clamped by {degrees:.1f}°"
                return 'ERROR', text
        return 'ERROR', f"Swing clamped by {degrees:.1f}°"
    # Within ON_LIMIT of the ellipse: is it on the boundary? A zero semi-axis (a hinge) leaves
    # a segment: on its ends, not along it.
    level = math.hypot(swing[0] / a if a > 0 else 0.0, swing[1] / b if b > 0 else 0.0)
    positive = [axis for axis in (a, b) if axis > 0.0]
    if not positive or level >= 1.0 - ON_LIMIT / max(min(positive), ON_LIMIT):
        return 'DECORATE_KEYFRAME', "Swing on the limit"
    return 'CHECKMARK', f"Swing inside ({100.0 * level:.0f}% of the limit)"


def twist_status(twist: float, limit: np.ndarray) -> tuple[Icon, str]:
    """``(icon, text)`` saying where a twist lies against its range [min, max]."""
    low, high = float(limit[0]), float(limit[1])
    beyond = max(low - twist, twist - high, 0.0)
    if beyond > ON_LIMIT:
        return 'ERROR', f"Twist clamped by {math.degrees(beyond):.1f}°"
    if min(abs(twist - low), abs(twist - high)) <= ON_LIMIT:
        return 'DECORATE_KEYFRAME', "Twist on the limit"
    return 'CHECKMARK', "Twist inside"


def shell_warning(vector: np.ndarray) -> str | None:
    """A warning when the rotation vector is near a singular shell, else None."""
    length = float(np.linalg.norm(vector))
    distance = float(shell_distance(vector))
    if length <= math.pi or distance >= SHELL_WARNING:
        return None
    shell = 360.0 * max(1, round(length / (2.0 * math.pi)))
    return f"|v| = {math.degrees(length):.0f}°, {math.degrees(distance):.1f}° from {shell:.0f}°"


def draw_mode_menu(layout: bpy.types.UILayout, pose_bone: bpy.types.PoseBone) -> None:
    """The rotation-mode menu, showing the bone's mode: runs ``pose.rq_set_mode`` on the
    selected bones. The panels draw it in their header: right under Blender's own Transform
    panel, whose Mode menu shows the driven native channels (Axis Angle), a second "Mode" row
    would read as a contradiction; "RQ Rotation [Swing/Twist]" reads as the add-on's mode."""
    mode = bone_modes.current_mode(pose_bone)
    layout.operator_menu_enum("pose.rq_set_mode", "mode", text=mode_label(mode))


def draw_bone(layout: bpy.types.UILayout, pose_bone: bpy.types.PoseBone) -> None:
    """Parameters, limits with their status, and warnings for one pose bone (the mode menu
    is in the panel's header, `draw_mode_menu`).

    Values no tool can use (`bone_modes.value_problems`) are named with a reset button, and
    the status computed from them is left out: the panel always draws whole."""
    mode = bone_modes.current_mode(pose_bone)
    problems = dict(bone_modes.value_problems(pose_bone))
    _draw_problems(layout, pose_bone, problems)
    stored: Any = pose_bone  # ID properties (the stubs lack ``in``)

    def prop(owner: bpy.types.UILayout, name: str, text: str) -> None:
        if name in stored:
            owner.prop(pose_bone, PROPERTIES[name].path, text=text)

    if mode == RQ:
        prop(layout, RQ_VECTOR.name, "Vector")
        if not problems:
            _draw_shell_warning(layout, np.asarray(pose_bone[RQ_VECTOR.name], dtype=float))
    elif mode == SWING_TWIST:
        column = layout.column()
        prop(column, SWING.name, "Swing X, Z")
        prop(column, TWIST.name, "Twist Y")
        if not problems:
            swing = np.asarray(pose_bone[SWING.name], dtype=float)
            _draw_shell_warning(layout, swing_vector(swing))
        box = layout.box()
        box.label(text="Limits", icon='CON_ROTLIMIT')
        prop(box, SWING_LIMIT.name, "Swing Ellipse")
        prop(box, TWIST_LIMIT.name, "Twist Range")
        if not problems:
            swing_limit, twist_limit = bone_modes.joint_limits(pose_bone)
            # The status against the limits as they act (negative semi-axes as 0, ...).
            a, b, low, high = effective_limits(*swing_limit, *twist_limit)
            for icon, text in (
                swing_status(swing, np.array([a, b])),
                twist_status(float(pose_bone[TWIST.name]), np.array([low, high])),
            ):
                box.label(text=text, icon=icon)
            _draw_limit_warnings(box, pose_bone, swing_limit, twist_limit)
    else:
        layout.label(text="Native mode: pick RQ or Swing/Twist above", icon='INFO')
        return
    column = layout.column(align=True)
    for idname, icon in ANIMATION_OPERATORS:
        column.operator(idname, icon=icon)


def _draw_problems(
    layout: bpy.types.UILayout, pose_bone: bpy.types.PoseBone, problems: dict[str, str]
) -> None:
    """One alert line per unusable property, with a button resetting it to its default."""
    if not problems:
        return
    box = layout.box()
    box.alert = True
    for name, message in problems.items():
        box.label(text=message, icon='ERROR')
        button = box.operator("pose.rq_reset_property", icon='LOOP_BACK')
        button.name = name
        button.bone = pose_bone.name


def _draw_limit_warnings(
    box: bpy.types.UILayout,
    pose_bone: bpy.types.PoseBone,
    swing_limit: tuple[float, float],
    twist_limit: tuple[float, float],
) -> None:
    """Negative semi-axes or an inverted twist range: what they do, and a one-click fix."""
    warnings = bone_modes.limit_warnings(swing_limit, twist_limit)
    if not warnings:
        return
    column = box.column()
    column.alert = True
    for text in warnings:
        column.label(text=text, icon='ERROR')
    column.operator("pose.rq_fix_limits", icon='TOOL_SETTINGS').bone = pose_bone.name


def _draw_shell_warning(layout: bpy.types.UILayout, vector: np.ndarray) -> None:
    warning = shell_warning(vector)
    if warning is not None:
        box = layout.box()
        box.alert = True
        box.label(text="Near a singular shell", icon='ERROR')
        box.label(text=warning)
        box.operator("pose.rq_reparameterize", icon='FILE_REFRESH')


def active_pose_bone(context: bpy.types.Context) -> bpy.types.PoseBone:
    """The active pose bone (the panels' poll guarantees there is one)."""
    pose_bone = context.active_pose_bone
    assert pose_bone is not None
    return pose_bone


class RQPoseBonePanel:
    """Poll shared by the panels: an armature in Pose mode with an active pose bone."""

    layout: bpy.types.UILayout  # set by Blender before draw()

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = context.object
        return (
            obj is not None
            and obj.type == 'ARMATURE'
            and obj.mode == 'POSE'
            and context.active_pose_bone is not None
        )

    def draw_header_preset(self, context: bpy.types.Context) -> None:
        draw_mode_menu(self.layout, active_pose_bone(context))


# (The 5.2 stubs type Panel.poll's context as Optional, "never None": RQPoseBonePanel's poll
# takes a Context, which is what Blender passes.)
class BONE_PT_rq_rotation(RQPoseBonePanel, bpy.types.Panel):  # type: ignore[misc]
    """The active bone's RQ or swing/twist rotation, limits and status."""

    bl_label = "RQ Rotation"
    bl_space_type = 'PROPERTIES'
    bl_region_type = 'WINDOW'
    bl_context = "bone"
    # Under the bone's Transform panel, next to the (driven) native rotation it replaces.
    bl_parent_id = "BONE_PT_transform"

    def draw(self, context: bpy.types.Context) -> None:
        self.layout.use_property_split = True
        self.layout.use_property_decorate = True
        draw_bone(self.layout, active_pose_bone(context))


class VIEW3D_PT_rq_rotation(RQPoseBonePanel, bpy.types.Panel):  # type: ignore[misc]
    """The same controls in the sidebar; the mode menu acts on every selected bone."""

    bl_label = "RQ Rotation"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'UI'
    bl_category = "Item"

    def draw(self, context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        obj = context.object
        assert obj is not None and obj.pose is not None  # poll
        selected = [pb for pb in obj.pose.bones if compat.pose_bone_selected(pb)]
        counts = Counter(bone_modes.current_mode(pb) for pb in selected)
        summary = ", ".join(f"{n} {mode_label(m)}" for m, n in sorted(counts.items()))
        layout.label(text=f"Selected: {summary or 'none'}", icon='BONE_DATA')
        draw_bone(layout, active_pose_bone(context))
        layout.prop(overlay_settings(context), "show_limits")


register, unregister = register_classes_factory((BONE_PT_rq_rotation, VIEW3D_PT_rq_rotation))
