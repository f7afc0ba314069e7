# SPDX-License-Identifier: GPL-3.0-or-later
"""Scenes and views for the GUI tests; imported by snippets inside the running Blender."""

from __future__ import annotations

import math
import time
from typing import Any

import bpy
from mathutils import Euler, Vector


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


def action_fcurves(obj: Any, action: Any = None) -> Any:
    """The F-curves ``obj`` animates with ``action`` (default: its active action), as the
    collection itself (iterate, ``find``, ``remove``), on any Blender version.

    Up to 4.3 they are ``action.fcurves``. From 4.4 actions are *slotted*: the F-curves live in
    the channelbag of the object's slot (``animation_data.action_slot``) in a keyframe strip of
    a layer, ``action.layers[i].strips[j].channelbag(slot)``; 5.0 removed ``action.fcurves``.
    Empty when there is no action, or it holds nothing for the object's slot.
    """
    data = obj.animation_data
    if action is None:
        action = data.action if data is not None else None
    if action is None:
        return ()
    if not hasattr(action, "layers"):
        return action.fcurves
    slot = data.action_slot if data is not None else None
    if slot is None:
        return ()
    for layer in action.layers:
        for strip in layer.strips:
            channelbag = strip.channelbag(slot)
            if channelbag is not None:
                return channelbag.fcurves
    return ()


# A three-bone chain: an RQ spine, and a swing/twist upper arm and forearm with limits.
CHAIN = (
    # name, head, tail, parent, mode
    ("Spine", (0.0, 0.0, 0.0), (0.0, 0.0, 1.2), None, "RQ"),
    ("UpperArm", (0.0, 0.0, 1.2), (0.0, 0.0, 2.4), "Spine", "SWING_TWIST"),
    ("Forearm", (0.0, 0.0, 2.4), (0.0, 0.0, 3.4), "UpperArm", "SWING_TWIST"),
)


def _armature(name: str, bones: list[tuple[str, tuple, tuple, str | None]]) -> Any:
    """A new armature object in Pose mode, made active, from ``(name, head, tail, parent)``."""
    with override("VIEW_3D"):
        if bpy.context.object is not None and bpy.context.object.mode != 'OBJECT':
            bpy.ops.object.mode_set(mode='OBJECT')
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    view_layer = bpy.context.view_layer
    view_layer.objects.active = obj
    for other in view_layer.objects:
        other.select_set(other == obj)
    with override("VIEW_3D"):
        bpy.ops.object.mode_set(mode='EDIT')
        for bone_name, head, tail, parent in bones:
            edit_bone = data.edit_bones.new(bone_name)
            edit_bone.head, edit_bone.tail = head, tail
            if parent is not None:
                edit_bone.parent = data.edit_bones[parent]
                edit_bone.use_connect = True
        bpy.ops.object.mode_set(mode='POSE')
    return obj


def select(obj: Any, names: list[str], active: str | None = None) -> None:
    """Select exactly the named pose bones (and make ``active`` the active bone)."""
    for pose_bone in obj.pose.bones:
        selected = pose_bone.name in names
        if bpy.app.version >= (5, 0, 0):
            pose_bone.select = selected
        else:
            pose_bone.bone.select = selected
    if active is not None:
        obj.data.bones.active = obj.data.bones[active]


def set_mode(obj: Any, names: list[str], mode: str) -> None:
    """Switch bones with the add-on's own operator, as the panel's menu does."""
    select(obj, names)
    with override("VIEW_3D"):
        result = bpy.ops.pose.rq_set_mode(mode=mode)
    if result != {'FINISHED'}:
        raise RuntimeError(f"pose.rq_set_mode({mode}) returned {result}")


def build_chain() -> dict[str, Any]:
    """The test rig ``Chain``: RQ and swing/twist bones, posed, limits set, in Pose mode."""
    for startup_object in list(bpy.data.objects):
        if startup_object.type == 'MESH':  # the default cube hides the rig
            bpy.data.objects.remove(startup_object)
    obj = _armature("Chain", [row[:4] for row in CHAIN])
    for mode in ("RQ", "SWING_TWIST"):
        set_mode(obj, [row[0] for row in CHAIN if row[4] == mode], mode)
    pose_chain(obj)
    select(obj, ["UpperArm"], active="UpperArm")
    frame_view(Vector((0.0, 0.0, 1.7)), 5.5)
    return {"bones": [pb.name for pb in obj.pose.bones]}


def pose_chain(obj: bpy.types.Object) -> None:
    """The Chain's pose and limits as `build_chain` makes them (tests that need them exactly
    call this: earlier tests may have changed them)."""
    bones = obj.pose.bones
    bones["Spine"]["rq_vector"] = [0.35, 0.2, 0.6]
    bones["UpperArm"]["rq_swing_limit"] = [math.radians(40), math.radians(70)]
    bones["UpperArm"]["rq_twist_limit"] = [math.radians(-30), math.radians(45)]
    bones["UpperArm"]["rq_swing"] = [math.radians(25), math.radians(-30)]
    bones["UpperArm"]["rq_twist"] = math.radians(20)
    bones["Forearm"]["rq_swing_limit"] = [math.radians(60), math.radians(10)]
    bones["Forearm"]["rq_twist_limit"] = [math.radians(-20), math.radians(20)]
    bones["Forearm"]["rq_swing"] = [math.radians(75), 0.0]
    bones["Forearm"]["rq_twist"] = math.radians(-20)
    obj.update_tag()


def build_crowd(count: int = 50) -> None:
    """``count`` swing/twist bones in a grid (the overlay's timing scene)."""
    side = math.ceil(math.sqrt(count))
    layout = [
        (
            f"B{i:02d}",
            (1.2 * (i % side), 1.2 * (i // side), 0.0),
            (1.2 * (i % side), 1.2 * (i // side), 1.0),
            None,
        )
        for i in range(count)
    ]
    obj = _armature("Crowd", layout)
    set_mode(obj, [row[0] for row in layout], "SWING_TWIST")
    for i, pose_bone in enumerate(obj.pose.bones):
        pose_bone["rq_swing_limit"] = [0.4 + 0.01 * i, 0.8]
        pose_bone["rq_twist_limit"] = [-0.5, 0.5 + 0.01 * i]
        pose_bone["rq_swing"] = [0.2, 0.1 * (i % 5)]
    obj.update_tag()
    centre = 0.6 * (side - 1)
    frame_view(Vector((centre, centre, 0.5)), 2.2 * side)


def restore_chain() -> None:
    """Remove the crowd and go back to the chain, in Pose mode."""
    with override("VIEW_3D"):
        bpy.ops.object.mode_set(mode='OBJECT')
    bpy.data.objects.remove(bpy.data.objects["Crowd"])
    obj = bpy.data.objects["Chain"]
    obj.hide_set(False)
    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    with override("VIEW_3D"):
        bpy.ops.object.mode_set(mode='POSE')
    frame_view(Vector((0.0, 0.0, 1.7)), 5.5)


def frame_view(centre: Vector, distance: float) -> None:
    """Point the 3D View at ``centre`` from the front-right, above."""
    space = area("VIEW_3D").spaces.active
    view = space.region_3d
    view.view_perspective = 'PERSP'
    view.view_location = centre
    view.view_distance = distance
    view.view_rotation = Euler((math.radians(75), 0.0, math.radians(35))).to_quaternion()
    space.overlay.show_floor = True


def area_boxes() -> dict[str, list[int]]:
    """``window_box`` of every area, by type."""
    window = bpy.context.window_manager.windows[0]
    return {a.type: window_box(a) for a in window.screen.areas}


def show_bone_tab() -> list[int]:
    """Switch the Properties editor to the Bone tab; returns its box on screen."""
    properties = area("PROPERTIES")
    properties.spaces.active.context = 'BONE'
    return window_box(properties)


def show_sidebar() -> list[int]:
    """Open the 3D View's sidebar; returns the sidebar region's box on screen."""
    view = area("VIEW_3D")
    view.spaces.active.show_region_ui = True
    redraw()
    return window_box(next(r for r in view.regions if r.type == 'UI'))


def redraw() -> None:
    """Draw and swap the whole window now (before a screenshot)."""
    with override("VIEW_3D"):
        bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=2)


def panel_state(panel_name: str, area_type: str) -> dict[str, Any]:
    """Whether a panel class is registered and its poll passes in the given area's context."""
    panel = getattr(bpy.types, panel_name, None)
    if panel is None:
        return {"registered": False}
    view = area(area_type)
    region_type = panel.bl_region_type
    region = next(r for r in view.regions if r.type == region_type)
    with bpy.context.temp_override(
        window=bpy.context.window_manager.windows[0], area=view, region=region
    ):
        polled = bool(panel.poll(bpy.context)) if hasattr(panel, "poll") else True
    return {
        "registered": bool(panel.is_registered),
        "poll": polled,
        "space": view.type,
        "region": region_type,
        "region_width": region.width,
        "bone_tab": view.spaces.active.context if view.type == 'PROPERTIES' else None,
        "sidebar_open": view.spaces.active.show_region_ui if view.type == 'VIEW_3D' else None,
    }


def time_viewport(iterations: int) -> float:
    """Seconds per redraw of the 3D View's main region (``wm.redraw_timer`` DRAW)."""
    with override("VIEW_3D"):
        bpy.ops.wm.redraw_timer(type='DRAW', iterations=2)  # warm up
        start = time.perf_counter()
        bpy.ops.wm.redraw_timer(type='DRAW', iterations=iterations)
        return (time.perf_counter() - start) / iterations


def bone_state(name: str) -> dict[str, Any]:
    """A Chain bone's parameters, pose matrix, and the rotation its parameters stand for."""
    from bl_ext.user_default.rq_rotations import rq_rotation as rq

    pose_bone = bpy.data.objects["Chain"].pose.bones[name]
    state: dict[str, Any] = {
        name: (
            float(pose_bone[name]) if isinstance(pose_bone[name], float) else list(pose_bone[name])
        )
        for name in ("rq_vector", "rq_swing", "rq_twist", "rq_swing_limit", "rq_twist_limit")
        if name in pose_bone
    }
    state["matrix"] = [list(row) for row in pose_bone.matrix.to_3x3()]
    state["basis"] = list(pose_bone.matrix_basis.to_quaternion())
    if "rq_vector" in state:
        state["parameter_quat"] = list(rq.rq_to_quat(state["rq_vector"]))
    else:
        state["parameter_quat"] = list(rq.swing_twist_to_quat(state["rq_swing"], state["rq_twist"]))
    return state


def rotating() -> dict[str, Any] | None:
    """The state of a running ``pose.rq_rotate`` (None when none runs): tests wait on it."""
    window = bpy.context.window_manager.windows[0]
    for operator in window.modal_operators:
        if operator.bl_idname in {"POSE_OT_rq_rotate", "pose.rq_rotate"}:
            return {
                "mode": operator.mode,
                "axis": operator.axis,
                "typed": operator.typed,
                "mouse": list(operator.mouse),
            }
    return None


def dial_point(axis: str, angle_degrees: float) -> list[int]:
    """X screen position of the point at ``angle_degrees`` on the rotate gizmo's ``axis`` dial
    (global orientation, median of the selected bones' joints), ring radius as Blender draws
    it: ``gizmo_size`` pixels at the centre's depth."""
    from bpy_extras import view3d_utils

    view = area("VIEW_3D")
    region = next(r for r in view.regions if r.type == 'WINDOW')
    rv3d = view.spaces.active.region_3d
    obj = bpy.context.object
    heads = [
        obj.matrix_world @ pb.head
        for pb in obj.pose.bones
        if (pb.select if bpy.app.version >= (5, 0, 0) else pb.bone.select)
    ]
    centre = sum(heads, Vector()) / len(heads)
    # Pixels per world unit at the centre's depth, along the view's right axis.
    right = rv3d.view_rotation @ Vector((1.0, 0.0, 0.0))
    a = view3d_utils.location_3d_to_region_2d(region, rv3d, centre)
    b = view3d_utils.location_3d_to_region_2d(region, rv3d, centre + 1e-3 * right)
    radius = bpy.context.preferences.view.gizmo_size * bpy.context.preferences.system.ui_scale
    world_radius = radius / ((b - a).length / 1e-3)
    normal = {"X": 0, "Y": 1, "Z": 2}[axis]
    u, v = (Vector(row) for i, row in enumerate(((1, 0, 0), (0, 1, 0), (0, 0, 1))) if i != normal)
    t = math.radians(angle_degrees)
    point = centre + world_radius * (math.cos(t) * u + math.sin(t) * v)
    screen = view3d_utils.location_3d_to_region_2d(region, rv3d, point)
    window = bpy.context.window_manager.windows[0]
    return [
        round(region.x + screen.x),
        round(window.height - (region.y + screen.y)),
        round(region.x + a.x),
        round(window.height - (region.y + a.y)),
    ]


# -- undo and redo -------------------------------------------------------------------------


def activate(name: str) -> Any:
    """Make armature ``name`` the active, only selected object, in Pose mode."""
    with override("VIEW_3D"):
        if bpy.context.object is not None and bpy.context.object.mode != 'OBJECT':
            bpy.ops.object.mode_set(mode='OBJECT')
    obj = bpy.data.objects[name]
    view_layer = bpy.context.view_layer
    for other in view_layer.objects:
        other.select_set(other == obj)
    view_layer.objects.active = obj
    with override("VIEW_3D"):
        bpy.ops.object.mode_set(mode='POSE')
    return obj


def build_undo_rig() -> None:
    """``UndoRig``: ``Root`` keyed as quaternions at frames 1, 10, 20 (turns of more than 180
    degrees between keys), ``Tip`` unkeyed; both selected, in Pose mode. ``Chain`` is hidden."""
    bpy.data.objects["Chain"].hide_set(True)
    obj = _armature(
        "UndoRig",
        [
            ("Root", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), None),
            ("Tip", (0.0, 0.0, 1.0), (0.0, 0.0, 2.0), "Root"),
        ],
    )
    root = obj.pose.bones["Root"]
    root.rotation_mode = 'QUATERNION'
    for frame, euler in ((1, (0.3, 0.1, 0.2)), (10, (1.2, -0.4, 2.6)), (20, (-0.5, 2.9, 0.4))):
        root.rotation_quaternion = Euler(euler).to_quaternion()
        root.keyframe_insert("rotation_quaternion", frame=frame, group="Root")
    bpy.context.scene.frame_set(5)
    select(obj, ["Root", "Tip"], active="Root")


def _plain(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value if isinstance(value, (int, float, str)) else repr(value)


def rig_snapshot(name: str) -> dict[str, Any]:
    """Everything undo must restore on armature ``name``: per bone the rotation mode, the
    add-on's ID properties, the rotation channels and the evaluated pose; the F-curves with
    their keys; the drivers with their expressions, variables and validity."""
    from bl_ext.user_default.rq_rotations.rq_blender import bone_modes

    bpy.context.view_layer.update()
    obj = bpy.data.objects[name]
    bones = {
        pb.name: {
            "mode": bone_modes.current_mode(pb),
            "rotation_mode": pb.rotation_mode,
            "props": {key: _plain(pb[key]) for key in sorted(pb.keys())},
            "channels": [
                list(pb.rotation_quaternion),
                list(pb.rotation_axis_angle),
                list(pb.rotation_euler),
            ],
            "matrix": [list(row) for row in pb.matrix],
        }
        for pb in obj.pose.bones
    }
    data = obj.animation_data
    fcurves = sorted(
        [fc.data_path, fc.array_index, [list(k.co) for k in fc.keyframe_points]]
        for fc in action_fcurves(obj)
    )
    drivers = sorted(
        [
            fc.data_path,
            fc.array_index,
            fc.driver.type,
            fc.driver.expression,
            fc.driver.is_valid,
            [[v.name, v.type, [t.data_path for t in v.targets]] for v in fc.driver.variables],
        ]
        for fc in (data.drivers if data is not None else ())
    )
    return {
        "bones": bones,
        "fcurves": fcurves,
        "drivers": drivers,
        "frame": bpy.context.scene.frame_current,
    }


def undo_push(message: str) -> None:
    with override("VIEW_3D"):
        bpy.ops.ed.undo_push(message=message)


def undo() -> None:
    with override("VIEW_3D"):
        bpy.ops.ed.undo()


def redo() -> None:
    with override("VIEW_3D"):
        bpy.ops.ed.redo()


def redo_last(**properties: Any) -> str:
    """What a change in the redo panel does: set the last operator's ``properties`` and run
    it again from the state before it (``ed.undo_redo``)."""
    last = bpy.context.window_manager.operators[-1]
    for name, value in properties.items():
        setattr(last.properties, name, value)
    with override("VIEW_3D"):
        result = bpy.ops.ed.undo_redo()
    return next(iter(result))


def run_with_undo(operator: str, **properties: Any) -> str:
    """Run ``bpy.ops.pose.<operator>`` as a button does: executed, with its undo step."""
    with override("VIEW_3D"):
        result = getattr(bpy.ops.pose, operator)('EXEC_DEFAULT', True, **properties)
    return next(iter(result))


# -- the Graph Editor (tests/gui/test_gui_graph_editor.py) ---------------------------------

GRAPH_RIG = "GraphRig"
# Key frames of every bone of the Graph Editor rig.
GRAPH_FRAMES = (1, 6, 11, 16, 21)


def _spin(axis: tuple[float, float, float], angles: list[float]) -> list[list[float]]:
    """RQ vectors of a spin about ``axis``, each stored as the *shortest* equivalent vector
    (|v| <= pi, as a naive exporter writes them): 2 pi jumps the continuity filter fixes."""
    unit = Vector(axis).normalized()
    vectors = []
    for angle in angles:
        reduced = math.remainder(angle, 2.0 * math.pi)  # in [-pi, pi]
        vectors.append(list(reduced * unit))
    return vectors


def build_graph_rig() -> dict[str, Any]:
    """``GraphRig``: four bones side by side, all selected, in Pose mode; every other
    object hidden (returned as ``shown``, for `remove_graph_rig`).

    - ``Spin`` (RQ): a spin of 7.6 rad about a tilted axis, keyed with shortest vectors
      (|v| <= pi), so consecutive keys jump across the 2 pi shell;
    - ``Steady`` (RQ): another such spin about another axis;
    - ``Arm`` (swing/twist): a swing and a twist whose keys jump by 2 pi;
    - ``Loose`` (RQ): not animated, posed past the pi shell (for ``pose.rq_reparameterize``).

    Each bone has jumps for the continuity filter, so a bone the operators should leave alone
    would show a change if they touched it.
    """
    shown = [o.name for o in bpy.context.view_layer.objects if not o.hide_get()]
    for other in bpy.context.view_layer.objects:
        other.hide_set(True)
    obj = _armature(
        GRAPH_RIG,
        [
            ("Spin", (-1.5, 0.0, 0.0), (-1.5, 0.0, 1.0), None),
            ("Steady", (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), None),
            ("Arm", (1.5, 0.0, 0.0), (1.5, 0.0, 1.0), None),
            ("Loose", (3.0, 0.0, 0.0), (3.0, 0.0, 1.0), None),
        ],
    )
    set_mode(obj, ["Spin", "Steady", "Loose"], "RQ")
    set_mode(obj, ["Arm"], "SWING_TWIST")
    bones = obj.pose.bones
    bones["Arm"]["rq_twist_limit"] = [-2.0 * math.pi, 2.0 * math.pi]
    bones["Loose"]["rq_vector"] = [0.0, 0.0, 5.0]
    spin = _spin((0.3, 0.2, 1.0), [0.4, 2.2, 4.0, 5.8, 7.6])
    steady = _spin((1.0, -0.4, 0.3), [-0.2, 1.6, 3.4, 5.2, 7.0])
    swing = [[0.1, 0.2], [0.3, -0.1], [0.5, 0.2], [0.2, 0.4], [-0.1, 0.3]]
    # Within the twist limits once filtered (the filter never moves a key past them).
    twist = [math.remainder(t, 2.0 * math.pi) for t in (-3.0, -1.2, 0.6, 2.4, 4.2)]
    for i, frame in enumerate(GRAPH_FRAMES):
        bones["Spin"]["rq_vector"] = spin[i]
        bones["Steady"]["rq_vector"] = steady[i]
        bones["Arm"]["rq_swing"] = swing[i]
        bones["Arm"]["rq_twist"] = twist[i]
        for name, prop in (
            ("Spin", "rq_vector"),
            ("Steady", "rq_vector"),
            ("Arm", "rq_swing"),
            ("Arm", "rq_twist"),
        ):
            bones[name].keyframe_insert(f'["{prop}"]', frame=frame, group=name)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 21
    bpy.context.scene.frame_set(1)
    select(obj, ["Spin", "Steady", "Arm", "Loose"], active="Spin")
    frame_view(Vector((0.75, 0.0, 0.5)), 7.0)
    return {"bones": [pb.name for pb in bones], "shown": shown}


def remove_graph_rig(shown: list[str]) -> None:
    """Remove ``GraphRig``, show the objects named in ``shown`` again, in Object mode."""
    with override("VIEW_3D"):
        if bpy.context.object is not None and bpy.context.object.mode != 'OBJECT':
            bpy.ops.object.mode_set(mode='OBJECT')
    obj = bpy.data.objects[GRAPH_RIG]
    action = obj.animation_data.action
    bpy.data.objects.remove(obj)
    bpy.data.actions.remove(action)
    for name in shown:
        bpy.data.objects[name].hide_set(False)


def show_graph_editor() -> list[int]:
    """Turn the 3D View into a Graph Editor (``restore_view3d`` turns it back); returns its
    box on screen."""
    view = area("VIEW_3D")
    view.type = 'GRAPH_EDITOR'
    view.spaces.active.mode = 'FCURVES'
    redraw_all()
    with override("GRAPH_EDITOR"):
        bpy.ops.graph.view_all()
    redraw_all()
    return window_box(view)


def restore_view3d() -> None:
    """The Graph Editor made by `show_graph_editor` back to the 3D View."""
    area("GRAPH_EDITOR").type = 'VIEW_3D'
    redraw_all()


def redraw_all() -> None:
    """Draw and swap the whole window now, whatever editors it shows."""
    with override():
        bpy.ops.wm.redraw_timer(type='DRAW_WIN_SWAP', iterations=1)


def graph_rig_curves() -> dict[str, Any]:
    """Every F-curve of ``GraphRig``'s action, bit for bit: keys, handles, handle types,
    interpolation, selection; keyed ``'<bone>:<property>:<index>'``."""
    curves: dict[str, Any] = {}
    for fcurve in action_fcurves(bpy.data.objects[GRAPH_RIG]):
        bone = fcurve.data_path.split('"')[1]
        prop = fcurve.data_path.split('"')[3]
        curves[f"{bone}:{prop}:{fcurve.array_index}"] = {
            "select": fcurve.select,
            "keys": [
                [
                    list(k.co),
                    list(k.handle_left),
                    list(k.handle_right),
                    k.handle_left_type,
                    k.handle_right_type,
                    k.interpolation,
                ]
                for k in fcurve.keyframe_points
            ],
        }
    return curves


def select_channels(channels: list[tuple[str, str]]) -> list[str]:
    """In the Graph Editor, select exactly the F-curves of ``(bone, property)`` pairs (as a
    click and shift-clicks on them would); returns the selected visible channels' paths."""
    with override("GRAPH_EDITOR"):
        bpy.ops.anim.channels_select_all(action='DESELECT')
    for fcurve in action_fcurves(bpy.data.objects[GRAPH_RIG]):
        wanted = any(fcurve.data_path == f'pose.bones["{b}"]["{p}"]' for b, p in channels)
        fcurve.select = wanted
        if wanted:
            for key in fcurve.keyframe_points:
                key.select_control_point = True
    redraw_all()
    with override("GRAPH_EDITOR"):
        shown = bpy.context.selected_visible_fcurves
        return sorted(f"{c.data_path}[{c.array_index}]" for c in shown)


def graph_rig_poses(frames: list[float]) -> list[list[list[float]]]:
    """``GraphRig``'s pose matrices (bone space to armature space) at ``frames``."""
    scene = bpy.context.scene
    keep = scene.frame_current
    obj = bpy.data.objects[GRAPH_RIG]
    poses = []
    for frame in frames:
        scene.frame_set(int(frame), subframe=frame - int(frame))
        poses.append([[list(row) for row in pb.matrix.to_3x3()] for pb in obj.pose.bones])
    scene.frame_set(keep)
    return poses


def graph_poll(operator: str) -> dict[str, Any]:
    """``bpy.ops.pose.<operator>``'s poll, and its poll message, with the Graph Editor as
    context."""
    op = getattr(bpy.ops.pose, operator)
    with override("GRAPH_EDITOR"):
        polled = bool(op.poll())
        return {"poll": polled, "message": "" if polled else poll_message(op)}


def poll_message(op: Any) -> str:
    """The poll message of ``op`` in the current context (what a disabled button's tooltip
    shows): calling an operator whose poll fails raises it as the RuntimeError's text."""
    try:
        op('EXEC_DEFAULT')
    except RuntimeError as error:
        return str(error)
    return ""


def last_operator() -> list[Any] | None:
    """``[bl_idname, pointer]`` of the last operator in Blender's history (the pointer tells
    two runs of one operator apart)."""
    operators = bpy.context.window_manager.operators
    return [operators[-1].bl_idname, operators[-1].as_pointer()] if len(operators) else None


# -- the operator search, on a test-only key -------------------------------------------------

# F3 (``wm.search_menu`` in the Window keymap) sent by xdotool never reaches Blender 5.2 under
# Xvfb, so the tests bind the same operator to this test-only key as well, in the add-on key
# configuration (``keyconfigs.addon``); no default keymap uses Ctrl+Alt+Shift+F.
SEARCH_KEY = "ctrl+alt+shift+f"  # as xdotool names it


def _search_key_items() -> tuple[Any, list[Any]]:
    """The add-on key configuration's Window keymap, and its `SEARCH_KEY` search items."""
    keymap = bpy.context.window_manager.keyconfigs.addon.keymaps.new(
        name="Window", space_type='EMPTY'
    )
    return keymap, [
        item
        for item in keymap.keymap_items
        if item.idname == "wm.search_menu"
        and item.type == 'F'
        and item.ctrl
        and item.alt
        and item.shift
    ]


def bind_search_key() -> list[str]:
    """Bind ``wm.search_menu`` to `SEARCH_KEY` in the Window keymap. Returns the operators
    plain F3 runs in Blender's default keymap, for the tests to check the key stands in for
    the operator F3 runs."""
    keymap, items = _search_key_items()
    if not items:
        keymap.keymap_items.new("wm.search_menu", 'F', 'PRESS', ctrl=True, alt=True, shift=True)
    window = bpy.context.window_manager.keyconfigs.default.keymaps["Window"]
    return [
        item.idname
        for item in window.keymap_items
        if item.type == 'F3' and not (item.ctrl or item.alt or item.shift or item.oskey)
    ]


def unbind_search_key() -> None:
    """Remove what `bind_search_key` added."""
    keymap, items = _search_key_items()
    for item in items:
        keymap.keymap_items.remove(item)


# -- what the screen shows -------------------------------------------------------------------


def bones_box(obj_name: str, margin: int = 40) -> list[int]:
    """``window_box``-style ``[x, y, width, height]`` around the heads and tails of every bone
    of ``obj_name`` as the 3D View projects them now, ``margin`` pixels wider on each side and
    clipped to the view's main region: where posing changes pixels."""
    from bpy_extras import view3d_utils

    view = area("VIEW_3D")
    region = next(r for r in view.regions if r.type == 'WINDOW')
    rv3d = view.spaces.active.region_3d
    obj = bpy.data.objects[obj_name]
    points = [
        view3d_utils.location_3d_to_region_2d(region, rv3d, obj.matrix_world @ p)
        for pb in obj.pose.bones
        for p in (pb.head, pb.tail)
    ]
    xs = [p.x for p in points if p is not None]
    ys = [p.y for p in points if p is not None]
    left, right = max(0, min(xs) - margin), min(region.width, max(xs) + margin)
    bottom, top = max(0, min(ys) - margin), min(region.height, max(ys) + margin)
    window = bpy.context.window_manager.windows[0]
    return [
        round(region.x + left),
        round(window.height - (region.y + top)),
        round(right - left),
        round(top - bottom),
    ]


def status_bar_box() -> list[int]:
    """``[x, y, width, height]`` of the status bar: a global area at the window's bottom, not
    among ``screen.areas``; its height is Blender's ``HEADERY`` (26 px) times the UI scale."""
    window = bpy.context.window_manager.windows[0]
    height = round(26 * bpy.context.preferences.system.ui_scale)
    return [0, window.height - height, window.width, height]


def remove_action(obj: Any) -> None:
    """Unassign and delete ``obj``'s action, keeping its drivers (``animation_data_clear``
    would remove the add-on's drivers too)."""
    data = obj.animation_data
    if data is not None and data.action is not None:
        action = data.action
        data.action = None
        bpy.data.actions.remove(action)
    obj.update_tag()


# -- pose tools on a symmetric rig (tests/gui/test_gui_pose_tools.py) ----------------------

SYMMETRIC = "SymRig"
# name, head, tail, mode: RQ arms, swing/twist legs, a native (quaternion) spine.
SYMMETRIC_BONES = (
    ("Arm.L", (0.3, 0.0, 1.5), (1.3, 0.0, 1.5), "RQ"),
    ("Arm.R", (-0.3, 0.0, 1.5), (-1.3, 0.0, 1.5), "RQ"),
    ("Leg.L", (0.3, 0.0, 0.9), (0.4, 0.0, 0.0), "SWING_TWIST"),
    ("Leg.R", (-0.3, 0.0, 0.9), (-0.4, 0.0, 0.0), "SWING_TWIST"),
    ("Spine", (0.0, 0.0, 0.9), (0.0, 0.0, 1.8), "QUATERNION"),
)


def build_symmetric() -> None:
    """``SymRig`` (see `SYMMETRIC_BONES`), in Pose mode, framed; other armatures hidden."""
    for other in bpy.data.objects:
        other.hide_set(True)
    obj = _armature(
        SYMMETRIC, [(name, head, tail, None) for name, head, tail, _ in SYMMETRIC_BONES]
    )
    for mode in ("RQ", "SWING_TWIST"):
        set_mode(obj, [row[0] for row in SYMMETRIC_BONES if row[3] == mode], mode)
    obj.pose.bones["Spine"].rotation_mode = 'QUATERNION'
    frame_view(Vector((0.0, 0.0, 1.0)), 6.0)
    pose_symmetric()


def pose_symmetric() -> None:
    """``SymRig`` posed away from rest, unkeyed, mirror off, auto-keying off."""
    obj = bpy.data.objects[SYMMETRIC]
    if obj.animation_data is not None:
        obj.animation_data.action = None
    bones = obj.pose.bones
    bones["Arm.L"]["rq_vector"] = [0.3, 0.5, -0.4]
    bones["Arm.R"]["rq_vector"] = [0.0, 0.0, 0.0]
    bones["Leg.L"]["rq_swing"] = [0.4, -0.2]
    bones["Leg.L"]["rq_twist"] = 0.3
    bones["Leg.R"]["rq_swing"] = [0.0, 0.0]
    bones["Leg.R"]["rq_twist"] = 0.0
    bones["Spine"].rotation_quaternion = Euler((0.2, 0.3, -0.1)).to_quaternion()
    obj.pose.use_mirror_x = False
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = False
    obj.update_tag()
    bpy.context.view_layer.update()


def symmetric_state() -> dict[str, Any]:
    """Every ``SymRig`` bone's parameters (or quaternion) and local rotation matrix, and the
    rig's F-curves as ``[data_path, index, group]``."""
    obj = bpy.data.objects[SYMMETRIC]
    bpy.context.view_layer.update()
    bones = {}
    for pose_bone in obj.pose.bones:
        state = {name: _plain(value) for name, value in pose_bone.items() if name.startswith("rq_")}
        state["quaternion"] = list(pose_bone.rotation_quaternion)
        state["basis"] = [list(row) for row in pose_bone.matrix_basis.to_3x3()]
        bones[pose_bone.name] = state
    curves = sorted(
        [fc.data_path, fc.array_index, fc.group.name if fc.group else None]
        for fc in action_fcurves(obj)
    )
    return {"bones": bones, "fcurves": curves}


def remove_symmetric() -> None:
    """Remove ``SymRig``; show the other objects again."""
    with override("VIEW_3D"):
        bpy.ops.object.mode_set(mode='OBJECT')
    bpy.data.objects.remove(bpy.data.objects[SYMMETRIC])
    for other in bpy.data.objects:
        other.hide_set(False)


def call_menu(name: str) -> None:
    """Open the menu ``name`` over the 3D View (as its header's menu would)."""
    with override("VIEW_3D"):
        bpy.ops.wm.call_menu(name=name)


def operator_label(idname: str) -> str:
    """The label (``bl_label``) of an operator named ``POSE_OT_x`` or ``pose.x``."""
    module, name = idname.split("_OT_") if "_OT_" in idname else idname.split(".")
    return getattr(getattr(bpy.ops, module.lower()), name).get_rna_type().name


def info_reports() -> list[str]:
    """The reports in the Info editor, as its Copy (Ctrl+C) gives them: the Timeline area
    shows the Info editor for the time it takes."""
    timeline = area("DOPESHEET_EDITOR")
    ui_type = timeline.ui_type
    timeline.type = 'INFO'
    try:
        redraw()
        with override("INFO"):
            bpy.ops.info.select_all(action='SELECT')
            bpy.ops.info.report_copy()
        return bpy.context.window_manager.clipboard.splitlines()
    finally:
        timeline.type = 'DOPESHEET_EDITOR'
        timeline.ui_type = ui_type
