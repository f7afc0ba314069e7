"""Swing-twist decomposition about the bone's local Y axis, and joint limits.

A pose is ``q = swing * twist`` (Hamilton product: the twist about Y acts first, then the swing).
The twist is an angle about Y; the swing ``r = (r_x, r_z)`` is the RQ vector ``(r_x, 0, r_z)``,
whose axis is perpendicular to Y so it carries no twist (Grassia 1997, section 5).

Joint limits: a swing ellipse with semi-axes ``a`` (bounding ``r_x``) and ``b`` (``r_z``) and a
twist range ``[lo, hi]``. Every pair of values means something, so a limit typed wrong never
breaks a tool (see `effective_limits`): a zero semi-axis is a hinge (that swing coordinate is
held at 0), a negative one acts as zero, and an inverted twist range (``lo > hi``) holds the
twist at ``lo``. The clamps here and the add-on's drivers share that meaning.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_float_array, as_quats, as_scalars, as_vectors
from .rq import _nearest_equivalent, _rq_to_quat

__all__ = [
    "clamp_swing_ellipse",
    "clamp_twist",
    "effective_limits",
    "quat_to_swing_twist",
    "scale_swing_into_ellipse",
    "swing_in_ellipse",
    "swing_of",
    "swing_twist_sequence_continuous",
    "swing_twist_to_quat",
    "swing_vector",
]

TWO_PI = 2.0 * math.pi


def swing_vector(swing: ArrayLike) -> NDArray[np.float64]:
    """The rotation vectors ``(r_x, 0, r_z)`` of swings ``(r_x, r_z)``, (..., 2) -> (..., 3).

    >>> swing_vector([0.5, -0.25])
    array([ 0.5 ,  0.  , -0.25])
    """
    swing = np.asarray(swing, dtype=np.float64)
    v = np.zeros(swing.shape[:-1] + (3,))
    v[..., 0] = swing[..., 0]
    v[..., 2] = swing[..., 1]
    return v


def swing_of(v: ArrayLike) -> NDArray[np.float64]:
    """The swings ``(v_x, v_z)`` of rotation vectors in the XZ plane, (..., 3) -> (..., 2):
    `swing_vector`'s inverse (a Y component is dropped)."""
    return np.asarray(v, dtype=np.float64)[..., [0, 2]]


def swing_twist_to_quat(swing: ArrayLike, twist: ArrayLike) -> NDArray[np.float64]:
    """Quaternion ``swing * twist`` of swing ``(r_x, r_z)`` (..., 2) and twist (...), (..., 4).

    With ``q_s = rq_to_quat((r_x, 0, r_z)) = (c_s, s_x, 0, s_z)`` and
    ``q_t = (cos(t/2), 0, sin(t/2), 0)``: ``q = (c_s c_t, s_x c_t - s_z s_t, c_s s_t,
    s_x s_t + s_z c_t)``.

    Examples
    --------
    A twist alone turns about the bone's Y axis:

    >>> import numpy as np
    >>> from rq_rotation import swing_twist_to_quat
    >>> swing_twist_to_quat([0.0, 0.0], np.pi / 2).round(6)
    array([0.707107, 0.      , 0.707107, 0.      ])
    """
    swing = as_vectors(swing, "swing", 2)
    twist = as_scalars(twist, "twist")
    qs = _rq_to_quat(swing_vector(swing))
    cs, sx, sz = qs[..., 0], qs[..., 1], qs[..., 3]
    ct = np.cos(0.5 * twist)
    st = np.sin(0.5 * twist)
    return np.stack([cs * ct, sx * ct - sz * st, cs * st, sx * st + sz * ct], axis=-1)


def _decompose(
    q: NDArray[np.float64], twist_at_pi: NDArray[np.float64] | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    w, x, y, z = np.moveaxis(q, -1, 0)
    # choose the sign of q so that the twist lands in (-pi, pi]: w > 0, or w == 0 and y >= 0
    flip = (w < 0) | ((w == 0) & (y < 0))
    sgn = np.where(flip, -1.0, 1.0)
    w, x, y, z = w * sgn, x * sgn, y * sgn, z * sgn
    cs = np.hypot(w, y)  # cos(|swing|/2) >= 0
    degenerate = cs == 0.0  # swing of exactly pi: a circle of equivalent pairs
    with np.errstate(divide="ignore", invalid="ignore"):
        ct = np.where(degenerate, 1.0, w / cs)
        st = np.where(degenerate, 0.0, y / cs)
    twist = 2.0 * np.arctan2(st, ct)
    if twist_at_pi is not None:
        # at swing pi use the reference twist (then the swing axis follows from q)
        twist = np.where(degenerate, twist_at_pi, twist)
        ct = np.where(degenerate, np.cos(0.5 * twist), ct)
        st = np.where(degenerate, np.sin(0.5 * twist), st)
    sx = ct * x + st * z
    sz = -st * x + ct * z
    n = np.hypot(sx, sz)
    ang = 2.0 * np.arctan2(n, cs)
    # Both branches are computed; the one np.where discards may divide by zero or, for a
    # denormal cs, overflow (found by hypothesis at q = (0, 0, 2e-311, 1)): silence both.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        f = np.where(n > 0, ang / n, 2.0 / np.where(cs > 0, cs, 1.0))
    swing = np.stack([sx * f, sz * f], axis=-1)
    # rounding can give exactly -pi (w tiny, y < 0): the same rotation as +pi
    twist = np.where(twist <= -math.pi, twist + TWO_PI, twist)
    return swing, twist


def quat_to_swing_twist(
    q: ArrayLike, near: tuple[ArrayLike, ArrayLike] | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Swing ``(r_x, r_z)`` and twist about Y of quaternions; inverse of ``swing_twist_to_quat``.

    Parameters
    ----------
    q : array_like, shape (..., 4)
        Normalized first; ``q`` and ``-q`` give the same result.
    near : tuple (swing0, twist0), optional
        Reference pair (shapes (..., 2) and (...)).

    Returns
    -------
    swing : ndarray, shape (..., 2)
        Without ``near``: ``|swing| <= pi``.
    twist : ndarray, shape (...)
        Without ``near``: in ``(-pi, pi]``; 0 where the swing is exactly ``pi`` (a whole circle of
        pairs gives the same ``q`` there).

    Notes
    -----
    ``twist = 2 atan2(y, w)`` (with the sign of ``q`` making ``w >= 0``), then the swing
    quaternion is ``q * twist^-1``. The equivalent pairs are the swing moved along its line by
    ``2 pi k`` (as for ``quat_to_rq``; the identity swing may move to any shell point) and the
    twist moved by ``2 pi m``, independently. With ``near`` both are chosen closest to the
    reference, and at a swing of exactly ``pi`` the reference twist is used.

    Examples
    --------
    A round trip:

    >>> import numpy as np
    >>> from rq_rotation import quat_to_swing_twist, swing_twist_to_quat
    >>> swing, twist = quat_to_swing_twist(swing_twist_to_quat([0.3, -0.2], 0.7))
    >>> swing.round(6), round(float(twist), 6)
    (array([ 0.3, -0.2]), 0.7)
    """
    q = as_quats(q, "q")
    if near is None:
        swing, twist = _decompose(q)
        return swing, twist[()]  # a single quaternion gives a numpy scalar, as with near
    swing0 = as_vectors(near[0], "near swing", 2)
    twist0 = as_scalars(near[1], "near twist")
    swing, twist = _decompose(q, twist_at_pi=twist0)
    twist = twist + TWO_PI * np.round((twist0 - twist) / TWO_PI)
    # closest equivalent swing: quat_to_rq's rule, applied to the swing's RQ vector directly
    vn = _nearest_equivalent(swing_vector(swing), swing_vector(swing0))
    return swing_of(vn), twist


def swing_twist_sequence_continuous(
    swing: ArrayLike, twist: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Make a time sequence of (swing (N, 2), twist (N,)) continuous.

    The first pair is kept as given; each later pair is replaced by the equivalent pair (same
    rotation) closest to its predecessor, as ``quat_to_swing_twist(q, near=previous)``.
    """
    swing = as_vectors(swing, "swing", 2)
    twist = as_scalars(twist, "twist")
    if swing.ndim != 2 or twist.shape != swing.shape[:1]:
        raise ValueError("swing must have shape (N, 2) and twist shape (N,)")
    q = swing_twist_to_quat(swing, twist)
    out_s = swing.copy()
    out_t = twist.copy()
    for i in range(1, len(q)):
        s, t = quat_to_swing_twist(q[i], near=(out_s[i - 1], out_t[i - 1]))
        out_s[i] = s
        out_t[i] = t
    return out_s, out_t


def effective_limits(
    a: ArrayLike, b: ArrayLike, lo: ArrayLike, hi: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The limits the clamps apply for semi-axes ``a``, ``b`` and twist range ``[lo, hi]``.

    Returns ``(max(a, 0), max(b, 0), lo, max(lo, hi))`` as float arrays (broadcast as given):
    a negative semi-axis acts as zero (a hinge), and an inverted twist range holds the twist
    at ``lo``, its first value. Both maps are continuous, and the identity on limits that are
    already ordered. NaN or inf raise ``ValueError``.
    """
    a, b = _limits(a, b)
    lo, hi = _twist_range(lo, hi)
    return a, b, lo, hi


def _limits(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Finite semi-axes, negative ones replaced by zero."""
    a = as_float_array(a, "a")
    b = as_float_array(b, "b")
    return np.maximum(a, 0.0), np.maximum(b, 0.0)


def _twist_range(lo: ArrayLike, hi: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """A finite twist range ``(lo, max(lo, hi))``."""
    lo = as_scalars(lo, "lo")
    hi = as_scalars(hi, "hi")
    return lo, np.maximum(lo, hi)


def swing_in_ellipse(
    swing: ArrayLike, a: ArrayLike, b: ArrayLike, tol: ArrayLike = 0.0
) -> NDArray[np.bool_]:
    """Whether swings (..., 2) lie in the filled ellipse ``(r_x/a)^2 + (r_z/b)^2 <= 1``: (...).

    ``a`` bounds ``r_x`` (rotation about X), ``b`` bounds ``r_z``; ``a = 0`` or ``b = 0`` means the
    ellipse degenerates to a segment (or a point), tested with the tolerance ``tol``. A
    negative semi-axis acts as zero (`effective_limits`).
    """
    swing = as_vectors(swing, "swing", 2)
    a, b = _limits(a, b)
    tol = as_scalars(tol, "tol")
    p = clamp_swing_ellipse(swing, a, b)
    return np.linalg.norm(p - swing, axis=-1) <= tol


def clamp_swing_ellipse(swing: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Closest point (..., 2) of the filled ellipse ``(r_x/a)^2 + (r_z/b)^2 <= 1`` to each swing.

    A true Euclidean projection: inside points are returned unchanged; for an outside point
    ``p`` the closest boundary point is ``(a^2 p_x / (t + a^2), b^2 p_z / (t + b^2))`` where
    ``t > 0`` is the root of ``(a p_x/(t + a^2))^2 + (b p_z/(t + b^2))^2 = 1``, found by
    bisection on ``[0, sqrt(a^2 p_x^2 + b^2 p_z^2)]`` to full precision. ``a = 0`` (or ``b = 0``)
    projects onto the segment ``|r_z| <= b`` (``|r_x| <= a``); both zero give the origin. A
    negative semi-axis acts as zero (`effective_limits`).
    """
    swing = as_vectors(swing, "swing", 2)
    a, b = _limits(a, b)
    px, pz = swing[..., 0], swing[..., 1]
    a, b, px, pz = np.broadcast_arrays(a, b, px, pz)
    # A tiny semi-axis overflows the ratios' squares to inf: outside, as it should be.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        inside = np.where((a > 0) & (b > 0), (px / a) ** 2 + (pz / b) ** 2 <= 1.0, False)
    a2, b2 = a * a, b * b
    ax, bz = a * np.abs(px), b * np.abs(pz)
    lo = np.zeros_like(px)
    hi = np.hypot(ax, bz)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            f = (ax / (mid + a2)) ** 2 + (bz / (mid + b2)) ** 2 - 1.0
        go_up = f > 0
        new_lo = np.where(go_up, mid, lo)
        new_hi = np.where(go_up, hi, mid)
        if np.array_equal(new_lo, lo) and np.array_equal(new_hi, hi):
            break
        lo, hi = new_lo, new_hi
    t = 0.5 * (lo + hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        qx = np.where(a2 > 0, a2 * px / (t + a2), 0.0)
        qz = np.where(b2 > 0, b2 * pz / (t + b2), 0.0)
    # degenerate ellipses: segments on one axis, or the origin (a semi-axis whose square
    # underflows, under 1e-162, counts as zero: the formula above would give 0/0)
    qx = np.where(b2 == 0, np.clip(px, -a, a), qx)
    qz = np.where(a2 == 0, np.clip(pz, -b, b), qz)
    qx = np.where((a2 == 0), 0.0, qx)
    qz = np.where((b2 == 0), 0.0, qz)
    out = np.stack([np.where(inside, px, qx), np.where(inside, pz, qz)], axis=-1)
    return out


def scale_swing_into_ellipse(swing: ArrayLike, a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Radial scaling into the ellipse: ``r / max(1, sqrt((r_x/a)^2 + (r_z/b)^2))``, (..., 2).

    Not the closest point, but what a Blender driver can compute as a simple expression: the
    swing a bone in swing/twist mode is posed at. A zero semi-axis is the formula's limit: a
    swing with a component along it scales to zero (the add-on's drivers use
    ``max(a, 1e-12)``, which differs by at most 1e-12 rad); on the remaining segment the
    scaling is radial as usual, and ``a = b = 0`` allows no swing at all. A negative
    semi-axis acts as zero (`effective_limits`; the drivers' ``max(a, 1e-12)`` does the same).
    """
    swing = as_vectors(swing, "swing", 2)
    a, b = _limits(a, b)
    # r/0 = inf scales to zero below; 0/0 (computed, then discarded by np.where) is silent.
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio_x = np.where(swing[..., 0] == 0.0, 0.0, swing[..., 0] / a)
        ratio_z = np.where(swing[..., 1] == 0.0, 0.0, swing[..., 1] / b)
    k = np.hypot(ratio_x, ratio_z)
    return swing / np.maximum(1.0, k)[..., None]


def clamp_twist(twist: ArrayLike, lo: ArrayLike, hi: ArrayLike) -> NDArray[np.float64]:
    """The twist angles (...) a joint with twist range ``[lo, hi]`` (radians) is posed at.

    ``min(max(twist, lo), max(lo, hi))``: the usual clamp for ``lo <= hi``; an inverted range
    (``lo > hi``) holds every twist at ``lo`` (`effective_limits`). Continuous in the twist
    and in both limits, and what the add-on's drivers compute. No wrapping, so continuous
    sequences stay continuous. NaN or inf raise ``ValueError``.
    """
    twist = as_scalars(twist, "twist")
    lo, hi = _twist_range(lo, hi)
    return np.minimum(np.maximum(twist, lo), hi)
