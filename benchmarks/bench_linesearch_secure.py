"""What ``secure_noise=True`` costs DP-BLSGD / DP-BLGD / DP-BLSGD-AC (issue 17): CPU time and noise.

On the embedded UCI Adult (rows ‖x‖₂ ≤ 1, logistic loss, μ = 1e-3, ε = 0.4,
δ = 1e-8 by default, the family's default plan), for each method and
line-search noise, float against secure, the median over ``--seeds`` seeds of:
CPU seconds per iteration, the calibrated ε_iter and gradient noise
multiplier σ/C_grad = 1/√(2ρ_grad), the line-search failures and the test
accuracy.  A secure run is planned against the discrete events it charges
(the Poisson-subsampled discrete Gaussian is accounted as the continuous
Gaussian that covers it, ``DiscreteGaussian.dominating_gaussian``).
``fit at float σ`` reads any remaining accounting cost: how many iterations
(of the planned T) the secure accounting affords at the float run's budgets.

Usage: ``python benchmarks/bench_linesearch_secure.py [--epsilon E] [--seeds K]
[--methods dp-blsgd ...] [--noises laplace gaussian] [--rows N]``.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from bench_linesearch import adult_model
from dpopt.linesearch import registry
from dpopt.linesearch.plan import PLAN_ORDERS, RESERVE
from dpopt.oracles import step_event
from dpopt.privacy.rdp import rdp_budget_per_order, rdp_curve


def affordable(info, model, epsilon, delta, rate) -> float:
    """Iterations (plus the reserve) the secure events afford at a float run's initial budgets."""
    event = step_event(info["rho_grad_initial"], info["budget_bt_initial"], c_grad=info["c_grad_initial"],
                       c_obj=info["c_obj"], noise=info["noise"], rate=rate, dim=model.dim, secure_noise=True)
    room = rdp_budget_per_order(PLAN_ORDERS, epsilon, delta)
    return float(np.max(room / rdp_curve(event, PLAN_ORDERS))) / (1.0 + RESERVE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=0.4)
    parser.add_argument("--delta", type=float, default=1e-8)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=["dp-blsgd", "dp-blgd", "dp-blsgd-ac"])
    parser.add_argument("--noises", nargs="+", default=["laplace", "gaussian"])
    parser.add_argument("--rows", type=int, default=None, help="a random subset of the training rows")
    args = parser.parse_args()
    model, test = adult_model(rows=args.rows)
    print(f"Adult {model.n}x{model.dim}, epsilon={args.epsilon}, delta={args.delta:g}, "
          f"{args.seeds} seeds, load average {os.getloadavg()[0]:.1f}")
    print(f"{'method':>12} {'noise':>9} {'secure':>6} {'ms/iter':>8} {'eps_iter':>9} {'sigma/C':>8} "
          f"{'fails':>6} {'accuracy':>9} {'fit at float sigma':>19}")
    for method in args.methods:
        for noise in args.noises:
            for secure in (False, True):
                rows, info = [], None
                for seed in range(args.seeds):
                    cpu = time.process_time()
                    res = registry.fit(method, model, epsilon=args.epsilon, delta=args.delta, rng=seed,
                                       noise=noise, secure_noise=secure)
                    cpu = time.process_time() - cpu
                    info = res.info
                    rows.append((1e3 * cpu / max(res.nit, 1), info["eps_iter"],
                                 1.0 / math.sqrt(2.0 * info["rho_grad_initial"]),
                                 info["line_search_failures"], registry.accuracy(res, *test)))
                ms, eps_iter, sigma, fails, acc = np.median(np.array(rows), axis=0)
                rate = 1.0 if method == "dp-blgd" else info["rate"]
                extra = "" if secure else (f"{affordable(info, model, args.epsilon, args.delta, rate):8.0f}"
                                           f" of {info['planned_iterations']}")
                print(f"{method:>12} {noise:>9} {secure!s:>6} {ms:8.2f} {eps_iter:9.5f} {sigma:8.2f} "
                      f"{fails:6.0f} {acc:9.4f} {extra:>19}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
