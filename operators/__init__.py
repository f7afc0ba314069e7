# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators: thin wrappers that gather data from the context, call `rq_rotation`
through `rq_blender`, and report what they did.

What they return: ``{'CANCELLED'}`` when there is nothing to work on (no selected bone in an
add-on mode, no keyed channel) or the run is refused (its data left as it was, the reason
reported); ``{'FINISHED'}`` when the run is done, also when it found nothing to change
because the data already is what its properties ask for (the bones already in the mode,
every vector within the threshold). Blender's redo panel runs the operator again from the
state before it and, unless that run finishes, puts the previous result back: a panel
change that asks for the state before (Mode set back to the bones' own) would leave the
previous result on screen under a report that nothing changed."""

from ..rq_blender.registration import register_modules_factory
from . import (
    bake,
    bake_visual,
    bone_values,
    compare,
    continuity_filter,
    ik_grab,
    ik_limits,
    ik_reach,
    pose_tools,
    posing,
    reparameterize,
    set_mode,
    spline_interpolate,
)

register, unregister = register_modules_factory(
    (
        set_mode,
        bake,
        bake_visual,
        ik_limits,
        continuity_filter,
        reparameterize,
        spline_interpolate,
        compare,
        posing,
        bone_values,
        pose_tools,
        ik_reach,
        ik_grab,
    )
)
