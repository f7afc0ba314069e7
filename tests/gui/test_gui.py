# SPDX-License-Identifier: GPL-3.0-or-later
"""The add-on in a real Blender 4.3 window: start-up, panels, overlay, keymap, posing.

Screenshots go to build/gui/ (artifacts); the best are copied to docs/screenshots/ by hand.
"""

from __future__ import annotations

import re

import pytest

ADDON = "bl_ext.user_default.rq_rotations"
# A Python error printed by Blender (drawing code, handlers, operators).
PYTHON_ERROR = re.compile(r"Traceback \(most recent call last\)|\w+Error: ")


def assert_no_python_error(gui, since: int) -> None:
    """Blender printed no Python error after log offset ``since``."""
    printed = gui.log_text()[since:]
    assert not PYTHON_ERROR.search(printed), printed


def test_blender_window_runs_with_the_extension_enabled(gui):
    info = gui.run(
        "result = {'version': bpy.app.version_string, 'background': bpy.app.background,\n"
        f"          'enabled': {ADDON!r} in bpy.context.preferences.addons}}"
    )
    assert info == {"version": info["version"], "background": False, "enabled": True}
    assert info["version"].startswith("4.3")
    assert gui.screenshot("startup").stat().st_size > 10_000
    assert_no_python_error(gui, 0)


def drag(gui, start: tuple[int, int], end: tuple[int, int]) -> None:
    """Drag with the left mouse button, in steps, as a hand would."""
    (x0, y0), (x1, y1) = start, end
    steps = [f"{x0 + (x1 - x0) * i // 4} {y0 + (y1 - y0) * i // 4}" for i in range(1, 5)]
    moves = [arg for step in steps for arg in ("mousemove", *step.split(), "sleep", "0.1")]
    gui.xdotool("mousemove", str(x0), str(y0), "sleep", "0.3", "mousedown", "1", "sleep", "0.1",
                *moves, "mouseup", "1", "sleep", "0.3")


@pytest.fixture(scope="module")
def chain(gui):
    """The three-bone test rig (RQ spine, swing/twist arm), in Pose mode, with a Properties
    editor made wider and taller (by dragging its edges) so the panels fit the screenshots."""
    rig = gui.run("result = gui_scenes.build_chain()")
    boxes = gui.run("result = gui_scenes.area_boxes()")
    x, y, _, _ = boxes["PROPERTIES"]
    drag(gui, (x - 1, y + 300), (x - 200, y + 300))  # the edge with the 3D View
    drag(gui, (x + 100, y - 1), (x + 100, 130))  # the edge with the Outliner
    boxes = gui.run("result = gui_scenes.area_boxes()")
    assert boxes["PROPERTIES"][2] > 450 and boxes["PROPERTIES"][3] > 800, boxes
    return rig


BONES = {"Spine": "rq", "UpperArm": "swing-twist", "Forearm": "swing-twist-clamped"}


@pytest.mark.parametrize("bone", BONES)
def test_bone_properties_panel_draws_for_the_active_bone(gui, chain, bone):
    since = len(gui.log_text())
    box = gui.run(
        "obj = bpy.data.objects['Chain']\n"
        f"gui_scenes.select(obj, [{bone!r}], active={bone!r})\n"
        "result = gui_scenes.show_bone_tab()\n"
        "gui_scenes.redraw()\n"
    )
    state = gui.run("result = gui_scenes.panel_state('BONE_PT_rq_rotation', 'PROPERTIES')")
    assert state["registered"] and state["poll"], state
    assert state["bone_tab"] == 'BONE'
    shot = gui.screenshot(f"properties-{BONES[bone]}", box)
    assert shot.stat().st_size > 5_000
    assert_no_python_error(gui, since)


@pytest.mark.parametrize("bone", BONES)
def test_sidebar_panel_draws_for_the_selected_bones(gui, chain, bone):
    since = len(gui.log_text())
    box = gui.run(
        "obj = bpy.data.objects['Chain']\n"
        f"gui_scenes.select(obj, [{bone!r}], active={bone!r})\n"
        "result = gui_scenes.show_sidebar()\n"
        "gui_scenes.redraw()\n"
    )
    state = gui.run("result = gui_scenes.panel_state('VIEW3D_PT_rq_rotation', 'VIEW_3D')")
    assert state["registered"] and state["poll"] and state["sidebar_open"], state
    assert state["region"] == 'UI' and state["region_width"] > 100
    shot = gui.screenshot(f"sidebar-{BONES[bone]}", box)
    assert shot.stat().st_size > 5_000
    assert_no_python_error(gui, since)


def test_overlay_draws_limit_cones_in_the_viewport(gui, chain):
    since = len(gui.log_text())
    box = gui.run(
        "obj = bpy.data.objects['Chain']\n"
        "gui_scenes.select(obj, ['UpperArm'], active='UpperArm')\n"
        "bpy.context.window_manager.rq_overlay.show_limits = True\n"
        "gui_scenes.area('VIEW_3D').spaces.active.show_region_ui = False\n"
        "gui_scenes.redraw()\n"
        "result = gui_scenes.window_box(gui_scenes.area('VIEW_3D'))\n"
    )
    with_overlay = gui.screenshot("viewport-limits", box)
    gui.run("bpy.context.window_manager.rq_overlay.show_limits = False\ngui_scenes.redraw()")
    without = gui.screenshot("viewport-no-limits", box)
    gui.run("bpy.context.window_manager.rq_overlay.show_limits = True")
    assert with_overlay.read_bytes() != without.read_bytes()
    assert_no_python_error(gui, since)


def test_overlay_costs_at_most_a_fifth_of_the_frame_with_50_bones(gui, chain):
    """Viewport frame time, overlay on vs off, 50 swing/twist bones (best of 5 each)."""
    since = len(gui.log_text())
    gui.run("bpy.data.objects['Chain'].hide_set(True)\ngui_scenes.build_crowd(50)")
    timing = gui.run(
        "overlay = bpy.context.window_manager.rq_overlay\n"
        "times = {True: [], False: []}\n"
        "for _ in range(5):\n"
        "    for show in (False, True):\n"
        "        overlay.show_limits = show\n"
        "        times[show].append(gui_scenes.time_viewport(20))\n"
        "result = {'on': min(times[True]), 'off': min(times[False])}\n"
    )
    ratio = timing["on"] / timing["off"]
    shot = gui.screenshot("viewport-limits-50-bones")
    print(f"overlay with 50 bones: {1e3 * timing['on']:.2f} ms vs {1e3 * timing['off']:.2f} ms"
          f" per frame, ratio {ratio:.3f}; {shot}")
    gui.run("gui_scenes.restore_chain()")
    assert ratio <= 1.2, timing
    assert_no_python_error(gui, since)
