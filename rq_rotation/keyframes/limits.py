# SPDX-License-Identifier: GPL-3.0-or-later
"""Swing/twist channel values fitted to joint limits, as a conversion stores them.

The drivers clamp the swing into ``rq_swing_limit`` and the twist into ``rq_twist_limit``
(the meaning of the core's ``effective_limits``). Limits that restrict nothing
(`limits_restrict_nothing`, the defaults) are widened by the Blender layer to cover the
converted curves, with swings longer than `SWING_REACH` moved to their shortest equivalent
(`shorten_swings`). User-set limits keep every stored value inside (`fit_to_limits`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..shells import reparameterize
from ..swing_twist import (
    clamp_swing_ellipse,
    clamp_twist,
    effective_limits,
    swing_of,
    swing_vector,
)

# Swing/twist bones whose limits restrict nothing keep continuous swings up to this length
# (longer ones move to their shortest equivalent): the drivers pose swings shorter than
# 2 pi only, and interpolation between keys needs a margin.
SWING_REACH = 1.5 * math.pi


def limits_restrict_nothing(swing_limit: Sequence[float], twist_limit: Sequence[float]) -> bool:
    """Whether swing/twist limits ``[a, b]``, ``[min, max]`` let the joint reach every
    orientation as its defaults do (``a, b >= pi`` and ``[-pi, pi]`` inside the twist range).
    Such limits are widened to cover converted animation (`widen_limits`); any others are
    the user's joint limits (`fit_to_limits`)."""
    a, b = swing_limit
    low, high = twist_limit
    return bool(a >= math.pi and b >= math.pi and low <= -math.pi and high >= math.pi)


def shorten_swings(values: np.ndarray) -> np.ndarray:
    """Swing/twist values (n, 3) with every swing longer than `SWING_REACH` moved to its
    shortest equivalent (``reparameterize``); twists unchanged."""
    values = np.array(values, dtype=np.float64)
    long = np.hypot(values[:, 0], values[:, 1]) > SWING_REACH
    if long.any():
        values[long, :2] = swing_of(reparameterize(swing_vector(values[long, :2])))
    return values


def fit_to_limits(
    values: np.ndarray, swing_limit: Sequence[float], twist_limit: Sequence[float]
) -> tuple[np.ndarray, np.ndarray]:
    """Swing/twist values (n, 3) stored inside user-set joint limits.

    Each swing ``L u`` (``u`` a unit vector) is replaced by the equivalent ``(L + 2 pi k) u``
    inside the ellipse ``[a, b]`` with the smallest ``|k|``, each twist by ``t + 2 pi m`` inside
    ``[min, max]`` with the smallest ``|m|``: the same pose, as close to the continuous value
    as the limits allow. Where no equivalent is inside, the value becomes the closest point
    of the limits (the core's ``clamp_swing_ellipse`` of the shortest swing, ``clamp_twist``):
    the pose the joint can reach, which the drivers' clamp leaves alone.

    Returns
    -------
    fitted : ndarray, shape (n, 3)
    moved : ndarray of bool, shape (n,)
        Rows whose pose changed (no equivalent inside the limits).
    """
    values = np.asarray(values, dtype=np.float64)
    # The limits as the drivers apply them (a negative semi-axis is 0, an inverted range
    # holds the twist at its first value).
    a, b, low, high = (float(x) for x in effective_limits(*swing_limit, *twist_limit))
    two_pi = 2.0 * math.pi
    twist = values[:, 2]
    m_low = np.ceil((low - twist) / two_pi)
    m_high = np.floor((high - twist) / two_pi)
    twist_ok = m_low <= m_high
    fitted_twist = np.where(
        twist_ok, twist + two_pi * np.clip(0.0, m_low, m_high), clamp_twist(twist, low, high)
    )
    swing = values[:, :2]
    length = np.hypot(swing[:, 0], swing[:, 1])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        unit = swing / length[:, None]
        # The ellipse's radius along u: 0 off a zero semi-axis, the other semi-axis along it
        # (a hinge keeps the swings along its free axis).
        radius = 1.0 / np.hypot(
            np.where(unit[:, 0] == 0.0, 0.0, unit[:, 0] / a),
            np.where(unit[:, 1] == 0.0, 0.0, unit[:, 1] / b),
        )
    radius = np.nan_to_num(radius, nan=0.0)
    k_low = np.ceil((-radius - length) / two_pi)
    k_high = np.floor((radius - length) / two_pi)
    swing_ok = (length == 0.0) | (k_low <= k_high)
    shifted = np.where(
        (length > 0.0)[:, None],
        unit * (length + two_pi * np.clip(0.0, k_low, k_high))[:, None],
        swing,
    )
    closest = clamp_swing_ellipse(swing_of(reparameterize(swing_vector(swing))), a, b)
    fitted_swing = np.where(swing_ok[:, None], shifted, closest)
    fitted = np.concatenate([fitted_swing, fitted_twist[:, None]], axis=1)
    return fitted, ~(twist_ok & swing_ok)
