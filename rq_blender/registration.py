# SPDX-License-Identifier: GPL-3.0-or-later
"""Registration helpers shared by the add-on's sub-packages."""

from collections.abc import Callable, Sequence
from types import ModuleType


def register_modules_factory(
    modules: Sequence[ModuleType],
) -> tuple[Callable[[], None], Callable[[], None]]:
    """Return ``(register, unregister)`` for a sequence of modules.

    Each module provides its own ``register()`` and ``unregister()``. Registration runs
    in the given order; unregistration runs in reverse, so later modules may rely on
    what earlier ones registered.
    """

    def register() -> None:
        for module in modules:
            module.register()

    def unregister() -> None:
        for module in reversed(modules):
            module.unregister()

    return register, unregister
