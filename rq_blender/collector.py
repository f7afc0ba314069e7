# SPDX-License-Identifier: GPL-3.0-or-later
"""Python's cyclic garbage collector paused while an operator works through a rig.

A rig-wide operator allocates tens of thousands of small container objects that live until
it ends (per F-curve a key record and its closures, per bone a plan, per key array a view),
and every 700 allocations start a collection that scans the young ones, every tenth the
older ones too, though nothing the operators make is garbage before they end. Reference
counting still frees everything that is not in a cycle, inside the block as outside it; the
collector resumes afterwards with its counters as the block left them.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block, if it was running."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def while_paused(execute: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """An operator's ``execute(self, context)`` run with the collector `paused` (Blender
    checks the method's argument count when it registers the class: the wrapper keeps
    it)."""

    @functools.wraps(execute)
    def run(self: Any, context: Any) -> Any:
        with paused():
            return execute(self, context)

    return run
