# SPDX-License-Identifier: GPL-3.0-or-later
"""Auto IK on the add-on's bones (`operators/ik_grab.py`): with Pose Options > Auto IK on, G on
the Chain's Forearm (swing/twist, under a swing/twist UpperArm and an RQ Spine, all connected)
poses the chain at every mouse move, live on screen; Esc restores the screen and the values;
Enter keeps the pose, auto-keying keys it, one Ctrl+Z takes it back; without Auto IK, G is
Blender's translate. Real input through xdotool.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_gui import assert_no_python_error, wait_for_change
from test_gui_live_posing import MOVED, SAME, changed, grab

GRABBING = (
    "next(([list(o.mouse), o.length] for o in bpy.context.window_manager.windows[0]"
    ".modal_operators if o.bl_idname in {'POSE_OT_rq_ik_grab', 'pose.rq_ik_grab'}), None)"
)
# Where the drag stands: the target of the Forearm's tail, the solver's distance left, and
# the tail as Blender evaluated it (world space).
DRAG = (
    "o = next(o for o in bpy.context.window_manager.windows[0].modal_operators"
    " if o.bl_idname in {'POSE_OT_rq_ik_grab', 'pose.rq_ik_grab'})\n"
    "obj = bpy.data.objects['Chain']\n"
    "result = {'target': list(o.grabs[0].target), 'distance': o.grabs[0].result.distance,"
    " 'tail': list(obj.matrix_world @ obj.pose.bones['Forearm'].tail),"
    " 'length': o.grabs[0].chain.length}\n"
)
VALUES = (
    "{n: [*pb['rq_vector']] if 'rq_vector' in pb.keys() else [*pb['rq_swing'], pb['rq_twist']]"
    " for n, pb in bpy.data.objects['Chain'].pose.bones.items()}"
)
SET_VALUES = (
    "obj = bpy.data.objects['Chain']\n"
    "for n, v in values.items():\n"
    "    pb = obj.pose.bones[n]\n"
    "    if 'rq_vector' in pb.keys():\n"
    "        pb['rq_vector'] = v\n"
    "    else:\n"
    "        pb['rq_swing'], pb['rq_twist'] = v[:2], v[2]\n"
    "obj.update_tag()\nbpy.context.view_layer.update()\ngui_scenes.redraw()\n"
)


@pytest.fixture
def auto_ik(gui):
    """The Chain in Pose mode, posed and limited as `gui_scenes.build_chain` makes it (earlier
    tests change it), with Auto IK on, the Forearm selected and active; afterwards its
    values, Auto IK and auto-keying as before, its keys removed."""
    gui.run(
        "from mathutils import Vector\n"
        "if 'Chain' not in bpy.data.objects:\n"
        "    gui_scenes.build_chain()\n"
        "gui_scenes.pose_chain(bpy.data.objects['Chain'])\n"
        "gui_scenes.activate('Chain')\n"
        "gui_scenes.frame_view(Vector((0.0, 0.0, 1.7)), 5.5)\n"
        "obj = bpy.data.objects['Chain']\nobj.pose.use_auto_ik = True\n"
        "gui_scenes.select(obj, ['Forearm'], active='Forearm')\ngui_scenes.redraw()\n"
    )
    start = gui.run(f"result = {VALUES}")
    yield start
    gui.run(
        f"values = {start!r}\n"
        "gui_scenes.remove_action(bpy.data.objects['Chain'])\n"
        "bpy.data.objects['Chain'].pose.use_auto_ik = False\n"
        "bpy.context.scene.tool_settings.use_keyframe_insert_auto = False\n" + SET_VALUES
    )


def start_grab(gui) -> tuple[int, int]:
    """Press G over the 3D View, away from the rig; the mouse position."""
    x, top, _, height = gui.run(
        "view = gui_scenes.area('VIEW_3D')\n"
        "result = gui_scenes.window_box(next(r for r in view.regions if r.type == 'WINDOW'))"
    )
    mouse = (x + 120, top + height // 3)
    gui.xdotool("mousemove", *map(str, mouse), "sleep", "0.3", "key", "g")
    wait_for_change(gui, GRABBING, None)
    return mouse


def test_g_poses_the_chain_live_within_the_limits_and_esc_restores(gui, auto_ik):
    since = len(gui.log_text())
    boxes = {"rig": gui.run("result = gui_scenes.bones_box('Chain', margin=200)")}
    before = grab(gui, "autoik-before", boxes)
    mouse = start_grab(gui)
    state = gui.run(f"result = {GRABBING}")
    steps = [(40, 40), (90, 100), (30, 160)]
    during, written, drags = [], [], []
    for step, (dx, dy) in enumerate(steps, start=1):
        gui.xdotool("mousemove", str(mouse[0] + dx), str(mouse[1] + dy))
        state = wait_for_change(gui, GRABBING, state)
        during.append(grab(gui, f"autoik-during{step}", boxes))
        written.append(gui.run(f"result = {VALUES}"))
        drags.append(gui.run(DRAG))
    gui.xdotool("key", "Escape")
    assert wait_for_change(gui, GRABBING, state) is None
    after = grab(gui, "autoik-after-esc", boxes)
    assert gui.run(f"result = {VALUES}") == auto_ik
    assert changed(after["rig"], before["rig"]) <= SAME, "Esc left the rig changed"

    limits = gui.run(
        "bones = bpy.data.objects['Chain'].pose.bones\n"
        "result = {n: [list(bones[n]['rq_swing_limit']), list(bones[n]['rq_twist_limit'])]"
        " for n in ('UpperArm', 'Forearm')}"
    )
    shown = [before, *during]
    for step, (values, drag) in enumerate(zip(written, drags, strict=True), start=1):
        assert changed(shown[step]["rig"], shown[step - 1]["rig"]) > MOVED, steps[step - 1]
        # The tail is where the solver put it, at the mouse when the chain reaches it.
        left = np.linalg.norm(np.subtract(drag["tail"], drag["target"]))
        assert left == pytest.approx(drag["distance"], abs=1e-4 * drag["length"])
        assert drag["distance"] <= 1e-4 * drag["length"], drag
        for name, ((a, b), (low, high)) in limits.items():
            x, z, t = values[name]
            assert (x / a) ** 2 + (z / b) ** 2 <= 1.0 + 1e-6, (name, values[name])
            assert low - 1e-6 <= t <= high + 1e-6, (name, values[name])
    # Each step's screen is the pose written at that step, drawn from Python.
    for step, values in enumerate(written, start=1):
        gui.run(f"values = {values!r}\n" + SET_VALUES)
        reference = grab(gui, f"autoik-reference{step}", boxes)
        assert changed(during[step - 1]["rig"], reference["rig"]) <= SAME, steps[step - 1]
    assert_no_python_error(gui, since)


def test_enter_keeps_the_pose_auto_keys_it_and_one_undo_takes_it_back(gui, auto_ik):
    since = len(gui.log_text())
    gui.run(
        "bpy.context.scene.tool_settings.use_keyframe_insert_auto = True\n"
        "gui_scenes.undo_push('before Auto IK')\n"
    )
    mouse = start_grab(gui)
    state = gui.run(f"result = {GRABBING}")
    gui.xdotool("mousemove", str(mouse[0] + 60), str(mouse[1] + 70))
    state = wait_for_change(gui, GRABBING, state)
    gui.xdotool("key", "Return")
    assert wait_for_change(gui, GRABBING, state) is None
    kept = gui.run(f"result = {VALUES}")
    assert all(kept[n] != auto_ik[n] for n in kept)
    keyed = gui.run(
        "result = sorted([fc.data_path, fc.array_index] for fc in"
        " gui_scenes.action_fcurves(bpy.data.objects['Chain']))"
    )
    assert keyed == sorted(
        [['pose.bones["Spine"]["rq_vector"]', i] for i in range(3)]
        + [[f'pose.bones["{n}"]["rq_swing"]', i] for n in ("UpperArm", "Forearm") for i in (0, 1)]
        + [[f'pose.bones["{n}"]["rq_twist"]', 0] for n in ("UpperArm", "Forearm")]
    )
    gui.xdotool("key", "ctrl+z")
    assert wait_for_change(gui, VALUES, kept) == auto_ik
    assert_no_python_error(gui, since)


def test_without_auto_ik_g_is_blenders_translate(gui, auto_ik):
    gui.run("bpy.data.objects['Chain'].pose.use_auto_ik = False")
    modal = "[o.bl_idname for o in bpy.context.window_manager.windows[0].modal_operators]"
    x, top, _, height = gui.run(
        "view = gui_scenes.area('VIEW_3D')\n"
        "result = gui_scenes.window_box(next(r for r in view.regions if r.type == 'WINDOW'))"
    )
    gui.xdotool("mousemove", str(x + 120), str(top + height // 3), "sleep", "0.3", "key", "g")
    running = wait_for_change(gui, modal, [])
    assert running == ["TRANSFORM_OT_translate"], running
    gui.xdotool("key", "Escape")
    assert wait_for_change(gui, modal, running) == []
    assert gui.run(f"result = {VALUES}") == auto_ik


def test_page_down_and_up_shorten_and_lengthen_the_chain(gui, auto_ik):
    mouse = start_grab(gui)
    state = gui.run(f"result = {GRABBING}")
    assert state[1] == 3  # Forearm, UpperArm and Spine: up to the root
    gui.xdotool("key", "Page_Down")
    state = wait_for_change(gui, GRABBING, state)
    assert state[1] == 2
    gui.xdotool("mousemove", str(mouse[0] + 50), str(mouse[1] + 60))
    state = wait_for_change(gui, GRABBING, state)
    values = gui.run(f"result = {VALUES}")
    assert values["Spine"] == auto_ik["Spine"]  # out of the chain: as it was
    assert values["UpperArm"] != auto_ik["UpperArm"] and values["Forearm"] != auto_ik["Forearm"]
    gui.xdotool("key", "Page_Down")  # one bone: the Forearm alone
    state = wait_for_change(gui, GRABBING, state)
    assert state[1] == 1
    values = gui.run(f"result = {VALUES}")
    assert values["UpperArm"] == auto_ik["UpperArm"]
    gui.xdotool("key", "Page_Up", "key", "Page_Up", "key", "Page_Up")  # no longer than 3
    while state[1] != 3:  # each key press is one change (wait_for_change times out else)
        state = wait_for_change(gui, GRABBING, state)
    gui.xdotool("key", "Escape")
    assert wait_for_change(gui, GRABBING, state) is None
    assert gui.run(f"result = {VALUES}") == auto_ik


def test_reach_with_ik_is_one_undo_step(gui, auto_ik):
    gui.run("gui_scenes.undo_push('before Reach with IK')")
    target = gui.run(
        "obj = bpy.data.objects['Chain']\n"
        "result = list(obj.matrix_world @ obj.pose.bones['Forearm'].tail)"
    )
    target = [target[0] + 0.3, target[1] - 0.2, target[2] - 0.4]
    assert gui.run(f"result = gui_scenes.run_with_undo('rq_ik_reach', target={target!r})") == (
        "FINISHED"
    )
    after = gui.run(f"result = {VALUES}")
    assert after != auto_ik
    gui.run("gui_scenes.undo()")
    assert gui.run(f"result = {VALUES}") == auto_ik
    gui.run("gui_scenes.redo()")
    assert gui.run(f"result = {VALUES}") == after


def test_a_chain_length_where_nothing_turns_is_refused_and_the_drag_goes_on(gui, auto_ik):
    limits = gui.run(
        "pb = bpy.data.objects['Chain'].pose.bones['Forearm']\n"
        "result = [list(pb['rq_swing_limit']), list(pb['rq_twist_limit'])]\n"
        "pb['rq_swing_limit'] = [0.0, 0.0]\npb['rq_twist_limit'] = [0.1, 0.1]\n"
        "pb.id_data.update_tag()\nbpy.context.view_layer.update()\n"
    )
    try:
        mouse = start_grab(gui)
        state = gui.run(f"result = {GRABBING}")
        gui.xdotool("key", "Page_Down")
        state = wait_for_change(gui, GRABBING, state)
        assert state[1] == 2
        gui.xdotool("key", "Page_Down")  # the Forearm alone cannot turn: the length stays
        gui.xdotool("mousemove", str(mouse[0] + 40), str(mouse[1] + 50))
        state = wait_for_change(gui, GRABBING, state)
        assert state[1] == 2  # (events come in order: the key was handled before the move)
        gui.xdotool("key", "Escape")
        assert wait_for_change(gui, GRABBING, state) is None
    finally:
        gui.run(
            "pb = bpy.data.objects['Chain'].pose.bones['Forearm']\n"
            f"pb['rq_swing_limit'], pb['rq_twist_limit'] = {limits!r}\n"
            "pb.id_data.update_tag()\n"
        )


def test_g_bends_a_straight_chain_toward_its_root(gui, auto_ik):
    """The Chain straight (every parameter 0: its bones in one line up Z), seen from the front
    (orthographic), and the mouse moved straight down: the target on the chain's line,
    nearer than its length. That is a saddle of the reach (every first-order move is across
    the line), where the solver used to stop without moving: the drag did nothing. The chain
    bends live and its tail is at the target."""
    since = len(gui.log_text())
    straight = {"Spine": [0.0, 0.0, 0.0], "UpperArm": [0.0, 0.0, 0.0], "Forearm": [0.0, 0.0, 0.0]}
    gui.run(
        f"values = {straight!r}\n"
        + SET_VALUES
        + "import math\nfrom mathutils import Euler, Vector\n"
        "view = gui_scenes.area('VIEW_3D').spaces.active.region_3d\n"
        "view.view_perspective = 'ORTHO'\n"
        "view.view_rotation = Euler((math.pi / 2, 0.0, 0.0)).to_quaternion()\n"
        "view.view_location = Vector((0.0, 0.0, 1.7))\nview.view_distance = 5.5\n"
        "gui_scenes.redraw()\n"
    )
    boxes = {"rig": gui.run("result = gui_scenes.bones_box('Chain', margin=200)")}
    before = grab(gui, "autoik-straight-before", boxes)
    mouse = start_grab(gui)
    state = gui.run(f"result = {GRABBING}")
    gui.xdotool("mousemove", str(mouse[0]), str(mouse[1] + 90))
    state = wait_for_change(gui, GRABBING, state)
    during = grab(gui, "autoik-straight-during", boxes)
    drag = gui.run(DRAG)
    bent = gui.run(f"result = {VALUES}")
    gui.xdotool("key", "Escape")
    assert wait_for_change(gui, GRABBING, state) is None
    assert gui.run(f"result = {VALUES}") == straight
    x, y, z = drag["target"]
    assert abs(x) < 1e-4 and abs(y) < 1e-4 and 0.5 < z < 3.3, drag  # on the line, nearer
    assert drag["distance"] <= 1e-4 * drag["length"], drag
    assert bent != straight
    assert changed(during["rig"], before["rig"]) > MOVED, "the straight chain did not move"
    assert_no_python_error(gui, since)
