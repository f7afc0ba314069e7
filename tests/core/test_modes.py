# SPDX-License-Identifier: GPL-3.0-or-later
"""`rq_rotation.modes`: the mode table agrees with itself and with the core's conversions;
every mode's channel values round-trip through its inverse."""

import math

import numpy as np
import pytest
from conftest import random_unit
from hypothesis import given
from hypothesis import strategies as st

import rq_rotation as rq
from rq_rotation import modes
from rq_rotation.keyframes.limits import limits_restrict_nothing

EULERS = list(rq.EULER_ORDERS)
NEAR_MODES = [*EULERS, "RQ", "SWING_TWIST"]


def _same_rotation(p, q):
    return rq.quat_angle_between(p, q).max()


def _random_values(mode, rng, n):
    """Channel values of ``mode`` (n, k), with extra revolutions where the mode keeps them."""
    if mode == "QUATERNION":
        return rng.normal(size=(n, 4)) * rng.uniform(0.2, 3.0, (n, 1))
    if mode == "AXIS_ANGLE":
        return np.concatenate([rng.uniform(-15.0, 15.0, (n, 1)), random_unit(rng, n)], axis=1)
    if mode == "RQ":
        return random_unit(rng, n) * rng.uniform(0.0, 15.0, (n, 1))
    if mode == "SWING_TWIST":
        swing = random_unit(rng, n)[:, [0, 2]]
        swing /= np.linalg.norm(swing, axis=1, keepdims=True)
        swing *= rng.uniform(0.0, 15.0, (n, 1))
        return np.concatenate([swing, rng.uniform(-15.0, 15.0, (n, 1))], axis=1)
    # Euler: away from gimbal lock (|middle angle| < 80 degrees mod pi), any revolutions.
    e = rng.uniform(-12.0, 12.0, (n, 3))
    middle = "XYZ".index(mode[1])
    e[:, middle] = rng.uniform(-1.4, 1.4, n) + math.pi * rng.integers(-3, 4, n)
    return e


def test_the_table_names_and_sizes_agree_with_the_conversions(rng):
    assert list(modes.MODES) == [mode.name for mode in modes.MODES.values()]
    assert set(modes.MODES) == {"RQ", "SWING_TWIST", "QUATERNION", "AXIS_ANGLE", *EULERS}
    assert set(modes.ADDON_MODES) | set(modes.NATIVE_MODES) == set(modes.MODES)
    assert set(modes.ADDON_MODES) == {"RQ", "SWING_TWIST"}
    labels = [mode.label for mode in modes.MODES.values()]
    assert len(set(labels)) == len(labels)
    expected = {"QUATERNION": 4, "AXIS_ANGLE": 4}
    for name, mode in modes.MODES.items():
        assert mode.size == expected.get(name, 3) == sum(p.size for p in mode.parameters)
        # values_to_quat takes exactly k channel values.
        q = modes.values_to_quat(name, _random_values(name, rng, 5))
        assert q.shape == (5, 4)
        paths = [p.path for p in mode.parameters]
        assert len(set(paths)) == len(paths)
        assert all(p.id_property == mode.addon for p in mode.parameters)
    assert [p.name for p in modes.MODES["SWING_TWIST"].parameters] == ["rq_swing", "rq_twist"]
    assert [p.size for p in modes.MODES["SWING_TWIST"].parameters] == [2, 1]
    assert modes.MODES["XYZ"].parameters[0].path == "rotation_euler"


def test_the_default_limits_restrict_nothing():
    defaults = dict(modes.LIMITS)
    assert set(defaults) == {"rq_swing_limit", "rq_twist_limit"}
    assert all(modes.PROPERTIES[n].size == 2 and modes.PROPERTIES[n].id_property for n in defaults)
    assert limits_restrict_nothing(defaults["rq_swing_limit"], defaults["rq_twist_limit"])


@pytest.mark.parametrize("mode", NEAR_MODES)
def test_nearest_values_with_the_values_as_near_gives_them_back(mode, rng):
    values = _random_values(mode, rng, 400)
    q = modes.values_to_quat(mode, values)
    back = modes.nearest_values(mode, q, near=values)
    np.testing.assert_allclose(back, values, atol=1e-9)
    # Near something else: still the same rotation.
    other = modes.nearest_values(mode, q, near=values + rng.normal(0.0, 2.0, values.shape))
    assert _same_rotation(modes.values_to_quat(mode, other), q) < 1e-9


@pytest.mark.parametrize("mode", ["QUATERNION", "AXIS_ANGLE"])
def test_native_modes_without_near_round_trip_through_their_inverse(mode, rng):
    values = _random_values(mode, rng, 400)
    q = modes.values_to_quat(mode, values)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-14)
    if mode == "QUATERNION":
        np.testing.assert_allclose(q, values / np.linalg.norm(values, axis=1, keepdims=True))
        assert modes.values_to_quat(mode, np.zeros(4)).tolist() == [1.0, 0.0, 0.0, 0.0]
        back = modes.values_to_quat(mode, q)
    else:
        back = modes.values_to_quat(mode, rq.quat_to_blender_axis_angle(q))
    assert _same_rotation(back, q) < 1e-12


@pytest.mark.parametrize("mode", list(modes.MODES))
def test_rotation_vectors_keep_the_rotation_where_the_docstring_says_exact(mode, rng):
    values = _random_values(mode, rng, 300)
    if mode in EULERS:  # exact for a rotation about one axis
        values = values * (np.arange(300)[:, None] % 3 == np.arange(3))
    if mode == "SWING_TWIST":  # exact with a zero swing or a zero twist
        values[::2, :2] = 0.0
        values[1::2, 2] = 0.0
    v = modes.rotation_vectors(mode, values)
    assert v.shape == (300, 3)
    assert _same_rotation(rq.rq_to_quat(v), modes.values_to_quat(mode, values)) < 1e-9
    if mode in ("RQ", "AXIS_ANGLE", *EULERS):  # revolutions kept: the length is the angle
        angle = np.abs(values[:, 0]) if mode == "AXIS_ANGLE" else np.linalg.norm(values, axis=1)
        np.testing.assert_allclose(np.linalg.norm(v, axis=1), angle, atol=1e-12)
    if mode == "SWING_TWIST":
        np.testing.assert_array_equal(v, values[:, [0, 2, 1]])


def test_swing_twist_values_are_the_swing_vector_after_the_twist(rng):
    values = _random_values("SWING_TWIST", rng, 200)
    swing = rq.rq_to_quat(rq.swing_vector(values[:, :2]))
    twist = rq.rq_to_quat(values[:, 2:3] * [0.0, 1.0, 0.0])
    expected = rq.quat_multiply(swing, twist)
    assert _same_rotation(modes.values_to_quat("SWING_TWIST", values), expected) < 1e-12


@given(
    st.lists(
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=2, max_size=24
    ).filter(lambda xs: len(xs) % 2 == 0)
)
def test_swing_of_inverts_swing_vector(numbers):
    swing = np.array(numbers).reshape(-1, 1, 2)  # any stack shape
    v = rq.swing_vector(swing)
    assert v.shape == swing.shape[:-1] + (3,)
    assert (v[..., 1] == 0.0).all()
    np.testing.assert_array_equal(rq.swing_of(v), swing)
    full = np.concatenate([v[..., :1], np.ones(v.shape[:-1] + (1,)), v[..., 2:]], axis=-1)
    np.testing.assert_array_equal(rq.swing_vector(rq.swing_of(full)), v)  # Y dropped


def test_bad_modes_are_named():
    with pytest.raises(ValueError, match="unknown rotation mode 'EULER'"):
        modes.values_to_quat("EULER", np.zeros(3))
    for mode in ("QUATERNION", "AXIS_ANGLE"):
        with pytest.raises(ValueError, match=f"mode '{mode}' has no nearest"):
            modes.nearest_values(mode, np.array([[1.0, 0, 0, 0]]), np.zeros((1, 4)))
