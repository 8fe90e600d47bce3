"""Benchmark the per-example gradient paths of dpopt.objectives against two plain data passes.

For each data shape (100,000 × 20 and 50,000 × 100, float64) and parameter
shape ((d,) and (20, d)) the baseline is the cost of two plain passes over the
same data, ``z = X @ w`` then ``X.T @ r`` (for a batch: ``W @ X.T`` then
``R @ X``), measured in the same run.  Reported as ratios (target ≤ 1.5× for
the paths that need no per-example tensor):

* ``grad``            mean gradient
* ``clipped_sum``     sum of per-example gradients clipped to L2 norm C (chen2020 eq. (6)),
                      row norms precomputed once per data set (as ``Objective`` caches them)
* ``grad_norms``      per-example gradient norms |s_i|·‖x_i‖ (one pass X w)
* ``coefs``           per-example gradient coefficients s_i (∇f_i = s_i x_i; one pass)
* ``dense_grads``     the dense (n, d) / (R, n, d) per-example gradient tensor (memory-bound:
                      it writes R·n·d numbers, so it is reported but not held to the target)

Every path runs twice: on the float64 data, and on their float32 copy (what
``Objective(..., precision="float32")`` reads; the baseline stays the float64
passes).  In float64 the logistic loss's ``exp`` costs more per entry than
the two passes do at d = 20 (2·20 multiply-adds), so only the float32 path,
whose ``exp`` is vectorized, can stay within 1.5× there.

Usage: ``python benchmarks/bench_objectives.py [--repeats K] [--losses logistic,hinge,...]
[--precisions float64,float32] [--no-dense]``.
Timings depend on the machine and its load; compare ratios within one run only.  On a
shared machine, ``OPENBLAS_NUM_THREADS=1`` avoids BLAS threads waiting on busy cores.
"""

from __future__ import annotations

import argparse
import platform
import time
from functools import partial

import numpy as np

from dpopt.objectives import bounds, get_loss, to_precision


def _once(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def paired_ratio(fn, base, repeats: int) -> tuple[float, float, float]:
    """Time ``fn`` and ``base`` alternately; return (min fn s, min base s, median of ratios).

    Alternating the two in one loop makes the ratio robust to other load on a
    shared machine: both see the same conditions within each pair.
    """
    fn()
    base()
    t_fn, t_base = [], []
    for _ in range(repeats):
        t_base.append(_once(base))
        t_fn.append(_once(fn))
    ratios = np.asarray(t_fn) / np.asarray(t_base)
    return min(t_fn), min(t_base), float(np.median(ratios))


def two_passes(X, w):
    """The baseline: ``z = X w`` then ``Xᵀ z`` (batched: ``W Xᵀ`` then ``Z X``)."""
    z = X @ w if w.ndim == 1 else w @ X.T
    return X.T @ z if w.ndim == 1 else z @ X


def paths(loss, X, y, w, rn, clip: float, dense: bool) -> dict:
    """The timed calls for one loss, data set and parameter shape."""
    out = {
        "grad": partial(loss.grad, w, X, y),
        "clipped_sum": partial(loss.clipped_grad_sum, w, X, y, clip, row_norms=rn),
        "grad_norms": partial(loss.per_example_grad_norms, w, X, y, row_norms=rn),
        "coefs": partial(loss.per_example_grad_coefs, w, X, y),
    }
    if dense:
        out["dense_grads"] = partial(loss.per_example_grads, w, X, y)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--losses", default="logistic,huberized_hinge,hinge,squared")
    parser.add_argument("--precisions", default="float64,float32")
    parser.add_argument("--no-dense", action="store_true", help="skip the dense tensor timings")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}, python {platform.python_version()}, {platform.machine()}")
    print(
        f"{args.repeats} alternating runs of each path and of the two plain passes; "
        "ms = fastest run; ratio = fastest(path)/fastest(two passes); "
        "paired = median over the runs of time(path)/time(two passes)\n"
    )
    cols = f"{'data':>12} {'params':>8} {'precision':>9} {'loss':>16} {'path':>12}"
    header = f"{cols} {'ms':>9} {'ratio':>7} {'paired':>7}"
    print(header)
    print("-" * len(header))
    for n, d in [(100_000, 20), (50_000, 100)]:
        X = rng.random((n, d)) / np.sqrt(d)
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        data = {}  # the rows each precision reads, with their norms (once per data set, as Objective caches them)
        for precision in args.precisions.split(","):
            Xp = to_precision(X, precision)
            data[precision] = (Xp, y.astype(precision), bounds.row_norms(Xp))
        for R in (None, 20):
            w = rng.normal(size=(d,) if R is None else (R, d))
            plain = partial(two_passes, X, w)
            label = f"{n}x{d}"
            pshape = "(d,)" if R is None else f"({R},d)"
            _, base, _ = paired_ratio(plain, plain, args.repeats)
            row = f"{label:>12} {pshape:>8} {'float64':>9} {'-':>16} {'two passes':>12}"
            print(f"{row} {base * 1e3:9.2f} {1.0:7.2f} {1.0:7.2f}")
            for precision, (Xp, yp, rnp) in data.items():
                for name in args.losses.split(","):
                    calls = paths(get_loss(name), Xp, yp, w, rnp, 0.5, not args.no_dense)
                    for path, fn in calls.items():
                        reps = args.repeats if path != "dense_grads" else max(3, args.repeats // 5)
                        t, tb, paired = paired_ratio(fn, plain, reps)
                        row = f"{label:>12} {pshape:>8} {precision:>9} {name:>16} {path:>12}"
                        print(f"{row} {t * 1e3:9.2f} {t / tb:7.2f} {paired:7.2f}")
            print()


if __name__ == "__main__":
    main()
