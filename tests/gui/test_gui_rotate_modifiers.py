# SPDX-License-Identifier: GPL-3.0-or-later
"""Ctrl snapping and Shift precision in ``pose.rq_rotate``, with real keys held (xdotool
``keydown``) while the mouse moves, as in Blender's own rotate:

- Ctrl snaps the mouse's angle to ``snap_angle_increment_3d`` (Shift+Ctrl: to the precision
  increment); with the scene's rotation snapping on, Ctrl turns snapping off instead;
- Shift turns the bone 10x slower for the same mouse motion, from where it was pressed.

The mouse moves on a circle about the operator's pivot (the bone's joint on screen), so a
sweep of N degrees on screen turns the bone N degrees (about global Z here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_gui import assert_no_python_error, wait_for_change

INCREMENT, PRECISION = 15.0, 3.0  # degrees: not Blender's defaults (5, 1), so read from the scene
# The running pose.rq_rotate's state (None when none runs), in one expression.
OPERATOR = (
    "next(({'angle': op.angle, 'ctrl': op.snap_invert, 'shift': op.precise,"
    " 'mode': op.mode, 'axis': op.axis, 'pivot': list(op.pivot), 'mouse': list(op.mouse)}"
    " for op in bpy.context.window_manager.windows[0].modal_operators"
    " if op.bl_idname in {'POSE_OT_rq_rotate', 'pose.rq_rotate'}), None)"
)
SNAP_SETTINGS = (
    "use_snap",
    "use_snap_rotate",
    "snap_elements",
    "snap_angle_increment_3d",
    "snap_angle_increment_3d_precision",
)


@pytest.fixture(scope="module")
def spine(gui):
    """The test rig's RQ ``Spine`` (the rig is built if no earlier module did), in Pose mode,
    framed as `gui_scenes.build_chain` frames it; the scene's increments set to INCREMENT and
    PRECISION. The snap settings are restored afterwards."""
    keep = gui.run(
        "from mathutils import Vector\n"
        "if 'Chain' not in bpy.data.objects:\n"
        "    gui_scenes.build_chain()\n"
        "bpy.data.objects['Chain'].hide_set(False)\n"
        "gui_scenes.activate('Chain')\n"
        "with gui_scenes.override('VIEW_3D'):\n"
        "    bpy.ops.wm.tool_set_by_id(name='builtin.select_box')\n"
        "gui_scenes.frame_view(Vector((0.0, 0.0, 1.7)), 5.5)\n"
        "ts = bpy.context.scene.tool_settings\n"
        f"result = {{name: getattr(ts, name) for name in {SNAP_SETTINGS!r}}}\n"
        "result['snap_elements'] = sorted(result['snap_elements'])\n"
        f"ts.snap_angle_increment_3d = {math.radians(INCREMENT)!r}\n"
        f"ts.snap_angle_increment_3d_precision = {math.radians(PRECISION)!r}\n"
    )
    yield "Spine"
    gui.run(
        "ts = bpy.context.scene.tool_settings\n"
        f"for name, value in {keep!r}.items():\n"
        "    setattr(ts, name, set(value) if name == 'snap_elements' else value)\n"
    )


def reset(gui, snapping: bool = False) -> None:
    """Spine back to its pose; the scene's rotation snapping on or off."""
    gui.run(
        "pb = bpy.data.objects['Chain'].pose.bones['Spine']\n"
        "pb['rq_vector'] = [0.35, 0.2, 0.6]\npb.id_data.update_tag()\n"
        "ts = bpy.context.scene.tool_settings\n"
        f"ts.use_snap = ts.use_snap_rotate = {snapping!r}\n"
        "ts.snap_elements = {'INCREMENT'}\n"
        "gui_scenes.select(bpy.data.objects['Chain'], ['Spine'], active='Spine')\n"
        "gui_scenes.redraw()\n"
    )


def parameter_quat(gui) -> np.ndarray:
    return np.array(gui.run("result = gui_scenes.bone_state('Spine')['parameter_quat']"))


def turned(q_before: np.ndarray, q_after: np.ndarray) -> float:
    """The angle (radians, 0..pi) of the rotation between two poses given as quaternions."""
    return 2.0 * math.acos(min(1.0, abs(float(np.dot(q_before, q_after)))))


class Circle:
    """Screen points on a circle about the running operator's pivot (X screen coordinates,
    y down), ``radius`` pixels out; angles in degrees, measured on screen."""

    def __init__(self, gui, operator: dict, radius: float = 150.0):
        x, top, _, height = gui.run(
            "view = gui_scenes.area('VIEW_3D')\n"
            "result = gui_scenes.window_box(next(r for r in view.regions"
            " if r.type == 'WINDOW'))"
        )
        self.centre = (x + operator["pivot"][0], top + height - operator["pivot"][1])
        self.radius = radius

    def point(self, degrees: float) -> tuple[str, str]:
        t = math.radians(degrees)
        return (
            str(round(self.centre[0] + self.radius * math.cos(t))),
            str(round(self.centre[1] + self.radius * math.sin(t))),
        )


def start_on_circle(gui, start_degrees: float) -> tuple[Circle, dict]:
    """Press R with the mouse on the circle at ``start_degrees`` about Spine's joint, then Z
    (global Z: the mouse's turn on screen is the bone's turn). Returns the circle and the
    operator's state."""
    # Where the pivot is: press R once anywhere in the view, read it, cancel.
    box = gui.run("result = gui_scenes.window_box(gui_scenes.area('VIEW_3D'))")
    gui.xdotool(
        "mousemove",
        str(box[0] + box[2] // 2),
        str(box[1] + box[3] // 3),
        "sleep",
        "0.2",
        "key",
        "r",
    )
    operator = wait_for_change(gui, OPERATOR, None)
    circle = Circle(gui, operator)
    gui.xdotool("key", "Escape")
    wait_for_change(gui, OPERATOR, operator)
    gui.xdotool("mousemove", *circle.point(start_degrees), "sleep", "0.2", "key", "r")
    operator = wait_for_change(gui, OPERATOR, None)
    gui.xdotool("key", "z")
    operator = wait_for_change(gui, OPERATOR, operator)
    assert (operator["mode"], operator["axis"]) == ("GLOBAL", "Z")
    assert operator["angle"] == 0.0
    return circle, operator


def move(gui, circle: Circle, degrees: float, operator: dict) -> dict:
    gui.xdotool("mousemove", *circle.point(degrees))
    return wait_for_change(gui, OPERATOR, operator)


def press(gui, action: str, key: str, operator: dict) -> dict:
    """``keydown``/``keyup`` a modifier; returns the operator's state once it saw it."""
    gui.xdotool(action, key)
    return wait_for_change(gui, OPERATOR, operator)


def confirm(gui, operator: dict) -> dict:
    """Enter; returns Spine's state once the rotation ended and the pose was evaluated."""
    gui.xdotool("key", "Return")
    assert wait_for_change(gui, OPERATOR, operator) is None
    return gui.run(
        "bpy.context.view_layer.update()\ngui_scenes.redraw()\n"
        "result = gui_scenes.bone_state('Spine')"
    )


def global_z_turn(before: dict, after: dict) -> float:
    """The turn (radians) about world Z between two states of the root bone Spine."""
    turn = np.array(after["matrix"]) @ np.array(before["matrix"]).T
    np.testing.assert_allclose(turn[2], [0.0, 0.0, 1.0], atol=1e-5)
    return math.atan2(turn[1, 0], turn[0, 0])


def off_multiple(angle: float, increment_degrees: float) -> float:
    """How far (radians) ``angle`` is from the nearest multiple of the increment."""
    step = math.radians(increment_degrees)
    return abs(angle - round(angle / step) * step)


def test_ctrl_snaps_to_the_increment_and_shift_ctrl_to_the_precision_increment(gui, spine):
    since = len(gui.log_text())
    reset(gui)
    before = gui.run("result = gui_scenes.bone_state('Spine')")
    q0 = np.array(before["parameter_quat"])
    circle, operator = start_on_circle(gui, -150.0)
    held = []
    try:
        operator = move(gui, circle, -113.0, operator)  # 37 degrees on screen
        free = abs(operator["angle"])
        assert abs(math.degrees(free) - 37.0) < 1.0, math.degrees(free)
        assert turned(q0, parameter_quat(gui)) == pytest.approx(free, abs=1e-5)
        held.append("ctrl")
        operator = press(gui, "keydown", "ctrl", operator)
        assert operator["ctrl"] and abs(operator["angle"]) == pytest.approx(free, abs=1e-12)
        # Snapped at once, before the mouse moves: 37 degrees -> 30 (increment 15).
        snapped = turned(q0, parameter_quat(gui))
        assert snapped == pytest.approx(math.radians(30.0), abs=1e-4)
        gui.screenshot("posing-ctrl-snap")
        held.append("shift")
        operator = press(gui, "keydown", "shift", operator)
        assert operator["shift"]
        # Shift+Ctrl: the precision increment, 37 degrees -> 36 (precision 3).
        assert turned(q0, parameter_quat(gui)) == pytest.approx(math.radians(36.0), abs=1e-4)
        gui.xdotool("keyup", "shift")
        held.remove("shift")
        operator = wait_for_change(gui, OPERATOR, operator)
        operator = move(gui, circle, -95.0, operator)  # 55 degrees -> 60
        after = confirm(gui, operator)
    finally:
        if held:
            gui.xdotool("keyup", *held)
    angle = global_z_turn(before, after)
    assert off_multiple(angle, INCREMENT) < 1e-4, math.degrees(angle)
    assert abs(math.degrees(angle)) == pytest.approx(60.0, abs=1e-3)
    assert turned(q0, np.array(after["parameter_quat"])) == pytest.approx(abs(angle), abs=1e-5)
    assert_no_python_error(gui, since)


def test_scene_snapping_snaps_without_ctrl_and_ctrl_turns_it_off(gui, spine):
    since = len(gui.log_text())
    reset(gui, snapping=True)
    try:
        before = gui.run("result = gui_scenes.bone_state('Spine')")
        q0 = np.array(before["parameter_quat"])
        circle, operator = start_on_circle(gui, -150.0)
        operator = move(gui, circle, -113.0, operator)
        free = abs(operator["angle"])
        assert turned(q0, parameter_quat(gui)) == pytest.approx(math.radians(30.0), abs=1e-4)
        try:
            operator = press(gui, "keydown", "ctrl", operator)
            assert turned(q0, parameter_quat(gui)) == pytest.approx(free, abs=1e-5)
            after = confirm(gui, operator)
        finally:
            gui.xdotool("keyup", "ctrl")
        angle = global_z_turn(before, after)
        assert abs(angle) == pytest.approx(free, abs=1e-5)
        assert off_multiple(angle, INCREMENT) > math.radians(1.0)
    finally:
        reset(gui)
    assert_no_python_error(gui, since)


def test_shift_turns_ten_times_slower_from_where_it_was_pressed(gui, spine):
    since = len(gui.log_text())
    reset(gui)
    q0 = parameter_quat(gui)
    circle, operator = start_on_circle(gui, -160.0)
    sweep, angles, turns = 30.0, [0.0], [0.0]
    held = []
    try:
        for k, key in enumerate((None, "keydown", "keyup"), start=1):
            if key is not None:
                if key == "keydown":
                    held.append("shift")
                operator = press(gui, key, "shift", operator)
                if key == "keyup":
                    held.remove("shift")
                assert operator["shift"] == (key == "keydown")
                assert abs(operator["angle"]) == angles[-1]  # Shift alone turns nothing
            # The same mouse motion each time: ``sweep`` degrees further on the circle.
            operator = move(gui, circle, -160.0 + k * sweep, operator)
            angles.append(abs(operator["angle"]))
            turns.append(turned(q0, parameter_quat(gui)))
        gui.xdotool("key", "Escape")
        assert wait_for_change(gui, OPERATOR, operator) is None
    finally:
        if held:
            gui.xdotool("keyup", *held)
    steps, bone_steps = np.diff(angles), np.diff(turns)
    free, precise, again = steps
    assert math.degrees(free) == pytest.approx(sweep, abs=1.0)
    assert precise / free == pytest.approx(0.1, abs=0.01), np.degrees(steps)
    assert again / free == pytest.approx(1.0, abs=0.05), np.degrees(steps)
    np.testing.assert_allclose(bone_steps, steps, atol=1e-5)  # the bone turns as the angle
    # Cancelled: exactly the pose before.
    np.testing.assert_allclose(parameter_quat(gui), q0, atol=1e-12)
    assert_no_python_error(gui, since)
