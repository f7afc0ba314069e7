# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_compare_interpolation``: how the RQ spline differs from slerp, squad and Blender's
own per-component quaternion interpolation over the active bone's keys
(`rq_rotation.compare_interpolations`), as numbers and as an angular-speed plot."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import IntProperty

from .. import rq_rotation as rq
from ..rq_blender import animdata, bone_modes, comparison_image, parameter_curves, reports
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.keyframes.continuity import held_jumps
from ..rq_rotation.modes import RQ, RQ_VECTOR, mode_label
from . import spline_interpolate

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems

IMAGE_NAME = "RQ Interpolation Comparison"
# The curves of `rq_rotation.compare_interpolations`, as the report and the image's legend
# name them (the RQ spline by the Spline Interpolation operator's label for its kind).
CURVE_LABELS = {
    "rq_catmull_rom": f"RQ {reports.labels(spline_interpolate.KIND_ITEMS)['CATMULL_ROM']}",
    "slerp": "Slerp",
    "squad": "Squad",
    "quat_linear": "Quaternion Linear",
    "quat_bezier": "Quaternion Bezier",
}
REFERENCE = "rq_catmull_rom"


def compare_message(bone: str, result: dict, keys: int, jumps: int) -> tuple[str, list[str]]:
    """``(headline, details)`` of a comparison (`rq_rotation.compare_interpolations`'s
    ``result``) over ``keys`` keys of ``bone``, ``jumps`` held jumps' second keys left out."""
    angles = {
        CURVE_LABELS[k]: math.degrees(a)
        for k, a in result["max_angle_to_rq"].items()
        if k != REFERENCE
    }
    speeds = {
        CURVE_LABELS[k]: math.degrees(float(s.max())) for k, s in result["angular_speed"].items()
    }
    worst = max(angles, key=lambda name: angles[name])
    reference = CURVE_LABELS[REFERENCE]
    used = f"Over {reports.plural(keys, 'key')} of {bone}"
    if jumps:
        # (the same rotation in another chart: as a key of its own it would be a segment
        # of no length, on which squad's tangents spike)
        used += (
            f", leaving out the second key of {reports.plural(jumps, 'held jump')} "
            "(a change of chart that Spline Interpolation writes)"
        )
    return f"{bone}: up to {angles[worst]:.1f}° from the RQ spline ({worst})", [
        used,
        f"Largest angle to {reference}: "
        + ", ".join(f"{name} {angle:.2f}°" for name, angle in angles.items()),
        "Peak angular speed (°/frame): "
        + ", ".join(f"{name} {speed:.3g}" for name, speed in speeds.items()),
        f"Angular speeds plotted in the image \"{IMAGE_NAME}\" (Image Editor)",
    ]


class POSE_OT_rq_compare_interpolation(bpy.types.Operator):
    """Compare the RQ spline with slerp, squad and Blender's quaternion interpolation over the
    active bone's RQ keys: largest angle to the RQ spline and the angular-speed profiles, in the
    report and as an image (open it in the Image Editor)"""

    bl_idname = "pose.rq_compare_interpolation"
    bl_label = "Compare RQ Interpolation"
    bl_options = {'REGISTER', 'UNDO'}

    samples: IntProperty(  # type: ignore[valid-type]
        name="Samples",
        description="Sample times over the keyed range",
        default=400,
        min=16,
        max=100000,
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not parameter_curves.poll_pose_or_graph(cls, context):
            return False
        if context.active_pose_bone is None:
            cls.poll_message_set("No active bone")
            return False
        mode = bone_modes.current_mode(context.active_pose_bone)
        if mode != RQ:
            cls.poll_message_set(
                f"The active bone is in {mode_label(mode)}: compare works on RQ keys"
            )
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        pose_bone = context.active_pose_bone
        obj = context.object
        if pose_bone is None or obj is None:
            return {'CANCELLED'}
        curves = next(
            (
                found
                for use in animdata.actions_of(obj)
                if (
                    found := parameter_curves.read_parameter(
                        obj, use, pose_bone.name, RQ_VECTOR.name
                    )
                )
            ),
            None,
        )
        times = None if curves is None else curves.key_times()
        if curves is None or times is None or len(times) < 2:
            self.report({'WARNING'}, f"{pose_bone.name} needs RQ keys at 2 or more frames")
            return {'CANCELLED'}
        keys = [None if c is None else c.keys for c in curves.channels]
        kept = times[~held_jumps([keys], [times])]
        if len(kept) < 2:
            self.report({'WARNING'}, f"{pose_bone.name} needs RQ keys at 2 or more frames")
            return {'CANCELLED'}
        result = rq.compare_interpolations(kept, rq.rq_to_quat(curves.values(kept)), self.samples)
        speeds = {CURVE_LABELS[k]: np.degrees(v) for k, v in result["angular_speed"].items()}
        pixels = comparison_image.plot_lines(
            result["t"], speeds, x_label="Frame", y_label="Angular speed (°/frame)"
        )
        image = comparison_image.store(IMAGE_NAME, pixels)
        for area in context.screen.areas if context.screen is not None else ():
            if area.type == 'IMAGE_EDITOR':
                area.spaces.active.image = image  # type: ignore[union-attr]
        headline, details = compare_message(
            pose_bone.name, result, len(kept), len(times) - len(kept)
        )
        reports.report(self, 'INFO', headline, details)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_compare_interpolation,))
