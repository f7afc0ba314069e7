# SPDX-License-Identifier: GPL-3.0-or-later
"""What the animator sees while posing with R: the screen, not only the stored values.

During an R drag on an RQ bone whose parameters are keyed (the case where the viewport used
to keep the old pose), every mouse move must show on screen the pose the operator wrote: the
3D View around the rig, the sidebar panel and the Bone Properties panel are compared pixel by
pixel with the same pose drawn from rest (the parameters set from Python, the window redrawn).
Esc must bring back exactly the screen of before. The status bar shows the modal keys while the
rotation runs, as Blender's own rotate does, and goes back to what it showed when it ends.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from PIL import Image
from test_gui import ROTATING, assert_no_python_error, wait_for_change

# A pixel counts as changed when its RGB channels differ by more than this in sum.
CHANGED = 30
# Below this many changed pixels two screens count as the same picture (anti-aliasing and
# text cursor noise; the drag below changes tens of thousands).
SAME = 50
# A mouse move turns the bone visibly: at least this many pixels of the rig's box change.
MOVED = 500


def grab(gui, name: str, boxes: dict[str, list[int]]) -> dict[str, np.ndarray]:
    """Screenshots of each box, once the screen has settled: Blender has run two more turns of
    its event loop (each draws what the previous one tagged), and two grabs in a row agree."""
    gui.run("pass")
    gui.run("pass")
    previous = None
    for _ in range(20):
        shots = {
            key: np.asarray(Image.open(gui.screenshot(f"{name}-{key}", box)).convert("RGB")).astype(
                int
            )
            for key, box in boxes.items()
        }
        if previous is not None and all(changed(shots[k], previous[k]) == 0 for k in shots):
            return shots
        previous = shots
        time.sleep(0.3)
    raise AssertionError(f"the screen did not settle for {name}")


def changed(a: np.ndarray, b: np.ndarray) -> int:
    """How many pixels differ between two pictures of the same box."""
    return int((np.abs(a - b).sum(axis=-1) > CHANGED).sum())


@pytest.fixture
def keyed_spine(gui):
    """Chain's RQ ``Spine`` keyed at frames 1 and 20, at frame 1, selected and active, the
    sidebar and the Bone tab showing it; the keys are removed afterwards."""
    gui.run(
        "from mathutils import Vector\n"
        "if 'Chain' not in bpy.data.objects:\n"
        "    gui_scenes.build_chain()\n"
        "gui_scenes.activate('Chain')\n"
        "gui_scenes.frame_view(Vector((0.0, 0.0, 1.7)), 5.5)\n"
        "pb = bpy.data.objects['Chain'].pose.bones['Spine']\n"
        "pb['rq_vector'] = [0.0, 0.0, 0.0]\n"
        "pb.keyframe_insert('[\"rq_vector\"]', frame=20)\n"
        "pb['rq_vector'] = [0.35, 0.2, 0.6]\n"
        "pb.keyframe_insert('[\"rq_vector\"]', frame=1)\n"
        "bpy.context.scene.frame_set(1)\n"
        "gui_scenes.select(bpy.data.objects['Chain'], ['Spine'], active='Spine')\n"
        "gui_scenes.show_sidebar()\ngui_scenes.show_bone_tab()\ngui_scenes.redraw()\n"
    )
    yield "Spine"
    gui.run(
        "obj = bpy.data.objects['Chain']\n"
        "gui_scenes.remove_action(obj)\n"
        "pb = obj.pose.bones['Spine']\n"
        "pb['rq_vector'] = [0.35, 0.2, 0.6]\npb.id_data.update_tag()\n"
        "gui_scenes.area('VIEW_3D').spaces.active.show_region_ui = False\n"
        "gui_scenes.redraw()\n"
    )


def test_r_drag_shows_every_pose_live_and_esc_restores_the_screen(gui, keyed_spine):
    since = len(gui.log_text())
    boxes = gui.run(
        "view = gui_scenes.area('VIEW_3D')\n"
        "result = {'rig': gui_scenes.bones_box('Chain', margin=160),\n"
        "          'sidebar': gui_scenes.window_box(next(r for r in view.regions"
        " if r.type == 'UI')),\n"
        "          'properties': gui_scenes.window_box(gui_scenes.area('PROPERTIES')),\n"
        "          'status': gui_scenes.status_bar_box()}\n"
        "result['view'] = gui_scenes.window_box(next(r for r in view.regions"
        " if r.type == 'WINDOW'))\n"
    )
    screen_boxes = {key: boxes[key] for key in ("rig", "sidebar", "properties")}
    value = "list(bpy.data.objects['Chain'].pose.bones['Spine']['rq_vector'])"
    before = grab(gui, "live-before", {**screen_boxes, "status": boxes["status"]})

    x, top, _, height = boxes["view"]
    # Near the view's left edge: away from the rig, and from the sidebar, which overlaps the
    # view's right side (a hovered field there would light up).
    mouse = (x + 80, top + height // 3)
    gui.xdotool("mousemove", *map(str, mouse), "sleep", "0.3", "key", "r")
    state = wait_for_change(gui, ROTATING, None)
    deadline = time.monotonic() + 10.0
    while True:
        keys = grab(gui, "live-status", {"status": boxes["status"]})["status"]
        if changed(keys, before["status"]) >= MOVED:
            break
        assert time.monotonic() < deadline, "no modal keys in the status bar"

    # Free rotation, then RR (trackball), then X (global axis), then a typed angle.
    steps = [("mousemove", str(mouse[0] + 35 * i), str(mouse[1] + 30 * i)) for i in (1, 2, 3)]
    steps += [
        ("key", "r"),
        ("mousemove", str(mouse[0] + 60), str(mouse[1] + 140)),
        ("key", "x"),
        ("mousemove", str(mouse[0] + 40), str(mouse[1] + 60)),
        ("key", "3"),
        ("key", "5"),
    ]
    during, written = [], []
    for step, action in enumerate(steps, start=1):
        gui.xdotool(*action)
        state = wait_for_change(gui, ROTATING, state)
        during.append(grab(gui, f"live-during{step}", screen_boxes))
        written.append(gui.run(f"result = {value}"))
    gui.xdotool("key", "Escape")
    assert wait_for_change(gui, ROTATING, state) is None
    after = grab(gui, "live-after-esc", {**screen_boxes, "status": boxes["status"]})

    for key in screen_boxes:
        assert changed(after[key], before[key]) <= SAME, f"Esc left the {key} changed"
    # The modal keys are gone (the status bar may have shown an earlier report before).
    assert changed(after["status"], keys) >= MOVED, "the modal keys stayed in the status bar"
    # Each step moved the rig on screen...
    shown = [before, *during]
    for step in range(1, len(shown)):
        assert changed(shown[step]["rig"], shown[step - 1]["rig"]) > MOVED, steps[step - 1]
    # ...to the pose written at that step, with the panels showing its numbers.
    for step, values in enumerate(written, start=1):
        gui.run(
            "pb = bpy.data.objects['Chain'].pose.bones['Spine']\n"
            f"pb['rq_vector'] = {values!r}\npb.id_data.update_tag()\n"
            "bpy.context.view_layer.update()\ngui_scenes.redraw()\n"
        )
        reference = grab(gui, f"live-reference{step}", screen_boxes)
        for key in screen_boxes:
            assert changed(during[step - 1][key], reference[key]) <= SAME, (
                f"{steps[step - 1]}: the {key} did not show the pose written ({values})"
            )
    assert_no_python_error(gui, since)


@pytest.mark.parametrize(
    "operator, setup",
    [
        ("pose.rq_reparameterize()", "pb['rq_vector'] = [7.0, 0.0, 0.0]"),
        ("pose.rq_set_mode(mode='QUATERNION')", ""),
    ],
)
def test_panels_show_an_operators_result_at_once(gui, keyed_spine, operator, setup):
    """After an operator run from a menu, the panels show the new values without anything
    else redrawing them (the Reparameterize panel used to keep showing the old angle)."""
    since = len(gui.log_text())
    gui.run(
        "obj = bpy.data.objects['Chain']\ngui_scenes.remove_action(obj)\n"
        f"pb = obj.pose.bones['Spine']\n{setup}\npb.id_data.update_tag()\n"
        "gui_scenes.redraw()\n"
    )
    boxes = gui.run(
        "view = gui_scenes.area('VIEW_3D')\n"
        "result = {'sidebar': gui_scenes.window_box(next(r for r in view.regions"
        " if r.type == 'UI')),\n"
        "          'properties': gui_scenes.window_box(gui_scenes.area('PROPERTIES'))}\n"
    )
    before = grab(gui, "refresh-before", boxes)
    gui.run(
        f"with gui_scenes.override('VIEW_3D'):\n    assert bpy.ops.{operator} == {{'FINISHED'}}\n"
    )
    shown = grab(gui, "refresh-shown", boxes)
    gui.run("gui_scenes.redraw()")
    reference = grab(gui, "refresh-reference", boxes)
    for key in boxes:
        assert changed(reference[key], before[key]) > SAME, f"{operator} changed no {key}"
        assert changed(shown[key], reference[key]) <= SAME, f"the {key} kept the old values"
    if "set_mode" in operator:  # Spine back in RQ mode for the tests after this one
        gui.run(
            "obj = bpy.data.objects['Chain']\n"
            "gui_scenes.set_mode(obj, ['Spine'], 'RQ')\n"
            "gui_scenes.select(obj, ['Spine'], active='Spine')\n"
        )
    assert_no_python_error(gui, since)
