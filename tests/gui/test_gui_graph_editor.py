# SPDX-License-Identifier: GPL-3.0-or-later
"""The key tools in a real Graph Editor (headless Blender has no areas): they act on the
selected channels there, not on the selected bones, and the operator search (F3) finds them.

The rig (`gui_scenes.build_graph_rig`) has every bone selected and every bone keyed with
2 pi jumps, so an operator that acted on the bones instead of the channels, or on a channel
the editor hides, would change a curve the test expects bit for bit unchanged.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_gui import assert_no_python_error, wait_for_change

SPIN = [f"Spin:rq_vector:{i}" for i in range(3)]
LAST_OPERATOR = "gui_scenes.last_operator()"
POLL_MESSAGE = "Select the F-curves of RQ or swing/twist bones"


@pytest.fixture(scope="module")
def search_key(gui):
    """The xdotool key that opens the operator search: F3 from xdotool never reaches Blender 5.2
    under Xvfb, so `gui_scenes.bind_search_key` binds F3's operator to a test-only key for the
    module (removed afterwards). Only the key that opens the search is a stand-in."""
    assert gui.run("result = gui_scenes.bind_search_key()") == ["wm.search_menu"]
    yield gui.run("result = gui_scenes.SEARCH_KEY")
    gui.run("gui_scenes.unbind_search_key()")


@pytest.fixture(scope="module")
def graph(gui):
    """``GraphRig`` shown in a Graph Editor that replaces the 3D View for the module."""
    rig = gui.run("result = gui_scenes.build_graph_rig()")
    box = gui.run("result = gui_scenes.show_graph_editor()")
    yield box
    gui.run(f"gui_scenes.restore_view3d()\ngui_scenes.remove_graph_rig({rig['shown']!r})")


def curves(gui) -> dict:
    return gui.run("result = gui_scenes.graph_rig_curves()")


def key_values(state: dict, names: list[str]) -> np.ndarray:
    """The keys' values of the named curves, shape (keys, curves)."""
    return np.array([[key[0][1] for key in state[name]["keys"]] for name in names]).T


def assert_untouched(before: dict, after: dict, changed: list[str]) -> None:
    """Every curve but ``changed`` is bit for bit what it was (keys, handles, types)."""
    assert set(after) == set(before)
    for name in set(before) - set(changed):
        assert after[name]["keys"] == before[name]["keys"], name


def select_only(gui, channels: list[tuple[str, str]]) -> None:
    shown = gui.run(f"result = gui_scenes.select_channels({channels!r})")
    assert shown == sorted(
        f'pose.bones["{bone}"]["{prop}"][{i}]'
        for bone, prop in channels
        for i in range({"rq_vector": 3, "rq_swing": 2, "rq_twist": 1}[prop])
    )


def point_into(gui, box: list[int]) -> None:
    """Put the mouse over the Graph Editor's curves (its main region's middle)."""
    gui.xdotool("mousemove", str(box[0] + box[2] // 2), str(box[1] + box[3] // 2), "sleep", "0.3")


def run_from_key_menu(gui, box: list[int], steps_up: int) -> str:
    """Open the Graph Editor's Key menu under the mouse and choose an entry with the keyboard:
    Home (the first entry), then Up ``steps_up`` times (wrapping to the last entries, the
    add-on's), Return. Returns the operator that ran."""
    before = gui.run(f"result = {LAST_OPERATOR}")
    point_into(gui, box)
    opened = gui.run(
        "with gui_scenes.override('GRAPH_EDITOR'):\n"
        "    result = list(bpy.ops.wm.call_menu('INVOKE_DEFAULT',"
        " name='GRAPH_MT_key'))"
    )
    assert opened == ["INTERFACE"]
    gui.xdotool(
        "sleep", "0.5", "key", "Home", *(["sleep", "0.2", "key", "Up"] * steps_up), "sleep", "0.3"
    )
    gui.screenshot(f"graph-editor-key-menu-{steps_up}")
    gui.xdotool("key", "Return")
    return wait_for_change(gui, LAST_OPERATOR, before, timeout=60.0)[0]


def run_from_f3(gui, search_key: str, box: list[int], text: str, shot: str | None = None) -> str:
    """The operator search (F3's ``wm.search_menu``, opened with ``search_key``, see the
    `search_key` fixture) over ``box``, type ``text``, Return: the first result runs. Returns
    the operator that ran (Blender keeps only operators that finished in its history)."""
    before = gui.run(f"result = {LAST_OPERATOR}")
    point_into(gui, box)
    gui.xdotool("key", search_key, "sleep", "0.8", "type", "--delay", "40", text)
    gui.xdotool("sleep", "0.8")
    if shot is not None:
        gui.screenshot(shot)
    gui.xdotool("key", "Return")
    return wait_for_change(gui, LAST_OPERATOR, before, timeout=60.0)[0]


def test_poll_explains_a_graph_editor_without_add_on_channels(gui, graph):
    gui.run(
        "obj = bpy.data.objects['GraphRig']\n"
        "obj.keyframe_insert('location', frame=1)\n"
        "with gui_scenes.override('GRAPH_EDITOR'):\n"
        "    bpy.ops.anim.channels_select_all(action='DESELECT')\n"
    )
    nothing = gui.run(
        "result = [gui_scenes.graph_poll(n) for n in"
        " ('rq_continuity_filter', 'rq_spline_interpolate', 'rq_bake')]"
    )
    # Only a channel that is not the add-on's: the object's location.
    gui.run(
        "obj = bpy.data.objects['GraphRig']\n"
        "for c in gui_scenes.action_fcurves(obj):\n"
        "    c.select = c.data_path == 'location'\n"
    )
    location = gui.run("result = gui_scenes.graph_poll('rq_continuity_filter')")
    gui.run(
        "obj = bpy.data.objects['GraphRig']\n"
        "fcurves = gui_scenes.action_fcurves(obj)\n"
        "for c in [c for c in fcurves if c.data_path == 'location']:\n"
        "    fcurves.remove(c)\n"
    )
    for state in [*nothing, location]:
        assert not state["poll"], state
        assert POLL_MESSAGE in state["message"], state
    # With one of them selected, it polls.
    select_only(gui, [("Spin", "rq_vector")])
    assert gui.run("result = gui_scenes.graph_poll('rq_continuity_filter')")["poll"]


def test_continuity_filter_from_the_key_menu_changes_only_the_selected_channels(gui, graph):
    since = len(gui.log_text())
    select_only(gui, [("Spin", "rq_vector")])
    before = curves(gui)
    frames = [key[0][0] for key in before[SPIN[0]]["keys"]]
    poses = np.array(gui.run(f"result = gui_scenes.graph_rig_poses({frames!r})"))
    # The Key menu's entries are its last two: Up twice from the first is the filter.
    assert run_from_key_menu(gui, graph, steps_up=2) == "POSE_OT_rq_continuity_filter"
    after = curves(gui)
    assert_untouched(before, after, SPIN)
    old, new = key_values(before, SPIN), key_values(after, SPIN)
    assert np.max(np.linalg.norm(np.diff(old, axis=0), axis=1)) > np.pi  # jumps before
    assert np.max(np.linalg.norm(np.diff(new, axis=0), axis=1)) < np.pi  # none after
    assert np.any(new != old)
    # Same poses at the keys (32-bit matrices).
    np.testing.assert_allclose(
        gui.run(f"result = gui_scenes.graph_rig_poses({frames!r})"), poses, atol=2e-6
    )
    assert_no_python_error(gui, since)


def test_spline_interpolation_from_f3_changes_only_the_selected_channels(gui, graph, search_key):
    since = len(gui.log_text())
    select_only(gui, [("Spin", "rq_vector")])
    before = curves(gui)
    ran = run_from_f3(
        gui, search_key, graph, "RQ Spline Interpolation", shot="graph-editor-f3-spline"
    )
    assert ran == "POSE_OT_rq_spline_interpolate"
    after = curves(gui)
    assert_untouched(before, after, SPIN)
    assert any(after[name]["keys"] != before[name]["keys"] for name in SPIN)
    # Catmull-Rom (the default) passes through the keys: every old key is still there.
    for name in SPIN:
        new = {round(key[0][0], 4): key[0][1] for key in after[name]["keys"]}
        for key in before[name]["keys"]:
            assert new[round(key[0][0], 4)] == pytest.approx(key[0][1], abs=1e-6)
    gui.run(
        "editor = gui_scenes.area('GRAPH_EDITOR')\n"
        "editor.spaces.active.show_region_ui = False\n"
        "gui_scenes.redraw_all()\n"
        "with gui_scenes.override('GRAPH_EDITOR'):\n"
        "    bpy.ops.graph.view_selected()\n"
        "gui_scenes.redraw_all()\n"
    )
    shot = gui.screenshot("graph-editor-spline", graph)
    assert shot.stat().st_size > 20_000  # build/gui/; the README's copy is made by hand
    assert_no_python_error(gui, since)


def test_continuity_filter_from_f3_on_a_swing_twist_channel(gui, graph, search_key):
    """Only the twist curve of the swing/twist bone is selected: only it changes."""
    select_only(gui, [("Arm", "rq_twist")])
    before = curves(gui)
    ran = run_from_f3(gui, search_key, graph, "RQ Continuity Filter")
    assert ran == "POSE_OT_rq_continuity_filter"
    after = curves(gui)
    assert_untouched(before, after, ["Arm:rq_twist:0"])
    twist = key_values(after, ["Arm:rq_twist:0"])[:, 0]
    assert np.all(np.abs(np.diff(twist)) < np.pi) and np.any(
        twist != key_values(before, ["Arm:rq_twist:0"])[:, 0]
    )


def test_selected_channels_the_editor_hides_are_left_alone(gui, graph):
    """A curve stays selected while "Only Show Selected" hides it (its bone deselected):
    Blender's own tools skip it, and so do the add-on's."""
    select_only(gui, [("Spin", "rq_vector")])
    gui.run(
        "obj = bpy.data.objects['GraphRig']\n"
        "gui_scenes.select(obj, ['Spin', 'Arm', 'Loose'], active='Spin')\n"
        "for c in gui_scenes.action_fcurves(obj):\n"
        "    if '\"Steady\"' in c.data_path:\n"
        "        c.select = True\n"
        "gui_scenes.redraw_all()\n"
    )
    before = curves(gui)
    assert all(before[f"Steady:rq_vector:{i}"]["select"] for i in range(3))
    try:
        for operator in ("rq_continuity_filter", "rq_spline_interpolate"):
            result = gui.run(
                "with gui_scenes.override('GRAPH_EDITOR'):\n"
                f"    result = list(bpy.ops.pose.{operator}())"
            )
            assert result == ["FINISHED"], operator
        after = curves(gui)
        steady = [f"Steady:rq_vector:{i}" for i in range(3)]
        for name in steady:
            assert after[name]["keys"] == before[name]["keys"], name
    finally:
        gui.run(
            "obj = bpy.data.objects['GraphRig']\n"
            "gui_scenes.select(obj, ['Spin', 'Steady', 'Arm', 'Loose'], active='Spin')"
        )


def test_f3_finds_the_pose_menu_operators_in_the_3d_view(gui, graph, search_key):
    """The operator search (F3, on the `search_key` stand-in) over the 3D View finds the
    entries of Pose > RQ Rotation: typing an operator's label and Return runs it (checked on
    those that finish here)."""
    gui.run("gui_scenes.restore_view3d()")
    try:
        box = gui.run("result = gui_scenes.window_box(gui_scenes.area('VIEW_3D'))")
        gui.run("gui_scenes.select(bpy.data.objects['GraphRig'], ['Loose'], active='Loose')")
        assert (
            run_from_f3(gui, search_key, box, "Reparameterize RQ", shot="f3-reparameterize")
            == "POSE_OT_rq_reparameterize"
        )
        vector = gui.run(
            "result = list(bpy.data.objects['GraphRig'].pose.bones['Loose']['rq_vector'])"
        )
        np.testing.assert_allclose(vector, [0.0, 0.0, 5.0 - 2.0 * np.pi], atol=1e-6)
        gui.run("gui_scenes.select(bpy.data.objects['GraphRig'], ['Spin'], active='Spin')")
        assert (
            run_from_f3(gui, search_key, box, "Compare RQ Interpolation")
            == "POSE_OT_rq_compare_interpolation"
        )
        # Last: the bake turns the selected bone native.
        assert run_from_f3(gui, search_key, box, "Bake RQ Rotations") == "POSE_OT_rq_bake"
        assert (
            gui.run("result = bpy.data.objects['GraphRig'].pose.bones['Spin'].rotation_mode")
            == "QUATERNION"
        )
        # The rest of the add-on's operators are in the same menu (set_mode as a submenu).
        entries = gui.run(
            "import inspect\n"
            "menu = bpy.types.VIEW3D_MT_pose_rq_rotation\n"
            "from bl_ext.user_default.rq_rotations.panels import menus\n"
            "result = [list(menus.POSE_OPERATORS), 'rq_set_mode' in"
            " inspect.getsource(menu.draw)]"
        )
        assert set(entries[0]) >= {
            "pose.rq_rotate",
            "pose.rq_reparameterize",
            "pose.rq_continuity_filter",
            "pose.rq_spline_interpolate",
            "pose.rq_bake",
            "pose.rq_compare_interpolation",
        }
        assert entries[1]
    finally:
        time.sleep(0.2)
        gui.run("gui_scenes.show_graph_editor()")
