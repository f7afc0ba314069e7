# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_bake_visual``: key what constraints show (IK, Copy Rotation, Damped Track, Child
Of) into the selected RQ and swing/twist bones' own channels: baking a constrained motion
into FK, or snapping FK to IK at the current frame.

The Blender side is `rq_blender.visual_bake`: every frame of the range is evaluated, the
bones' visual local rotations converted into their modes with continuity and within their
joint limits, and written as keys (one undo step; on failure nothing changes). The report
says where the constrained pose left a bone's limits (the keys hold the closest pose within
them) and where constraints add location or scale, which the rotation keys do not capture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import BoolProperty, IntProperty

from ..rq_blender import (
    animdata,
    collector,
    parameter_curves,
    progress,
    reports,
    transaction,
    visual_bake,
)
from ..rq_blender.registration import register_classes_factory

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems

# Runs of frames named in a report detail before "and N more".
SHOWN_RUNS = 4


def frame_runs(frames: np.ndarray, amounts: np.ndarray, unit: str) -> str:
    """``"5-9 (up to 12.3°), 14 (2.1°)"``: the frames where ``amounts`` (F,) is positive, as
    runs of consecutive entries of ``frames`` (F,), each with its largest amount."""
    hit = np.flatnonzero(amounts > 0)
    runs = np.split(hit, np.flatnonzero(np.diff(hit) > 1) + 1) if len(hit) else []
    parts = []
    for run in runs[:SHOWN_RUNS]:
        first, last = frames[run[0]], frames[run[-1]]
        peak = amounts[run].max()
        if len(run) == 1:
            parts.append(f"{first:g} ({peak:.3g}{unit})")
        else:
            parts.append(f"{first:g}-{last:g} (up to {peak:.3g}{unit})")
    if len(runs) > SHOWN_RUNS:
        parts.append(f"and {len(runs) - SHOWN_RUNS} more")
    return ", ".join(parts)


def bake_visual_message(
    plans: Sequence[visual_bake.BonePlan],
    frames: np.ndarray,
    muted: int,
    freed: Sequence[str],
) -> tuple[str, str, list[str]]:
    """``(level, headline, details)`` of a visual bake of ``plans`` at ``frames`` (F,) that
    muted ``muted`` constraints (``freed``: unbaked bones a muted IK constraint turned). The
    headline names the kinds of problem (limits, location, scale, IK) the details spell out,
    within `reports.STATUS_LENGTH` for up to 99 bones and 9999 frames."""
    bones = reports.plural(len(plans), "bone")
    when = f"frame {frames[0]:g}" if len(frames) == 1 else reports.plural(len(frames), "frame")
    details = []
    kinds: dict[str, None] = {}
    for plan in plans:
        name = plan.bone.name
        broken = np.where(plan.broken > visual_bake.BROKEN_TOLERANCE, plan.broken, 0.0)
        if broken.any():
            kinds["limits"] = None
            details.append(
                f"{name}: the constrained pose left its joint limits at frames "
                f"{frame_runs(frames, broken, '°')}; the keys hold the closest pose "
                "within them"
            )
        for what, added in (("location", plan.location_added), ("scale", plan.scale_added)):
            amounts = np.where(added > visual_bake.ADDED_TOLERANCE, added, 0.0)
            if amounts.any():
                kinds[what] = None
                details.append(
                    f"{name}: the {what} that constraints add is not captured (only rotation "
                    f"is keyed) at frames {frame_runs(frames, amounts, '')}"
                )
        if plan.widened:
            details.append(f"{name}: joint limits widened to cover the keys (they were open)")
    if muted:
        details.append(f"Muted {reports.plural(muted, 'constraint')} posing the baked bones")
    if freed:
        kinds["IK"] = None
        details.append(
            f"Muting IK also frees {reports.name_list(freed)}, not baked: their pose changes"
        )
    if kinds:
        return 'WARNING', f"Visual bake: {bones}, {when}; check {', '.join(kinds)}", details
    return 'INFO', f"Baked visual rotation: {bones}, {when}", details


class POSE_OT_rq_bake_visual(bpy.types.Operator):
    """Key the rotation that constraints give the selected RQ and swing/twist bones into
    their own channels (visual keying), with continuity and within their joint limits"""

    bl_idname = "pose.rq_bake_visual"
    bl_label = "Bake Visual Rotation (RQ)"
    bl_options = {'REGISTER', 'UNDO'}

    frame_start: IntProperty(  # type: ignore[valid-type]
        min=-animdata.MAX_FRAME,
        max=animdata.MAX_FRAME,
        name="Start Frame",
        description="First frame to bake (default: the scene's start)",
        options={'SKIP_SAVE'},
    )
    frame_end: IntProperty(  # type: ignore[valid-type]
        min=-animdata.MAX_FRAME,
        max=animdata.MAX_FRAME,
        name="End Frame",
        description="Last frame to bake (default: the scene's end)",
        options={'SKIP_SAVE'},
    )
    current_frame_only: BoolProperty(  # type: ignore[valid-type]
        name="Current Frame Only",
        default=False,
        description="Key the current frame only (snap the bones to what the constraints show)",
    )
    mute_constraints: BoolProperty(  # type: ignore[valid-type]
        name="Mute Constraints",
        default=False,
        description="Mute the baked bones' constraints afterwards, so the keys alone pose them "
        "(unmute to get the constraints back)",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return parameter_curves.poll_pose(cls, context)

    def draw(self, _context: bpy.types.Context) -> None:
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "current_frame_only")
        column = layout.column(align=True)
        column.active = not self.current_frame_only
        column.prop(self, "frame_start", text="Start")
        column.prop(self, "frame_end", text="End")
        layout.prop(self, "mute_constraints")

    @collector.while_paused  # no cyclic garbage collection mid-rig (`collector`)
    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        scene = context.scene
        assert scene is not None  # poll: an object in Pose mode
        for name in ("frame_start", "frame_end"):
            if not self.properties.is_property_set(name):
                setattr(self, name, getattr(scene, name))
        bones = visual_bake.selected_bones(context)
        if not bones:
            self.report({'WARNING'}, "Nothing baked: no selected bone is in RQ or Swing/Twist mode")
            return {'CANCELLED'}
        if self.current_frame_only:
            span = (scene.frame_current_final, scene.frame_current_final)
        else:
            span = (self.frame_start, self.frame_end)
        was = scene.frame_current, scene.frame_subframe
        try:
            visual_bake.check_bake(bones, span)
            frames = np.arange(span[0], span[1] + 1.0, dtype=np.float64)
            with progress.progress(context, len(frames) + len(bones)) as update:
                sampled = visual_bake.sample(scene, bones, frames, update)
                plans = visual_bake.plan_bake(bones, sampled)
                with (
                    transaction.all_or_nothing((bone.obj, bone.name) for bone in bones),
                    visual_bake.constraints_muted_on_failure(bones),
                ):
                    visual_bake.write_plans(plans, frames, lambda i: update(len(frames) + i))
                    muted, freed = (
                        visual_bake.mute_constraints(bones) if self.mute_constraints else (0, [])
                    )
        except Exception as error:
            return transaction.report_failure(self, error)
        finally:
            scene.frame_set(was[0], subframe=was[1])
        level, headline, details = bake_visual_message(plans, frames, muted, freed)
        reports.report(self, level, headline, details)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_bake_visual,))
