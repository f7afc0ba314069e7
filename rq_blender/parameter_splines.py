# SPDX-License-Identifier: GPL-3.0-or-later
"""RQ-spline interpolation of parameter F-curves: reading the keys, fitting the core's spline
as Bezier keys (``rq_rotation.keyframes.spline_keys``), writing them back.

Rotation vectors (``rq_vector``, and the swing as ``(r_x, 0, r_z)``, planar) are fitted in
one batch per kind; each twist is a scalar cubic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..rq_rotation import swing_vector
from ..rq_rotation.keyframes import spline_keys
from ..rq_rotation.modes import RQ_VECTOR, SWING, TWIST
from . import animdata
from .parameter_curves import ParameterCurves

# The columns of `spline_keys.SplineKeys.values` a parameter's F-curves (index 0, 1, ...)
# take: the swing ``(r_x, r_z)`` is the rotation vector ``(r_x, 0, r_z)``, the twist a
# scalar spline.
COLUMNS = {RQ_VECTOR.name: (0, 1, 2), SWING.name: (0, 2), TWIST.name: (0,)}


def _as_vectors(
    curves: ParameterCurves,
) -> Callable[[np.ndarray], np.ndarray]:
    """The parameter at frames ``t`` as rotation vectors, (m,) -> (m, 3)."""
    if curves.name != SWING.name:
        return curves.values
    return lambda t: swing_vector(curves.values(t))


def key_values(usable: Sequence[ParameterCurves], times: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each parameter's values (K, k) at its key ``times`` (K,), in the order of ``usable``:
    the parameters of one name (one size k) evaluated in one `animdata.ChannelStack` pass
    (the values of `ParameterCurves.values`, without a pass per curve)."""
    out: list[np.ndarray] = [np.empty(0)] * len(usable)
    for name in {curves.name for curves in usable}:
        index = [i for i, curves in enumerate(usable) if curves.name == name]
        stack = animdata.ChannelStack(
            [usable[i].channels for i in index], np.array([usable[i].static for i in index])
        )
        sizes = [len(times[i]) for i in index]
        values = stack.evaluate(
            np.repeat(np.arange(len(index)), sizes), np.concatenate([times[i] for i in index])
        )
        for i, part in zip(index, np.split(values, np.cumsum(sizes)[:-1]), strict=True):
            out[i] = part
    return out


def fit(
    usable: Sequence[ParameterCurves],
    times: Sequence[np.ndarray],
    kind: spline_keys.Kind,
    tolerance: float,
) -> list[spline_keys.SplineKeys]:
    """The keys of every parameter's spline of ``kind`` (a `spline_keys.KINDS` value), in the
    order of ``usable``; ``times`` are each parameter's key times (`ParameterCurves.key_times`),
    ``tolerance`` (radians) as `spline_keys.fit_many` takes it."""
    hermite = kind == spline_keys.KINDS["HERMITE"]
    results: dict[int, spline_keys.SplineKeys] = {}
    batches: dict[bool, list[tuple[int, spline_keys.SplineInput]]] = {False: [], True: []}
    keyed = key_values(usable, times)
    for number, (curves, at, values) in enumerate(zip(usable, times, keyed, strict=True)):
        if curves.name == TWIST.name:
            rates = spline_keys.rates_of(curves.values, at)[:, 0] if hermite else None
            results[number] = spline_keys.fit_scalar(at, values[:, 0], kind, rates)
            continue
        planar = curves.name == SWING.name
        omega = spline_keys.angular_velocities_of(_as_vectors(curves), at) if hermite else None
        vectors = swing_vector(values) if planar else values
        batches[planar].append((number, spline_keys.SplineInput(at, vectors, omega)))
    for planar, batch in batches.items():
        fitted = spline_keys.fit_many([item for _, item in batch], kind, tolerance, planar=planar)
        results.update(zip((number for number, _ in batch), fitted, strict=True))
    return [results[number] for number in range(len(usable))]


def write(curves: ParameterCurves, result: spline_keys.SplineKeys) -> None:
    """Replace the parameter's keys in its action by ``result``'s (FREE handles)."""
    owner = animdata.fcurve_owner(curves.use, ensure=True)
    assert owner is not None  # ensure=True creates it
    for index, (column, channel) in enumerate(
        zip(COLUMNS[curves.name], curves.channels, strict=True)
    ):
        animdata.write_keys(
            owner,
            curves.data_path,
            index,
            curves.bone_name,
            result.times,
            result.values[:, column],
            interpolation=result.interpolation,
            handles=(result.handle_left[:, column], result.handle_right[:, column]),
            fcurve=None if channel is None else channel.fcurve,
        )
