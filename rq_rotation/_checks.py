"""Input validation shared by every public function.

Each public function converts its inputs with one of these helpers, so that every function
rejects bad input the same way:

* NaN or inf -> ``ValueError`` naming the argument;
* a wrong last dimension -> ``ValueError`` naming the expected shape;
* a zero quaternion -> ``ValueError``; other quaternions are normalized where the result
  depends on the norm;
* empty stacks pass through (shape ``(0, 3)`` in, shape ``(0, 4)`` out);
* a single input (shape ``(3,)``) gives a single output, because every function works on the
  last axis and broadcasts over the leading ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__: list[str] = []


#: Arrays up to this size are tested in Python floats: numpy's error-state switch alone cost
#: ten times the test of a vector (2.7 against 0.3 us), and a solve takes a few vectors.
_SMALL = 16


def _finite(a: NDArray[np.float64], name: str) -> None:
    if a.size <= _SMALL:
        if not all(map(math.isfinite, a.ravel().tolist())):
            raise ValueError(f"{name} contains NaN or inf")
        return
    # ``np.isfinite(a).all()`` allocates a boolean temporary; summing is a cheaper test that a
    # NaN or inf is present (the sum of finite values can overflow to inf: fall back then).
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(a, axis=None)
    if not np.isfinite(total) and not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")


def as_float_array(a: ArrayLike, name: str) -> NDArray[np.float64]:
    """Return ``a`` as a float64 ndarray, rejecting non-numeric data (None, which numpy
    would read as NaN, and complex arrays, whose imaginary parts it would drop) and NaN/inf."""
    if a is None or getattr(getattr(a, "dtype", None), "kind", "") == "c":
        raise ValueError(f"{name} must be an array of real numbers")
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of real numbers") from exc
    _finite(arr, name)
    return arr


def as_vectors(a: ArrayLike, name: str, dim: int = 3) -> NDArray[np.float64]:
    """``a`` as a float64 array of shape ``(..., dim)``."""
    arr = as_float_array(a, name)
    if arr.ndim == 0 or arr.shape[-1] != dim:
        raise ValueError(f"{name} must have shape (..., {dim}), got {arr.shape}")
    return arr


def as_near(near: ArrayLike, stack: tuple[int, ...]) -> NDArray[np.float64]:
    """Reference vectors ``near`` (..., 3) whose stack broadcasts against ``stack``, the stack
    of the rotations they are near to."""
    arr = as_vectors(near, "near")
    try:
        np.broadcast_shapes(arr.shape[:-1], stack)
    except ValueError:
        raise ValueError(
            f"near's stack {arr.shape[:-1]} does not broadcast against the rotations' {stack}"
        ) from None
    return arr


def as_matrices(a: ArrayLike, name: str) -> NDArray[np.float64]:
    """``a`` as a float64 array of shape ``(..., 3, 3)``."""
    arr = as_float_array(a, name)
    if arr.ndim < 2 or arr.shape[-2:] != (3, 3):
        raise ValueError(f"{name} must have shape (..., 3, 3), got {arr.shape}")
    return arr


def as_quats(a: ArrayLike, name: str, normalize: bool = True) -> NDArray[np.float64]:
    """``a`` as a float64 array of shape ``(..., 4)`` (w, x, y, z), normalized.

    A zero quaternion raises ``ValueError``. With ``normalize=False`` the array is only
    checked for shape and NaN/inf: the caller's result must not depend on the norm, and the
    caller must call ``check_zero_quats`` itself (cheaply, on its result).
    """
    arr = as_vectors(a, name, 4)
    if not normalize:
        return arr
    n2 = np.einsum("...i,...i->...", arr, arr)
    check_zero_quats(n2, name)
    return arr / np.sqrt(n2)[..., None]


def check_zero_quats(n2: NDArray[np.float64], name: str) -> None:
    """Raise ``ValueError`` if any squared norm in ``n2`` is zero."""
    if np.any(n2 == 0.0):
        raise ValueError(f"{name} contains a zero quaternion, which is not a rotation")


def as_scalars(a: ArrayLike, name: str) -> NDArray[np.float64]:
    """``a`` as a float64 array of any shape (angles, times, ...)."""
    return as_float_array(a, name)


def check_order(order: str) -> EulerOrder:
    """Validate a Blender Euler order string and return it upper-cased."""
    if not isinstance(order, str) or order.upper() not in EULER_ORDERS:
        raise ValueError(f"order must be one of {EULER_ORDERS}, got {order!r}")
    return cast(EulerOrder, order.upper())  # one of EULER_ORDERS (checked above)


#: A Blender Euler order: the axes in the order they are applied.
EulerOrder = Literal["XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"]
EULER_ORDERS: tuple[EulerOrder, ...] = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


#: Rows per block for the vectorized kernels: temporaries of 16384 float64 (128 KiB) stay in the
#: CPU cache, which makes the conversions about twice as fast on large stacks as whole-array
#: numpy expressions (measured in benchmarks/bench_core.py).
CHUNK_ROWS = 16384


def sum_of_squares(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """The squares of the last axis of ``v`` (..., k) added in order (``x^2 + y^2 + z^2``)
    -> (...).

    The same float64 values as ``(v * v) @ ones(k)`` and as the sum inside
    ``np.linalg.norm(v, axis=-1)`` (numpy adds a reduction of a few in order; checked for k
    up to 4 with numpy 1.26 and 2.x), without either's cost: numpy's OpenBLAS hands a long
    matrix-vector product to worker threads, which then spin for a while (numpy 1.26 in
    Blender 4.5 took about 1.5 times the wall time in CPU over the operators' numpy passes,
    and on a busy machine the spinning thread slowed them), and a reduction along a short
    axis loops once per row (9x slower on 60,000 rows of three; 5x on 200,000 of four)."""
    out = v[..., 0] * v[..., 0]
    for j in range(1, v.shape[-1]):
        out += v[..., j] * v[..., j]
    return out


def row_sum(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """The last axis of ``a`` (..., k) added in order -> (...): ``a.sum(axis=-1)`` to the bit
    for the few columns of a rotation's channels (as `sum_of_squares`), without the
    reduction's loop per row."""
    out = a[..., 0].copy()
    for j in range(1, a.shape[-1]):
        out += a[..., j]
    return out


def norm(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """``|v|`` over the last axis of ``v`` (..., k) -> (...): ``np.linalg.norm(v, axis=-1)``
    to the bit, from `sum_of_squares`."""
    return np.sqrt(sum_of_squares(v))


def run_chunked(
    kernel: Callable[[NDArray[np.float64], NDArray[np.float64]], None],
    a: NDArray[np.float64],
    tail: tuple[int, ...],
) -> NDArray[np.float64]:
    """Apply ``kernel(block, out_block)`` over blocks of the flattened stack ``a``.

    ``a`` has shape ``(..., k)``; the result has shape ``a.shape[:-1] + tail``. ``kernel`` writes
    its result for a contiguous block of rows of shape ``(n, k)`` into ``out_block`` of shape
    ``(n,) + tail``.
    """
    lead = a.shape[:-1]
    flat = np.ascontiguousarray(a).reshape(-1, a.shape[-1])
    out = np.empty((flat.shape[0],) + tail)
    n = flat.shape[0]
    if n <= CHUNK_ROWS:
        kernel(flat, out)
    else:
        for s in range(0, n, CHUNK_ROWS):
            kernel(flat[s : s + CHUNK_ROWS], out[s : s + CHUNK_ROWS])
    return out.reshape(lead + tail)
