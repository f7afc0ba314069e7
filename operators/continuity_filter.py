# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_continuity_filter``: remove 2*pi jumps between consecutive RQ keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

import bpy

from ..rq_blender import (
    bone_modes,
    collector,
    key_continuity,
    parameter_curves,
    progress,
    reports,
    transaction,
)
from ..rq_blender.registration import register_classes_factory

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems


class POSE_OT_rq_continuity_filter(bpy.types.Operator):
    """Replace each RQ key by the equivalent rotation vector (same pose) closest to the
    previous key, removing jumps across the 2*pi shells. Assumes consecutive keys are less
    than half a turn apart: leave channels that spin further on purpose unselected. The held
    jumps RQ Spline Interpolation writes near the shells are kept"""

    bl_idname = "pose.rq_continuity_filter"
    bl_label = "RQ Continuity Filter"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return parameter_curves.poll_pose_or_graph(cls, context)

    @collector.while_paused  # no cyclic garbage collection mid-rig (`collector`)
    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        targets = parameter_curves.target_parameters(context, key_continuity.FILTERED_PARAMETERS)
        if not targets:
            self.report(
                {'WARNING'},
                "Nothing filtered: no selected RQ or twist channel has keys",
            )
            return {'CANCELLED'}
        changed = 0
        changed_bones: set[tuple[str, str]] = set()
        try:
            for c in targets:
                bone_modes.check_values(parameter_curves.pose_bone(c.obj, c.bone_name))
            parameter_curves.check_editable(targets)
            writes = [
                key_continuity.filter_writes(curves, values)
                for curves, values in zip(
                    targets, key_continuity.filtered_values(targets), strict=True
                )
            ]
            # Shifted values only (the usual case): a journal of the shifted points, else a
            # copy of the actions (`transaction`).
            record = (
                transaction.shifted_keys()
                if key_continuity.shifts_restorably(writes)
                else transaction.all_or_nothing(
                    ((c.obj, c.bone_name) for c in targets), keys_only=True
                )
            )
            with record as journal, progress.progress(context, len(targets)) as update:
                keep = None if journal is None else journal.keep
                for done, (curves, planned) in enumerate(zip(targets, writes, strict=True)):
                    count = key_continuity.apply_filter(curves, planned, keep)
                    if count:
                        changed += count
                        changed_bones.add((curves.obj.name_full, curves.bone_name))
                    update(done + 1)
        except Exception as error:
            return transaction.report_failure(self, error)
        if changed:
            bones = len(changed_bones)
            self.report(
                {'INFO'},
                f"Continuity filter changed {reports.plural(changed, 'key')} on "
                f"{reports.plural(bones, 'bone')}",
            )
        else:
            self.report({'INFO'}, "No key changed: every key is already nearest the one before it")
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_continuity_filter,))
