# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_ik_reach``: move the active bone's tail to a target by turning it and its parents
(the core's limit-aware IK, `rq_rotation.solve_chain`), each bone in its own mode.

The chain is read and written by `rq_blender.ik_chain`. The target is a world-space point, the
3D cursor when the property is not set. RQ and swing/twist bones stay within their limits,
native bones within their rotation locks; bones whose rotation something else drives are held.
One undo step; keys when auto-keying is on; the report gives the distance left and the limits
that stopped the chain.
"""

from __future__ import annotations

import math
from typing import Any, cast

import bpy
from bpy.props import FloatVectorProperty, IntProperty

from ..rq_blender import ik_chain, reports, transaction
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation import IKResult, solve_chain

# The largest single-precision float: what Blender stores for an infinite float property.
FLT_MAX = 3.4028234663852886e38

# Reached: the tail within this fraction of the chain's length of the target.
REACHED = 1e-4

LIMIT_LABELS = {"swing": "swing limit", "twist_min": "twist minimum", "twist_max": "twist maximum"}


class POSE_OT_rq_ik_reach(bpy.types.Operator):
    """Move the active bone's tail to the target (the 3D cursor by default) by turning the
    bone and its parents, each within its limits and locks"""

    bl_idname = "pose.rq_ik_reach"
    bl_label = "IK Reach (RQ)"
    bl_options = {'REGISTER', 'UNDO'}

    target: FloatVectorProperty(  # type: ignore[valid-type]
        name="Target",
        size=3,
        subtype='TRANSLATION',
        description="World-space point for the active bone's tail (default: the 3D cursor)",
    )
    chain_length: IntProperty(  # type: ignore[valid-type]
        name="Chain Length",
        default=0,
        min=0,
        description="Bones to turn, the active one included (0: up to the root), as the IK "
        "constraint's Chain Length",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.mode != 'POSE':
            cls.poll_message_set("Needs Pose mode")
            return False
        if context.active_pose_bone is None:
            cls.poll_message_set("Needs an active bone")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[Any]:
        active = cast(bpy.types.PoseBone, context.active_pose_bone)
        obj = cast(bpy.types.Object, active.id_data)
        if self.properties.is_property_set("target"):
            target = tuple(self.target)
        else:
            cursor = cast(bpy.types.Scene, context.scene).cursor.location
            target = (cursor.x, cursor.y, cursor.z)
        # Blender stores an infinite float property as FLT_MAX: refuse that as infinite too
        if not all(math.isfinite(x) and abs(x) < FLT_MAX for x in target):
            self.report({'ERROR'}, "Nothing changed: the target is not a finite point")
            return {'CANCELLED'}
        bones = ik_chain.chain_bones(active, self.chain_length)
        try:
            chain = ik_chain.read_chain(obj, bones)
            result = solve_chain(chain.joints, chain.tip, target)
        except ValueError as error:  # bad values, an unmodelled chain, everything locked
            self.report({'ERROR'}, f"Nothing changed: {error}")
            return {'CANCELLED'}
        scene = context.scene
        key = scene is not None and scene.tool_settings.use_keyframe_insert_auto
        try:
            with transaction.all_or_nothing([(obj, name) for name in chain.bone_names]):
                written = ik_chain.write_result(obj, chain, result, key)
        except Exception as error:  # restored, reported, never raised
            return transaction.report_failure(self, error)
        self._report(chain, result, written)
        return {'FINISHED'}

    def _report(self, chain: ik_chain.Chain, result: IKResult, written: list[str]) -> None:
        stopped = [
            f"{name}: {', '.join(LIMIT_LABELS[limit] for limit in limits)}"
            for name, limits in zip(chain.bone_names, result.active, strict=True)
            if limits
        ]
        details = [f"Limits reached: {'; '.join(stopped)}"] if stopped else []
        if chain.held:
            details.append(f"Held (driven): {reports.name_list(chain.held)}")
        turned = reports.plural(len(written), "bone")
        if result.distance <= REACHED * chain.length:
            reports.report(self, 'INFO', f"Reached the target, turned {turned}", details)
            return
        details.append(f"Turned {turned}")
        names = [
            name for name, limits in zip(chain.bone_names, result.active, strict=True) if limits
        ]
        headline = f"{result.distance:.4g} short of the target"
        if names:
            headline += f": limits of {reports.name_list(names)}"
        reports.report(self, 'WARNING', headline, details)


classes = (POSE_OT_rq_ik_reach,)
register, unregister = register_classes_factory(classes)
