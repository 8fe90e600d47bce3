"""Timings of the piecewise family (han2014) against the targets of issue 7.

Targets: 1000 runs of each mechanism (5000 MCMC steps) at one grid point in
under 30 s; the whole §5 experiment in under 10 minutes.  Run from the
repository root:

    python benchmarks/bench_piecewise.py               # mechanisms at two grid points
    python benchmarks/bench_piecewise.py --experiment  # also the full experiment (minutes)

Timings depend on the machine's load; the numbers are wall-clock seconds of one
run each, with one BLAS thread (as the experiment runs: the (R, d) × (d, m)
products are small and a multi-threaded BLAS only contends on a busy box).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from dpopt.experiments import han2014
from dpopt.experiments._blas import single_threaded_blas
from dpopt.piecewise import METHODS, EpigraphLP, PiecewiseAffineProblem, minimize

TARGET_POINT_S = 30.0
TARGET_EXPERIMENT_S = 600.0


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def bench_point(d: int, m: int, c: float, runs: int, steps: int) -> list[tuple[str, float]]:
    problem = PiecewiseAffineProblem.gaussian(m, d, c=c, b_max=1.0, rng=0)
    rows = []
    for method in METHODS:
        options = {"steps": steps} if method == "exponential" else {}
        _, seconds = timed(
            lambda method=method, options=options: minimize(
                problem, 0.1, method=method, repetitions=runs, rng=1, **options
            )
        )
        rows.append((method, seconds))
    return rows


def bench_lp(d: int, m: int, count: int = 200) -> float:
    problem = PiecewiseAffineProblem.gaussian(m, d, c=1.0, b_max=1.0, rng=0)
    lp = EpigraphLP(problem.A, problem.polytope)
    B = problem.b + np.random.default_rng(0).normal(size=(count, m))
    _, seconds = timed(lambda: lp.solve(B))
    return seconds / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--experiment", action="store_true", help="also time the full experiment")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f} (shared)")
    with single_threaded_blas():
        for d, m, c in ((10, 20, 1.0), (10, 200, 1.0)):
            rows = bench_point(d, m, c, args.runs, args.steps)
            total = sum(s for _, s in rows)
            print(
                f"\ngrid point d={d} m={m} c={c:g}: {args.runs} runs each, {args.steps} MCMC steps"
            )
            for method, seconds in rows:
                print(f"  {method:18s} {seconds:7.2f} s")
            slowest = max(s for _, s in rows)
            verdict = "OK" if slowest < TARGET_POINT_S else "SLOW"
            print(f"  {'all four':18s} {total:7.2f} s")
            print(f"  slowest mechanism {slowest:.2f} s (target < {TARGET_POINT_S:g} s: {verdict})")
        for m in (20, 200):
            print(f"\nepigraph LP (HiGHS), d=10 m={m}: {1e3 * bench_lp(10, m):.2f} ms per solve")
        _, quick = timed(lambda: han2014.run(quick=True))
        print(f"\nexperiment --quick: {quick:.1f} s")
    if args.experiment:
        with tempfile.TemporaryDirectory() as out:
            _, full = timed(lambda: han2014.run(out=out))
        verdict = "OK" if full < TARGET_EXPERIMENT_S else "SLOW"
        print(f"full experiment: {full:.1f} s (target < {TARGET_EXPERIMENT_S:g} s: {verdict})")


if __name__ == "__main__":
    main()
