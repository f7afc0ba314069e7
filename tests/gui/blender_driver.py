# SPDX-License-Identifier: GPL-3.0-or-later
"""Runs inside the real Blender GUI (``blender --python blender_driver.py``).

A remote control for the GUI tests: a timer polls ``$RQ_GUI_DIR/inbox`` for Python snippets
written by the test process, runs each in Blender's main thread (so with a live window, between
redraws and input events) and writes ``$RQ_GUI_DIR/outbox/<name>.json`` with the snippet's
``result`` or its traceback. Snippets see ``bpy`` and ``gui_scenes`` (the tests' helpers).

It never prints: everything Blender writes to its console is the add-on's, and the tests scan it
for Python errors.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import traceback
from typing import Any

import bpy

GUI_DIR = pathlib.Path(os.environ["RQ_GUI_DIR"])
INBOX = GUI_DIR / "inbox"
OUTBOX = GUI_DIR / "outbox"
POLL_S = 0.05


def _run(path: pathlib.Path) -> None:
    import gui_scenes  # next to this file in the session folder

    namespace: dict[str, Any] = {"bpy": bpy, "gui_scenes": gui_scenes, "result": None}
    try:
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        text = json.dumps({"ok": True, "result": namespace["result"]})
    except Exception:  # (a result JSON cannot encode too: the timer must keep answering)
        text = json.dumps({"ok": False, "traceback": traceback.format_exc()})
    partial = OUTBOX / f"{path.stem}.partial"
    partial.write_text(text)
    partial.rename(OUTBOX / f"{path.stem}.json")


def _poll() -> float:
    for path in sorted(INBOX.glob("*.py")):
        try:
            _run(path)
        finally:
            path.unlink()
    return POLL_S


def _start() -> None:
    sys.path.insert(0, str(GUI_DIR))
    OUTBOX.mkdir(parents=True, exist_ok=True)
    (GUI_DIR / "ready").write_text(bpy.app.version_string)
    bpy.app.timers.register(_poll, first_interval=POLL_S, persistent=True)


# Start once the window exists (not at script load, when there is none yet).
bpy.app.timers.register(_start, first_interval=0.5)
