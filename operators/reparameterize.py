# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_reparameterize``: the paper's dynamic reparameterization (section 3.2.2) on the
current pose: a rotation vector longer than the threshold becomes the equivalent one of
smallest length, ``v - 2 pi n v/|v|`` with ``n = round(|v| / 2 pi)`` (`rq_rotation.reparameterize`).

It acts on unanimated parameters only: on an F-curve, changing one key would add spins to the
segments on both sides of it; the continuity filter and the spline operator are the tools there.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import bpy
import numpy as np
from bpy.props import FloatProperty

from .. import rq_rotation as rq
from ..rq_blender import animdata, bone_modes, collector, parameter_curves, reports, transaction
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation import swing_of, swing_vector
from ..rq_rotation.modes import RQ_VECTOR, SWING

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems


def _is_animated(obj: bpy.types.Object, bone_name: str, name: str) -> bool:
    """Whether any action animating ``obj`` has keys on the parameter."""
    return any(
        parameter_curves.read_parameter(obj, use, bone_name, name) is not None
        for use in animdata.actions_of(obj)
    )


def _as_vector(name: str, value: np.ndarray) -> np.ndarray:
    return value if name == RQ_VECTOR.name else swing_vector(value)


def _from_vector(name: str, vector: np.ndarray) -> list[float]:
    return [float(x) for x in (vector if name == RQ_VECTOR.name else swing_of(vector))]


def reparameterize_message(
    changed: int, animated: list[str], outside_limits: list[str], threshold: float
) -> tuple[str, list[str]]:
    """``(headline, details)``: ``changed`` vectors were shortened; the bones in ``animated``
    (keyed) and ``outside_limits`` (swing beyond its ellipse) were longer than ``threshold``
    (radians) and left alone."""
    details = []
    if animated:
        details.append(
            f"Left {reports.name_list(animated, 20)} unchanged: keyed (use RQ Continuity Filter "
            "or RQ Spline Interpolation on keys)"
        )
    if outside_limits:
        details.append(
            f"Left {reports.name_list(outside_limits, 20)} unchanged: swing beyond the joint limits"
        )
    skipped = len(set(animated + outside_limits))
    if changed:
        headline = f"Reparameterized {reports.plural(changed, 'bone')}"
        return headline + (f", skipped {skipped} (see Info)" if skipped else ""), details
    # One bone by name, more by count: the headline stays short.
    reasons = [
        f"{names[0] if len(set(names)) == 1 else reports.plural(len(set(names)), 'bone')} {why}"
        for names, why in ((animated, "keyed"), (outside_limits, "beyond limits"))
        if names
    ]
    if reasons:
        return f"No bone changed: {'; '.join(reasons)}", details
    return (
        f"No bone changed: every vector is already within {math.degrees(threshold):.0f}°",
        details,
    )


class POSE_OT_rq_reparameterize(bpy.types.Operator):
    """Replace the selected bones' rotation vectors longer than the threshold by the
    equivalent vector of smallest length (same pose, away from the 2*pi singular shell).
    Unanimated channels only: on keyed channels use the continuity filter or the spline
    operator"""

    bl_idname = "pose.rq_reparameterize"
    bl_label = "Reparameterize RQ Rotation"
    bl_options = {'REGISTER', 'UNDO'}

    threshold: FloatProperty(  # type: ignore[valid-type]
        name="Threshold",
        description=(
            "Reparameterize vectors longer than this. Pi, the default, is the smallest useful "
            "value: every rotation has a vector of length at most pi, so below it nothing "
            "changes. Larger values leave vectors between pi and the threshold alone, so "
            "posing near pi does not flip between the two ends of the same rotation"
        ),
        default=math.pi,
        min=math.pi,
        max=2.0 * math.pi,
        subtype='ANGLE',
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return parameter_curves.poll_pose_or_graph(cls, context)

    @collector.while_paused  # no cyclic garbage collection mid-rig (`collector`)
    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        changes: list[tuple[bpy.types.Object, bpy.types.PoseBone, str, list[float]]] = []
        animated: list[str] = []
        outside_limits: list[str] = []
        candidates = 0
        selected = parameter_curves.selected_pose_bones(context)
        try:
            for obj, bone_name in selected:
                bone_modes.check_values(parameter_curves.pose_bone(obj, bone_name))
        except ValueError as error:
            return transaction.report_failure(self, error)
        for obj, bone_name in selected:
            pose_bone = parameter_curves.pose_bone(obj, bone_name)
            for name in parameter_curves.VECTOR_PARAMETERS:
                if pose_bone.get(name) is None:  # type: ignore[func-returns-value]
                    continue
                candidates += 1
                value = np.array(list(pose_bone[name]), dtype=np.float64)
                vector = _as_vector(name, value)
                if np.linalg.norm(vector) <= self.threshold:
                    continue
                if _is_animated(obj, bone_name, name):
                    animated.append(bone_name)
                    continue
                if name == SWING.name and not rq.swing_in_ellipse(
                    value, *bone_modes.joint_limits(pose_bone)[0]
                ):
                    outside_limits.append(bone_name)  # the drivers pose the clamped swing
                    continue
                new = _from_vector(name, rq.reparameterize(vector))
                changes.append((obj, pose_bone, name, new))
        if not candidates:
            self.report(
                {'WARNING'}, "No bone changed: no selected bone is in RQ or Swing/Twist mode"
            )
            return {'CANCELLED'}
        try:
            with transaction.all_or_nothing((obj, pb.name) for obj, pb, _, _ in changes):
                for _, pose_bone, name, new in changes:
                    bone_modes.write_parameters(pose_bone, {name: new})
        except Exception as error:
            return transaction.report_failure(self, error)
        headline, details = reparameterize_message(
            len(changes), animated, outside_limits, self.threshold
        )
        skipped = animated or outside_limits
        reports.report(self, 'WARNING' if skipped else 'INFO', headline, details)
        return {'FINISHED'}  # also when nothing changed (see `operators`)


register, unregister = register_classes_factory((POSE_OT_rq_reparameterize,))
