"""Baselines of chen2020 §5.3: accounting, sensitivities against their papers, noise scales, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpopt.linesearch import baselines as B
from dpopt.linesearch.baselines._common import solve_erm
from dpopt.linesearch.baselines.dp_agd import DPAGDHyper, initial_budgets, step_grid
from dpopt.linesearch.model import LinearModel
from dpopt.privacy import Ledger, PLDAccountant, ZCDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy import mechanisms as mech
from dpopt.privacy.calibration import (
    RUN_DISCRETIZATION,
    analytic_gaussian_sigma,
    calibrate_gaussian_sigma,
    gaussian_delta,
)
from dpopt.privacy.zcdp import rho_from_epsilon_delta, zcdp_rho
from dpopt.result import DPResult

DELTA = 1e-8


def _data(n=2000, d=8, seed=0, separable=3.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 1.05
    w = rng.normal(size=d)
    y = np.where(separable * X @ w + 0.3 * rng.normal(size=n) >= 0, 1.0, -1.0)
    return X, y


@pytest.fixture(scope="module")
def logistic():
    X, y = _data()
    return LinearModel("logistic", X, y, l2=1e-2, n_public=len(y))  # the test data's size is public


@pytest.fixture(scope="module")
def huber():
    X, y = _data(seed=1)
    return LinearModel("huberized_hinge", X, y, l2=1e-2, n_public=len(y))


def _within(result: DPResult, epsilon: float, delta: float):
    assert result.privacy.epsilon <= epsilon * (1 + 1e-9)
    assert result.privacy.delta <= delta


def _replay(result: DPResult, accountant: str, epsilon: float, delta: float, relation: str):
    ledger = Ledger(epsilon, delta, accountant, relation=relation)
    for event in result.events:
        ledger.charge(event)
    return ledger.spent()


# -- DP-SGD (Abadi et al. 2016) ------------------------------------------------------------
@pytest.mark.parametrize("accountant", ["rdp", "pld"])
def test_dp_sgd_charges_one_subsampled_gaussian_per_step(logistic, accountant):
    res = B.dp_sgd(logistic, epsilon=0.5, delta=DELTA, rng=3, steps=40, rate=0.2, c_grad=2.0, accountant=accountant)
    sigma = res.info["sigma"]
    expected = ev.Subsampled(ev.Gaussian(sigma, 2.0), 0.2, "poisson")
    assert res.method == "dp-sgd" and res.nit == 40
    assert res.events == [expected] * 40
    rdp_sigma = calibrate_gaussian_sigma(0.5, DELTA, steps=40, rate=0.2, sensitivity=2.0)
    if accountant == "rdp":
        assert sigma == pytest.approx(rdp_sigma, rel=1e-9)
    else:  # the tighter accountant needs less noise for the same guarantee
        assert sigma < 0.97 * rdp_sigma
        check = PLDAccountant(RUN_DISCRETIZATION).compose(ev.SelfComposed(expected, 40)).get_epsilon(DELTA)
        assert check <= 0.5
    assert res.privacy.notion == accountant and res.relation == "add_remove" and res.guarantee == "exact"
    _within(res, 0.5, DELTA)
    # the calibration uses the budget: the spent epsilon is the target up to the root tolerance
    assert res.privacy.epsilon == pytest.approx(0.5, rel=1e-6)
    replayed = _replay(res, accountant if accountant == "rdp" else PLDAccountant(RUN_DISCRETIZATION), 0.5, DELTA,
                       "add_remove")
    assert replayed.epsilon == pytest.approx(res.privacy.epsilon, rel=1e-12)


def test_dp_sgd_defaults_to_the_tightest_accountant_the_ledger_allows(logistic):
    assert B.dp_sgd(logistic, epsilon=1.0, delta=DELTA, rng=0, steps=5).privacy.notion == "pld"
    rdp_ledger = Ledger(1.0, DELTA, "rdp")  # a Rényi ledger would refuse a PLD-calibrated run's tail
    info = B.dp_sgd(logistic, ledger=rdp_ledger, rng=0, steps=5).info
    assert info["sigma"] == pytest.approx(
        calibrate_gaussian_sigma(1.0, DELTA, steps=5, rate=0.1, sensitivity=info["c_grad"]), rel=1e-9)
    with pytest.raises(ValueError, match="accountant"):
        B.dp_sgd(logistic, epsilon=1.0, delta=DELTA, rng=0, steps=5, accountant="zcdp")


@pytest.mark.parametrize("given", [None, 1.0])
def test_dp_sgd_refuses_a_zcdp_ledger_before_its_count(given):
    """A zCDP ledger (or a zCDP parent of the run's child) cannot account sampled steps; without n_public the
    run released its Gaussian record count first and was refused at the first step: epsilon 0.139 of the ledger
    spent, nothing returned.  Now refused before anything is charged; full batch still runs."""
    X, y = _data(n=100, d=3)
    model = LinearModel("logistic", X, y, l2=1e-2)
    ledger = Ledger(2.0, 1e-6, "zcdp")
    with pytest.raises(ValueError, match="^dp-sgd samples its batches .*zCDP"):
        B.dp_sgd(model, ledger=ledger, epsilon=given, delta=None if given is None else 1e-6, rng=0, steps=5)
    assert ledger.events == []
    full = B.dp_sgd(model, ledger=ledger, epsilon=given, delta=None if given is None else 1e-6, rng=0, steps=5,
                    rate=1.0)
    assert full.events and len(ledger.events) >= 1


def test_dp_sgd_full_batch_is_not_amplified(logistic):
    res = B.dp_sgd(logistic, epsilon=1.0, delta=DELTA, rng=0, steps=5, rate=1.0)
    assert all(isinstance(e, ev.Gaussian) for e in res.events) and len(res.events) == 5
    spent = PLDAccountant(RUN_DISCRETIZATION).compose(ev.SelfComposed(res.events[0], 5)).get_epsilon(DELTA)
    assert spent <= 1.0 * (1 + 1e-9)
    # five full-batch Gaussians are one Gaussian of σ/√5: its exact δ at ε = 1 is within the budget
    assert gaussian_delta(res.info["sigma"] / math.sqrt(5), 1.0, res.info["c_grad"]) <= DELTA


def test_dp_sgd_noise_scale_on_a_zero_gradient_model():
    """With every per-example gradient 0 the first step is pure noise: w₁ = −η·N(0, σ²I)/(qn).

    d = 4000 coordinates give the std to ±1.1 % (1σ); the ±6 % band holds with
    probability > 1 − 1e-7 for the right σ and fails for σ off by a factor 1.2.
    """
    n, d = 500, 4000
    X = np.zeros((n, d))
    X[np.arange(n), np.arange(n) % d] = 1.0
    model = LinearModel("squared", X, np.zeros(n), l2=0.0)  # w = 0 fits y = 0 exactly
    res = B.dp_sgd(model, epsilon=1.0, delta=DELTA, rng=11, steps=1, rate=0.5, lr=1.0, c_grad=1.0)
    expected_std = res.info["sigma"] / (0.5 * n)
    assert np.std(res.x) == pytest.approx(expected_std, rel=0.06)
    assert abs(np.mean(res.x)) < 6 * expected_std / math.sqrt(d)


def test_dp_sgd_default_step_and_clip(logistic, huber):
    # 1/(c R² + μ) with c = sup ℓ'' capped at ¼ for margin losses (the Huberized hinge's is 1)
    for model in (logistic, huber):
        info = B.dp_sgd(model, epsilon=1.0, delta=DELTA, rng=0, steps=1).info
        assert info["lr"] == pytest.approx(1.0 / (0.25 + 1e-2))
        assert info["c_grad"] == 3.0  # §5.4: no declared bound on the rows
    X, y = _data(n=200)
    bounded = LinearModel("huberized_hinge", 2.0 * X, y, l2=1e-2, data_norm=2.0)
    info = B.dp_sgd(bounded, epsilon=1.0, delta=DELTA, rng=0, steps=1).info
    assert info["lr"] == pytest.approx(1.0 / (0.25 * 4.0 + 1e-2))  # R from the model
    assert info["c_grad"] == 2.0  # the per-example gradient bound |ℓ'|·R
    assert B.dp_agd(bounded, epsilon=1.0, delta=DELTA, rng=0, max_iter=1).info["c_grad"] == 2.0
    squared = LinearModel("squared", X, X[:, 0], l2=1e-2)
    assert B.dp_sgd(squared, epsilon=1.0, delta=DELTA, rng=0, steps=1).info["lr"] == pytest.approx(
        1.0 / (1.0 + 1e-2))  # not a margin loss: the classic 1/L
    with pytest.raises(ValueError, match="lr is required"):
        B.dp_sgd(LinearModel("hinge", X, y), epsilon=1.0, delta=DELTA, rng=0, steps=1)


def test_dp_sgd_learns_with_a_large_budget(logistic):
    ref = B.non_private(logistic)
    res = B.dp_sgd(logistic, epsilon=50.0, delta=DELTA, rng=1, steps=200)
    assert logistic.accuracy(res.x) > logistic.accuracy(ref.x) - 0.05


# -- DP-AGD (Lee & Kifer 2018) --------------------------------------------------------------
def test_dp_agd_grid_and_initial_budgets():
    grid = step_grid(2.0, 20)
    assert grid.shape == (21,) and grid[0] == 0.0 and grid[-1] == 2.0
    rho_nmax, rho_ng = initial_budgets(0.6, DELTA, DPAGDHyper())
    eps_nmax = 0.6 / 120
    assert rho_nmax == pytest.approx(eps_nmax**2 / 2)
    sigma_classic = 3.0 * math.sqrt(2 * math.log(1.25 / DELTA)) / eps_nmax  # reference code's compute_sigma
    assert rho_ng == pytest.approx(3.0**2 / (2 * sigma_classic**2))


def test_dp_agd_accounting_matches_what_it_did(logistic):
    eps = 0.3
    res = B.dp_agd(logistic, epsilon=eps, delta=DELTA, rng=5)
    info = res.info
    assert res.privacy.notion == "zcdp" and res.relation == "add_remove"
    _within(res, eps, DELTA)
    gaussians = [e for e in res.events if isinstance(e, ev.Gaussian)]
    maxes = [e for e in res.events if isinstance(e, ev.Exponential)]
    assert len(gaussians) + len(maxes) == len(res.events)
    # every gradient (first or fresh) is followed by exactly one NoisyMin
    kinds = "".join("G" if isinstance(e, ev.Gaussian) else "E" for e in res.events)
    assert kinds == "GE" * len(gaussians)
    assert len(maxes) == info["noisy_max_calls"]
    assert len(gaussians) == res.nit + info["budget_increases"]
    assert info["budget_increases"] > 0  # at this small budget step 0 wins sometimes
    assert all(e.epsilon == pytest.approx(math.sqrt(2 * info["rho_nmax"])) for e in maxes)
    assert all(e.sensitivity == 3.0 for e in gaussians)
    # each gradient has budget ρ_ng (a new iteration) or γρ_ng (an increase, after which ρ_ng grows by 1 + γ)
    rho_ng, increases = info["rho_ng_initial"], 0
    for g in gaussians:
        rho = zcdp_rho(g)
        if rho == pytest.approx(rho_ng, rel=1e-9):
            continue
        assert rho == pytest.approx(0.1 * rho_ng, rel=1e-9)
        rho_ng *= 1.1
        increases += 1
    assert increases == info["budget_increases"]
    assert rho_ng == pytest.approx(info["rho_ng"], rel=1e-9)
    total = ZCDPAccountant()
    for e in res.events:
        total.compose(e)
    rho_total = rho_from_epsilon_delta(eps, DELTA)
    assert total.rho <= rho_total * (1 + 1e-9)
    # it stopped because the next gradient + NoisyMin no longer fitted
    assert info["stop"] == "budget"
    assert total.rho + info["rho_nmax"] + 0.1 * info["rho_ng"] > rho_total * (1 - 1e-9)


def test_dp_agd_converges_with_a_large_budget(logistic):
    ref = B.non_private(logistic)
    res = B.dp_agd(logistic, epsilon=200.0, delta=DELTA, rng=2, max_step=1.0, max_iter=300)
    assert res.fun < ref.fun + 0.05 * abs(ref.fun)


# -- objective perturbation (Chaudhuri et al. 2011, Algorithm 2) ------------------------------
@pytest.mark.parametrize("epsilon, n, reg, c", [(1.0, 1000, 0.01, 0.25), (0.1, 100, 0.001, 1.0)])
def test_objpert_parameters_follow_algorithm_2(epsilon, n, reg, c):
    p = B.objpert_parameters(epsilon, n=n, reg=reg, curvature=c)
    eps_prime = epsilon - math.log(1 + 2 * c / (n * reg) + c**2 / (n**2 * reg**2))
    if eps_prime > 0:
        assert p.extra_l2 == 0.0 and p.epsilon_noise == pytest.approx(eps_prime)
    else:  # step 2: Δ = c/(n(e^{ε/4} − 1)) − Λ and ε' = ε/2
        assert p.extra_l2 == pytest.approx(c / (n * (math.exp(epsilon / 4) - 1)) - reg)
        assert p.epsilon_noise == pytest.approx(epsilon / 2)
    assert p.beta == pytest.approx(p.epsilon_noise / 2)  # step 3: β = ε'/2 for ‖x‖ ≤ 1
    # the Jacobian factor (1 + c/(n(Λ + Δ)))² and the noise part add up to ε (Theorem 9)
    assert p.epsilon_jacobian == pytest.approx(2 * math.log(1 + c / (n * (reg + p.extra_l2))))
    assert p.epsilon_noise + p.epsilon_jacobian == pytest.approx(epsilon)
    assert p.sensitivity == 2.0 and p.noise_scale == pytest.approx(1 / p.beta)


def test_objpert_data_norm_scales_curvature_and_sensitivity():
    p = B.objpert_parameters(1.0, n=500, reg=0.01, curvature=0.25, data_norm=2.0)
    q = B.objpert_parameters(1.0, n=500, reg=0.01, curvature=1.0)  # c' = cR²
    assert p.epsilon_noise == pytest.approx(q.epsilon_noise) and p.sensitivity == 4.0
    assert p.beta == pytest.approx(q.epsilon_noise / 4.0)


@pytest.mark.parametrize("fixture", ["logistic", "huber"])
def test_objpert_releases_the_minimizer_of_the_perturbed_objective(fixture, request):
    model = request.getfixturevalue(fixture)
    eps = 0.8
    res = B.objective_perturbation(model, epsilon=eps, delta=DELTA, rng=7)
    c = model.loss.curvature_bound
    eps_prime = eps - 2 * math.log1p(c / (model.n * model.l2))
    assert eps_prime > 0
    # the ledger holds the two parts of the proof of Theorem 9 and adds up to exactly ε
    jacobian, noise = res.events
    assert isinstance(jacobian, ev.PureDP) and jacobian.epsilon == pytest.approx(eps - eps_prime, rel=1e-12)
    assert isinstance(noise, ev.VectorLaplace) and noise.sensitivity == 2.0
    assert noise.scale == pytest.approx(2.0 / eps_prime, rel=1e-12)
    assert res.privacy.epsilon == pytest.approx(eps) and res.privacy.delta == 0.0
    assert res.relation == "replace_one" and res.guarantee == "approximate"
    # the same seed redraws b; the released w satisfies ∇F(w) + b/n = 0
    b = mech.vector_laplace(np.zeros(model.dim), sensitivity=2.0, scale=2.0 / eps_prime,
                            ledger=Ledger(10.0), rng=np.random.default_rng(7))
    recovered = -model.n * model.grad(res.x)
    assert np.allclose(recovered, b, atol=model.n * 2e-7)


def test_objpert_needs_a_smooth_strongly_convex_margin_model():
    X, y = _data(n=200)
    with pytest.raises(ValueError, match="smooth"):
        B.objective_perturbation(LinearModel("hinge", X, y, l2=0.1), epsilon=1.0, delta=0.0, rng=0)
    with pytest.raises(ValueError, match="l2"):
        B.objective_perturbation(LinearModel("logistic", X, y, l2=0.0), epsilon=1.0, delta=0.0, rng=0)
    with pytest.raises(TypeError, match="LinearModel"):
        B.objective_perturbation(object(), epsilon=1.0, delta=0.0, rng=0)


def test_objpert_projects_rows_outside_the_ball():
    X, y = _data(n=300)
    X = X * 3.0
    res = B.objective_perturbation(LinearModel("logistic", X, y, l2=0.1), epsilon=2.0, delta=0.0, rng=0)
    assert res.info["rows_projected"] > 0


# -- output perturbation (Chaudhuri et al. 2011, Algorithm 1) ---------------------------------
def test_outpert_sensitivity_formula():
    assert B.outpert_sensitivity(n=1000, reg=0.01) == pytest.approx(2 / (1000 * 0.01))
    assert B.outpert_sensitivity(n=1000, reg=0.01, data_norm=3.0, tol=1e-6) == pytest.approx(
        6 / 10 + 2e-6 / 0.01)


def test_minimizer_sensitivity_is_within_corollary_8():
    """‖w*(D) − w*(D')‖ ≤ 2/(nΛ) for neighbours D, D' that differ in one (adversarial) record."""
    n, d, reg = 200, 5, 0.05
    X, y = _data(n=n, d=d, seed=3)
    base = solve_erm(LinearModel("logistic", X, y, l2=reg), tol=1e-10).x
    bound = B.outpert_sensitivity(n=n, reg=reg)
    worst = 0.0
    for k in range(10):
        X2, y2 = X.copy(), y.copy()
        direction = base / np.linalg.norm(base) if k % 2 == 0 else np.eye(d)[k % d]
        X2[k], y2[k] = direction, -np.sign(direction @ base) or 1.0  # a unit-norm, misclassified record
        other = solve_erm(LinearModel("logistic", X2, y2, l2=reg), tol=1e-10).x
        worst = max(worst, float(np.linalg.norm(other - base)))
    assert 0.05 * bound < worst <= bound


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_outpert_adds_the_calibrated_noise_to_the_minimizer(logistic, noise):
    eps = 0.7
    res = B.output_perturbation(logistic, epsilon=eps, delta=DELTA, rng=9, noise=noise)
    sens = 2 / (logistic.n * logistic.l2) + 2 * 1e-7 / logistic.l2
    assert res.info["sensitivity"] == pytest.approx(sens)
    x_hat = solve_erm(logistic, tol=1e-7).x
    replay = Ledger(100.0, DELTA, "rdp")
    rng = np.random.default_rng(9)
    if noise == "gaussian":
        sigma = res.info["noise_scale"]  # by PLD (the default): the exact Gaussian curve up to its grid
        assert res.events == [ev.Gaussian(sigma, sens)] and res.privacy.notion == "pld"
        assert gaussian_delta(sigma, eps, sens) <= DELTA
        analytic = analytic_gaussian_sigma(eps, DELTA, sens)  # exact up to its own root finding (~1 ulp)
        assert analytic * (1 - 1e-12) <= sigma < 1.01 * analytic
        assert sigma < calibrate_gaussian_sigma(eps, DELTA, steps=1, rate=1.0, sensitivity=sens)
        expected = mech.gaussian(x_hat, sensitivity=sens, sigma=sigma, ledger=replay, rng=rng)
    else:
        assert res.events == [ev.VectorLaplace(sens / eps, sens)] and res.privacy.notion == "pure"
        expected = mech.vector_laplace(x_hat, sensitivity=sens, epsilon=eps, ledger=replay, rng=rng)
    assert np.allclose(res.x, expected, atol=1e-12)
    _within(res, eps, DELTA)
    assert res.relation == "replace_one" and res.guarantee == "exact"


def test_outpert_defaults_to_laplace_without_delta(logistic):
    res = B.output_perturbation(logistic, epsilon=1.0, delta=0.0, rng=0)
    assert res.info["noise"] == "laplace" and res.privacy.delta == 0.0
    with pytest.raises(ValueError, match="delta"):
        B.output_perturbation(logistic, epsilon=1.0, delta=0.0, rng=0, noise="gaussian")


def test_outpert_refuses_to_release_an_uncertified_solution(logistic):
    with pytest.raises(RuntimeError, match="nothing was released"):
        B.output_perturbation(logistic, epsilon=1.0, delta=DELTA, rng=0, tol=1e-30)


# -- references and the external baseline --------------------------------------------------
def test_non_private_matches_scikit_learn(logistic):
    sklearn = pytest.importorskip("sklearn.linear_model", reason="scikit-learn cross-check")
    res = B.non_private(logistic)
    clf = sklearn.LogisticRegression(C=1.0 / (logistic.n * logistic.l2), fit_intercept=False, tol=1e-12,
                                     max_iter=10_000).fit(logistic.X, logistic.y)
    assert np.allclose(res.x, clf.coef_[0], atol=1e-5)
    assert res.guarantee == "none" and res.events == [] and math.isinf(res.privacy.epsilon)


def test_majority_is_the_exponential_mechanism_on_the_counts():
    X = np.zeros((40, 2))
    y = np.array([1.0] * 23 + [-1.0] * 17)
    model = LinearModel("logistic", X, y, l2=0.1)
    eps = 0.2
    labels = np.array([B.majority(model, epsilon=eps, delta=0.0, rng=s).info["constant_label"]
                       for s in range(3000)])
    p_plus = mech.exponential_probabilities(np.array([17.0, 23.0]), epsilon=eps, sensitivity=1.0)[1]
    # 3000 draws: the frequency is within 5 standard errors (two-sided, p ≈ 6e-7)
    assert abs(np.mean(labels == 1.0) - p_plus) < 5 * math.sqrt(p_plus * (1 - p_plus) / 3000)
    res = B.majority(model, epsilon=50.0, delta=0.0, rng=0)
    assert res.info["constant_label"] == 1.0 and res.events == [ev.Exponential(50.0)]
    assert res.privacy.notion == "pure"


def test_diffprivlib_baseline(logistic, huber):
    if not B.diffprivlib_available():
        pytest.skip("diffprivlib (optional dependency) is not installed")
    res = B.diffprivlib_lr(logistic, epsilon=20.0, delta=DELTA, rng=0)
    assert res.method == "diffprivlib" and res.events == [ev.PureDP(20.0)]
    assert res.privacy.notion == "pure" and res.relation == "replace_one"
    assert logistic.accuracy(res.x) > 0.8
    again = B.diffprivlib_lr(logistic, epsilon=20.0, delta=DELTA, rng=0)
    assert np.array_equal(res.x, again.x)  # seeded from rng
    with pytest.raises(ValueError, match="logistic"):
        B.diffprivlib_lr(huber, epsilon=1.0, delta=0.0, rng=0)


# -- validation --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [B.dp_sgd, B.dp_agd, B.objective_perturbation, B.output_perturbation, B.majority])
def test_bad_budgets_are_refused(fn, logistic):
    with pytest.raises(ValueError, match="epsilon"):
        fn(logistic, epsilon=0.0, delta=DELTA, rng=0)
    with pytest.raises(ValueError, match="delta"):
        fn(logistic, epsilon=1.0, delta=1.0, rng=0)


@pytest.mark.parametrize("fn", [B.dp_sgd, B.dp_agd])
def test_gradient_methods_need_delta(fn, logistic):
    with pytest.raises(ValueError, match="delta"):
        fn(logistic, epsilon=1.0, delta=0.0, rng=0)


def test_unknown_and_bad_hyper_parameters(logistic):
    with pytest.raises(TypeError, match="stepsize"):
        B.dp_sgd(logistic, epsilon=1.0, delta=DELTA, rng=0, stepsize=1.0)
    with pytest.raises(ValueError, match="rate"):
        B.dp_sgd(logistic, epsilon=1.0, delta=DELTA, rng=0, rate=1.5)
    with pytest.raises(ValueError, match="c_obj"):
        B.dp_agd(logistic, epsilon=1.0, delta=DELTA, rng=0, c_obj=-1.0)
    with pytest.raises(ValueError, match="noise"):
        B.output_perturbation(logistic, epsilon=1.0, delta=DELTA, rng=0, noise="cauchy")
    with pytest.raises(TypeError, match="PrivateModel"):
        B.dp_sgd(np.zeros(3), epsilon=1.0, delta=DELTA, rng=0)


def test_secure_noise_releases_exact_discrete_noise_within_the_budget(logistic):
    res = B.dp_sgd(logistic, epsilon=1.0, delta=DELTA, rng=0, steps=8, rate=0.2, secure_noise=True)
    assert all(isinstance(e.event, ev.DiscreteGaussian) for e in res.events) and len(res.events) == 8
    assert res.privacy.epsilon <= 1.0 and res.privacy.epsilon > 0.99  # calibrated for the discrete event
    out = B.output_perturbation(logistic, epsilon=1.0, delta=DELTA, rng=0, noise="gaussian", secure_noise=True)
    (event,) = out.events
    assert isinstance(event, ev.DiscreteGaussian) and out.privacy.epsilon <= 1.0
    grid = mech.secure_event(ev.Gaussian(out.info["noise_scale"], out.info["sensitivity"]), out.x.size)[1]
    assert np.all(out.x / grid == np.rint(out.x / grid))  # the release lies on the grid
    with pytest.raises(ValueError, match="secure_noise"):
        B.output_perturbation(logistic, epsilon=1.0, delta=0.0, rng=0, noise="laplace", secure_noise=True)


def test_secure_dp_sgd_releases_its_record_count_exactly_too(logistic):
    undeclared = LinearModel("logistic", logistic.X, logistic.y, l2=1e-2)  # no n_public: a noisy count first
    res = B.dp_sgd(undeclared, epsilon=1.0, delta=DELTA, rng=0, steps=4, rate=0.2, secure_noise=True)
    assert isinstance(res.events[0], ev.DiscreteGaussian)  # the count, on a grid with exact noise
    assert all(isinstance(e.event, ev.DiscreteGaussian) for e in res.events[1:]) and len(res.events) == 5
    assert res.privacy.epsilon <= 1.0
