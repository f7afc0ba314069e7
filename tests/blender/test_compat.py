# SPDX-License-Identifier: GPL-3.0-or-later
"""Every version boundary `compat` relies on, read from the running release's own API (RNA),
so `bash dev.sh sweep` checks each boundary on every release with a wheel (4.2 .. 5.2)."""

from __future__ import annotations

import bpy
import rigs
import rigs_operators as ro

T = bpy.types


def _properties(struct: str) -> set[str]:
    return set(getattr(T, struct).bl_rna.properties.keys())


def _parameters(struct: str, function: str) -> list[str]:
    rna_function = getattr(T, struct).bl_rna.functions[function]
    return [p.identifier for p in rna_function.parameters if not p.is_output]


def test_slotted_actions_boundary():
    compat = ro.addon_module("rq_blender.compat")
    slotted = "slots" in _properties("Action")
    assert compat.SLOTTED_ACTIONS == slotted == (bpy.app.version >= (4, 4, 0))
    assert ("action_slot" in _properties("AnimData")) == slotted
    assert ("action_slot" in _properties("NlaStrip")) == slotted
    # 4.4 and 4.5 keep a legacy ``Action.fcurves``; compat never uses it on slotted actions.
    assert ("fcurves" in _properties("Action")) == (bpy.app.version < (5, 0, 0))
    if slotted:
        assert _parameters("ActionKeyframeStrip", "channelbag") == ["slot", "ensure"]
        assert _parameters("ActionLayers", "new")[0] == "name"
        assert "type" in _parameters("ActionStrips", "new")
        assert {"fcurves", "groups"} <= _properties("ActionChannelbag")
        assert _parameters("ActionChannelbagGroups", "new") == ["name"]


def test_fcurve_creation_boundary():
    compat = ro.addon_module("rq_blender.compat")
    if not compat.SLOTTED_ACTIONS:
        assert _parameters("ActionFCurves", "new") == ["data_path", "index", "action_group"]
        return
    new = _parameters("ActionChannelbagFCurves", "new")
    assert ("group_name" in new) == compat.CHANNELBAG_NEW_TAKES_GROUP
    assert new[:2] == ["data_path", "index"]
    assert not T.FCurve.bl_rna.properties["group"].is_readonly  # assigned on 4.4 / 4.5


def test_pose_bone_selection_boundary():
    compat = ro.addon_module("rq_blender.compat")
    assert ("select" in _properties("PoseBone")) == compat.POSE_BONE_SELECT
    assert ("select" in _properties("Bone")) == (not compat.POSE_BONE_SELECT)


def test_pose_bone_selected_counts_as_blenders_tools_do():
    """`compat.pose_bone_selected` against ``context.selected_pose_bones``: bones selected
    but hidden (``Bone.hide`` before 5.0, ``PoseBone.hide`` from 5.0), or only in a hidden
    bone collection, do not count (a review found Switch Mode, Bake and Spline Interpolate
    acting on selected bones of hidden collections, which Blender's own tools skip)."""
    compat = ro.addon_module("rq_blender.compat")
    assert ("hide" in _properties("PoseBone")) == compat.POSE_BONE_HIDE
    names = ("Shown", "Hidden", "PoseHidden", "InHidden", "InHiddenChild", "InTwo", "Off")
    obj = rigs.armature(names, chain=False)
    data = obj.data
    hidden = data.collections.new("Hidden")
    child = data.collections.new("Child", parent=hidden)
    shown = data.collections.new("Shown")
    hidden.assign(data.bones["InHidden"])
    child.assign(data.bones["InHiddenChild"])
    hidden.assign(data.bones["InTwo"])
    shown.assign(data.bones["InTwo"])
    hidden.is_visible = False
    data.bones["Hidden"].hide = True
    if compat.POSE_BONE_HIDE:
        obj.pose.bones["PoseHidden"].hide = True
    rigs.select(obj.pose.bones["Off"], False)
    ours = {pb.name for pb in obj.pose.bones if compat.pose_bone_selected(pb)}
    assert ours == {pb.name for pb in bpy.context.selected_pose_bones}
    assert {"Shown", "InTwo"} <= ours and not ours & {"InHidden", "InHiddenChild", "Off"}
