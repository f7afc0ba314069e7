# SPDX-License-Identifier: GPL-3.0-or-later
"""``pose.rq_compare_interpolation``: numbers in the report, a numpy-drawn image datablock."""

import bpy
import numpy as np
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
