# SPDX-License-Identifier: GPL-3.0-or-later
"""``bash dev.sh demo``, stage 2 of 2: the pictures, drawn with matplotlib outside Blender.

Reads ``demo_data.npz`` written by ``tools/demo.py`` and writes into the same folder:

1. ``figure2_rq_vs_spherical.png``: the paper's Figure 2, x, y, z of the Euclidean Bezier
   interpolation of RQ vectors against Shoemake's spherical Bezier on the quaternions of the
   same control points, converted back to RQ (keys and tangents fixed in the core's
   `figure2_experiment`);
2. ``angular_speed.png``: angular speed along the wrist's interpolation for the RQ spline,
   slerp, squad and Blender's per-component quaternion F-curves (sampled in Blender);
3. ``swing_limit.png``: the shoulder's swing-limit ellipse with the keyed swings, where
   Blender's drivers put them (scaled radially onto the ellipse) and the closest points that
   tools store;
4. ``ik_reach.png``: a second arm reaching a series of targets with ``pose.rq_ik_reach``:
   where the hand went against each target (seen from the side and from above), and the
   shoulder's swings inside its ellipse.

Prints the numbers behind each picture and writes them to ``summary.json``.
Usage: ``python tools/demo_figures.py OUTPUT_DIR``.
"""

from __future__ import annotations

import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import rq_rotation as rq


def figure2(output: pathlib.Path) -> float:
    experiment = rq.figure2_experiment()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for axis, colour in zip("xyz", ("tab:red", "tab:green", "tab:blue"), strict=True):
        index = "xyz".index(axis)
        ax.plot(experiment["t"], experiment["rq_curve"][:, index], color=colour, label=f"RQ {axis}")
        ax.plot(
            experiment["t"],
            experiment["spherical_curve"][:, index],
            color=colour,
            linestyle="--",
            label=f"Spherical {axis}",
        )
    ax.plot(np.arange(5.0), rq.FIGURE2_KEYS, "ko", markersize=4)
    ax.set(
        xlabel="time",
        ylabel="RQ component (radians)",
        title=f"Figure 2: Euclidean Bezier on RQ vs spherical Bezier\n"
        f"(largest angle between the two: {experiment['max_angle_deg']:.2f} degrees)",
    )
    ax.legend(ncol=3, fontsize="small")
    fig.tight_layout()
    fig.savefig(output / "figure2_rq_vs_spherical.png", dpi=120)
    plt.close(fig)
    return experiment["max_angle_deg"]


def angular_speed(output: pathlib.Path, data) -> dict[str, float]:
    times, quats = data["wrist_times"].astype(float), data["wrist_quats"]
    comparison = rq.compare_interpolations(times, quats, samples=400)
    speeds = {
        "RQ spline (Catmull-Rom)": comparison["angular_speed"]["rq_catmull_rom"],
        "slerp": comparison["angular_speed"]["slerp"],
        "squad": comparison["angular_speed"]["squad"],
    }
    blender_speed = rq.angular_speed(data["blender_quats"], data["blender_t"])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, speed in speeds.items():
        ax.plot(comparison["t"], np.degrees(speed), label=label)
    ax.plot(data["blender_t"], np.degrees(blender_speed), label="Blender quaternion F-curves")
    for key_time in times:
        ax.axvline(key_time, color="0.85", zorder=0)
    ax.set(
        xlabel="frame",
        ylabel="angular speed (degrees per frame)",
        title="Wrist: angular speed along each interpolation of the same keys",
    )
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(output / "angular_speed.png", dpi=120)
    plt.close(fig)
    peaks = {label: float(np.degrees(speed.max())) for label, speed in speeds.items()}
    peaks["Blender quaternion F-curves"] = float(np.degrees(blender_speed.max()))
    return peaks


def swing_limit(output: pathlib.Path, data) -> tuple[float, float]:
    a, b = data["shoulder_limit"]
    keys = data["shoulder_swing_keys"]
    evaluated = data["shoulder_swing_evaluated"]
    closest = rq.clamp_swing_ellipse(keys, a, b)
    scaled = rq.scale_swing_into_ellipse(keys, a, b)
    angle = np.linspace(0, 2 * np.pi, 200)
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    ax.fill(
        np.degrees(a * np.cos(angle)),
        np.degrees(b * np.sin(angle)),
        color="0.9",
        label="swing limit",
    )
    ax.plot(*np.degrees(keys).T, "o", color="tab:red", label="keyed swing")
    ax.plot(
        *np.degrees(evaluated).T,
        "x",
        color="tab:blue",
        markersize=9,
        label="posed by Blender (radial scaling)",
    )
    ax.plot(
        *np.degrees(closest).T,
        "s",
        color="tab:green",
        markerfacecolor="none",
        label="closest point (what tools store)",
    )
    for key, pose in zip(keys, evaluated, strict=True):
        ax.plot(*np.degrees([key, pose]).T, color="0.6", linewidth=0.8)
    ax.set(
        xlabel="swing about X (degrees)",
        ylabel="swing about Z (degrees)",
        aspect="equal",
        title="Shoulder: elliptical swing limit",
    )
    ax.legend(fontsize="small", loc="lower left")
    fig.tight_layout()
    fig.savefig(output / "swing_limit.png", dpi=120)
    plt.close(fig)
    blender_vs_scaling = float(np.abs(evaluated - scaled).max())
    outside = int(np.count_nonzero(~rq.swing_in_ellipse(keys, a, b)))
    return blender_vs_scaling, outside


def ik_reach(output: pathlib.Path, data) -> dict[str, float]:
    targets, hands = data["ik_targets"], data["ik_hands"]
    distances, swings = data["ik_distances"], data["ik_shoulder_swings"]
    reached = distances < 1e-4 * float(data["ik_reach"])
    root = np.array([3.0, 0.0, 0.0])  # the second arm's shoulder (tools/demo.py)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6))
    for ax, (i, j, title) in zip(
        axes[:2], ((1, 2, "from the side (Y, Z)"), (0, 1, "from above (X, Y)")), strict=True
    ):
        local_t, local_h = targets - root, hands - root
        ax.plot(0.0, 0.0, "k^", markersize=8, label="shoulder")
        ax.plot(
            *local_t[reached][:, [i, j]].T,
            "+",
            color="tab:green",
            markersize=11,
            mew=2,
            label="target reached",
        )
        ax.plot(
            *local_t[~reached][:, [i, j]].T,
            "x",
            color="tab:red",
            markersize=9,
            mew=2,
            label="target out of reach",
        )
        ax.plot(
            *local_h[:, [i, j]].T,
            "o",
            color="tab:blue",
            markerfacecolor="none",
            label="where the hand went",
        )
        for t, h in zip(local_t[~reached], local_h[~reached], strict=True):
            ax.plot(*np.stack([t, h])[:, [i, j]].T, color="0.6", linewidth=0.8)
        ax.set(xlabel="XYZ"[i], ylabel="XYZ"[j], aspect="equal", title=f"Hand and targets, {title}")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=4, fontsize="small")
    a, b = data["shoulder_limit"]
    angle = np.linspace(0, 2 * np.pi, 200)
    ax = axes[2]
    ax.fill(
        np.degrees(a * np.cos(angle)),
        np.degrees(b * np.sin(angle)),
        color="0.9",
        label="swing limit",
    )
    ax.plot(*np.degrees(swings[reached]).T, "o", color="tab:green", label="reached")
    ax.plot(
        *np.degrees(swings[~reached]).T,
        "s",
        color="tab:red",
        markerfacecolor="none",
        label="out of reach: closest pose",
    )
    ax.set(
        xlabel="swing about X (degrees)",
        ylabel="swing about Z (degrees)",
        aspect="equal",
        title="Shoulder swings while reaching",
    )
    ax.legend(fontsize="small", loc="upper left")
    fig.tight_layout(rect=(0.0, 0.07, 1.0, 1.0))
    fig.savefig(output / "ik_reach.png", dpi=110)
    plt.close(fig)
    inside = rq.swing_in_ellipse(swings, a, b, tol=1e-9)
    return {
        "targets": float(len(targets)),
        "reached": float(np.count_nonzero(reached)),
        "worst_reached_distance": float(distances[reached].max(initial=0.0)),
        "swings_outside": float(np.count_nonzero(~inside)),
    }


def main(output: pathlib.Path) -> int:
    data = np.load(output / "demo_data.npz")
    print(f"[demo] pictures in {output} (Blender {data['blender_version']})")
    max_angle = figure2(output)
    print(
        f"  1. figure2_rq_vs_spherical.png: largest angle between the RQ Bezier and the "
        f"spherical Bezier: {max_angle:.3f} deg (the paper: 'correspond quite closely')"
    )
    peaks = angular_speed(output, data)
    print(
        "  2. angular_speed.png: peak angular speed along the wrist's interpolation "
        "(degrees per frame):"
    )
    for label, peak in peaks.items():
        print(f"       {label:30s} {peak:6.2f}")
    difference, outside = swing_limit(output, data)
    print(
        f"  3. swing_limit.png: {outside} of {len(data['shoulder_swing_keys'])} keyed swings "
        f"lie outside the ellipse; Blender's drivers pose them at the radial scaling within "
        f"{difference:.1e} rad"
    )
    ik = ik_reach(output, data)
    print(
        f"  4. ik_reach.png: the arm reached {ik['reached']:.0f} of {ik['targets']:.0f} targets "
        f"(within {ik['worst_reached_distance']:.1e}); {ik['swings_outside']:.0f} shoulder "
        f"swings outside the ellipse"
    )
    turns_before, turns_after = data["prop_turns"]
    bake_error = float(data["bake_error_deg"])
    print(
        f"  prop: {turns_before:.2f} turns before the continuity filter, "
        f"{turns_after:.2f} after; bake error {bake_error:.1e} deg"
    )
    summary = {
        "figure2_max_angle_deg": max_angle,
        "peak_angular_speed_deg_per_frame": peaks,
        "swings_outside_limit": outside,
        "blender_vs_radial_scaling_rad": difference,
        "prop_turns": [float(turns_before), float(turns_after)],
        "bake_error_deg": bake_error,
        "ik": ik,
    }
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "demo_output").resolve()))
