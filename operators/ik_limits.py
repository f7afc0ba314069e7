# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_copy_limits_to_ik``: copy the selected swing/twist bones' joint limits onto
Blender's own IK limits (``ik_min_x`` ... and ``use_ik_limit_x/y/z``), so a native IK
constraint respects about the same joint. How close the two are is `rq_blender.native_ik`'s
docstring; the report gives each bone's largest boundary difference in degrees and what
could not be copied exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import bpy

from ..rq_blender import bone_modes, native_ik, parameter_curves, reports, transaction
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.modes import SWING_TWIST

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems


class POSE_OT_rq_copy_limits_to_ik(bpy.types.Operator):
    """Copy the selected swing/twist bones' swing ellipse and twist range onto Blender's IK
    limits, so a native IK constraint respects about the same joint"""

    bl_idname = "pose.rq_copy_limits_to_ik"
    bl_label = "Copy Joint Limits to IK"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return parameter_curves.poll_pose(cls, context)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        bones = [
            obj.pose.bones[name]
            for obj, name in parameter_curves.selected_pose_bones(context)
            if bone_modes.current_mode(obj.pose.bones[name]) == SWING_TWIST
        ]
        if not bones:
            self.report({'WARNING'}, "Nothing copied: no selected bone is in Swing/Twist mode")
            return {'CANCELLED'}
        details = []
        plans = []
        worst = 0.0
        noted = False
        try:
            for pose_bone in bones:
                bone_modes.check_values(pose_bone)
                values, notes = native_ik.ik_limits(*bone_modes.joint_limits(pose_bone))
                plans.append((pose_bone, values))
                degrees, where = native_ik.boundary_difference(
                    values["ik_max_x"], values["ik_max_z"]
                )
                worst = max(worst, abs(degrees))
                details.append(
                    f"{pose_bone.name}: the IK's swing boundary differs from the ellipse by up "
                    f"to {abs(degrees):.2f}° ({where:.0f}° from X towards Z; equal on the axes)"
                )
                details.extend(f"{pose_bone.name}: {note}" for note in notes)
                noted = noted or bool(notes)
        except ValueError as error:
            return transaction.report_failure(self, error)
        before = [(pose_bone, native_ik.ik_state(pose_bone)) for pose_bone, _ in plans]
        try:
            for pose_bone, values in plans:
                native_ik.copy_to_ik(pose_bone, values)
        except Exception as error:
            for pose_bone, state in before:
                for name, value in state.items():
                    setattr(pose_bone, name, value)
            return transaction.report_failure(self, error)
        headline = (
            f"Copied joint limits to IK: {reports.plural(len(plans), 'bone')}, "
            f"boundaries within {worst:.2f}°"
        )
        if noted:
            headline += "; some not exact"
        itasc = sorted({p.id_data.name for p, _ in plans if p.id_data.pose.ik_solver == 'ITASC'})
        if itasc:
            headline += "; iTaSC does not keep to them"
            noted = True
            details.extend(
                f"{name} uses the iTaSC IK solver, which does not keep to these limits as the "
                "Standard solver does (measured: with a 60° x 20° ellipse the swing reached 60° "
                "about Z): set Armature > Inverse Kinematics > IK Solver to Standard"
                for name in itasc
            )
        reports.report(self, 'WARNING' if noted else 'INFO', headline, details)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_copy_limits_to_ik,))
