# SPDX-License-Identifier: GPL-3.0-or-later
"""Progress reporting for long operators (the cursor's progress indicator)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import bpy


@contextmanager
def progress(context: bpy.types.Context, total: float) -> Iterator[Callable[[float], None]]:
    """``window_manager.progress_begin(0, total)`` ... ``progress_end()`` around a block.

    Yields ``update(value)`` taking a value in ``[0, total]``; a no-op without a window
    manager (Blender starting or quitting).
    """
    window_manager = context.window_manager
    if window_manager is None:
        yield lambda value: None
        return
    window_manager.progress_begin(0.0, float(total))
    try:
        yield window_manager.progress_update
    finally:
        window_manager.progress_end()
