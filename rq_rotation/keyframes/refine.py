# SPDX-License-Identifier: GPL-3.0-or-later
"""Sample grids dense enough for a continuity chain (`continuity.continuous_values`).

A chain picks each sample's equivalent nearest the previous one, which is right while the
true step is under pi. `refine_grid` adds samples between given times until no step of the
source turns more than `MAX_STEP`, bounded from the source channels' own change, so a source
that spins 720 degrees between two keys keeps its two revolutions, and a source keyed on
every frame needs no refinement.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..modes import values_to_quat
from ..quaternion import quat_angle_between

# The largest rotation (radians) between two consecutive samples of the continuity chain. A
# nearest-equivalent choice is right while the true step is under pi; the bounds used to
# refine are conservative, so a quarter turn leaves a wide margin.
MAX_STEP = math.pi / 4
# At most this many refinement passes (each at least doubles the density where needed).
MAX_REFINE_PASSES = 16


def _channel_steps(mode: str, values: np.ndarray) -> np.ndarray:
    """Upper bounds of the rotation angle between consecutive rows of channel values, shape
    (N, k) -> (N - 1,). Catches whole turns that quaternion distances cannot see (Euler or
    RQ channels moving by 2 pi).

    Euler, RQ and swing/twist: the sum of the channels' absolute changes (a rotation about
    one axis by ``e`` turns by at most ``|e|``, compositions add up, and the exponential map
    never lengthens a path). QUATERNION and AXIS_ANGLE: approximate (see `refine_grid`).
    """
    delta = np.abs(np.diff(values, axis=0))
    if mode == "QUATERNION":
        norm = np.linalg.norm(values, axis=1)
        low = np.maximum(np.minimum(norm[1:], norm[:-1]), 1e-12)
        return 2.0 * np.linalg.norm(delta, axis=1) / low
    if mode == "AXIS_ANGLE":
        norm = np.linalg.norm(values[:, 1:], axis=1)
        low = np.maximum(np.minimum(norm[1:], norm[:-1]), 1e-12)
        size = np.maximum(np.abs(values[1:, 0]), np.abs(values[:-1, 0]))
        return delta[:, 0] + 2.0 * size * np.linalg.norm(delta[:, 1:], axis=1) / low
    return delta.sum(axis=1)


def _extra_samples(mode: str, grid: np.ndarray, values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """How many samples each gap of a grid (N,) needs inserted for the chain's steps to stay
    under `MAX_STEP`, shape (N - 1,), from the source's channel values (N, k) and rotations
    (N, 4) on the grid (gaps under 1e-3 frames need none)."""
    steps = _channel_steps(mode, values)
    if mode in ("QUATERNION", "AXIS_ANGLE"):
        # Their channel bounds are approximate: the true angle may be the larger.
        steps = np.maximum(steps, quat_angle_between(q[:-1], q[1:]))
    extra = np.ceil(steps / MAX_STEP).astype(int) - 1
    extra[np.diff(grid) < 1e-3] = 0
    return extra


def dense_enough(
    modes: Sequence[str],
    grids: Sequence[np.ndarray],
    values: Sequence[np.ndarray],
    quats: Sequence[np.ndarray],
) -> np.ndarray:
    """Which lines (grid (n,), values (n, k), rotations (n, 4), each in its source mode) need
    no refinement (`refine_grid` would keep their grid), shape (lines,) bool: one
    `_extra_samples` call per mode on the lines stacked (the gaps from one line to the next
    are not counted)."""
    dense = np.ones(len(modes), dtype=bool)
    for mode in set(modes):
        index = [i for i, m in enumerate(modes) if m == mode]
        extra = _extra_samples(
            mode,
            np.concatenate([grids[i] for i in index]),
            np.concatenate([values[i] for i in index]),
            np.concatenate([quats[i] for i in index]),
        )
        stops = np.cumsum([len(grids[i]) for i in index])
        # Gaps before each sample that need samples; a line's own gaps end before its last.
        needy = np.cumsum(np.concatenate([[0], extra > 0]))
        starts = np.concatenate([[0], stops[:-1]])
        dense[index] = needy[stops - 1] == needy[starts]
    return dense


def refine_grid(
    mode: str,
    times: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray],
    at_times: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A time grid through ``times`` dense enough for the continuity chain.

    A single pass when the source's own steps between ``times`` are already under `MAX_STEP`
    (a source keyed on every frame); otherwise samples are added between times until they
    are.

    Parameters
    ----------
    mode : str
        The source mode; ``evaluate(t)`` gives its channel values, (m,) -> (m, k).
    times : ndarray, shape (n,)
        Increasing times that must be on the grid.
    at_times : (values (n, k), q (n, 4)), optional
        The source's channel values and rotations at ``times``, if already known.

    Returns
    -------
    grid : ndarray, shape (N,)
    on_times : ndarray of bool, shape (N,)
        Which grid points are ``times``.
    values : ndarray, shape (N, k)
        The source channel values on the grid.
    q : ndarray, shape (N, 4)
        The source rotations on the grid.
    """
    grid = np.asarray(times, dtype=np.float64)
    on_times = np.ones(len(grid), dtype=bool)
    if at_times is None:
        values = evaluate(grid)
        q = values_to_quat(mode, values)
    else:
        values, q = at_times
    for _ in range(MAX_REFINE_PASSES):
        if len(grid) < 2:
            break
        count = np.clip(_extra_samples(mode, grid, values, q), 0, 64)
        if not count.any():
            break
        # Gap i gets count[i] evenly spaced samples; only they are evaluated.
        gap = np.repeat(np.arange(len(count)), count)
        rank = np.arange(1, len(gap) + 1) - np.repeat(np.cumsum(count) - count, count)
        new = grid[gap] + (grid[gap + 1] - grid[gap]) * rank / (count[gap] + 1)
        new_values = evaluate(new)
        order = np.argsort(np.concatenate([grid, new]), kind="stable")
        grid = np.concatenate([grid, new])[order]
        on_times = np.concatenate([on_times, np.zeros(len(new), dtype=bool)])[order]
        values = np.concatenate([values, new_values])[order]
        q = np.concatenate([q, values_to_quat(mode, new_values)])[order]
    return grid, on_times, values, q
