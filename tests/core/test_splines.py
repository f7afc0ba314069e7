import math

import numpy as np
import pytest
from conftest import TWO_PI
from scipy.spatial.transform import Rotation, Slerp

import rq_rotation as rq

TIMES = np.array([0.0, 0.5, 2.0, 2.2, 3.0, 5.0])


@pytest.fixture
def keys(rng):
    return rng.normal(0, 0.8, (6, 3))


def make(kind, keys, rng):
    kw = {}
    if kind == "hermite":
        kw["tangents"] = rng.normal(size=(6, 3))
    if kind == "bezier":
        kw["tangents"] = keys[:, None, :] + rng.normal(0, 0.2, (6, 2, 3))
    return rq.rq_spline(TIMES, keys, kind, max_extent=50.0, **kw)


@pytest.mark.parametrize("kind", rq.KINDS)
def test_continuity_claims(kind, keys, rng):
    sp = make(kind, keys, rng)
    p = sp.control_points
    h = sp.ends - sp.starts
    assert np.all(sp.charts == 0)
    # C0 and C1 between pieces, read off the Bezier control points
    np.testing.assert_allclose(p[:-1, 3], p[1:, 0], atol=1e-14)
    d_end = 3 * (p[:-1, 3] - p[:-1, 2]) / h[:-1, None]
    d_start = 3 * (p[1:, 1] - p[1:, 0]) / h[1:, None]
    if kind != "bezier":  # free handles: only C0 (C1 needs matching handles)
        np.testing.assert_allclose(d_end, d_start, atol=1e-12)
    if kind == "bspline":  # C2
        a_end = 6 * (p[:-1, 3] - 2 * p[:-1, 2] + p[:-1, 1]) / h[:-1, None] ** 2
        a_start = 6 * (p[1:, 2] - 2 * p[1:, 1] + p[1:, 0]) / h[1:, None] ** 2
        np.testing.assert_allclose(a_end, a_start, atol=1e-11)
    else:  # interpolating
        np.testing.assert_allclose(sp.evaluate(TIMES), keys, atol=1e-14)
    # derivative() against central differences inside pieces
    t = np.linspace(0.01, 4.99, 57)
    t = t[np.min(np.abs(t[:, None] - TIMES[None]), axis=1) > 1e-3]
    num = (sp.evaluate(t + 1e-6) - sp.evaluate(t - 1e-6)) / 2e-6
    np.testing.assert_allclose(sp.derivative(t), num, atol=1e-7)


def test_bspline_uniform_matches_basis(keys):
    sp = rq.rq_spline(np.arange(6.0), keys, "bspline")
    # at interior knots the uniform cubic B-spline is (P_{i-1} + 4 P_i + P_{i+1}) / 6
    got = sp.evaluate(np.arange(1.0, 5.0))
    np.testing.assert_allclose(got, (keys[:-2] + 4 * keys[1:-1] + keys[2:]) / 6, atol=1e-14)


@pytest.mark.parametrize("kind", rq.KINDS)
def test_constant_rotation_exact(kind):
    v = np.array([0.3, -1.1, 2.0])
    keys = np.tile(v, (6, 1))
    kw = {"tangents": np.zeros((6, 3))} if kind == "hermite" else {}
    sp = rq.rq_spline(TIMES, keys, kind, **kw)
    t = np.linspace(-1, 6, 101)
    assert np.array_equal(sp.evaluate(t), np.tile(v, (101, 1)))
    assert np.array_equal(sp.derivative(t), np.zeros((101, 3)))


def test_constant_rotation_far_out_is_the_same_rotation():
    v = np.array([0.0, 0.0, 4 * math.pi - 0.4])
    sp = rq.rq_spline(TIMES, np.tile(v, (6, 1)), "catmull_rom")
    q = sp.evaluate_quat(np.linspace(0, 5, 50))
    assert rq.quat_angle_between(q, rq.rq_to_quat(v)).max() < 1e-13
    assert np.all(sp.charts == 2)  # 0.4 from the shell 4 pi -> its chart
    assert np.linalg.norm(sp.control_points, axis=-1).max() <= math.pi


def test_pieces_away_from_the_shells_keep_the_keys_chart(keys):
    # |v| around 3 pi + 0.4: more than reparameterize_margin (pi / 2) from 2 pi and 4 pi.
    far = keys * 0.05 + np.array([0.0, 0.0, 3 * math.pi + 0.4])
    sp = rq.rq_spline(TIMES, far, "catmull_rom")
    assert np.all(sp.charts == 0)
    plain = rq.bezier_control_points(TIMES, far, "catmull_rom")
    np.testing.assert_array_equal(sp.control_points, plain)
    # the old behaviour, every piece in the chart nearest the origin, is margin pi
    assert np.all(
        rq.rq_spline(TIMES, far, "catmull_rom", reparameterize_margin=math.pi).charts == 2
    )


def test_hermite_angular_velocities():
    keys = np.array([[0.0, 0, 0], [0.4, 0.2, 0.1], [1.0, -0.3, 0.5]])
    omega = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.2], [0.1, 0.1, 0.1]])
    for frame in ("world", "local"):
        sp = rq.rq_spline([0.0, 1.0, 2.0], keys, "hermite", angular_velocities=omega, frame=frame)
        np.testing.assert_allclose(sp.angular_velocity([0.0, 1.0, 2.0], frame), omega, atol=1e-12)


def test_multi_revolution_hidden_keys_and_charts():
    # four revolutions about a turning axis between two keys
    keys = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 8 * math.pi], [1.0, 0.0, 8 * math.pi]])
    sp = rq.rq_spline([0.0, 1.0, 2.0], keys, "catmull_rom")
    reasons = {e["reason"] for e in sp.hidden_keys}
    assert "split" in reasons and "chart" in reasons
    assert np.all(np.diff(sp.starts) > 0)
    # every piece is away from the singular shells in its own chart
    assert rq.shell_distance(sp.control_points).min() > 0.5
    # the rotation and angular velocity are continuous across every piece boundary
    tb = sp.starts[1:]
    qa = sp.evaluate_quat(tb - 1e-9)
    qb = sp.evaluate_quat(tb + 1e-9)
    assert rq.quat_angle_between(qa, qb).max() < 1e-7
    wa = sp.angular_velocity(tb - 1e-9)
    wb = sp.angular_velocity(tb + 1e-9)
    assert np.abs(wa - wb).max() < 1e-6
    # the rotation path is the same as the unsplit global curve (fixed-axis part: exact)
    sp1 = rq.rq_spline([0.0, 1.0], keys[:2], "catmull_rom")
    tt = np.linspace(0, 1, 77)
    q_global = rq.rq_to_quat(
        rq.rq_spline(
            [0.0, 1.0], keys[:2], "catmull_rom", max_extent=1e9, reparameterize_segments=False
        ).evaluate(tt)
    )
    assert rq.quat_angle_between(sp1.evaluate_quat(tt), q_global).max() < 1e-12


@pytest.mark.parametrize("kind", ["catmull_rom", "hermite", "bspline"])
@pytest.mark.parametrize("reparameterize", [True, False])
def test_pieces_of_many_curves_are_each_curves_spline(kind, reparameterize, rng):
    """`rq_spline_pieces` (one pass over many curves) gives each curve's `rq_spline` pieces,
    also for spins across several shells (split and reparameterized pieces)."""
    curves = []
    for count in (2, 5, 9, 3):
        times = np.cumsum(rng.uniform(0.5, 20.0, count))
        keys = np.cumsum(rng.normal(0.0, 2.5, (count, 3)), axis=0)
        omega = rng.normal(0.0, 0.3, (count, 3)) if kind == "hermite" else None
        curves.append((times, keys, omega))
    if kind == "bspline":
        curves = [c for c in curves if len(c[0]) >= 3]
    curve, starts, ends, control_points, charts = rq.splines.rq_spline_pieces(
        curves, kind, reparameterize
    )
    for number, (times, keys, omega) in enumerate(curves):
        one = rq.rq_spline(
            times, keys, kind, angular_velocities=omega, reparameterize_segments=reparameterize
        )
        mine = curve == number
        np.testing.assert_array_equal(starts[mine], one.starts)
        np.testing.assert_array_equal(ends[mine], one.ends)
        np.testing.assert_array_equal(control_points[mine], one.control_points)
        np.testing.assert_array_equal(charts[mine], one.charts)
    assert (np.diff(curve) >= 0).all() and (charts != 0).any() == reparameterize


@pytest.mark.parametrize("kind", ["catmull_rom", "bspline"])
def test_pieces_of_many_curves_refuse_bad_input(kind):
    good = (np.array([0.0, 1.0, 2.0]), np.zeros((3, 3)), None)
    for bad, match in (
        ((np.array([0.0, 2.0, 1.0]), np.zeros((3, 3)), None), "increasing"),
        ((np.array([0.0, 1.0]), np.zeros((3, 3)), None), "shape"),
        ((np.array([0.0, 1.0, 2.0]), np.full((3, 3), np.nan), None), "NaN"),
    ):
        with pytest.raises(ValueError, match=match):
            rq.splines.rq_spline_pieces([good, bad], kind)


def _figure2_with_scipy(samples=200):
    """The issue's Figure 2 experiment written independently of rq_rotation: scipy rotations,
    explicit cubic Bernstein polynomials, slerp as ``a * exp(u log(a^-1 b))`` (the short arc,
    which for these control points is the hemisphere-aligned one)."""
    p = rq.FIGURE2_KEYS.tolist()
    m = [np.subtract(p[1], p[0])] + [(np.subtract(p[i + 1], p[i - 1])) / 2 for i in (1, 2, 3)]
    m.append(np.subtract(p[4], p[3]))
    u = np.linspace(0.0, 1.0, samples + 1)
    worst = 0.0
    for i in range(4):
        ctrl = [np.array(p[i]), p[i] + m[i] / 3, p[i + 1] - m[i + 1] / 3, np.array(p[i + 1])]
        bern = [(1 - u) ** 3, 3 * u * (1 - u) ** 2, 3 * u**2 * (1 - u), u**3]
        euclid = Rotation.from_rotvec(sum(b[:, None] * c for b, c in zip(bern, ctrl, strict=True)))
        level = [Rotation.from_rotvec(np.tile(c, (len(u), 1))) for c in ctrl]
        while len(level) > 1:
            level = [
                a * Rotation.from_rotvec(u[:, None] * (a.inv() * b).as_rotvec())
                for a, b in zip(level[:-1], level[1:], strict=True)
            ]
        worst = max(worst, (euclid.inv() * level[0]).magnitude().max())
    return math.degrees(worst)


def test_figure2_max_angle_under_3_degrees():
    res = rq.figure2_experiment()
    print(f"Figure 2 max angle: {res['max_angle_deg']:.4f} degrees")
    assert res["max_angle_deg"] < 3.0
    # the same number from an independent implementation (1.976 degrees)
    assert res["max_angle_deg"] == pytest.approx(_figure2_with_scipy(), abs=1e-9)
    assert res["rq_curve"].shape == res["spherical_curve"].shape
    np.testing.assert_allclose(res["rq_curve"][::200], rq.FIGURE2_KEYS, atol=1e-15)


def test_slerp_against_scipy(rng):
    q = Rotation.random(2, random_state=1)
    t = np.linspace(0, 1, 11)
    ref = Slerp([0, 1], q)(t).as_quat(scalar_first=True)
    p0, p1 = q.as_quat(scalar_first=True)
    got = rq.slerp(p0, p1, t)
    sign = np.sign(np.sum(got * ref, axis=1, keepdims=True))
    np.testing.assert_allclose(got, sign * ref, atol=1e-14)
    np.testing.assert_allclose(rq.slerp(p0, p1, 0.0), p0, atol=1e-15)
    # spherical Bezier with equally spaced collinear controls is slerp
    mid = [rq.slerp(p0, p1, s, shortest=False) for s in (1 / 3, 2 / 3)]
    p1a = p1 if p0 @ p1 >= 0 else -p1
    sb = rq.spherical_bezier(p0, mid[0], mid[1], p1a, t)
    np.testing.assert_allclose(sb, rq.slerp(p0, p1a, t, shortest=False), atol=1e-14)


def test_squad_passes_through_keys(rng):
    q = Rotation.random(5, random_state=2).as_quat(scalar_first=True)
    t = np.arange(5.0)
    got = rq.squad_keys(t, q, t)
    assert rq.quat_angle_between(got, q).max() < 1e-14


def test_compare_interpolations():
    res = rq.compare_interpolations(np.arange(5.0), rq.rq_to_quat(rq.FIGURE2_KEYS), 120)
    assert set(res["quats"]) == {"rq_catmull_rom", "slerp", "squad", "quat_linear", "quat_bezier"}
    assert res["max_angle_to_rq"]["rq_catmull_rom"] < 1e-14
    for name, speed in res["angular_speed"].items():
        assert speed.shape == (120,), name
        assert np.all(np.isfinite(speed))


def test_spline_bad_input():
    with pytest.raises(ValueError, match="kind"):
        rq.rq_spline([0, 1], np.zeros((2, 3)), "cardinal")
    with pytest.raises(ValueError, match="increasing"):
        rq.rq_spline([1, 0], np.zeros((2, 3)))
    with pytest.raises(ValueError, match="hermite needs"):
        rq.rq_spline([0, 1], np.zeros((2, 3)), "hermite")
    with pytest.raises(ValueError, match="tangents contains NaN"):
        rq.rq_spline([0, 1], np.zeros((2, 3)), "bezier", tangents=np.full((2, 2, 3), np.nan))
    with pytest.raises(ValueError, match=r"shape \(K, 2, 3\) = \(2, 2, 3\), got \(2, 3\)"):
        rq.rq_spline([0, 1], np.zeros((2, 3)), "bezier", tangents=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="tangents must be an array of real numbers"):
        rq.rq_spline([0, 1], np.zeros((2, 3)), "bezier", tangents="left, right")


@pytest.mark.parametrize("turn, flagged", [(0.5, True), (0.2, False)])
def test_shell_hidden_key_where_the_axis_turns_next_to_a_shell(turn, flagged):
    r = TWO_PI - 0.1  # both keys 0.1 from the first shell
    keys = r * np.array([[1.0, 0.0, 0.0], [math.cos(turn), math.sin(turn), 0.0]])
    sp = rq.rq_spline([0.0, 1.0], keys, "catmull_rom")
    shell = [e for e in sp.hidden_keys if e["reason"] == "shell"]
    assert len(sp.starts) == 1
    assert shell == ([{"time": 0.5, "segment": 0, "reason": "shell"}] if flagged else [])
    # far from every shell the same turn is not reported
    far = rq.rq_spline([0.0, 1.0], keys * (3.0 / r), "catmull_rom")
    assert all(e["reason"] != "shell" for e in far.hidden_keys)


def test_hermite_tangent_unbounded_on_a_shell_is_refused_with_a_clear_error():
    """A key exactly on the 2 pi shell with an angular velocity across its axis has an
    infinite RQ rate: the segment would need some 1e10 hidden pieces. It is refused by name,
    not by exhausting memory; the same key with the velocity along its axis is fine."""
    times = [0.0, 10.0, 20.0]
    keys = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, TWO_PI], [0.0, 0.0, 8.0]])
    across = np.array([[0.0, 0.0, 0.1], [0.3, 0.0, 0.1], [0.0, 0.0, 0.1]])
    with pytest.raises(ValueError, match=r"segment \d spans .* 2 pi shell"):
        rq.rq_spline(times, keys, "hermite", angular_velocities=across)
    along = np.array([[0.0, 0.0, 0.1], [0.0, 0.0, 0.1], [0.0, 0.0, 0.1]])
    spline = rq.rq_spline(times, keys, "hermite", angular_velocities=along)
    # Through the keys' rotations (the key on the shell may be written in another chart).
    assert rq.quat_angle_between(spline.evaluate_quat(times), rq.rq_to_quat(keys)).max() < 1e-9


def _reference_blossom(p, a, b, c):
    """De Casteljau's blossom as written plainly on (..., 3) views (the layout-free form)."""
    pts = [p[..., i, :] for i in range(4)]
    for u in (a, b, c):
        u = np.asarray(u)[..., None]
        pts = [x + u * (y - x) for x, y in zip(pts[:-1], pts[1:], strict=True)]
    return pts[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_blossom_is_de_casteljau_to_the_bit_in_any_layout_and_type(dtype):
    """`splines._blossom` runs on contiguous rows in place; its values and types are the plain
    de Casteljau's, also for float32 and integer points and broadcast parameters."""
    from rq_rotation.splines import _blossom

    rng = np.random.default_rng(8)
    p = (rng.normal(size=(500, 4, 3)) * 5).astype(dtype)
    u = rng.random(500)
    cases = [
        (p, u, u, u),
        (p, u, u, rng.random(500)),
        (p[0], 0.3, 0.3, 0.7),
        (p[0], u[:7], u[:7], u[:7]),
        (p[:10], np.float32(0.5), 0.2, 0.9),
        (p[:30].reshape(5, 6, 4, 3), rng.random((5, 6)), rng.random(6), 0.5),
        (p[:20], 1.0, 1.0, 1.0),
    ]
    for case in cases:
        got, want = _blossom(*case), _reference_blossom(*case)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got, want)
        assert got.flags["C_CONTIGUOUS"]
