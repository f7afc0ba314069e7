# SPDX-License-Identifier: GPL-3.0-or-later
"""What the operators report, as an animator reads it: a headline short enough for the status
bar (the last report), counts that are right, UI labels instead of identifiers, a reason when
nothing changed; and the comparison image.

Headless, ``bpy.ops`` prints each report (not errors, which raise) to stdout as
``Info: text`` or ``Warning: text``; these tests read them there (the GUI layer checks the
status bar itself).
"""

import math
import os
import pathlib
import re

import bpy
import numpy as np
import pytest
import rigs
import rigs_operators as ro

# Identifiers that must never reach an animator.
IDENTIFIERS = re.compile(
    r"SWING_TWIST|CATMULL_ROM|BSPLINE|QUATERNION|EVERY_FRAME|rq_\w+|quat_\w+"
    r"|2\*pi"
)
REPORT = re.compile(r"^(Info|Warning): (.*)$", re.MULTILINE)


def _reports(capsys) -> list[tuple[str, str]]:
    """``(level, text)`` of every report printed since the last call, in order."""
    return REPORT.findall(capsys.readouterr().out)


def _headline(capsys) -> str:
    """The last report (the status bar's), after checking every report for identifiers and
    the headline for length."""
    found = _reports(capsys)
    assert found, "no report"
    for _, text in found:
        assert not IDENTIFIERS.search(text), text
    headline = found[-1][1]
    reports = ro.addon_module("rq_blender.reports")
    assert len(headline) <= reports.STATUS_LENGTH, headline
    return headline


def _keyed_chain(frames=(1.0, 10.0, 20.0), names=("A", "B", "C")):
    rng = np.random.default_rng(1)
    return ro.rq_rig({name: [(f, rng.normal(0.0, 0.6, 3)) for f in frames] for name in names})


def test_bake_reports_keys_per_channel_not_summed_over_bones(addon, capsys):
    obj = _keyed_chain()
    capsys.readouterr()
    assert bpy.ops.pose.rq_bake(target='QUATERNION') == {'FINISHED'}
    frames = len(ro.frame_range(obj))
    assert frames == 20
    assert _headline(capsys) == "Baked 3 bones to Quaternion: 20 keys per channel"
    # Every channel really has that many keys.
    assert {len(fc.keyframe_points) for fc in rigs.fcurves_of(obj)} == {20}


def test_bake_message_counts(addon):
    bake = ro.addon_module("operators.bake")
    headline, details = bake.bake_message("XYZ Euler", 31, [995] * 31)
    assert headline == "Baked 31 bones to XYZ Euler: 995 keys per channel"
    assert "30845" in details[0]  # the sum, in the details only
    assert bake.bake_message("Quaternion", 2, [12, 995])[0].endswith("12 to 995 keys per channel")
    assert (
        bake.bake_message("Quaternion", 1, [])[0]
        == "Baked 1 bone to Quaternion: no animation, current pose kept"
    )


def test_set_mode_names_the_mode_as_the_menu_does(addon, capsys):
    obj = rigs.armature(("A", "B"))
    rigs.key_rotation(obj.pose.bones["A"], "XYZ", [(1.0, (0.1, 0.2, 0.3)), (9.0, (0.2, 0.1, 0.3))])
    capsys.readouterr()
    assert bpy.ops.pose.rq_set_mode(mode='SWING_TWIST') == {'FINISHED'}
    assert _headline(capsys) == "Switched 2 bones to Swing/Twist (1 animated)"
    assert bpy.ops.pose.rq_set_mode(mode='SWING_TWIST') == {'FINISHED'}
    assert _headline(capsys) == "No bone changed: the selected bones are already Swing/Twist"
    assert bpy.ops.pose.rq_set_mode(mode='RQ') == {'FINISHED'}
    assert _headline(capsys) == "Switched 2 bones to RQ (1 animated)"


def test_reparameterize_says_why_nothing_changed(addon, capsys):
    bone_modes = ro.addon_module("rq_blender.bone_modes")
    obj = rigs.armature(("Short", "Keyed"), chain=False)
    bone_modes.enter_mode(obj.pose.bones["Short"], "RQ", (0.0, 0.0, 1.0))
    ro.key_rq(obj.pose.bones["Keyed"], [(1.0, (0.0, 0.0, 5.0)), (5.0, (0.0, 0.0, 5.5))])
    capsys.readouterr()
    assert bpy.ops.pose.rq_reparameterize() == {'FINISHED'}
    found = _reports(capsys)
    assert found[-1] == ("Warning", "No bone changed: Keyed keyed")
    assert "Left Keyed unchanged: keyed (use RQ Continuity Filter" in found[0][1]
    rigs.select(obj.pose.bones["Keyed"], False)
    assert bpy.ops.pose.rq_reparameterize() == {'FINISHED'}
    assert _headline(capsys) == "No bone changed: every vector is already within 180°"


def test_continuity_filter_reports(addon, capsys):
    ro.rq_rig({"A": ro.shell_keys()})
    capsys.readouterr()
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    assert re.fullmatch(r"Continuity filter changed \d+ keys on 1 bone", _headline(capsys))
    assert bpy.ops.pose.rq_continuity_filter() == {'FINISHED'}
    assert _headline(capsys) == "No key changed: every key is already nearest the one before it"


def test_spline_interpolation_names_the_spline_as_the_menu_does(addon, capsys):
    _keyed_chain(frames=(1.0, 5.0, 9.0, 13.0))
    capsys.readouterr()
    assert bpy.ops.pose.rq_spline_interpolate(kind='BSPLINE') == {'FINISHED'}
    assert _headline(capsys) == "Interpolated 3 bones as B-Spline"


def test_headlines_fit_the_status_bar_at_their_longest(addon):
    """Long bone names, many bones, every warning at once."""
    limit = ro.addon_module("rq_blender.reports").STATUS_LENGTH
    conversion = ro.addon_module("rq_blender.conversion")
    set_mode = ro.addon_module("operators.set_mode")
    spline = ro.addon_module("operators.spline_interpolate")
    reparameterize = ro.addon_module("operators.reparameterize")
    compare = ro.addon_module("operators.compare")
    names = [f"upperarm_twist.{i:03d}.L" for i in range(120)]
    plans = [conversion.BonePlan(name, "XYZ", "SWING_TWIST", np.zeros(3)) for name in names]
    for plan in plans:
        plan.tracks, plan.limited_keys, plan.widened = [None], 9, True
    rng = np.random.default_rng(0)
    result = {
        "max_angle_to_rq": {k: 0.4 for k in compare.CURVE_LABELS},
        "angular_speed": {k: rng.random(5) for k in compare.CURVE_LABELS},
    }
    headlines = [
        set_mode.set_mode_message("Swing/Twist", plans)[0],
        spline.interpolate_message("Automatic Bezier", 120, 120, 9999, 999, 99, 0.1, names)[0],
        reparameterize.reparameterize_message(0, names, names, math.pi)[0],
        reparameterize.reparameterize_message(120, names, names, math.pi)[0],
        compare.compare_message(names[0], result, 9999, 999)[0],
        ro.addon_module("operators.bake").bake_message("Quaternion", 120, [12, 99999])[0],
    ]
    for headline in headlines:
        assert len(headline) <= limit, headline
        assert not IDENTIFIERS.search(headline), headline


def test_names_stay_short_in_headlines(addon):
    reports = ro.addon_module("rq_blender.reports")
    assert reports.name_list(["A"]) == "A"
    assert reports.name_list(["A", "B", "A"]) == "A and B"
    assert reports.name_list(list("ABCDE")) == "A, B, C and 2 more"


def test_comparison_image_has_axes_legend_and_is_kept(addon, capsys):
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
    capsys.readouterr()
    assert bpy.ops.pose.rq_compare_interpolation(samples=200) == {'FINISHED'}
    headline = _headline(capsys)
    assert re.fullmatch(
        r"A: up to [0-9.]+° from the RQ spline \((Slerp|Squad|Quaternion "
        r"Linear|Quaternion Bezier)\)",
        headline,
    ), headline
    image = bpy.data.images["RQ Interpolation Comparison"]
    assert image.use_fake_user and image.packed_file is not None and not image.is_dirty
    width, height = image.size
    pixels = np.empty(width * height * 4, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    rgb = pixels.reshape(height, width, 4)[..., :3]
    comparison = ro.addon_module("rq_blender.comparison_image")
    compare = ro.addon_module("operators.compare")
    for style in comparison.STYLES[: len(compare.CURVE_LABELS)]:
        hits = np.all(np.abs(rgb - np.array(style.color[:3])) < 0.6 / 255, axis=-1)
        # The legend's sample line alone is 33 pixels long.
        assert hits.sum() > 33 * style.width, style
    # Text: light pixels of the labels' grey, left of the plot (the y tick labels) and right
    # of it (the legend).
    text = np.all(rgb > 0.5, axis=-1) & (np.ptp(rgb, axis=-1) < 0.02)
    assert text[:, :40].sum() > 50 and text[:, -150:].sum() > 200
    shots = os.environ.get("RQ_IMAGE_DIR")
    if shots:
        image.save_render(str(pathlib.Path(shots) / "comparison.png"))


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (1.0, 17.5, [5.0, 10.0, 15.0]),
        (0.0, 43.0, [0.0, 10.0, 20.0, 30.0, 40.0]),
        (0.0, 2.4, [0.0, 0.5, 1.0, 1.5, 2.0]),
    ],
)
def test_nice_ticks(addon, low, high, expected):
    comparison = ro.addon_module("rq_blender.comparison_image")
    ticks, _ = comparison.nice_ticks(low, high, 5)
    np.testing.assert_allclose(ticks, expected)
