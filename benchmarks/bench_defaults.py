"""Accuracy of dpopt's private logistic regressions against IBM diffprivlib and the majority class.

The table behind ``method="auto"`` (issue: defaults that never silently lose).
For each data size and ε it fits every candidate method through
:class:`dpopt.estimators.DPLogisticRegression` (``data_norm=1``: rows are
scaled to ‖x‖₂ ≤ 1 by the loaders) and diffprivlib's ``LogisticRegression`` at
the same ε and ``data_norm``, over ``--seeds`` seeds (``--small-seeds`` on the
three small sets, whose test splits of 139-231 rows need more), and reports mean
± std test accuracy.  ``auto`` is ``method="auto"`` at δ = 0 (pure ε-DP, as
diffprivlib), ``auto-delta`` the same at δ = ``--method-delta`` (1e-5), which
the (ε, δ) methods use too; ``METHOD@MU`` fits METHOD with regularization MU and
``objpert~K`` objective perturbation with the rule of
:func:`dpopt.estimators._auto.objpert_regularization` at the constant K instead
of its own.
The closing table marks a cell ``<`` where auto's mean is more than one
standard error (std/√seeds, of the difference) below diffprivlib's or below
the majority class.

Data (all offline):

* ``small``: scikit-learn's breast-cancer data (569 rows, 30 numeric columns,
  declared [min, max] of the file as public bounds), 70/30 split;
* ``pima``, ``saheart``: two small medical data sets with few columns from the
  KEEL package that ``make test`` installs (Pima Indians diabetes, 768 × 8;
  South African heart disease, 462 × 9 with one categorical column), 70/30
  split;
* ``adult-1k``, ``adult-5k``: random subsamples of the embedded UCI Adult
  training split, scored on the whole Adult test split;
* ``adult``: the whole training split (32,561 rows).

Usage: ``python benchmarks/bench_defaults.py [--sizes small adult-1k ...]
[--epsilons 0.1 0.5 1 2 5] [--methods ...] [--seeds K] [--csv PATH] [--quick]``
(``--quick``: breast cancer and Adult 1k at ε ∈ {0.5, 5}, 2 seeds, about a minute).
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings

import numpy as np

from dpopt.cli.demo import load_demo_data
from dpopt.datasets import load_sklearn
from dpopt.datasets.keel import load_keel
from dpopt.estimators import DPLogisticRegression, _auto
from dpopt.estimators._dispatch import needs_delta

SIZES = ("small", "pima", "saheart", "adult-1k", "adult-5k", "adult")
SMALL = ("small", "pima", "saheart")
EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
METHODS = ("auto", "auto-delta")
#: the candidates the table was chosen from (``--methods`` takes any of them)
CANDIDATES = ("dp-nag-opt", "dp-gd", "objpert", "outpert", "dp-sgd", "dp-blsgd")


def datasets(sizes, seed: int = 0):
    """name -> ((X_train, y_train), (X_test, y_test)), labels ±1, rows of ‖x‖₂ ≤ 1."""
    out = {}
    for name in SMALL:
        if name in sizes:
            data = load_sklearn("breast_cancer") if name == "small" else load_keel(name)
            order = np.random.default_rng(seed).permutation(len(data.y))
            cut = int(0.7 * len(order))
            tr, te = order[:cut], order[cut:]
            out[name] = ((data.X[tr], data.y[tr]), (data.X[te], data.y[te]))
    adult_sizes = {"adult-1k": 1000, "adult-5k": 5000, "adult": None}
    if any(s in sizes for s in adult_sizes):
        _, (Xtr, ytr), test = load_demo_data()
        for name, n in adult_sizes.items():
            if name not in sizes:
                continue
            if n is None:
                out[name] = ((Xtr, ytr), test)
            else:
                rows = np.random.default_rng(seed + n).choice(len(ytr), size=n, replace=False)
                out[name] = ((Xtr[rows], ytr[rows]), test)
    return out


def fit_dpopt(method, eps, delta, seed, train, regularization=None):
    est = DPLogisticRegression(
        epsilon=eps,
        delta=delta,
        method=method,
        data_norm=1.0,
        regularization=regularization,
        random_state=seed,
        classes=[-1.0, 1.0],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*train)
    return est


class _Linear:
    def __init__(self, coef, intercept):
        self.coef, self.intercept = coef, intercept

    def predict(self, X):
        return np.where(X @ self.coef + self.intercept >= 0, 1, -1)


def fit_diffprivlib(eps, seed, train):
    """diffprivlib's LogisticRegression with its defaults (C=1, intercept) at ε and data_norm=1.

    diffprivlib 0.6.6's package ``__init__`` fails with current scikit-learn, so
    its logistic-regression path is called as ``LogisticRegression.fit`` would
    (see :mod:`dpopt.linesearch.baselines.external`).
    """
    from dpopt.linesearch.baselines.external import _logistic_module

    module, _ = _logistic_module()
    X, y = train
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coefs, _, _ = module._logistic_regression_path(
            X, y, epsilon=eps, data_norm=1.0, pos_class=1.0, Cs=[1.0], fit_intercept=True,
            max_iter=100, tol=1e-4, random_state=np.random.RandomState(seed), check_input=False,
        )
    w = np.asarray(coefs[0], dtype=float)
    return _Linear(w[:-1], w[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=SIZES)
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS),
                        help="method names; METHOD@MU fits METHOD with regularization MU (a sweep)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--small-seeds", type=int, default=40, help=f"seeds on the small sets ({', '.join(SMALL)})")
    parser.add_argument("--method-delta", type=float, default=1e-5, help="δ of auto-delta and the (ε, δ) methods")
    parser.add_argument("--csv", default=None)
    parser.add_argument("--quick", action="store_true", help="breast cancer and Adult 1k, ε 0.5 and 5, 2 seeds")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.epsilons, args.seeds, args.small_seeds = ["small", "adult-1k"], [0.5, 5.0], 2, 2

    rows = []
    for name, (train, (Xte, yte)) in datasets(args.sizes).items():
        majority = max(np.mean(yte == 1), np.mean(yte == -1))
        n = len(train[1])
        seeds = args.small_seeds if name in SMALL else args.seeds
        for eps in args.epsilons:
            cells = {"majority": [majority]}
            seconds = {}
            for method in [*args.methods, "diffprivlib"]:
                accs, start = [], time.process_time()
                for seed in range(seeds):
                    if method == "diffprivlib":
                        est = fit_diffprivlib(eps, seed, train)
                    elif method.startswith("objpert~"):  # "objpert~0.08": the rule at that constant
                        rule = _auto.objpert_regularization(n, train[0].shape[1] + 1, eps, rate=float(method[8:]))
                        est = fit_dpopt("objpert", eps, 0.0, seed, train, rule)
                    else:
                        name_, _, mu = method.partition("@")  # "objpert@3e-5": that regularization
                        approx = name_ == "auto-delta" or needs_delta(name_)
                        est = fit_dpopt(name_.removesuffix("-delta"), eps, args.method_delta if approx else 0.0,
                                        seed, train, float(mu) if mu else None)
                    accs.append(float(np.mean(est.predict(Xte) == yte)))
                cells[method] = accs
                seconds[method] = (time.process_time() - start) / seeds
            for method, accs in cells.items():
                rows.append({
                    "data": name, "n": n, "seeds": seeds, "epsilon": eps, "method": method,
                    "accuracy_mean": float(np.mean(accs)), "accuracy_std": float(np.std(accs)),
                    "cpu_seconds": seconds.get(method, 0.0),
                })
            line = "  ".join(f"{m}={np.mean(a):.3f}±{np.std(a):.3f}" for m, a in cells.items())
            print(f"{name:9s} n={n:6d} eps={eps:<4g} {line}", flush=True)
    write_csv(args.csv, rows)
    print(summary(rows, [m for m in args.methods if m.startswith(("auto", "objpert~"))]))
    return 0


def summary(rows, autos) -> str:
    """Markdown table: majority, diffprivlib and each auto (mean ± std) per data set and ε; ``<`` marks
    an auto more than one standard error below diffprivlib or below the majority class."""
    cell = {(r["data"], r["epsilon"], r["method"]): (r["accuracy_mean"], r["accuracy_std"]) for r in rows}
    head = ["data", "n", "ε", "majority", "diffprivlib", *autos]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r["method"] != "majority":
            continue
        key = (r["data"], r["epsilon"])
        dpl_mean, dpl_std = cell[(*key, "diffprivlib")]
        out = [r["data"], str(r["n"]), f"{r['epsilon']:g}", f"{r['accuracy_mean']:.3f}",
               f"{dpl_mean:.3f} ± {dpl_std:.3f}"]
        for method in autos:
            mean, std = cell[(*key, method)]
            error = np.hypot(std, dpl_std) / np.sqrt(r["seeds"])
            low = mean < dpl_mean - error or mean < r["accuracy_mean"] - 1e-9
            out.append(f"{mean:.3f} ± {std:.3f}{' <' if low else ''}")
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)


def write_csv(path, rows) -> None:
    """``rows`` (dicts with the same keys) as CSV at ``path``; nothing when ``path`` is None."""
    if path:
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    sys.exit(main())
