# SPDX-License-Identifier: GPL-3.0-or-later
"""Operators: thin wrappers that gather data from the context, call `rq_rotation`
through `rq_blender`, and report what they did."""

from ..rq_blender.registration import register_modules_factory
from . import (
    bake,
    bone_values,
    compare,
    continuity_filter,
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
        continuity_filter,
        reparameterize,
        spline_interpolate,
        compare,
        posing,
        bone_values,
        pose_tools,
        ik_reach,
    )
)
