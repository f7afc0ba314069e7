# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_compare_interpolation``: how the RQ spline differs from slerp, squad and Blender's
own per-component quaternion interpolation over the active bone's keys
(`rq_rotation.compare_interpolations`), as numbers and as an angular-speed plot."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import bpy
from bpy.props import IntProperty

from .. import rq_rotation as rq
from ..rq_blender import animdata, comparison_image, parameter_curves
from ..rq_blender.registration import register_classes_factory

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems

IMAGE_NAME = "RQ Interpolation Comparison"


class POSE_OT_rq_compare_interpolation(bpy.types.Operator):
    """Compare the RQ spline with slerp, squad and Blender's quaternion interpolation over the
    active bone's RQ keys: largest angle to the RQ spline and the angular-speed profiles, in the
    report and as an image (open it in the Image Editor)"""

    bl_idname = "pose.rq_compare_interpolation"
    bl_label = "Compare RQ Interpolation"
    bl_options = {'REGISTER', 'UNDO'}

    samples: IntProperty(  # type: ignore[valid-type]
        name="Samples", description="Sample times over the keyed range", default=400,
        min=16, max=100000,
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not parameter_curves.poll_pose_or_graph(cls, context):
            return False
        if context.active_pose_bone is None:
            cls.poll_message_set("No active bone")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        pose_bone = context.active_pose_bone
        obj = context.object
        if pose_bone is None or obj is None:
            return {'CANCELLED'}
        curves = next(
            (
                found for use in animdata.actions_of(obj)
                if (found := parameter_curves.read_parameter(obj, use, pose_bone.name, "rq_vector"))
            ),
            None,
        )
        times = None if curves is None else curves.key_times()
        if curves is None or times is None or len(times) < 2:
            self.report({'WARNING'}, f"{pose_bone.name} needs RQ keys at 2 or more frames")
            return {'CANCELLED'}
        result = rq.compare_interpolations(
            times, rq.rq_to_quat(curves.values(times)), self.samples
        )
        names = list(result["angular_speed"])
        pixels = comparison_image.plot_lines(result["t"], result["angular_speed"])
        image = comparison_image.store(IMAGE_NAME, pixels)
        for area in context.screen.areas if context.screen is not None else ():
            if area.type == 'IMAGE_EDITOR':
                area.spaces.active.image = image  # type: ignore[union-attr]
        differences = ", ".join(
            f"{name} {math.degrees(angle):.3g}"
            for name, angle in result["max_angle_to_rq"].items() if name != "rq_catmull_rom"
        )
        peaks = ", ".join(
            f"{name} {float(speed.max()):.3g}" for name, speed in result["angular_speed"].items()
        )
        self.report(
            {'INFO'},
            f"{pose_bone.name}: largest angle to the RQ spline (degrees): {differences}; "
            f"peak angular speed (rad/frame): {peaks}; plot in image '{image.name}' "
            f"({comparison_image.legend(names)})",
        )
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_compare_interpolation,))
