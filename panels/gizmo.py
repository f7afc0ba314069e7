# SPDX-License-Identifier: GPL-3.0-or-later
"""The rotate gizmo for RQ and swing/twist bones.

Blender's rotate gizmo (the Rotate and Transform tools, and Viewport Gizmos > Object Gizmos >
Rotate) runs ``transform.rotate``, which writes the bone's rotation channel. On the add-on's
bones that channel is driven, so the driver writes it back and nothing moves. This gizmo group
shows the same dials at the same place and size whenever Blender's rotate dials show and a
selected bone is in an add-on mode: X, Y and Z in the rotation orientation (Transform
Orientation, or its Rotate override), the white view dial and the trackball disc. Each dial
starts ``pose.rq_rotate`` (``target_set_operator``) with its axis constraint, the orientation,
the gizmo's centre and confirm-on-release, so dragging a dial works as on native bones: the
parameters follow the mouse continuously, limits hold, typed angles, Esc/RMB cancel, one undo
step. The dials carry a selection bias: where they cover Blender's identical dials the pick
goes to them, so Blender's dead dials cannot be grabbed.

Cost: ``poll`` reads a few settings and scans the selected bones; matrices are set in
``refresh`` (selection, pose or view changes) and the view dial's in ``draw_prepare``. The
dials themselves are Blender's C gizmos (``GIZMO_GT_dial_3d``): no Python per frame beyond
one matrix.
"""

from __future__ import annotations

from typing import Any

import bpy
from mathutils import Matrix, Vector

from ..rq_blender import bone_modes
from ..rq_blender.registration import register_classes_factory

ROTATE = "pose.rq_rotate"
# Tools whose gizmo includes Blender's rotate dials.
ROTATE_TOOLS = {"builtin.rotate", "builtin.transform"}
# Rotation orientation slot of Scene.transform_orientation_slots (default, move, rotate, scale).
ROTATE_SLOT = 2
# Picked before Blender's coincident dials (see wm_gizmo_map's select bias), the trackball
# disc after the rings, as in Blender's own gizmo.
RING_BIAS = 1.0
DISC_BIAS = 0.5
# name, constraint, scale, dial draw options, line width, colour, alpha, highlight alpha;
# sizes, widths and alphas as Blender's transform gizmo draws its rotate dials.
DIALS: tuple[tuple[str, str, float, set[str], float, str, float, float], ...] = (
    ("TRACKBALL", 'NONE', 1.0, {'FILL'}, 2.0, "white", 0.05, 0.1),
    ("X", 'X', 1.0, {'CLIP'}, 3.0, "axis_x", 0.6, 1.0),
    ("Y", 'Y', 1.0, {'CLIP'}, 3.0, "axis_y", 0.6, 1.0),
    ("Z", 'Z', 1.0, {'CLIP'}, 3.0, "axis_z", 0.6, 1.0),
    ("VIEW", 'NONE', 1.2, set(), 2.0, "gizmo_view_align", 0.6, 1.0),
)
AXIS_INDEX = {"X": 0, "Y": 1, "Z": 2}
IDENTITY = Matrix.Identity(3)


def rotate_dials_shown(context: bpy.types.Context) -> bool:
    """Whether Blender's transform gizmo shows its rotate dials in this 3D View."""
    space: Any = context.space_data
    if space is None or space.type != 'VIEW_3D' or not space.show_gizmo:
        return False
    if space.show_gizmo_context and space.show_gizmo_object_rotate:
        return True
    workspace = context.workspace
    tool = (
        workspace.tools.from_space_view3d_mode(context.mode, create=False)
        if workspace is not None
        else None
    )
    return bool(space.show_gizmo_tool and tool is not None and tool.idname in ROTATE_TOOLS)


def orientation(context: bpy.types.Context) -> tuple[str, Matrix]:
    """The rotation orientation: ``('LOCAL', active bone axes)`` or ``('MATRIX', axes)``,
    the axes as the columns of a world-space 3x3 matrix."""
    scene = context.scene
    assert scene is not None
    slots = scene.transform_orientation_slots
    slot = slots[ROTATE_SLOT] if slots[ROTATE_SLOT].use else slots[0]
    kind = slot.type if slot.type != 'DEFAULT' else slots[0].type
    obj = context.object
    active = context.active_pose_bone
    if kind in {'LOCAL', 'NORMAL', 'GIMBAL'} and obj is not None and active is not None:
        return 'LOCAL', (obj.matrix_world @ active.matrix).to_3x3().normalized()
    if kind == 'PARENT' and obj is not None and active is not None:
        parent = active.parent
        frame = obj.matrix_world @ parent.matrix if parent is not None else obj.matrix_world
        return 'MATRIX', frame.to_3x3().normalized()
    if kind == 'VIEW':
        view: Any = context.region_data
        return 'MATRIX', view.view_rotation.to_matrix() if view is not None else IDENTITY
    if kind == 'CURSOR':
        return 'MATRIX', scene.cursor.matrix.to_3x3().normalized()
    if kind not in {'GLOBAL', 'LOCAL', 'NORMAL', 'GIMBAL', 'PARENT'}:
        custom = slot.custom_orientation if slot.type != 'DEFAULT' else slots[0].custom_orientation
        if custom is not None:
            return 'MATRIX', custom.matrix.copy().normalized()
    return 'GLOBAL', IDENTITY.copy()


def centre(context: bpy.types.Context) -> Vector:
    """Where Blender puts the gizmo: the pivot point of the selected bones' joints."""
    scene = context.scene
    assert scene is not None
    pivot = scene.tool_settings.transform_pivot_point
    if pivot == 'CURSOR':
        return scene.cursor.location.copy()
    obj = context.object
    active = context.active_pose_bone
    if pivot == 'ACTIVE_ELEMENT' and obj is not None and active is not None:
        return obj.matrix_world @ active.head
    heads = [bone.id_data.matrix_world @ bone.head for bone in context.selected_pose_bones or ()]
    if pivot == 'BOUNDING_BOX_CENTER':
        low = Vector([min(h[i] for h in heads) for i in range(3)])
        high = Vector([max(h[i] for h in heads) for i in range(3)])
        return (low + high) / 2.0
    return sum(heads, Vector()) / len(heads)


def _theme_colour(context: bpy.types.Context, name: str) -> tuple[float, float, float]:
    if name == "white":
        return (1.0, 1.0, 1.0)
    preferences = context.preferences
    assert preferences is not None
    return tuple(getattr(preferences.themes[0].user_interface, name))[:3]  # type: ignore


class VIEW3D_GGT_rq_rotate(bpy.types.GizmoGroup):
    """Rotate dials for RQ and swing/twist bones, over Blender's own rotate gizmo"""

    bl_idname = "VIEW3D_GGT_rq_rotate"
    bl_label = "RQ Rotate"
    bl_space_type = 'VIEW_3D'
    bl_region_type = 'WINDOW'
    bl_options = {'3D', 'PERSISTENT'}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return (
            context.mode == 'POSE'
            and rotate_dials_shown(context)
            and bool(bone_modes.selected_addon_bones(context))
        )

    def setup(self, context: bpy.types.Context) -> None:
        self.dials: dict[str, Any] = {}
        for name, _, scale, options, width, colour, alpha, alpha_highlight in DIALS:
            dial: Any = self.gizmos.new("GIZMO_GT_dial_3d")
            dial.draw_options = options
            dial.scale_basis = scale
            dial.line_width = width
            dial.color = dial.color_highlight = _theme_colour(context, colour)
            dial.alpha, dial.alpha_highlight = alpha, alpha_highlight
            dial.select_bias = DISC_BIAS if name == "TRACKBALL" else RING_BIAS
            dial.use_select_background = name == "TRACKBALL"
            dial.use_draw_hover = name == "TRACKBALL"
            dial.use_draw_value = name != "TRACKBALL"
            dial.use_draw_modal = True
            self.dials[name] = dial
        self.refresh(context)

    def refresh(self, context: bpy.types.Context) -> None:
        if not bone_modes.selected_addon_bones(context):
            return
        kind, axes = orientation(context)
        where = centre(context)
        flat = [axes[row][col] for col in range(3) for row in range(3)]  # axis by axis
        for name, constraint, *_ in DIALS:
            dial = self.dials[name]
            if dial.is_modal:  # keep the dragged dial where its drag began
                continue
            if name in AXIS_INDEX:
                normal = axes.transposed()[AXIS_INDEX[name]].normalized()  # a column
                dial.matrix_basis = Matrix.LocRotScale(
                    where.to_tuple(), normal.to_track_quat('Z', 'Y'), None
                )
            else:
                dial.matrix_basis = Matrix.Translation(where.to_tuple())
            props = dial.target_set_operator(ROTATE)
            props.constraint_axis = constraint
            props.orient_type = kind
            props.orient_matrix = flat
            props.center = where
            props.use_center = True
            props.use_trackball = name == "TRACKBALL"
            props.release_confirm = True

    def draw_prepare(self, context: bpy.types.Context) -> None:
        view: Any = context.region_data
        if view is None:
            return
        rotation = view.view_rotation
        for name in ("VIEW", "TRACKBALL"):
            dial = self.dials[name]
            if not dial.is_modal:
                dial.matrix_basis = Matrix.LocRotScale(
                    dial.matrix_basis.to_translation(), rotation, None
                )


register, unregister = register_classes_factory((VIEW3D_GGT_rq_rotate,))
