"""FixedSizeSampler's batched draws: both vectorized paths give uniform subsets without replacement.

Uniformity is tested on the joint law of the subset (all C(n, m) subsets
equally likely), not only on inclusion frequencies, by a chi-square test at
significance P_MIN = 1e-6 with fixed seeds (≥ 25 expected draws per cell): a
correct sampler fails with probability ≤ 1e-6.  One biased twin shows the
test has power.
"""

from itertools import combinations
from math import comb

import numpy as np
import pytest
from scipy import stats

from dpopt.privacy import FixedSizeSampler, sampling

P_MIN = 1e-6


def subset_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each m-subset of range(n) occurs among the rows of ``idx`` (rank order)."""
    m = idx.shape[1]
    rows = np.sort(idx, axis=1)
    table = {s: r for r, s in enumerate(combinations(range(n), m))}
    codes = np.array([table[tuple(row)] for row in rows.tolist()])
    return np.bincount(codes, minlength=comb(n, m))


def assert_uniform_subsets(idx, n, m, repetitions):
    assert idx.shape == (repetitions, m) and np.issubdtype(idx.dtype, np.integer)
    assert idx.min() >= 0 and idx.max() < n
    assert np.all(np.diff(np.sort(idx, axis=1), axis=1) > 0)  # no repeated record in a row
    assert stats.chisquare(subset_counts(idx, n)).pvalue > P_MIN


def test_each_regime_takes_the_cheap_path():
    # m a large share of n: sorting n keys per row; m ≪ n: O(m) distinct draws per row.
    assert sampling.uses_key_sort(100, 50) and sampling.uses_key_sort(8, 2)
    assert not sampling.uses_key_sort(100_000, 1_000)
    assert not sampling.uses_key_sort(40, 3)
    width = sampling.distinct_draw_width(100_000, 1_000)
    assert 1_000 < width < 1_100  # ≈ m(1 + m/2n) plus a few standard deviations


@pytest.mark.parametrize("n, m, repetitions", [(12, 3, 100_000), (40, 3, 300_000)])
def test_batched_subsets_are_uniform(n, m, repetitions):
    idx = FixedSizeSampler(m, n).indices(np.random.default_rng(5), repetitions=repetitions)
    assert_uniform_subsets(idx, n, m, repetitions)


def test_rows_short_of_distinct_values_are_redrawn_without_bias():
    # width = m: a row has m distinct draws with probability (1 − 1/10)(1 − 2/10) = 0.72.
    idx = sampling._first_distinct(np.random.default_rng(6), 10, 3, 60_000, width=3)
    assert_uniform_subsets(idx, 10, 3, 60_000)


def test_chunked_draws_match_the_law_and_shape(monkeypatch):
    monkeypatch.setattr(sampling, "_KEY_CHUNK_ENTRIES", 1_000)  # many chunks on both paths
    monkeypatch.setattr(sampling, "_DRAW_CHUNK_ENTRIES", 1_000)
    for n, m in ((12, 3), (40, 3)):
        idx = FixedSizeSampler(m, n).indices(np.random.default_rng(7), repetitions=50_007)
        assert_uniform_subsets(idx, n, m, 50_007)


def test_large_sparse_batches_are_valid_subsets():
    idx = FixedSizeSampler(1_000, 100_000).indices(np.random.default_rng(8), repetitions=20)
    assert idx.shape == (20, 1_000)
    assert all(len(np.unique(row)) == 1_000 for row in idx)
    # Inclusion counts of 20 000 draws over 100 bins of 1 000 records each are multinomial.
    assert stats.chisquare(np.bincount(idx.ravel() // 1_000, minlength=100)).pvalue > P_MIN
    assert not np.array_equal(idx[0], idx[1])


def test_the_uniformity_test_detects_a_biased_subset_rule():
    """Twin: the m *smallest* distinct values of the stream (not the first m) favour low indices."""
    rng = np.random.default_rng(9)
    rows = [np.unique(row) for row in rng.integers(0, 40, size=(30_000, 7))]
    biased = np.array([row[:3] for row in rows if len(row) >= 3])
    assert stats.chisquare(subset_counts(biased, 40)).pvalue < P_MIN


def test_single_draw_and_bad_repetitions():
    sampler = FixedSizeSampler(4, 9)
    one = sampler.indices(np.random.default_rng(0))
    assert one.shape == (4,) and len(set(one.tolist())) == 4
    with pytest.raises(ValueError, match="repetitions"):
        sampler.indices(np.random.default_rng(0), repetitions=0)


def test_the_scan_for_few_draws_gives_the_vectorized_numbers(monkeypatch):
    # width 3 of 10 values: about 28% of rows are redrawn, so both paths go through rejection rounds
    for rows in (1, 2, 20):
        scanned = sampling._first_distinct(np.random.default_rng(rows), 10, 3, rows, width=3)
        with monkeypatch.context() as m:
            m.setattr(sampling, "_SCAN_ENTRIES", 0)
            sorted_path = sampling._first_distinct(np.random.default_rng(rows), 10, 3, rows, width=3)
        assert np.array_equal(scanned, sorted_path)
