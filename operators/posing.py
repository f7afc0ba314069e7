# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_rotate``: interactive rotation (R, RR trackball) of RQ and swing/twist bones.

The rotation of a bone in an add-on mode is driven, so Blender's own ``transform.rotate``
cannot change it (the driver overwrites the channel). This operator takes R in the Pose
keymap only when a selected bone is in an add-on mode (its poll fails otherwise and Blender's
own R runs), and behaves like Blender's rotate: the mouse turns the selection about the view
axis around the bones' median point (each bone about its own joint), R again switches to
trackball, X/Y/Z constrain to the global axis and again to each bone's local axis, typed
numbers set the angle in degrees (- negates, Backspace deletes), LMB/Enter/Space confirm,
RMB/Esc cancel, auto-keying keys the changed channels; the status bar shows these keys while it
runs. Ctrl snaps the mouse's angle to the
scene's rotation increment (``snap_angle_increment_3d``; with Shift too, the precision
increment), and when the scene snaps rotations to increments (Snap on, Affect Rotate, Increment)
Ctrl turns that off instead; Shift makes the mouse turn 10x slower from where it was pressed.
Typed angles are neither snapped nor slowed. The rotate gizmo's dials
(``panels/gizmo.py``) start it too, with an axis constraint in the gizmo's orientation (or
trackball) and confirm on release. Every mouse move writes the bones'
parameters (ID properties), evaluates the depsgraph and redraws every editor
(`screen.show_changes`), so the viewport and the panels show each mouse position's pose:

- RQ bones get the rotation vector closest to the previously written one
  (`quat_to_rq` with ``near``): no flip, extra turns kept, across the 2 pi shells;
- swing/twist bones get the closest pair (`quat_to_swing_twist` with ``near``), then the
  true closest point of the swing ellipse (`clamp_swing_ellipse`) and the twist clamped to its
  range, so stored values respect the limits and the bone stops at them;
- selected bones in native modes rotate along (their ``matrix_basis``);
- with X-Axis Mirror (the armature's ``pose.use_mirror_x``) the bone with the flipped name
  follows mirrored (`rq_blender.pose_mirror`), unless it is dragged itself; Esc restores it.

The whole drag is one undo step, and its redo panel (F9) shows the turn as it ended: Angle,
Orientation and Axis (a trackball turn as the one axis it amounts to), which re-apply it to the
bones as they were (``execute``, also for scripts: `_recorded_delta`). The class is registered
with the other operators; its keymap entry (R in the Pose keymap) is registered with the UI, in
``panels/keymap.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty
from bpy_extras import view3d_utils
from mathutils import Matrix, Quaternion, Vector

from ..rq_blender import bone_modes, pose_mirror, reports, screen, transaction
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.modes import ADDON_MODES

TRACKBALL_RADIANS_PER_PIXEL = 0.01
PRECISION_FACTOR = 0.1  # Shift: the mouse turns the bones 10x slower, as in Blender's transform
# Blender before 4.2 snapped rotations to fixed steps; these stand in where the scene has no
# snap_angle_increment_3d(_precision).
DEFAULT_SNAP_INCREMENT = math.radians(5.0)
DEFAULT_SNAP_PRECISION = math.radians(1.0)
CTRL_KEYS = {"LEFT_CTRL", "RIGHT_CTRL"}
SHIFT_KEYS = {"LEFT_SHIFT", "RIGHT_SHIFT"}
AXES = {"X": Vector((1.0, 0.0, 0.0)), "Y": Vector((0.0, 1.0, 0.0)), "Z": Vector((0.0, 0.0, 1.0))}
NUMERIC_KEYS = {
    **{
        name: str(i)
        for i, name in enumerate(
            ("ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE")
        )
    },
    **{f"NUMPAD_{i}": str(i) for i in range(10)},
    "PERIOD": ".",
    "NUMPAD_PERIOD": ".",
}
CONFIRM = {"LEFTMOUSE", "RET", "NUMPAD_ENTER", "SPACE"}
CANCEL = {"RIGHTMOUSE", "ESC"}
# How the rotation starts (the gizmo's dials set these; R leaves the defaults: free, about the
# view axis). Every one is SKIP_SAVE, so a gizmo drag never changes what the next R does.
CONSTRAINT_ITEMS = (
    ('NONE', "None", "Free rotation about the view axis"),
    ('X', "X", "About the X axis of the orientation"),
    ('Y', "Y", "About the Y axis of the orientation"),
    ('Z', "Z", "About the Z axis of the orientation"),
)
# The status bar while rotating, as Blender's rotate shows its modal keys: (icon, what it does).
STATUS_KEYS = (
    ('MOUSE_LMB', "Confirm"),
    ('MOUSE_RMB', "Cancel"),
    ('EVENT_X', "X Axis"),
    ('EVENT_Y', "Y Axis"),
    ('EVENT_Z', "Z Axis"),
    ('EVENT_R', "Trackball"),
    ('EVENT_CTRL', "Snap Invert"),
    ('EVENT_SHIFT', "Precision"),
)
ORIENT_ITEMS = (
    ('GLOBAL', "Global", "World axes"),
    ('LOCAL', "Local", "Each bone's own posed axes"),
    ('MATRIX', "Matrix", "The axes given in Orientation Matrix (rows: X, Y, Z in world space)"),
    ('VIEW', "View", "The axis into the screen when the rotation started"),
)


@dataclass
class BoneState:
    """One selected bone: what it was when the drag began, and what was last written."""

    obj_name: str
    name: str
    mode: str
    joint: Quaternion  # world rotation of the bone's posed frame at the start
    basis: Quaternion  # the bone's local rotation at the start
    head: Vector  # world position of the joint at the start
    start: dict[str, Any] = field(default_factory=dict)  # parameters (or matrix_basis)
    last: dict[str, Any] = field(default_factory=dict)  # parameters last written


def _lookup(state: BoneState) -> tuple[bpy.types.Object, bpy.types.PoseBone]:
    """The bone's object and pose bone, looked up by name (never kept across events)."""
    obj = bpy.data.objects[state.obj_name]
    assert obj.pose is not None
    return obj, obj.pose.bones[state.name]


def _axes_row_by_row(axes: Matrix) -> list[float]:
    """The columns of ``axes`` (3x3: the X, Y, Z axes) one after the other, as
    ``orient_matrix`` holds them (the inverse of `_axes_of`)."""
    return [axes[row][column] for column in range(3) for row in range(3)]


def _axes_of(orient_matrix: Any) -> Matrix:
    """The 3x3 matrix whose columns are the X, Y, Z axes ``orient_matrix`` holds row by row."""
    m = list(orient_matrix)
    return Matrix((m[0:3], m[3:6], m[6:9])).transposed()


def snap_settings(scene: bpy.types.Scene | None) -> tuple[bool, float, float]:
    """Whether the scene snaps rotations to increments without Ctrl (Snap on, Affect Rotate,
    Increment among the snap targets), and its increment and precision increment (radians)."""
    if scene is None:
        return False, DEFAULT_SNAP_INCREMENT, DEFAULT_SNAP_PRECISION
    settings: Any = scene.tool_settings
    by_default = bool(
        settings.use_snap
        and getattr(settings, "use_snap_rotate", True)
        and 'INCREMENT' in settings.snap_elements
    )
    return (
        by_default,
        float(getattr(settings, "snap_angle_increment_3d", DEFAULT_SNAP_INCREMENT)),
        float(getattr(settings, "snap_angle_increment_3d_precision", DEFAULT_SNAP_PRECISION)),
    )


def snap_angle(angle: float, increment: float) -> float:
    """``angle`` rounded to the nearest multiple of ``increment`` (unchanged if it is not > 0)."""
    return round(angle / increment) * increment if increment > 0.0 else angle


def _draw_status(header: Any, _context: bpy.types.Context) -> None:
    """The modal keys of `POSE_OT_rq_rotate` in the status bar (``status_text_set`` calls it
    with the status bar's header)."""
    row = header.layout.row(align=True)
    for icon, text in STATUS_KEYS:
        row.label(text=text, icon=icon)
        row.separator(factor=2.0)
    row.label(text="Type an angle: 0-9 . - Backspace")


class POSE_OT_rq_rotate(bpy.types.Operator):
    """Rotate the selected bones, writing RQ and swing/twist parameters (closest equivalent,
    limits respected). R again: trackball; X/Y/Z: axis (twice: local); type an angle"""

    bl_idname = "pose.rq_rotate"
    bl_label = "Rotate (RQ)"
    bl_options = {'REGISTER', 'UNDO', 'BLOCKING', 'GRAB_CURSOR'}

    constraint_axis: EnumProperty(  # type: ignore[valid-type]
        name="Constraint Axis",
        items=CONSTRAINT_ITEMS,
        default='NONE',
        description="Start constrained to this axis",
        options={'SKIP_SAVE'},
    )
    orient_type: EnumProperty(  # type: ignore[valid-type]
        name="Orientation",
        items=ORIENT_ITEMS,
        default='GLOBAL',
        description="Orientation of the constraint axis",
        options={'SKIP_SAVE'},
    )
    orient_matrix: FloatVectorProperty(  # type: ignore[valid-type]
        name="Orientation Matrix",
        size=9,
        default=(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0),
        description="World axes X, Y, Z (row by row) when the orientation is Matrix",
        options={'SKIP_SAVE'},
    )
    center: FloatVectorProperty(  # type: ignore[valid-type]
        name="Center",
        size=3,
        subtype='XYZ',
        options={'SKIP_SAVE'},
        description="World point the mouse turns about (with Use Center; else the bones' median)",
    )
    use_center: BoolProperty(  # type: ignore[valid-type]
        name="Use Center",
        default=False,
        options={'SKIP_SAVE'},
        description="Measure the mouse's turn about Center (the gizmo's centre)",
    )
    use_trackball: BoolProperty(  # type: ignore[valid-type]
        name="Trackball",
        default=False,
        description="Start in trackball mode",
        options={'SKIP_SAVE'},
    )
    release_confirm: BoolProperty(  # type: ignore[valid-type]
        name="Confirm on Release",
        default=False,
        options={'SKIP_SAVE'},
        description="Confirm when the mouse button that started the rotation is released",
    )
    # The turn as it ended (`_record`), which ``execute`` applies: `_recorded_delta`.
    value: FloatProperty(  # type: ignore[valid-type]
        name="Angle",
        subtype='ANGLE',
        options={'SKIP_SAVE'},
        description="The turn about the axis (right-handed; about the view axis, clockwise on "
        "screen)",
    )
    view_axis: FloatVectorProperty(  # type: ignore[valid-type]
        name="View Axis",
        size=3,
        default=(0.0, 0.0, -1.0),
        options={'SKIP_SAVE', 'HIDDEN'},
        description="World direction into the screen when the rotation started",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.mode != 'POSE' or context.area is None or context.area.type != 'VIEW_3D':
            cls.poll_message_set("Needs Pose mode in a 3D View")
            return False
        if not bone_modes.selected_addon_bones(context):
            cls.poll_message_set("No selected bone is in RQ or Swing/Twist mode")
            return False
        return True

    # -- set-up -----------------------------------------------------------------------------

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[Any]:
        region, view = context.region, context.region_data
        if region is None or view is None:
            return {'CANCELLED'}
        refused = self._read_bones(context)
        if refused is not None:
            return refused
        heads = [state.head for state in self.bones]
        centre = Vector(self.center) if self.use_center else sum(heads, Vector()) / len(heads)
        pivot = view3d_utils.location_3d_to_region_2d(region, view, centre)
        self.pivot = Vector((region.width / 2, region.height / 2)) if pivot is None else pivot
        self.view_rotation = view.view_rotation.copy()
        self.view_axis = self.view_rotation @ Vector((0.0, 0.0, -1.0))
        self.mouse = self.start_mouse = Vector((event.mouse_region_x, event.mouse_region_y))
        self.angle = 0.0  # accumulated mouse angle about the pivot, counter-clockwise
        self.trackball = Vector((0.0, 0.0))
        self.mode = "VIEW"  # or "TRACKBALL", "GLOBAL", "LOCAL", "MATRIX"
        self.axis = "Z"
        self.orient = _axes_of(self.orient_matrix)
        if self.use_trackball:
            self.mode = "TRACKBALL"
        elif self.constraint_axis != 'NONE' and self.orient_type != 'VIEW':
            self.mode, self.axis = self.orient_type, self.constraint_axis
        self.typed = ""
        # Ctrl (snap_invert) and Shift (precise) as last seen; the scene's snapping settings.
        self.snap_invert, self.precise = bool(event.ctrl), bool(event.shift)
        self.snap_default, self.snap_increment, self.snap_precision = snap_settings(context.scene)
        cast(Any, context.window_manager).modal_handler_add(self)
        if context.workspace is not None:
            context.workspace.status_text_set(_draw_status)
        self._update(context)
        return {'RUNNING_MODAL'}

    def execute(self, context: bpy.types.Context) -> set[Any]:
        """The recorded turn (`_recorded_delta`) applied to the selected bones as they are: the
        redo panel's run, from the state before the drag."""
        refused = self._read_bones(context)
        if refused is not None:
            return refused
        self._apply(context)
        return self._finish(context, confirm=True)

    def draw(self, context: bpy.types.Context) -> None:
        """The redo panel: the turn as `_recorded_delta` reads it."""
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "value")
        layout.prop(self, "orient_type")
        row = layout.row()
        row.active = self.orient_type != 'VIEW'
        row.prop(self, "constraint_axis", text="Axis")

    def _read_bones(self, context: bpy.types.Context) -> set[Any] | None:
        """Record the selected bones as they are (``self.bones``) and their X-Axis Mirror
        bones (``self.mirrors``); a refusal's return value if one has values no tool can use."""
        try:
            for pose_bone in context.selected_pose_bones or ():
                bone_modes.check_values(pose_bone)
        except ValueError as error:
            return transaction.report_failure(self, error)
        self.bones: list[BoneState] = []
        for pose_bone in context.selected_pose_bones or ():
            obj = cast(bpy.types.Object, pose_bone.id_data)
            mode = bone_modes.current_mode(pose_bone)
            start = (
                bone_modes.read_parameters(pose_bone, mode)
                if mode in ADDON_MODES
                else {"matrix_basis": pose_bone.matrix_basis.copy()}
            )
            world = obj.matrix_world @ pose_bone.matrix
            self.bones.append(
                BoneState(
                    obj.name,
                    pose_bone.name,
                    mode,
                    world.to_quaternion(),
                    pose_bone.matrix_basis.to_quaternion(),
                    world.translation,
                    start,
                    dict(start),
                )
            )
        # X-Axis Mirror: the mirror bones follow mirrored (Esc puts them back).
        self.mirrors = pose_mirror.mirrors(list(context.selected_pose_bones or ()))
        return None

    # -- events ----------------------------------------------------------------------------

    def modal(self, context: bpy.types.Context, event: bpy.types.Event) -> set[Any]:
        kind, pressed = event.type, event.value == 'PRESS'
        if self._modifiers(event):  # Ctrl or Shift pressed or released: snap at once
            self._update(context)
            return {'RUNNING_MODAL'}
        if kind == 'MOUSEMOVE':
            self._mouse_moved(Vector((event.mouse_region_x, event.mouse_region_y)))
        elif (pressed and kind in CONFIRM) or (
            self.release_confirm and kind == 'LEFTMOUSE' and event.value == 'RELEASE'
        ):
            return self._finish(context, confirm=True)
        elif pressed and kind in CANCEL:
            return self._finish(context, confirm=False)
        elif pressed and kind == 'R' and self.mode in {"VIEW", "TRACKBALL"}:
            self.mode = "TRACKBALL" if self.mode == "VIEW" else "VIEW"
        elif pressed and kind in AXES:
            self._constrain(kind)
        elif pressed and kind in NUMERIC_KEYS:
            self.typed += NUMERIC_KEYS[kind]
        elif pressed and kind in {'MINUS', 'NUMPAD_MINUS'}:
            self.typed = self.typed[1:] if self.typed.startswith("-") else "-" + self.typed
        elif pressed and kind == 'BACK_SPACE':
            self.typed = self.typed[:-1]
        else:
            return {'RUNNING_MODAL'}
        self._update(context)
        return {'RUNNING_MODAL'}

    def _modifiers(self, event: bpy.types.Event) -> bool:
        """Note Ctrl and Shift; True when this event is one of them pressed or released."""
        if event.type in CTRL_KEYS | SHIFT_KEYS:
            held = event.value != 'RELEASE'
            if event.type in CTRL_KEYS:
                self.snap_invert = held
            else:
                self.precise = held
            return True
        self.snap_invert, self.precise = bool(event.ctrl), bool(event.shift)
        return False

    def _mouse_moved(self, mouse: Vector) -> None:
        """Accumulate the mouse's turn about the pivot (and its travel, for the trackball),
        10x slower while Shift is held: relative to where it was pressed, as in Blender."""
        factor = PRECISION_FACTOR if self.precise else 1.0
        before, after = self.mouse - self.pivot, mouse - self.pivot
        if before.length > 1e-3 and after.length > 1e-3:
            turn = math.atan2(after.y, after.x) - math.atan2(before.y, before.x)
            self.angle += factor * ((turn + math.pi) % (2.0 * math.pi) - math.pi)
        self.trackball += factor * (mouse - self.mouse)
        self.mouse = mouse

    def _constrain(self, axis: str) -> None:
        """X/Y/Z: global axis, the same key again: local axis, a third time: free."""
        if self.mode in {"VIEW", "TRACKBALL"} or axis != self.axis:
            self.mode, self.axis = "GLOBAL", axis
        elif self.mode in {"GLOBAL", "MATRIX"}:
            self.mode = "LOCAL"
        else:
            self.mode = "VIEW"

    # -- the rotation ----------------------------------------------------------------------

    def _typed_angle(self) -> float | None:
        try:
            return math.radians(float(self.typed)) if self.typed.strip("-") else None
        except ValueError:
            return None

    def _snap(self, angle: float) -> float:
        """A mouse angle snapped to the increment when snapping is on (the scene's setting,
        inverted while Ctrl is held); with Shift, to the precision increment."""
        if self.snap_default == self.snap_invert:
            return angle
        return snap_angle(angle, self.snap_precision if self.precise else self.snap_increment)

    def _mouse_angle(self) -> float:
        """The mouse's turn about the pivot (counter-clockwise), snapped."""
        return self._snap(self.angle)

    def _trackball_angles(self) -> tuple[float, float]:
        """Turns about the view's up and right axes from the mouse's travel, snapped."""
        return (
            self._snap(self.trackball.x * TRACKBALL_RADIANS_PER_PIXEL),
            self._snap(self.trackball.y * TRACKBALL_RADIANS_PER_PIXEL),
        )

    def _record(self) -> None:
        """Write the turn so far into the properties `_recorded_delta` reads (the redo
        panel's): a trackball turn as the axis and angle it amounts to, in a Matrix
        orientation whose Z is that axis."""
        typed = self._typed_angle()
        into_screen = Vector(self.view_axis)
        if self.mode == "TRACKBALL" and typed is None:
            right = self.view_rotation @ Vector((1.0, 0.0, 0.0))
            up = self.view_rotation @ Vector((0.0, 1.0, 0.0))
            dx, dy = self._trackball_angles()
            turn = Quaternion(up, dx) @ Quaternion(right, -dy)
            axis = turn.axis if turn.angle > 0.0 else into_screen
            basis = axis.to_track_quat('Z', 'Y').to_matrix()  # columns: X, Y and the axis
            self.orient_type, self.constraint_axis, self.value = 'MATRIX', 'Z', turn.angle
            self.orient_matrix = _axes_row_by_row(basis)
        elif self.mode in {"GLOBAL", "LOCAL", "MATRIX"}:
            self.orient_type, self.constraint_axis = self.mode, self.axis
            self.orient_matrix = _axes_row_by_row(self.orient)
            if typed is not None:
                self.value = typed
            else:
                # The mouse turns the bones the way it turns on screen, whichever way the axis
                # points (local axes: the first bone's, as Blender takes the active one's).
                axis = self._axis(self.bones[0].joint)
                self.value = (-1.0 if axis.dot(into_screen) > 0.0 else 1.0) * self._mouse_angle()
        else:
            # About the view axis: a positive angle turns clockwise on screen, as in Blender.
            self.orient_type, self.constraint_axis = 'VIEW', 'NONE'
            self.value = typed if typed is not None else -self._mouse_angle()

    def _axis(self, joint: Quaternion) -> Vector:
        """The world axis of the recorded orientation and axis, for a bone whose posed frame
        turns by ``joint`` (Local: the bone's own axis)."""
        if self.orient_type == 'VIEW' or self.constraint_axis == 'NONE':
            return Vector(self.view_axis).normalized()
        axis = AXES[self.constraint_axis].copy()
        if self.orient_type == 'LOCAL':
            return joint @ axis
        if self.orient_type == 'MATRIX':
            return (_axes_of(self.orient_matrix) @ axis).normalized()
        return axis

    def _recorded_delta(self, state: BoneState) -> Quaternion:
        """The world-space rotation the properties give one bone: ``value`` about `_axis`."""
        return Quaternion(self._axis(state.joint), self.value)

    def _update(self, context: bpy.types.Context) -> None:
        self._record()
        self._apply(context)
        self._header(context)

    def _apply(self, context: bpy.types.Context) -> None:
        """Pose every bone by its start rotation turned by `_recorded_delta`, and show it."""
        self.limited = False
        for state in self.bones:
            _, pose_bone = _lookup(state)
            delta = state.joint.inverted() @ self._recorded_delta(state) @ state.joint
            rotation = state.basis @ delta
            if state.mode in ADDON_MODES:
                state.last, limited = bone_modes.parameters_for_rotation(
                    pose_bone, np.array(rotation), near=state.last
                )
                self.limited |= limited
            else:
                location, _, scale = state.start["matrix_basis"].decompose()
                pose_bone.matrix_basis = Matrix.LocRotScale(location, rotation, scale)
                pose_mirror.follow(self.mirrors, pose_bone, state.mode, rotation)
                continue
            bone_modes.write_parameters(pose_bone, state.last)
            pose_mirror.follow(self.mirrors, pose_bone, state.mode, state.last)
        # Evaluate now: left to the event loop, the drawing sometimes ran before the drivers
        # had read the new values, and the bone showed the previous mouse position's pose.
        context.view_layer.update()
        screen.show_changes()

    def _header(self, context: bpy.types.Context) -> None:
        typed = self._typed_angle()
        if self.typed:
            angle = f"[{self.typed}|]°"
        elif self.mode == "TRACKBALL":
            dx, dy = self._trackball_angles()
            angle = f"{math.degrees(dx):.2f}°, {math.degrees(-dy):.2f}°"
        else:
            angle = f"{math.degrees(-self._mouse_angle() if typed is None else typed):.2f}°"
        along = {
            "VIEW": "",
            "TRACKBALL": " (trackball)",
            "GLOBAL": f" along global {self.axis}",
            "LOCAL": f" along local {self.axis}",
            "MATRIX": f" along {self.axis}",
        }[self.mode]
        limit = "  at the joint limits" if self.limited else ""
        area = context.area
        if area is not None:
            area.header_text_set(f"Rotation: {angle}{along}{limit}")

    # -- the end ---------------------------------------------------------------------------

    def _finish(self, context: bpy.types.Context, confirm: bool) -> set[Any]:
        area = context.area
        if area is not None:
            area.header_text_set(None)
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        scene = context.scene
        auto_key = confirm and scene is not None and scene.tool_settings.use_keyframe_insert_auto
        for state in self.bones:
            obj, pose_bone = _lookup(state)
            if not confirm:
                if state.mode in ADDON_MODES:
                    bone_modes.write_parameters(pose_bone, state.start)
                else:
                    pose_bone.matrix_basis = state.start["matrix_basis"]
            elif auto_key:
                pose_mirror.key_rotation(pose_bone)
            obj.update_tag()
        if not confirm:
            pose_mirror.restore(self.mirrors)
        elif auto_key:
            pose_mirror.key_targets(self.mirrors)
        screen.show_changes()
        if not confirm:
            return {'CANCELLED'}
        count = len(self.bones)
        self.report(
            {'INFO'},
            f"Rotated {reports.plural(count, 'bone')}"
            + (" (stopped at joint limits)" if self.limited else ""),
        )
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_rotate,))
