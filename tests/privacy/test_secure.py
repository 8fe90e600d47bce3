"""Tests of the floating-point-safe noise: exact samplers (χ² against exact pmfs) and the low-bit attack.

The samplers draw from the operating system's CSPRNG, so they cannot be
seeded; the tests are sized so that a correct sampler fails with probability
below 1e-6 (χ² at that level) while a sampler with half the scale fails with
overwhelming probability (checked on the same draws).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpopt.privacy import BudgetExceededError, Ledger, mechanisms, secure
from dpopt.privacy import events as ev

LEVEL = 1e-6  # a correct sampler fails a χ² test with this probability


def discrete_laplace_pmf(x, scale):
    r = math.exp(-1.0 / scale)
    return (1 - r) / (1 + r) * np.exp(-np.abs(x) / scale)


def discrete_gaussian_pmf(x, sigma):
    support = np.arange(-60 * math.ceil(sigma), 60 * math.ceil(sigma) + 1)
    norm = np.exp(-(support**2) / (2 * sigma**2)).sum()
    return np.exp(-(np.asarray(x, float) ** 2) / (2 * sigma**2)) / norm


def chi2_pvalue(draws, pmf, width, min_expected=5.0):
    """χ² goodness of fit on the bins −width..width plus one tail bin each side.

    Outer bins with fewer than ``min_expected`` expected draws are merged inward (the
    usual validity condition of the χ² approximation): a single draw in a bin expecting
    0.01 would otherwise give p ≈ 1e-20 for a correct sampler.
    """
    edges = np.arange(-width, width + 1)
    observed = [np.sum(draws < -width)] + [np.sum(draws == k) for k in edges] + [np.sum(draws > width)]
    probs = pmf(edges)
    tail = (1.0 - probs.sum()) / 2
    expected = [tail * draws.size] + list(probs * draws.size) + [tail * draws.size]
    observed = [float(o) for o in observed]
    for end in (0, -1):  # merge the low tail upward, then the high tail downward
        while len(expected) > 2 and expected[end] < min_expected:
            spilled_expected, spilled_observed = expected.pop(end), observed.pop(end)
            expected[end] += spilled_expected
            observed[end] += spilled_observed
    observed, expected = np.array(observed), np.array(expected)
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


@pytest.mark.parametrize("scale", [0.6, 2.5])
def test_discrete_laplace_matches_its_pmf(scale):
    draws = secure.discrete_laplace_array(scale, (6000,))
    width = math.ceil(4 * scale)
    assert chi2_pvalue(draws, lambda x: discrete_laplace_pmf(x, scale), width) > LEVEL
    # the same draws reject half the scale
    assert chi2_pvalue(draws, lambda x: discrete_laplace_pmf(x, scale / 2), width) < LEVEL


@pytest.mark.parametrize("sigma", [0.8, 3.0])
def test_discrete_gaussian_matches_its_pmf(sigma):
    draws = secure.discrete_gaussian_array(sigma, (5000,))
    width = math.ceil(3 * sigma)
    assert chi2_pvalue(draws, lambda x: discrete_gaussian_pmf(x, sigma), width) > LEVEL
    assert chi2_pvalue(draws, lambda x: discrete_gaussian_pmf(x, sigma / 2), width) < LEVEL


@pytest.mark.parametrize(("num", "den"), [(3, 10), (27, 10), (0, 1), (5, 5)])
def test_bernoulli_exp_frequency(num, den):
    n = 6000
    hits = sum(secure.bernoulli_exp(num, den) for _ in range(n))
    p = math.exp(-num / den)
    if p == 1.0:
        assert hits == n
        return
    assert stats.binomtest(hits, n, p).pvalue > LEVEL


def test_sampler_validation():
    with pytest.raises(ValueError, match="gamma"):
        secure.bernoulli_exp(-1, 2)
    with pytest.raises(ValueError, match="scale"):
        secure.discrete_laplace(Fraction(0))
    with pytest.raises(ValueError, match="sigma"):
        secure.discrete_gaussian(Fraction(-1, 2))


# --------------------------------------------------------------------------- the low-order-bit attack


def odd_last_bit_fraction(releases):
    """Among releases in [1/4, 1/2), the fraction whose last mantissa bit (2^-54 there) is set.

    Neighbour 0 gives y = noise, which has a random last bit; neighbour 1 gives
    y = 1 + noise with noise in [−3/4, −1/2), whose ulp is 2^-53, so its last bit is
    never set (Mironov 2012, §3: the set of reachable doubles depends on the input).
    """
    inside = (releases >= 0.25) & (releases < 0.5)
    return float(np.mean(np.mod(releases[inside] * 2.0**54, 2.0) == 1.0)), int(inside.sum())


def test_naive_float_laplace_leaks_through_low_bits_and_secure_noise_does_not():
    n = 8000
    rng = np.random.default_rng(2024)
    naive = [odd_last_bit_fraction(value + rng.laplace(0.0, 1.0, size=n)) for value in (0.0, 1.0)]
    (frac0, n0), (frac1, n1) = naive
    # the attack tells the neighbours apart: a z-test of equal proportions rejects overwhelmingly
    assert n0 > 500 and n1 > 500
    assert frac0 > 0.4 and frac1 == 0.0
    grid = secure.grid_for(1.0, n)
    fractions, low_bits = [], []
    for value in (0.0, 1.0):
        out = mechanisms.laplace(
            np.full(n, value), sensitivity=1.0, epsilon=1.0, ledger=Ledger(1e9), rng=rng, secure_noise=True
        )
        assert np.all(np.mod(out, grid) == 0.0)  # every release is exactly a grid point
        fractions.append(odd_last_bit_fraction(out))
        low_bits.append(np.mod(out / grid, 8.0))  # the three lowest bits of the grid index
    # the attack statistic is the same for both neighbours, and the low bits have one law
    # expected counts in [1/4, 1/2): 8000·0.086 = 689 and 8000·0.067 = 536 (sd ≈ 23); 300 is > 10 sd below
    assert fractions[0][1] > 300 and fractions[1][1] > 300
    assert fractions[0][0] == fractions[1][0] == 0.0
    table = [[np.sum(bits == k) for k in range(8)] for bits in low_bits]
    assert stats.chi2_contingency(table).pvalue > LEVEL


# --------------------------------------------------------------------------- mechanisms


def test_secure_laplace_charges_the_discrete_event_at_the_asked_epsilon():
    ledger = Ledger(2.0)
    value = np.array([0.3, -1.7, 5.0])
    rng = np.random.default_rng(0)
    out = mechanisms.laplace(value, sensitivity=2.0, epsilon=0.5, ledger=ledger, rng=rng, secure_noise=True)
    (event,) = ledger.events
    assert isinstance(event, ev.DiscreteLaplace)
    assert event.epsilon == pytest.approx(0.5, rel=1e-12)
    grid = secure.grid_for(2.0, 3)
    assert event.sensitivity == math.floor(2.0 / grid) + 3
    assert np.all(np.mod(out, grid) == 0.0)
    assert ledger.spent().epsilon == pytest.approx(0.5, rel=1e-12)


def test_secure_gaussian_keeps_the_noise_multiplier_and_its_scale():
    ledger = Ledger(1e6, 1e-5, "rdp")
    n = 3000
    rng = np.random.default_rng(0)
    out = mechanisms.gaussian(
        np.zeros(n), sensitivity=0.5, noise_multiplier=2.0, ledger=ledger, rng=rng, secure_noise=True
    )
    (event,) = ledger.events
    assert isinstance(event, ev.DiscreteGaussian) and event.noise_multiplier == pytest.approx(2.0)
    # the released noise has std σ = 1.0 (to 2^-20 of grid rounding): a 2x-too-small σ is far outside
    ratio = np.std(out) / 1.0
    assert abs(ratio - 1.0) < 5 * math.sqrt(0.5 / n) + 1e-5


def test_secure_noise_refusals_release_nothing():
    ledger, rng = Ledger(1.0), np.random.default_rng(0)
    with pytest.raises(ValueError, match="VectorLaplace"):
        mechanisms.release(np.zeros(3), ev.VectorLaplace(2.0), ledger=ledger, rng=rng, secure_noise=True)
    with pytest.raises(ValueError, match="too large for an exact secure release"):  # public: the noise scale
        mechanisms.laplace(np.zeros(3), sensitivity=1.0, epsilon=1e-30, ledger=ledger, rng=rng, secure_noise=True)
    with pytest.raises(BudgetExceededError):
        mechanisms.laplace(np.zeros(2), sensitivity=1.0, epsilon=2.0, ledger=ledger, rng=rng, secure_noise=True)
    assert ledger.events == []
