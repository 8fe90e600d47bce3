"""Mechanisms 1–3, the minimize entry point and the audit-ready release functions.

Statistical tests use fixed seeds; each states its threshold.  They are sized
so that the correct noise passes with overwhelming probability and noise off
by the factors that matter here (√m, √d, 2) fails.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

from dpopt.piecewise import (
    METHODS,
    RELATION,
    PiecewiseAffineProblem,
    Polytope,
    audit_target,
    minimize,
    release_function,
    solve,
    subgradient_method,
)
from dpopt.privacy import BudgetExceededError, Ledger
from dpopt.privacy import events as ev
from dpopt.result import DPResult


def problem(seed=0, m=12, d=3, c=1.0, b_max=1.0):
    return PiecewiseAffineProblem.gaussian(m, d, c=c, b_max=b_max, rng=seed)


FAST = {"exponential": {"steps": 200}}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_mechanism_returns_a_charged_result(method):
    p = problem()
    res = minimize(p, 0.7, method=method, repetitions=5, rng=1, **FAST.get(method, {}))
    assert isinstance(res, DPResult) and res.method == method
    assert res.x.shape == (5, 3) and res.fun.shape == (5,)
    np.testing.assert_allclose(res.fun, p.value(res.x))
    assert np.all(p.polytope.contains(res.x, tol=1e-7))
    assert res.epsilon == pytest.approx(0.7) and res.delta == 0.0
    assert res.relation == RELATION and res.privacy.notion == "pure"
    assert res.guarantee == ("approximate" if method == "exponential" else "exact")
    single = minimize(p, 0.7, method=method, rng=1, **FAST.get(method, {}))
    assert single.x.shape == (3,) and np.ndim(single.fun) == 0
    again = minimize(p, 0.7, method=method, repetitions=5, rng=1, **FAST.get(method, {}))
    np.testing.assert_array_equal(again.x, res.x)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_general_polytope_path(method):
    # A triangle (no box fast path): Dykstra projection, Chebyshev-centre start, LP with G x <= h.
    triangle = Polytope(np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0, 1.0]))
    rng = np.random.default_rng(2)
    p = PiecewiseAffineProblem(
        rng.normal(size=(6, 2)), rng.normal(size=6), b_max=0.5, polytope=triangle
    )
    res = minimize(p, 2.0, method=method, repetitions=6, rng=0, **FAST.get(method, {}))
    assert res.x.shape == (6, 2) and np.all(triangle.contains(res.x, tol=1e-7))
    assert np.all(res.fun >= solve(p).fun - 1e-7)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_release_functions_and_audit_targets(method):
    p = problem()
    fn = release_function(p, method, 1.0, **FAST.get(method, {}))
    neighbour = p.b.copy()
    neighbour[2] += p.b_max  # one offset moved by b_max: adjacent under eq. (4)
    for b in (p.b, neighbour):
        out, ledger = fn(b, 7, np.random.default_rng(0))
        assert out.shape == (7, 3) and np.all(np.isfinite(out))
        assert ledger.spent().epsilon == pytest.approx(1.0) and ledger.relation == RELATION
    target = audit_target(p, method, 1.0, samples=40, **FAST.get(method, {}))
    shift = target.neighbour - target.data
    np.testing.assert_allclose(np.abs(shift), p.b_max)
    active = np.argmax(p.scores(solve(p).x))
    assert shift[active] == pytest.approx(p.b_max) and np.sum(shift > 0) == 1
    out, ledger = target.run(target.neighbour, 4, np.random.default_rng(1))
    assert out.shape == (4, 3) and len(ledger.events) >= 1
    with pytest.raises(ValueError, match="b_max"):
        audit_target(p, method, 1.0, shift=np.full(p.m, 2 * p.b_max))


def test_laplace_data_charges_the_thm_16_sensitivity():
    p = problem(m=16)
    res = minimize(p, 0.5, method="laplace-data", repetitions=2, rng=0)
    assert res.events == [ev.VectorLaplace(scale=4.0 / 0.5, sensitivity=4.0)]


def test_laplace_data_noise_scale_through_the_lp():
    # f(x) = |x − y| on a wide interval: pieces (1, −y), (−1, y).  With b̃ = b + w the perturbed
    # minimizer is x* = y + (w₂ − w₁)/2, and for 2-D vector Laplace of scale s = √2·b_max/ε,
    # Var(x*) = 3 s²/2 = 3 b_max²/ε².  Kurtosis 5 ⇒ the variance ratio at N = 1000 has sd ≈ 0.063;
    # the band [0.75, 1.25] is 4 sd wide, while a missing √m (ratio 0.5) or a factor 2 fails.
    y, b_max, eps = 0.7, 0.5, 1.0
    p = PiecewiseAffineProblem.linf_norm([y], center_change=b_max, polytope=Polytope.cube(200.0, 1))
    x = minimize(p, eps, method="laplace-data", repetitions=1000, rng=5).x[:, 0]
    ratio = np.mean((x - y) ** 2) / (3 * b_max**2 / eps**2)
    assert 0.75 < ratio < 1.25


@pytest.mark.parametrize("paper_scaling", [False, True])
def test_laplace_solution_radius_and_direction_goodness_of_fit(paper_scaling):
    # Unprojected output − x_opt has radius ~ Gamma(d, scale) and a uniform direction; for
    # d = 4 the cosine with a fixed axis satisfies (t + 1)/2 ~ Beta(3/2, 3/2).  KS tests at
    # N = 4000: pass at the 1e-3 level; the other scaling (a factor √d = 2) gives p < 1e-10.
    d, eps = 4, 1.0
    p = problem(d=d, c=0.5)
    res = minimize(
        p,
        eps,
        method="laplace-solution",
        repetitions=4000,
        rng=8,
        project=False,
        paper_scaling=paper_scaling,
    )
    w = res.x - solve(p).x
    diameter = p.polytope.diameter
    scale = diameter / eps * (np.sqrt(d) if paper_scaling else 1.0)
    radius = np.linalg.norm(w, axis=1)
    assert stats.kstest(radius, stats.gamma(d, scale=scale).cdf).pvalue > 1e-3
    other = diameter / eps * (1.0 if paper_scaling else np.sqrt(d))
    assert stats.kstest(radius, stats.gamma(d, scale=other).cdf).pvalue < 1e-10
    cosine = w[:, 0] / radius
    assert stats.kstest((cosine + 1) / 2, stats.beta(1.5, 1.5).cdf).pvalue > 1e-3
    assert res.info["noise_scale"] == pytest.approx(scale)
    assert res.epsilon == pytest.approx(eps / np.sqrt(d) if paper_scaling else eps)
    assert ("extra sqrt(d)" in res.notes) == paper_scaling


def test_laplace_solution_projection_is_the_default():
    p = problem(c=0.2)
    projected = minimize(p, 0.1, method="laplace-solution", repetitions=50, rng=3)
    raw = minimize(p, 0.1, method="laplace-solution", repetitions=50, rng=3, project=False)
    assert projected.info["projected"] and "post-processing" in projected.notes
    assert np.all(p.polytope.contains(projected.x)) and not np.all(p.polytope.contains(raw.x))
    np.testing.assert_allclose(projected.x, p.polytope.project(raw.x))


def test_exponential_mechanism_samples_the_thm_19_density():
    # f(x) = |x − 0.2| on [−1, 1], ε = 4, b_max = 1: density ∝ exp(−2|x − 0.2|).  2000 independent
    # chains of 1500 steps; KS against the exact CDF passes at 1e-3, while the density without
    # the factor 2 of (8), ∝ exp(−4|x − 0.2|), is rejected with p < 1e-6.
    p = PiecewiseAffineProblem.linf_norm([0.2], center_change=1.0, polytope=Polytope.cube(1.0, 1))
    res = minimize(p, 4.0, method="exponential", repetitions=2000, rng=4, steps=1500)
    grid = np.linspace(-1.0, 1.0, 20_001)

    def cdf_for(rate):
        dens = np.exp(-rate * np.abs(grid - 0.2))
        cum = np.concatenate([[0.0], np.cumsum((dens[1:] + dens[:-1]) / 2)])
        return lambda x: np.interp(x, grid, cum / cum[-1])

    assert stats.kstest(res.x[:, 0], cdf_for(2.0)).pvalue > 1e-3
    assert stats.kstest(res.x[:, 0], cdf_for(4.0)).pvalue < 1e-6
    assert res.guarantee == "approximate" and "MCMC limit" in res.notes
    assert 0.0 < res.info["acceptance_rate"] < 1.0 and res.info["rhat"] < 1.05
    assert res.info["proposal_std"] == pytest.approx(np.sqrt(0.1 * 1.0))  # Σ = η c I, a variance
    assert res.events == [ev.Exponential(4.0)]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_refused_budget_releases_nothing(method):
    ledger = Ledger(0.05, relation=RELATION)
    with pytest.raises(BudgetExceededError):
        minimize(problem(), 0.1, method=method, ledger=ledger, rng=0, **FAST.get(method, {}))
    assert ledger.events == []


def test_a_shared_ledger_composes_two_releases():
    ledger = Ledger(1.0, relation=RELATION)
    p = problem()
    minimize(p, 0.4, method="laplace-solution", ledger=ledger, rng=0)
    res = minimize(p, 0.6, method="subgradient", ledger=ledger, rng=0, iterations=10)
    assert res.epsilon == pytest.approx(1.0) and len(res.events) == 11


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"method": "simplex"}, ValueError, "method"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": float("nan")}, ValueError, "epsilon"),
        ({"repetitions": 0}, ValueError, "repetitions"),
        ({"rng": "seed"}, TypeError, "rng"),
        ({"ledger": Ledger(1.0)}, ValueError, "relation"),
        ({"ledger": "budget"}, TypeError, "ledger"),
        ({"method": "exponential", "steps": 2}, ValueError, "steps"),
        ({"method": "exponential", "x0": [5.0, 0.0, 0.0]}, ValueError, "x0"),
        ({"method": "exponential", "eta": -0.1}, ValueError, "eta"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    args = {"epsilon": 1.0, "method": "laplace-data", **kwargs}
    with pytest.raises(exc, match=match):
        minimize(problem(), args.pop("epsilon"), **args)
    with pytest.raises(TypeError, match="PiecewiseAffineProblem"):
        minimize("problem", 1.0)


# --------------------------------------------------------------------------- secure_noise=True


@pytest.mark.parametrize("method", ["laplace-data", "laplace-solution", "subgradient"])
def test_secure_noise_charges_the_exact_events_at_the_float_plan(method):
    p = problem()
    options = {"iterations": 20} if method == "subgradient" else {}
    plain = minimize(p, 0.7, method=method, repetitions=4, rng=1, **options)
    exact = minimize(p, 0.7, method=method, repetitions=4, rng=1, secure_noise=True, **options)
    assert exact.epsilon == pytest.approx(plain.epsilon, rel=1e-12) and exact.epsilon <= 0.7
    assert exact.info["secure_noise"] and exact.x.shape == (4, 3) and np.all(np.isfinite(exact.fun))
    if method == "subgradient":  # the same selections, each drawn exactly
        assert exact.events == plain.events == [ev.Exponential(0.7 / 20)] * 20
        return
    (event,) = exact.events
    l1 = p.m * p.b_max if method == "laplace-data" else p.polytope.l1_diameter
    assert isinstance(event, ev.DiscreteLaplace) and exact.info["sensitivity"] == l1
    coordinates = 4 * (p.m if method == "laplace-data" else p.d)  # the rounding adds one grid step each
    assert event.sensitivity == np.floor(l1 / exact.info["grid"]) + coordinates


def test_secure_laplace_solution_is_per_coordinate_discrete_laplace_on_the_grid():
    p = problem(d=3, c=1.0)
    R, eps = 2000, 1.0
    res = minimize(p, eps, method="laplace-solution", repetitions=R, rng=0, project=False, secure_noise=True)
    grid = res.info["grid"]
    assert np.all(np.mod(res.x, grid) == 0.0)  # unprojected releases are grid points
    noise = res.x - np.rint(solve(p).x / grid) * grid
    # per-coordinate Laplace of scale L1 diam/ε = 6 (std 8.49); Thm 9's vector Laplace would give
    # per-coordinate std √(d+1)·diam/ε = 6.93; the sample std of 6000 draws is within 6 % (> 4 sd)
    assert np.std(noise) == pytest.approx(np.sqrt(2) * p.polytope.l1_diameter / eps, rel=0.06)


def test_secure_noise_is_near_its_non_private_limit_at_large_epsilon():
    p = problem()
    optimum = solve(p).fun
    for method in ("laplace-data", "laplace-solution"):
        res = minimize(p, 1e5, method=method, repetitions=3, rng=0, secure_noise=True)
        assert np.max(res.fun) < optimum + 1e-3, method
    # 100 exact selections at ε/k = 1000 follow the true subgradients of the non-private method
    reference = p.value(subgradient_method(p, 100).x)
    res = minimize(p, 1e5, method="subgradient", repetitions=3, rng=0, secure_noise=True)
    assert np.max(np.abs(res.fun - reference)) < 0.01


def test_exponential_mechanism_refuses_secure_noise_and_names_the_methods_that_accept_it():
    ledger = Ledger(1.0, relation=RELATION)
    with pytest.raises(ValueError, match="laplace-data, laplace-solution, subgradient, not 'exponential'") as info:
        minimize(problem(), 0.5, method="exponential", ledger=ledger, secure_noise=True)
    assert "\n" not in str(info.value) and ledger.events == []


@pytest.mark.parametrize("method", sorted(METHODS))
def test_released_record_does_not_depend_on_the_offsets(method):
    """What ``release()`` carries besides x (the privacy record, its notes included) is the same on
    neighbouring offsets.  The exponential mechanism's notes used to print the chains' mean acceptance
    rate and the split-Rhat of f = max(Ax + b), both read from the private b along the whole chain: on
    f = |x - y| over [-1, 1] at ε = 1, y = 0 against y = 1 (‖b - b'‖∞ = b_max), the released rate averaged
    0.847 against 0.818 (sd 0.006-0.008, 40 seeds each) and a threshold between told the two apart in
    79 of 80 runs, far beyond what ε = 1 allows."""
    polytope = Polytope.cube(1.0, 1)
    here, there = (PiecewiseAffineProblem.linf_norm([y], center_change=1.0, polytope=polytope) for y in (0.0, 1.0))
    assert np.max(np.abs(here.b - there.b)) <= here.b_max
    records = [
        minimize(p, 1.0, method=method, repetitions=4, rng=0, **FAST.get(method, {})).release()["privacy"]
        for p in (here, there)
    ]
    assert records[0] == records[1]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_huge_offsets_neither_raise_nor_warn_on_one_neighbour_only(method):
    """One offset of 1e300 (b_max = 1e300: D and D' are neighbours) used to make mechanism 2 raise
    before its charge on D' only ("epigraph LP failed (status 2)": HiGHS reads a right-hand side
    -b_i <= -1e20 as -inf; 336 of 400 random problems with large offsets failed), and the exponential
    mechanism's split-Rhat overflow into a RuntimeWarning on D' only."""
    here = PiecewiseAffineProblem(np.array([[1.0], [-1.0], [0.5]]), [0.0, 0.0, 0.0], b_max=1e300,
                                  polytope=Polytope.cube(1.0, 1))
    there = here.with_b([0.0, 0.0, 1e300])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = [
            minimize(p, 1.0, method=method, repetitions=3, rng=0, **FAST.get(method, {})).release()["privacy"]
            for p in (here, there)
        ]
    assert records[0] == records[1]


def test_offsets_of_both_signs_near_the_float_range_neither_raise_nor_warn():
    """The LP's shift max(b) − b overflowed for b = (−1.7e308, 0, 1.7e308) (b_max = 1.7e308: a neighbour of
    b = 0): "overflow encountered in subtract" from mechanism 2 on that neighbour only.  The gap is the
    largest float now (HiGHS's +∞), and the minimizer is that of the dominant piece."""
    from dpopt.piecewise.solver import EpigraphLP

    here = PiecewiseAffineProblem(np.array([[1.0], [-1.0], [0.5]]), [0.0, 0.0, 0.0], b_max=1.7e308,
                                  polytope=Polytope.cube(1.0, 1))
    there = here.with_b([-1.7e308, 0.0, 1.7e308])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, _ = EpigraphLP(there.A, there.polytope).solve_one(there.b)
        records = [minimize(p, 1.0, method="laplace-solution", repetitions=2, rng=0).release()["privacy"]
                   for p in (here, there)]
    assert x == pytest.approx([-1.0]) and records[0] == records[1]


def test_a_subgradient_run_longer_than_can_run_is_refused_before_anything_is_charged():
    # iterations=10**9 allocated k step sizes (8 GB) and ran silently; the limit is the families' one
    ledger = Ledger(1.0, relation=RELATION)
    with pytest.raises(ValueError, match=r"iterations must be in \[1, 10000000\]") as info:
        minimize(problem(), 0.5, method="subgradient", ledger=ledger, rng=0, iterations=10**9)
    assert "\n" not in str(info.value) and ledger.events == []


@pytest.mark.parametrize("method, secure, k", [("laplace-data", True, 2), ("laplace-solution", True, 17),
                                              ("laplace-solution", False, 13)])
def test_the_laplace_mechanisms_fit_their_scale_to_epsilon_as_the_ledger_charges_it(method, secure, k):
    """The charged event's epsilon is Delta/b only up to rounding: one ulp over epsilon, the mechanism's own ledger
    refused it (BudgetExceededError, nothing released) for 6 of 60 epsilons in [1e-4, 10] with secure noise
    (laplace-data, laplace-solution) and 1 without (laplace-solution, whose scale was Delta/epsilon)."""
    epsilon = float(np.geomspace(1e-4, 10, 60)[k])
    A = np.array([[1.0, 0.5], [-1.0, 0.2], [0.3, -1.0]])
    problem = PiecewiseAffineProblem(A, np.zeros(3), b_max=1.0, polytope=Polytope.cube(1.0, 2))
    result = minimize(problem, epsilon, method, rng=0, secure_noise=secure)
    assert 0.0 < result.epsilon <= epsilon and result.epsilon == pytest.approx(epsilon, rel=1e-12)
