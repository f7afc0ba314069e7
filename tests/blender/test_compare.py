# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_compare_interpolation``: numbers in the report, a numpy-drawn image datablock."""

import bpy
import numpy as np
import rigs
import rigs_operators as ro


def test_report_and_image(addon, capsys):
    obj = ro.rq_rig(
        {
            "A": [
                (1.0, (0.0, 0.0, 0.0)),
                (5.0, (0.5, 0.8, 0.2)),
                (9.0, (1.2, 0.3, -0.4)),
                (13.0, (0.6, -0.5, 0.9)),
                (17.5, (0.1, 0.2, 1.4)),
            ]
        }
    )
    obj.data.bones.active = obj.data.bones["A"]
    assert bpy.ops.pose.rq_compare_interpolation(samples=200) == {'FINISHED'}
    out = capsys.readouterr().out
    for name in ("Slerp", "Squad", "Quaternion Bezier", "Peak angular speed"):
        assert name in out
    image = bpy.data.images["RQ Interpolation Comparison"]
    pixels = np.empty(image.size[0] * image.size[1] * 4, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    colors = np.unique(pixels.reshape(-1, 4).round(2), axis=0)
    assert len(colors) >= 5  # background, grid and the curves


def test_needs_two_keys(addon):
    obj = ro.rq_rig({"A": [(1.0, (0.1, 0.2, 0.3))]})
    obj.data.bones.active = obj.data.bones["A"]
    assert bpy.ops.pose.rq_compare_interpolation() == {'CANCELLED'}
    assert "RQ Interpolation Comparison" not in bpy.data.images


def test_held_jumps_of_spline_keys_are_left_out(addon, capsys):
    """Spline Interpolation writes a change of chart as a held jump (a CONSTANT key, then the
    same rotation in the next chart 0.0101 frames later). As a key of its own that second key
    made a segment of no length, on which squad's tangents spiked (54 degrees a frame on a
    steady spin of 7): the comparison leaves it out and says so."""
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    obj = ro.rq_rig({"A": [(1.0 + 10.0 * k, 1.2 * k * axis) for k in range(8)]})
    obj.data.bones.active = obj.data.bones["A"]
    assert bpy.ops.pose.rq_compare_interpolation(samples=400) == {'FINISHED'}
    before = capsys.readouterr().out
    assert "Over 8 keys of A" in before and "leaving out" not in before
    assert bpy.ops.pose.rq_spline_interpolate() == {'FINISHED'}
    capsys.readouterr()
    assert bpy.ops.pose.rq_compare_interpolation(samples=400) == {'FINISHED'}
    after = capsys.readouterr().out
    assert "held jump" in after and "leaving out the second key of" in after
    # a steady spin (7 degrees a frame): no spike in squad's speed
    peaks = after.split("Peak angular speed (°/frame): ")[1].split("\n")[0]
    speeds = dict(item.rsplit(" ", 1) for item in peaks.split(", "))
    assert float(speeds["Squad"]) < 1.5 * float(speeds["RQ Catmull-Rom"]), after


def test_only_rq_bones(addon):
    obj = rigs.armature(("A",))
    ro.key_swing_twist(obj.pose.bones["A"], [(1.0, (0.1, 0.2), 0.0), (9.0, (0.5, -0.2), 0.4)])
    obj.data.bones.active = obj.data.bones["A"]
    assert not bpy.ops.pose.rq_compare_interpolation.poll()
