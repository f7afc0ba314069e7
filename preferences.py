# SPDX-License-Identifier: GPL-3.0-or-later
"""Add-on preferences: defaults the operators start from."""

import math

import bpy
from bpy.props import FloatProperty

from .rq_blender.registration import register_classes_factory


class RQ_AddonPreferences(bpy.types.AddonPreferences):
    # For an extension the package is ``bl_ext.<repository>.rq_rotations``.
    bl_idname = __package__

    conversion_tolerance: FloatProperty(  # type: ignore[valid-type]
        name="Conversion Tolerance",
        description=(
            "Default largest rotation error allowed when converting animation between "
            "rotation modes with key reduction (0 keeps every sampled frame)"
        ),
        default=math.radians(0.01),
        min=0.0,
        soft_max=math.radians(1.0),
        subtype='ANGLE',
    )

    def draw(self, context: bpy.types.Context) -> None:
        self.layout.prop(self, "conversion_tolerance")


def preferences(context: bpy.types.Context) -> RQ_AddonPreferences:
    """The add-on's preferences (``context.preferences.addons[__package__]``)."""
    blender_preferences = context.preferences
    assert blender_preferences is not None  # None only while Blender starts or quits
    return blender_preferences.addons[__package__].preferences  # type: ignore[return-value]


register, unregister = register_classes_factory((RQ_AddonPreferences,))
