# SPDX-License-Identifier: GPL-3.0-or-later
"""RQ Rotations: exponential-map (RQ) and swing/twist rotation modes for pose bones.

The package is laid out as a tree of registrable modules. Each sub-package registers
its own classes and whatever it attaches to Blender (properties, handlers, menu entries,
keymap items); this file registers them in order and unregisters them in reverse, so a
disabled add-on leaves nothing behind.

`rq_rotation` (the numpy math core) never imports bpy and is not registered: console
users import it directly.
"""

from . import operators, panels, preferences, rq_blender
from .rq_blender.registration import register_modules_factory

register, unregister = register_modules_factory((preferences, rq_blender, operators, panels))
