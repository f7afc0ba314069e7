# SPDX-License-Identifier: GPL-3.0-or-later
"""Key reduction within a tolerance: which sampled frames to keep as keys.

The SAMPLED conversion (``rq_blender.conversion``) starts from the keys `seed_keys` predicts,
writes a track's keys, lets Blender compute their handles, measures the rotation error at
every sampled frame and keeps more keys in every gap that exceeds the tolerance, until none
does. `add_worst_frames` is one such step for any number of tracks at once.
"""

from __future__ import annotations

import numpy as np

from .._checks import row_sum
from ..modes import values_to_quat
from ..quaternion import quat_angle_between
from .fcurve_math import evaluate_segments
from .refine import BOUNDING_MODES, channel_distances

# How the error of a segment shrinks as its gap is split: an interpolating cubic spline's
# error falls like the fourth power of its key spacing. `add_worst_frames` uses it to predict
# how many keys a gap needs, so a long gap far over the tolerance is split in one step
# instead of halved pass after pass.
ERROR_ORDER = 4.0
# `seed_keys`: the error constant of an interpolating cubic spline (5/384), and the step
# (frames) of the fourth differences that estimate the fourth derivative.
SEED_FACTOR = 5.0 / 384.0
SEED_STEP = 3


def seed_keys(values: np.ndarray, first: np.ndarray, tolerance: float) -> np.ndarray:
    """The frames a reduction starts from: each track's ends, and frames spaced as a cubic
    spline through the values would need to stay within ``tolerance``.

    An interpolating cubic spline with key spacing ``h`` errs by about
    ``5/384 * h**4 * |f''''|``. The fourth derivative is estimated from fourth differences
    over `SEED_STEP` frames (divided by ``SEED_STEP**4``: frame-to-frame noise, which a
    fourth difference amplifies, counts ``SEED_STEP**4`` times less than over one frame),
    and ``(SEED_FACTOR * |f''''| / tolerance) ** (1/4)`` keys per frame, accumulated along
    each track, place its keys; `SEED_FACTOR` is the spline's constant, spacing the seeds
    as predicted. (The reduction can add keys but never removes a seed. Measured on 200
    spinning bones x 1000 frames at 0.1 degree, converting quaternion, RQ and swing/twist:
    seeds 1.8 times wider, a tenth of the constant, ended with 0.4 to 1.4% more keys after
    one pass more, most of it over every frame; seeds 1.2 times denser with 4% more keys. On
    the noisy CMU mocap clip the wider seeds end with 4% fewer keys at 0.1 degree and 8%
    fewer at 0.5 degree: noise inflates the fourth differences.)
    The channels' changes are summed as rotation angles (a bound for RQ, Euler and
    swing/twist channels; quaternion components turn by about twice theirs).
    Only a guess: the reduction then measures the error against Blender's curves and adds
    what is missing (`add_worst_frames`).

    Parameters
    ----------
    values : ndarray, shape (n, k)
        The channel values at every frame of one or more tracks laid end to end.
    first : ndarray of bool, shape (n,)
        Where each track starts (``first[0]`` True).
    tolerance : float
        Radians, > 0.

    Returns
    -------
    ndarray of bool, shape (n,)
        The frames to keep first: every track's first and last, and the seeds.
    """
    first = np.asarray(first, dtype=bool)
    kept = first | np.append(first[1:], True)
    h = SEED_STEP
    n = len(values)
    if n <= 4 * h:
        return kept
    track = np.cumsum(first)
    # The fourth difference over steps of h centred on each frame (zero within 2h frames of
    # a track's end).
    v = np.asarray(values, dtype=np.float64)
    fourth = v[4 * h :] - 4.0 * v[3 * h : -h] + 6.0 * v[2 * h : -2 * h] - 4.0 * v[h : -3 * h]
    fourth = row_sum(np.abs(fourth + v[: -4 * h])) / h**4
    fourth[track[: -4 * h] != track[4 * h :]] = 0.0
    density = np.zeros(n)
    density[2 * h : n - 2 * h] = (SEED_FACTOR * fourth / tolerance) ** (1.0 / ERROR_ORDER)
    # Keys wherever the density accumulated since the track's start passes a whole number.
    total = np.cumsum(density)
    total -= np.maximum.accumulate(np.where(first, total - density, 0.0))
    count = np.floor(total)
    kept[1:] |= (count[1:] > count[:-1]) & ~first[1:]
    return kept


def add_worst_frames(
    kept: np.ndarray, error: np.ndarray, tolerance: float
) -> tuple[np.ndarray, np.ndarray]:
    """Keep, in every gap between kept frames with an error above ``tolerance``, the frame
    with the largest error (the first of equal ones); a gap whose largest error ``E`` calls
    for ``m = ceil((E / tolerance) ** (1 / ERROR_ORDER)) >= 3`` pieces is also split at
    ``m - 1`` evenly spaced frames (the spacing its error predicts, `ERROR_ORDER`).

    Parameters
    ----------
    kept : ndarray of bool, shape (n,)
        The kept frames of one or more tracks laid end to end; each track's first and last
        frames must be kept (so every gap lies inside one track, between two kept frames).
    error : ndarray, shape (n,)
        The rotation error (radians) at each frame with the current keys.
    tolerance : float

    Returns
    -------
    kept : ndarray of bool, shape (n,)
        The new kept frames (a copy).
    over : ndarray of bool, shape (n,)
        The frames that were over the tolerance and not kept (where frames were added).
    """
    kept = np.array(kept, dtype=bool)
    error = np.asarray(error)
    over = (error > tolerance) & ~kept
    if not over.any():
        return kept, over
    # The frames over the tolerance, in order, fall in runs of one gap each (no sort).
    index = np.flatnonzero(over)
    gap = np.cumsum(kept)[index]
    starts = np.flatnonzero(np.concatenate([[True], gap[1:] != gap[:-1]]))
    worst = np.maximum.reduceat(error[index], starts)
    is_worst = error[index] == np.repeat(worst, np.diff(np.append(starts, len(index))))
    candidates = np.flatnonzero(is_worst)
    first = np.concatenate([[True], gap[candidates][1:] != gap[candidates][:-1]])
    kept_at = np.flatnonzero(kept)
    # Each over gap's kept ends (frames kept[low] and kept[high]) and predicted pieces.
    low = kept_at[gap[starts] - 1]
    high = kept_at[np.minimum(gap[starts], len(kept_at) - 1)]
    pieces = np.ceil((worst / tolerance) ** (1.0 / ERROR_ORDER)).astype(np.int64)
    pieces = np.where(pieces >= 3, np.minimum(pieces, high - low), 1)
    kept[index[candidates[first]]] = True
    if (pieces > 1).any():
        cut = np.repeat(np.arange(len(pieces)), pieces - 1)
        rank = np.arange(len(cut)) - np.repeat(np.cumsum(pieces - 1) - (pieces - 1), pieces - 1)
        span = (high - low)[cut]
        kept[low[cut] + ((rank + 1) * span) // pieces[cut]] = True
    return kept, over


def rotation_errors(
    mode: str,
    values: np.ndarray,
    stored: np.ndarray,
    source_quats: np.ndarray,
    tolerance: float,
) -> np.ndarray:
    """The rotation error (radians) of channel values against the source, as far as
    `add_worst_frames` needs it: exact wherever it may exceed ``tolerance``.

    In `refine.BOUNDING_MODES` the channels bound the angle between two values
    (`refine.channel_distances`): where the bound from the track's own value there
    (``stored``, whose rotation is the source's) is within ``tolerance`` (less 1e-12 for
    the angles' rounding), the error is that bound, never over the tolerance, and no
    rotation is computed. Elsewhere it is the angle between ``values``' rotations and
    ``source_quats``.

    Parameters
    ----------
    mode : str
        The channels' mode.
    values, stored : ndarray, shape (n, k)
        Channel values (Blender's curves at some frames) and the track's values there.
    source_quats : ndarray, shape (n, 4)
        The source rotations, those of ``stored``.
    tolerance : float

    Returns
    -------
    ndarray, shape (n,)
        Exact angles where over ``tolerance - 1e-12`` by the bound; each bound elsewhere.
    """
    if mode not in BOUNDING_MODES:
        return quat_angle_between(values_to_quat(mode, values), source_quats)
    error = channel_distances(mode, stored, values)
    exact = np.flatnonzero(error > tolerance - 1e-12)
    error[exact] = quat_angle_between(  # (np.take: rows in a third of the time of [exact])
        values_to_quat(mode, np.take(values, exact, axis=0)), np.take(source_quats, exact, axis=0)
    )
    return error


def unchanged_keys(
    keyed: np.ndarray,
    handle_left: np.ndarray,
    handle_right: np.ndarray,
    previous: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> np.ndarray:
    """Which keys were keys of the previous pass with the same handles, bit for bit.

    A key's frame and value never change between passes (it keys the track's value at a
    kept frame): only its handles, which Blender computes from its neighbours, do. The
    handles are compared as bits (each key's 2c float32 as c 64-bit words): the same bits
    evaluate to the same values, and a change of bits counts even where ``==`` would not see
    one (-0.0 and 0.0).

    Parameters
    ----------
    keyed : ndarray of int, shape (K,)
        The keyed frames (rows of tracks laid end to end), increasing.
    handle_left, handle_right : ndarray, shape (K, 2, c), float32
        Their keys' handle points.
    previous : (keyed, handle_left, handle_right) of the previous pass, or None (the first)

    Returns
    -------
    ndarray of bool, shape (K,)
        False at new keys and at keys whose handles changed.
    """
    same = np.zeros(len(keyed), dtype=bool)
    if previous is None or not len(previous[0]) or not len(keyed):
        return same
    old_keyed, old_left, old_right = previous
    at = np.minimum(np.searchsorted(old_keyed, keyed), len(old_keyed) - 1)
    was = np.flatnonzero(np.take(old_keyed, at) == keyed)
    at = np.take(at, was)

    def words(points: np.ndarray, rows: np.ndarray) -> np.ndarray:
        flat = np.ascontiguousarray(points, dtype=np.float32).reshape(len(points), -1)
        return np.take(flat.view(np.uint64), rows, axis=0)  # (np.take: a third of [rows])

    changed = words(handle_left, was) ^ words(old_left, at)
    changed |= words(handle_right, was) ^ words(old_right, at)
    differ = changed[:, 0].copy()
    for column in changed.T[1:]:  # (columns: a reduction along rows of c words is slower)
        differ |= column
    same[was] = differ == 0
    return same


def changed_segments(kept: np.ndarray, same: np.ndarray) -> np.ndarray:
    """Which frames between keys lie on a segment whose Bezier points changed since the
    previous keys (their values must be evaluated again; the others are as they were).

    Parameters
    ----------
    kept : ndarray of bool, shape (n,)
        The keyed frames of tracks laid end to end (each track's first and last keyed).
    same : ndarray of bool, shape (K,)
        At each of the K keyed frames, in order, whether its key is as before
        (`unchanged_keys`): a segment changed where either of its keys did not stay.

    Returns
    -------
    ndarray of bool, shape (n,)
        False at keyed frames.
    """
    kept = np.asarray(kept, dtype=bool)
    out = np.zeros(len(kept), dtype=bool)
    between = ~kept
    left = (np.cumsum(kept) - 1)[between]
    out[between] = ~same[left] | ~same[left + 1]
    return out


def evaluate_between_keys(
    t: np.ndarray,
    kept: np.ndarray,
    keys: np.ndarray,
    handle_left: np.ndarray,
    handle_right: np.ndarray,
    frames: np.ndarray,
) -> np.ndarray:
    """Blender's values at some frames between the keys of tracks keyed at some of their
    frames.

    Each track is c curves keyed at the same frames (a rotation's channels), Bezier keys
    whose handles Blender computed. A frame between two keyed frames is on their segment
    (`fcurve_math.evaluate_segments`: the same float32 arithmetic as ``FCurve.evaluate``),
    with one cubic solve for the c curves when their handle frames agree, as they do for
    keys written together.

    Parameters
    ----------
    t : ndarray, shape (n,)
        The frames of one or more tracks laid end to end.
    kept : ndarray of bool, shape (n,)
        The keyed frames; each track's first and last frame must be keyed.
    keys : ndarray, shape (K, 2, c)
        ``(frame, value)`` of each key of each curve, K = ``kept.sum()``, in frame order.
    handle_left, handle_right : ndarray, shape (K, 2, c)
        The keys' handle points.
    frames : ndarray of bool, shape (n,)
        The frames to evaluate, none of them keyed.

    Returns
    -------
    ndarray, shape (frames.sum(), c), float64
    """
    kept = np.asarray(kept, dtype=bool)
    width = keys.shape[2]
    left = (np.cumsum(kept) - 1)[frames]
    right = left + 1
    # Each segment's points: the left key, its right handle, the right key's left handle,
    # the right key; frames (K, c) and values (K, c) of each.
    frames_of = (keys[:, 0], handle_right[:, 0], handle_left[:, 0], keys[:, 0])
    values_of = (keys[:, 1], handle_right[:, 1], handle_left[:, 1], keys[:, 1])
    ends = (left, left, right, right)
    # The values gathered straight into the (4, c, m) layout `evaluate_segments` computes on
    # (passed as its (m, 4, c) view: no copy there); "clip" takes no buffer (the indices are
    # keys by construction).
    by_point = np.empty((4, width, len(left)), dtype=np.result_type(*values_of))
    for row, v, e in zip(by_point, values_of, ends, strict=True):
        np.take(v.T, e, axis=1, out=row, mode="clip")
    y = by_point.transpose(2, 0, 1)  # (m, 4, c)

    def frames_at(j: int) -> np.ndarray:
        """Curve ``j``'s segment frames, gathered as (4, m) rows and passed as their (m, 4)
        view."""
        x = np.empty((4, len(left)), dtype=frames_of[0].dtype)
        for row, f, e in zip(x, frames_of, ends, strict=True):
            np.take(f[:, j], e, out=row, mode="clip")
        return x.T

    if all((f == f[:, :1]).all() for f in frames_of[:3]):  # one set of frames for all c
        return evaluate_segments(t[frames], frames_at(0), y)
    out = np.empty((len(left), width), dtype=np.float64)
    for j in range(width):
        out[:, j] = evaluate_segments(t[frames], frames_at(j), y[:, :, j])
    return out
