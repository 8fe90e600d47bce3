"""The problem class, the paper's example constructors and their sensitivities."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from dpopt.piecewise import PiecewiseAffineProblem, Polytope, resource_allocation_pieces


def random_problem(m=7, d=3, seed=0, b_max=0.5):
    return PiecewiseAffineProblem.gaussian(m, d, c=1.5, b_max=b_max, rng=seed)


def test_value_scores_and_lipschitz():
    p = random_problem()
    x = np.random.default_rng(1).normal(size=(5, 3))
    expected = np.array([max(p.A[i] @ xi + p.b[i] for i in range(p.m)) for xi in x])
    np.testing.assert_allclose(p.value(x), expected)
    assert p.scores(x).shape == (5, p.m)
    assert p.lipschitz == pytest.approx(max(np.linalg.norm(a) for a in p.A))
    # A batch of databases, one per repetition.
    B = p.b + np.arange(5)[:, None]
    np.testing.assert_allclose(p.value(x, B), expected + np.arange(5))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_subgradient_satisfies_inequality_11(seed):
    p = random_problem(m=9, d=4, seed=seed)
    rng = np.random.default_rng(seed + 1)
    x0 = rng.normal(size=4)
    ys = rng.normal(scale=3.0, size=(50, 4))
    g = p.subgradient(x0)
    assert np.all(p.value(ys) >= p.value(x0) + (ys - x0) @ g - 1e-9)


def test_gaussian_instances_are_nested():
    big = PiecewiseAffineProblem.gaussian(50, 4, c=1.0, b_max=1.0, rng=7)
    small = PiecewiseAffineProblem.gaussian(10, 4, c=1.0, b_max=1.0, rng=7)
    np.testing.assert_array_equal(big.take(10).A, small.A)
    np.testing.assert_array_equal(big.take(10).b, small.b)
    with pytest.raises(ValueError, match="m must be <= 50"):
        big.take(51)


def test_linf_and_l1_norm_examples():
    P = Polytope.cube(3.0, 3)
    y = np.array([0.5, -1.0, 2.0])
    x = np.random.default_rng(2).uniform(-3, 3, size=(20, 3))
    linf = PiecewiseAffineProblem.linf_norm(y, center_change=0.25, polytope=P)
    l1 = PiecewiseAffineProblem.l1_norm(y, center_change=0.25, polytope=P)
    assert linf.m == 6 and l1.m == 8
    np.testing.assert_allclose(linf.value(x), np.max(np.abs(x - y), axis=1))
    np.testing.assert_allclose(l1.value(x), np.sum(np.abs(x - y), axis=1))
    assert linf.b_max == 0.25 and l1.b_max == 0.75
    # The declared b_max is the exact worst case of a center change of 0.25 in sup-norm.
    for prob, ctor in (
        (linf, PiecewiseAffineProblem.linf_norm),
        (l1, PiecewiseAffineProblem.l1_norm),
    ):
        moved = ctor(y + 0.25 * np.array([1.0, -1.0, 1.0]), center_change=0.25, polytope=P)
        assert np.max(np.abs(moved.b - prob.b)) == pytest.approx(prob.b_max)
    with pytest.raises(ValueError, match="d must be <= 16"):
        PiecewiseAffineProblem.l1_norm(
            np.zeros(17), center_change=1.0, polytope=Polytope.cube(1.0, 17)
        )


@pytest.mark.parametrize("seed", range(6))
def test_resource_allocation_closed_form_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 7))
    gains = np.round(rng.normal(1.0, 1.0, size=n), 1)  # rounding makes ties and negatives likely
    nu, lam = resource_allocation_pieces(gains)
    nu_bf, lam_bf = resource_allocation_pieces(gains, brute_force=True)
    np.testing.assert_allclose(nu, nu_bf, atol=1e-9)
    np.testing.assert_allclose(lam, lam_bf, atol=1e-9)


def test_resource_allocation_brute_force_stops_scaling():
    with pytest.raises(ValueError, match="small instances"):
        resource_allocation_pieces(np.ones(12), brute_force=True)
    nu, lam = resource_allocation_pieces(np.linspace(0.1, 3.0, 500))  # closed form: 501 vertices
    assert nu.shape == (501,) and lam.shape == (501, 500)


def test_resource_allocation_reproduces_the_primal_lp_5():
    rng = np.random.default_rng(4)
    gains = rng.uniform(0.5, 3.0, size=5)
    zbar = rng.uniform(0.2, 2.0, size=5)
    price = 1.2
    prob = PiecewiseAffineProblem.resource_allocation(
        gains, zbar, price=price, demand_change=0.1, x_max=10.0
    )
    for x in np.linspace(0.0, 10.0, 23):
        primal = linprog(
            -gains, A_ub=np.ones((1, 5)), b_ub=[x], bounds=list(zip(np.zeros(5), zbar, strict=True))
        )
        utility = -primal.fun
        assert prob.value(np.array([x])) == pytest.approx(price * x - utility, abs=1e-8)
    # b_max is the exact worst case over one agent's demand changing by 0.1.
    worst = 0.0
    for j in range(5):
        moved = zbar.copy()
        moved[j] += 0.1
        other = PiecewiseAffineProblem.resource_allocation(
            gains, moved, price=price, demand_change=0.1, x_max=10.0
        )
        worst = max(worst, np.max(np.abs(other.b - prob.b)))
    assert worst == pytest.approx(prob.b_max)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: PiecewiseAffineProblem(
                np.ones((3, 2)), np.ones(2), b_max=1.0, polytope=Polytope.cube(1.0, 2)
            ),
            ValueError,
            "b must have shape",
        ),
        (
            lambda: PiecewiseAffineProblem(
                np.ones((3, 2)), np.ones(3), b_max=0.0, polytope=Polytope.cube(1.0, 2)
            ),
            ValueError,
            "b_max",
        ),
        (
            lambda: PiecewiseAffineProblem(
                np.ones((3, 2)), np.ones(3), b_max=1.0, polytope=Polytope.cube(1.0, 3)
            ),
            ValueError,
            "dimension",
        ),
        (
            lambda: PiecewiseAffineProblem(
                np.ones((3, 2)), [1.0, np.nan, 0.0], b_max=1.0, polytope=Polytope.cube(1.0, 2)
            ),
            ValueError,
            "NaN",
        ),
        (
            lambda: PiecewiseAffineProblem(np.ones((3, 2)), np.ones(3), b_max=1.0, polytope="box"),
            TypeError,
            "polytope",
        ),
        (
            lambda: PiecewiseAffineProblem.resource_allocation(
                [-1.0, -2.0], [1.0, 1.0], price=1.0, demand_change=0.1, x_max=1.0
            ),
            ValueError,
            "positive",
        ),
        (lambda: random_problem().value(np.zeros(4)), ValueError, "last axis"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
