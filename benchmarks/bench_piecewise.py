"""Timings of the piecewise family (han2014) against the targets of issue 7.

Targets: 1000 runs of each mechanism (5000 MCMC steps) at one grid point in
under 30 s; the whole §5 experiment in under 10 minutes.  Run from the
repository root:

    python benchmarks/bench_piecewise.py               # mechanisms at two grid points
    python benchmarks/bench_piecewise.py --experiment  # also the full experiment (minutes)
    python benchmarks/bench_piecewise.py --secure      # only: secure_noise=True against float noise

``--secure`` measures the accuracy cost and the time of ``secure_noise=True`` (exact discrete
Laplace per coordinate for the L1 sensitivity instead of Thm 9's vector Laplace; exact
exponential-mechanism selections) on the §5 experiment's instance (d = 10, ε = 0.1, b_max = 1,
seed 0): mean f over ``--runs`` runs with its standard error, and the excess over f_opt.

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
from dpopt.piecewise import METHODS, EpigraphLP, PiecewiseAffineProblem, minimize, solve
from dpopt.piecewise.mechanisms import SECURE_METHODS

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


def bench_secure(runs: int) -> None:
    config = han2014.FULL
    A, b = han2014._instance(config)
    print(f"\nsecure_noise=True vs float noise, han2014 §5 instance (d={config.d}, eps={config.epsilon:g}), "
          f"{runs} runs: mean f (s.e.), excess over f_opt, seconds")
    print(f"  {'method':16s} {'c':>4s} {'m':>4s} {'f_opt':>8s} {'float':>17s} {'secure':>17s} "
          f"{'excess ratio':>12s} {'t float':>8s} {'t secure':>8s}")
    for c, m in ((0.2, 20), (1.0, 20), (5.0, 20), (1.0, 5), (1.0, 100)):
        problem = han2014._problem(A, b, config, c, m)
        optimum = float(solve(problem).fun)
        for method in SECURE_METHODS:
            cells = []
            for secure_noise in (False, True):
                result, seconds = timed(lambda p=problem, method=method, s=secure_noise: minimize(
                    p, config.epsilon, method=method, repetitions=runs, rng=1, secure_noise=s))
                f = np.asarray(result.fun)
                cells.append((f.mean(), f.std() / np.sqrt(runs), seconds))
            ratio = (cells[1][0] - optimum) / (cells[0][0] - optimum)
            print(f"  {method:16s} {c:>4g} {m:>4d} {optimum:>8.3f} "
                  + " ".join(f"{mean:>9.3f} ({se:.3f})" for mean, se, _ in cells)
                  + f" {ratio:>12.3f} {cells[0][2]:>8.2f} {cells[1][2]:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--experiment", action="store_true", help="also time the full experiment")
    parser.add_argument("--secure", action="store_true", help="only compare secure_noise=True with float noise")
    args = parser.parse_args()
    if args.secure:
        with single_threaded_blas():
            bench_secure(args.runs)
        return
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
