# SPDX-License-Identifier: GPL-3.0-or-later
"""User interface: panels, menu entries and the viewport overlay."""

from ..rq_blender import overlay
from ..rq_blender.registration import register_modules_factory
from . import bone

# The overlay first: the panels show its settings.
register, unregister = register_modules_factory((overlay, bone))
