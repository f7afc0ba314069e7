# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_ik_reach``: turn the active bone and its parents so that its tail reaches a point.

The chain (``chain_length`` bones counting the active one, as the IK constraint's
``chain_count``; 0 up to the root) is read by `rq_blender.ik_chain`, solved by the core's
limit-aware solver (`rq_rotation.solve_chain`: the closest reachable pose within the limits,
and among the poses that reach, the one that turns the joints least) and written back in each
bone's own mode. Bones driven by anything but the add-on stay as they are. The target is
``target`` (world space) or, when that property is not set, the 3D cursor. One undo step;
auto-keying keys the bones' rotation channels; the report gives the distance left and the
joint limits that stopped the chain.
"""

from __future__ import annotations

import math
from typing import Any, cast

import bpy
from bpy.props import FloatVectorProperty, IntProperty

from ..rq_blender import ik_chain, reports, transaction
from ..rq_blender.registration import register_classes_factory

# Blender stores the target as float32 and clamps an infinite value given from Python to the
# largest float32: that value stands for infinity here.
FLOAT32_MAX = 3.4028234663852886e38


class POSE_OT_rq_ik_reach(bpy.types.Operator):
    """Turn the active bone and its parents so that its tail reaches the target (the 3D
    cursor by default), within the joint limits, each bone in its own rotation mode"""

    bl_idname = "pose.rq_ik_reach"
    bl_label = "Reach with IK (RQ)"
    bl_options = {'REGISTER', 'UNDO'}

    target: FloatVectorProperty(  # type: ignore[valid-type]
        name="Target",
        size=3,
        subtype='XYZ',
        unit='LENGTH',
        description="World point for the active bone's tail (unset: the 3D cursor)",
    )
    chain_length: IntProperty(  # type: ignore[valid-type]
        name="Chain Length",
        default=0,
        min=0,
        soft_max=255,
        description="Bones that turn, counting the active one (0: up to the root)",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.mode != 'POSE' or context.active_pose_bone is None:
            cls.poll_message_set("Needs Pose mode and an active bone")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[Any]:
        pose_bone = context.active_pose_bone
        assert pose_bone is not None and context.scene is not None
        if self.properties.is_property_set("target"):
            target = tuple(float(x) for x in self.target)
        else:
            target = tuple(float(x) for x in cast(Any, context.scene.cursor.location))
        if not all(math.isfinite(x) and abs(x) < FLOAT32_MAX for x in target):
            return transaction.report_failure(
                self, ValueError(f"the target {target} is not a finite point")
            )
        context.view_layer.update()
        try:
            chain = ik_chain.read_chain(ik_chain.chain_of(pose_bone, self.chain_length))
            result = ik_chain.solve(chain, target)
        except ValueError as error:
            return transaction.report_failure(self, error)
        obj = cast(bpy.types.Object, pose_bone.id_data)
        auto_key = context.scene.tool_settings.use_keyframe_insert_auto
        try:
            with transaction.all_or_nothing([(obj, bone.name) for bone in chain.bones]):
                ik_chain.write_result(chain, result)
                if auto_key:
                    ik_chain.key(chain)
        except Exception as error:  # restored, reported, never raised
            return transaction.report_failure(self, error)
        context.view_layer.update()
        distance = ik_chain.tail_distance(chain, target)
        limits = ik_chain.at_limits(chain, result)
        stopping = ik_chain.stopped_by(chain, result)
        if distance <= ik_chain.REACHED * chain.length:
            headline = f"Reached the target with {reports.plural(len(chain.bones), 'bone')}"
            level = 'INFO'
        else:
            headline = f"Out of reach by {distance:.4g}"
            level = 'WARNING'
        details = [f"Chain: {reports.name_list([b.name for b in chain.bones], shown=8)}"]
        held = [b.name for b in chain.bones if b.held]
        if held:
            details.append(
                f"Held as they are (their rotation is driven): {reports.name_list(held)}"
            )
        if limits:
            details.append(f"At joint limits: {reports.name_list(limits, shown=8)}")
        if stopping and level == 'WARNING':  # their names, or their count if they are long
            named = f"; stopped by {reports.name_list(stopping, shown=1)}"
            if len(headline + named) > reports.STATUS_LENGTH:
                named = f"; stopped by {reports.plural(len(stopping), 'joint limit')}"
            headline += named
        reports.report(self, level, headline, details)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_ik_reach,))
