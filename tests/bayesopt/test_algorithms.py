"""Algorithms 1–3 (kusner2015): limits, formulas, guarantees, ledgers and bad input."""

import math

import numpy as np
import pytest

from dpopt.bayesopt import CandidateSet, optimize
from dpopt.bayesopt import bounds as bb
from dpopt.privacy import BudgetExceededError, Ledger, secure
from dpopt.privacy import events as ev

HUGE = 1e12  # ε → ∞: the mechanisms' noise vanishes


@pytest.fixture(scope="module")
def problem():
    cs = CandidateSet.from_space({"C": (1e-2, 1e2, "log"), "g": (0.0, 1.0)}, n_candidates=64, seed=0)
    x = np.log10(cs.points[:, 0])
    table = 0.8 - 0.05 * ((x - 0.7) ** 2 + 4 * (cs.points[:, 1] - 0.3) ** 2)
    return cs, table


def extras(algorithm, cs):
    if algorithm == 2:
        return dict(A=0.2, tau=1.0)
    if algorithm == 3:
        return dict(regularization=1.0 / cs.points[:, 0], lipschitz=1.0, g_star=1.0, validation_size=1000)
    return {}


@pytest.mark.parametrize("algorithm", [1, 2, 3])
def test_infinite_epsilon_returns_the_non_private_argmax_and_max(problem, algorithm):
    cs, table = problem
    result = optimize(lambda i: table[i], cs, algorithm=algorithm, epsilon=HUGE, n_iter=12, rng=0,
                      return_trace=True, **extras(algorithm, cs))
    trace = result.info["nonprivate_trace"]
    best = trace["gain"][1:].max() if algorithm == 2 else trace["gain"].max()
    assert result.fun == pytest.approx(best, abs=1e-9)
    if algorithm == 3:  # the exponential mechanism over every candidate's score
        assert result.info["index"] == int(np.argmax(table))
    else:  # the exponential mechanism over μ_T
        from dpopt.bayesopt import FiniteGP

        gp = FiniteGP(cs.unit, noise=result.info["noise_std"] ** 2,
                      jitter=1e-10 if algorithm == 1 else 1e-8)
        mu, _ = gp.posterior(trace["index"], trace["gain"])
        assert result.info["index"] == int(np.argmax(mu))
    np.testing.assert_array_equal(result.x, cs.points[result.info["index"]])
    assert result.method == f"alg{algorithm}" and result.nit == 12


def test_gp_ucb_finds_a_good_candidate(problem):
    cs, table = problem
    result = optimize(lambda i: table[i], cs, epsilon=HUGE, n_iter=25, rng=0, prior_mean=0.75, length_scale=0.3)
    assert table[result.info["index"]] >= np.sort(table)[-3]


def test_algorithm_1_noise_is_the_papers_scale(problem):
    cs, table = problem
    result = optimize(lambda i: table[i], cs, algorithm=1, epsilon=2.0, delta=0.02, n_iter=10, noise_std=0.1,
                      k1=0.9, rng=0)
    info = result.info
    d, N, T, sigma = 0.01, 64, 10, 0.1  # each release gets (ε/2, δ/2)
    c = 2 * math.sqrt(0.1 * math.log(3 * N / d))
    beta = lambda t: 2 * math.log(N * t * t * math.pi**2 / (3 * d))  # noqa: E731
    q = sigma * math.sqrt(4 * math.log(3 / d))
    C1 = 8 / math.log(1 + sigma**-2)
    assert info["c"] == pytest.approx(c) and info["q"] == pytest.approx(q) and info["C1"] == pytest.approx(C1)
    assert info["selection_sensitivity"] == pytest.approx(2 * math.sqrt(beta(T + 1)) + c)
    scale = math.sqrt(C1 * beta(T) * info["gamma_T_bound"]) / (1.0 * math.sqrt(T)) + c / 1.0 + q / 1.0
    assert info["score_scale"] == pytest.approx(scale)
    assert info["gamma_T_greedy"] < info["gamma_T_bound"] <= T * 0.5 * math.log1p(sigma**-2) / (1 - math.exp(-1))
    laplace = [e for e in result.events if isinstance(e, ev.Laplace)][0]
    assert laplace.scale == pytest.approx(scale) and laplace.epsilon == pytest.approx(1.0)
    assert [type(e) for e in result.events] == [ev.Exponential, ev.Laplace]
    assert result.events[0].epsilon == pytest.approx(1.0)


def test_algorithm_2_and_3_sensitivities():
    c2 = bb.c_term(0.95, 50, 0.01, union=2)
    assert c2 == pytest.approx(2 * math.sqrt(0.05 * math.log(2 * 50 / 0.01)))
    assert bb.score_sensitivity_alg2(0.3, 2.0, 2, c2) == pytest.approx(0.3 * math.exp(-4 / math.log(2) ** 0.5) + c2)
    # Theorem 7: (λmax − λmin)L/(λmax λmin) + min{g*, 2L/λmin}/m
    assert bb.score_sensitivity_alg3(100, lipschitz=0.5, g_star=1.0, lambda_min=0.1, lambda_max=1.0) == \
        pytest.approx(0.9 * 0.5 / 0.1 + 1.0 / 100)
    assert bb.per_record_term(100, lipschitz=0.01, g_star=1.0, lambda_min=0.1) == pytest.approx(0.2 / 100)


def test_guarantee_kinds_state_their_assumption(problem):
    cs, table = problem
    r1 = optimize(lambda i: table[i], cs, algorithm=1, epsilon=1.0, k1=0.8, n_iter=5, rng=1)
    assert r1.guarantee == "conditional" and "k1(V, V') = 0.8" in r1.notes and r1.info["k1"] == 0.8
    r3 = optimize(lambda i: table[i], cs, algorithm=3, epsilon=1.0, n_iter=5, rng=1, **extras(3, cs))
    assert r3.guarantee == "exact" and "Assumption 2" in r3.notes
    assert r3.relation == "replace_one" and r3.epsilon == pytest.approx(1.0)


def test_releases_charge_the_handed_down_ledger_and_refuse_before_release(problem):
    cs, table = problem
    book = Ledger(3.0, relation="replace_one")
    book.charge(ev.Laplace(1.0, 1.0))  # e.g. a training run
    result = optimize(lambda i: table[i], cs, epsilon=1.0, n_iter=4, rng=0, ledger=book)
    assert book.spent().epsilon == pytest.approx(2.0) and len(book.events) == 3
    assert result.fun is not None and result.x is not None
    small = Ledger(0.5, relation="replace_one")
    with pytest.raises(BudgetExceededError):
        optimize(lambda i: table[i], cs, epsilon=1.0, n_iter=4, rng=0, ledger=small)
    assert small.events == []


def test_single_release_and_repetitions(problem):
    cs, table = problem
    only = optimize(lambda i: table[i], cs, epsilon=1.0, n_iter=4, rng=0, release="score", repetitions=7)
    assert only.x is None and only.fun.shape == (7,) and only.info["epsilon_per_release"] == 1.0
    lam = optimize(lambda i: table[i], cs, epsilon=1.0, n_iter=4, rng=0, release="lambda", repetitions=5)
    assert lam.fun is None and lam.x.shape == (5, 2)


def test_same_seed_same_release(problem):
    cs, table = problem
    a = optimize(lambda i: table[i], cs, epsilon=1.0, n_iter=6, rng=5)
    b = optimize(lambda i: table[i], cs, epsilon=1.0, n_iter=6, rng=5)
    assert a.fun == b.fun and a.info["index"] == b.info["index"]


@pytest.mark.parametrize("kwargs,match", [
    (dict(algorithm=4), "algorithm must be 1, 2 or 3"),
    (dict(epsilon=0.0), "epsilon must be in"),
    (dict(delta=1.0), "delta must be in"),
    (dict(k1=1.5), "k1 must be in"),
    (dict(noise_std=0.0), "noise_std must be in"),
    (dict(n_iter=0), "n_iter must be >= 1"),
    (dict(release="all"), "release must be one of"),
    (dict(algorithm=2), "give A= and tau="),
    (dict(algorithm=3), "algorithm 3 needs regularization="),
    (dict(algorithm=3, regularization=-1.0, lipschitz=1.0, g_star=1.0, validation_size=10), "λ > 0"),
    (dict(kernel="rbf"), "kernel must be one of"),
])
def test_bad_input_names_the_parameter(problem, kwargs, match):
    cs, table = problem
    kwargs = {"epsilon": 1.0, "n_iter": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        optimize(lambda i: table[i], cs, **kwargs)


@pytest.mark.parametrize("A,tau,match", [(-1.0, 1.0, r"^A must be in \[0, inf\)"),
                                         (float("nan"), 1.0, "^A must not be NaN"),
                                         (0.2, -1.0, r"^tau must be in \[0, inf\)")])
def test_algorithm_2_refuses_its_constants_before_any_objective_call(problem, A, tau, match):
    """Algorithm 2's A and tau are public: refused before the objective is called.  Before, they were checked
    when the score's sensitivity was computed, after GP-UCB's T steps: DPBayesSearchCV(algorithm=2, A=-1) with a
    private estimator charged its 3 fits (epsilon 2.0 on the given ledger) and then raised."""
    cs, table = problem
    calls = []
    with pytest.raises(ValueError, match=match):
        optimize(lambda i: calls.append(i) or table[i], cs, algorithm=2, A=A, tau=tau, epsilon=1.0, n_iter=3)
    assert not calls


@pytest.mark.parametrize("algorithm", [1, 3])
@pytest.mark.parametrize("prior_mean", [float("nan"), float("inf")])
def test_a_non_finite_prior_mean_is_refused_before_any_objective_call(problem, algorithm, prior_mean):
    """Before, the GP's first factorization raised after the first gain: DPBayesSearchCV(prior_mean=nan) with a
    private estimator had charged its first fit (epsilon 0.5, or 1.0 for a dp-blsgd fit) on the given ledger."""
    cs, table = problem
    calls = []
    with pytest.raises(ValueError, match="^prior_mean contains 1 NaN or infinite value"):
        optimize(lambda i: calls.append(i) or table[i], cs, algorithm=algorithm, epsilon=1.0, n_iter=3,
                 prior_mean=prior_mean, **extras(algorithm, cs))
    assert not calls


@pytest.mark.parametrize("algorithm", [1, 3])
def test_an_add_remove_ledger_is_refused_before_any_objective_call(problem, algorithm):
    """The sensitivities are kusner2015's for V and V' that differ by swapping one record.  Before, an add/remove
    ledger was charged both releases and the result stated an add/remove guarantee."""
    cs, table = problem
    book, calls = Ledger(5.0, relation="add_remove"), []
    with pytest.raises(ValueError, match=r"^ledger.relation must be 'replace_one' for kusner2015's releases"):
        optimize(lambda i: calls.append(i) or table[i], cs, algorithm=algorithm, epsilon=1.0, n_iter=3, ledger=book,
                 **extras(algorithm, cs))
    assert not calls and not book.events


def test_non_finite_gain_is_refused(problem):
    cs, _ = problem
    with pytest.raises(ValueError, match="non-finite gain"):
        optimize(lambda i: float("nan"), cs, epsilon=1.0, n_iter=2)


@pytest.mark.parametrize("algorithm", [1, 3])
def test_secure_noise_charges_the_exact_events_at_the_same_epsilon(problem, algorithm):
    cs, table = problem
    common = dict(algorithm=algorithm, epsilon=1.0, n_iter=4, rng=0, repetitions=3, **extras(algorithm, cs))
    plain = optimize(lambda i: table[i], cs, **common)
    exact = optimize(lambda i: table[i], cs, secure_noise=True, **common)
    assert exact.epsilon == pytest.approx(plain.epsilon, rel=1e-12) and exact.epsilon <= 1.0
    assert exact.info["secure_noise"] and exact.x.shape == (3, 2) and exact.fun.shape == (3,)
    selection, score = exact.events
    assert selection == ev.Exponential(0.5) and isinstance(score, ev.DiscreteLaplace)
    assert score.epsilon == pytest.approx(0.5, rel=1e-12)
    # the score is a grid point of the secure Laplace release of the 3 repetitions
    grid = secure.grid_for(exact.info["score_sensitivity"], 3)
    assert np.all(np.mod(exact.fun, grid) == 0.0)


def test_secure_noise_at_large_epsilon_releases_the_best_candidate_and_gain(problem):
    cs, table = problem
    result = optimize(lambda i: table[i], cs, algorithm=3, epsilon=HUGE, n_iter=6, rng=0, secure_noise=True,
                      return_trace=True, **extras(3, cs))
    assert result.info["index"] == int(np.argmax(table))
    grid = secure.grid_for(result.info["score_sensitivity"], 1)  # the release is the best gain's grid point
    assert result.fun == np.rint(result.info["nonprivate_trace"]["gain"].max() / grid) * grid
