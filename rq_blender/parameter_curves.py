# SPDX-License-Identifier: GPL-3.0-or-later
"""Which add-on parameter F-curves an operator acts on, read as numpy arrays.

A *parameter* is one of the ID custom properties that hold a bone's rotation in the add-on's
modes (``rq_rotation.modes.PARAMETERS``): ``pose_bone["rq_vector"]`` (3 floats, an RQ vector),
``pose_bone["rq_swing"]`` (2 floats, ``(r_x, r_z)``) and ``pose_bone["rq_twist"]`` (1 float,
about the bone's Y). Its F-curves are the channels ``pose.bones["B"]["rq_vector"]`` index 0..k-1.

Operators act on:

- in the 3D Viewport (Pose mode): the parameters of the selected pose bones of the objects in
  Pose mode, in every action that animates them (the active action and NLA strips);
- in the Graph Editor: the parameters with at least one selected F-curve *that the editor
  shows and lets edit* (``context.selected_editable_fcurves``: not hidden by its filters, such
  as "Only Show Selected" with the bone deselected, and not locked), as Blender's own Graph
  Editor operators do. A parameter is a vector: its components are always treated together.

All reading goes through `animdata` (bulk, numpy); times are in each action's own frames.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import bpy
import numpy as np

from ..rq_rotation.modes import PARAMETERS, RQ_VECTOR, SWING
from . import animdata, compat

# The parameters whose values are rotation vectors (the swing is ``(r_x, 0, r_z)``).
VECTOR_PARAMETERS = (RQ_VECTOR.name, SWING.name)


@dataclass
class ParameterCurves:
    """The F-curves of one parameter of one bone in one action.

    ``channels[i]`` is component ``i`` (``None`` when that component has no keys there).
    """

    obj: bpy.types.Object
    bone_name: str
    name: str
    use: animdata.ActionUse
    channels: list[animdata.Channel | None]

    @property
    def size(self) -> int:
        return PARAMETERS[self.name].size

    @property
    def data_path(self) -> str:
        return animdata.bone_data_path(self.bone_name, PARAMETERS[self.name].path)

    @property
    def pose_bone(self) -> bpy.types.PoseBone:
        return pose_bone(self.obj, self.bone_name)

    @property
    def static(self) -> list[float]:
        """The property's current value, shape (k,), standing in for missing channels."""
        value = self.pose_bone.get(self.name)  # type: ignore[func-returns-value]
        if value is None:
            return [0.0] * self.size
        if isinstance(value, (int, float)):
            return [float(value)]
        return [float(x) for x in value]

    @property
    def fcurves(self) -> list[bpy.types.FCurve]:
        return [c.fcurve for c in self.channels if c is not None]

    def key_times(self) -> np.ndarray:
        """Sorted union of the components' key frames, shape (n,)."""
        return animdata.key_times(self.channels)

    def values(self, t: np.ndarray) -> np.ndarray:
        """The parameter at frames ``t`` (action time), shape (m,) -> (m, k)."""
        return animdata.evaluate_channels(self.channels, self.static, t)


def pose_bones(obj: bpy.types.Object) -> list[bpy.types.PoseBone]:
    """The pose bones of an armature object (none for other objects)."""
    return [] if obj.pose is None else list(obj.pose.bones)


def pose_bone(obj: bpy.types.Object, name: str) -> bpy.types.PoseBone:
    """The pose bone ``name`` of an armature object (``KeyError`` if there is none)."""
    if obj.pose is None:
        raise KeyError(f"{obj.name} has no pose")
    return obj.pose.bones[name]


def read_parameter(
    obj: bpy.types.Object,
    use: animdata.ActionUse,
    bone_name: str,
    name: str,
    index: dict[tuple[str, int], bpy.types.FCurve] | None = None,
) -> ParameterCurves | None:
    """The F-curves of one parameter in one action, ``None`` when none of them has keys.
    ``index``: the action use's `animdata.fcurve_index`, when reading many parameters."""
    parameter = PARAMETERS[name]
    data_path = animdata.bone_data_path(bone_name, parameter.path)
    owner = None if index is not None else animdata.fcurve_owner(use)  # (the index has them)
    channels = animdata.read_channels(owner, data_path, parameter.size, index)
    if all(c is None for c in channels):
        return None
    return ParameterCurves(obj, bone_name, name, use, channels)


def selected_pose_bones(context: bpy.types.Context) -> list[tuple[bpy.types.Object, str]]:
    """``(object, bone name)`` of every selected pose bone of the objects in Pose mode."""
    objects = {o.name_full: o for o in getattr(context, "objects_in_mode", []) or []}
    if context.object is not None and context.object.mode == 'POSE':
        objects.setdefault(context.object.name_full, context.object)
    return [
        (obj, bone.name)
        for obj in objects.values()
        if obj.type == 'ARMATURE'
        for bone in pose_bones(obj)
        if compat.pose_bone_selected(bone)
    ]


def in_graph_editor(context: bpy.types.Context) -> bool:
    return context.area is not None and context.area.type == 'GRAPH_EDITOR'


def _graph_editor_fcurves(context: bpy.types.Context) -> list[bpy.types.FCurve]:
    """The F-curves the Graph Editor's tools act on: selected, shown and editable.

    ``FCurve.select`` alone is not enough: a curve stays selected while the editor hides it
    (its bone deselected under "Only Show Selected", a collapsed filter, a hidden curve), and
    Blender's own operators leave such curves alone.
    """
    return list(getattr(context, "selected_editable_fcurves", None) or [])


def _parameter_path(data_path: str) -> bool:
    """Whether ``data_path`` is an add-on parameter channel, ``pose.bones["B"]["rq_..."]``."""
    return data_path.startswith("pose.bones[") and any(
        data_path.endswith(p.path) for p in PARAMETERS.values()
    )


def _animated_armatures(context: bpy.types.Context) -> list[bpy.types.Object]:
    """The armatures whose channels the Graph Editor may show (not only the selected ones:
    "Only Show Selected" can be off)."""
    view_layer = getattr(context, "view_layer", None)
    objects = list(view_layer.objects) if view_layer is not None else []
    if context.object is not None and context.object not in objects:
        objects.append(context.object)
    return [o for o in objects if o.type == 'ARMATURE' and o.animation_data is not None]


def target_parameters(context: bpy.types.Context, names: Iterable[str]) -> list[ParameterCurves]:
    """The animated parameters (among ``names``) the operator acts on, in every action.

    In the Graph Editor: those with a selected F-curve the editor shows and lets edit (each
    once, also when several armatures share the action); elsewhere: those of the selected pose
    bones. A parameter used by several actions (NLA strips) appears once per action.
    """
    names = tuple(names)
    found: list[ParameterCurves] = []
    if in_graph_editor(context):
        selected = _graph_editor_fcurves(context)
        pointers = {f.as_pointer() for f in selected}
        paths = {f.data_path for f in selected}
        seen: set[frozenset[int]] = set()
        for obj in _animated_armatures(context):
            for use in animdata.actions_of(obj):
                index = animdata.fcurve_index(animdata.fcurve_owner(use))
                for bone in pose_bones(obj):
                    for name in names:
                        path = animdata.bone_data_path(bone.name, PARAMETERS[name].path)
                        if path not in paths:
                            continue
                        curves = read_parameter(obj, use, bone.name, name, index)
                        if curves is None:
                            continue
                        own = frozenset(f.as_pointer() for f in curves.fcurves)
                        if own & pointers and own not in seen:
                            seen.add(own)
                            found.append(curves)
        return found
    # One `animdata.fcurve_index` per action use: ``FCurves.find`` scans every curve.
    indexes: dict[str, list[tuple[animdata.ActionUse, dict]]] = {}
    for obj, bone_name in selected_pose_bones(context):
        uses = indexes.get(obj.name_full)
        if uses is None:
            uses = indexes[obj.name_full] = [
                (use, animdata.fcurve_index(animdata.fcurve_owner(use)))
                for use in animdata.actions_of(obj)
            ]
        for name in names:
            for use, index in uses:
                curves = read_parameter(obj, use, bone_name, name, index)
                if curves is not None:
                    found.append(curves)
    return found


def check_editable(parameters: Sequence[ParameterCurves]) -> None:
    """Refuse (ValueError) parameters in an action that cannot be edited here
    (`animdata.check_editable`) or with a locked F-curve (`animdata.check_unlocked`)."""
    for curves in parameters:
        animdata.check_editable(curves.use.action)
        for fcurve in curves.fcurves:
            animdata.check_unlocked(curves.bone_name, curves.use, fcurve)


def count_bones(parameters: Sequence[ParameterCurves]) -> int:
    """How many distinct bones ``parameters`` belong to."""
    return len({(p.obj.name_full, p.bone_name) for p in parameters})


def poll_pose_or_graph(cls: type, context: bpy.types.Context) -> bool:
    """Poll shared by the operators: an armature in Pose mode, or the Graph Editor.

    ``cls`` is the operator class (for ``poll_message_set``).
    """
    if in_graph_editor(context):
        if not any(_parameter_path(f.data_path) for f in _graph_editor_fcurves(context)):
            cls.poll_message_set(  # type: ignore[attr-defined]
                "Select the F-curves of RQ or swing/twist bones (rq_vector, rq_swing, "
                "rq_twist) in the Graph Editor"
            )
            return False
        return True
    return poll_pose(cls, context)


def poll_pose(cls: type, context: bpy.types.Context) -> bool:
    """Poll of the operators that work on pose bones: an armature in Pose mode.

    ``cls`` is the operator class (for ``poll_message_set``).
    """
    obj = context.object
    if obj is None or obj.type != 'ARMATURE':
        cls.poll_message_set("The active object is not an armature")  # type: ignore[attr-defined]
        return False
    if obj.mode != 'POSE':
        cls.poll_message_set("The armature is not in Pose mode")  # type: ignore[attr-defined]
        return False
    return True
