"""Statistical tests of the mechanisms' noise distributions.

Each goodness-of-fit test uses a fixed seed and rejects at p < 1e-6, so a
correct sampler passes with overwhelming probability, while a scale off by a
factor 2 (or a wrong distribution) gives p-values far below 1e-6 at these
sample sizes.
"""

import numpy as np
import pytest
from scipy import integrate, stats

from dpopt.privacy import BudgetExceededError, FixedSizeSampler, Ledger, PoissonSampler
from dpopt.privacy import events as ev
from dpopt.privacy import mechanisms as mech

P_MIN = 1e-6
N = 200_000


def rng(seed=0):
    return np.random.default_rng(seed)


def test_laplace_noise_distribution_and_charge():
    ledger = Ledger(10.0)
    out = mech.laplace(np.zeros((N // 100, 100)), sensitivity=2.0, epsilon=0.5, ledger=ledger, rng=rng(1))
    assert stats.kstest(out.ravel(), stats.laplace(scale=4.0).cdf).pvalue > P_MIN
    assert stats.kstest(out.ravel(), stats.laplace(scale=2.0).cdf).pvalue < P_MIN
    assert ledger.events == [ev.Laplace(4.0, 2.0)]
    assert ledger.spent().epsilon == pytest.approx(0.5)


def test_gaussian_noise_distribution():
    ledger = Ledger(10.0, 1e-5, "rdp")
    out = mech.gaussian(np.full(N, 3.0), sensitivity=0.5, noise_multiplier=4.0, ledger=ledger, rng=rng(2))
    assert stats.kstest(out - 3.0, stats.norm(scale=2.0).cdf).pvalue > P_MIN
    assert stats.kstest(out - 3.0, stats.norm(scale=1.0).cdf).pvalue < P_MIN
    assert ledger.events == [ev.Gaussian(2.0, 0.5)]


@pytest.mark.parametrize("d", [1, 3, 20])
def test_vector_laplace_radius_and_direction(d):
    scale = 1.5
    out = mech.vector_laplace(np.zeros((N // 4, d)), sensitivity=3.0, scale=scale, ledger=Ledger(5.0), rng=rng(d))
    radius = np.linalg.norm(out, axis=1)
    assert stats.kstest(radius, stats.gamma(a=d, scale=scale).cdf).pvalue > P_MIN
    assert stats.kstest(radius, stats.gamma(a=d, scale=scale / 2).cdf).pvalue < P_MIN
    if d > 1:
        # The first coordinate of a uniform direction u has u_1^2 ~ Beta(1/2, (d-1)/2).
        u1 = out[:, 0] / radius
        assert stats.kstest(u1**2, stats.beta(0.5, (d - 1) / 2).cdf).pvalue > P_MIN
        assert abs(np.mean(np.sign(u1))) < 0.02


def test_exponential_mechanism_frequencies():
    scores = np.array([0.0, 1.0, 2.0, 5.0, -3.0])
    probs = mech.exponential_probabilities(scores, epsilon=1.0, sensitivity=1.0)
    assert np.allclose(probs, np.exp(scores / 2) / np.exp(scores / 2).sum())
    ledger = Ledger(2.0)
    picks = mech.exponential(np.tile(scores, (N, 1)), epsilon=1.0, sensitivity=1.0, ledger=ledger, rng=rng(3))
    counts = np.bincount(picks, minlength=5)
    assert stats.chisquare(counts, N * probs).pvalue > P_MIN
    wrong = mech.exponential_probabilities(scores, epsilon=2.0, sensitivity=1.0)
    assert stats.chisquare(counts, N * wrong).pvalue < P_MIN
    assert ledger.events == [ev.Exponential(1.0)]


def test_exponential_mechanism_is_stable_for_huge_scores():
    scores = np.array([1e6, 1e6 - 2.0, -1e6])
    probs = mech.exponential_probabilities(scores, epsilon=1.0, sensitivity=1.0)
    assert np.all(np.isfinite(probs)) and probs[0] == pytest.approx(1 / (1 + np.exp(-1)))
    picks = mech.exponential(np.tile(scores, (N, 1)), epsilon=1.0, sensitivity=1.0, ledger=Ledger(1.0), rng=rng(4))
    counts = np.bincount(picks, minlength=3)
    assert counts[2] == 0
    assert stats.binomtest(counts[0], N, probs[0]).pvalue > P_MIN


def _first_above_probabilities(queries, threshold_dist, query_dist):
    """P(first index above = i), i = 0..k-1, and P(none), by integrating over the threshold noise."""
    k = len(queries)

    def density(lam, i):
        below = np.prod([query_dist.cdf(lam - q) for q in queries[:i]])
        return threshold_dist.pdf(lam) * below * query_dist.sf(lam - queries[i])

    out = [integrate.quad(density, -np.inf, np.inf, args=(i,), limit=200)[0] for i in range(k)]
    return np.array(out + [1.0 - sum(out)])


@pytest.mark.parametrize(
    "event, dists",
    [
        (ev.AboveThreshold.laplace(0.5, 0.25, sensitivity=1.0), (stats.laplace(scale=2.0), stats.laplace(scale=4.0))),
        (ev.AboveThreshold.gaussian(1.5, 2.0, sensitivity=1.0), (stats.norm(scale=1.5), stats.norm(scale=2.0))),
    ],
)
def test_above_threshold_reuses_one_noisy_threshold(event, dists):
    queries = np.array([-6.0, -3.0, -1.0, 0.5, 2.0])
    expected = _first_above_probabilities(queries, *dists)
    ledger = Ledger(100.0, 1e-6, "rdp")
    first = mech.above_threshold(np.tile(queries, (N, 1)), event=event, ledger=ledger, rng=rng(5))
    counts = np.bincount(np.where(first < 0, len(queries), first), minlength=len(queries) + 1)
    assert stats.chisquare(counts, N * expected).pvalue > P_MIN
    assert ledger.events == [event]

    # The interactive session draws the same distribution.
    session = mech.AboveThresholdSession(event, ledger=ledger, rng=rng(6), batch_shape=(N,))
    result = np.full(N, len(queries))
    for i, q in enumerate(queries):
        fired = session.ask(np.full(N, q))
        result[fired] = i
    counts = np.bincount(result, minlength=len(queries) + 1)
    assert stats.chisquare(counts, N * expected).pvalue > P_MIN


def test_refused_charge_releases_nothing():
    ledger = Ledger(0.1)
    state = rng(7)
    before = state.bit_generator.state
    with pytest.raises(BudgetExceededError):
        mech.laplace(np.zeros(3), sensitivity=1.0, epsilon=0.5, ledger=ledger, rng=state)
    assert state.bit_generator.state == before
    assert ledger.events == []


def test_samplers_charge_their_scheme():
    ledger = Ledger(1.0, relation="replace_one")
    sampler = FixedSizeSampler(10, 1000)
    mech.laplace(np.zeros(2), sensitivity=1.0, epsilon=1.0, ledger=ledger, rng=rng(8), sampler=sampler)
    assert ledger.events == [ev.Subsampled(ev.Laplace(1.0, 1.0), 0.01, "without_replacement")]
    assert ledger.spent().epsilon == pytest.approx(np.log1p(0.01 * np.expm1(1.0)))
    ledger = Ledger(1.0, 1e-5, "rdp")
    mech.gaussian(np.zeros(2), sensitivity=1.0, sigma=2.0, ledger=ledger, rng=rng(9), sampler=PoissonSampler(0.1))
    assert ledger.events == [ev.Subsampled(ev.Gaussian(2.0), 0.1, "poisson")]


@pytest.mark.parametrize("rate", [0.03, 0.4])  # Geometric gaps, one uniform per row
def test_poisson_sampler_sizes_are_binomial(rate):
    sampler = PoissonSampler(rate)
    state = rng(10)
    sizes = np.array([len(sampler.indices(1000, state)) for _ in range(4000)])
    probs = stats.binom(1000, rate).pmf(np.arange(1001))
    keep = probs * 4000 > 5
    counts = np.bincount(sizes, minlength=1001)
    assert stats.chisquare(counts[keep], probs[keep] / probs[keep].sum() * counts[keep].sum()).pvalue > P_MIN
    idx = sampler.indices(1000, state)
    assert np.all(np.diff(idx) > 0) and idx.min() >= 0 and idx.max() < 1000


@pytest.mark.parametrize("rate", [0.1, 0.4])
def test_poisson_sampler_keeps_every_record_independently(rate):
    """Each of n records is kept with probability q, and neighbours (i, i+1) and the first and last
    record jointly with q²: what Poisson sampling (and the accountant) assumes."""
    n, draws = 12, 40_000
    sampler = PoissonSampler(rate)
    state = rng(12)
    kept = np.zeros((draws, n), dtype=bool)
    for r in range(draws):
        kept[r, sampler.indices(n, state)] = True
    for column in (kept, kept[:, :-1] & kept[:, 1:], kept[:, [0]] & kept[:, [-1]]):
        p = rate if column is kept else rate**2
        hits = column.sum(axis=0)
        z = (hits - draws * p) / np.sqrt(draws * p * (1 - p))
        assert np.all(np.abs(z) < 5.0), z


def test_fixed_size_sampler_is_uniform_without_replacement():
    sampler = FixedSizeSampler(5, 20)
    idx = sampler.indices(rng(11), repetitions=20_000)
    assert idx.shape == (20_000, 5)
    assert all(len(set(row)) == 5 for row in idx[:500])
    counts = np.bincount(idx.ravel(), minlength=20)
    assert stats.chisquare(counts).pvalue > P_MIN


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: mech.laplace([np.nan], sensitivity=1.0, epsilon=1.0, ledger=Ledger(1.0), rng=rng()), "value"),
        (lambda: mech.laplace([0.0], sensitivity=0.0, epsilon=1.0, ledger=Ledger(1.0), rng=rng()), "sensitivity"),
        (lambda: mech.laplace([0.0], sensitivity=1.0, epsilon=-1.0, ledger=Ledger(1.0), rng=rng()), "epsilon"),
        (lambda: mech.laplace([0.0], sensitivity=1.0, ledger=Ledger(1.0), rng=rng()), "scale and epsilon"),
        (lambda: mech.gaussian([0.0], sensitivity=1.0, sigma=0.0, ledger=Ledger(1.0, 1e-5, "rdp"), rng=rng()), "sigma"),
        (lambda: mech.exponential([], epsilon=1.0, sensitivity=1.0, ledger=Ledger(1.0), rng=rng()), "scores"),
        (lambda: mech.vector_laplace(1.0, sensitivity=1.0, epsilon=1.0, ledger=Ledger(1.0), rng=rng()), "vector"),
        (lambda: PoissonSampler(0.0), "rate"),
        (lambda: FixedSizeSampler(10, 5), "batch_size"),
    ],
)
def test_bad_input_is_named(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_wrong_types():
    with pytest.raises(TypeError, match="rng"):
        mech.laplace([0.0], sensitivity=1.0, epsilon=1.0, ledger=Ledger(1.0), rng=0)
    with pytest.raises(TypeError, match="ledger"):
        mech.laplace([0.0], sensitivity=1.0, epsilon=1.0, ledger=None, rng=rng())


def test_argument_checks_are_public_and_shared_with_mcmc():
    import dpopt.privacy as privacy

    ledger, state = Ledger(1.0), rng(12)
    assert mech.check_ledger(ledger) is ledger and mech.check_rng(state) is state
    with pytest.raises(TypeError, match="ledger must be"):
        mech.check_ledger(1.0)
    with pytest.raises(TypeError, match="rng must be"):
        mech.check_rng(0)
    # The MCMC exponential mechanism is part of the public privacy layer and uses the same checks.
    assert privacy.mcmc.metropolis_exponential is not None
    with pytest.raises(TypeError, match="rng must be"):
        privacy.mcmc.metropolis_exponential(
            lambda x: -np.abs(x).sum(-1), np.zeros((2, 1)), epsilon=1.0, sensitivity=1.0,
            proposal_std=0.1, steps=10, ledger=ledger, rng=0,
        )  # fmt: skip
    with pytest.raises(ValueError, match=r"steps must be in \[4, 10000000\]"):  # a chain longer than can run
        privacy.mcmc.metropolis_exponential(
            lambda x: -np.abs(x).sum(-1), np.zeros((2, 1)), epsilon=1.0, sensitivity=1.0,
            proposal_std=0.1, steps=10**9, ledger=ledger, rng=np.random.default_rng(0),
        )  # fmt: skip
    assert ledger.events == []


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("batch_shape", [(), (40,)])
def test_session_with_predrawn_noise_answers_as_above_threshold(noise, batch_shape):
    """A session opened for k queries draws their noise with the threshold's, so asking them in
    blocks, only up to the first above the threshold, gives above_threshold's index and leaves the
    generator where above_threshold leaves it."""
    event = (ev.AboveThreshold.laplace(0.5, 0.25, sensitivity=1.0) if noise == "laplace"
             else ev.AboveThreshold.gaussian(1.5, 2.0, sensitivity=1.0))
    k = 9
    for seed in range(30):
        queries = rng(100 + seed).normal(-4.0, 3.0, size=batch_shape + (k,))
        eager_rng, lazy_rng = rng(seed), rng(seed)
        eager = mech.above_threshold(queries, event=event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=eager_rng)
        ledger = Ledger(1e3, 1e-6, "rdp")
        session = mech.AboveThresholdSession(event, ledger=ledger, rng=lazy_rng, batch_shape=batch_shape,
                                             queries=k)
        assert ledger.events == [event]  # charged when the session opens
        index, start = np.full(batch_shape, -1), 0
        for size in (1, 3, 5):
            found = session.ask_block(queries[..., start : start + size])
            index = np.where(found >= 0, start + found, index)
            start += size
            if not session.active.any():
                break
        np.testing.assert_array_equal(index, eager)
        assert lazy_rng.random() == eager_rng.random()
    with pytest.raises(RuntimeError, match="opened for 9 queries"):
        session = mech.AboveThresholdSession(event, ledger=ledger, rng=rng(1), batch_shape=batch_shape,
                                             queries=k)
        session.ask_block(np.full(batch_shape + (k + 1,), -1e9))
    with pytest.raises(ValueError, match="queries must be an integer >= 1"):
        mech.AboveThresholdSession(event, ledger=ledger, rng=rng(1), queries=0)


def test_session_ask_block_without_predrawn_noise_is_ask_one_at_a_time():
    event = ev.AboveThreshold.laplace(0.5, 0.25, sensitivity=1.0)
    queries = rng(3).normal(-3.0, 3.0, size=(50, 6))
    out = []
    for blocks in ((6,), (1,) * 6):
        gen = rng(4)
        session = mech.AboveThresholdSession(event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=gen, batch_shape=(50,))
        index, start = np.full(50, -1), 0
        for size in blocks:
            if not session.active.any():
                break
            found = session.ask_block(queries[:, start : start + size])
            index = np.where(found >= 0, start + found, index)
            start += size
        out.append((index, gen.random()))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert out[0][1] == out[1][1]
    with pytest.raises(ValueError, match="NaN or infinite"):
        mech.AboveThresholdSession(event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(1)).ask_block([np.nan])


def test_sampler_wraps_the_same_event_object_once():
    sampler = PoissonSampler(0.01)
    inner = ev.Gaussian(2.0, 1.0)
    wrapped = sampler.wrap(inner)
    assert wrapped == ev.Subsampled(inner, 0.01, "poisson") and sampler.wrap(inner) is wrapped
    other = sampler.wrap(ev.Gaussian(3.0, 1.0))
    assert other is not wrapped and other == ev.Subsampled(ev.Gaussian(3.0, 1.0), 0.01, "poisson")
    assert sampler.wrap(ev.Gaussian(2.0, 1.0)) == wrapped  # an equal event, another object: an equal value
    fixed = FixedSizeSampler(10, 100)
    assert fixed.wrap(inner) is fixed.wrap(inner)
    assert fixed.wrap(inner) == ev.Subsampled(inner, 0.1, "without_replacement")


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_one_search_asked_in_chunks_is_above_threshold(noise):
    """One search asked in chunks up to the first query above the threshold — by
    ``above_threshold_first`` (the line search's path; chunks 3, 6, 12 and 1, 1, 1, …) and by a
    session opened for 15 queries (blocks 3, 6, 6) — returns the index above_threshold gives on the
    same queries from a generator of the same seed, leaves that generator where above_threshold
    leaves it, and computes no answer after the first above; a batch of R searches in one session
    agrees row by row."""
    event = (ev.AboveThreshold.laplace(0.5, 0.25, sensitivity=1.0) if noise == "laplace"
             else ev.AboveThreshold.gaussian(1.5, 2.0, sensitivity=1.0))
    k, blocks, seeds = 15, (3, 6, 6), 120

    def ask(session, queries):
        index, start = np.full(session.batch_shape, -1), 0
        for size in blocks:
            found = session.ask_block(queries[..., start : start + size])
            index = np.where(found >= 0, start + found, index)
            start += size
            if not session.active.any():
                break
        return index

    ladder = np.linspace(-9.0, 3.0, k)  # Armijo-like: the later candidates are more likely above
    all_queries = ladder + rng(99).normal(0.0, 2.0, size=(seeds, k))
    all_queries[::10] -= 40.0  # searches that find nothing
    all_queries[1::10] += 12.0  # and searches that stop at once
    found = []
    for seed in range(seeds):
        queries = all_queries[seed]
        gen = rng(seed)
        eager = int(mech.above_threshold(queries, event=event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=gen))
        after = gen.random()
        session = mech.AboveThresholdSession(event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(seed), queries=k)
        index = ask(session, queries)
        assert index.shape == () and int(index) == eager, seed
        if index >= 0:  # halted after the first above: no further question
            with pytest.raises(RuntimeError, match="already halted"):
                session.ask_block(queries[:1])
        for first, growth in ((3, 2), (1, 1), (4, 1)):
            asked = []

            def answers(start, stop, asked=asked, queries=queries):
                asked.append((start, stop))
                return queries[start:stop].copy()

            gen = rng(seed)
            ledger = Ledger(1e3, 1e-6, "rdp")
            got = mech.above_threshold_first(answers, k, event=event, ledger=ledger, rng=gen,
                                             first_chunk=first, growth=growth)
            assert got == eager and gen.random() == after, (seed, first, growth)
            assert ledger.events == [event]
            assert asked[0][0] == 0 and all(a[1] == b[0] for a, b in zip(asked, asked[1:], strict=False))
            last = asked[-1]
            assert (last[0] <= got < last[1]) if got >= 0 else last[1] == k  # nothing after the first above
        found.append(eager)
    hits = np.array(found)
    # the seeds stop in each of the three blocks, and some nowhere
    assert np.any(hits == -1) and np.any((0 <= hits) & (hits < 3))
    assert np.any((3 <= hits) & (hits < 9)) and np.any(hits >= 9)
    # R searches in one session, the same blocks
    eager = mech.above_threshold(all_queries, event=event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(5))
    session = mech.AboveThresholdSession(event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(5),
                                         batch_shape=(seeds,), queries=k)
    np.testing.assert_array_equal(ask(session, all_queries), eager)


def test_above_threshold_first_refuses_bad_answers():
    event = ev.AboveThreshold.laplace(0.5, 0.25, sensitivity=1.0)
    for bad in ([-50.0, np.nan, -50.0], [np.inf, -50.0, -50.0], [-np.inf, -50.0, -50.0]):
        with pytest.raises(ValueError, match="NaN or infinite") as info:
            mech.above_threshold_first(lambda a, b, bad=bad: np.array(bad)[a:b], 3, event=event,
                                       ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(0), first_chunk=3)
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="must have shape"):
        mech.above_threshold_first(lambda a, b: np.full(2, -50.0), 3, event=event,
                                   ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(0), first_chunk=3)
    for queries in (0, 2.5, True):
        with pytest.raises(ValueError, match="queries must be an integer"):
            mech.above_threshold_first(lambda a, b: np.zeros(b - a), queries, event=event,
                                       ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(0))
    ledger = Ledger(1e-3, 1e-6, "rdp")  # too small: refused before any answer is computed
    with pytest.raises(BudgetExceededError):
        mech.above_threshold_first(lambda a, b: pytest.fail("asked"), 3, event=event, ledger=ledger, rng=rng(0))
    assert ledger.events == []


def test_one_search_session_refuses_bad_blocks():
    event = ev.AboveThreshold.laplace(0.5, 0.25, sensitivity=1.0)

    def opened():
        return mech.AboveThresholdSession(event, ledger=Ledger(1e3, 1e-6, "rdp"), rng=rng(0), queries=6)

    for bad in ([-50.0, np.nan, -50.0], [np.inf], [-np.inf, -50.0]):
        with pytest.raises(ValueError, match="NaN or infinite") as info:
            opened().ask_block(bad)
        assert "\n" not in str(info.value)
    with pytest.raises(RuntimeError, match="opened for 6 queries"):
        opened().ask_block(np.full(7, -1e9))
    session = opened()
    assert session.ask_block(np.full(4, -1e9)) == -1
    with pytest.raises(RuntimeError, match="opened for 6 queries"):
        session.ask_block(np.full(3, -1e9))  # 4 + 3 > 6
    assert session.ask_block(np.full(2, 1e9)) == 0  # the remaining two still fit; the first is above
    with pytest.raises(ValueError, match="k >= 1"):
        opened().ask_block(np.zeros(0))


@pytest.mark.parametrize("event", [ev.Gaussian(2.0, 1.0), ev.Laplace(3.0, 1.0), ev.VectorLaplace(1.5, 1.0)])
def test_release_charged_is_release_with_its_checks_made_once(event):
    """The oracles' per-release path: the numbers and the charge of ``release`` with the caller's sampler."""
    sampler, value = PoissonSampler(0.1), np.arange(6.0)
    a, b = Ledger(1e3, 1e-5, "rdp"), Ledger(1e3, 1e-5, "rdp")
    expected = mech.release(value, event, ledger=a, rng=rng(3), sampler=sampler)
    got = mech.release_charged(value, event, sampler.wrap(event), ledger=b, rng=rng(3))
    assert np.array_equal(got, expected)
    assert b.events == a.events == [sampler.wrap(event)]


def test_release_charged_refuses_a_non_finite_value_before_charging():
    ledger, state = Ledger(10.0), rng(4)
    before = state.bit_generator.state
    with pytest.raises(ValueError, match="NaN or infinite"):
        mech.release_charged(np.array([0.0, np.inf]), ev.Laplace(1.0, 1.0), ev.Laplace(1.0, 1.0), ledger=ledger,
                             rng=state)
    with pytest.raises(BudgetExceededError):
        mech.release_charged(np.zeros(2), ev.Laplace(0.01, 1.0), ev.Laplace(0.01, 1.0), ledger=ledger, rng=state)
    assert ledger.events == [] and state.bit_generator.state == before


def test_release_charged_refuses_a_charge_that_is_not_the_release_s_event():
    """release_charged trusted its caller that ``charged`` is ``event`` (or its sampler's wrapping of it): charged a
    Laplace of epsilon 0.001, it released the noise of a Laplace of epsilon 1000.  Another event is refused before
    anything is charged or drawn."""
    ledger, state = Ledger(10.0), rng(4)
    before = state.bit_generator.state
    release = ev.Laplace(0.001, 1.0)
    for charged in (ev.Laplace(1000.0, 1.0), ev.Subsampled(ev.Laplace(1000.0, 1.0), 0.1, "poisson"),
                    ev.PureDP(0.001)):
        with pytest.raises(ValueError, match=r"^charged must be the released event or its sampler's wrapping"):
            mech.release_charged(np.zeros(2), release, charged, ledger=ledger, rng=state)
    assert ledger.events == [] and state.bit_generator.state == before
    wrapped = ev.Subsampled(ev.Laplace(1.0, 1.0), 0.1, "poisson")
    mech.release_charged(np.zeros(2), ev.Laplace(1.0, 1.0), wrapped, ledger=ledger, rng=state)  # an equal event
    assert ledger.events == [wrapped]
