"""Accuracy against cost of DP-BLSGD's plan: planned iterations T × Poisson rate q (issue 16 §2).

The initial budgets are calibrated so that T iterations spend (ε, δ)
(:mod:`dpopt.linesearch.plan`); T and q then trade accuracy against the data
work, about 2·T·q data passes.  For each (T, q) on the grid this prints the
median over ``--seeds`` seeds of the CPU seconds per fit, the iterations run
(against the T planned), the line-search failures and the test accuracy, on
the embedded UCI Adult (train/test split, rows ‖x‖₂ ≤ 1, logistic loss,
μ = 1e-3, ε = 0.4, δ = 1e-8 by default).  The defaults of
:class:`dpopt.linesearch.LineSearchHyper` (``planned_iterations``, ``rate``)
were chosen from this table: the cheapest point within noise of the best
accuracy.

Usage: ``python benchmarks/bench_linesearch_plan.py [--epsilon E] [--seeds K]
[--iterations 50 100 ...] [--rates 0.01 0.03 ...] [--rows N]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bench_linesearch import adult_model
from dpopt.linesearch import registry


def point(model, test, epsilon, delta, iterations, rate, seeds):
    rows = []
    for seed in range(seeds):
        cpu = time.process_time()
        result = registry.fit("dp-blsgd", model, epsilon=epsilon, delta=delta, rng=seed,
                              planned_iterations=iterations, rate=rate)
        cpu = time.process_time() - cpu
        rows.append((cpu, result.nit, result.info["line_search_failures"],
                     registry.accuracy(result, *test)))
    return np.median(np.array(rows), axis=0), np.std([r[3] for r in rows])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=0.4)
    parser.add_argument("--delta", type=float, default=1e-8)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--iterations", type=int, nargs="+", default=[50, 100, 200, 400, 800])
    parser.add_argument("--rates", type=float, nargs="+", default=[0.01, 0.03, 0.1])
    parser.add_argument("--rows", type=int, default=None, help="a random subset of the training rows")
    args = parser.parse_args()
    model, test = adult_model(rows=args.rows)
    print(f"Adult {model.n}x{model.dim}, epsilon={args.epsilon}, delta={args.delta:g}, "
          f"{args.seeds} seeds, load average {os.getloadavg()[0]:.1f}")
    print(f"{'T':>5} {'q':>6} {'passes':>7} {'cpu s':>7} {'run':>6} {'fails':>6} {'accuracy':>9} {'sd':>6}")
    for iterations in args.iterations:
        for rate in args.rates:
            (cpu, nit, fails, acc), sd = point(model, test, args.epsilon, args.delta, iterations, rate,
                                               args.seeds)
            print(f"{iterations:5d} {rate:6.3f} {2 * iterations * rate:7.1f} {cpu:7.2f} {nit:6.0f} "
                  f"{fails:6.0f} {acc:9.4f} {sd:6.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
