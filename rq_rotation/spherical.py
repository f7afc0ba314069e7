"""Interpolation on the quaternion sphere, for comparison with RQ splines.

``slerp`` (Shoemake 1985), the spherical Bezier curve (de Casteljau's construction with slerp
in place of linear interpolation) and ``squad``. Quaternions are ``(w, x, y, z)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_quats, as_scalars
from .quaternion import _conj, _qmul, align_quat_signs
from .rq import _quat_to_rq, _rq_to_quat

__all__ = ["slerp", "slerp_keys", "spherical_bezier", "squad", "squad_controls", "squad_keys"]


def _log_rq(d: NDArray[np.float64], shortest: bool) -> NDArray[np.float64]:
    """RQ vector of ``d``; with ``shortest=False`` the arc of ``d`` as given (angle up to 2 pi)."""
    v = _quat_to_rq(d)
    if shortest:
        return v
    th = np.linalg.norm(v, axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        long = v * np.where(th > 0, 1.0 - 2.0 * np.pi / th, 1.0)
    return np.where((d[..., :1] < 0) & (th > 0), long, v)


def _slerp(
    p: NDArray[np.float64], q: NDArray[np.float64], t: NDArray[np.float64], shortest: bool
) -> NDArray[np.float64]:
    v = _log_rq(_qmul(_conj(p), q), shortest)
    return _qmul(p, _rq_to_quat(v * t[..., None]))


def slerp(p: ArrayLike, q: ArrayLike, t: ArrayLike, shortest: bool = True) -> NDArray[np.float64]:
    """Spherical linear interpolation ``p * (p^-1 q)^t``.

    Parameters
    ----------
    p, q : array_like, shape (..., 4)
        End quaternions (normalized first), broadcast together with ``t``.
    t : array_like, shape (...)
        Parameter; 0 gives ``p``, 1 gives ``q`` (up to sign).
    shortest : bool
        True: the shorter arc (angle <= pi; ``q`` may come out as ``-q``). False: the great arc
        from ``p`` to ``q`` as given (for hemisphere-aligned inputs, as Shoemake's formula
        ``sin((1-t) W)/sin W p + sin(t W)/sin W q``).

    Returns
    -------
    ndarray, shape (..., 4)
        Computed through the RQ vector of ``p^-1 q`` (accurate for tiny and large angles).
    """
    p = as_quats(p, "p")
    q = as_quats(q, "q")
    t = as_scalars(t, "t")
    return _slerp(p, q, t, shortest)


def spherical_bezier(
    q0: ArrayLike, q1: ArrayLike, q2: ArrayLike, q3: ArrayLike, t: ArrayLike
) -> NDArray[np.float64]:
    """Shoemake's spherical cubic Bezier curve by de Casteljau with slerp, (..., 4).

    Control quaternions ``q0..q3`` (..., 4) should be hemisphere-aligned; arcs are taken as given.
    """
    qs = [as_quats(q, f"q{i}") for i, q in enumerate((q0, q1, q2, q3))]
    t = as_scalars(t, "t")
    while len(qs) > 1:
        qs = [_slerp(a, b, t, False) for a, b in zip(qs[:-1], qs[1:], strict=True)]
    return qs[0]


def squad_controls(q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Inner control quaternions of squad for keys ``q`` (K, 4), hemisphere-aligned first.

    ``s_i = q_i * exp(-(log(q_i^-1 q_{i+1}) + log(q_i^-1 q_{i-1})) / 4)``; in RQ terms
    ``s_i = q_i * rq_to_quat(-(v_next + v_prev) / 4)``. The end keys are their own controls.
    """
    q = align_quat_signs(q)
    s = q.copy()
    if len(q) > 2:
        inv = _conj(q[1:-1])
        vn = _quat_to_rq(_qmul(inv, q[2:]))
        vp = _quat_to_rq(_qmul(inv, q[:-2]))
        s[1:-1] = _qmul(q[1:-1], _rq_to_quat(-(vn + vp) / 4.0))
    return q, s


def squad(
    q0: ArrayLike, q1: ArrayLike, s0: ArrayLike, s1: ArrayLike, h: ArrayLike
) -> NDArray[np.float64]:
    """``slerp(slerp(q0, q1, h), slerp(s0, s1, h), 2 h (1 - h))`` (arcs as given), (..., 4)."""
    q0, q1, s0, s1 = (as_quats(a, n) for a, n in ((q0, "q0"), (q1, "q1"), (s0, "s0"), (s1, "s1")))
    h = as_scalars(h, "h")
    return _slerp(_slerp(q0, q1, h, False), _slerp(s0, s1, h, False), 2.0 * h * (1.0 - h), False)


def _locate(times: ArrayLike, t: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    times = as_scalars(times, "times")
    t = np.clip(as_scalars(t, "t"), times[0], times[-1])
    i = np.clip(np.searchsorted(times, t, side="right") - 1, 0, len(times) - 2)
    u = (t - times[i]) / (times[i + 1] - times[i])
    return i, u


def slerp_keys(times: ArrayLike, keys: ArrayLike, t: ArrayLike) -> NDArray[np.float64]:
    """Piecewise slerp through quaternion keys (K, 4) at times (K,), at ``t``: (..., 4)."""
    q = align_quat_signs(keys)
    i, u = _locate(times, t)
    return _slerp(q[i], q[i + 1], u, False)


def squad_keys(times: ArrayLike, keys: ArrayLike, t: ArrayLike) -> NDArray[np.float64]:
    """Piecewise squad through quaternion keys (K, 4) at times (K,), evaluated at ``t``: (..., 4).

    Each segment uses the local parameter ``u`` in [0, 1] (the classic uniform squad).
    """
    q, s = squad_controls(keys)
    i, u = _locate(times, t)
    return _slerp(
        _slerp(q[i], q[i + 1], u, False),
        _slerp(s[i], s[i + 1], u, False),
        2.0 * u * (1.0 - u),
        False,
    )
