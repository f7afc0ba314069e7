# SPDX-License-Identifier: GPL-3.0-or-later
"""The batched passes (issue 12) on a small production-like rig: bones keyed 25 to 50 frames
apart, spinning past the 2*pi shells about turning axes (`rigs.spinning_keys`, the
benchmark's rig). Filter + spline + bake keep the pose at every frame within the float32
bound; the sampled conversions between RQ, quaternion and swing/twist within their
tolerance at every frame."""

import math

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro

TOLERANCE = math.radians(0.1)


def _spinning_rig(bones=6, frames=160, seed=4):
    obj = rigs.armature(tuple(f"S{i}" for i in range(bones)), chain=False)
    rng = np.random.default_rng(seed)
    for pose_bone in obj.pose.bones:
        times, vectors = rigs.spinning_keys(frames, rng)
        ro.key_rq(pose_bone, list(zip(times, vectors, strict=True)))
    obj.update_tag()
    return obj


def _angles(obj, frames):
    """Rotation of each bone's matrix_basis at each frame, as quaternions (F, B, 4)."""
    out = []
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        out.append([tuple(pb.matrix_basis.to_quaternion()) for pb in obj.pose.bones])
    return np.array(out)


def test_filter_spline_bake_keep_every_frame(addon):
    obj = _spinning_rig()
    frames = ro.frame_range(obj)
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    assert bpy.ops.pose.rq_spline_interpolate() == {'FINISHED'}
    before = rigs.pose_matrices(obj, frames)
    assert bpy.ops.pose.rq_bake(target='QUATERNION') == {'FINISHED'}
    after = rigs.pose_matrices(obj, frames)
    error = np.abs(after - before)
    assert (error <= rigs.matrix_bound(before)).all(), error.max()
    for pose_bone in obj.pose.bones:
        assert pose_bone.rotation_mode == 'QUATERNION'


@pytest.mark.parametrize(
    ("source", "target"),
    [("RQ", "QUATERNION"), ("QUATERNION", "RQ"), ("RQ", "SWING_TWIST"), ("SWING_TWIST", "RQ")],
)
def test_sampled_conversion_stays_within_tolerance_at_every_frame(addon, rq, source, target):
    obj = _spinning_rig()
    frames = ro.frame_range(obj)
    spins = max(abs(p.co[1]) for fc in rigs.fcurves_of(obj) for p in fc.keyframe_points)
    assert spins > 4 * math.pi  # the keys spin past two shells
    if source != "RQ":
        assert bpy.ops.pose.rq_set_mode(mode=source, strategy='KEYS') == {'FINISHED'}
    before = _angles(obj, frames)
    assert bpy.ops.pose.rq_set_mode(mode=target, strategy='SAMPLED', tolerance=TOLERANCE) == {
        'FINISHED'
    }
    error = rq.quat_angle_between(before, _angles(obj, frames))
    assert error.max() <= TOLERANCE + 1e-6
    counts = [len(fc.keyframe_points) for fc in rigs.fcurves_of(obj)]
    assert max(counts) < len(frames), counts  # keys were removed


def _curves(obj):
    """Every F-curve's path, index and key data (co, handles, interpolation), as bytes."""
    out = {}
    for fc in rigs.fcurves_of(obj):
        n = len(fc.keyframe_points)
        data = []
        for name in ("co", "handle_left", "handle_right"):
            values = np.empty(2 * n, dtype=np.float32)
            fc.keyframe_points.foreach_get(name, values)
            data.append(values.tobytes())
        out[fc.data_path, fc.array_index] = b"".join(data)
    return out


@pytest.mark.parametrize(
    ("target", "strategy"),
    [("QUATERNION", "SAMPLED"), ("SWING_TWIST", "SAMPLED"), ("QUATERNION", "BAKE")],
)
def test_bones_sampled_in_blocks_give_the_curves_of_all_at_once(
    addon, monkeypatch, target, strategy
):
    """`conversion.BLOCK_SAMPLES` cuts the bones' lines into blocks (sampled, refined and
    made continuous block by block): blocks of about one bone write the same curves, bit for
    bit, as one block of all six."""
    conversion = ro.addon_module("rq_blender.conversion")
    written = []
    for block in (1 << 30, 150):
        bpy.ops.wm.read_homefile(use_empty=True)
        monkeypatch.setattr(conversion, "BLOCK_SAMPLES", block)
        _spinning_rig()
        if strategy == "BAKE":
            assert bpy.ops.pose.rq_bake(target=target) == {'FINISHED'}
        else:
            result = bpy.ops.pose.rq_set_mode(mode=target, strategy=strategy, tolerance=TOLERANCE)
            assert result == {'FINISHED'}
        written.append(_curves(bpy.context.object))
    assert len(conversion._line_blocks([160] * 6)) == 6  # (150 samples: a bone a block)
    assert written[0] == written[1]
