"""Comparisons between RQ splines and quaternion interpolation (the paper's Figure 2 and more).

Pure functions returning arrays, for tests, demos and operators that plot or report them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_quats, as_scalars
from .quaternion import align_quat_signs, quat_angle_between
from .rq import _quat_to_rq, _rq_to_quat, rq_sequence_continuous
from .spherical import slerp_keys, spherical_bezier, squad_keys
from .splines import bezier_control_points, bezier_values, rq_spline

__all__ = ["FIGURE2_KEYS", "angular_speed", "compare_interpolations", "figure2_experiment"]

#: The five RQ keys (radians) of the issue's fixed version of Figure 2, at t = 0, 1, 2, 3, 4.
FIGURE2_KEYS = np.array(
    [
        [0.0, 0.0, 0.0],
        [0.5, 0.8, 0.2],
        [1.2, 0.3, -0.4],
        [0.6, -0.5, 0.9],
        [0.1, 0.2, 1.4],
    ]
)


def figure2_experiment(samples_per_segment: int = 200) -> dict[str, Any]:
    """Euclidean Bezier in RQ space vs Shoemake's spherical Bezier on the same control points.

    Catmull-Rom tangents ``m_i = (p_{i+1} - p_{i-1}) / 2`` (one-sided at the ends), Bezier
    control points ``p_i + m_i/3`` and ``p_{i+1} - m_{i+1}/3`` per segment; the spherical curve
    uses the quaternions of the same four points, hemisphere-aligned, and de Casteljau with
    slerp.

    Returns
    -------
    dict
        ``t`` (M,), ``rq_curve`` (M, 3), ``spherical_curve`` (M, 3) (converted back to RQ,
        continuous with the RQ curve), ``angle`` (M,) radians between the two rotations, and
        ``max_angle_deg``.
    """
    times = np.arange(5.0)
    segs = bezier_control_points(times, FIGURE2_KEYS, "catmull_rom")
    u = np.linspace(0.0, 1.0, samples_per_segment + 1)
    ts, rqs, sph = [], [], []
    for i, p in enumerate(segs):
        uu = u if i == 0 else u[1:]
        rqs.append(bezier_values(p, uu))
        qc = align_quat_signs(_rq_to_quat(p))
        sph.append(spherical_bezier(qc[0], qc[1], qc[2], qc[3], uu))
        ts.append(i + uu)
    t = np.concatenate(ts)
    rq_curve = np.concatenate(rqs)
    sq = np.concatenate(sph)
    angle = quat_angle_between(_rq_to_quat(rq_curve), sq)
    sph_rq = _quat_to_rq(sq, rq_curve)
    return {
        "t": t,
        "rq_curve": rq_curve,
        "spherical_curve": sph_rq,
        "angle": angle,
        "max_angle_deg": float(np.degrees(angle.max())),
    }


def angular_speed(q: ArrayLike, t: ArrayLike) -> NDArray[np.float64]:
    """Angular speed of a sampled rotation, by central differences of the angles between
    neighbouring samples (one-sided at the ends).

    Parameters
    ----------
    q : array_like, shape (M, 4)
        Quaternions at times ``t``, M >= 2 (either sign).
    t : array_like, shape (M,)
        Increasing sample times.

    Returns
    -------
    ndarray, shape (M,)
        Radians per unit of ``t``.
    """
    q = as_quats(q, "q")
    t = as_scalars(t, "t")
    a = quat_angle_between(q[:-1], q[1:]) / np.diff(t)
    speed = np.empty(len(t))
    speed[1:-1] = 0.5 * (a[:-1] + a[1:])
    speed[0], speed[-1] = a[0], a[-1]
    return speed


def _component_bezier(
    times: NDArray[np.float64], y: NDArray[np.float64], t: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Per-component cubic Bezier through ``y`` (K, C) with auto-clamped handles, like F-curves.

    Handles use the Catmull-Rom slope, flattened at local extrema of each component (an
    approximation of Blender's 'Auto Clamped' handles).
    """
    h = np.diff(times)
    m = np.empty_like(y)
    m[0] = (y[1] - y[0]) / h[0]
    m[-1] = (y[-1] - y[-2]) / h[-1]
    m[1:-1] = (y[2:] - y[:-2]) / (times[2:] - times[:-2])[:, None]
    ext = (y[1:-1] - y[:-2]) * (y[2:] - y[1:-1]) <= 0
    m[1:-1][ext] = 0.0
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
    hh = h[i][:, None]
    u = ((t - times[i]) / h[i])[:, None]
    p0, p3 = y[i], y[i + 1]
    p1, p2 = p0 + m[i] * hh / 3, p3 - m[i + 1] * hh / 3
    return (1 - u) ** 3 * p0 + 3 * u * (1 - u) ** 2 * p1 + 3 * u * u * (1 - u) * p2 + u**3 * p3


def compare_interpolations(
    times: ArrayLike, keys_quat: ArrayLike, samples: int = 400
) -> dict[str, Any]:
    """Compare interpolations of quaternion keys on a common time grid.

    Parameters
    ----------
    times : array_like, shape (K,)
    keys_quat : array_like, shape (K, 4)
        Quaternion keys (hemisphere-aligned here; RQ keys made continuous with
        ``rq_sequence_continuous``).
    samples : int
        Number of evenly spaced sample times.

    Returns
    -------
    dict
        ``t`` (M,); ``quats``: name -> (M, 4); ``angular_speed``: name -> (M,) rad/time;
        ``max_angle_to_rq``: name -> max angle (radians) to the RQ Catmull-Rom spline. Names:
        ``rq_catmull_rom``, ``slerp``, ``squad``, ``quat_linear`` (per-component linear, then
        normalized: Blender's LINEAR F-curves) and ``quat_bezier`` (per-component cubic with
        auto-clamped handles, normalized: Blender's default F-curves).
    """
    times = as_scalars(times, "times")
    q = align_quat_signs(as_quats(keys_quat, "keys_quat"))
    t = np.linspace(times[0], times[-1], int(samples))
    v = rq_sequence_continuous(_quat_to_rq(q))
    spline = rq_spline(times, v, "catmull_rom")
    out = {
        "rq_catmull_rom": spline.evaluate_quat(t),
        "slerp": slerp_keys(times, q, t),
        "squad": squad_keys(times, q, t),
    }
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
    u = ((t - times[i]) / (times[i + 1] - times[i]))[:, None]
    lin = q[i] + u * (q[i + 1] - q[i])
    out["quat_linear"] = lin / np.linalg.norm(lin, axis=1, keepdims=True)
    bz = _component_bezier(times, q, t)
    out["quat_bezier"] = bz / np.linalg.norm(bz, axis=1, keepdims=True)
    ref = out["rq_catmull_rom"]
    return {
        "t": t,
        "quats": out,
        "angular_speed": {k: angular_speed(val, t) for k, val in out.items()},
        "max_angle_to_rq": {k: float(quat_angle_between(ref, val).max()) for k, val in out.items()},
    }
