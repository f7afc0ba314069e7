# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_ik_grab``: G with Auto IK (Pose Options > Auto IK) on chains with the add-on's bones.

Blender's Auto IK poses a grabbed bone's chain with a temporary IK constraint and writes the
bones' native rotation channels, which the add-on's drivers overwrite: on RQ and swing/twist
bones it does nothing useful. This operator takes G in the Pose keymap (``panels/keymap.py``,
next to R) when the armature's ``pose.use_auto_ik`` is on and a grabbed chain has an add-on
bone; otherwise its poll fails and G is Blender's translate.

The bones it grabs follow Blender's Auto IK rules: each selected bone that has a parent and
no selected ancestor, and is connected to its parent or has a connected child (a solitary
bone, or a selected root bone, makes the poll fail: Blender's G moves those). Its chain is
the bone and its parents up to the first one not connected to its parent (included);
PageUp / PageDown (or Shift+Wheel) lengthen and shorten it, from one bone to that length, as
Blender's Auto IK chain length.

Each mouse move gives every chain's tip a target: the tail where the drag began, moved by the
mouse's travel on the view plane through that tail
(``bpy_extras.view3d_utils.region_2d_to_location_3d``), so the tail follows the mouse as G
moves a bone; the core's solver (`rq_blender.ik_chain`) poses the chain from its last pose
(the smallest turn that reaches), within the joint limits and locks, each bone in its own
mode, and the depsgraph is evaluated and every editor redrawn (`screen.show_changes`), as R
does. Chains are solved one after the other (chains sharing bones: the later one wins).
LMB / Enter / Space keep the pose (auto-keying keys the chains' rotation channels), RMB / Esc
put every bone back. The whole drag is one undo step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

import bpy
from bpy_extras import view3d_utils
from mathutils import Vector

from ..rq_blender import bone_modes, ik_chain, reports, screen, transaction
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.modes import ADDON_MODES

CONFIRM = {"LEFTMOUSE", "RET", "NUMPAD_ENTER", "SPACE"}
CANCEL = {"RIGHTMOUSE", "ESC"}
LONGER = {"PAGE_UP"}
SHORTER = {"PAGE_DOWN"}
# Shift+Wheel as in Blender's transform: down lengthens, up shortens.
WHEEL_LONGER, WHEEL_SHORTER = "WHEELDOWNMOUSE", "WHEELUPMOUSE"


def grabbed_bones(context: bpy.types.Context) -> list[bpy.types.PoseBone] | None:
    """The selected bones Auto IK moves by their chains (see the module docstring), or None
    when Blender's G must handle the selection (Auto IK off, a solitary or root bone)."""
    selected = list(context.selected_pose_bones or ())
    if not selected:
        return None
    chosen = set((b.id_data.name, b.name) for b in selected)
    grabbed: list[bpy.types.PoseBone] = []
    for pose_bone in selected:
        obj = cast(bpy.types.Object, pose_bone.id_data)
        if obj.pose is None or not obj.pose.use_auto_ik:
            return None
        connected_child = any(c.bone.use_connect for c in pose_bone.children)
        if pose_bone.parent is None or not (pose_bone.bone.use_connect or connected_child):
            return None
        ancestor: bpy.types.PoseBone | None = pose_bone.parent
        while ancestor is not None and (obj.name, ancestor.name) not in chosen:
            ancestor = ancestor.parent
        if ancestor is None:
            grabbed.append(pose_bone)
    return grabbed


@dataclass
class Grab:
    """One grabbed chain: its bones when the drag began (for Esc), the chain now solved
    (``length`` bones at its tip end), what was last written, the tip's start tail, and the
    last target and solution."""

    initial: ik_chain.Chain
    chain: ik_chain.Chain
    last: ik_chain.Chain
    tail: Vector
    target: Vector | None = None  # the last mouse position's
    result: Any = None  # the last solve's IKResult


class POSE_OT_rq_ik_grab(bpy.types.Operator):
    """Move the selected bones' tails with Auto IK, turning their chains of RQ, swing/twist and
    native bones within the joint limits. PageUp/PageDown: chain length"""

    bl_idname = "pose.rq_ik_grab"
    bl_label = "Auto IK Grab (RQ)"
    bl_options = {'REGISTER', 'UNDO', 'BLOCKING', 'GRAB_CURSOR'}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.mode != 'POSE' or context.area is None or context.area.type != 'VIEW_3D':
            cls.poll_message_set("Needs Pose mode in a 3D View")
            return False
        grabbed = grabbed_bones(context)
        if not grabbed:
            cls.poll_message_set("Auto IK is off, or Blender's G moves the selected bones")
            return False
        if not any(
            bone_modes.current_mode(b) in ADDON_MODES
            for tip in grabbed
            for b in ik_chain.auto_ik_chain(tip)
        ):
            cls.poll_message_set("No grabbed chain has a bone in RQ or Swing/Twist mode")
            return False
        return True

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[Any]:
        if context.region is None or context.region_data is None:
            return {'CANCELLED'}
        context.view_layer.update()
        self.grabs: list[Grab] = []
        try:
            for tip in grabbed_bones(context) or ():
                chain = ik_chain.read_chain(ik_chain.auto_ik_chain(tip))
                obj = cast(bpy.types.Object, tip.id_data)
                tail = obj.matrix_world @ tip.tail
                self.grabs.append(Grab(chain, chain, chain, tail))
        except ValueError as error:
            return transaction.report_failure(self, error)
        self.longest = max(len(g.initial.bones) for g in self.grabs)
        self.length = self.longest
        self.start_mouse = Vector((event.mouse_region_x, event.mouse_region_y))
        self.mouse = self.start_mouse.copy()
        cast(Any, context.window_manager).modal_handler_add(self)
        self._header(context)
        return {'RUNNING_MODAL'}

    def modal(self, context: bpy.types.Context, event: bpy.types.Event) -> set[Any]:
        kind, pressed = event.type, event.value == 'PRESS'
        length = self.length
        if kind == 'MOUSEMOVE':
            self.mouse = Vector((event.mouse_region_x, event.mouse_region_y))
        elif pressed and kind in CONFIRM:
            return self._finish(context, confirm=True)
        elif pressed and kind in CANCEL:
            return self._finish(context, confirm=False)
        elif pressed and (kind in LONGER or (event.shift and kind == WHEEL_LONGER)):
            length = min(self.length + 1, self.longest)
        elif pressed and (kind in SHORTER or (event.shift and kind == WHEEL_SHORTER)):
            length = max(self.length - 1, 1)
        else:
            return {'RUNNING_MODAL'}
        self._set_length(context, length)
        try:
            self._update(context)
        except Exception as error:  # never a traceback: every bone back, the reason reported
            self._finish(context, confirm=False)
            return transaction.report_failure(self, error)
        return {'RUNNING_MODAL'}

    # -- the pose -------------------------------------------------------------------------

    def _target(self, context: bpy.types.Context, tail: Vector) -> Vector:
        """``tail`` moved by the mouse's travel on the view plane through it."""
        # (Both exist: invoke refuses a context without them; the stubs want sequences.)
        region, view = cast(Any, context.region), cast(Any, context.region_data)
        now = view3d_utils.region_2d_to_location_3d(region, view, cast(Any, self.mouse), tail)
        then = view3d_utils.region_2d_to_location_3d(
            region, view, cast(Any, self.start_mouse), tail
        )
        return tail + (now - then)

    def _update(self, context: bpy.types.Context) -> None:
        for grab in self.grabs:
            grab.target = self._target(context, grab.tail)
            grab.result = ik_chain.solve(grab.chain, tuple(cast(Any, grab.target)))
            ik_chain.write_result(grab.chain, grab.result, near=grab.last)
            grab.chain = ik_chain.advanced(grab.chain, grab.result)
            grab.last = ik_chain.current_values(grab.last)
        self._header(context)
        context.view_layer.update()
        screen.show_changes()

    def _set_length(self, context: bpy.types.Context, length: int) -> None:
        """Solve ``length`` bones of each chain from now on: the bones left out go back to
        their start, the others keep their pose. A chain of that length in which nothing can
        turn keeps the length as it was (with a warning; the next solve poses the bones put
        back)."""
        if length == self.length:
            return
        chains = []
        for grab in self.grabs:
            bones = ik_chain.auto_ik_chain(grab.initial.pose_bones()[-1])[-length:]
            kept = {b.name for b in bones}
            dropped = [b for b in grab.initial.bones if b.name not in kept]
            ik_chain.restore(replace(grab.initial, bones=dropped))
            chains.append(bones)
        context.view_layer.update()
        try:
            read = [ik_chain.read_chain(bones) for bones in chains]
        except ValueError as error:
            self.report({'WARNING'}, f"Chain length stays {self.length}: {error}")
            return
        self.length = length
        for grab, chain in zip(self.grabs, read, strict=True):
            grab.chain = grab.last = chain

    def _header(self, context: bpy.types.Context) -> None:
        # (a reached chain shows no distance: the solver's last 1e-12 is not news)
        distances = [
            g.result.distance
            for g in self.grabs
            if g.result is not None and g.result.distance > ik_chain.REACHED * g.chain.length
        ]
        limits = [
            n
            for g in self.grabs
            if g.result is not None
            for n in ik_chain.at_limits(g.chain, g.result)
        ]
        text = f"Auto IK: chain length {self.length}"
        if distances:
            text += f"   distance to the mouse {max(distances):.4g}"
        if limits:
            text += f"   at {reports.name_list(limits)}"
        if context.area is not None:
            context.area.header_text_set(text)

    def _finish(self, context: bpy.types.Context, confirm: bool) -> set[Any]:
        if context.area is not None:
            context.area.header_text_set(None)
        scene = context.scene
        auto_key = confirm and scene is not None and scene.tool_settings.use_keyframe_insert_auto
        for grab in self.grabs:
            if not confirm:
                ik_chain.restore(grab.initial)
            elif auto_key:
                ik_chain.key(grab.chain)
        context.view_layer.update()
        screen.show_changes()
        if not confirm:
            return {'CANCELLED'}
        bones = sum(len(g.chain.bones) for g in self.grabs)
        self.report({'INFO'}, f"Moved by Auto IK: {reports.plural(bones, 'bone')}")
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_ik_grab,))
