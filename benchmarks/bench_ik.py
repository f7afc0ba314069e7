# SPDX-License-Identifier: GPL-3.0-or-later
"""Speed and accuracy of the chain IK solver (issue 14) against SciPy's SLSQP.

Both solve the same chains from the same start poses: a 3-joint arm (a swing/twist shoulder
with an ellipse and a twist range, a hinge elbow, an RQ wrist) and a 10-joint chain of
swing/twist joints (a tail or a spine, each with its ellipse and twist range). Two kinds of
target:

* *drag*: the end effector dragged along a curve in steps of 1% of the chain's length, each
  solve starting from the last pose (what ``pose.rq_ik_reach`` and Auto IK do);
* *reach*: a target far from the start, the tip of a random pose within the limits.

SLSQP minimizes the squared distance with the ellipses as inequality constraints, the twist
ranges and hinge segments as bounds, and numerical Jacobians (its default), using the solver's
own forward kinematics (``_Chain.evaluate`` without Jacobians), so both pay the same for a
pose. ``ftol=1e-12``: tighter does not lower its final error on these chains. That is the
issue's peer, and an easier problem than the solver's: the solver also finds, among the poses
that reach, the one closest to the start. A second pass (`slsqp_closest`) gives SLSQP that
problem too: the squared joint angles from the start minimized, the reach as an equality
constraint, the same limits; its rows compare the angles as well. Times are CPU
times of the process (``time.process_time``), medians over the targets; each solver runs
over all the targets in its own pass. OpenBLAS runs one thread (``OPENBLAS_NUM_THREADS``,
set before numpy loads): with its default threads, SLSQP's solves on the 10-joint chain
kept a second thread spinning, whose CPU time doubled SLSQP's there (63 against 31 ms a
drag) while the wall time a user waits did not; the 3-joint chain's are too small to
thread.

Run from the repository root: ``python benchmarks/bench_ik.py``.
"""

from __future__ import annotations

import math
import os
import pathlib
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # (before numpy loads: see above)

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import rq_rotation as rq
from rq_rotation import Joint, solve_chain
from rq_rotation import ik as ik_module

TIP = np.array([0.0, 1.0, 0.0])
TARGETS = {"3-joint": 2.0, "10-joint": 10.0}  # ms, median, the targets


def _offset(length: float) -> np.ndarray:
    m = np.eye(4)
    m[1, 3] = length
    return m


def arm(rng: np.random.Generator) -> list[Joint]:
    """Shoulder (ellipse 70 x 110 degrees, twist -40..80), hinge elbow, RQ wrist."""
    return [
        Joint(
            "swing_twist",
            (*rng.uniform(-0.3, 0.3, 2), rng.uniform(-0.3, 0.3)),
            swing_limit=(math.radians(70), math.radians(110)),
            twist_limit=(math.radians(-40), math.radians(80)),
        ),
        Joint(
            "swing_twist",
            (rng.uniform(0.2, 1.0), 0.0, 0.0),
            offset=_offset(1.0),
            swing_limit=(2.5, 0.0),
            twist_limit=(0.0, 0.0),
        ),
        Joint("rq", rng.normal(0.0, 0.3, 3), offset=_offset(0.9)),
    ]


def tail(rng: np.random.Generator, n: int = 10) -> list[Joint]:
    """``n`` swing/twist joints, ellipse 0.5 x 0.7, twist -0.3..0.3, bones 0.4 long."""
    return [
        Joint(
            "swing_twist",
            (*rng.uniform(-0.2, 0.2, 2), rng.uniform(-0.1, 0.1)),
            offset=_offset(0.4) if i else np.eye(4),
            swing_limit=(0.5, 0.7),
            twist_limit=(-0.3, 0.3),
        )
        for i in range(n)
    ]


def _chain(joints: list[Joint], target: np.ndarray) -> ik_module._Chain:
    chain = ik_module._Chain(joints, TIP, target, None, 1.0)
    chain.start(np.stack([j.params for j in joints]))
    return chain


def _limits(joints: list[Joint]) -> tuple[list, list]:
    """SLSQP's bounds (the twist ranges and hinge segments; three per joint) and inequality
    constraints (the ellipses) of a chain."""
    bounds: list = []
    constraints: list = []
    for i, joint in enumerate(joints):
        if joint.kind != "swing_twist":
            bounds += [(None, None)] * 3
            continue
        a, b, lo, hi = (
            float(x) for x in rq.effective_limits(*joint.swing_limit, *joint.twist_limit)
        )
        bounds += [(-a, a), (-b, b), (lo, hi)]
        if a > 0 and b > 0:
            constraints.append(
                {
                    "type": "ineq",
                    "fun": lambda x, i=i, a=a, b=b: (
                        1.0 - (x[3 * i] / a) ** 2 - (x[3 * i + 1] / b) ** 2
                    ),
                }
            )
    return bounds, constraints


def slsqp(joints: list[Joint], target: np.ndarray) -> tuple[np.ndarray, float]:
    """SciPy's SLSQP minimizing the squared distance, within the limits (`_limits`): (parameters
    (n, 3), distance left)."""
    from scipy.optimize import minimize

    chain = _chain(joints, target)
    bounds, constraints = _limits(joints)

    def distance2(x: np.ndarray) -> float:
        end = chain.evaluate(x.reshape(-1, 3), jacobians=False).end
        d = end - target
        return float(d @ d)

    x0 = np.stack([j.params for j in joints]).ravel()
    result = minimize(
        distance2,
        x0,
        method="SLSQP",
        bounds=bounds,
        constraints=constraints,
        options={"ftol": 1e-12, "maxiter": 500},
    )
    return result.x.reshape(-1, 3), math.sqrt(distance2(result.x))


def slsqp_closest(joints: list[Joint], target: np.ndarray) -> tuple[float, float]:
    """SciPy's SLSQP on the solver's own problem: the squared joint angles from the start
    (``_State.e2``) minimized with the reach as an equality constraint (the residual in chain
    lengths, ``_State.r1``) and the limits of `slsqp`: (squared angles, distance left)."""
    from scipy.optimize import minimize

    chain = _chain(joints, target)
    bounds, constraints = _limits(joints)
    constraints.append(
        {"type": "eq", "fun": lambda x: chain.evaluate(x.reshape(-1, 3), jacobians=False).r1}
    )
    x0 = np.stack([j.params for j in joints]).ravel()
    result = minimize(
        lambda x: chain.evaluate(x.reshape(-1, 3), jacobians=False).e2,
        x0,
        method="SLSQP",
        bounds=bounds,
        constraints=constraints,
        options={"ftol": 1e-12, "maxiter": 500},
    )
    end = chain.evaluate(result.x.reshape(-1, 3), jacobians=False)
    return end.e2, math.dist(end.end.tolist(), target.tolist())


def _with_params(joints: list[Joint], params: np.ndarray) -> list[Joint]:
    return [
        Joint(j.kind, p, j.offset, j.locks, j.swing_limit, j.twist_limit, j.euler_order)
        for j, p in zip(joints, params, strict=True)
    ]


def _end(joints: list[Joint], params: np.ndarray) -> np.ndarray:
    return _chain(joints, np.zeros(3)).evaluate(np.asarray(params), jacobians=False).end


def _within_limits(joints: list[Joint], params: np.ndarray) -> np.ndarray:
    out = params.copy()
    for i, joint in enumerate(joints):
        if joint.kind == "swing_twist":
            a, b, lo, hi = rq.effective_limits(*joint.swing_limit, *joint.twist_limit)
            out[i, :2] = rq.clamp_swing_ellipse(out[i, :2], a, b)
            out[i, 2] = rq.clamp_twist(out[i, 2], lo, hi)
    return out


def problems(kind: str, name: str, count: int, seed: int = 7):
    """``count`` (joints, target) pairs: drags (consecutive) or far reaches."""
    rng = np.random.default_rng(seed)
    make = arm if name == "3-joint" else tail
    joints = make(rng)
    if kind == "drag":
        start = np.stack([j.params for j in joints])
        base = _end(joints, start)
        length = _chain(joints, base).scale  # (measured at the start pose)
        radius = 0.15 * length
        step = 0.01 * length
        angles = np.arange(count) * step / radius
        path = base + radius * np.stack(
            [np.sin(angles), np.cos(angles) - 1.0, 0.2 * np.sin(2 * angles)], axis=1
        )
        for target in path[1:]:
            yield joints, target
            joints = _with_params(joints, solve_chain(joints, TIP, target).params)
        return
    for _ in range(count):
        joints = make(rng)
        pose = np.stack([j.params for j in joints]) + rng.normal(0.0, 0.6, (len(joints), 3))
        yield joints, _end(joints, _within_limits(joints, pose))


def measure(kind: str, name: str, count: int, closest: bool = False) -> dict[str, float]:
    """Both solvers over the same targets, each in its own pass: SLSQP minimizing the
    distance (`slsqp`), or with ``closest`` the solver's own problem (`slsqp_closest`), whose
    squared angles are compared too (``not_more``: ours at most SLSQP's plus 1e-9)."""
    ours, theirs, ours_d, theirs_d, iterations, ours_e2, theirs_e2 = ([] for _ in range(7))
    cases = list(problems(kind, name, count))
    # each solver in its own pass: run right after SLSQP, whose OpenBLAS worker threads are
    # still awake, the solver took up to twice as long (10-joint drags: 8.3 against 4.9 ms)
    for joints, target in cases:
        t0 = time.process_time()
        result = solve_chain(joints, TIP, target)
        ours.append(time.process_time() - t0)
        ours_d.append(result.distance)
        ours_e2.append(result.moved**2)
        iterations.append(result.iterations)
    for joints, target in cases:
        t0 = time.process_time()
        if closest:
            e2, distance = slsqp_closest(joints, target)
        else:
            e2, (_, distance) = math.nan, slsqp(joints, target)
        theirs.append(time.process_time() - t0)
        theirs_d.append(distance)
        theirs_e2.append(e2)
    return {
        "ours_ms": 1e3 * float(np.median(ours)),
        "theirs_ms": 1e3 * float(np.median(theirs)),
        "ratio": float(np.median(np.array(theirs) / np.array(ours))),
        "ours_error": float(np.median(ours_d)),
        "theirs_error": float(np.median(theirs_d)),
        "ours_worst": float(np.max(ours_d)),
        "not_worse": sum(o <= t + 1e-12 for o, t in zip(ours_d, theirs_d, strict=True)),
        "not_more": sum(o <= t + 1e-9 for o, t in zip(ours_e2, theirs_e2, strict=True)),
        "count": len(ours),
        "iterations": float(np.median(iterations)),
    }


CASES = (
    ("drag", "3-joint", 60),
    ("drag", "10-joint", 40),
    ("reach", "3-joint", 30),
    ("reach", "10-joint", 15),
)


def readme_rows() -> list[dict[str, str]]:
    """The rows of the README's benchmark table (see ``tools/bench_all.py``): against SLSQP
    minimizing the distance (the issue's targets), then against SLSQP on the solver's own
    problem (no target of their own)."""
    import scipy

    peer = f"SciPy {scipy.__version__} SLSQP"
    rows = []
    for kind, name, count in CASES:
        m = measure(kind, name, count)
        ours = f"{m['ours_ms']:.2f} ms, error {m['ours_error']:.0e} (worst {m['ours_worst']:.0e})"
        rows.append(
            {
                "measurement": f"IK {name} chain, {kind} ({m['count']} targets, median)",
                "ours": ours,
                "peer": f"{m['theirs_ms']:.1f} ms, error {m['theirs_error']:.0e} ({peer})",
                "ratio": f"{m['ratio']:.1f}x faster; error not worse {m['not_worse']}/{m['count']}",
                "target": f">= 10x, error not worse; < {TARGETS[name]:g} ms",
            }
        )
    for kind, name, count in CASES:
        m = measure(kind, name, count, closest=True)
        rows.append(
            {
                "measurement": (
                    f"IK {name} chain, {kind} ({m['count']} targets, median), against SLSQP on "
                    "the solver's own problem: the closest pose that reaches"
                ),
                "ours": f"{m['ours_ms']:.2f} ms, error {m['ours_error']:.0e}",
                "peer": f"{m['theirs_ms']:.1f} ms, error {m['theirs_error']:.0e} ({peer})",
                "ratio": (
                    f"{m['ratio']:.1f}x faster; squared angles not larger {m['not_more']}/"
                    f"{m['count']}, error not worse {m['not_worse']}/{m['count']}"
                ),
                "target": "(information: the targets are the rows against the distance)",
            }
        )
    return rows


def main() -> None:
    for closest in (False, True):
        print("SLSQP on the closest reaching pose" if closest else "SLSQP on the distance")
        for kind, name, count in CASES:
            m = measure(kind, name, count, closest)
            print(
                f"{name:9s} {kind:5s}: ours {m['ours_ms']:7.2f} ms ({m['iterations']:.0f} it), "
                f"SLSQP {m['theirs_ms']:8.2f} ms, ratio {m['ratio']:6.1f}x | error ours "
                f"{m['ours_error']:.1e} (worst {m['ours_worst']:.1e}), SLSQP "
                f"{m['theirs_error']:.1e}, ours not worse {m['not_worse']}/{m['count']}"
                + (f", squared angles not larger {m['not_more']}/{m['count']}" if closest else "")
            )


if __name__ == "__main__":
    main()
