# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs inside the real Blender GUI (``blender --python blender_driver.py``).

A remote control for the GUI tests: a timer polls ``$RQ_GUI_DIR/inbox`` for Python snippets
written by the test process, runs each in Blender's main thread (so with a live window, between
redraws and input events) and writes ``$RQ_GUI_DIR/outbox/<name>.json`` with the snippet's
``result`` or its traceback. Snippets see `bpy`, `override` and `window_box`.

It never prints: everything Blender writes to its console is the add-on's, and the tests scan it
for Python errors.
"""

from __future__ import annotations

import json
import os
import pathlib
import traceback
from typing import Any

import bpy

GUI_DIR = pathlib.Path(os.environ["RQ_GUI_DIR"])
INBOX = GUI_DIR / "inbox"
OUTBOX = GUI_DIR / "outbox"
POLL_S = 0.05


def area(area_type: str) -> Any:
    """The first area of ``area_type`` in the main window's screen."""
    window = bpy.context.window_manager.windows[0]
    return next(a for a in window.screen.areas if a.type == area_type)


def override(area_type: str | None = None, region_type: str = "WINDOW") -> Any:
    """A ``context.temp_override`` for the main window (and an area and region of it)."""
    window = bpy.context.window_manager.windows[0]
    members: dict[str, Any] = {"window": window, "screen": window.screen}
    if area_type is not None:
        found = area(area_type)
        members["area"] = found
        members["region"] = next(r for r in found.regions if r.type == region_type)
    return bpy.context.temp_override(**members)


def window_box(item: Any) -> list[int]:
    """``[x, y, width, height]`` of an area or region in X screen coordinates (y down).

    Blender's window sits at the screen's origin (no window manager), and Blender counts
    y upwards from the window's bottom.
    """
    window = bpy.context.window_manager.windows[0]
    return [item.x, window.height - (item.y + item.height), item.width, item.height]


def _run(path: pathlib.Path) -> None:
    namespace: dict[str, Any] = {
        "bpy": bpy, "override": override, "area": area, "window_box": window_box,
        "result": None,
    }
    reply: dict[str, Any]
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        reply = {"ok": True, "result": namespace["result"]}
    except Exception:
        reply = {"ok": False, "traceback": traceback.format_exc()}
    partial = OUTBOX / f"{path.stem}.partial"
    partial.write_text(json.dumps(reply))
    partial.rename(OUTBOX / f"{path.stem}.json")


def _poll() -> float:
    for path in sorted(INBOX.glob("*.py")):
        try:
            _run(path)
        finally:
            path.unlink()
    return POLL_S


def _start() -> None:
    OUTBOX.mkdir(parents=True, exist_ok=True)
    (GUI_DIR / "ready").write_text(bpy.app.version_string)
    bpy.app.timers.register(_poll, first_interval=POLL_S, persistent=True)


# Start once the window exists (not at script load, when there is none yet).
bpy.app.timers.register(_start, first_interval=0.5)
