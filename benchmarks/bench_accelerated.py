"""Benchmark the DP overhead of one accelerated iteration against the same non-private one.

One DP-NAG iteration (eq. (4.1)) on the kuru2022 §5 data (100,000 × 20,
R = 20 repetitions in one batch) is timed with the private gradient oracle
(minibatch, Laplace noise through :mod:`dpopt.privacy.mechanisms`, ledger
charge of the amplified event) and with the non-private oracle (the same
minibatch sampling and data pass, no noise, no ledger).  The ratio
private/non-private is the DP overhead per iteration; target ≤ 1.3.

Both are timed alternately in one loop (blocks of ``--iterations`` iterations)
so that both see the same machine load; the reported ratio is the median over
the pairs.  Configurations: full batch (m = n) and m = 1000, each in the
float32 fast path used by the experiment and in float64.

Usage: ``python benchmarks/bench_accelerated.py [--repeats K] [--iterations T]``.
Timings depend on the machine and its load; compare ratios within one run only.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from dpopt.accelerated import NonPrivateGradientOracle, PrivateGradientOracle, algorithms, make_plan
from dpopt.datasets import kuru2022_logistic
from dpopt.experiments._blas import single_threaded_blas
from dpopt.objectives import L2, Objective
from dpopt.privacy import Ledger

TARGET = 1.3


def _block(oracle, plan, X0) -> float:
    """Seconds for ``plan.iterations`` DP-NAG iterations with ``oracle``."""
    t0 = time.perf_counter()
    algorithms.nesterov(oracle, X0, plan.steps, plan.momenta, plan.scales)
    return time.perf_counter() - t0


def measure(objective, L, mu, batch_size, precision, iterations, repeats, R=20):
    """(private s/iteration, non-private s/iteration, median ratio) over ``repeats`` pairs."""
    plan = make_plan(
        "dp-nag", epsilon=1.0, iterations=iterations, n=objective.n, batch_size=batch_size,
        d=objective.dim, sensitivity=40.0, L=L, mu=mu,
    )  # fmt: skip
    X0 = np.full((R, objective.dim), 10.0)
    common = dict(feature_bound=20.0, batch_size=batch_size, precision=precision)
    exact = NonPrivateGradientOracle(objective, rng=np.random.default_rng(0), **common)
    t_priv, t_base = [], []
    for k in range(repeats + 1):
        # A fresh ledger per block: each block is one complete ε = 1 run.
        ledger = Ledger(1.0, relation="replace_one")
        private = PrivateGradientOracle(
            objective, ledger=ledger, rng=np.random.default_rng(k), **common
        )
        base, priv = _block(exact, plan, X0), _block(private, plan, X0)
        if k:  # the first pair warms up caches
            t_base.append(base)
            t_priv.append(priv)
    ratios = np.asarray(t_priv) / np.asarray(t_base)
    return min(t_priv) / iterations, min(t_base) / iterations, float(np.median(ratios))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--iterations", type=int, default=40)
    args = parser.parse_args()

    data = kuru2022_logistic(rng=0)
    objective = Objective("logistic", data.X, data.y, L2(0.01))
    c = objective.constants("kuru2022")
    print(
        f"bench_accelerated: n={objective.n}, d={objective.dim}, R=20, DP-NAG, {platform.machine()}"
    )
    print(
        f"{'batch':>8} {'precision':>9} {'private ms/it':>14} "
        f"{'non-private ms/it':>18} {'ratio':>7}"
    )
    worst = 0.0
    with single_threaded_blas():
        for batch_size in (objective.n, 1000):
            for precision in ("float32", "float64"):
                priv, base, ratio = measure(
                    objective, c.L, c.mu, batch_size, precision, args.iterations, args.repeats
                )
                worst = max(worst, ratio)
                print(
                    f"{batch_size:>8} {precision:>9} {1e3 * priv:>14.3f} "
                    f"{1e3 * base:>18.3f} {ratio:>7.3f}"
                )
    verdict = "meets" if worst <= TARGET else "MISSES"
    print(f"worst DP overhead ratio {worst:.3f} ({verdict} the target <= {TARGET})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
