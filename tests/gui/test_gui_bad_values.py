# SPDX-License-Identifier: GPL-3.0-or-later
"""A bone whose stored value is NaN, in the real window: the panel still draws whole, says
what is wrong and offers a reset button; clicking it (real X input) fixes the value, in one
undo step, and Blender prints no Python error."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image
from test_gui import assert_no_python_error, wait_for_change

VECTOR = "repr([round(v, 6) for v in bpy.data.objects['Chain'].pose.bones['Spine']['rq_vector']])"


@pytest.fixture(scope="module")
def chain_rig(gui):
    """The chain rig of `test_gui` (built here when this module runs alone)."""
    gui.run("if 'Chain' not in bpy.data.objects:\n    gui_scenes.build_chain()\nresult = None")


def alert_button_centre(path) -> tuple[int, int]:
    """Centre ``(x, y)`` in the image of the widest run of alert-red pixels: an operator
    button in an alert layout is filled red, alert labels only have red letters."""
    rgb = np.asarray(Image.open(path).convert("RGB")).astype(int)
    red = (rgb[..., 0] > 120) & (rgb[..., 0] > 2 * rgb[..., 1]) & (rgb[..., 0] > 2 * rgb[..., 2])
    counts = red.sum(axis=1)
    row = int(np.argmax(counts))
    assert counts[row] > 60, f"no alert button in {path} (best row has {counts[row]} red pixels)"
    rows = np.flatnonzero(counts >= 0.8 * counts[row])
    rows = rows[np.abs(rows - row) <= 12]  # the button around the densest row
    columns = np.flatnonzero(red[row])
    return int((columns.min() + columns.max()) // 2), int((rows.min() + rows.max()) // 2)


def test_nan_vector_panel_draws_whole_and_its_reset_button_fixes_it(gui, chain_rig):
    since = len(gui.log_text())
    box = gui.run(
        "obj = bpy.data.objects['Chain']\n"
        "gui_scenes.select(obj, ['Spine'], active='Spine')\n"
        "pb = obj.pose.bones['Spine']\n"
        "pb['rq_vector'] = [float('nan'), 0.2, 0.6]\n"
        "obj.update_tag()\n"
        "result = gui_scenes.show_sidebar()\n"
        "gui_scenes.redraw()\n"
        "gui_scenes.undo_push('NaN vector')\n"
    )
    shot = gui.screenshot("sidebar-rq-nan-vector", box)
    # The panel drew to its end (the animation tools under the message) without an error.
    state = gui.run("result = gui_scenes.panel_state('VIEW3D_PT_rq_rotation', 'VIEW_3D')")
    assert state["poll"], state
    assert_no_python_error(gui, since)
    x, y = alert_button_centre(shot)
    before = gui.run(f"result = {VECTOR}")
    assert before == "[nan, 0.2, 0.6]"
    gui.xdotool("mousemove", str(box[0] + x), str(box[1] + y), "sleep", "0.5", "click", "1")
    assert wait_for_change(gui, VECTOR, before) == "[0.0, 0.0, 0.0]"
    gui.run("gui_scenes.redraw()")
    gui.screenshot("sidebar-rq-nan-vector-reset", box)
    # One undo step brings the NaN back, as Ctrl+Z would; redo fixes it again.
    assert gui.run(f"gui_scenes.undo()\nresult = {VECTOR}") == before
    assert gui.run(f"gui_scenes.redo()\nresult = {VECTOR}") == "[0.0, 0.0, 0.0]"
    gui.run(
        "pb = bpy.data.objects['Chain'].pose.bones['Spine']\n"
        "pb['rq_vector'] = [0.35, 0.2, 0.6]\npb.id_data.update_tag()\nresult = None"
    )
    assert_no_python_error(gui, since)


def test_r_refuses_a_bone_with_a_nan_limit_and_changes_nothing(gui, chain_rig):
    """R (pose.rq_rotate) does not start on a bone with a NaN limit; its values stay."""
    since = len(gui.log_text())
    state = (
        "repr({k: [round(v, 6) for v in pb[k]] for k in ('rq_swing', 'rq_swing_limit')}"
        " | {'twist': round(pb['rq_twist'], 6)})"
    )
    box = gui.run(
        "obj = bpy.data.objects['Chain']\n"
        "pb = obj.pose.bones['UpperArm']\n"
        "keep = list(pb['rq_swing_limit'])\n"
        "pb['rq_swing_limit'] = [float('nan'), keep[1]]\n"
        "gui_scenes.select(obj, ['UpperArm'], active='UpperArm')\n"
        "gui_scenes.redraw()\n"
        "result = gui_scenes.window_box(gui_scenes.area('VIEW_3D'))\n"
    )
    before = gui.run(f"pb = bpy.data.objects['Chain'].pose.bones['UpperArm']\nresult = {state}")
    x, y = box[0] + box[2] // 3, box[1] + box[3] // 3
    gui.xdotool(
        "mousemove",
        str(x),
        str(y),
        "sleep",
        "0.2",
        "key",
        "r",
        "sleep",
        "1.0",
        "mousemove",
        str(x + 40),
        str(y - 25),
        "sleep",
        "1.0",
    )
    assert gui.run("result = gui_scenes.rotating()") is None  # R did not start
    # Blender shows the refusal in a popup at the mouse; move away so it closes and does not
    # take the keys of the tests after this one.
    gui.xdotool("mousemove", "5", "5", "sleep", "0.5", "key", "Escape", "sleep", "0.3")
    after = gui.run(f"pb = bpy.data.objects['Chain'].pose.bones['UpperArm']\nresult = {state}")
    assert after == before
    gui.run(
        "pb = bpy.data.objects['Chain'].pose.bones['UpperArm']\n"
        "pb['rq_swing_limit'] = [0.6981317, pb['rq_swing_limit'][1]]\n"
        "pb.id_data.update_tag()\nresult = None"
    )
    # Blender flagged the drivers that read the NaN invalid; the add-on's update handler
    # clears the flag now that the value is finite, so the bone turns again.
    valid = "all(f.driver.is_valid for f in bpy.data.objects['Chain'].animation_data.drivers)"
    assert gui.run(f"result = {valid}") or wait_for_change(gui, valid, False)
    assert_no_python_error(gui, since)
