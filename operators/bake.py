# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_bake``: bake RQ and swing/twist animation to native quaternion or Euler keys.

For export (glTF, FBX, game engines), which know only Blender's native rotation channels. The
bake is the SAMPLED strategy of `rq_blender.conversion` with a native target: every frame of
each bone's keyed range (or of the Frame Range, ``frame_start`` to ``frame_end`` as
``nla.bake`` names them) is sampled (in every action that animates it, each in its own time),
converted with continuity (quaternions without sign flips, Euler angles nearest the previous
frame), and written as keys; with a tolerance, keys are then removed while the rotation error
stays within it at every frame. The bones leave the add-on's mode (drivers and parameter
properties removed), so the baked keys are what plays and exports.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from ..rq_blender import (
    animdata,
    bone_modes,
    collector,
    conversion,
    drivers,
    parameter_curves,
    progress,
    reports,
    transaction,
)
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.modes import ADDON_MODES, EULER_ORDERS, PARAMETERS

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems

TARGET_ITEMS = (
    ('QUATERNION', "Quaternion", "Quaternion keys (w, x, y, z), sign-continuous"),
    *(
        (order, f"{order} Euler", f"Euler keys in order {order}, each frame nearest the previous")
        for order in EULER_ORDERS
    ),
)
KEYS_ITEMS = (
    ('EVERY_FRAME', "Every Frame", "A key on every frame of the bones' keyed range"),
    (
        'REDUCED',
        "Reduced",
        "Remove keys while the rotation error stays within the tolerance at every frame",
    ),
)


def bake_bones(context: bpy.types.Context) -> list[tuple[bpy.types.Object, list[str]]]:
    """The bones to bake, per armature: the selected bones in an add-on mode (in the Graph
    Editor, the bones with a selected parameter channel)."""
    if parameter_curves.in_graph_editor(context):
        pairs = {
            (p.obj.name_full, p.bone_name): p.obj
            for p in parameter_curves.target_parameters(context, PARAMETERS)
        }
        candidates = [(obj, name) for (_, name), obj in pairs.items()]
    else:
        candidates = parameter_curves.selected_pose_bones(context)
    per_object: dict[str, tuple[bpy.types.Object, list[str]]] = {}
    for obj, name in candidates:
        if bone_modes.current_mode(parameter_curves.pose_bone(obj, name)) in ADDON_MODES:
            per_object.setdefault(obj.name_full, (obj, []))[1].append(name)
    return list(per_object.values())


def bake_message(target: str, bones: int, counts: list[int]) -> tuple[str, list[str]]:
    """``(headline, details)`` of a bake of ``bones`` bones to the `TARGET_ITEMS` label
    ``target``; ``counts`` holds the keys written on each channel of each animated bone, one
    entry per bone and action (`conversion.apply_plan`)."""
    baked = f"Baked {reports.plural(bones, 'bone')} to {target}"
    if not counts:
        return f"{baked}: no animation, current pose kept", []
    low, high = min(counts), max(counts)
    per_channel = f"{high}" if low == high else f"{low} to {high}"
    return f"{baked}: {per_channel} keys per channel", [
        f"{reports.plural(len(counts), 'animated bone track')} (a bone in one action); "
        f"{sum(counts)} keys per channel summed over them",
    ]


def _progress(update: Callable[[float], None], start: int, count: int, fraction: float) -> None:
    """Progress of ``count`` bones after ``start`` bones, ``fraction`` of them done."""
    update(start + fraction * count)


class POSE_OT_rq_bake(bpy.types.Operator):
    """Bake the selected RQ and swing/twist bones to native quaternion or Euler keys for
    export: every frame, or reduced within a rotation tolerance. The bones leave the add-on's
    mode and keep their motion"""

    bl_idname = "pose.rq_bake"
    bl_label = "Bake RQ Rotations"
    bl_options = {'REGISTER', 'UNDO'}

    target: EnumProperty(  # type: ignore[valid-type]
        name="Rotation",
        items=TARGET_ITEMS,
        default='QUATERNION',
        description="Native rotation mode of the baked keys",
    )
    keys: EnumProperty(  # type: ignore[valid-type]
        name="Keys",
        items=KEYS_ITEMS,
        default='EVERY_FRAME',
        description="Which keys to keep",
    )
    tolerance: FloatProperty(  # type: ignore[valid-type]
        name="Tolerance",
        description="Largest rotation error allowed at any frame when keys are reduced",
        default=0.00174533,  # 0.1 degree
        min=0.0,
        soft_max=0.0174533,
        subtype='ANGLE',
    )

    # (SKIP_SAVE: a range remembered from the last bake, seen only in the redo panel, cut the
    # next bake's bones to it)
    use_frame_range: BoolProperty(  # type: ignore[valid-type]
        name="Frame Range",
        default=False,
        description="Bake the frames from Start to End instead of each bone's keyed range",
        options={'SKIP_SAVE'},
    )
    frame_start: IntProperty(  # type: ignore[valid-type]
        min=-animdata.MAX_FRAME,
        max=animdata.MAX_FRAME,
        name="Start Frame",
        default=1,
        description="First frame to bake (with Frame Range)",
        options={'SKIP_SAVE'},
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        min=-animdata.MAX_FRAME,
        max=animdata.MAX_FRAME,
        name="End Frame",
        default=250,
        description="Last frame to bake (with Frame Range)",
        options={'SKIP_SAVE'},
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return parameter_curves.poll_pose_or_graph(cls, context)

    def draw(self, _context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "target")
        layout.prop(self, "keys")
        row = layout.row()
        row.active = self.keys == 'REDUCED'
        row.prop(self, "tolerance")
        layout.prop(self, "use_frame_range")
        column = layout.column(align=True)
        column.active = self.use_frame_range
        column.prop(self, "frame_start", text="Start")
        column.prop(self, "frame_end", text="End")

    @collector.while_paused  # no cyclic garbage collection mid-rig (`collector`)
    @drivers.with_lookups  # bones' drivers looked up through one index
    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        work = bake_bones(context)
        if not work:
            self.report({'WARNING'}, "Nothing baked: no selected bone is in RQ or Swing/Twist mode")
            return {'CANCELLED'}
        frames = (self.frame_start, self.frame_end) if self.use_frame_range else None
        try:
            plans = [
                (obj, conversion.plan_conversion(obj, names, self.target, "SAMPLED", frames))
                for obj, names in work
            ]
        except (ValueError, KeyError) as error:
            self.report({'ERROR'}, f"Nothing changed: {error}")
            return {'CANCELLED'}
        tolerance = self.tolerance if self.keys == 'REDUCED' else 0.0
        bones = sum(len(p) for _, p in plans)
        counts: list[int] = []
        done = 0
        touched = [(obj, plan.name) for obj, object_plans in plans for plan in object_plans]
        try:
            with transaction.all_or_nothing(touched), progress.progress(context, bones) as update:
                for obj, object_plans in plans:
                    scaled = partial(_progress, update, done, len(object_plans))
                    counts += conversion.apply_plan(obj, object_plans, tolerance, scaled)
                    done += len(object_plans)
        except Exception as error:
            return transaction.report_failure(self, error)
        headline, details = bake_message(reports.labels(TARGET_ITEMS)[self.target], bones, counts)
        all_plans = [plan for _, object_plans in plans for plan in object_plans]
        outside = [plan for plan in all_plans if plan.keys_outside]
        if outside:
            cut = (
                f"{reports.plural(len(outside), 'bone')} had keys outside frames "
                f"{self.frame_start}-{self.frame_end}, which now hold the range's end poses"
            )
            headline, details = reports.noted(headline, details, [cut], cut)
        blended = conversion.blending_notes(plans)
        headline, details = reports.noted(headline, details, blended, "blended actions")
        modified = conversion.modifier_notes(all_plans)
        headline, details = reports.noted(headline, details, modified, "F-curve modifiers keyed")
        level = 'WARNING' if outside or blended or modified else 'INFO'
        reports.report(self, level, headline, details)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_bake,))
