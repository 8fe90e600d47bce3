"""DP-SGD's accuracy over its step count, step size and regularization: the sweep behind its defaults.

For each data size of :mod:`bench_defaults` (breast cancer, Adult 1k/5k, full
Adult) and each ε, fits DP-SGD (Abadi et al. 2016) through
:class:`dpopt.estimators.DPLogisticRegression` at every point of a grid of
expected epochs E (steps T = E/q), sampling rate q, learning rate η and
regularization μ, ``--seeds`` seeds each, and prints the mean test accuracy of
each point and the best point per cell.

Usage: ``python benchmarks/bench_dpsgd_defaults.py [--sizes ...] [--epsilons ...]
[--epochs ...] [--lrs ...] [--regs ...] [--rates ...] [--seeds K] [--csv PATH] [--quick]``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import warnings

import numpy as np

from bench_defaults import SIZES, datasets, write_csv
from dpopt.estimators import DPLogisticRegression


def accuracy(train, test, eps, delta, seed, **config) -> float:
    reg = config.pop("regularization", None)
    est = DPLogisticRegression(epsilon=eps, delta=delta, method="dp-sgd", data_norm=1.0, regularization=reg,
                               random_state=seed, classes=[-1.0, 1.0],
                               method_params={k: v for k, v in config.items() if v is not None})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*train)
    return float(np.mean(est.predict(test[0]) == test[1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=SIZES)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 0.5, 1.0, 2.0, 5.0])
    parser.add_argument("--epochs", nargs="+", type=float, default=[10.0, 40.0, 160.0],
                        help="expected passes over the data: steps T = epochs/rate")
    parser.add_argument("--lrs", nargs="+", type=float, default=[4.0, 16.0, 64.0])
    parser.add_argument("--regs", nargs="+", type=float, default=[1e-5, 1e-4, 1e-3])
    parser.add_argument("--rates", nargs="+", type=float, default=[0.05, 0.2])
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--quick", action="store_true", help="one size, two ε, a 2x2x2 grid, 2 seeds")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.epsilons, args.seeds = ["small"], [0.5, 5.0], 2
        args.epochs, args.lrs, args.regs = args.epochs[:2], args.lrs[:2], args.regs[:2]
    rows = []
    for name, (train, test) in datasets(args.sizes).items():
        for eps in args.epsilons:
            best = None
            for epochs, lr, reg, rate in itertools.product(args.epochs, args.lrs, args.regs, args.rates):
                steps = max(1, round(epochs / rate))
                accs = [accuracy(train, test, eps, args.delta, seed, steps=steps, lr=lr, regularization=reg,
                                 rate=rate) for seed in range(args.seeds)]
                row = {"data": name, "n": len(train[1]), "epsilon": eps, "steps": steps, "lr": lr,
                       "regularization": reg, "rate": rate, "accuracy_mean": float(np.mean(accs)),
                       "accuracy_std": float(np.std(accs))}
                rows.append(row)
                if best is None or row["accuracy_mean"] > best["accuracy_mean"]:
                    best = row
                print(f"{name:9s} eps={eps:<4g} T={steps:<5d} q={rate:<5g} lr={lr:<5g} mu={reg:<7g} "
                      f"acc={row['accuracy_mean']:.3f}±{row['accuracy_std']:.3f}", flush=True)
            print(f"BEST {name:9s} eps={eps:<4g} T={best['steps']} q={best['rate']:g} lr={best['lr']:g} "
                  f"mu={best['regularization']:g} acc={best['accuracy_mean']:.3f}", flush=True)
    write_csv(args.csv, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
