"""The exact epigraph LP against brute force on small instances."""

import numpy as np
import pytest

from dpopt.piecewise import EpigraphLP, PiecewiseAffineProblem, Polytope, enumerate_vertices, solve


def brute_force_minimum(problem):
    """min f over P by enumerating the vertices of the epigraph {(x, t): A x + b ≤ t, x ∈ P}."""
    M_P, q_P = problem.polytope.halfspaces()
    M = np.vstack(
        [
            np.hstack([problem.A, -np.ones((problem.m, 1))]),
            np.hstack([M_P, np.zeros((M_P.shape[0], 1))]),
        ]
    )
    q = np.concatenate([-problem.b, q_P])
    V = enumerate_vertices(M, q)
    best = np.argmin(V[:, -1])
    return V[best, :-1], V[best, -1]


POLYTOPES = {
    "box1": Polytope.cube(1.3, 1),
    "box2": Polytope(lower=[-1.0, -0.5], upper=[2.0, 0.5]),
    "pentagon": Polytope(
        np.array([[1.0, 1.0]]), np.array([1.5]), lower=[0.0, 0.0], upper=[1.0, 1.0]
    ),
    "triangle": Polytope(
        np.array([[-1.0, 0.0], [0.0, -1.0], [1.0, 1.0]]), np.array([0.0, 0.0, 1.0])
    ),
}


@pytest.mark.parametrize("name", sorted(POLYTOPES))
@pytest.mark.parametrize("seed", range(5))
def test_lp_matches_vertex_enumeration(name, seed):
    P = POLYTOPES[name]
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 7))
    problem = PiecewiseAffineProblem(
        rng.normal(size=(m, P.dim)), rng.normal(size=m), b_max=1.0, polytope=P
    )
    sol = solve(problem)
    x_bf, f_bf = brute_force_minimum(problem)
    assert sol.fun == pytest.approx(f_bf, abs=1e-7)
    assert problem.value(sol.x) == pytest.approx(f_bf, abs=1e-7)
    assert P.contains(sol.x, tol=1e-7)


@pytest.mark.parametrize("seed", range(3))
def test_lp_beats_a_fine_grid(seed):
    P = Polytope(lower=[-1.0, -2.0], upper=[1.0, 0.5])
    rng = np.random.default_rng(seed)
    problem = PiecewiseAffineProblem(
        rng.normal(size=(8, 2)), rng.normal(size=8), b_max=1.0, polytope=P
    )
    g1, g2 = np.meshgrid(np.linspace(-1, 1, 401), np.linspace(-2, 0.5, 501), indexing="ij")
    grid = np.stack([g1.ravel(), g2.ravel()], axis=1)
    grid_min = problem.value(grid).min()
    spacing = np.hypot(2 / 400, 2.5 / 500)
    f_opt = solve(problem).fun
    assert f_opt <= grid_min + 1e-9
    assert f_opt >= grid_min - problem.lipschitz * spacing


def test_batched_solve_equals_one_by_one():
    problem = PiecewiseAffineProblem.gaussian(12, 3, c=1.0, b_max=1.0, rng=9)
    lp = EpigraphLP(problem.A, problem.polytope)
    B = problem.b + np.random.default_rng(0).normal(size=(2, 3, 12))
    batch = lp.solve(B)
    assert batch.x.shape == (2, 3, 3) and batch.fun.shape == (2, 3)
    for idx in np.ndindex(2, 3):
        one = lp.solve(B[idx])
        np.testing.assert_allclose(batch.fun[idx], one.fun)
        np.testing.assert_allclose(problem.value(batch.x[idx], B[idx]), one.fun, atol=1e-9)


def test_norm_examples_have_known_optima():
    P = Polytope.cube(2.0, 3)
    y = np.array([0.3, -1.1, 1.9])
    for ctor in (PiecewiseAffineProblem.linf_norm, PiecewiseAffineProblem.l1_norm):
        sol = solve(ctor(y, center_change=0.1, polytope=P))
        assert sol.fun == pytest.approx(0.0, abs=1e-9)
        np.testing.assert_allclose(sol.x, y, atol=1e-7)
    outside = np.array([3.0, 0.0, 0.0])  # projection onto the cube is at distance 1 in both norms
    assert solve(PiecewiseAffineProblem.linf_norm(outside, center_change=0.1, polytope=P)).fun == (
        pytest.approx(1.0)
    )


def test_solver_validation():
    problem = PiecewiseAffineProblem.gaussian(4, 2, c=1.0, b_max=1.0, rng=0)
    with pytest.raises(ValueError, match="last axis of length 4"):
        solve(problem, b=np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        solve(problem, b=np.array([0.0, np.nan, 0.0, 0.0]))
