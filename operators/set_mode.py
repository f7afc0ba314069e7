# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_set_mode``: switch the selected pose bones' rotation mode, converting animation."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatProperty

from .. import preferences
from ..rq_blender import collector, compat, conversion, drivers, progress, reports, transaction
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.modes import MODES, RQ

# The modes as enum items, from the one table of modes.
MODE_ITEMS = tuple((m.name, m.label, m.description) for m in MODES.values())

STRATEGY_ITEMS = (
    ('KEYS', "Keep Key Times", "Keys at the original key times, exact there"),
    (
        'SAMPLED',
        "Sample and Reduce",
        "Sample every frame, then remove keys while the rotation error stays within the "
        "tolerance at every frame",
    ),
)


def _editable(obj: bpy.types.Object) -> bool:
    """Whether the object's pose and animation can be changed (local or overridden)."""
    if obj.library is not None and obj.override_library is None:
        return False
    anim = obj.animation_data
    if anim is None:
        return True
    actions = [anim.action] + [s.action for t in anim.nla_tracks for s in t.strips]
    return all(a is None or a.library is None or a.override_library for a in actions)


def set_mode_message(label: str, plans: list[conversion.BonePlan]) -> tuple[str, list[str]]:
    """``(headline, details)`` of switching the planned bones to the mode labelled ``label``
    (after `conversion.apply_plan`, which sets ``widened``)."""
    keyed = sum(1 for plan in plans if plan.tracks)
    headline = f"Switched {reports.plural(len(plans), 'bone')} to {label}"
    if keyed:
        headline += f" ({keyed} animated)"
    details = []
    widened = [plan.name for plan in plans if plan.widened]
    if widened:
        details.append(
            f"Widened the joint limits of {reports.name_list(widened)} to cover "
            f"{'its animation' if len(widened) == 1 else 'their animation'}"
        )
    limited = [plan for plan in plans if plan.limited_keys]
    if limited:
        moved = sum(plan.limited_keys for plan in limited)
        details.append(
            f"{reports.plural(moved, 'pose')} of "
            f"{reports.name_list([plan.name for plan in limited])} lie outside "
            "the joint limits: stored at the closest limit"
        )
        headline += f"; {reports.plural(moved, 'pose')} clamped"
    return headline, details


class POSE_OT_rq_set_mode(bpy.types.Operator):
    """Switch the selected bones' rotation mode, converting their animation without moving
    them"""

    bl_idname = "pose.rq_set_mode"
    bl_label = "Set Rotation Mode (RQ)"
    bl_options = {'REGISTER', 'UNDO'}

    mode: EnumProperty(  # type: ignore[valid-type]
        name="Mode", items=MODE_ITEMS, default=RQ, description="Rotation mode to switch to"
    )
    # (SKIP_SAVE: the mode menu reran a strategy remembered from the redo panel, which the
    # Info editor's line, leaving it out, could not replay)
    strategy: EnumProperty(  # type: ignore[valid-type]
        name="Keys",
        items=STRATEGY_ITEMS,
        default='KEYS',
        description="How to convert animation",
        options={'SKIP_SAVE'},
    )
    tolerance: FloatProperty(  # type: ignore[valid-type]
        name="Tolerance",
        description=(
            "Largest rotation error allowed at any frame when removing sampled keys "
            "(0 keeps every frame)"
        ),
        default=0.0,
        min=0.0,
        soft_max=0.0174533,
        subtype='ANGLE',
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        obj = context.active_object
        if obj is None or obj.type != 'ARMATURE':
            cls.poll_message_set("Needs an active armature")
            return False
        if context.mode != 'POSE':
            cls.poll_message_set("Needs Pose mode")
            return False
        if not _editable(obj):
            cls.poll_message_set("The armature or its animation is linked and cannot be edited")
            return False
        if not any(compat.pose_bone_selected(pb) for pb in obj.pose.bones):
            cls.poll_message_set("Select the pose bones to switch")
            return False
        return True

    def draw(self, _context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "mode")
        layout.prop(self, "strategy")
        row = layout.row()
        row.active = self.strategy == 'SAMPLED'  # (Keep Key Times reduces nothing)
        row.prop(self, "tolerance")

    def invoke(self, context: bpy.types.Context, event: bpy.types.Event) -> set[str]:
        if not self.properties.is_property_set("tolerance"):
            self.tolerance = preferences.preferences(context).conversion_tolerance
        return self.execute(context)

    @collector.while_paused  # no cyclic garbage collection mid-rig (`collector`)
    @drivers.with_lookups  # bones' drivers looked up through one index
    def execute(self, context: bpy.types.Context) -> set[str]:
        obj = context.active_object
        if obj is None:  # poll guarantees an active armature
            return {'CANCELLED'}
        names = [pb.name for pb in obj.pose.bones if compat.pose_bone_selected(pb)]
        try:
            plans = conversion.plan_conversion(obj, names, self.mode, self.strategy)
        except (ValueError, KeyError) as error:
            self.report({'ERROR'}, f"Nothing changed: {error}")
            return {'CANCELLED'}
        label = MODES[self.mode].label
        if not plans:  # done, nothing to change (see `operators`)
            self.report({'INFO'}, f"No bone changed: the selected bones are already {label}")
            return {'FINISHED'}
        try:
            with (
                transaction.all_or_nothing((obj, plan.name) for plan in plans),
                progress.progress(context, 1.0) as update,
            ):
                conversion.apply_plan(obj, plans, self.tolerance, update)
        except Exception as error:
            return transaction.report_failure(self, error)
        headline, details = set_mode_message(label, plans)
        gaps = conversion.key_gap_notes(plans)
        headline, details = reports.noted(headline, details, gaps, "in-betweens may change")
        blended = conversion.blending_notes([(obj, plans)])
        headline, details = reports.noted(headline, details, blended, "blended actions")
        modified = conversion.modifier_notes(plans)
        headline, details = reports.noted(headline, details, modified, "F-curve modifiers keyed")
        limited = any(plan.limited_keys for plan in plans)
        level = 'WARNING' if limited or blended or modified else 'INFO'
        reports.report(self, level, headline, details)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_set_mode,))
