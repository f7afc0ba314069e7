"""Singular shells and dynamic reparameterization (Grassia 1997, section 3.2.2).

The RQ map is singular on the shells ``|v| = 2 pi k`` (``k >= 1``): there every vector is the
identity rotation and moving tangentially to the shell does not rotate. ``v`` and
``v - 2 pi n v/|v|`` are the same rotation for every integer ``n``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._checks import as_vectors

__all__ = ["reparameterize", "shell_distance", "shell_index"]

TWO_PI = 2.0 * math.pi


def shell_index(v: ArrayLike) -> NDArray[np.int64]:
    """``n = round(|v| / 2 pi)`` (...): the index of the shell closest to ``v`` (0 = origin)."""
    v = as_vectors(v, "v")
    return np.round(np.linalg.norm(v, axis=-1) / TWO_PI).astype(np.int64)


def reparameterize(v: ArrayLike) -> NDArray[np.float64]:
    """Move RQ vectors inside the first shell without changing their rotation.

    Parameters
    ----------
    v : array_like, shape (..., 3)

    Returns
    -------
    ndarray, shape (..., 3)
        ``v - 2 pi n v/|v|`` with ``n = round(|v| / 2 pi)`` where ``|v| > pi`` (so the result has
        ``|result| <= pi``); vectors with ``|v| <= pi`` are returned unchanged. This is the
        paper's ``(1 - 2 pi/|v|) v`` generalized to every shell.

    Examples
    --------
    >>> import numpy as np
    >>> from rq_rotation import reparameterize, rq_to_matrix
    >>> v = np.array([0.0, 2.0 * np.pi + 0.5, 0.0])
    >>> reparameterize(v).round(6)
    array([0. , 0.5, 0. ])
    >>> bool(np.allclose(rq_to_matrix(reparameterize(v)), rq_to_matrix(v)))
    True
    """
    v = as_vectors(v, "v")
    th = np.linalg.norm(v, axis=-1)
    n = np.round(th / TWO_PI)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 1.0 - TWO_PI * n / th
    scale = np.where(th > math.pi, scale, 1.0)
    return v * scale[..., None]


def shell_distance(v: ArrayLike) -> NDArray[np.float64]:
    """Euclidean distance (...) from ``v`` (..., 3) to the nearest singular shell.

    ``| |v| - 2 pi max(1, round(|v| / 2 pi)) |``: the origin is not singular, so vectors near it
    are ``2 pi - |v|`` away from the first shell. Small values mean large, ill-conditioned
    derivatives (``rq_velocity`` grows like ``1 / shell_distance``).
    """
    return _shell_distance(np.linalg.norm(as_vectors(v, "v"), axis=-1))


def _shell_distance(th: NDArray[np.float64]) -> NDArray[np.float64]:
    """``shell_distance`` of vectors with norms ``th`` (...)."""
    return np.abs(th - TWO_PI * np.maximum(1.0, np.round(th / TWO_PI)))
