# SPDX-License-Identifier: GPL-3.0-or-later
"""RQ-spline interpolation written as ordinary Bezier F-curve keys (plays without Python).

The target is the core's spline (`rq_rotation.rq_spline`, with hidden keys and per-piece
reparameterization away from the shells). An F-curve holds one value per key, shared by the
segments on both sides, so the per-piece charts cannot live in the keys. Instead:

1. The target's rotations are sampled densely and unwrapped into one continuous chart (the
   chart of the first key, `rq_rotation.rq_sequence_continuous`).
2. Knots start at the key times and the core's hidden keys; at each knot the F-curve key holds
   the unwrapped value and FREE handles at 1/3 of the neighbouring intervals along the tangent
   ``dv/dt`` in that chart (``rq_velocity`` of the target's angular velocity, which is chart
   independent). Where the target's piece already is in that chart this reproduces it exactly
   (a cubic is its own Hermite interpolant).
3. The F-curves are evaluated as Blender evaluates them (`fcurve_math`) at every sample; in each
   interval whose rotation differs from the target by more than the tolerance, the worst sample
   becomes a knot (its value and tangent from the core's evaluator). Repeat until every sample is
   within the tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import rq_rotation as rq
from . import fcurve_math

# The F-curves are checked against the target spline at samples at least this dense (per
# frame) and close enough that the target turns by at most `MAX_SAMPLE_TURN` (radians) from
# one to the next (fast spins get denser samples).
SAMPLES_PER_FRAME = 4
MAX_SAMPLE_TURN = 0.01
# Knots at least this far apart (frames): ``FCurve.update`` merges keys closer than 0.01.
MIN_KEY_GAP = 0.02
# At most this many refinement passes (each adds a knot to every interval out of tolerance).
MAX_PASSES = 24
# A tangent from ``rq_velocity`` is replaced by a finite difference of the unwrapped samples
# where it is not finite or more than this many times longer (next to a shell, where the rate
# of the RQ vector is unbounded).
TANGENT_BLOWUP = 10.0

# Operator enum -> core spline kind.
KINDS = {
    'CATMULL_ROM': "catmull_rom",
    'HERMITE': "hermite",
    'BEZIER': "bezier",
    'BSPLINE': "bspline",
}


@dataclass
class SplineKeys:
    """Bezier F-curve keys for the three components of an RQ vector.

    Attributes
    ----------
    times : ndarray, shape (n,)
    values : ndarray, shape (n, 3)
    handle_left, handle_right : ndarray, shape (n, 3, 2)
        Per component, the ``(frame, value)`` handle points.
    added : int
        Knots added beyond the keys and the core's hidden keys.
    max_error : float
        Largest rotation angle (radians) between the F-curves and the target at the samples.
    """

    times: np.ndarray
    values: np.ndarray
    handle_left: np.ndarray
    handle_right: np.ndarray
    added: int
    max_error: float

    def component_keys(self, index: int) -> fcurve_math.Keys:
        """The keys of component ``index`` as `fcurve_math.Keys` (BEZIER, FREE handles)."""
        return fcurve_math.Keys(
            co=np.stack([self.times, self.values[:, index]], axis=1),
            handle_left=self.handle_left[:, index],
            handle_right=self.handle_right[:, index],
            interpolation=np.full(len(self.times), fcurve_math.BEZIER, dtype=np.int32),
        )


def _handles(times: np.ndarray, values: np.ndarray, tangents: np.ndarray):
    """Handles at 1/3 of each neighbouring interval along ``tangents``; (n, 3, 2) each."""
    h = np.diff(times)
    before = np.concatenate([h[:1], h])[:, None] / 3.0
    after = np.concatenate([h, h[-1:]])[:, None] / 3.0
    left = np.stack([np.broadcast_to(times[:, None] - before, values.shape),
                     values - tangents * before], axis=-1)
    right = np.stack([np.broadcast_to(times[:, None] + after, values.shape),
                      values + tangents * after], axis=-1)
    return left, right


def _tangents(samples: np.ndarray, unwrapped: np.ndarray, omega: np.ndarray) -> np.ndarray:
    """``dv/dt`` (m, 3) in the unwrapped chart: ``rq_velocity`` of the angular velocity, or a
    finite difference of the samples where that blows up (see `TANGENT_BLOWUP`)."""
    with np.errstate(all="ignore"):
        exact = rq.rq_velocity(unwrapped, omega)
    difference = np.gradient(unwrapped, samples, axis=0)
    size = np.linalg.norm(exact, axis=1)
    bad = ~np.isfinite(size) | (size > TANGENT_BLOWUP * (np.linalg.norm(difference, axis=1) + 1.0))
    return np.where(bad[:, None], difference, exact)


def fit(
    times: np.ndarray,
    keys: np.ndarray,
    kind: str,
    tolerance: float,
    angular_velocities: np.ndarray | None = None,
) -> SplineKeys:
    """Bezier keys that follow the core's RQ spline within ``tolerance`` (radians).

    Parameters
    ----------
    times : ndarray, shape (K,)
        Strictly increasing key frames (K >= 2; K >= 3 for the B-spline).
    keys : ndarray, shape (K, 3)
        RQ keys (the B-spline's de Boor points), windings as the animator keyed them.
    kind : str
        A core spline kind (values of `KINDS`).
    angular_velocities : ndarray, shape (K, 3), optional
        World-frame angular velocities at the keys, for ``'hermite'``.
    """
    spline = rq.rq_spline(times, keys, kind, angular_velocities=angular_velocities)
    first, last = float(times[0]), float(times[-1])
    knots = np.unique(np.concatenate([times, spline.starts, spline.ends]))
    samples, target = _samples(spline, first, last, knots)
    start = rq.quat_to_rq(target[0], near=keys[0])
    unwrapped = rq.rq_sequence_continuous(np.vstack([start, rq.quat_to_rq(target[1:])]))
    tangents = _tangents(samples, unwrapped, spline.angular_velocity(samples))
    kept = np.isin(samples, knots)
    initial = int(kept.sum())
    for _ in range(MAX_PASSES):
        result = _keys(samples, unwrapped, tangents, kept, initial)
        fitted = np.stack(
            [fcurve_math.evaluate(result.component_keys(i), samples) for i in range(3)], axis=1
        )
        error = rq.quat_angle_between(rq.rq_to_quat(fitted), target)
        result.max_error = float(error.max())
        kept_times = samples[kept]
        after = np.searchsorted(kept_times, samples)
        gap_before = samples - kept_times[np.maximum(after - 1, 0)]
        gap_after = kept_times[np.minimum(after, len(kept_times) - 1)] - samples
        room = (gap_before >= MIN_KEY_GAP) & (gap_after >= MIN_KEY_GAP)
        bad = (error > tolerance) & ~kept & room
        if not bad.any():
            return result
        interval = np.cumsum(kept)[bad]
        index = np.flatnonzero(bad)
        order = np.lexsort((-error[index], interval))
        worst = np.concatenate([[True], interval[order][1:] != interval[order][:-1]])
        kept[index[order][worst]] = True
    return result


def _samples(spline, first: float, last: float, knots: np.ndarray):
    """Sample times (m,) through ``knots`` (see `MAX_SAMPLE_TURN`) and the target there."""
    count = max(2, math.ceil((last - first) * SAMPLES_PER_FRAME) + 1)
    coarse = np.unique(np.concatenate([np.linspace(first, last, count), knots]))
    turn = rq.quat_angle_between(*(lambda q: (q[:-1], q[1:]))(spline.evaluate_quat(coarse)))
    steps = np.maximum(1, np.ceil(turn / MAX_SAMPLE_TURN)).astype(int)
    fractions = np.concatenate([np.arange(n) / n for n in steps])
    starts = np.repeat(coarse[:-1], steps) + fractions * np.repeat(np.diff(coarse), steps)
    samples = np.append(starts, coarse[-1])
    return samples, spline.evaluate_quat(samples)


def _keys(samples, unwrapped, tangents, kept, initial) -> SplineKeys:
    times = samples[kept]
    values = unwrapped[kept]
    left, right = _handles(times, values, tangents[kept])
    return SplineKeys(times, values, left, right, int(kept.sum()) - initial, math.inf)


def angular_velocities_of(channels_values, times: np.ndarray, step: float = 1e-3) -> np.ndarray:
    """World angular velocities (K, 3) of the current animation at the key ``times``:
    differences of ``channels_values(t) -> (m, 3)`` (central inside, one-sided at the first and
    last key) through ``rq_angular_velocity``."""
    low = np.maximum(times - step, times[0])
    high = np.minimum(times + step, times[-1])
    vdot = (channels_values(high) - channels_values(low)) / (high - low)[:, None]
    return rq.rq_angular_velocity(channels_values(times), vdot)
