"""Benchmark: PLD accounting of Poisson-subsampled Gaussian steps (DP-SGD), calibration, and secure noise.

1. ε at δ for ``steps`` steps of the sampled Gaussian mechanism (rate q,
   noise multiplier z) by
   * dpopt's :class:`~dpopt.privacy.pld.PLDAccountant` (cold: every PLD cache
     cleared before each repeat; grid h = 1e-4, pessimistic, and the
     optimistic bound beside it),
   * dp-accounting 0.6.0's ``PLDAccountant`` (same grid h = 1e-4),
   * the PRV accountant of Gopi, Lee & Wutschitz (``prv-accountant``; ε error
     0.01 as Opacus uses it, its [lower, upper] bracket printed),
   * dpopt's RDP accountant (for the gap PLD closes),
   all timed in this one run (median of the repeats), with dpopt/peer time ratios.
2. The noise multiplier σ needed for ε ∈ {0.5, 1, 2, 4, 8} at δ = 1e-5 for
   DP-SGD at q = 0.01 over 1,000 steps, by RDP and by PLD
   (:func:`~dpopt.privacy.calibration.calibrate_noise`, PLD grid 1e-3).
3. Cost per sample of the floating-point-safe samplers (exact discrete Laplace
   and discrete Gaussian from the OS CSPRNG, and Mironov's snapping mechanism)
   against numpy's float samplers; cost per draw of the exact exponential
   mechanism (``mechanisms.exponential(..., secure_noise=True)``) against the
   float one (Gumbel-max), for n candidates whose log-weights ε·u/(2Δ) span a
   range of 1 (nearly flat) or 10 (peaked: fewer proposals are accepted).
4. Agreement beyond the Gaussian: Poisson-subsampled Laplace and a mixed
   composition (subsampled Gaussian steps + Laplace releases + one Gaussian)
   against dp-accounting's PLD (h = 1e-4) and the PRV accountant's bracket.
5. The families' default (``accountant="auto"`` = PLD): σ each one calibrates
   by RDP and by PLD for its planned run, and the ε PLD certifies at RDP's σ.
6. A PLD ledger charged step by step up to its budget (σ calibrated by PLD
   for T steps, then ``can_afford`` + ``charge`` until refused, then
   ``spent()``): the ledger's check (certified states, RDP first) against
   the check it replaced (copy the accountant, compose, convert: one PLD
   composition per charge), for a DP-SGD step and for a two-event iteration.

Run:  python benchmarks/bench_pld.py [--steps N] [--rate q] [--noise z] [--delta d] [--repeats R]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import warnings

import numpy as np

from dpopt.privacy import Ledger, mechanisms, pld, secure, snapping
from dpopt.privacy import events as ev
from dpopt.privacy.calibration import calibrate_noise
from dpopt.privacy.pld import PLDAccountant
from dpopt.privacy.rdp import RDPAccountant

logging.getLogger("absl").setLevel(logging.ERROR)


def timed(fn, repeats: int):
    """(median seconds, result of the last call) over ``repeats`` calls."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def clear_pld_caches() -> None:
    pld._base_pld.cache_clear()
    pld._power_pld.cache_clear()


def accounting(steps: int, rate: float, noise: float, delta: float, repeats: int) -> None:
    step = ev.Subsampled(ev.Gaussian(noise), rate, "poisson")

    def ours():
        clear_pld_caches()
        return PLDAccountant().compose(ev.SelfComposed(step, steps)).get_epsilon(delta)

    def ours_bounds():
        clear_pld_caches()
        return PLDAccountant().compose(ev.SelfComposed(step, steps)).get_epsilon_bounds(delta)

    def dp_accounting():
        import dp_accounting as dpa

        event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(noise)), steps)
        return dpa.pld.PLDAccountant(value_discretization_interval=1e-4).compose(event).get_epsilon(delta)

    def prv():
        from prv_accountant import PRVAccountant
        from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

        acc = PRVAccountant(
            prvs=PoissonSubsampledGaussianMechanism(noise_multiplier=noise, sampling_probability=rate),
            max_self_compositions=steps,
            eps_error=0.01,
            delta_error=delta / 1000,
        )
        return acc.compute_epsilon(delta=delta, num_self_compositions=[steps])

    def rdp():
        return RDPAccountant().compose(ev.SelfComposed(step, steps)).get_epsilon(delta)

    print(f"\n== epsilon of {steps} steps, Poisson rate {rate}, noise multiplier {noise}, delta {delta:g} ==")
    t_ours, eps = timed(ours, repeats)
    t_bounds, (low, high) = timed(ours_bounds, 1)
    t_dpa, eps_dpa = timed(dp_accounting, repeats)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_prv, (prv_low, prv_est, prv_high) = timed(prv, repeats)
    t_rdp, eps_rdp = timed(rdp, repeats)
    rows = [
        ("dpopt PLD (pessimistic, h=1e-4)", eps, t_ours, ""),
        ("dpopt PLD optimistic / pessimistic", high, t_bounds, f"optimistic {low:.4f}"),
        ("dp-accounting PLD (h=1e-4)", eps_dpa, t_dpa, f"ratio dpopt/dp-accounting {t_ours / t_dpa:.2f}"),
        ("PRV accountant (eps_error 0.01)", prv_high, t_prv, f"[{prv_low:.4f}, {prv_high:.4f}] est {prv_est:.4f}; "
         f"ratio dpopt/PRV {t_ours / t_prv:.2f}"),
        ("dpopt RDP", eps_rdp, t_rdp, f"PLD is {100 * (1 - eps / eps_rdp):.1f} % below RDP"),
    ]
    print(f"{'accountant':<38} {'epsilon':>10} {'seconds':>9}  notes")
    for name, value, seconds, note in rows:
        print(f"{name:<38} {value:>10.4f} {seconds:>9.3f}  {note}")


def sigma_table(rate: float, steps: int, delta: float) -> None:
    print(f"\n== noise multiplier for DP-SGD, q={rate}, {steps} steps, delta={delta:g} ==")
    print(f"{'epsilon':>8} {'sigma RDP':>10} {'sigma PLD':>10} {'PLD/RDP':>8}")
    for eps in (0.5, 1.0, 2.0, 4.0, 8.0):
        by_rdp = calibrate_noise(eps, delta, steps=steps, rate=rate, accountant="rdp").scale
        by_pld = calibrate_noise(eps, delta, steps=steps, rate=rate, accountant="pld").scale
        print(f"{eps:>8g} {by_rdp:>10.4f} {by_pld:>10.4f} {by_pld / by_rdp:>8.3f}")


def secure_noise_cost(samples: int) -> None:
    print(f"\n== cost per sample ({samples} samples) ==")
    rng = np.random.default_rng(0)
    scale = 2.0**21 * 1.37  # a grid-unit scale as the secure mechanisms use (Δ/g ≈ 2^20·d)
    rows = [
        ("numpy float Laplace", lambda: rng.laplace(0.0, 1.0, samples)),
        ("numpy float Gaussian", lambda: rng.normal(0.0, 1.0, samples)),
        ("exact discrete Laplace (CSPRNG)", lambda: secure.discrete_laplace_array(scale, (samples,))),
        ("exact discrete Gaussian (CSPRNG)", lambda: secure.discrete_gaussian_array(scale, (samples,))),
        ("snapping mechanism (CSPRNG)", lambda: snapping.snap(np.zeros(samples), scale=1.0, bound=1e6)),
    ]
    base = None
    for name, fn in rows:
        seconds, _ = timed(fn, 3)
        per = seconds / samples
        base = base or per
        print(f"{name:<34} {per * 1e6:>9.3f} us/sample  ({per / base:,.0f}x numpy Laplace)")
    draws = max(samples // 20, 50)
    print(f"\n== exponential mechanism: cost per draw ({draws} draws) ==")
    for n in (20, 128):
        for spread in (1.0, 10.0):
            scores = 2.0 * spread * rng.random((draws, n))  # ε = Δ = 1: log-weights span [0, spread]
            times = []
            for secure_noise in (False, True):
                seconds, _ = timed(lambda u=scores, s=secure_noise: mechanisms.exponential(
                    u, epsilon=1.0, sensitivity=1.0, ledger=Ledger(10.0), rng=rng, secure_noise=s), 3)
                times.append(seconds / draws)
            print(f"n = {n:>3}, log-weight range {spread:>4g}: float {times[0] * 1e6:>7.2f} us/draw, "
                  f"exact {times[1] * 1e6:>8.2f} us/draw ({times[1] / times[0]:,.0f}x)")


def agreement(repeats: int) -> None:
    import dp_accounting as dpa
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import (
        GaussianMechanism,
        LaplaceMechanism,
        PoissonSubsampledGaussianMechanism,
    )

    def dpa_eps(event, delta):
        return dpa.pld.PLDAccountant(value_discretization_interval=1e-4).compose(event).get_epsilon(delta)

    print("\n== agreement: subsampled Laplace and a mixed composition (h = 1e-4) ==")
    print(f"{'case':<44} {'dpopt':>9} {'dp-acc.':>9} {'PRV [low, high]':>20} {'t dpopt':>8} {'t dp-acc.':>9}")
    lap, lap_ref = (ev.SelfComposed(ev.Subsampled(ev.Laplace(2.0), 0.05, "poisson"), 300),
                    dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.LaplaceDpEvent(2.0)), 300))
    t_ours, ours = timed(lambda: (clear_pld_caches(), PLDAccountant().compose(lap).get_epsilon(1e-5))[1], repeats)
    t_ref, ref = timed(lambda: dpa_eps(lap_ref, 1e-5), repeats)
    print(f"{'Laplace b=2, q=0.05, 300 steps, delta 1e-5':<44} {ours:>9.4f} {ref:>9.4f} {'':>20} {t_ours:>8.3f} "
          f"{t_ref:>9.3f}")
    mixed = ev.Composed((ev.SelfComposed(ev.Subsampled(ev.Gaussian(1.0), 0.01, "poisson"), 1000),
                         ev.SelfComposed(ev.Laplace(20.0), 50), ev.Gaussian(8.0, 2.0)))
    mixed_ref = dpa.ComposedDpEvent([
        dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.0)), 1000),
        dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(20.0), 50), dpa.GaussianDpEvent(4.0)])
    t_ours, ours = timed(lambda: (clear_pld_caches(), PLDAccountant().compose(mixed).get_epsilon(1e-6))[1], repeats)
    t_ref, ref = timed(lambda: dpa_eps(mixed_ref, 1e-6), repeats)
    prv = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=1.0, sampling_probability=0.01),
                              LaplaceMechanism(mu=0.05), GaussianMechanism(noise_multiplier=4.0)],
                        max_self_compositions=[1000, 50, 1], eps_error=0.01, delta_error=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        low, _, high = prv.compute_epsilon(delta=1e-6, num_self_compositions=[1000, 50, 1])
    print(f"{'1000 x Gauss(q=.01,z=1) + 50 x Lap(20) + Gauss':<44} {ours:>9.4f} {ref:>9.4f} "
          f"{f'[{low:.4f}, {high:.4f}]':>20} {t_ours:>8.3f} {t_ref:>9.3f}")


def family_defaults() -> None:
    from dpopt.privacy.calibration import calibrate_run, run_accountant

    def sgd(q, steps, sensitivity=1.0, scheme="poisson"):
        return lambda s: ev.SelfComposed(ev.Subsampled(ev.Gaussian(s, sensitivity), q, scheme), steps)

    cases = [
        ("dp-sgd (linesearch), q=0.1, T=100", sgd(0.1, 100), 1.0, 1e-5),
        ("outpert, one Gaussian release", lambda s: ev.Gaussian(s), 1.0, 1e-6),
        ("neural dp-sgd, q=0.005, T=1000", sgd(0.005, 1000), 1.0, 1e-5),
        ("dualavg hidden activation, rate 1e-3, T=3000", sgd(1e-3, 3000, 2.0, "without_replacement"), 0.5, 1e-5),
    ]
    print("\n== the families' default: sigma by RDP and by PLD, and PLD's epsilon at RDP's sigma ==")
    print(f"{'family, planned run':<46} {'eps':>5} {'sigma RDP':>10} {'sigma PLD':>10} {'ratio':>6} "
          f"{'eps PLD @ sigma RDP':>20}")
    for name, event_of, eps, delta in cases:
        by_rdp = calibrate_run(event_of, eps, delta, run_accountant("rdp"))
        by_pld = calibrate_run(event_of, eps, delta, run_accountant("pld"))
        at_rdp = run_accountant("pld").compose(event_of(by_rdp)).get_epsilon(delta)
        print(f"{name:<46} {eps:>5g} {by_rdp:>10.4f} {by_pld:>10.4f} {by_pld / by_rdp:>6.3f} {at_rdp:>20.4f}")


def _run_ledger(ledger, pattern, limit: int) -> int:
    charges = 0
    while charges < limit and all(ledger.can_afford(e) for e in pattern):
        for event in pattern:
            ledger.charge(event)
            charges += 1
    ledger.spent()
    return charges


class _NaivePLD(PLDAccountant):
    """The check before this ledger's: copy, compose, convert (a PLD composition per charge)."""

    def fits(self, event, epsilon, delta):
        return self.copy().compose(event).get_epsilon(delta) <= epsilon

    def copy(self):
        other = super().copy()
        other.__class__ = _NaivePLD
        other._known = {"eps": {}, "certified": [], "refuted": []}
        return other


def ledger_speed(rate: float, steps: int, delta: float, naive_steps: int) -> None:
    print(f"\n== a PLD ledger charged to its budget (epsilon 1, delta {delta:g}, Poisson rate {rate}) ==")
    print(f"{'workload':<34} {'charges':>8} {'seconds':>9} {'before (s)':>11} {'speed-up':>9}")
    for name, n in (("DP-SGD step", naive_steps), ("DP-SGD step", steps), ("gradient + Laplace query", steps)):
        sigma = calibrate_noise(1.0, delta, steps=n, rate=rate, accountant="pld").scale
        pattern = [ev.Subsampled(ev.Gaussian(sigma), rate, "poisson")]
        if "Laplace" in name:
            pattern = [ev.Subsampled(ev.Gaussian(sigma), rate, "poisson"),
                       ev.Subsampled(ev.Laplace(20.0 * n ** 0.5), rate, "poisson")]  # fmt: skip
        clear_pld_caches()
        start = time.perf_counter()
        charges = _run_ledger(Ledger(1.0, delta, PLDAccountant()), pattern, 4 * n)
        ours = time.perf_counter() - start
        before, ratio = "", ""
        if n <= naive_steps:
            clear_pld_caches()
            start = time.perf_counter()
            _run_ledger(Ledger(1.0, delta, _NaivePLD()), pattern, 4 * n)
            slow = time.perf_counter() - start
            before, ratio = f"{slow:.3f}", f"{slow / ours:.1f}x"
        print(f"{name:<34} {charges:>8} {ours:>9.3f} {before:>11} {ratio:>9}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=0.01)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--ledger-steps", type=int, default=3000)
    parser.add_argument("--naive-steps", type=int, default=300, help="ledger length timed with the old check too")
    args = parser.parse_args()
    accounting(args.steps, args.rate, args.noise, args.delta, args.repeats)
    accounting(2250, 0.04, 1.5, 1e-5, args.repeats)  # Opacus's reference case
    sigma_table(0.01, 1000, 1e-5)
    secure_noise_cost(args.samples)
    agreement(args.repeats)
    family_defaults()
    ledger_speed(0.01, args.ledger_steps, args.delta, args.naive_steps)


if __name__ == "__main__":
    main()
