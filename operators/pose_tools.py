# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's everyday pose tools for the add-on's bones: Alt+R, I, Ctrl+C / Ctrl+V /
Ctrl+Shift+V.

A bone in an add-on mode is posed by drivers from its ID properties, so Blender's own tools,
which write the native rotation channels, write a channel the drivers overwrite. Measured
(``tests/blender/test_pose_tools.py`` checks the first two on 4.2, 4.5 and 5.2):
``pose.rot_clear`` leaves the parameters as they were; ``pose.copy`` / ``pose.paste`` copy ID
properties by name (Blender syncs the pasted bone's properties with the copied ones), so Paste
Flipped gives the mirror bone the *unflipped* parameters (and a quaternion bone pasted from a
swing/twist bone was left at rest); in the 5.2 window, ``anim.keyframe_insert`` keys the driven
``rotation_axis_angle`` (curves the drivers override) and keys the parameters only through
the Custom Properties channel, never for Rotation or the Rotation keying set.

Each operator here takes the key in the Pose keymap (``panels/keymap.py``) ahead of
Blender's, and its poll fails where it has nothing to add, so Blender's own tool runs as
before (the pattern of ``pose.rq_rotate``). Each calls Blender's tool for what it does right
and writes the add-on's parameters itself, as one undo step:

- ``pose.rq_rot_clear``: Blender's ``pose.rot_clear`` on the native bones, the rest pose on the
  add-on bones (parameters 0; a twist range without 0 gives the twist the drivers pose); with
  All Transforms, Blender's location and scale clears first (Pose > Clear Transform > All);
- ``pose.rq_keyframe_insert``: Blender's ``anim.keyframe_insert`` on the native bones; on the
  add-on bones the same channels (location, scale, custom properties), with Rotation keying
  the parameters, in the channel group named after the bone;
- ``pose.rq_copy`` / ``pose.rq_paste``: Blender's copy and paste, plus the rotations of the
  copied bones, written onto add-on bones in their own parameters, mirrored across X for
  Paste Flipped (`rq_blender.pose_mirror`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

import bpy
from bpy.props import BoolProperty

from ..rq_blender import (
    animdata,
    bone_modes,
    compat,
    parameter_curves,
    pose_mirror,
    reports,
    transaction,
)
from ..rq_blender.registration import register_classes_factory
from ..rq_rotation import mirror_twist_limit
from ..rq_rotation.modes import ADDON_MODES, LIMITS, RQ, RQ_VECTOR, TWIST_LIMIT

# Channels of the default keying (``preferences.edit.key_insert_channels``, 4.1+) and of
# Blender's plain transform keying sets, by ``bl_idname``. Other keying sets (Available,
# visual, whole character, the user's own) are left to Blender's I entirely.
KEYING_SET_CHANNELS = {
    "Location": {"LOCATION"},
    "Rotation": {"ROTATION"},
    "Scaling": {"SCALE"},
    "BUILTIN_KSI_LocRot": {"LOCATION", "ROTATION"},
    "BUILTIN_KSI_LocScale": {"LOCATION", "SCALE"},
    "BUILTIN_KSI_RotScale": {"ROTATION", "SCALE"},
    "LocRotScale": {"LOCATION", "ROTATION", "SCALE"},
    "LocRotScaleCProp": {"LOCATION", "ROTATION", "SCALE", "CUSTOM_PROPS"},
}
TRANSFORM_PATHS = {"LOCATION": "location", "SCALE": "scale"}


def _addon_and_native(
    context: bpy.types.Context,
) -> tuple[list[bpy.types.PoseBone], list[bpy.types.PoseBone]]:
    """The selected pose bones in an add-on mode, and the others."""
    addon: list[bpy.types.PoseBone] = []
    native: list[bpy.types.PoseBone] = []
    for pose_bone in context.selected_pose_bones or ():
        in_addon_mode = bone_modes.current_mode(pose_bone) in ADDON_MODES
        (addon if in_addon_mode else native).append(pose_bone)
    return addon, native


def _bones_of(pose_bones: list[bpy.types.PoseBone]) -> list[tuple[bpy.types.Object, str]]:
    return [(cast(bpy.types.Object, pb.id_data), pb.name) for pb in pose_bones]


@contextmanager
def _deselected(pose_bones: list[bpy.types.PoseBone]) -> Iterator[None]:
    """Blender's own tool runs on the other selected bones only."""
    for pose_bone in pose_bones:
        compat.set_pose_bone_selected(pose_bone, False)
    try:
        yield
    finally:
        for pose_bone in pose_bones:
            compat.set_pose_bone_selected(pose_bone, True)


def _auto_keying(context: bpy.types.Context) -> bool:
    scene = context.scene
    return scene is not None and scene.tool_settings.use_keyframe_insert_auto


class POSE_OT_rq_rot_clear(bpy.types.Operator):
    """Reset the rotation of the selected bones to the rest pose; RQ and swing/twist bones get
    zero parameters (within the twist range)"""

    bl_idname = "pose.rq_rot_clear"
    bl_label = "Clear Rotation (RQ)"
    bl_options = {'REGISTER', 'UNDO'}

    clear_all: BoolProperty(  # type: ignore[valid-type]
        name="All Transforms",
        default=False,
        description="Also clear location and scale (Blender's own clear, on every bone)",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not parameter_curves.poll_pose(cls, context):
            return False
        if not _addon_and_native(context)[0]:
            cls.poll_message_set("No selected bone is in RQ or Swing/Twist mode")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[Any]:
        addon, native = _addon_and_native(context)
        try:
            with transaction.all_or_nothing(_bones_of(addon + native)):
                if self.clear_all:  # location and scale are not driven: Blender's own
                    bpy.ops.pose.loc_clear()
                    bpy.ops.pose.scale_clear()
                if native:
                    with _deselected(addon):
                        bpy.ops.pose.rot_clear()
                for pose_bone in addon:
                    self._clear(pose_bone)
                    if _auto_keying(context):
                        pose_mirror.key_rotation(pose_bone)
        except Exception as error:  # restored, reported, never raised
            return transaction.report_failure(self, error)
        what = "the transforms" if self.clear_all else "the rotation"
        self.report(
            {'INFO'}, f"Cleared {what} of {reports.plural(len(addon) + len(native), 'bone')}"
        )
        return {'FINISHED'}

    @staticmethod
    def _clear(pose_bone: bpy.types.PoseBone) -> None:
        if bone_modes.current_mode(pose_bone) == RQ:
            bone_modes.write_parameters(pose_bone, {RQ_VECTOR.name: [0.0, 0.0, 0.0]})
        else:
            rest, _ = bone_modes.limited_swing_twist(pose_bone, (0.0, 0.0), 0.0)
            bone_modes.write_parameters(pose_bone, rest)


class POSE_OT_rq_keyframe_insert(bpy.types.Operator):
    """Insert keyframes on the selected bones as I does; RQ and swing/twist bones key their
    parameters where Rotation is keyed"""

    bl_idname = "pose.rq_keyframe_insert"
    bl_label = "Insert Keyframe (RQ)"
    bl_options = {'REGISTER', 'UNDO'}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not parameter_curves.poll_pose(cls, context):
            return False
        if not _addon_and_native(context)[0]:
            cls.poll_message_set("No selected bone is in RQ or Swing/Twist mode")
            return False
        if cls.channels(context) is None:
            cls.poll_message_set("The active keying set is Blender's to apply")
            return False
        return True

    @staticmethod
    def channels(context: bpy.types.Context) -> set[str] | None:
        """What I keys: the active keying set's channels, or the preferences' default
        channels; None for a keying set `KEYING_SET_CHANNELS` does not know."""
        scene = context.scene
        active = scene.keying_sets_all.active if scene is not None else None
        if active is not None:
            return KEYING_SET_CHANNELS.get(active.bl_idname)
        preferences = context.preferences
        assert preferences is not None
        return set(preferences.edit.key_insert_channels)

    def execute(self, context: bpy.types.Context) -> set[Any]:
        addon, native = _addon_and_native(context)
        channels = self.channels(context) or set()
        try:
            for obj in {pb.id_data.name_full: pb.id_data for pb in addon}.values():
                anim = obj.animation_data
                if anim is not None and anim.action is not None:
                    animdata.check_editable(anim.action)
            with transaction.all_or_nothing(_bones_of(addon)):
                if native:
                    with _deselected(addon):
                        bpy.ops.anim.keyframe_insert()
                refused = {pose_bone.name: self._key(pose_bone, channels) for pose_bone in addon}
        except Exception as error:  # restored, reported, never raised
            return transaction.report_failure(self, error)
        headline = f"Keyed {reports.plural(len(addon) + len(native), 'bone')}"
        details = [
            f"{name}: {', '.join(paths)} not keyed: Blender refused it (a locked or sampled "
            "F-curve: unlock it, or clear its samples)"
            for name, paths in refused.items()
            if paths
        ]
        if details:
            headline += f"; {reports.plural(len(details), 'bone')} not fully keyed"
        reports.report(self, 'WARNING' if details else 'INFO', headline, details)
        return {'FINISHED'}

    @staticmethod
    def _key(pose_bone: bpy.types.PoseBone, channels: set[str]) -> list[str]:
        """Key the bone's ``channels``; the data paths Blender refused to key."""
        group = pose_bone.name
        refused = []
        for channel, path in TRANSFORM_PATHS.items():
            if channel in channels and not pose_bone.keyframe_insert(path, group=group):
                refused.append(path)
        if "CUSTOM_PROPS" in channels:
            # every number property, the parameters included, but the joint limits: a rig's
            # settings, which a key would put back at every frame change after the rigger
            # changed them (a review: a swing limit narrowed from 60 to 30 degrees came back
            # as 60). Keyed over their fields, they animate as any property.
            stored: Any = pose_bone
            for name, value in stored.items():
                if name in LIMITS:
                    continue
                numbers = (
                    value if hasattr(value, "__len__") and not isinstance(value, str) else [value]
                )
                if len(numbers) and all(isinstance(x, (int, float)) for x in numbers):
                    path = f'["{bpy.utils.escape_identifier(name)}"]'
                    if not pose_bone.keyframe_insert(path, group=group):
                        refused.append(path)
        elif "ROTATION" in channels:
            refused += pose_mirror.key_rotation(pose_bone)
        return refused


@dataclass
class Copied:
    """One copied bone: its mode, its rotation (`pose_mirror.Pose`) and joint limits."""

    mode: str
    pose: pose_mirror.Pose
    limits: dict[str, list[float]]


# What Ctrl+C copied, and the stamp of Blender's pose copy buffer file it goes with.
_copied: dict[str, Copied] = {}
_stamp: list[tuple[int, int, int] | None] = [None]


def copy_buffer_stamp() -> tuple[int, int, int] | None:
    """Modification time and size of Blender's pose copy buffer (``copybuffer_pose.blend`` in
    the temporary folder's base), None when there is none: a copy made without
    ``pose.rq_copy`` (the menu, a script) changes it, and Ctrl+V then pastes Blender's
    way only."""
    base = os.path.dirname(os.path.normpath(bpy.app.tempdir))
    try:
        status = os.stat(os.path.join(base, "copybuffer_pose.blend"))
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_size


class POSE_OT_rq_copy(bpy.types.Operator):
    """Copy the pose of the selected bones, with the parameters of RQ and swing/twist bones"""

    bl_idname = "pose.rq_copy"
    bl_label = "Copy Pose (RQ)"
    bl_options = {'REGISTER'}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        return parameter_curves.poll_pose(cls, context)

    def execute(self, context: bpy.types.Context) -> set[Any]:
        _copied.clear()
        try:
            result: Any = bpy.ops.pose.copy()
        except RuntimeError as error:  # Blender's own refusal (its report), never a traceback
            self.report({'ERROR'}, str(error).strip().removeprefix("Error: "))
            return {'CANCELLED'}
        if 'FINISHED' not in result:
            return {'CANCELLED'}
        for pose_bone in context.selected_pose_bones or ():
            mode, pose = pose_mirror.pose_of(pose_bone)
            stored: Any = pose_bone
            limits = {
                name: [float(x) for x in stored[name]]
                for name in LIMITS
                if pose_bone.get(name) is not None
            }
            _copied[pose_bone.name] = Copied(mode, pose, limits)
        _stamp[0] = copy_buffer_stamp()
        return {'FINISHED'}


class POSE_OT_rq_paste(bpy.types.Operator):
    """Paste the copied pose; RQ and swing/twist bones get the copied rotations in their
    parameters (Flipped: mirrored onto the bones with the flipped names)"""

    bl_idname = "pose.rq_paste"
    bl_label = "Paste Pose (RQ)"
    bl_options = {'REGISTER', 'UNDO'}

    flipped: BoolProperty(  # type: ignore[valid-type]
        name="Flipped on X-Axis",
        default=False,
        description="Paste the stored pose flipped on to current pose",
    )
    selected_mask: BoolProperty(  # type: ignore[valid-type]
        name="On Selected Only",
        default=False,
        description="Only paste the stored pose on to selected bones in the current pose",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if not parameter_curves.poll_pose(cls, context):
            return False
        if not _copied or _stamp[0] != copy_buffer_stamp():
            cls.poll_message_set("Nothing copied with Copy Pose (RQ)")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> set[Any]:
        obj = context.object
        if obj is None or obj.pose is None:
            return {'CANCELLED'}
        flip = bool(self.flipped)
        targets: list[tuple[str, Copied]] = []
        for name, copied in _copied.items():
            target = obj.pose.bones.get(bpy.utils.flip_name(name) if flip else name)
            if target is None or (self.selected_mask and not compat.pose_bone_selected(target)):
                continue
            # Blender pastes native rotations itself, but not those of driven bones.
            if {bone_modes.current_mode(target), copied.mode} & set(ADDON_MODES):
                targets.append((target.name, copied))
        try:
            with transaction.all_or_nothing([(obj, name) for name, _ in targets]):
                bpy.ops.pose.paste(flipped=flip, selected_mask=self.selected_mask)
                for name, copied in targets:
                    target = obj.pose.bones[name]
                    self._limits(target, copied, flip)
                    pose_mirror.write(
                        target, pose_mirror.transferred(copied.mode, copied.pose, target, flip)
                    )
                    if _auto_keying(context):
                        pose_mirror.key_rotation(target)
        except Exception as error:  # restored, reported, never raised
            return transaction.report_failure(self, error)
        return {'FINISHED'}

    @staticmethod
    def _limits(target: bpy.types.PoseBone, copied: Copied, flip: bool) -> None:
        """Blender pastes ID properties by name, the joint limits too; Flipped gets the
        mirrored twist range."""
        stored: Any = target
        for name, value in copied.limits.items():
            if target.get(name) is None:
                continue
            if flip and name == TWIST_LIMIT.name:
                value = [float(x) for x in mirror_twist_limit(*value)]
            stored[name] = value


register, unregister = register_classes_factory(
    (POSE_OT_rq_rot_clear, POSE_OT_rq_keyframe_insert, POSE_OT_rq_copy, POSE_OT_rq_paste)
)
