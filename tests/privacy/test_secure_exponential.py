"""The exact exponential mechanism (``mechanisms.exponential(..., secure_noise=True)``).

The sampler draws from the operating system's CSPRNG, so it cannot be seeded; the χ²
tests are sized so that a correct sampler fails with probability below 1e-6 while a
sampler at twice the ε fails with overwhelming probability (checked on the same draws).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpopt.privacy import BudgetExceededError, Ledger, mechanisms, secure
from dpopt.privacy import events as ev

LEVEL = 1e-6  # a correct sampler fails a χ² test with this probability


def exact_probabilities(gaps, epsilon, sensitivity):
    weights = np.exp(-epsilon * np.asarray(gaps, dtype=float) / (2 * sensitivity))
    return weights / weights.sum()


def chi2_pvalue(indices, probabilities):
    counts = np.bincount(indices, minlength=len(probabilities))
    return stats.chisquare(counts, probabilities * counts.sum()).pvalue


def test_exponential_index_matches_the_exact_probabilities():
    gaps, epsilon, sensitivity = [0, 1, 3, 6, 2], Fraction(3, 2), 1
    draws = np.array([secure.exponential_index(gaps, epsilon, sensitivity) for _ in range(6000)])
    assert chi2_pvalue(draws, exact_probabilities(gaps, 1.5, sensitivity)) > LEVEL
    assert chi2_pvalue(draws, exact_probabilities(gaps, 3.0, sensitivity)) < LEVEL


def test_secure_exponential_is_exact_on_rounded_scores_batched_and_charges_the_same_event():
    scores = np.array([0.0, 0.5, 1.25, -1.0, 0.9])
    epsilon, sensitivity = 2.0, 0.5
    ledger = Ledger(10.0)
    out = mechanisms.exponential(np.broadcast_to(scores, (1500, 4, 5)), epsilon=epsilon, sensitivity=sensitivity,
                                 ledger=ledger, rng=np.random.default_rng(0), secure_noise=True)
    assert out.shape == (1500, 4) and out.dtype == np.int64
    assert ledger.events == [ev.Exponential(epsilon)] and ledger.spent().epsilon == epsilon
    # the law: exp(ε·ũ/(2Δ̃)) with ũ = round(u/g), Δ̃ = ⌊Δ/g⌋ + 1 — within 2^-20 of the float mechanism's
    grid = secure.grid_for(sensitivity, 1)
    gaps, integer = mechanisms.secure_exponential_scores(scores, sensitivity)
    assert integer == math.floor(sensitivity / grid) + 1 and gaps.min() == 0
    exact = exact_probabilities(gaps, epsilon, integer)
    np.testing.assert_allclose(exact, mechanisms.exponential_probabilities(scores, epsilon=epsilon,
                                                                           sensitivity=sensitivity), rtol=1e-5)
    assert chi2_pvalue(out.ravel(), exact) > LEVEL
    assert chi2_pvalue(out.ravel(), exact_probabilities(gaps, 2 * epsilon, integer)) < LEVEL


def test_secure_exponential_refusals_are_one_line_and_release_nothing():
    ledger, rng = Ledger(1.0), np.random.default_rng(0)
    # huge scores are clamped (an error would depend on the data): the top score still wins
    huge = mechanisms.exponential(np.array([0.0, 1e30]), epsilon=50.0, sensitivity=1.0, ledger=Ledger(60.0),
                                  rng=rng, secure_noise=True)
    assert int(huge) == 1
    with pytest.raises(BudgetExceededError):
        mechanisms.exponential(np.zeros(3), epsilon=2.0, sensitivity=1.0, ledger=ledger, rng=rng, secure_noise=True)
    assert ledger.events == []
    with pytest.raises(ValueError, match="gaps >= 0"):
        secure.exponential_index([1, -1], Fraction(1), 1)
    with pytest.raises(ValueError, match="sensitivity >= 1"):
        secure.exponential_index([0, 1], Fraction(1), 0)


def test_secure_release_clamps_huge_values_instead_of_raising():
    """Whether a value is huge depends on the data: clamping (1-Lipschitz) keeps the charged sensitivity,
    an error would tell neighbours apart."""
    ledger, rng = Ledger(10.0), np.random.default_rng(0)
    for value in (2047.9999996, 2048.0000004, 1e300):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning on the huge value's neighbour only would tell them apart
            out = mechanisms.laplace(np.array([value, 0.0]), sensitivity=1e-6, epsilon=1.0, ledger=ledger, rng=rng,
                                     secure_noise=True)
        assert np.all(np.isfinite(out))
    assert len(ledger.events) == 3
    assert secure.snap_to_grid(np.array([1e300, -1e300]), 1.0).tolist() == [2.0**50, -(2.0**50)]
