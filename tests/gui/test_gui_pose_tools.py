# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's everyday pose keys on RQ and swing/twist bones, pressed for real (xdotool) over
the 3D View of a symmetric rig (`gui_scenes.build_symmetric`): Alt+R, I, Ctrl+C and
Ctrl+Shift+V, and R with X-Axis Mirror. Native bones selected alongside get Blender's own
behaviour in the same key press."""

from __future__ import annotations

import numpy as np
import pytest
from test_gui import assert_no_python_error, wait_for_change

STATE = "gui_scenes.symmetric_state()"
P = np.diag([-1.0, 1.0, 1.0])


@pytest.fixture(scope="module")
def rig(gui):
    gui.run("gui_scenes.build_symmetric()")
    yield
    gui.run("gui_scenes.remove_symmetric()")


@pytest.fixture
def posed(gui, rig):
    """The rig posed afresh; the mouse over the 3D View; the keying preferences restored."""
    keep = gui.run(
        "gui_scenes.pose_symmetric()\n"
        "result = sorted(bpy.context.preferences.edit.key_insert_channels)"
    )
    box = gui.run("result = gui_scenes.window_box(gui_scenes.area('VIEW_3D'))")
    gui.xdotool("mousemove", str(box[0] + box[2] // 3), str(box[1] + box[3] // 3))
    since = len(gui.log_text())
    yield box
    gui.run(f"bpy.context.preferences.edit.key_insert_channels = set({keep!r})")
    assert_no_python_error(gui, since)


def select(gui, *names: str) -> dict:
    return gui.run(
        f"gui_scenes.select(bpy.data.objects[gui_scenes.SYMMETRIC], {list(names)!r},"
        f" active={names[0]!r})\ngui_scenes.redraw()\nresult = {STATE}"
    )


def press(gui, state: dict, key: str) -> dict:
    """Press ``key`` (xdotool's name) over the 3D View; the rig's state once it changed."""
    gui.xdotool("key", key)
    return wait_for_change(gui, STATE, state)


def test_alt_r_clears_addon_and_native_bones_in_one_undo_step(gui, posed):
    gui.run(
        "gui_scenes.pose_symmetric()\n"
        "pb = bpy.data.objects[gui_scenes.SYMMETRIC].pose.bones['Leg.L']\n"
        "pb['rq_twist_limit'] = [0.1, 0.6]"
    )  # 0 is outside: the rest twist is 0.1
    before = select(gui, "Arm.L", "Leg.L", "Spine")
    gui.run("gui_scenes.undo_push('before Alt+R')")
    after = press(gui, before, "alt+r")
    bones = after["bones"]
    assert bones["Arm.L"]["rq_vector"] == [0.0, 0.0, 0.0]
    assert bones["Leg.L"]["rq_swing"] == [0.0, 0.0]
    assert bones["Leg.L"]["rq_twist"] == pytest.approx(0.1)
    assert bones["Spine"]["quaternion"] == [1.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(bones["Arm.L"]["basis"], np.eye(3), atol=1e-6)
    assert bones["Arm.R"] == before["bones"]["Arm.R"]  # not selected
    undone = press(gui, after, "ctrl+z")  # one step back gives every bone back
    for name in ("Arm.L", "Leg.L", "Spine"):
        for key, value in before["bones"][name].items():
            np.testing.assert_allclose(undone["bones"][name][key], value, atol=1e-6)


def test_i_keys_the_parameters_where_rotation_is_keyed(gui, posed):
    gui.run("bpy.context.preferences.edit.key_insert_channels = {'ROTATION'}")
    before = select(gui, "Arm.L", "Leg.L", "Spine")
    after = press(gui, before, "i")
    assert after["fcurves"] == sorted(
        [['pose.bones["Arm.L"]["rq_vector"]', i, "Arm.L"] for i in range(3)]
        + [['pose.bones["Leg.L"]["rq_swing"]', i, "Leg.L"] for i in range(2)]
        + [['pose.bones["Leg.L"]["rq_twist"]', 0, "Leg.L"]]
        + [['pose.bones["Spine"].rotation_quaternion', i, "Spine"] for i in range(4)]
    )


def test_i_keeps_native_location_keying(gui, posed):
    gui.run("bpy.context.preferences.edit.key_insert_channels = {'LOCATION'}")
    before = select(gui, "Arm.L", "Spine")
    after = press(gui, before, "i")
    assert after["fcurves"] == sorted(
        [
            [f'pose.bones["{name}"].location', i, name]
            for name in ("Arm.L", "Spine")
            for i in range(3)
        ]
    )


def test_copy_and_paste_flipped_mirror_the_parameters(gui, posed):
    before = select(gui, "Arm.L", "Leg.L")
    gui.xdotool("key", "ctrl+c")
    gui.run("import time\ntime.sleep(0.5)")  # copying changes nothing to wait for
    after = press(gui, before, "ctrl+shift+v")
    bones = after["bones"]
    assert bones["Arm.R"]["rq_vector"] == pytest.approx([0.3, -0.5, 0.4])
    assert bones["Leg.R"]["rq_swing"] == pytest.approx([0.4, 0.2])
    assert bones["Leg.R"]["rq_twist"] == pytest.approx(-0.3)
    for side in ("Arm", "Leg"):
        np.testing.assert_allclose(
            bones[f"{side}.R"]["basis"], P @ np.array(bones[f"{side}.L"]["basis"]) @ P, atol=1e-5
        )


def test_r_with_x_axis_mirror_moves_the_mirror_bone_live_and_esc_restores(gui, posed):
    gui.run("bpy.data.objects[gui_scenes.SYMMETRIC].pose.use_mirror_x = True")
    before = select(gui, "Arm.L")
    x, y = posed[0] + posed[2] // 3, posed[1] + posed[3] // 3
    gui.xdotool("key", "r")
    wait_for_change(gui, "gui_scenes.rotating()", None)
    during = None
    for step in range(1, 6):  # a drag: the mirror bone follows every move
        gui.xdotool("mousemove", str(x + 15 * step), str(y - 10 * step))
        during = wait_for_change(gui, STATE, during or before)
        left, right = during["bones"]["Arm.L"], during["bones"]["Arm.R"]
        assert right["rq_vector"] == pytest.approx(
            [left["rq_vector"][0], -left["rq_vector"][1], -left["rq_vector"][2]], abs=1e-6
        )
    assert during["bones"]["Arm.L"]["rq_vector"] != before["bones"]["Arm.L"]["rq_vector"]
    np.testing.assert_allclose(
        during["bones"]["Arm.R"]["basis"],
        P @ np.array(during["bones"]["Arm.L"]["basis"]) @ P,
        atol=1e-5,
    )
    restored = press(gui, during, "Escape")
    for name in ("Arm.L", "Arm.R"):
        assert restored["bones"][name]["rq_vector"] == pytest.approx(
            before["bones"][name]["rq_vector"], abs=1e-7
        )


def test_clear_transform_menu_offers_the_rq_clears(gui, rig):
    entries = gui.run(
        "result = [f.__qualname__ for f in getattr(\n"
        "    bpy.types.VIEW3D_MT_pose_transform.draw, '_draw_funcs', [])]"
    )
    assert "draw_clear_transform_menu" in entries
