"""Benchmark: RDP accounting of 1e5 Poisson-subsampled Gaussian steps (DP-SGD).

Composes ``steps`` steps of the sampled Gaussian mechanism (rate q, noise
multiplier z) and converts to (ε, δ) with

* dpopt's :class:`~dpopt.privacy.rdp.RDPAccountant` (cold: curve cache
  cleared before every repeat; warm: curve already cached),
* Google's dp-accounting ``RdpAccountant``,
* Opacus' RDP analysis (``compute_rdp`` + ``get_privacy_spent``), if importable,

all on the same order grids: each library's default grid, and the integer
orders of dpopt's grid (where all three evaluate the same binomial formula).
Every call is timed with ``time.perf_counter`` over several repeats in the
same run.  Prints ε for each and the time ratios dpopt / other.  On grids with
fractional orders near 1, dp-accounting 0.6.0 over-estimates the RDP (its
fractional series is cut after 1000 terms), so its ε is slightly larger.

Run:  python benchmarks/bench_accountant.py [--steps N] [--rate q] [--noise z] [--delta d]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import warnings

import numpy as np

from dpopt.privacy import events as ev
from dpopt.privacy import rdp

logging.getLogger("absl").setLevel(logging.ERROR)


def best_time(fn, repeats: int) -> tuple[float, float]:
    """(median seconds, result of the last call) over ``repeats`` calls."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def dpopt_runner(rate, noise, steps, delta, orders, cold):
    step = ev.Subsampled(ev.Gaussian(sigma=noise, sensitivity=1.0), rate=rate, scheme="poisson")

    def run():
        if cold:
            rdp._cached_curve.cache_clear()
        acc = rdp.RDPAccountant(orders).compose(ev.SelfComposed(step, steps))
        return acc.get_epsilon(delta)

    return run


def dp_accounting_runner(rate, noise, steps, delta, orders):
    import dp_accounting as dpa

    event = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(noise)), steps
    )

    def run():
        acc = dpa.rdp.RdpAccountant(None if orders is None else list(orders))
        acc.compose(event)
        return acc.get_epsilon(delta)

    return run


def opacus_runner(rate, noise, steps, delta, orders):
    try:
        from opacus.accountants import RDPAccountant as OpacusRDP
        from opacus.accountants.analysis import rdp as opacus_rdp
    except ImportError:
        return None
    alphas = list(OpacusRDP.DEFAULT_ALPHAS) if orders is None else [float(a) for a in orders]

    def run():
        curve = opacus_rdp.compute_rdp(q=rate, noise_multiplier=noise, steps=steps, orders=alphas)
        return opacus_rdp.get_privacy_spent(orders=alphas, rdp=curve, delta=delta)[0]

    return run


def order_grids() -> dict[str, np.ndarray | None]:
    """The order grids to compare on: each library's default, and the common integer grid."""
    grids: dict[str, np.ndarray | None] = {"dpopt default": rdp.DEFAULT_ORDERS}
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    grids["dp-accounting default"] = np.array(DEFAULT_RDP_ORDERS, dtype=float)
    try:
        from opacus.accountants import RDPAccountant as OpacusRDP

        grids["opacus default"] = np.array(OpacusRDP.DEFAULT_ALPHAS, dtype=float)
    except ImportError:
        pass
    ints = rdp.DEFAULT_ORDERS[rdp.DEFAULT_ORDERS == np.round(rdp.DEFAULT_ORDERS)]
    grids[f"common {len(ints)} integer orders"] = ints
    return grids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=0.01)
    parser.add_argument("--noise", type=float, default=1.1)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    q, z, steps, delta, reps = args.rate, args.noise, args.steps, args.delta, args.repeats
    print(
        f"{steps} Poisson-subsampled Gaussian steps, q={q}, z={z}, delta={delta}, "
        f"median of {reps} repeats"
    )
    if opacus_runner(q, z, steps, delta, None) is None:
        print("opacus: not importable (needs torch); skipped")

    for label, orders in order_grids().items():
        print(f"\n== {label} ({len(orders)} orders) ==")
        runners = {
            "dpopt (cold cache)": dpopt_runner(q, z, steps, delta, orders, cold=True),
            "dpopt (warm cache)": dpopt_runner(q, z, steps, delta, orders, cold=False),
            "dp-accounting 0.6.0": dp_accounting_runner(q, z, steps, delta, orders),
            "opacus": opacus_runner(q, z, steps, delta, orders),
        }
        results = {}
        for name, run in runners.items():
            if run is None:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                seconds, eps = best_time(run, reps)
            results[name] = (seconds, eps)
            print(f"{name:>22}: epsilon = {eps:.10f}   time = {seconds * 1e3:9.2f} ms")
        mine_t, mine_eps = results["dpopt (cold cache)"]
        for name in ("dp-accounting 0.6.0", "opacus"):
            if name in results:
                seconds, eps = results[name]
                print(
                    f"  dpopt(cold)/{name} time ratio = {mine_t / seconds:.3f};"
                    f"  relative epsilon difference = {abs(mine_eps - eps) / eps:.2e}"
                )

    rdp._cached_curve.cache_clear()
    step = ev.Subsampled(ev.Gaussian(sigma=z), rate=q, scheme="poisson")
    start = time.perf_counter()
    acc = rdp.RDPAccountant()
    for _ in range(10_000):
        acc.compose(step)
    seconds = time.perf_counter() - start
    print(
        f"\ndpopt: 10^4 separate compose(step) calls (ledger style): {seconds * 1e3:.1f} ms "
        f"({seconds / 1e4 * 1e6:.1f} us per call)"
    )


if __name__ == "__main__":
    main()
