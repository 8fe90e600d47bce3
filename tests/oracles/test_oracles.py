"""The private-data-access layer: one gradient step, the public normalizer, the ledger handed down."""

import math

import numpy as np
import pytest
from scipy import stats

from dpopt.linesearch import baselines as B
from dpopt.linesearch.algorithms import dp_blgd, dp_blsgd
from dpopt.models import LinearModel, PrivateModel
from dpopt.oracles import (
    Normalizer,
    PrivateOracle,
    count_sigma,
    gaussian_sigma,
    public_normalizer,
    run_ledger,
)
from dpopt.privacy import BudgetExceededError, Ledger
from dpopt.privacy import events as ev

C = 1.0


def neighbours(n=40, d=3):
    """D: n copies of a record whose clipped gradient is C·v at w = 0; D′ adds one with gradient −C·v.

    At w = 0 the logistic loss has φ′ = −y/2, so the per-example gradient is −y x/2;
    rows of norm 4 make it 2 ≥ C: every gradient is clipped to norm C.
    """
    x = np.zeros(d)
    x[0] = 4.0
    X = np.tile(x, (n, 1))
    y = np.ones(n)
    return (X, y), (np.vstack([X, x]), np.append(y, -1.0))


def one_step(data, seed, method, **hyper):
    X, y = data
    model = LinearModel("logistic", X, y)
    if method == "dp-sgd":
        res = B.dp_sgd(model, epsilon=1.0, delta=1e-6, rng=seed, steps=1, rate=1.0, lr=1.0,
                       c_grad=C, **hyper)
        return -res.x, res  # w₁ = −(S + ξ)/N: the released mean gradient (no regularizer)
    res = B.dp_agd(model, epsilon=1.0, delta=1e-6, rng=seed, c_grad=C, max_iter=1, **hyper)
    return res, res


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_released_mean_gradient_moves_at_most_the_charged_sensitivity(seed):
    """Issue 14, finding 3: with the same noise draw, the released mean gradient of two add/remove
    neighbours may differ by at most the charged C/N.  Normalizing by the data's own n moved it by
    2C/(n+1) (ratio ≈ 1.95 here); a public N keeps the ratio at 1."""
    n_public = 40
    d, d_prime = neighbours(n=40)
    g, res = one_step(d, seed, "dp-sgd", n_public=n_public)
    g_prime, res_prime = one_step(d_prime, seed, "dp-sgd", n_public=n_public)
    charged = res.events[0]
    assert charged == ev.Gaussian(res.info["sigma"], C)  # sensitivity C on the sum, noise σ
    norm = res.info["normalizer"]["count"]
    assert norm == res_prime.info["normalizer"]["count"] == n_public
    shift = np.linalg.norm(g - g_prime)
    assert shift * norm / charged.sensitivity <= 1.0 + 1e-9


def test_without_a_declared_count_the_count_is_released_first():
    """No n_public: the normalizer is a noisy count charged before anything else, never model.n."""
    (X, y), _ = neighbours(n=200)
    model = LinearModel("logistic", X, y, l2=1e-3)
    for fit in (lambda: dp_blgd(model, epsilon=0.5, delta=1e-6, rng=3, max_iter=2),
                lambda: dp_blsgd(model, epsilon=0.5, delta=1e-6, rng=3, max_iter=2),
                lambda: B.dp_sgd(model, epsilon=0.5, delta=1e-6, rng=3, steps=3),
                lambda: B.dp_agd(model, epsilon=0.5, delta=1e-6, rng=3, max_iter=2)):
        res = fit()
        assert res.events[0] == ev.Gaussian(count_sigma(0.5, 1e-6), 1.0)
        normalizer = res.info["normalizer"]
        assert normalizer["source"] == "noisy_count" and normalizer["count"] != model.n
        assert res.privacy.epsilon <= 0.5 * (1 + 1e-9)


def test_noisy_count_has_the_stated_noise():
    """The count's noise is N(0, σ_c²) (KS, p > 1e-6); half of it is rejected."""
    (X, y), _ = neighbours(n=100)
    model = LinearModel("logistic", X, y)
    rng = np.random.default_rng(11)
    eps, delta = 2.0, 1e-6  # σ_c ≈ 16: the clamp at 1 record never acts
    sigma = count_sigma(eps, delta)
    ledger = Ledger(1e9, 1e-6, "rdp")
    draws = np.array([public_normalizer(model, ledger=ledger, rng=rng, epsilon=eps, delta=delta).count
                      for _ in range(2000)]) - model.n
    assert stats.kstest(draws, stats.norm(scale=sigma).cdf).pvalue > 1e-6
    assert stats.kstest(draws, stats.norm(scale=sigma / 2).cdf).pvalue < 1e-6


def test_declared_count_costs_nothing_and_model_declaration_is_used():
    (X, y), _ = neighbours(n=30)
    ledger = Ledger(1.0, 1e-6, "rdp")
    model = LinearModel("logistic", X, y, n_public=1000)
    got = public_normalizer(model, ledger=ledger, rng=np.random.default_rng(0), epsilon=1.0, delta=1e-6)
    assert got == Normalizer(1000.0, "declared") and ledger.events == []
    got = public_normalizer(model, n_public=77, ledger=ledger, rng=np.random.default_rng(0),
                            epsilon=1.0, delta=1e-6)
    assert got.count == 77.0
    with pytest.raises(ValueError, match="n_public"):
        public_normalizer(LinearModel("logistic", X, y), ledger=Ledger(1.0), rng=np.random.default_rng(0),
                          epsilon=1.0, delta=0.0)


def test_armijo_and_regularizer_terms_use_the_public_weight():
    """NoisyBTLS's Armijo slope and regularizer are weighted by q·N for both neighbours alike."""
    d, d_prime = neighbours(n=50)
    w, g = np.array([0.3, 0.1, -0.2]), np.array([1.0, 0.0, 0.5])
    rays = []
    for X, y in (d, d_prime):
        model = LinearModel("logistic", X, y, l2=0.1)
        oracle = PrivateOracle(model, ledger=Ledger(1.0, 1e-6, "rdp"), rng=np.random.default_rng(0),
                               normalizer=Normalizer(60.0, "declared"), c_grad=C, c_obj=0.5)
        rays.append(oracle.ray(w, g))
    steps = np.array([0.0, 0.1, 0.5, 1.0])
    assert rays[0].slope == rays[1].slope == pytest.approx(60.0 * (g @ g))
    # one record moves every query by at most C_obj (its own clipped loss)
    assert np.all(np.abs(rays[0].at(steps) - rays[1].at(steps)) <= 0.5 + 1e-12)


def test_one_gradient_step_for_gaussian_and_laplace():
    (X, y), _ = neighbours(n=20)
    model = LinearModel("logistic", X, y, l2=0.5)
    ledger = Ledger(1e9, 1e-6, "rdp")
    oracle = PrivateOracle(model, ledger=ledger, rng=np.random.default_rng(1), normalizer=25, c_grad=C)
    w = np.array([0.1, 0.2, 0.3])
    total, _ = model.per_example_clipped_grad_sum(w, None, C)
    exact = total / 25 + model.regularizer_grad(w)
    draws = np.array([oracle.gaussian_gradient(w, 2.0) for _ in range(2000)]) - exact
    assert stats.kstest(draws.ravel(), stats.norm(scale=2.0 / 25).cdf).pvalue > 1e-6
    assert ledger.events[-1] == ev.Gaussian(2.0, C)
    assert oracle.describe()["normalizer"] == {"count": 25.0, "source": "declared"}
    pure = Ledger(1e9)
    lap = PrivateOracle(model, ledger=pure, rng=np.random.default_rng(2), normalizer=25, c_grad=C)
    draws = np.array([lap.laplace_gradient(w, 3.0) for _ in range(2000)]) - exact
    assert stats.kstest(draws.ravel(), stats.laplace(scale=3.0 / 25).cdf).pvalue > 1e-6
    assert stats.kstest(draws.ravel(), stats.laplace(scale=1.5 / 25).cdf).pvalue < 1e-6
    assert pure.events[-1] == ev.Laplace(3.0, math.sqrt(3) * C)  # ‖v‖₁ ≤ √d‖v‖₂
    assert gaussian_sigma(0.5, 2.0) == pytest.approx(2.0)


def test_ledger_is_handed_down_and_refuses_before_release():
    (X, y), _ = neighbours(n=200)
    model = LinearModel("logistic", X, y, l2=1e-3, n_public=200)
    ledger = Ledger(0.4, 1e-6, "rdp")
    res = dp_blsgd(model, ledger=ledger, rng=0, max_iter=5)
    assert res.events == ledger.events and len(ledger.events) > 0
    small = Ledger(0.1)
    with pytest.raises(BudgetExceededError):  # refused before anything is drawn or logged
        B.majority(model, epsilon=0.5, ledger=small, rng=0)
    assert small.events == []
    shared = Ledger(0.3, 1e-6, "rdp")  # a run given a ledger calibrates to what is left of it
    first = B.dp_sgd(model, ledger=shared, epsilon=0.15, rng=0, steps=5)
    second = B.dp_sgd(model, ledger=shared, rng=1, steps=5)
    assert len(first.events) == 5 and second.events == shared.events and len(shared.events) == 10
    assert shared.spent().epsilon <= 0.3 * (1 + 1e-9)
    with pytest.raises(ValueError, match="relation"):
        dp_blgd(model, ledger=Ledger(1.0, 1e-6, "rdp", relation="replace_one"), rng=0)
    with pytest.raises(TypeError, match="epsilon"):
        dp_blgd(model, rng=0)
    made, eps, delta = run_ledger(None, 0.3, 1e-6, accountant="rdp")
    assert (made.epsilon, made.delta, eps, delta) == (0.3, 1e-6, 0.3, 1e-6)


def test_oracle_accepts_any_model_of_the_contract():
    """A model that only implements the contract (as a PyTorch module or a node's shard would)."""

    class Scaled(PrivateModel):
        def __init__(self, inner):
            self.inner = inner

        n = property(lambda self: self.inner.n)
        dim = property(lambda self: self.inner.dim)

        def per_example_clipped_grad_sum(self, w, indices, clip):
            return self.inner.per_example_clipped_grad_sum(w, indices, clip)

        def clipped_loss_sum(self, w, indices, cap):
            return self.inner.clipped_loss_sum(w, indices, cap)

        def loss_value(self, w):
            return self.inner.loss_value(w)

        def loss_grad(self, w):
            return self.inner.loss_grad(w)

    (X, y), _ = neighbours(n=30)
    inner = LinearModel("logistic", X, y)
    model = Scaled(inner)
    res = dp_blgd(model, epsilon=1.0, delta=1e-6, rng=0, n_public=30, query="objective", max_iter=3)
    ref = dp_blgd(inner, epsilon=1.0, delta=1e-6, rng=0, n_public=30, query="objective", max_iter=3)
    np.testing.assert_allclose(res.x, ref.x)
    assert res.events == ref.events


def test_every_linesearch_entry_point_accepts_a_ledger():
    """The algorithms and the baselines spend from a ledger handed down (issue 15 §1)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X[:, 0] + 0.3 * rng.logistic(size=300) > 0, 1.0, -1.0)
    model = LinearModel("logistic", X, y, l2=0.1, data_norm=1.0, n_public=300)
    add_remove = {"dp-blsgd": dp_blsgd, "dp-blgd": dp_blgd, "dp-sgd": B.dp_sgd, "dp-agd": B.dp_agd}
    for name, fit in add_remove.items():
        accountant = "zcdp" if name == "dp-agd" else "rdp"
        ledger = Ledger(0.5, 1e-6, accountant)
        res = fit(model, ledger=ledger, rng=1, **({"max_iter": 3} if name != "dp-sgd" else {"steps": 3}))
        assert res.events == ledger.events and ledger.spent().epsilon <= 0.5 * (1 + 1e-9), name
    for fit in (B.objective_perturbation, B.output_perturbation):
        ledger = Ledger(0.5, relation="replace_one")
        res = fit(model, ledger=ledger, rng=1)
        assert res.events == ledger.events and ledger.spent().epsilon <= 0.5 * (1 + 1e-9)
    ledger = Ledger(0.5)
    assert B.majority(model, ledger=ledger, rng=1).events == ledger.events == [ev.Exponential(0.5)]
    assert B.non_private(model, ledger=ledger).events == []


def test_lazy_chunks_ask_the_same_queries_with_the_same_noise(monkeypatch):
    """Evaluating candidates in chunks changes neither the answer nor the random stream."""
    import dpopt.oracles.line_search as ls

    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    model = LinearModel("logistic", X, y, l2=0.01)
    W = rng.normal(size=(50, 3))
    G = rng.normal(size=(50, 3))
    steps = np.broadcast_to(4.0 * 0.7 ** np.arange(9), (50, 9)).copy()
    out = {}
    for chunk in (1, 3, 9):
        monkeypatch.setattr(ls, "LAZY_CHUNK", chunk)
        gen = np.random.default_rng(7)
        ledger = Ledger(1e6)
        ray = ls.Ray.of_model(model, W, G, cap=0.5, weight=200.0, query="decrease")
        index = ls.above_threshold_search(ray, steps, alpha=0.5, budget=0.3, ledger=ledger, rng=gen,
                                          lazy=True)
        out[chunk] = (index, ledger.events, gen.random())
    for chunk in (3, 9):
        np.testing.assert_array_equal(out[chunk][0], out[1][0])
        assert out[chunk][1] == out[1][1] and out[chunk][2] == out[1][2]
    assert len(set(out[1][0].tolist())) > 2  # the searches stop at different candidates


def test_accelerated_minimize_spends_from_a_given_ledger():
    from dpopt import accelerated
    from dpopt.objectives import L2, Objective

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    objective = Objective("logistic", X, y, L2(0.01))
    ledger = Ledger(1.0, relation="replace_one")
    res = accelerated.minimize(objective, np.zeros(3), 0.6, "dp-gd", feature_bound=3.0, iterations=5,
                               L=2.5, rng=1, ledger=ledger)
    assert res.events == ledger.events and ledger.spent().epsilon == pytest.approx(0.6, rel=1e-9)
    before = list(ledger.events)
    with pytest.raises(BudgetExceededError):  # 0.6 more does not fit what is left, refused up front
        accelerated.minimize(objective, np.zeros(3), 0.6, "dp-gd", feature_bound=3.0, iterations=5,
                             L=2.5, rng=1, ledger=ledger)
    assert ledger.events == before
    with pytest.raises(ValueError, match="relation"):
        accelerated.minimize(objective, np.zeros(3), 0.6, "dp-gd", feature_bound=3.0, iterations=5,
                             L=2.5, rng=1, ledger=Ledger(1.0))


def _sampling_oracle(seed, *, n=2000, rate=0.05, query="objective", l2=1e-2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    model = LinearModel("logistic", X, y, l2=l2)
    return PrivateOracle(model, ledger=Ledger(1.0, 1e-6, "rdp"), rng=np.random.default_rng(seed),
                         normalizer=n, rate=rate, c_grad=1.0, c_obj=0.7, query=query)


def test_poisson_batches_are_one_seeded_stream_of_sorted_distinct_indices():
    """PrivateOracle.batch draws the successive samples of one PoissonSampler.stream from its generator:
    the same seed gives the same batches (those of the stream itself), successive batches differ, and
    each is a sorted array of distinct int indices in range(n)."""
    from dpopt.privacy import PoissonSampler

    n, rate, count = 2000, 0.05, 12  # 12 batches: the stream's blocks of 1, 2, 4 and 8 samples
    first, second = _sampling_oracle(7), _sampling_oracle(7)
    batches = [first.batch().copy() for _ in range(count)]
    again = [second.batch().copy() for _ in range(count)]
    stream = PoissonSampler(rate).stream(n, np.random.default_rng(7))
    expected = [stream.next().copy() for _ in range(count)]
    for got, twin, want in zip(batches, again, expected, strict=True):
        np.testing.assert_array_equal(got, twin)
        np.testing.assert_array_equal(got, want)
        assert got.dtype.kind == "i" and got.ndim == 1
        assert np.all(np.diff(got) > 0) and got[0] >= 0 and got[-1] < n
        assert 50 <= got.size <= 150  # about q·n = 100 records each
    assert all(not np.array_equal(a, b) for a, b in zip(batches[:-1], batches[1:], strict=True))
    other = _sampling_oracle(8)
    assert not np.array_equal(other.batch(), batches[0])  # another seed, another sequence


@pytest.mark.parametrize("query", ["objective", "decrease"])
@pytest.mark.parametrize("batched", [False, True], ids=["one", "batched"])
def test_oracle_ray_over_its_batch_equals_ray_of_model(query, batched):
    """The oracle's unchecked ray (``_ray``, the line search's path) over the indices it drew gives the
    very queries of the public ``Ray.of_model`` over the same indices (and ``oracle.ray``)."""
    from dpopt.oracles import Ray, armijo_queries

    oracle = _sampling_oracle(3, query=query)
    rng = np.random.default_rng(4)
    w, g = (rng.normal(size=(2, 3)), rng.normal(size=(2, 3))) if batched else (rng.normal(size=3),
                                                                                 rng.normal(size=3))
    steps = np.array([2.0, 1.0, 0.5, 0.25, 0.1])
    if batched:
        steps = np.stack([steps, 3.0 * steps])
    indices = oracle.batch(w)
    rays = [oracle._ray(w, g, indices), oracle.ray(w, g, indices),
            Ray.of_model(oracle.model, w, g, cap=oracle.c_obj, indices=indices, weight=oracle.weight,
                         query=query)]
    want = armijo_queries(rays[-1], steps, 0.3)
    for ray in rays:
        np.testing.assert_array_equal(ray.at(steps), rays[-1].at(steps))
        np.testing.assert_array_equal(ray.origin, rays[-1].origin)
        np.testing.assert_array_equal(ray.slope, rays[-1].slope)
        np.testing.assert_array_equal(armijo_queries(ray, steps, 0.3), want)
    # and not a ray over other records
    other = Ray.of_model(oracle.model, w, g, cap=oracle.c_obj, indices=oracle.batch(w), weight=oracle.weight,
                         query=query)
    assert not np.array_equal(armijo_queries(other, steps, 0.3), want)


@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_one_search_answers_as_above_threshold_over_the_ladder_and_asks_no_further(monkeypatch, lazy, noise):
    """One search, lazy or not, gives the index ``above_threshold`` gives on all the ladder's queries
    from a generator in the same state, charges the same event, leaves the generator where it leaves
    it, and evaluates candidates only up to the first above the threshold: one per pass when lazy,
    3, 6, 12, … otherwise."""
    import dpopt.oracles.line_search as ls
    from dpopt.privacy import mechanisms as mech

    passes = []
    chunked = ls._chunked_queries

    def recording(ray, steps, alpha):
        queries = chunked(ray, steps, alpha)

        def asked(start, stop):
            passes.append((start, stop))
            return queries(start, stop)
        return asked

    monkeypatch.setattr(ls, "_chunked_queries", recording)
    rng = np.random.default_rng(5)
    n, d = 240, 4
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    model = LinearModel("logistic", X, y, l2=0.01)
    steps = 3.0 * 0.7 ** np.arange(12)
    budget, found = (0.8 if noise == "laplace" else 0.05), set()
    for seed in range(40):
        w, g = rng.normal(size=d), rng.normal(size=d)
        ray = ls.Ray.of_model(model, w, g, cap=1.0, weight=float(n), query="decrease")
        event = ls.line_search_event(budget, ray.sensitivity, noise)
        want_ledger, want_rng = Ledger(1e6, 1e-3, "rdp"), np.random.default_rng(seed)
        want = mech.above_threshold(ls._queries(ray, steps, 0.5), event=event, ledger=want_ledger, rng=want_rng)
        passes.clear()
        got_ledger, got_rng = Ledger(1e6, 1e-3, "rdp"), np.random.default_rng(seed)
        got = ls.above_threshold_search(ray, steps, alpha=0.5, budget=budget, noise=noise, ledger=got_ledger,
                                        rng=got_rng, lazy=lazy)
        assert int(got) == int(want) and got_ledger.events == want_ledger.events == [event]
        assert got_rng.random() == want_rng.random()
        last = int(want) + 1 if want >= 0 else steps.size
        sizes = [stop - start for start, stop in passes]
        assert passes[0][0] == 0 and all(a[1] == b[0] for a, b in zip(passes, passes[1:], strict=False))
        assert passes[-1][1] >= last and passes[-1][0] < last  # nothing asked past the first above
        assert sizes == ([1] * last if lazy else [min(c, steps.size - s) for s, c in
                                                  zip([0, 3, 9], [3, 6, 12], strict=False)][: len(sizes)])
        found.add(int(want))
    assert len(found) > 3  # the searches stop at different candidates, some fail


@pytest.mark.parametrize("indices", [np.zeros((2, 3), dtype=int), np.array([0.0, 1.0, 5.0]),
                                     np.array([True, False])], ids=["2-D", "float", "bool"])
def test_ray_of_model_rejects_bad_indices_in_one_line(indices):
    from dpopt.oracles import Ray

    oracle = _sampling_oracle(5)
    with pytest.raises(ValueError, match="indices must be a 1-D integer array") as info:
        Ray.of_model(oracle.model, np.zeros(3), np.ones(3), cap=1.0, indices=indices, weight=100.0)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("query", ["objective", "decrease"])
@pytest.mark.parametrize("l2", [0.0, 0.05], ids=["mu0", "mu"])
@pytest.mark.parametrize("batched", [False, True], ids=["one", "batched"])
def test_chunked_queries_are_the_plain_armijo_queries(query, l2, batched):
    """``_chunked_queries(ray, steps, α)(start, stop)`` (the public quadratic K₀ + η(K₁ + K₂η) for the
    whole ladder, the clipped sum per chunk) equals q = f(w) − α η ‖g‖² − f(w − η g) (``_queries``) on
    ``steps[..., start:stop]``, for rays of ``Ray.of_model`` with and without the regularizer."""
    from dpopt.oracles import Ray
    from dpopt.oracles.line_search import _chunked_queries, _queries

    rng = np.random.default_rng(21)
    n, d = 300, 4
    X = rng.normal(scale=2.0, size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    model = LinearModel("logistic", X, y, l2=l2)
    ladder = 2.0 * 0.6 ** np.arange(15)
    if batched:
        w, g = rng.normal(size=(3, d)), rng.normal(size=(3, d))
        steps = np.stack([ladder, 0.5 * ladder, 3.0 * ladder])
    else:
        w, g, steps = rng.normal(size=d), rng.normal(size=d), ladder
    idx = np.sort(rng.choice(n, 120, replace=False))
    ray = Ray.of_model(model, w, g, cap=1.3, indices=idx, weight=110.0, query=query)
    alpha = 0.3
    queries = _chunked_queries(ray, steps, alpha)
    for start, stop in ((0, 3), (3, 9), (9, 15), (0, 15), (6, 7), (14, 15)):
        got = queries(start, stop)
        want = _queries(ray, steps[..., start:stop], alpha)
        assert got.shape == want.shape == steps[..., start:stop].shape
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_record_whose_margins_overflow_raises_nothing_and_keeps_every_term_clipped():
    """Without a declared data_norm a record can make X w overflow (inf − inf = NaN in a margin):
    its clipped terms stay within their ranges (NaN -> the range's end), so whether such a record
    is in the minibatch changes no error and no structure of the output (privacy review finding)."""
    X = np.array([[1.0, 0.0], [0.5, 0.5], [1e300, -1e300]])
    y = np.array([1.0, -1.0, 1.0])
    steps = np.array([1.0, 0.5, 0.25])
    answers = []
    for rows in (2, 3):  # neighbours: the extreme record removed / present
        model = LinearModel("logistic", X[:rows], y[:rows])
        oracle = PrivateOracle(model, ledger=Ledger(10.0, 1e-6, "rdp"), rng=np.random.default_rng(0),
                               normalizer=3, c_grad=1.0, c_obj=1.0, query="decrease")
        with np.errstate(all="ignore"):
            g = oracle.noisy_gradient(np.array([1e9, 1e9]), 0.1)
            index = oracle.line_search(np.zeros(2), np.array([1e9, -1e9]), steps, alpha=0.5, budget=0.1)
            values = model.clipped_decrease_along(np.zeros(2), np.array([1e9, -1e9]), None, 1.0)(steps)
            losses = model.clipped_loss_along(np.zeros(2), np.array([1e9, -1e9]), None, 1.0)(steps)
            total, _ = model.per_example_clipped_grad_sum(np.array([1e9, -1e9]), None, 1.0)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(total)) and -1 <= int(index) < 3
        assert np.all(np.isfinite(values)) and np.all(np.isfinite(losses))
        answers.append((values, losses))
    # the added record moves each clipped sum by at most the cap
    assert np.all(np.abs(answers[1][0] - answers[0][0]) <= 1.0)
    assert np.all(np.abs(answers[1][1] - answers[0][1]) <= 1.0)


def test_a_subclass_overriding_a_query_is_what_the_oracle_calls():
    """A LinearModel subclass that overrides a public query (and not its unchecked twin) is not
    bypassed by the oracle's fast path."""
    calls = []

    class Counting(LinearModel):
        def per_example_clipped_grad_sum(self, w, indices, clip):
            calls.append("grad")
            return super().per_example_clipped_grad_sum(w, indices, clip)

        def clipped_decrease_along(self, w, direction, indices, cap):
            calls.append("decrease")
            return super().clipped_decrease_along(w, direction, indices, cap)

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    model = Counting("logistic", X, np.where(X[:, 0] > 0, 1.0, -1.0), data_norm=1.0)
    oracle = PrivateOracle(model, ledger=Ledger(10.0, 1e-6, "rdp"), rng=rng, normalizer=40, c_grad=1.0,
                           query="decrease")
    oracle.noisy_gradient(np.zeros(3), 0.5)
    oracle.line_search(np.zeros(3), np.ones(3), np.array([1.0, 0.5]), alpha=0.5, budget=1.0)
    assert calls == ["grad", "decrease"]
    assert LinearModel._clipped_grad_sum is not Counting._clipped_grad_sum


def test_every_point_and_direction_gets_its_one_line_error_with_nothing_charged():
    """A non-finite point or direction, or one of the wrong shape, gets a one-line error from the
    gradient and the line search before anything is charged."""
    oracle = _sampling_oracle(3)
    w = np.array([0.1, -0.2, 0.3])
    g = oracle.noisy_gradient(w, 0.01)
    steps = np.array([1.0, 0.5, 0.25])
    oracle.line_search(w, g, steps, alpha=0.3, budget=0.05)
    for bad_w, bad_g, message in ((np.array([np.nan, 0.0, 0.0]), g, "w contains"),
                                  (w, np.array([0.0, np.inf, 0.0]), "direction contains"),
                                  (w, np.zeros(4), "direction must have last dimension"),
                                  (w, np.zeros((2, 3)), "direction must have the shape of w")):
        spent = len(oracle.ledger.events)
        with pytest.raises(ValueError, match=message) as info:
            oracle.line_search(bad_w, bad_g, steps, alpha=0.3, budget=0.05)
        assert "\n" not in str(info.value) and len(oracle.ledger.events) == spent  # nothing charged
    spent = len(oracle.ledger.events)
    with pytest.raises(ValueError, match="w contains"):
        oracle.noisy_gradient(np.array([0.0, np.nan, 0.0]), 0.01)
    assert len(oracle.ledger.events) == spent


def _neighbour_oracles(extra_row):
    """Full-batch oracles on neighbouring data: 20 records, and the same plus ``extra_row``."""
    gen = np.random.default_rng(0)
    X, y = gen.normal(size=(20, 3)), np.where(gen.random(20) < 0.5, 1.0, -1.0)
    out = []
    for data, labels in ((X, y), (np.vstack([X, extra_row]), np.append(y, 1.0))):
        model = LinearModel("logistic", data, labels, l2=0.0)
        out.append(PrivateOracle(model, ledger=Ledger(10.0, 1e-6, "rdp"), rng=np.random.default_rng(1),
                                 normalizer=20, rate=1.0, c_grad=1.0, c_obj=1.0))
    return out


def test_a_point_changed_in_place_to_inf_gets_the_same_error_on_neighbours():
    """A caller's in-place step that diverges (w -= η g overflowing to ±inf), on the point the oracle
    saw before or on the gradient it released, gets the one-line error before any data is read, with
    nothing charged, on both neighbours: the data terms are not all bounded for a non-finite point (a
    zero record's clipping threshold C/0 is inf, and 0·inf is NaN in the gradient sum), so an error
    raised later would depend on whether that record is in the batch."""
    for oracle in _neighbour_oracles(np.zeros(3)):
        w = np.array([0.1, -0.2, 0.3])
        g = oracle.noisy_gradient(w, 0.5)
        with np.errstate(over="ignore"):
            w -= 1e300 * g / np.abs(g) * 1e10  # in place: the oracle still holds this array
        with pytest.raises(ValueError, match="w contains 3 NaN or infinite") as info:
            oracle.noisy_gradient(w, 0.5)
        assert "\n" not in str(info.value) and len(oracle.ledger.events) == 1  # the first gradient only
        with pytest.raises(ValueError, match="w contains 3 NaN or infinite"):
            oracle.line_search(w, g, np.array([1.0, 0.5]), alpha=0.3, budget=0.5)
        assert len(oracle.ledger.events) == 1
        g[0] = np.nan  # the released gradient, changed in place, as a direction
        with pytest.raises(ValueError, match="direction contains 1 NaN"):
            oracle.line_search(np.zeros(3), g, np.array([1.0, 0.5]), alpha=0.3, budget=0.5)
        assert len(oracle.ledger.events) == 1


def test_a_ladder_of_the_wrong_shape_gets_an_error_that_names_no_batch_size():
    """Steps whose shape is not the ray's batch shape + (k,) get one error before anything is
    charged, the same on neighbouring datasets: the model's closures on the oracle's path check no
    shapes, and a (1, k) ladder for one search failed inside the clipped sum, naming the number of
    records (the minibatch's size) in its message."""
    w, g, steps = np.array([0.1, -0.2, 0.3]), np.array([0.3, 0.1, -0.2]), np.array([[1.0, 0.5, 0.25]])
    for method, options in (("line_search", {"alpha": 0.3, "budget": 0.5}), ("select_step", {"epsilon": 0.5})):
        messages = []
        for oracle in _neighbour_oracles(np.ones(3)):
            with pytest.raises(ValueError, match=r"steps must have shape \(\) \+ \(k,\)") as info:
                getattr(oracle, method)(w, g, steps, **options)
            messages.append(str(info.value))
            assert oracle.ledger.events == []
        assert messages[0] == messages[1]


@pytest.mark.parametrize("secure", [False, True], ids=["plain", "secure"])
@pytest.mark.parametrize("lazy", [False, True], ids=["eager", "lazy"])
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_one_refused_search_draws_nothing_and_computes_no_answer(noise, lazy, secure):
    """A search whose event the ledger refuses leaves the generator untouched, logs nothing and
    never evaluates the ray (the charge comes before the ladder's noise and any answer)."""
    import dpopt.oracles.line_search as ls

    ray = ls.Ray(lambda steps: pytest.fail("a refused search evaluated the ray"), 0.0, 0.0, 1.0)
    gen, ledger = np.random.default_rng(3), Ledger(1e-6, 1e-6, "rdp")
    before = gen.bit_generator.state
    with pytest.raises(BudgetExceededError):
        ls.above_threshold_search(ray, 0.5 ** np.arange(6), alpha=0.5, budget=1.0, noise=noise, ledger=ledger,
                                  rng=gen, lazy=lazy, secure_noise=secure)
    assert gen.bit_generator.state == before and ledger.events == []


@pytest.mark.parametrize("query", ["objective", "decrease"])
def test_a_runs_unchecked_releases_are_the_public_ones(query):
    """_noisy_gradient and _line_search (a run's own iterate, checked once, QUIET held by the loop) give the
    numbers, events and query counts of the public noisy_gradient and line_search; the public ones still
    refuse a non-finite w before anything is charged."""
    from dpopt.oracles.noisy_btls import candidate_steps
    from dpopt.oracles.oracle import QUIET

    public, run = _sampling_oracle(3, query=query), _sampling_oracle(3, query=query)
    w, steps = np.array([0.3, -0.2, 0.1]), candidate_steps(2.0, 0.8, 10)
    for _ in range(4):
        g = public.noisy_gradient(w, 0.05)
        with np.errstate(**QUIET):
            g_run = run._noisy_gradient(w, 0.05)
            index_run = run._line_search(w, g_run, steps, 0.5, 0.4)
        np.testing.assert_array_equal(g_run, g)
        assert index_run == public.line_search(w, g, steps, alpha=0.5, budget=0.4)
        w = w - 0.1 * g
    assert run.ledger.events == public.ledger.events and run.queries == public.queries
    before = list(public.ledger.events)
    with pytest.raises(ValueError, match="NaN or infinite"):
        public.noisy_gradient(np.array([np.nan, 0.0, 0.0]), 0.05)
    with pytest.raises(ValueError, match="NaN or infinite"):
        public.line_search(w, np.array([np.inf, 0.0, 0.0]), steps, alpha=0.5, budget=0.4)
    assert public.ledger.events == before
