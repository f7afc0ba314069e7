# SPDX-License-Identifier: GPL-3.0-or-later
"""The numpy core, as shipped inside the extension, against Blender's own `mathutils`.

Runs inside Blender 4.2 and 5.0, so it also proves the core works with the numpy that
Blender bundles. mathutils computes in float32 for some paths and float64 for others; the
tolerances below (1e-6) are float32's, the core itself is checked to 1e-13 against scipy in
tests/core.
"""

import math

import mathutils
import numpy as np
import pytest

ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(20261121)


def random_euler(rng, n):
    return rng.uniform(-math.pi, math.pi, size=(n, 3))


@pytest.mark.parametrize("order", ORDERS)
def test_euler_to_quat_matches_mathutils(rq, rng, order):
    angles = random_euler(rng, 200)
    ours = rq.euler_to_quat(angles, order)
    theirs = np.array([mathutils.Euler(e, order).to_quaternion() for e in angles])
    # Same rotation: equal up to the quaternion's sign.
    signs = np.sign(np.sum(ours * theirs, axis=-1))[:, None]
    np.testing.assert_allclose(ours, signs * theirs, atol=1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_to_matrix_matches_mathutils(rq, rng, order):
    angles = random_euler(rng, 200)
    ours = rq.euler_to_matrix(angles, order)
    theirs = np.array([mathutils.Euler(e, order).to_matrix() for e in angles])
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


@pytest.mark.parametrize("order", ORDERS)
def test_quat_to_euler_near_matches_mathutils_compat(rq, rng, order):
    """``near`` picks the same equivalent triple as ``to_euler(order, compat)``, the tool
    Blender's own keying uses for continuity, away from gimbal lock."""
    angles = random_euler(rng, 200) * [1.0, 0.45, 1.0]  # middle angle away from +-pi/2
    compat = (
        angles
        + rng.normal(scale=0.2, size=angles.shape)
        + 2 * math.pi * rng.integers(-2, 3, size=angles.shape)
    )
    quats = rq.euler_to_quat(angles, order)
    ours = rq.quat_to_euler(quats, order, near=compat)
    theirs = np.array(
        [
            mathutils.Quaternion(q).to_euler(order, mathutils.Euler(c, order))
            for q, c in zip(quats, compat, strict=True)
        ]
    )
    # A different choice of equivalent would differ by about pi or 2*pi. mathutils converts
    # through a float32 matrix, which costs up to ~2e-4 rad at middle angles near +-1.4, so
    # the choice is compared at 1e-3 and the exactness of ours checked on its own.
    np.testing.assert_allclose(ours, theirs, atol=1e-3)
    np.testing.assert_allclose(
        rq.euler_to_matrix(ours, order), rq.quat_to_matrix(quats), atol=1e-12
    )


def test_rq_matches_exponential_map(rq, rng):
    """mathutils' ``Quaternion(exp_map)`` and ``to_exponential_map()`` are RQ under another name."""
    vectors = rng.normal(scale=1.0, size=(300, 3))
    vectors /= np.maximum(1.0, np.linalg.norm(vectors, axis=-1, keepdims=True) / 3.0)  # |v| <= 3
    ours = rq.rq_to_quat(vectors)
    theirs = np.array([mathutils.Quaternion(v) for v in vectors])
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    back = np.array([mathutils.Quaternion(q).to_exponential_map() for q in ours])
    np.testing.assert_allclose(rq.quat_to_rq(ours), back, atol=1e-6)


def test_quat_to_matrix_and_back_match_mathutils(rq, rng):
    quats = rng.normal(size=(300, 4))
    quats /= np.linalg.norm(quats, axis=-1, keepdims=True)
    theirs = np.array([mathutils.Quaternion(q).to_matrix() for q in quats])
    np.testing.assert_allclose(rq.quat_to_matrix(quats), theirs, atol=1e-6)
    ours = rq.matrix_to_quat(theirs)
    back = np.array([mathutils.Matrix(m).to_quaternion() for m in theirs])
    signs = np.sign(np.sum(back * ours, axis=-1))[:, None]
    np.testing.assert_allclose(ours, signs * back, atol=1e-6)
    assert np.all(ours[:, 0] >= 0.0)


def test_quat_multiply_order_matches_mathutils(rq, rng):
    """``quat_multiply(p, q)`` is ``p @ q`` in mathutils: q first, then p."""
    p, q = rng.normal(size=(2, 100, 4))
    p /= np.linalg.norm(p, axis=-1, keepdims=True)
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    theirs = np.array(
        [mathutils.Quaternion(a) @ mathutils.Quaternion(b) for a, b in zip(p, q, strict=True)]
    )
    np.testing.assert_allclose(rq.quat_multiply(p, q), theirs, atol=1e-6)


def test_blender_axis_angle_matches_mathutils(rq, rng):
    axes = rng.normal(size=(200, 3))
    angles = rng.uniform(-2 * math.pi, 2 * math.pi, size=200)
    ours = rq.blender_axis_angle_to_quat(np.column_stack([angles, axes]))
    theirs = np.array([mathutils.Quaternion(a, t) for a, t in zip(axes, angles, strict=True)])
    signs = np.sign(np.sum(ours * theirs, axis=-1))[:, None]
    np.testing.assert_allclose(ours, signs * theirs, atol=1e-6)
