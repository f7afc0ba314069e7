# SPDX-License-Identifier: GPL-3.0-or-later
"""``bash dev.sh demo``: the add-on at work in real Blender (the bpy wheel).

Builds the extension zip with Blender's own tool, installs it into a throwaway Blender
user folder, creates a rig, puts a bone in RQ mode, poses it through its rotation vector
and prints the bone's matrix next to the rotation the numpy core predicts.
"""

from __future__ import annotations

import math
import sys

from blender_extension import REPO, build_zip, install, use_temporary_user_resources

user_folder = use_temporary_user_resources()

import bpy  # noqa: E402  (Blender reads BLENDER_USER_RESOURCES when it starts)
import numpy as np  # noqa: E402


def step(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def make_rig(name: str = "Arm") -> bpy.types.Object:
    """An armature object with one bone along +Y, active and in Pose mode."""
    armature = bpy.data.armatures.new(name)
    rig = bpy.data.objects.new(name, armature)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode='EDIT')
    bone = armature.edit_bones.new("Forearm")
    bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, 1.0, 0.0)
    bpy.ops.object.mode_set(mode='POSE')
    return rig


def main() -> int:
    bpy.ops.wm.read_homefile(use_empty=True)
    step(f"Blender {bpy.app.version_string}")
    zip_path = build_zip(REPO / "dist")
    step(f"built {zip_path.relative_to(REPO)} with Blender's blender_ext.py")
    addon = install(zip_path)
    step(f"installed and enabled {addon.__name__}")
    rq = addon.rq_rotation

    rig = make_rig()
    bpy.ops.pose.select_all(action='SELECT')
    result = bpy.ops.pose.rq_set_mode(mode='RQ')
    step(f"pose.rq_set_mode(mode='RQ') -> {sorted(result)}")
    pose_bone = rig.pose.bones["Forearm"]

    vector = np.array([0.3, -0.5, 1.1]) * math.radians(60) / np.linalg.norm([0.3, -0.5, 1.1])
    pose_bone["rq_vector"] = vector.tolist()
    rig.update_tag()
    bpy.context.view_layer.update()
    matrix = np.array(pose_bone.matrix_basis)[:3, :3]
    expected = rq.rq_to_matrix(vector)
    step(f'pose_bone["rq_vector"] = {np.round(vector, 4).tolist()} (60 degrees)')
    print("bone rotation matrix (from Blender's drivers):")
    print(np.array2string(matrix, precision=6, suppress_small=True))
    difference = np.abs(matrix - expected).max()
    print(f"largest difference from rq_rotation.rq_to_matrix: {difference:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
