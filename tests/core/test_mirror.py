"""Mirroring across X (`rq_rotation.mirror`) against ``P R P``, ``P = diag(-1, 1, 1)``: the
reflection Blender applies to a bone's local rotation for Paste Flipped and X-Axis Mirror."""

import math

import numpy as np
import pytest

import rq_rotation as rq

P = np.diag([-1.0, 1.0, 1.0])


def reflected(matrices):
    return P @ matrices @ P


def test_rq_mirror_is_the_reflected_rotation(rng):
    v = rng.normal(size=(200, 3)) * 2.5  # past pi and 2 pi too
    mirrored = rq.mirror_rq(v)
    np.testing.assert_allclose(rq.rq_to_matrix(mirrored), reflected(rq.rq_to_matrix(v)), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(mirrored, axis=-1), np.linalg.norm(v, axis=-1))
    np.testing.assert_array_equal(rq.mirror_rq(mirrored), v)


def test_swing_twist_mirror_is_the_reflected_rotation(rng):
    swing = rng.normal(size=(200, 2)) * 1.5
    twist = rng.uniform(-3.0, 3.0, 200)
    m_swing, m_twist = rq.mirror_swing_twist(swing, twist)
    before = rq.quat_to_matrix(rq.swing_twist_to_quat(swing, twist))
    after = rq.quat_to_matrix(rq.swing_twist_to_quat(m_swing, m_twist))
    np.testing.assert_allclose(after, reflected(before), atol=1e-12)
    np.testing.assert_array_equal(m_swing[:, 0], swing[:, 0])
    back = rq.mirror_swing_twist(m_swing, m_twist)
    np.testing.assert_array_equal(back[0], swing)
    np.testing.assert_array_equal(back[1], twist)


def test_quat_mirror_is_the_reflected_rotation(rng):
    q = rng.normal(size=(100, 4))
    np.testing.assert_allclose(
        rq.quat_to_matrix(rq.mirror_quat(q)), reflected(rq.quat_to_matrix(q)), atol=1e-12
    )


def test_twist_limit_mirrors_to_the_negated_range():
    lo, hi = rq.mirror_twist_limit(-0.5, 1.2)
    assert (float(lo), float(hi)) == (-1.2, 0.5)
    # a twist inside the range mirrors into the mirrored range
    _, t = rq.mirror_swing_twist([0.0, 0.0], 1.0)
    assert lo <= t <= hi


def test_the_mirrored_range_limits_the_mirrored_twist_as_the_range_limits_the_twist(rng):
    """``clamp_twist`` in the mirrored range is the mirror of ``clamp_twist`` in the range,
    for ordered and inverted ranges (held at their first value), and mirroring twice gives
    the range back."""
    lo, hi = rng.uniform(-3.0, 3.0, size=(2, 400))
    t = rng.uniform(-4.0, 4.0, size=400)
    mirrored = rq.mirror_twist_limit(lo, hi)
    np.testing.assert_allclose(
        rq.clamp_twist(-t, *mirrored), -rq.clamp_twist(t, lo, hi), atol=1e-15
    )
    np.testing.assert_allclose(rq.mirror_twist_limit(*mirrored), (lo, hi), atol=1e-12)
    assert (lo > hi).sum() > 100  # inverted ranges were among them


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="swing"):
        rq.mirror_swing_twist([1.0, 2.0, 3.0], 0.0)
    with pytest.raises(ValueError, match="v"):
        rq.mirror_rq([math.nan, 0.0, 0.0])
