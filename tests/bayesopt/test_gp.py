"""The GP over Λ: kernels, the exact posterior (eq. (2)), β_t and the greedy γ_T bound."""

import math

import numpy as np
import pytest

from dpopt.bayesopt import CandidateSet, FiniteGP, beta, information_gain, kernel_matrix, max_information_gain


def test_sobol_candidates_lie_in_the_box_with_log_axes():
    cs = CandidateSet.from_space({"C": (1e-3, 1e3, "log"), "l1": (0.0, 2.0)}, n_candidates=100, seed=3)
    assert cs.points.shape == (100, 2) and len(cs) == 100 and cs.names == ("C", "l1")
    assert np.all((cs.unit >= 0) & (cs.unit <= 1))
    assert np.all((cs.points[:, 0] >= 1e-3) & (cs.points[:, 0] <= 1e3))
    np.testing.assert_allclose(np.log10(cs.points[:, 0]), -3 + 6 * cs.unit[:, 0])
    # a log axis spreads over decades: about half the points below 1 (Sobol balance)
    assert 40 <= np.sum(cs.points[:, 0] < 1.0) <= 60
    assert cs.params(0) == {"C": cs.points[0, 0], "l1": cs.points[0, 1]}


def test_grid_space_is_the_product_and_mixing_is_refused():
    cs = CandidateSet.from_space({"C": [0.1, 1, 10, 100], "k": [1, 2]})
    assert len(cs) == 8 and cs.log == (True, False)
    with pytest.raises(ValueError, match="not a mix"):
        CandidateSet.from_space({"C": [0.1, 1], "k": (0, 1)})
    with pytest.raises(ValueError, match="low > 0"):
        CandidateSet.from_space({"C": (0.0, 1.0, "log")})
    with pytest.raises(ValueError, match="low < high"):
        CandidateSet.from_space({"C": (2.0, 1.0)})


@pytest.mark.parametrize("kernel", ["se", "matern52"])
def test_kernels_are_normalized_and_positive_definite(kernel):
    x = np.random.default_rng(0).random((40, 2))
    K = kernel_matrix(x, x, kernel=kernel, length_scale=0.3)
    np.testing.assert_allclose(np.diag(K), 1.0)
    assert np.linalg.eigvalsh(K).min() > -1e-10 and np.all(K <= 1.0 + 1e-12)


def test_matern_matches_its_closed_form():
    a, b = np.array([[0.0, 0.0]]), np.array([[0.3, 0.4]])  # r = 0.5
    s = math.sqrt(5) * 0.5 / 0.25
    assert kernel_matrix(a, b, kernel="matern52", length_scale=0.25)[0, 0] == pytest.approx(
        (1 + s + s * s / 3) * math.exp(-s))
    assert kernel_matrix(a, b, kernel="se", length_scale=0.25)[0, 0] == pytest.approx(math.exp(-0.5 * 4))


@pytest.mark.parametrize("kernel,noise", [("se", 0.01), ("matern52", 0.1), ("se", 0.0)])
def test_posterior_equals_a_direct_dense_solve(kernel, noise):
    rng = np.random.default_rng(1)
    unit = rng.random((60, 2))
    gp = FiniteGP(unit, kernel=kernel, length_scale=0.25, noise=noise, jitter=1e-10 if noise else 1e-8)
    index = np.array([3, 17, 17, 42, 5, 59]) if noise else np.array([3, 17, 42, 5, 59])
    v = rng.normal(size=len(index))
    mean, var = gp.posterior(index, v)
    K = kernel_matrix(unit, unit, kernel=kernel, length_scale=0.25)
    A = K[np.ix_(index, index)] + (noise + gp.jitter) * np.eye(len(index))
    k = K[:, index]
    np.testing.assert_allclose(mean, k @ np.linalg.solve(A, v), rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(var, np.clip(1 - np.einsum("nt,tn->n", k, np.linalg.solve(A, k.T)), 0, 1),
                               atol=1e-8)
    if noise == 0.0:  # exact observations are interpolated
        np.testing.assert_allclose(mean[index], v, atol=1e-5)
    assert np.all(gp.posterior([], [])[1] == 1.0)


def test_beta_is_algorithm_1s_formula():
    assert beta(5, 100, 0.01) == pytest.approx(2 * math.log(100 * 25 * math.pi**2 / 0.03))
    with pytest.raises(ValueError, match="delta"):
        beta(1, 10, 0.0)


def test_greedy_information_gain_bound_dominates_random_subsets():
    """γ_T ≤ greedy/(1 − 1/e); no random multiset of size T may beat even that bound.

    The greedy value itself equals the information gain of the multiset it picked.
    """
    rng = np.random.default_rng(2)
    cs = CandidateSet.from_space({"a": (0.0, 1.0), "b": (1e-2, 1e2, "log")}, n_candidates=128, seed=0)
    for kernel, noise in (("se", 0.05**2), ("matern52", 0.1**2)):
        K = kernel_matrix(cs.unit, cs.unit, kernel=kernel, length_scale=0.2)
        for T in (1, 5, 20):
            greedy, bound, picks = max_information_gain(K, T, noise)
            assert greedy == pytest.approx(information_gain(K[np.ix_(picks, picks)], noise))
            assert bound == pytest.approx(greedy / (1 - math.exp(-1)))
            random_gains = [information_gain(K[np.ix_(s, s)], noise)
                            for s in (rng.choice(len(K), T, replace=bool(rng.integers(2))) for _ in range(200))]
            assert max(random_gains) <= bound
            assert max(random_gains) <= greedy + 1e-9  # greedy is also better than random in practice
        # γ_T grows with T (monotone) and is at most T·½log(1 + 1/σ²)
        values = [max_information_gain(K, T, noise)[0] for T in (1, 2, 4, 8)]
        assert np.all(np.diff(values) > 0) and values[-1] <= 8 * 0.5 * math.log1p(1 / noise)
