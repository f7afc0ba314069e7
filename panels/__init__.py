# SPDX-License-Identifier: GPL-3.0-or-later
"""User interface: panels, menu entries, the viewport overlay and interactive posing
(``operators/posing.py``: the R key for the add-on's bones, registered with its keymap here,
next to the rest of the interaction layer)."""

from ..operators import posing
from ..rq_blender import overlay
from ..rq_blender.registration import register_modules_factory
from . import bone, menus

# The overlay first: the panels show its settings.
register, unregister = register_modules_factory((overlay, bone, menus, posing))
