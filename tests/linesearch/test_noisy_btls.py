"""NoisyBTLS (chen2020 Algorithm 1): noise-free limit, events, and the output distribution.

Statistical tests: fixed seeds, chi-square goodness of fit against the exact
distribution of the returned index (numerical integration over the noisy
threshold), rejecting at p < 1e-6.  With R = 200,000 searches a correct
implementation passes with overwhelming probability, and the same samples
reject the distribution of a search whose noise scales are off by a factor 2
(checked in the tests themselves).
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpopt.linesearch.model import LinearModel
from dpopt.linesearch.noisy_btls import (
    Ray,
    armijo_queries,
    candidate_steps,
    line_search_event,
    noisy_btls,
    reset_initial_step,
)
from dpopt.privacy import Ledger, PoissonSampler, PureDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.rdp import DEFAULT_ORDERS, rdp_curve

P_MIN = 1e-6
R = 200_000


def problem(seed, loss="logistic", n=200, d=3, l2=0.01):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + rng.normal(size=n) > 0, 1.0, -1.0)
    return LinearModel(loss, X, y, l2=l2), rng


def classic_armijo(F, w, g, eta0, alpha, beta, max_it):
    """Textbook backtracking (Armijo 1966; chen2020 eq. (2)) on the full objective F."""
    eta, f0, slope = eta0, F(w), g @ g
    for _ in range(max_it):
        if F(w - eta * g) <= f0 - alpha * eta * slope:
            return eta
        eta *= beta
    return 0.0


@pytest.mark.parametrize("loss", ["logistic", "huberized_hinge"])
def test_without_noise_it_is_the_classic_armijo_step(loss):
    accepted = failed = 0
    for seed in range(25):
        model, rng = problem(seed, loss)
        w = rng.normal(size=model.dim)
        # the true gradient (Armijo must succeed for small steps) or a random direction
        g = model.grad(w) if seed % 2 == 0 else rng.normal(size=model.dim)
        alpha, beta, eta0, max_it = rng.uniform(0.1, 0.9), rng.uniform(0.3, 0.9), 4.0, 12
        want = classic_armijo(model.value, w, g, eta0, alpha, beta, max_it)
        # C_obj above every loss value: the clipped sum is n·(mean loss) exactly
        ray = Ray.of_model(model, w, g, cap=1e6)
        got = noisy_btls(ray, eta0=eta0, budget=math.inf, alpha=alpha, beta=beta, max_it=max_it)
        assert got == pytest.approx(want, rel=1e-12)
        accepted += want > 0
        failed += want == 0
        # a negligible amount of noise, charged through the mechanism, changes nothing (a private
        # search needs the count declared: the data's own n is private under add/remove)
        ledger = Ledger(1e13)
        ray = Ray.of_model(model, w, g, cap=1e6, weight=float(model.n))
        noisy = noisy_btls(ray, eta0=eta0, budget=1e12, ledger=ledger, rng=rng, alpha=alpha,
                           beta=beta, max_it=max_it)
        assert noisy == pytest.approx(want, rel=1e-12)
        assert ledger.events == [ev.AboveThreshold.laplace(5e11, 2.5e11, 1e6)]
    assert accepted >= 10 and failed >= 3  # both branches were exercised


def test_batched_search_without_noise_matches_single_searches():
    model, rng = problem(7)
    W = rng.normal(size=(5, model.dim))
    G = np.stack([model.grad(w) for w in W])
    eta0 = np.array([1.0, 2.0, 4.0, 0.5, 8.0])
    ray = Ray.of_model(model, W, G, cap=1e6)
    got = noisy_btls(ray, eta0=eta0, budget=math.inf, max_it=20)
    want = [noisy_btls(Ray.of_model(model, w, g, cap=1e6), eta0=e, budget=math.inf, max_it=20)
            for w, g, e in zip(W, G, eta0, strict=True)]
    np.testing.assert_allclose(got, want)


def test_queries_are_the_armijo_differences_on_the_clipped_objective():
    model, rng = problem(3, n=50)
    w, g = rng.normal(size=3), rng.normal(size=3)
    idx = np.arange(0, 50, 2)
    ray = Ray.of_model(model, w, g, cap=0.7, indices=idx, weight=20.0)
    steps = candidate_steps(1.5, 0.5, 4)
    q = armijo_queries(ray, steps, 0.3)

    def f(v):  # clipped sum on idx plus the regularizer counted `weight` times
        return model.clipped_loss_sum(v, idx, 0.7) + 20.0 * model.regularizer_value(v)

    want = [f(w) - 0.3 * s * 20.0 * (g @ g) - f(w - s * g) for s in steps]
    np.testing.assert_allclose(q, want, rtol=1e-12)
    assert ray.sensitivity == 0.7


def test_events_match_algorithm_1_line_3():
    lap = line_search_event(0.8, 2.0, "laplace")
    assert (lap.epsilon1, lap.epsilon2, lap.sensitivity) == pytest.approx((0.4, 0.2, 2.0))
    assert lap.threshold_scale == pytest.approx(2.0 / 0.4) and lap.query_scale == pytest.approx(10.0)
    # Theorem 1: the Laplace version is eps_BT-DP
    assert PureDPAccountant().compose(lap).get_epsilon() == pytest.approx(0.8)
    gau = line_search_event(0.02, 3.0, "gaussian")
    assert gau.sigma1**2 == pytest.approx(3 / (2 * 0.02)) and gau.sigma2**2 == pytest.approx(3 / 0.02)
    # eq. (5) with these sigmas is (alpha, alpha*rho)-RDP
    np.testing.assert_allclose(rdp_curve(gau), DEFAULT_ORDERS * 0.02, rtol=1e-12)


def test_sampler_charges_the_amplified_event():
    model, rng = problem(4, n=100)
    sampler = PoissonSampler(0.2)
    idx = sampler.indices(model.n, rng)
    ray = Ray.of_model(model, np.zeros(3), np.ones(3), cap=1.0, indices=idx, weight=20.0)
    ledger = Ledger(1.0, 1e-6, "rdp")
    noisy_btls(ray, eta0=1.0, budget=0.5, ledger=ledger, rng=rng, sampler=sampler)
    assert ledger.events == [ev.Subsampled(line_search_event(0.5, 1.0), 0.2, "poisson")]


# --------------------------------------------------------------------------- distribution


QUERIES = np.array([-3.0, -1.0, 0.5, -2.0, 1.5])
ETA0, BETA = 2.0, 0.5


def constant_ray(queries, repetitions, sensitivity):
    """A ray whose Armijo queries are exactly ``queries`` (origin 0, slope 0)."""
    k = len(queries)

    def fn(steps):
        index = np.rint(np.log(steps / ETA0) / np.log(BETA)).astype(int)
        assert np.all((index >= 0) & (index < k))
        return -queries[index]

    zeros = np.zeros(repetitions)
    return Ray(fn, zeros, zeros, sensitivity)


def index_probabilities(queries, threshold_dist, query_dist):
    """P(first i with q_i + ν_i ≥ λ) for i = 0..k−1, and P(none) last (Algorithm 1, lines 6–12)."""
    k = len(queries)

    def density(z, i):
        below = np.prod([query_dist.cdf(z - queries[j]) for j in range(i)])
        last = 1.0 if i == k else query_dist.sf(z - queries[i])
        return threshold_dist.pdf(z) * below * last

    lo, hi = threshold_dist.ppf(1e-15), threshold_dist.isf(1e-15)
    kinks = np.unique(np.concatenate([[0.0], queries]))  # Laplace densities have kinks there
    return np.array([integrate.quad(density, lo, hi, args=(i,), limit=200, points=kinks)[0]
                     for i in range(k + 1)])


def chi_square_p(counts, probs):
    expected = probs * counts.sum()
    return stats.chisquare(counts, expected).pvalue


def run_counts(noise, budget, sensitivity, lazy, seed):
    ledger = Ledger(1e3, 1e-6, "rdp")
    ray = constant_ray(QUERIES, R, sensitivity)
    steps = noisy_btls(ray, eta0=ETA0, budget=budget, ledger=ledger, rng=np.random.default_rng(seed),
                       noise=noise, beta=BETA, max_it=len(QUERIES), lazy=lazy)
    index = np.where(steps > 0, np.rint(np.log(np.where(steps > 0, steps, 1.0) / ETA0)
                                        / np.log(BETA)), len(QUERIES)).astype(int)
    assert len(ledger.events) == 1  # one charge for all R searches
    return np.bincount(index, minlength=len(QUERIES) + 1)


@pytest.mark.parametrize("lazy", [False, True])
def test_laplace_output_distribution(lazy):
    eps, delta_q = 1.5, 2.0
    counts = run_counts("laplace", eps, delta_q, lazy, seed=11)
    right = index_probabilities(QUERIES, stats.laplace(scale=delta_q / (eps / 2)),
                                stats.laplace(scale=delta_q / (eps / 4)))
    assert right.sum() == pytest.approx(1.0, abs=1e-6)
    assert chi_square_p(counts, right) > P_MIN
    half = index_probabilities(QUERIES, stats.laplace(scale=delta_q / eps),
                               stats.laplace(scale=delta_q / (eps / 2)))
    assert chi_square_p(counts, half) < P_MIN  # noise too small by 2 would be caught


@pytest.mark.parametrize("lazy", [False, True])
def test_gaussian_output_distribution(lazy):
    rho, delta_q = 0.5, 1.0
    counts = run_counts("gaussian", rho, delta_q, lazy, seed=12)
    s1, s2 = math.sqrt(3 / (2 * rho)), math.sqrt(3 / rho)
    right = index_probabilities(QUERIES, stats.norm(scale=delta_q * s1), stats.norm(scale=delta_q * s2))
    assert chi_square_p(counts, right) > P_MIN
    half = index_probabilities(QUERIES, stats.norm(scale=delta_q * s1 / 2),
                               stats.norm(scale=delta_q * s2 / 2))
    assert chi_square_p(counts, half) < P_MIN


# --------------------------------------------------------------------------- helpers and errors


def test_candidate_steps_and_intelligent_backtracking():
    np.testing.assert_allclose(candidate_steps(2.0, 0.8, 3), [2.0, 1.6, 1.28])
    np.testing.assert_allclose(candidate_steps([1.0, 4.0], 0.5, 2), [[1.0, 0.5], [4.0, 2.0]])
    # eta0 <- min(varsigma * max(Omega), eta0); unchanged when Omega is empty
    assert reset_initial_step(2.0, [0.3, 0.5, 0.1], 1.2) == pytest.approx(0.6)
    assert reset_initial_step(0.5, [0.3, 0.5], 1.2) == pytest.approx(0.5)
    assert reset_initial_step(2.0, [], 1.2) == 2.0
    with pytest.raises(ValueError, match="varsigma"):
        reset_initial_step(2.0, [0.1], 1.0)


def test_bad_inputs_name_the_parameter():
    model, rng = problem(0, n=20)
    ray = Ray.of_model(model, np.zeros(3), np.ones(3), cap=1.0, weight=20.0)
    ledger = Ledger(1.0)
    kwargs = {"eta0": 1.0, "budget": 0.5, "ledger": ledger, "rng": rng}
    for name, value in [("alpha", 1.0), ("beta", 0.0), ("max_it", 0), ("budget", -1.0),
                        ("noise", "cauchy"), ("eta0", -1.0)]:
        with pytest.raises((ValueError, TypeError), match=name):
            noisy_btls(ray, **{**kwargs, name: value})
    with pytest.raises(ValueError, match="eta0"):
        noisy_btls(ray, **{**kwargs, "eta0": np.ones(3)})
    with pytest.raises(TypeError, match="ray"):
        noisy_btls(None, **kwargs)
    with pytest.raises(TypeError, match="rng"):
        noisy_btls(ray, **{**kwargs, "rng": 3})
    with pytest.raises(ValueError, match="weight"):
        Ray.of_model(model, np.zeros(3), np.ones(3), cap=1.0, indices=np.arange(5))
    with pytest.raises(ValueError, match="cap"):
        Ray.of_model(model, np.zeros(3), np.ones(3), cap=0.0)
    assert ledger.events == []  # nothing was charged by the refused calls


def test_decrease_queries_agree_with_objective_queries_below_the_cap():
    model, rng = problem(4, n=60)
    w, g = 0.3 * rng.normal(size=3), 0.3 * rng.normal(size=3)
    idx = np.arange(0, 60, 3)
    steps = candidate_steps(1.0, 0.6, 6)
    objective = Ray.of_model(model, w, g, cap=1e6, indices=idx, weight=20.0)
    decrease = Ray.of_model(model, w, g, cap=1e6, indices=idx, weight=20.0, query="decrease")
    np.testing.assert_allclose(armijo_queries(decrease, steps, 0.4),
                               armijo_queries(objective, steps, 0.4), rtol=1e-9, atol=1e-9)
    assert float(decrease.origin) == 0.0
    assert float(objective.origin) == pytest.approx(model.clipped_loss_sum(w, idx, 1e6)
                                                    + 20.0 * model.regularizer_value(w))
    # and the noise-free search returns the classic Armijo step with either query
    want = classic_armijo(model.value, w, model.grad(w), 4.0, 0.5, 0.8, 12)
    ray = Ray.of_model(model, w, model.grad(w), cap=1e6, query="decrease")
    assert noisy_btls(ray, eta0=4.0, budget=math.inf, alpha=0.5, beta=0.8, max_it=12) == pytest.approx(want)


def test_clipped_objective_prefers_the_majority_class_but_the_decrease_query_does_not():
    """Why ``query="decrease"`` is the default: with C_obj = 1 the clipped objective is
    lower at a confident majority-class predictor than at the minimizer on imbalanced data,
    so the Armijo test along the way back from there fails for every step that goes more
    than a tenth of the way, while the clipped per-record decreases see the true descent."""
    rng = np.random.default_rng(0)
    n = 2000
    y = np.where(rng.random(n) < 0.25, 1.0, -1.0)
    X = np.column_stack([0.8 * y + rng.normal(size=n), np.ones(n)]) / 2.0  # optimum: 83 % accurate
    model = LinearModel("logistic", X, y, l2=1e-3)
    from dpopt.linesearch.baselines import non_private

    best = non_private(model, epsilon=1.0, delta=0.0).x
    majority = np.array([0.0, -12.0])  # predicts −1 for everyone, with a large margin
    assert model.clipped_loss_sum(majority, None, 1.0) < model.clipped_loss_sum(best, None, 1.0)
    assert model.value(majority) > model.value(best)
    g = majority - best  # the step back to the minimizer is η = 1 along −g
    objective = Ray.of_model(model, majority, g, cap=1.0, query="objective")
    decrease = Ray.of_model(model, majority, g, cap=1.0, query="decrease")
    steps = candidate_steps(1.0, 0.8, 15)
    assert np.all(armijo_queries(objective, steps, 1e-3)[steps >= 0.1] < 0)
    assert np.all(armijo_queries(decrease, steps, 1e-3) > 0)
