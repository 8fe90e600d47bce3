"""Benchmark the GP pieces of dpopt.bayesopt against direct computations, as ratios in one run.

* ``posterior``  :meth:`FiniteGP.posterior` (one Cholesky of K_AA + σ²I, two triangular solves)
                 against ``numpy.linalg.solve`` of the same system for the mean and the variances;
* ``gamma_T``    :func:`max_information_gain` (rank-one updates of the posterior covariance)
                 against the same greedy rule recomputing every posterior variance from scratch
                 by :meth:`FiniteGP.posterior` at each step;
* ``optimize``   one whole :func:`optimize` (Algorithm 1: GP-UCB, γ_T, both releases) on a cheap
                 objective, in seconds.

Usage: ``python benchmarks/bench_bayesopt.py [--repeats K] [--sizes 256,1024] [--T 30]``.
Timings depend on the machine and its load; compare ratios within one run only.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpopt.bayesopt import CandidateSet, FiniteGP, max_information_gain, optimize


def _best(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _dense_posterior(gp: FiniteGP, index, values):
    A = gp.K[np.ix_(index, index)] + (gp.noise + gp.jitter) * np.eye(len(index))
    k = gp.K[index]
    sol = np.linalg.solve(A, np.column_stack([values, k]))
    return k.T @ sol[:, 0], 1.0 - np.einsum("tn,tn->n", k, sol[:, 1:])


def _naive_greedy(gp: FiniteGP, T: int) -> float:
    picks, gain = [], 0.0
    for _ in range(T):
        _, var = gp.posterior(np.array(picks, dtype=np.int64), np.zeros(len(picks)))
        i = int(np.argmax(var))
        gain += 0.5 * math.log1p(var[i] / gp.noise)
        picks.append(i)
    return gain


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="256,1024")
    parser.add_argument("--T", type=int, default=30)
    args = parser.parse_args(argv)
    print(f"{'N':>6} {'T':>4} {'posterior':>11} {'dense':>9} {'ratio':>6} {'gamma_T':>9} {'naive':>9} "
          f"{'ratio':>6} {'optimize s':>11}")
    for n in (int(s) for s in args.sizes.split(",")):
        cs = CandidateSet.from_space({"a": (1e-3, 1e3, "log"), "b": (0.0, 1.0)}, n_candidates=n, seed=0)
        gp = FiniteGP(cs.unit, noise=0.05**2)
        rng = np.random.default_rng(0)
        index = rng.integers(n, size=args.T)
        values = rng.normal(size=args.T)
        post = _best(lambda gp=gp, index=index, values=values: gp.posterior(index, values), args.repeats)
        dense = _best(lambda gp=gp, index=index, values=values: _dense_posterior(gp, index, values), args.repeats)
        fast = _best(lambda gp=gp: max_information_gain(gp.K, args.T, gp.noise), args.repeats)
        naive = _best(lambda gp=gp: _naive_greedy(gp, args.T), max(1, args.repeats // 2))
        table = np.sin(3 * cs.unit[:, 0]) + cs.unit[:, 1]
        whole = _best(lambda cs=cs, table=table: optimize(lambda i: table[i], cs, epsilon=1.0, n_iter=args.T, rng=0),
                      max(1, args.repeats // 2))
        print(f"{n:>6} {args.T:>4} {post:>11.2e} {dense:>9.2e} {post / dense:>6.2f} {fast:>9.2e} {naive:>9.2e} "
              f"{fast / naive:>6.2f} {whole:>11.3f}")


if __name__ == "__main__":
    main()
