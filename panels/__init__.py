# SPDX-License-Identifier: GPL-3.0-or-later
"""User interface: panels, menu entries, the viewport overlay, and the ways into interactive
posing: the R key (``keymap``) and the rotate gizmo (``gizmo``) for the add-on's bones. The
posing operator itself (``operators/posing.py``) registers with the other operators, before
this package."""

from ..rq_blender.registration import register_modules_factory
from . import bone, gizmo, keymap, menus, overlay

# The overlay first: the panels show its settings.
register, unregister = register_modules_factory((overlay, bone, menus, keymap, gizmo))
