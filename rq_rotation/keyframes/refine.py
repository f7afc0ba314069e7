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
from collections.abc import Callable

import numpy as np

from ..modes import values_to_quat

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
        # Their channel bounds are approximate: the true angle may be the larger. (The
        # rotations are unit quaternions; ``2 acos |dot|`` loses digits only for tiny angles,
        # which count no samples here, and is several times cheaper than
        # `quat_angle_between`.)
        dot = np.abs(np.einsum("ij,ij->i", q[:-1], q[1:]))
        steps = np.maximum(steps, 2.0 * np.arccos(np.minimum(dot, 1.0)))
    extra = np.ceil(steps / MAX_STEP).astype(int) - 1
    extra[np.diff(grid) < 1e-3] = 0
    return extra


def refine_grid(
    mode: str,
    times: np.ndarray,
    evaluate: Callable[[np.ndarray], np.ndarray],
    at_times: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A time grid through ``times`` dense enough for the continuity chain (`refine_grids`
    of one line).

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
    if at_times is None:
        values = evaluate(grid)
        q = values_to_quat(mode, values)
    else:
        values, q = at_times
    _, grid, on_times, values, q = refine_grids(
        mode, np.zeros(len(grid), dtype=np.int64), grid, values, q, lambda _, t: evaluate(t)
    )
    return grid, on_times, values, q


def refine_grids(
    mode: str,
    line: np.ndarray,
    times: np.ndarray,
    values: np.ndarray,
    q: np.ndarray,
    evaluate: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Time grids through the times of many lines (sources in one mode), each dense enough
    for the continuity chain, refined together: one evaluation per pass for all lines.

    A single pass when every source's own steps between its times are already under
    `MAX_STEP` (a source keyed on every frame); otherwise samples are added between times
    until they are (each line as if alone: gaps from one line to the next are not counted).

    Parameters
    ----------
    mode : str
        The sources' mode; ``evaluate(line, t)`` gives the channel values of each line at its
        time, (m,), (m,) -> (m, k).
    line : ndarray of int, shape (n,)
        Which line each time is on, non-decreasing.
    times : ndarray, shape (n,)
        The times that must be on the grids, increasing within each line.
    values, q : ndarray, shapes (n, k) and (n, 4)
        The sources' channel values and rotations at ``times``.

    Returns
    -------
    line, grid : ndarray, shape (N,)
        The grid points of every line, in line order, increasing within each line.
    on_times : ndarray of bool, shape (N,)
        Which grid points are ``times``.
    values, q : ndarray, shapes (N, k) and (N, 4)
        The sources' channel values and rotations on the grids.
    """
    line = np.asarray(line, dtype=np.int64)
    grid = np.asarray(times, dtype=np.float64)
    on_times = np.ones(len(grid), dtype=bool)
    # The gaps to examine: all at first, then those next to the samples just added (the
    # others keep their ends, so they need nothing more).
    check = np.ones(max(len(grid) - 1, 0), dtype=bool)
    for _ in range(MAX_REFINE_PASSES):
        gaps = np.flatnonzero(check & (line[1:] == line[:-1]))
        if not len(gaps):
            break
        ends = np.stack([gaps, gaps + 1], axis=1).ravel()
        count = np.zeros(len(grid) - 1, dtype=np.int64)
        count[gaps] = np.clip(_extra_samples(mode, grid[ends], values[ends], q[ends])[0::2], 0, 64)
        if not count.any():
            break
        # Gap i gets count[i] evenly spaced samples; only they are evaluated.
        gap = np.repeat(np.arange(len(count)), count)
        rank = np.arange(1, len(gap) + 1) - np.repeat(np.cumsum(count) - count, count)
        new = grid[gap] + (grid[gap + 1] - grid[gap]) * rank / (count[gap] + 1)
        new_line = line[gap]
        new_values = evaluate(new_line, new)
        # Merged in place of a sort: the samples of gap i go right after point i.
        before = np.concatenate([[0], np.cumsum(count)])  # new samples before each point
        old_at = np.arange(len(grid)) + before
        new_at = gap + before[gap] + rank
        size = len(grid) + len(new)
        line = _merge(line, new_line, old_at, new_at, size)
        grid = _merge(grid, new, old_at, new_at, size)
        on_times = _merge(on_times, np.zeros(len(new), dtype=bool), old_at, new_at, size)
        values = _merge(values, new_values, old_at, new_at, size)
        q = _merge(q, values_to_quat(mode, new_values), old_at, new_at, size)
        check = np.zeros(size - 1, dtype=bool)
        check[new_at - 1] = True
        check[new_at] = True
    return line, grid, on_times, values, q


def _merge(
    old: np.ndarray, new: np.ndarray, old_at: np.ndarray, new_at: np.ndarray, size: int
) -> np.ndarray:
    """``old`` (n, ...) and ``new`` (m, ...) rows placed at ``old_at`` (n,) and ``new_at``
    (m,) of an array of ``size`` = n + m rows."""
    out = np.empty((size, *old.shape[1:]), dtype=old.dtype)
    out[old_at] = old
    out[new_at] = new
    return out
