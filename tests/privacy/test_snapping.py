"""The snapping mechanism (Mironov 2012): its uniform source, its law, its grid, its ε and its charge."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpopt.privacy import BudgetExceededError, Ledger, PLDAccountant, PureDPAccountant, RDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy import mechanisms as mech
from dpopt.privacy.snapping import power_of_two_at_least, snap, uniform_open01


def test_uniform_reaches_every_binade_with_its_probability():
    u = uniform_open01(400_000)
    assert np.all((u > 0.0) & (u < 1.0))
    # P(U < 2^-k) = 2^-k: binomial counts within 5 standard deviations (p ≈ 6e-7 per check)
    for k in (1, 2, 4, 8, 12):
        p = 2.0**-k
        count = int(np.sum(u < p))
        assert abs(count - p * u.size) < 5 * math.sqrt(u.size * p * (1 - p)) + 1
    # low mantissa bits are uniform too (a float from 53 random bits would leave them 0 below 2^-1)
    small = u[u < 2.0**-6]
    assert np.mean(np.frexp(small)[0] * 2.0**53 % 2) == pytest.approx(0.5, abs=0.05)


def _rounded_laplace_pmf(k: np.ndarray) -> np.ndarray:
    """P(round(X) = k) for X ~ Laplace(1): 1 − e^{−½} at 0, ½e^{−|k|}(e^{½} − e^{−½}) elsewhere."""
    return np.where(k == 0, -math.expm1(-0.5), 0.5 * np.exp(-np.abs(k)) * (math.exp(0.5) - math.exp(-0.5)))


def _chi2_pvalue(draws: np.ndarray) -> float:
    ks = np.arange(-9, 10)
    expected = _rounded_laplace_pmf(ks) * draws.size
    observed = np.array([np.sum(draws == k) for k in ks], dtype=float)
    outside = draws.size - observed.sum()  # the tails beyond ±9 in one bin
    expected = np.append(expected, draws.size - expected.sum())
    observed = np.append(observed, outside)
    return float(stats.chisquare(observed, expected).pvalue)


def test_released_law_is_laplace_rounded_to_the_grid_and_half_the_noise_is_caught():
    """λ = Λ = 1: the release is round(Laplace(1)) exactly; χ² at 120,000 draws.

    A correct sampler passes at p > 1e-6 with probability 1 − 1e-6; the twin with half the
    noise scale (λ = ½, so Λ = ½ and half-integers appear) gives p ≈ 0.
    """
    draws = snap(np.zeros(120_000), scale=1.0, bound=1e6)
    assert np.all(draws == np.rint(draws))  # every release on the grid Λℤ = ℤ
    assert _chi2_pvalue(draws) > 1e-6
    twin = snap(np.zeros(120_000), scale=0.5, bound=1e6)
    assert _chi2_pvalue(twin) < 1e-12


def test_low_order_bits_carry_nothing_the_naive_release_leaks():
    """Neighbouring inputs 0.1 and 0.1 + 2⁻⁴⁰: every snapped output is a multiple of Λ (or ±B), so
    the output sets coincide; the naive float release ``x + Laplace`` shows its input in the low
    bits of most outputs (Mironov 2012, §3)."""
    rng = np.random.default_rng(0)
    for x in (0.1, 0.1 + 2.0**-40):
        out = snap(np.full(20_000, x), scale=1.0, bound=50.0)
        assert np.all((out == np.rint(out)) | (np.abs(out) == 50.0))
    naive = 0.1 + rng.laplace(0.0, 1.0, 20_000)
    assert np.mean(naive == np.rint(naive)) < 0.01


def test_clamp_and_power_of_two_scaling():
    assert power_of_two_at_least(1.0) == 1.0 and power_of_two_at_least(1.0000001) == 2.0
    assert power_of_two_at_least(0.3) == 0.5
    out = snap(np.array([1e12, -1e12]), scale=1.0, bound=100.0)
    assert np.all(np.abs(out) <= 100.0)
    scaled = snap(np.zeros(50_000), scale=4.0, bound=1e6, sensitivity=4.0)  # λ/Δ = 1: grid 4ℤ
    assert np.all(scaled % 4.0 == 0.0)
    assert np.mean(np.abs(scaled)) == pytest.approx(4.0 * np.sum(np.abs(np.arange(-30, 31)) *
                                                                 _rounded_laplace_pmf(np.arange(-30, 31))), rel=0.03)
    with pytest.raises(ValueError, match="power of two"):
        snap(np.zeros(3), scale=3.0, bound=100.0, sensitivity=3.0)


def test_event_epsilon_is_theorem_one_and_every_accountant_takes_it():
    event = ev.Snapping(scale=2.0, bound=1000.0, sensitivity=1.0)
    assert event.epsilon == (1.0 + 2.0**-49 * 1000.0) / 2.0  # (1/λ + 2⁻⁴⁹B/λ) in sensitivity units
    assert ev.Snapping(8.0, 8000.0, 4.0).epsilon == (1.0 + 2.0**-49 * 2000.0) / 2.0
    assert ev.from_json(event.to_json()) == event
    with pytest.raises(ValueError, match="bound"):
        ev.Snapping(scale=2.0, bound=1.0)  # B must exceed λ
    assert PureDPAccountant().compose(event).get_epsilon() == event.epsilon
    assert RDPAccountant().supports(event)  # by the pure-DP bound on its Rényi divergence
    assert PLDAccountant(1e-3).compose(event).get_epsilon(1e-9) <= event.epsilon + 2e-3


def test_mechanism_charges_before_release_and_rounds_the_sensitivity_up():
    ledger = Ledger(1.0)
    out = mech.snapping(np.zeros(4), sensitivity=3.0, bound=1e4, ledger=ledger, epsilon=0.5)
    assert out.shape == (4,)
    (event,) = ledger.events
    assert event.sensitivity == 4.0 and event.epsilon <= 0.5  # Δ rounded up to a power of two
    assert event.epsilon == pytest.approx(0.5, rel=1e-12)
    with pytest.raises(BudgetExceededError):
        mech.snapping(np.zeros(4), sensitivity=1.0, bound=1e4, ledger=ledger, epsilon=0.6)
    assert len(ledger.events) == 1
