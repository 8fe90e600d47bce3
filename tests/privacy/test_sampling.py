"""Samplers' draws have the laws the accountant assumes (DESIGN.md invariant 6).

FixedSizeSampler's batched draws: both vectorized paths give uniform subsets
without replacement.  Uniformity is tested on the joint law of the subset (all
C(n, m) subsets equally likely), not only on inclusion frequencies.

PoissonSampler.stream: sample sizes against Binomial(n, q), per-index
inclusion counts against Binomial(samples, q), the joint law of two
consecutive samples of a tiny n, and lag-1 correlations within and across
blocks, at tiny rates, on both paths (Geometric gaps; one uniform per row
above q = 0.25) and for n = 1.

Every test is a chi-square (or normal) test at significance P_MIN = 1e-6 with
fixed seeds (≥ 25 expected draws per cell): a correct sampler fails with
probability ≤ 1e-6.  Twins show the tests have power: the same draws are
rejected at the wrong rate 1.1·q, and a sampler that reuses half its
minibatches (right marginal law, dependent samples) fails the independence test.
"""

from itertools import combinations
from math import comb

import numpy as np
import pytest
from scipy import stats

from dpopt.privacy import FixedSizeSampler, PoissonSampler, sampling

P_MIN = 1e-6
Z_MAX = 5.0  # |N(0, 1)| > 5 has probability 5.7e-7 < P_MIN


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


# -- PoissonSampler.stream ----------------------------------------------------------------


class Draws:
    """``count`` samples of one stream, flattened: ``idx`` (all indices) and ``owner`` (their sample)."""

    def __init__(self, samples: list, n: int):
        self.n, self.count = n, len(samples)
        self.sizes = np.array([s.size for s in samples])
        self.idx = np.concatenate(samples)
        self.owner = np.repeat(np.arange(self.count), self.sizes)

    def holds(self, i: int) -> np.ndarray:
        """(count,) bool: whether each sample holds index i."""
        out = np.zeros(self.count, dtype=bool)
        out[self.owner[self.idx == i]] = True
        return out

    def codes(self) -> np.ndarray:
        """Each sample as an n-bit integer (n small)."""
        return np.bincount(self.owner, weights=2.0**self.idx, minlength=self.count).astype(np.int64)


def stream_draws(q, n, count, seed, block=None) -> Draws:
    stream = PoissonSampler(q).stream(n, np.random.default_rng(seed), block=block)
    samples = [stream.next() for _ in range(count)]
    assert all(s.dtype == np.int64 and s.ndim == 1 for s in samples)
    draws = Draws(samples, n)
    same = draws.owner[1:] == draws.owner[:-1]
    assert np.all(np.diff(draws.idx)[same] > 0)  # sorted, distinct
    assert draws.idx.size == 0 or (draws.idx.min() >= 0 and draws.idx.max() < n)
    return draws


def sizes_pvalue(sizes: np.ndarray, n: int, q: float) -> float:
    """Chi-square p-value of sample sizes against Binomial(n, q); adjacent sizes are pooled
    until each cell expects ≥ 25 samples (the tails are in the end cells)."""
    expected = stats.binom.pmf(np.arange(n + 1), n, q) * sizes.size
    observed = np.bincount(sizes, minlength=n + 1)
    after = expected[::-1].cumsum()[::-1] - expected  # expected beyond size k
    cuts, e = [], 0.0
    for k in range(n + 1):
        e += expected[k]
        if e >= 25 and after[k] >= 25:
            cuts.append(k + 1)
            e = 0.0
    obs, exp = np.add.reduceat(observed, [0, *cuts]), np.add.reduceat(expected, [0, *cuts])
    return stats.chisquare(obs, exp * (sizes.size / exp.sum())).pvalue


def inclusion_pvalue(draws: Draws, q: float) -> float:
    """Two-sided p-value of Σ_i (c_i − Sq)² / (Sq(1 − q)) ~ χ²_n: index i's count c_i over S
    samples is Binomial(S, q), independently across i."""
    counts = np.bincount(draws.idx, minlength=draws.n)
    mean = draws.count * q
    t = float(np.sum((counts - mean) ** 2) / (mean * (1.0 - q)))
    return 2.0 * min(stats.chi2.sf(t, draws.n), stats.chi2.cdf(t, draws.n))


def lag_z(a: np.ndarray, b: np.ndarray, lag: int = 1) -> float:
    """√S × the correlation of a[t] with b[t + lag] over S pairs: N(0, 1) in the limit when the
    pairs are i.i.d. with independent coordinates."""
    x, y = a[: a.size - lag].astype(float), b[lag:].astype(float)
    return float(np.corrcoef(x, y)[0, 1] * np.sqrt(x.size))


STREAM_CASES = [  # (q, n, samples, block): tiny rates (mostly empty), gaps, uniforms (q > 0.25), n = 1
    (1e-4, 1_000, 200_000, None),
    (0.002, 100_000, 20_000, None),
    (0.02, 50, 100_000, None),
    (0.1, 13, 100_000, 3),
    (0.3, 20, 100_000, None),
    (0.9, 7, 50_000, 5),
    (0.5, 1, 100_000, None),
]


@pytest.mark.parametrize("q, n, count, block", STREAM_CASES)
def test_stream_sizes_are_binomial_and_a_wrong_rate_is_rejected(q, n, count, block):
    draws = stream_draws(q, n, count, seed=11, block=block)
    assert sizes_pvalue(draws.sizes, n, q) > P_MIN
    assert sizes_pvalue(draws.sizes, n, 1.1 * q) < P_MIN


@pytest.mark.parametrize("q, n, count, block", [c for c in STREAM_CASES if c[0] * c[2] >= 1_000])
def test_stream_indices_are_equally_likely_at_rate_q(q, n, count, block):
    # Every index, the first and last of each sample (next to a block's cuts) included.
    draws = stream_draws(q, n, count, seed=12, block=block)
    assert inclusion_pvalue(draws, q) > P_MIN
    assert inclusion_pvalue(draws, 1.1 * q) < P_MIN


@pytest.mark.parametrize("q, n, block", [(0.2, 2, None), (0.2, 2, 3), (0.3, 3, None), (0.3, 3, 3)])
def test_two_consecutive_samples_have_the_product_law(q, n, block):
    """Joint law of (S_2t, S_2t+1) over all 4^n pairs of subsets of a tiny range(n): every
    record of both samples independently kept with probability q.  With block = 3 half of
    the pairs straddle two blocks; q = 0.2 draws gaps, q = 0.3 one uniform per row."""
    codes = stream_draws(q, n, 100_000, seed=13, block=block).codes()
    pair = codes[0::2] * (1 << n) + codes[1::2]
    bits = (np.arange(1 << 2 * n)[:, None] >> np.arange(2 * n)) & 1
    observed = np.bincount(pair, minlength=1 << 2 * n)
    for rate, ok in ((q, True), (1.1 * q, False)):
        expected = np.prod(np.where(bits == 1, rate, 1.0 - rate), axis=1) * pair.size
        assert (stats.chisquare(observed, expected * (pair.size / expected.sum())).pvalue > P_MIN) == ok


def independence_zs(draws: Draws, block: int) -> list:
    """Lag-1 correlations (sizes; index 0 and n − 1 across consecutive samples, the two ends of
    a cut in the block's process) and same-sample ones, split into pairs within and across blocks."""
    n = draws.n
    first, last, second = draws.holds(0), draws.holds(n - 1), draws.holds(1)
    across = (np.arange(draws.count - 1) % block) == block - 1  # pair (t, t + 1) straddles a cut
    zs = [lag_z(first, last, lag=0), lag_z(first, second, lag=0)]
    for a, b in ((draws.sizes, draws.sizes), (last, first), (first, first), (first, last)):
        for part in (across, ~across):
            zs.append(lag_z(a[:-1][part], b[1:][part], lag=0))
    return zs


@pytest.mark.parametrize("q, n, block", [(0.05, 40, 4), (0.3, 10, 4)])
def test_consecutive_samples_are_independent_within_and_across_blocks(q, n, block):
    draws = stream_draws(q, n, 100_000, seed=14, block=block)
    assert max(abs(z) for z in independence_zs(draws, block)) < Z_MAX


def test_the_independence_test_detects_reused_minibatches():
    """Twin: a stream that repeats its last sample half the time has the right marginal law
    (each sample is a Poisson sample) but dependent consecutive samples."""
    stream = PoissonSampler(0.05).stream(40, np.random.default_rng(15), block=4)
    coins = np.random.default_rng(16).random(100_000) < 0.5
    samples, last = [], stream.next()
    for reuse in coins:
        last = last if reuse else stream.next()
        samples.append(last)
    draws = Draws(samples, 40)
    assert sizes_pvalue(draws.sizes, 40, 0.05) > P_MIN  # marginally fine ...
    assert max(abs(z) for z in independence_zs(draws, 4)) > 10 * Z_MAX  # ... but not independent


def test_stream_top_ups_keep_the_law(monkeypatch):
    # Two gaps per draw: every block is topped up many times.
    monkeypatch.setattr(sampling, "_gap_chunk", lambda mean, rate: 2)
    draws = stream_draws(0.1, 30, 50_000, seed=17, block=7)
    assert sizes_pvalue(draws.sizes, 30, 0.1) > P_MIN
    assert inclusion_pvalue(draws, 0.1) > P_MIN


def test_stream_blocks_start_small_and_stay_bounded():
    q, n = 0.002, 100_000
    stream = PoissonSampler(q).stream(n, np.random.default_rng(18))
    blocks = []
    for _ in range(2_000):
        stream.next()
        if stream._next == 1:
            blocks.append(stream._count)
    assert blocks[:4] == [1, 2, 4, 8]  # the first call draws one sample
    assert max(blocks) == blocks[-1] == int(sampling._STREAM_GAPS / (n * q))  # ~_STREAM_GAPS expected gaps
    tiny = PoissonSampler(1e-9).stream(10, np.random.default_rng(18))
    assert tiny._cap == sampling._STREAM_SAMPLES


@pytest.mark.parametrize("q", [1e-17, 1e-18, 1e-300, 5e-324])
def test_tiny_rates_give_empty_samples_without_overflow(q):
    # indices() summed numpy's Geometric draws (up to ~45/q) in int64: negative indices at 1e-18.
    sampler = PoissonSampler(q)
    rng = np.random.default_rng(19)
    assert all(sampler.indices(10, rng).size == 0 for _ in range(100))
    stream = sampler.stream(10, rng)
    assert all(stream.next().size == 0 for _ in range(10_000))


def test_indices_draws_the_same_numbers_as_before():
    # Values from PoissonSampler.indices before stream() was added (seed 0, two samples each).
    expected = {
        (0.3, 20): [[1, 2, 3, 11, 13, 15, 18], [0, 1, 12]],
        (0.1, 40): [[6, 16, 17, 18, 24], [11, 17, 26, 36]],
        (0.002, 5000): [
            [339, 849, 859, 861, 1136, 1951, 2288, 2666, 4073],
            [132, 505, 558, 1381, 2520, 2796, 4376, 4430, 4570, 4719],
        ],
    }
    for (q, n), samples in expected.items():
        sampler, rng = PoissonSampler(q), np.random.default_rng(0)
        assert [sampler.indices(n, rng).tolist() for _ in samples] == samples


def test_stream_validation():
    sampler = PoissonSampler(0.1)
    with pytest.raises(ValueError, match="n must be"):
        sampler.stream(0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="n must be an integer"):
        sampler.stream(10.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="block must be"):
        sampler.stream(10, np.random.default_rng(0), block=0)
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        sampler.stream(10, np.random.RandomState(0))
    assert repr(sampler.stream(10, np.random.default_rng(0))) == "PoissonStream(rate=0.1, n=10)"


def test_stream_refuses_a_block_beyond_exact_gap_sums():
    """An explicit block must keep block·n ≤ 2^53 (the gap sums are exact there); the default stays below."""
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="2\\*\\*53"):
        PoissonSampler(0.01).stream(1 << 40, rng, block=1 << 14)
    PoissonSampler(0.01).stream(1 << 40, rng, block=1 << 13)
