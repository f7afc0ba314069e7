# SPDX-License-Identifier: GPL-3.0-or-later
"""Registration helpers shared by the add-on's sub-packages.

Registration is a tree: every module has ``register()``/``unregister()``; a package
registers its modules in order and unregisters them in reverse.
"""

from collections.abc import Callable, Sequence
from types import ModuleType

import bpy

Hooks = tuple[Callable[[], None], Callable[[], None]]


def register_modules_factory(modules: Sequence[ModuleType]) -> Hooks:
    """Return ``(register, unregister)`` for a sequence of modules.

    Registration runs in the given order; unregistration runs in reverse, so later
    modules may rely on what earlier ones registered.
    """

    def register() -> None:
        for module in modules:
            module.register()

    def unregister() -> None:
        for module in reversed(modules):
            module.unregister()

    return register, unregister


def register_classes_factory(classes: Sequence[type]) -> Hooks:
    """``bpy.utils.register_classes_factory`` with types the stubs get right.

    (fake-bpy-module declares Blender's factory as returning None.)
    """

    def register() -> None:
        for cls in classes:
            bpy.utils.register_class(cls)

    def unregister() -> None:
        for cls in reversed(classes):
            bpy.utils.unregister_class(cls)

    return register, unregister
