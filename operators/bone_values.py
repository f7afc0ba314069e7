# SPDX-License-Identifier: GPL-3.0-or-later
"""Repair a bone's stored values from the panel: reset a property no tool can use (NaN, inf,
a wrong length) to its default, and make limits read at face value (negative semi-axes to 0,
an inverted twist range swapped). Both are one undo step and report what they did."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import bpy
from bpy.props import StringProperty

from ..rq_blender import bone_modes, transaction
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.modes import SWING_TWIST

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems


def _pose_bone(context: bpy.types.Context, name: str) -> bpy.types.PoseBone | None:
    """The active armature's pose bone ``name``, or the active pose bone when empty."""
    if not name:
        return context.active_pose_bone
    obj = context.active_object
    if obj is None or obj.pose is None:
        return None
    return obj.pose.bones.get(name)


class POSE_OT_rq_reset_property(bpy.types.Operator):
    """Reset this RQ Rotations property of the bone to its default (zero rotation, or the
    limits that restrict nothing)"""

    bl_idname = "pose.rq_reset_property"
    bl_label = "Reset RQ Property"
    bl_options = {'REGISTER', 'UNDO'}

    name: StringProperty(name="Property", description="The ID property to reset")  # type: ignore[valid-type]
    bone: StringProperty(  # type: ignore[valid-type]
        name="Bone", description="The pose bone (empty: the active one)"
    )

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        pose_bone = _pose_bone(context, self.bone)
        if pose_bone is None:
            return transaction.report_failure(self, ValueError(f"no pose bone {self.bone!r}"))
        try:
            with transaction.all_or_nothing(
                [(cast(bpy.types.Object, pose_bone.id_data), pose_bone.name)]
            ):
                bone_modes.reset_property(pose_bone, self.name)
        except Exception as error:
            return transaction.report_failure(self, error)
        self.report({'INFO'}, f"Reset {self.name} of {pose_bone.name} to its default")
        return {'FINISHED'}


class POSE_OT_rq_fix_limits(bpy.types.Operator):
    """Make the bone's joint limits mean what they show: negative swing semi-axes become 0 and
    an inverted twist range is swapped"""

    bl_idname = "pose.rq_fix_limits"
    bl_label = "Fix Joint Limits"
    bl_options = {'REGISTER', 'UNDO'}

    bone: StringProperty(  # type: ignore[valid-type]
        name="Bone", description="The pose bone (empty: the active one)"
    )

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        pose_bone = _pose_bone(context, self.bone)
        if pose_bone is None:
            return transaction.report_failure(self, ValueError(f"no pose bone {self.bone!r}"))
        try:
            with transaction.all_or_nothing(
                [(cast(bpy.types.Object, pose_bone.id_data), pose_bone.name)]
            ):
                bone_modes.check_values(pose_bone, SWING_TWIST)
                changes = bone_modes.fix_limits(pose_bone)
        except Exception as error:
            return transaction.report_failure(self, error)
        if not changes:
            self.report({'INFO'}, f"The limits of {pose_bone.name} need no fix")
            return {'CANCELLED'}
        self.report({'INFO'}, f"{pose_bone.name}: {'; '.join(changes)}")
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_reset_property, POSE_OT_rq_fix_limits))
