"""The vectorized exact discrete Gaussian sampler (secure.discrete_gaussian_vector): χ² against the exact pmf.

Sized like ``test_secure.py``: a correct sampler fails with probability below 1e-6, and the same
draws reject half the σ.  The exact fallback of a too-close-to-call decision is exercised by
widening the margin so that every decision takes it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from dpopt.privacy import secure

from .test_secure import LEVEL, chi2_pvalue, discrete_gaussian_pmf, discrete_laplace_pmf


@pytest.mark.parametrize("sigma", [0.8, 3.0, 7.5])
def test_vector_discrete_gaussian_matches_its_pmf(sigma):
    draws = secure.discrete_gaussian_vector(sigma, 20000)
    assert draws.dtype == np.int64 and draws.shape == (20000,)
    width = math.ceil(3 * sigma)
    assert chi2_pvalue(draws, lambda x: discrete_gaussian_pmf(x, sigma), width) > LEVEL
    assert chi2_pvalue(draws, lambda x: discrete_gaussian_pmf(x, sigma / 2), width) < LEVEL


def test_vector_discrete_gaussian_at_a_grid_scale():
    """σ as the secure mechanisms use it (~1e7 grid units): binned by σ/4 against the exact bin masses.

    The mass of the integers in [a, b) is Φ((b − ½)/σ) − Φ((a − ½)/σ) up to e^{−2π²σ²} (Poisson summation).
    """
    sigma = 14909907.6962
    draws = secure.discrete_gaussian_vector(sigma, 20000)
    edges = np.round(np.arange(-12, 13) * sigma / 4)
    observed = np.histogram(draws, bins=np.concatenate([[-np.inf], edges, [np.inf]]))[0]
    cdf = special.ndtr((np.concatenate([[-np.inf], edges - 0.5, [np.inf]])) / sigma)
    expected = np.diff(cdf) * draws.size
    assert stats.chisquare(observed, expected).pvalue > LEVEL
    half = np.diff(special.ndtr((np.concatenate([[-np.inf], edges - 0.5, [np.inf]])) / (sigma / 2))) * draws.size
    assert stats.chisquare(observed, half).pvalue < LEVEL


def test_the_exact_fallback_gives_the_same_law(monkeypatch):
    calls = []
    below = secure._below

    def counted(*args):
        calls.append(1)
        return below(*args)

    monkeypatch.setattr(secure, "_below", counted)
    monkeypatch.setattr(secure, "_MARGIN_BITS", -60)  # no decision is safe in floats: all exact
    sigma = 3.0
    draws = secure.discrete_gaussian_vector(sigma, 4000)
    assert len(calls) > 4000
    width = math.ceil(3 * sigma)
    assert chi2_pvalue(draws, lambda x: discrete_gaussian_pmf(x, sigma), width) > LEVEL
    assert chi2_pvalue(draws, lambda x: discrete_gaussian_pmf(x, sigma / 2), width) < LEVEL


def test_vector_building_blocks():
    n = 20000
    for num, den in [(3, 10), (10, 10), (2**40, 2**41)]:
        hits = int(secure._bernoulli_exp_ratio(np.full(n, num, dtype=np.int64), den).sum())
        assert stats.binomtest(hits, n, math.exp(-num / den)).pvalue > LEVEL
    draws = secure._discrete_laplace_int(3, n)
    assert chi2_pvalue(draws, lambda x: discrete_laplace_pmf(x, 3.0), 12) > LEVEL
    assert np.array_equal(np.unique(secure._uniform_below(5, 1000)), np.arange(5))


def test_vector_sampler_validation():
    with pytest.raises(ValueError, match="sigma"):
        secure.discrete_gaussian_vector(2.0**41, 3)
    with pytest.raises(ValueError, match="sigma"):
        secure.discrete_gaussian_vector(0.0, 3)
    assert secure.discrete_gaussian_vector(2.0, 0).shape == (0,)
    assert secure.discrete_gaussian_array(2.0**41, (2,)).shape == (2,)  # the scalar sampler above 2^40
