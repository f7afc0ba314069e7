# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_spline_interpolate``: make RQ channels interpolate as an RQ-space cubic spline,
stored as ordinary Bezier F-curve keys (see ``rq_rotation.keyframes.spline_keys``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty

from ..rq_blender import (
    bone_modes,
    collector,
    conversion,
    drivers,
    parameter_curves,
    parameter_splines,
    progress,
    reports,
    transaction,
)
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.keyframes import spline_keys
from ..rq_rotation.modes import NATIVE_MODES, PARAMETERS, RQ

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems

KIND_ITEMS = (
    ('CATMULL_ROM', "Catmull-Rom", "Passes through the keys, tangents from the neighbouring keys"),
    ('HERMITE', "Hermite", "Passes through the keys, tangents from the current angular velocity"),
    ('BEZIER', "Automatic Bezier", "Passes through the keys, automatic (Catmull-Rom) handles"),
    ('BSPLINE', "B-Spline", "Smooth (C2) curve that approximates the keys (needs 3 keys)"),
)


def interpolate_message(
    kind: str,
    bones: int,
    converted: int,
    written: int,
    added: int,
    jumps: int,
    worst: float,
    off: list[str],
) -> tuple[str, list[str]]:
    """``(headline, details)`` of interpolating ``bones`` bones with the spline labelled
    ``kind`` (`KIND_ITEMS`): ``written`` keys, ``added`` of them new (``jumps`` held jumps),
    ``worst`` the largest deviation (radians), ``off`` the bones beyond the tolerance;
    ``converted`` native bones were switched to RQ first."""
    headline = f"Interpolated {reports.plural(bones, 'bone')} as {kind}"
    if off:
        headline += f", {reports.plural(len(set(off)), 'bone')} beyond tolerance"
    elif converted:
        headline += f" ({converted} converted to RQ)"
    details = [
        f"{written} keys, {added} added: the spline's hidden keys and "
        f"{reports.plural(jumps, 'held jump')} between charts; largest deviation "
        f"{math.degrees(worst):.3g} degrees"
    ]
    if converted:
        details.append(f"Converted {reports.plural(converted, 'native bone')} to RQ first")
    if off:
        # A fast turn (radians per frame) next to the identity on a shell with a turning
        # axis (a held jump stands still for `spline_keys.JUMP_GAP` frames, one continuous
        # chart swings along the shell: see spline_keys), a key on a shell, or a tolerance
        # finer than float32 values can follow.
        names = reports.name_list(sorted(off), 20)
        details.append(
            f"Deviation beyond the tolerance on {names}: a tolerance of "
            f"{math.degrees(worst):.3g}° or more is met (keys cannot follow a fast turn "
            "next to a 360° shell, nor closer than F-curves' float32 values)"
        )
    return headline, details


class POSE_OT_rq_spline_interpolate(bpy.types.Operator):
    """Interpolate the selected RQ and swing/twist channels as a cubic spline in RQ space (the
    twist as a plain cubic), written as ordinary Bezier keys that play without the add-on.
    Keys are added where the spline needs them: hidden keys for spins of more than half a
    turn, and near the 2*pi shell a change of chart written as a held jump (a Constant key,
    then the equivalent vector 0.01 frames later). Run the continuity filter before this, not
    after: the filter leaves these jumps alone"""

    bl_idname = "pose.rq_spline_interpolate"
    bl_label = "RQ Spline Interpolation"
    bl_options = {'REGISTER', 'UNDO'}

    kind: EnumProperty(  # type: ignore[valid-type]
        name="Spline",
        items=KIND_ITEMS,
        default='CATMULL_ROM',
        description="Which cubic spline",
    )
    tolerance: FloatProperty(  # type: ignore[valid-type]
        name="Tolerance",
        description=(
            "Largest rotation difference allowed between the F-curves and the spline; bones "
            "beyond it are reported (only a chart change where the bone turns fast can be: it "
            "holds the rotation for 0.01 frames)"
        ),
        default=0.00174533,  # 0.1 degree
        min=1e-6,
        soft_max=0.0174533,
        subtype='ANGLE',
    )
    convert_native: BoolProperty(  # type: ignore[valid-type]
        name="Convert Native Bones",
        description=(
            "First switch selected bones in Blender's rotation modes to RQ (keeping their key "
            "times), then interpolate them too"
        ),
        default=False,
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return parameter_curves.poll_pose_or_graph(cls, context)

    def _convert(self, context: bpy.types.Context) -> int:
        """Switch the selected native bones to RQ (conversion, KEYS strategy); how many.

        Bones already in an add-on mode keep it: a swing/twist bone stays swing/twist."""
        per_object: dict[str, tuple[bpy.types.Object, list[str]]] = {}
        for obj, name in parameter_curves.selected_pose_bones(context):
            pose_bone = parameter_curves.pose_bone(obj, name)
            if bone_modes.current_mode(pose_bone) in NATIVE_MODES:
                per_object.setdefault(obj.name_full, (obj, []))[1].append(name)
        plans = [
            (obj, conversion.plan_conversion(obj, names, RQ, "KEYS"))
            for obj, names in per_object.values()
        ]
        for obj, object_plans in plans:
            conversion.apply_plan(obj, object_plans)
        return sum(len(p) for _, p in plans)

    @collector.while_paused  # no cyclic garbage collection mid-rig (`collector`)
    @drivers.with_lookups  # bones' drivers looked up through one index
    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        # Converting (3D View only) switches selected bones first, so their parameters are
        # read after it; otherwise they are read once, here, and only their bones are touched.
        converting = self.convert_native and not parameter_curves.in_graph_editor(context)
        targets = None if converting else parameter_curves.target_parameters(context, PARAMETERS)
        touched = (
            parameter_curves.selected_pose_bones(context)
            if targets is None
            else [(c.obj, c.bone_name) for c in targets]
        )
        try:
            # (Converting switches modes; otherwise only keys change.)
            with transaction.all_or_nothing(touched, keys_only=targets is not None):
                for obj, name in touched:
                    bone_modes.check_values(parameter_curves.pose_bone(obj, name))
                return self._interpolate(context, targets)
        except Exception as error:
            return transaction.report_failure(self, error)

    def _interpolate(
        self, context: bpy.types.Context, targets: list[parameter_curves.ParameterCurves] | None
    ) -> set[OperatorReturnItems]:
        """Convert (when ``targets`` is None) and interpolate; the body of `execute`."""
        converted = 0
        if targets is None:
            converted = self._convert(context)
            targets = parameter_curves.target_parameters(context, PARAMETERS)
        parameter_curves.check_editable(targets)
        minimum = 3 if self.kind == 'BSPLINE' else 2
        keyed = [(c, times) for c in targets if len(times := c.key_times()) >= minimum]
        usable = [c for c, _ in keyed]
        if not usable:
            self.report(
                {'WARNING'},
                f"Nothing interpolated: no selected RQ or Swing/Twist channel has {minimum}+ keys",
            )
            return {'FINISHED'} if converted or targets else {'CANCELLED'}  # (`operators`)
        kind = spline_keys.KINDS[self.kind]
        with progress.progress(context, 2 * len(usable)) as update:
            results = parameter_splines.fit(usable, [t for _, t in keyed], kind, self.tolerance)
            update(len(usable))
            written = added = jumps = 0
            worst = 0.0
            off: list[str] = []
            for done, (curves, result) in enumerate(zip(usable, results, strict=True)):
                parameter_splines.write(curves, result)
                written += len(result.times)
                added += result.added
                jumps += result.jumps
                worst = max(worst, result.max_error)
                if result.max_error > self.tolerance:
                    off.append(curves.bone_name)
                update(len(usable) + done + 1)
        headline, details = interpolate_message(
            reports.labels(KIND_ITEMS)[self.kind],
            parameter_curves.count_bones(usable),
            converted,
            written,
            added,
            jumps,
            worst,
            off,
        )
        reports.report(self, 'WARNING' if off else 'INFO', headline, details)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_spline_interpolate,))
