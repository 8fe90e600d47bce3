"""Benchmark the ledger's budget check: charges per second against copy-compose-convert.

Before every release a :class:`~dpopt.privacy.Ledger` decides whether the
event fits the budget.  The naive check copies the accountant, composes the
event and converts the composition to ε (for RDP: a full RDP → (ε, δ)
conversion with argument validation); chen2020's DP-BLSGD asks this two to
four times per iteration.  This benchmark times, in one run and alternately:

* ``ledger`` — ``can_afford(event)`` then ``charge(event)`` on a Ledger;
* ``naive`` — the same decisions made by copy → compose → get_epsilon on the
  same accountant type, then one compose (what the ledger did before it kept
  cached per-order conversion constants).

Workloads: a pure-DP Laplace step (kuru2022's per-iteration charge), a
Poisson-subsampled Gaussian step under RDP (DP-SGD), and the DP-BLSGD pattern
under RDP (a check of gradient + line search together, then two charges).
The ratio ledger/naive (charges per second) is printed per workload; > 1
means the ledger is faster.

Usage: ``python benchmarks/bench_ledger.py [--charges N] [--repeats K]``.
Timings depend on the machine and its load; compare ratios within one run only.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from dpopt.privacy import Ledger, PureDPAccountant, RDPAccountant
from dpopt.privacy import events as ev

DELTA = 1e-6


def _workloads():
    lap = ev.Subsampled(ev.Laplace(2.0, 0.01), 0.01, "without_replacement")
    sgm = ev.Subsampled(ev.Gaussian(1.1), 0.01, "poisson")
    grad = ev.Subsampled(ev.Gaussian(40.0, 1.0), 0.1, "poisson")
    search = ev.Subsampled(ev.AboveThreshold.laplace(0.02, 0.02), 0.1, "poisson")
    both = ev.Composed((grad, search))
    return {
        "pure laplace step": (lambda: Ledger(1e9, relation="replace_one"), PureDPAccountant,
                              0.0, [(lap, (lap,))]),
        "rdp subsampled gaussian": (lambda: Ledger(1e9, DELTA, "rdp"), RDPAccountant,
                                    DELTA, [(sgm, (sgm,))]),
        "rdp dp-blsgd iteration": (lambda: Ledger(1e9, DELTA, "rdp"), RDPAccountant,
                                   DELTA, [(both, (grad, search))]),
    }  # fmt: skip


def _ledger_rate(make, pattern, charges) -> float:
    ledger = make()
    t0 = time.perf_counter()
    done = 0
    while done < charges:
        for check, releases in pattern:
            if not ledger.can_afford(check):
                raise RuntimeError("benchmark budget exhausted")
            for event in releases:
                ledger.charge(event)
                done += 1
    return done / (time.perf_counter() - t0)


def _naive_rate(accountant_type, delta, pattern, charges, budget=1e9) -> float:
    acc = accountant_type()

    def epsilon(a):
        return a.get_epsilon(delta) if delta else a.get_epsilon()

    t0 = time.perf_counter()
    done = 0
    while done < charges:
        for check, releases in pattern:
            if epsilon(acc.copy().compose(check)) > budget:
                raise RuntimeError("benchmark budget exhausted")
            for event in releases:
                if epsilon(acc.copy().compose(event)) > budget:
                    raise RuntimeError("benchmark budget exhausted")
                acc.compose(event)
                done += 1
    return done / (time.perf_counter() - t0)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--charges", type=int, default=3000, help="charges per timed block")
    parser.add_argument("--repeats", type=int, default=5, help="timed block pairs per workload")
    args = parser.parse_args(argv)
    print(f"# {platform.python_implementation()} {platform.python_version()}, {platform.machine()}")
    print(f"{'workload':<26} {'ledger/s':>10} {'naive/s':>10} {'ratio':>7}")
    for name, (make, acc_type, delta, pattern) in _workloads().items():
        _ledger_rate(make, pattern, 200), _naive_rate(acc_type, delta, pattern, 200)  # warm caches
        fast, slow = [], []
        for _ in range(args.repeats):
            fast.append(_ledger_rate(make, pattern, args.charges))
            slow.append(_naive_rate(acc_type, delta, pattern, args.charges))
        f, s = statistics.median(fast), statistics.median(slow)
        print(f"{name:<26} {f:>10.0f} {s:>10.0f} {f / s:>7.2f}")


if __name__ == "__main__":
    main()
