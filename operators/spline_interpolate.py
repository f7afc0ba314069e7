# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_spline_interpolate``: make RQ channels interpolate as an RQ-space cubic spline,
stored as ordinary Bezier F-curve keys (see `rq_blender.spline_keys`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty

from ..rq_blender import animdata, conversion, parameter_curves, progress, spline_keys
from ..rq_blender.registration import register_classes_factory

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems

KIND_ITEMS = (
    ('CATMULL_ROM', "Catmull-Rom", "Passes through the keys, tangents from the neighbouring keys"),
    ('HERMITE', "Hermite", "Passes through the keys, tangents from the current angular velocity"),
    ('BEZIER', "Automatic Bezier", "Passes through the keys, automatic (Catmull-Rom) handles"),
    ('BSPLINE', "B-Spline", "Smooth (C2) curve that approximates the keys (needs 3 keys)"),
)


class POSE_OT_rq_spline_interpolate(bpy.types.Operator):
    """Interpolate the selected RQ channels as a cubic spline in RQ space, written as ordinary
    Bezier keys that play without the add-on; extra keys are inserted where needed (near the
    2*pi shell, spins of more than a revolution between keys) so the curves follow the spline
    within the tolerance"""

    bl_idname = "pose.rq_spline_interpolate"
    bl_label = "RQ Spline Interpolation"
    bl_options = {'REGISTER', 'UNDO'}

    kind: EnumProperty(  # type: ignore[valid-type]
        name="Spline", items=KIND_ITEMS, default='CATMULL_ROM', description="Which cubic spline",
    )
    tolerance: FloatProperty(  # type: ignore[valid-type]
        name="Tolerance",
        description="Largest rotation difference allowed between the F-curves and the spline",
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
        """Switch the selected native bones to RQ (conversion, KEYS strategy); how many."""
        per_object: dict[str, tuple[bpy.types.Object, list[str]]] = {}
        for obj, name in parameter_curves.selected_pose_bones(context):
            per_object.setdefault(obj.name_full, (obj, []))[1].append(name)
        plans = [
            (obj, conversion.plan_conversion(obj, names, "RQ", "KEYS"))
            for obj, names in per_object.values()
        ]
        for obj, object_plans in plans:
            conversion.apply_plan(obj, object_plans)
        return sum(len(p) for _, p in plans)

    def execute(self, context: bpy.types.Context) -> set[OperatorReturnItems]:
        converted = 0
        if self.convert_native and not parameter_curves.in_graph_editor(context):
            try:
                converted = self._convert(context)
            except (ValueError, KeyError) as error:
                self.report({'ERROR'}, f"Nothing changed: {error}")
                return {'CANCELLED'}
        minimum = 3 if self.kind == 'BSPLINE' else 2
        targets = parameter_curves.target_parameters(context, ("rq_vector",))
        usable = [c for c in targets if len(c.key_times()) >= minimum]
        if not usable:
            self.report(
                {'WARNING'},
                f"Nothing interpolated: no selected RQ channel has {minimum} or more keys",
            )
            return {'FINISHED'} if converted else {'CANCELLED'}
        kind = spline_keys.KINDS[self.kind]
        written = added = 0
        worst = 0.0
        off: list[str] = []
        with progress.progress(context, len(usable)) as update:
            for done, curves in enumerate(usable):
                times = curves.key_times()
                omega = (
                    spline_keys.angular_velocities_of(curves.values, times)
                    if self.kind == 'HERMITE' else None
                )
                result = spline_keys.fit(times, curves.values(times), kind, self.tolerance, omega)
                owner = animdata.fcurve_owner(curves.use, ensure=True)
                assert owner is not None  # ensure=True creates it
                for index in range(3):
                    animdata.write_keys(
                        owner, curves.data_path, index, curves.bone_name, result.times,
                        result.values[:, index],
                        handles=(result.handle_left[:, index], result.handle_right[:, index]),
                    )
                written += len(result.times)
                added += result.added
                worst = max(worst, result.max_error)
                if result.max_error > self.tolerance:
                    off.append(curves.bone_name)
                update(done + 1)
        bones = parameter_curves.count_bones(usable)
        note = f", converted {converted} native bone{'s' * (converted != 1)}" if converted else ""
        message = (
            f"Interpolated {bones} bone{'s' * (bones != 1)} as {self.kind.replace('_', '-')}: "
            f"{written} keys ({added} inserted to follow the spline, largest deviation "
            f"{math.degrees(worst):.3g} degrees){note}"
        )
        if off:
            # Near a shell with a fast-turning axis one continuous F-curve chart cannot follow
            # the spline's reparameterized pieces with keys 0.02 frames apart.
            message += f"; beyond the tolerance on {', '.join(sorted(set(off)))}"
        self.report({'WARNING'} if off else {'INFO'}, message)
        return {'FINISHED'}


register, unregister = register_classes_factory((POSE_OT_rq_spline_interpolate,))
