"""Speed benchmark of rq_rotation's core conversions (issue 3).

Run from the repository root: ``python benchmarks/bench_core.py``. ``run_benchmark()`` returns
the rows (for a README table writer). 1,000,000 vectors with N(0, 1.5) components; best of
several repeats; ratios are scipy time / rq_rotation time (> 1 means rq_rotation is faster).
"""

import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rq_rotation as rq


def best_of(func, repeats=7):
    """Best wall time (seconds) of ``func()`` over ``repeats`` runs."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - t0)
    return best


def run_benchmark(n=1_000_000, repeats=7, seed=0):
    """Time the conversions; return a list of row dicts ``{name, ms, reference, ratio}``."""
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(seed)
    v = rng.normal(0.0, 1.5, (n, 3))
    q = rq.rq_to_quat(v)
    q_xyzw = np.ascontiguousarray(q[:, [1, 2, 3, 0]])
    rows = []
    t_sp_fwd = best_of(lambda: Rotation.from_rotvec(v).as_quat(), repeats)
    t_sp_inv = best_of(lambda: Rotation.from_quat(q_xyzw).as_rotvec(), repeats)
    t_fwd = best_of(lambda: rq.rq_to_quat(v), repeats)
    t_inv = best_of(lambda: rq.quat_to_rq(q), repeats)
    t_jac = best_of(lambda: rq.rq_quat_jacobian(v), repeats)
    rows.append(
        {
            "name": "scipy Rotation.from_rotvec(v).as_quat()",
            "ms": 1e3 * t_sp_fwd,
            "reference": None,
            "ratio": None,
        }
    )
    rows.append(
        {
            "name": "rq_to_quat(v)",
            "ms": 1e3 * t_fwd,
            "reference": "scipy from_rotvec",
            "ratio": t_sp_fwd / t_fwd,
        }
    )
    rows.append(
        {
            "name": "scipy Rotation.from_quat(q).as_rotvec()",
            "ms": 1e3 * t_sp_inv,
            "reference": None,
            "ratio": None,
        }
    )
    rows.append(
        {
            "name": "quat_to_rq(q)",
            "ms": 1e3 * t_inv,
            "reference": "scipy as_rotvec",
            "ratio": t_sp_inv / t_inv,
        }
    )
    rows.append(
        {
            "name": "rq_quat_jacobian(v)",
            "ms": 1e3 * t_jac,
            "reference": "rq_to_quat (time ratio jacobian / rq_to_quat)",
            "ratio": t_jac / t_fwd,
        }
    )
    try:
        import mathutils
    except ImportError:
        rows.append(
            {
                "name": "mathutils per-element loop",
                "ms": None,
                "reference": "skipped: mathutils is not importable here",
                "ratio": None,
            }
        )
    else:
        m = 20_000
        sub = v[:m].tolist()

        def loop():
            for x in sub:
                vec = mathutils.Vector(x)
                ang = vec.length
                mathutils.Quaternion(vec.normalized() if ang else (1, 0, 0), ang)

        t_mu = best_of(loop, 3) * n / m
        rows.append(
            {
                "name": f"mathutils loop (scaled from {m} to {n})",
                "ms": 1e3 * t_mu,
                "reference": "rq_to_quat (speed-up)",
                "ratio": t_mu / t_fwd,
            }
        )
    return rows


def readme_rows():
    """The rows of the README's benchmark table (see ``tools/bench_all.py``, which runs it
    inside the bpy wheel so that the mathutils loop is measured too)."""
    env = environment()
    peer = f"scipy {env['scipy']}, numpy {env['numpy']}"
    rows = {row["name"]: row for row in run_benchmark()}
    out = []
    for name, scipy_name, target in (
        ("rq_to_quat(v)", "scipy Rotation.from_rotvec(v).as_quat()", ">= 1.5x"),
        ("quat_to_rq(q)", "scipy Rotation.from_quat(q).as_rotvec()", ">= 1.5x"),
    ):
        out.append(
            {
                "measurement": f"{name}, 10^6 vectors",
                "ours": f"{rows[name]['ms']:.1f} ms",
                "peer": f"{rows[scipy_name]['ms']:.1f} ms ({peer})",
                "ratio": f"{rows[name]['ratio']:.2f}x faster",
                "target": target,
            }
        )
    jacobian = rows["rq_quat_jacobian(v)"]
    out.append(
        {
            "measurement": "rq_quat_jacobian(v), 10^6 vectors",
            "ours": f"{jacobian['ms']:.1f} ms",
            "peer": "rq_to_quat(v) above",
            "ratio": f"{jacobian['ratio']:.2f}x its time",
            "target": "<= 2x",
        }
    )
    loop = next((row for name, row in rows.items() if name.startswith("mathutils")), None)
    if loop is not None and loop["ms"] is not None:
        out.append(
            {
                "measurement": "rq_to_quat(v) vs a per-element mathutils loop",
                "ours": f"{rows['rq_to_quat(v)']['ms']:.1f} ms",
                "peer": f"{loop['ms']:.0f} ms (extrapolated from 20,000)",
                "ratio": f"{loop['ratio']:.0f}x faster",
                "target": "for scale",
            }
        )
    return out


def environment():
    import scipy

    return {
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": platform.processor() or "unknown",
        "system": platform.platform(),
    }


def main():
    env = environment()
    print("rq_rotation core benchmark: 1,000,000 vectors, N(0, 1.5) per component, best of 7")
    for key, val in env.items():
        print(f"  {key}: {val}")
    for row in run_benchmark():
        ms = "skipped" if row["ms"] is None else f"{row['ms']:8.2f} ms"
        ratio = "" if row["ratio"] is None else f"  ratio {row['ratio']:.2f}"
        ref = f"  ({row['reference']})" if row["reference"] else ""
        print(f"{row['name']:<46} {ms}{ratio}{ref}")


if __name__ == "__main__":
    main()
