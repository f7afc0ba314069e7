# SPDX-License-Identifier: GPL-3.0-or-later
"""Key reduction within a tolerance: which sampled frames to keep as keys.

The SAMPLED conversion (``rq_blender.conversion``) writes a track's keys, lets Blender compute
their handles, measures the rotation error at every sampled frame and keeps one more key in
every gap that exceeds the tolerance, until none does. `add_worst_frames` is one such step
for any number of tracks at once.
"""

from __future__ import annotations

import numpy as np


def add_worst_frames(
    kept: np.ndarray, error: np.ndarray, tolerance: float
) -> tuple[np.ndarray, np.ndarray]:
    """Keep, in every gap between kept frames with an error above ``tolerance``, the frame
    with the largest error (the first of equal ones).

    Parameters
    ----------
    kept : ndarray of bool, shape (n,)
        The kept frames of one or more tracks laid end to end; each track's first frame must
        be kept (so gaps never span two tracks).
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
    over = (np.asarray(error) > tolerance) & ~kept
    if not over.any():
        return kept, over
    gap = np.cumsum(kept)[over]
    index = np.flatnonzero(over)
    order = np.lexsort((-np.asarray(error)[index], gap))
    first = np.concatenate([[True], gap[order][1:] != gap[order][:-1]])
    kept[index[order][first]] = True
    return kept, over
