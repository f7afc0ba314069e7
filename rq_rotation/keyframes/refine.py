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

from .._checks import EULER_ORDERS, norm, row_sum
from ..modes import RQ, SWING_TWIST, values_to_quat

# The largest rotation (radians) between two consecutive samples of the continuity chain. A
# nearest-equivalent choice is right while the true step is under pi; the bounds used to
# refine are conservative, so a quarter turn leaves a wide margin.
MAX_STEP = math.pi / 4
# At most this many refinement passes (each at least doubles the density where needed).
MAX_REFINE_PASSES = 16


# The modes whose channels bound the rotation angle between two values (`channel_distances`).
BOUNDING_MODES = frozenset({RQ, SWING_TWIST, *EULER_ORDERS})


def channel_distances(mode: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Upper bounds of the rotation angle between channel values ``a`` and ``b`` (N, k) of a
    mode of `BOUNDING_MODES`, row by row -> (N,). Catches whole turns that quaternion
    distances cannot see (Euler or RQ channels moving by 2 pi).

    Euler: the sum of the channels' absolute changes (a rotation about one axis by ``e``
    turns by at most ``|e|`` and compositions add up). RQ: the length of the vector's change
    (the exponential map never lengthens a path: its differential's singular values are 1
    along the vector and ``sin(|v|/2) / (|v|/2)`` across it, and the straight segment between
    two vectors is such a path). Swing/twist: the swing's change in length (a 2-DOF RQ
    vector) plus the twist's. The Euclidean lengths are tighter than the channel sums by up
    to sqrt(3) for RQ: a vector spinning far past 2 pi about a tilted axis needs that many
    fewer samples.
    """
    if mode not in BOUNDING_MODES:
        raise ValueError(f"the channels of {mode} do not bound the rotation angle")
    delta = np.abs(b - a)
    if mode == RQ:
        return np.sqrt(np.einsum("ij,ij->i", delta, delta))
    if mode == SWING_TWIST:
        return np.sqrt(delta[:, 0] * delta[:, 0] + delta[:, 1] * delta[:, 1]) + delta[:, 2]
    return row_sum(delta)


def _channel_steps(mode: str, values: np.ndarray) -> np.ndarray:
    """Bounds of the rotation angle between consecutive rows of channel values, shape
    (N, k) -> (N - 1,): `channel_distances` in `BOUNDING_MODES`; for QUATERNION and
    AXIS_ANGLE approximate ones (see `refine_grid`), from the change of the (axis) vector
    over its shorter length."""
    if mode in BOUNDING_MODES:
        return channel_distances(mode, values[:-1], values[1:])
    delta = np.abs(np.diff(values, axis=0))
    if mode == "QUATERNION":
        size = norm(values)
        low = np.maximum(np.minimum(size[1:], size[:-1]), 1e-12)
        return 2.0 * norm(delta) / low
    axis = norm(values[:, 1:])  # AXIS_ANGLE
    low = np.maximum(np.minimum(axis[1:], axis[:-1]), 1e-12)
    angle = np.maximum(np.abs(values[1:, 0]), np.abs(values[:-1, 0]))
    return delta[:, 0] + 2.0 * angle * norm(delta[:, 1:]) / low


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
    holds: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Time grids through the times of many lines (sources in one mode), each dense enough
    for the continuity chain, refined together: one evaluation per pass for all lines.

    A single pass when every source's own steps between its times are already under
    `MAX_STEP` (a source keyed on every frame); otherwise samples are added between times
    until they are (each line as if alone: gaps from one line to the next are not counted).

    Held stretches (``holds``, where a source stands still and then may jump: CONSTANT keys,
    the spline layout's held jumps) get their ends on the grid (within the line's times) and
    no samples inside: a jump has no path to sample, and the chain steps over it from the
    held value as it would from a sample just before it. Without them a jump (a change of
    chart moves RQ channels by 2 pi) is split pass after pass until its gap is under 1e-3
    frames, to the same result.

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
    holds : (line, start, end), each ndarray shape (h,), optional
        Held stretches, in any order: line ``line[i]`` evaluates to its value at ``start[i]``
        on all of ``[start[i], end[i])`` (`fcurve_math.held_segments`).

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
    held = np.zeros(max(len(grid) - 1, 0), dtype=bool)  # gaps inside a held stretch
    if holds is not None and len(holds[0]) and len(grid):
        line, grid, on_times, values, q, held = _add_holds(
            mode, line, grid, on_times, values, q, evaluate, holds
        )
    gaps = np.flatnonzero(~held & (line[1:] == line[:-1]))
    gap, new, new_values, new_q = _fill_gaps(
        mode, grid, values, q, gaps, lambda g, t: evaluate(line[g], t), MAX_REFINE_PASSES
    )
    if len(gap):
        old_at, new_at = _insert_at(gap, len(grid))
        size = len(grid) + len(gap)
        line = _merge(line, line[gap], old_at, new_at, size)
        grid = _merge(grid, new, old_at, new_at, size)
        on_times = _merge(on_times, np.zeros(len(gap), dtype=bool), old_at, new_at, size)
        values = _merge(values, new_values, old_at, new_at, size)
        q = _merge(q, new_q, old_at, new_at, size)
    return line, grid, on_times, values, q


def _fill_gaps(
    mode: str,
    grid: np.ndarray,
    values: np.ndarray,
    q: np.ndarray,
    gaps: np.ndarray,
    evaluate: Callable[[np.ndarray, np.ndarray], np.ndarray],
    passes: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The samples that make gaps ``gaps`` (g,) of a grid dense enough, in at most
    ``passes`` passes (the refinement of `refine_grids`).

    A pass counts the samples each gap needs (`_extra_samples`, at most 64) and spaces them
    evenly; each gap that got some becomes a small grid of its own (its ends and the new
    samples), refined by the next pass (all of its gaps are next to a new sample), so a pass
    costs what the gaps still being refined hold, never the whole grid.

    Parameters
    ----------
    grid, values, q : ndarray, shapes (N,), (N, k), (N, 4)
        Grid points and the source's channel values and rotations there.
    gaps : ndarray of int, shape (g,)
        Increasing; gap ``i`` lies between points ``i`` and ``i + 1``.
    evaluate : ``evaluate(gap, t)``, (m,), (m,) -> (m, k): values at times in those gaps.

    Returns
    -------
    gap : ndarray of int, shape (m,)
        The gap of each new sample, non-decreasing.
    t, values, q : ndarray, shapes (m,), (m, k), (m, 4)
        The new samples, increasing within each gap.
    """
    none = (np.empty(0, dtype=np.int64), np.empty(0), values[:0], q[:0])
    if passes <= 0 or not len(gaps):
        return none
    # (Every gap's count: the gaps asked for are most of them, and slicing beats gathering.)
    count = np.clip(_extra_samples(mode, grid, values, q)[gaps], 0, 64)
    gaps, count = gaps[count > 0], count[count > 0]
    if not len(gaps):
        return none
    # Each refined gap as a grid of its own: its two ends and count evenly spaced samples.
    # (Rows are gathered with np.take and put with `_put_rows`: masks and fancy indexing on
    # (n, k) rows took several times as long.)
    size = count + 2
    which = np.repeat(np.arange(len(gaps)), size)
    head = np.cumsum(size) - size  # each small grid's first row; its last: head + size - 1
    rank = np.arange(len(which)) - np.repeat(head, size)
    low, high = grid[gaps][which], grid[gaps + 1][which]
    last = rank == size[which] - 1
    inner = (rank != 0) & ~last
    sub_t = np.where(last, high, low + (high - low) * rank / (count + 1)[which])
    sub_values = np.empty((len(which), values.shape[1]))
    sub_q = np.empty((len(which), 4))
    for at, ends in ((head, gaps), (head + size - 1, gaps + 1)):
        _put_rows(sub_values, at, np.take(values, ends, axis=0))
        _put_rows(sub_q, at, np.take(q, ends, axis=0))
    rows = np.flatnonzero(inner)
    new_values = evaluate(np.take(gaps, np.take(which, rows)), np.take(sub_t, rows))
    _put_rows(sub_values, rows, new_values)
    _put_rows(sub_q, rows, values_to_quat(mode, new_values))
    deeper = _fill_gaps(
        mode,
        sub_t,
        sub_values,
        sub_q,
        np.flatnonzero(which[1:] == which[:-1]),
        lambda g, t: evaluate(gaps[which[g]], t),
        passes - 1,
    )
    if len(deeper[0]):
        old_at, new_at = _insert_at(deeper[0], len(which))
        total = len(which) + len(deeper[0])
        which = _merge(which, which[deeper[0]], old_at, new_at, total)
        inner = _merge(inner, np.ones(len(deeper[0]), dtype=bool), old_at, new_at, total)
        sub_t, sub_values, sub_q = (
            _merge(old, new, old_at, new_at, total)
            for old, new in zip((sub_t, sub_values, sub_q), deeper[1:], strict=True)
        )
    rows = np.flatnonzero(inner)
    return (
        np.take(gaps, np.take(which, rows)),
        np.take(sub_t, rows),
        np.take(sub_values, rows, axis=0),
        np.take(sub_q, rows, axis=0),
    )


def _insert_at(gap: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Where the n points of a grid and m new points go when the new ones are inserted in
    gaps ``gap`` (m,) (non-decreasing; in order within a gap): ``(old_at (n,), new_at
    (m,))``, indices into the merged n + m points (for `_merge`: no sort)."""
    count = np.bincount(gap, minlength=n)
    before = np.concatenate([[0], np.cumsum(count)[:-1]])  # new points before each point
    rank = np.arange(1, len(gap) + 1) - before[gap]
    return np.arange(n) + before, gap + before[gap] + rank


def _add_holds(
    mode: str,
    line: np.ndarray,
    grid: np.ndarray,
    on_times: np.ndarray,
    values: np.ndarray,
    q: np.ndarray,
    evaluate: Callable[[np.ndarray, np.ndarray], np.ndarray],
    holds: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The grids of `refine_grids` (N,) with the ends of the held stretches added (each
    clipped to its line's first and last grid time; stretches outside are left out), the
    new points evaluated, and which gaps (N - 1,) lie inside a held stretch. Returns
    ``(line, grid, on_times, values, q, held)``."""
    hold_line, start, end = (np.asarray(a) for a in holds)
    hold_line = hold_line.astype(np.int64)
    first = np.searchsorted(line, hold_line, side="left")
    last = np.searchsorted(line, hold_line, side="right") - 1
    inside = last >= first  # the line has grid points
    hold_line, first, last = hold_line[inside], first[inside], last[inside]
    start = np.maximum(np.asarray(start, dtype=np.float64)[inside], grid[first])
    end = np.minimum(np.asarray(end, dtype=np.float64)[inside], grid[last])
    keep = start < end
    hold_line, first, last = hold_line[keep], first[keep], last[keep]
    start, end = start[keep], end[keep]
    h, n = len(hold_line), len(grid)
    held = np.zeros(max(n - 1, 0), dtype=bool)
    if not h:
        return line, grid, on_times, values, q, held
    # Each end's place in its line's grid (the first point at or after it: the ends lie
    # within their lines). An end on a grid point is that point; the others, each (line,
    # time) once, are new points inserted before their place.
    end_line = np.concatenate([hold_line, hold_line])
    end_t = np.concatenate([start, end])
    place = _first_at_or_after(grid, np.tile(first, 2), np.tile(last, 2), end_t)
    on_grid = grid[place] == end_t
    off = np.flatnonzero(~on_grid)
    order = off[np.lexsort((end_t[off], end_line[off]))]
    fresh = np.ones(len(order), dtype=bool)
    fresh[1:] = (np.diff(end_line[order]) != 0) | (np.diff(end_t[order]) != 0)
    added = order[fresh]  # the new points, in (line, time) order
    new_point = np.zeros(len(end_t), dtype=np.int64)  # each off-grid end's new point
    new_point[order] = np.cumsum(fresh) - 1
    old_at, new_at = _insert_at(place[added] - 1, n)  # (in the gap before its place)
    where = np.where(on_grid, old_at[place], new_at[new_point] if len(added) else 0)
    size = n + len(added)
    new_values = evaluate(end_line[added], end_t[added])
    merged_on_times = np.zeros(size, dtype=bool)
    merged_on_times[old_at] = on_times
    # Gaps from each stretch's start to its end are held (overlapping stretches counted).
    depth = np.zeros(size, dtype=np.int64)
    np.add.at(depth, where[:h], 1)
    np.add.at(depth, where[h:], -1)
    return (
        _merge(line, end_line[added], old_at, new_at, size),
        _merge(grid, end_t[added], old_at, new_at, size),
        merged_on_times,
        _merge(values, new_values, old_at, new_at, size),
        _merge(q, values_to_quat(mode, new_values), old_at, new_at, size),
        np.cumsum(depth)[:-1] > 0,
    )


def _first_at_or_after(
    grid: np.ndarray, low: np.ndarray, high: np.ndarray, t: np.ndarray
) -> np.ndarray:
    """For each time ``t`` (m,), the first index ``i`` in ``[low, high]`` (m,) with ``grid[i]
    >= t``, where ``grid`` increases from ``low`` to ``high`` and ``grid[high] >= t`` (a
    line's grid and a time within it): all bisected at once (the lines' grids laid end to
    end are not one sorted array, so one ``searchsorted`` cannot answer; sorting them with
    the times cost a tenth of a bake's refinement)."""
    low, high = low.copy(), high.copy()
    while True:
        open_ = low < high
        if not open_.any():
            return low
        mid = (low + high) // 2
        short = grid[mid] < t
        low = np.where(open_ & short, mid + 1, low)
        high = np.where(open_ & ~short, mid, high)


def _merge(
    old: np.ndarray, new: np.ndarray, old_at: np.ndarray, new_at: np.ndarray, size: int
) -> np.ndarray:
    """``old`` (n, ...) and ``new`` (m, ...) rows placed at ``old_at`` (n,) and ``new_at``
    (m,) of an array of ``size`` = n + m rows."""
    out = np.empty((size, *old.shape[1:]), dtype=old.dtype)
    _put_rows(out, old_at, old)
    _put_rows(out, new_at, new)
    return out


def _put_rows(out: np.ndarray, at: np.ndarray, rows: np.ndarray) -> None:
    """``out[at] = rows`` for a C-contiguous ``out`` (n, ...), each row put as one element of
    its bytes: a third of the time of the indexing on (n, k) rows, the same values (``rows``
    cast to ``out``'s type first)."""
    if not out.flags.c_contiguous:
        raise ValueError("_put_rows writes into C-contiguous arrays only")
    np.put(_as_rows(out), at, _as_rows(np.asarray(rows, dtype=out.dtype)))


def _as_rows(a: np.ndarray) -> np.ndarray:
    """The rows of ``a`` (n, ...) as n opaque elements of their bytes (a view, of a
    C-contiguous copy if ``a`` is not C-contiguous)."""
    width = math.prod(a.shape[1:])
    flat = np.ascontiguousarray(a).reshape(len(a), width)
    return flat.view(np.dtype((np.void, flat.itemsize * width))).reshape(len(a))
