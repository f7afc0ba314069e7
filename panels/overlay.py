# SPDX-License-Identifier: GPL-3.0-or-later
"""Viewport overlay: the joint limits of swing/twist bones, drawn with the ``gpu`` module.

For every swing/twist bone of an armature in Pose mode, in the joint's rest frame (the bone's
rest orientation in its posed parent; Y along the bone):

- the swing-limit ellipse as a cone at the joint: the directions the bone's Y axis takes for
  the swings on the ellipse ``(a cos t, b sin t)``, a translucent fan with an outline;
- the twist range as an arc around Y, from the rest Z axis turned by min to max;
- the current (posed, i.e. clamped) swing direction and twist as brighter lines.

Cost: the limit geometry of a bone depends only on its four limit values and is cached in the
joint frame; each redraw moves it to world space with one numpy product for all bones and
draws two batches (triangles, lines). The batches are rebuilt only when a bone's frame,
limits or pose changed.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Literal, cast

import bpy
import gpu
import numpy as np
from bpy.props import BoolProperty, FloatProperty, PointerProperty
from gpu_extras.batch import batch_for_shader
from mathutils import Matrix

from .. import rq_rotation as rq
from ..rq_blender import bone_modes
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation.modes import SWING, SWING_LIMIT, SWING_TWIST, TWIST

SEGMENTS = 48  # points on the ellipse and on the full twist circle
CONE_FILL = (0.25, 0.6, 1.0, 0.12)
CONE_LINE = (0.25, 0.6, 1.0, 0.85)
TWIST_LINE = (1.0, 0.65, 0.15, 0.9)
CURRENT_LINE = (1.0, 1.0, 1.0, 1.0)
TWIST_HEIGHT = 0.3  # the twist arc's distance along Y and ...
TWIST_RADIUS = 0.25  # ... radius, as fractions of the cone's length


class RQ_OverlaySettings(bpy.types.PropertyGroup):
    """Display settings of the limit overlay (view state, not saved with the rig)."""

    show_limits: BoolProperty(  # type: ignore[valid-type]
        name="Show Joint Limits",
        description=(
            "Draw the swing-limit cone, the twist range and the current swing of "
            "swing/twist bones in the viewport"
        ),
        default=True,
    )
    size: FloatProperty(  # type: ignore[valid-type]
        name="Limit Display Size",
        description="Length of the limit cone as a fraction of the bone's length",
        default=0.6,
        min=0.05,
        soft_max=2.0,
    )


def settings(context: bpy.types.Context) -> RQ_OverlaySettings:
    """The overlay settings (on the window manager)."""
    return cast(Any, context.window_manager).rq_overlay


def swing_directions(swing: np.ndarray) -> np.ndarray:
    """Where the rest Y axis points after swings ``(r_x, r_z)`` (n, 2): unit vectors (n, 3).

    The swing's axis ``n = (r_x, 0, r_z)/phi`` is perpendicular to Y, so
    ``R Y = cos(phi) Y + sin(phi) (n x Y)`` with ``n x Y = (-n_z, 0, n_x)``.
    """
    phi = np.hypot(swing[:, 0], swing[:, 1])
    safe = np.where(phi > 0.0, phi, 1.0)
    sin_over = np.sin(phi) / safe
    return np.stack([-swing[:, 1] * sin_over, np.cos(phi), swing[:, 0] * sin_over], axis=-1)


def _twist_point(twist: np.ndarray) -> np.ndarray:
    """Points of the twist arc (n, 3): the rest Z axis turned about Y by ``twist``."""
    return np.stack(
        [
            TWIST_RADIUS * np.sin(twist),
            np.full_like(twist, TWIST_HEIGHT),
            TWIST_RADIUS * np.cos(twist),
        ],
        axis=-1,
    )


@lru_cache(maxsize=256)
def limit_geometry(a: float, b: float, low: float, high: float) -> tuple[np.ndarray, ...]:
    """A bone's static limit geometry in its joint frame, for a cone of length 1.

    Returns ``(triangles (3m, 3), triangle colours, lines (2k, 3), line colours)``.
    """
    angles = np.linspace(0.0, 2.0 * math.pi, SEGMENTS + 1)
    rim = swing_directions(np.stack([a * np.cos(angles), b * np.sin(angles)], axis=-1))
    apex = np.zeros((SEGMENTS, 3))
    triangles = np.stack([apex, rim[:-1], rim[1:]], axis=1).reshape(-1, 3)
    spokes = np.stack([apex[::6], rim[:-1:6]], axis=1).reshape(-1, 3)
    outline = np.stack([rim[:-1], rim[1:]], axis=1).reshape(-1, 3)
    span = min(high - low, 2.0 * math.pi)
    steps = max(2, math.ceil(SEGMENTS * span / (2.0 * math.pi)))
    arc = _twist_point(np.linspace(low, low + span, steps + 1))
    centre = np.array([[0.0, TWIST_HEIGHT, 0.0]])
    arc_lines = np.concatenate(
        [
            np.stack([arc[:-1], arc[1:]], axis=1).reshape(-1, 3),
            np.stack([np.repeat(centre, 2, axis=0), arc[[0, -1]]], axis=1).reshape(-1, 3),
        ]
    )
    lines = np.concatenate([spokes, outline, arc_lines])
    line_colours = np.concatenate(
        [
            np.tile(CONE_LINE, (len(spokes) + len(outline), 1)),
            np.tile(TWIST_LINE, (len(arc_lines), 1)),
        ]
    )
    return triangles, np.tile(CONE_FILL, (len(triangles), 1)), lines, line_colours


def _current_lines(swing: np.ndarray, twist: float) -> np.ndarray:
    """Lines (4, 3) for the posed swing direction and twist, cone length 1."""
    direction = swing_directions(swing[None, :])[0] * 1.15
    centre = np.array([0.0, TWIST_HEIGHT, 0.0])
    return np.array([[0.0, 0.0, 0.0], direction, centre, _twist_point(np.array([twist]))[0]])


def _posed_parameters(pose_bone: bpy.types.PoseBone) -> tuple[np.ndarray, float, tuple]:
    """The swing and twist as evaluation poses them (radially scaled, clamped), and the
    limits as they act (`rq_rotation.effective_limits`: negative semi-axes as 0, an inverted
    twist range as its first value)."""
    swing = np.asarray(pose_bone[SWING.name], dtype=float)
    (a, b), (low, high) = bone_modes.joint_limits(pose_bone)
    twist = float(rq.clamp_twist(float(pose_bone[TWIST.name]), low, high))
    limits = tuple(float(x) for x in rq.effective_limits(a, b, low, high))
    return rq.scale_swing_into_ellipse(swing, a, b), twist, limits


class _Cache:
    """The last frame's batches and the state they were built from."""

    key: bytes | None = None
    batches: tuple[Any, Any] | None = None


def _joint_frame(pose_bone: bpy.types.PoseBone) -> Matrix:
    """The frame the bone's own rotation turns in (armature space, at its head): its rest
    offset on the parent as posed, by Blender's own inheritance rules, with the bone's
    location and none of its own constraints. (``matrix @ matrix_basis^-1`` is that frame
    only while no constraint acts on the bone: under an IK the limits were drawn turned with
    the constrained bone, 37-46 degrees off on an elbow.)"""
    bone, parent = pose_bone.bone, pose_bone.parent
    local = Matrix.Translation(pose_bone.location.to_tuple())
    if parent is None:
        return bone.convert_local_to_pose(local, bone.matrix_local)
    return bone.convert_local_to_pose(
        local,
        bone.matrix_local,
        parent_matrix=parent.matrix,
        parent_matrix_local=parent.bone.matrix_local,
    )


def _collect(context: bpy.types.Context, size: float) -> tuple[list, bytes]:
    """Per swing/twist bone ``(joint matrix 4x4 scaled to the cone, pose, limits)``, and a key."""
    bones = []
    for obj in context.visible_objects:
        if obj.type != 'ARMATURE' or obj.mode != 'POSE' or obj.pose is None:
            continue
        world = obj.matrix_world
        for pose_bone in obj.pose.bones:
            properties: Any = pose_bone  # ID properties (the stubs lack ``in``)
            if SWING.name not in properties or SWING_LIMIT.name not in properties:
                continue
            if pose_bone.bone.hide or bone_modes.current_mode(pose_bone) != SWING_TWIST:
                continue
            if bone_modes.value_problems(pose_bone):
                continue  # the panel says what is wrong; nothing to draw
            joint = np.array(world @ _joint_frame(pose_bone))
            joint[:3, :3] *= pose_bone.bone.length * size
            bones.append((joint, *_posed_parameters(pose_bone)))
    key = b"".join(
        j.tobytes() + s.tobytes() + np.array([t, *lim]).tobytes() for j, s, t, lim in bones
    )
    return bones, key


def _to_world(parts: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Concatenate ``(joint matrix, local points)`` pairs into world points (n, 3), float32."""
    if not parts:
        return np.zeros((0, 3), dtype=np.float32)
    world = [points @ joint[:3, :3].T + joint[:3, 3] for joint, points in parts]
    return np.concatenate(world).astype(np.float32)


def _stack(colours: list[np.ndarray]) -> np.ndarray:
    """Concatenate RGBA colour arrays as float32 (n, 4)."""
    return np.concatenate(colours).astype(np.float32) if colours else np.zeros((0, 4), np.float32)


def _shader(name: str) -> Any:
    """A built-in shader (the API stubs type ``from_builtin`` as returning nothing)."""
    return cast(Any, gpu.shader).from_builtin(name)


def _batch(
    shader_name: str, kind: Literal['TRIS', 'LINES'], points: np.ndarray, colours: np.ndarray
) -> Any:
    """A batch of ``points`` (n, 3) with per-point RGBA ``colours`` (n, 4) for a shader."""
    content: Any = {"pos": points, "color": colours}
    return batch_for_shader(_shader(shader_name), kind, content)


def _build(bones: list) -> tuple[Any, Any]:
    tris, tri_colours, lines, line_colours = [], [], [], []
    for joint, swing, twist, limits in bones:
        triangles, fill, outline, outline_colours = limit_geometry(*limits)
        tris.append((joint, triangles))
        tri_colours.append(fill)
        lines.append((joint, np.concatenate([outline, _current_lines(swing, twist)])))
        line_colours.append(np.concatenate([outline_colours, np.tile(CURRENT_LINE, (4, 1))]))
    return (
        _batch('FLAT_COLOR', 'TRIS', _to_world(tris), _stack(tri_colours)),
        _batch('POLYLINE_FLAT_COLOR', 'LINES', _to_world(lines), _stack(line_colours)),
    )


def draw() -> None:
    """The ``POST_VIEW`` draw callback of every 3D View."""
    context = bpy.context
    options = settings(context)
    if not options.show_limits:
        return
    bones, key = _collect(context, options.size)
    if not bones:
        return
    if key != _Cache.key or _Cache.batches is None:
        _Cache.key, _Cache.batches = key, _build(bones)
    triangles, lines = _Cache.batches
    gpu.state.blend_set('ALPHA')
    gpu.state.depth_test_set('LESS_EQUAL')
    gpu.state.depth_mask_set(False)
    triangles.draw(_shader('FLAT_COLOR'))
    shader = _shader('POLYLINE_FLAT_COLOR')
    shader.uniform_float("viewportSize", cast(Any, gpu.state).viewport_get()[2:])
    shader.uniform_float("lineWidth", 2.0)
    lines.draw(shader)
    gpu.state.depth_test_set('NONE')
    gpu.state.blend_set('NONE')


def draw_overlay_popover(self: Any, context: bpy.types.Context) -> None:
    """Appended to the viewport's Overlays popover (bone section)."""
    if context.mode == 'POSE':
        row = self.layout.row()
        row.prop(settings(context), "show_limits", text="Joint Limits")
        size = row.row()
        size.active = settings(context).show_limits
        size.prop(settings(context), "size", text="Size")


_handle: list[Any] = []
_register_classes, _unregister_classes = register_classes_factory((RQ_OverlaySettings,))


def register() -> None:
    _register_classes()
    # (The API stubs type property functions as returning nothing.)
    cast(Any, bpy.types.WindowManager).rq_overlay = cast(Any, PointerProperty)(
        type=RQ_OverlaySettings
    )
    _handle.append(bpy.types.SpaceView3D.draw_handler_add(draw, (), 'WINDOW', 'POST_VIEW'))
    # Blender calls appended draw functions as (panel, context); the 5.2 stubs declare
    # (context) alone.
    cast(Any, bpy.types.VIEW3D_PT_overlay_bones).append(draw_overlay_popover)


def unregister() -> None:
    cast(Any, bpy.types.VIEW3D_PT_overlay_bones).remove(draw_overlay_popover)
    while _handle:
        bpy.types.SpaceView3D.draw_handler_remove(_handle.pop(), 'WINDOW')
    del cast(Any, bpy.types.WindowManager).rq_overlay
    _unregister_classes()
    _Cache.key, _Cache.batches = None, None
    limit_geometry.cache_clear()
