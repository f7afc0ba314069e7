# SPDX-License-Identifier: GPL-3.0-or-later
"""Timing helpers shared by the benchmarks that run inside Blender (the bpy wheel)."""

from __future__ import annotations

import time
from collections.abc import Callable

import bpy


def timed(call: Callable[[], set[str]]) -> float:
    """Wall time (s) of an operator call, which must finish."""
    start = time.perf_counter()
    result = call()
    elapsed = time.perf_counter() - start
    assert result == {"FINISHED"}, result
    return elapsed


def time_nla_bake(obj: bpy.types.Object, frame_start: int, frame_end: int) -> float:
    """Time ``nla.bake`` with visual keying of the selected pose bones into a scratch action
    (Blender's native path, the peer the add-on's operators are measured against), then put
    the original action back and re-evaluate the scene as it was, so the next operator timed
    does not pay for that (``bpy.ops`` updates the view layer first)."""
    action = obj.animation_data.action
    elapsed = timed(
        lambda: bpy.ops.nla.bake(
            frame_start=frame_start,
            frame_end=frame_end,
            only_selected=True,
            visual_keying=True,
            use_current_action=False,
            bake_types={'POSE'},
        )
    )
    scratch = obj.animation_data.action
    obj.animation_data.action = action
    if scratch is not action:
        bpy.data.actions.remove(scratch)
    bpy.context.view_layer.update()
    return elapsed
