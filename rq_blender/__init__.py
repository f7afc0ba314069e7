# SPDX-License-Identifier: GPL-3.0-or-later
"""The Blender side of the add-on: ID properties, drivers, F-curve access, handlers.

This is the only package (with `operators/` and `panels/`) that imports bpy. The
one place where Blender animation data becomes numpy arrays is `animdata.py`.
"""

from . import handlers
from .registration import register_modules_factory

register, unregister = register_modules_factory((handlers,))
