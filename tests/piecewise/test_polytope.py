"""The constraint set P: box fast path, general polytopes, projection, diameter, vertices."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize as scipy_minimize

from dpopt.piecewise import Polytope, enumerate_vertices


def simplex(d=2, scale=1.0):
    """{x ≥ 0, Σx ≤ scale} written with G only (the box left infinite)."""
    G = np.vstack([-np.eye(d), np.ones((1, d))])
    h = np.concatenate([np.zeros(d), [scale]])
    return Polytope(G, h)


def test_cube_fast_path():
    P = Polytope.cube(2.0, 3)
    assert P.is_box and P.dim == 3
    assert P.diameter == pytest.approx(2 * np.sqrt(3) * 2.0) and P.diameter_is_exact
    assert P.halfwidth == 2.0
    np.testing.assert_array_equal(P.center, np.zeros(3))
    x = np.array([[3.0, -5.0, 1.0], [0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(P.contains(x), [False, True])
    np.testing.assert_array_equal(P.project(x), [[2.0, -2.0, 1.0], [0.0, 0.0, 0.0]])
    assert P.vertices().shape == (8, 3)


def test_general_polytope_geometry():
    P = simplex(2)
    assert not P.is_box
    np.testing.assert_allclose(P.box_lower, [0, 0], atol=1e-9)
    np.testing.assert_allclose(P.box_upper, [1, 1], atol=1e-9)
    V = P.vertices()
    expected = {(0.0, 0.0), (1.0, 0.0), (0.0, 1.0)}
    assert {tuple(np.round(v, 9) + 0.0) for v in V} == expected
    assert P.diameter == pytest.approx(np.sqrt(2)) and P.diameter_is_exact
    # Chebyshev centre of the right triangle with legs 1: radius 1/(2 + √2).
    assert P.inradius == pytest.approx(1 / (2 + np.sqrt(2)), rel=1e-7)
    assert P.contains(P.center)


def test_dykstra_projection_matches_a_qp_solver():
    P = simplex(3, 2.0)
    rng = np.random.default_rng(3)
    Y = rng.normal(scale=3.0, size=(12, 3))
    X = P.project(Y)
    assert np.all(P.contains(X, tol=1e-8))
    for y, x in zip(Y, X, strict=True):
        ref = scipy_minimize(
            lambda z, y=y: 0.5 * np.sum((z - y) ** 2),
            x0=P.center,
            jac=lambda z, y=y: z - y,
            constraints=[{"type": "ineq", "fun": lambda z: P.h - P.G @ z, "jac": lambda z: -P.G}],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        np.testing.assert_allclose(x, ref.x, atol=1e-6)


def test_projection_is_identity_inside_and_batched():
    P = simplex(2)
    inside = np.array([[0.2, 0.3], [0.5, 0.1]])
    np.testing.assert_allclose(P.project(inside), inside, atol=1e-12)
    assert P.project(np.zeros((4, 5, 2)) + 3.0).shape == (4, 5, 2)


def test_box_plus_inequalities_diameter_and_vertices():
    # The unit square cut by x + y ≤ 1.5: a pentagon.
    P = Polytope(np.array([[1.0, 1.0]]), np.array([1.5]), lower=[0.0, 0.0], upper=[1.0, 1.0])
    V = P.vertices()
    assert len(V) == 5
    brute = max(np.linalg.norm(u - v) for u, v in itertools.combinations(V, 2))
    assert P.diameter == pytest.approx(brute)
    assert P.diameter == pytest.approx(np.sqrt(2.0))  # (1, 0) to (0, 1)


def test_enumerate_vertices_refuses_large_instances():
    M = np.vstack([np.eye(11), -np.eye(11), np.ones((1, 11))])
    with pytest.raises(ValueError, match="max_subsets"):
        enumerate_vertices(M, np.ones(23), max_subsets=1000)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"G": np.array([[1.0, 0.0]]), "h": np.array([1.0])}, "unbounded"),
        ({"G": np.array([[1.0], [-1.0]]), "h": np.array([-1.0, -1.0])}, "empty"),
        ({"G": np.array([[1.0], [-1.0]]), "h": np.array([0.0, 0.0])}, "interior"),
        ({"lower": [0.0, 1.0], "upper": [1.0, 1.0]}, "lower must be < upper"),
        ({"lower": [0.0, -np.inf], "upper": [1.0, 1.0]}, "finite"),
        ({"G": np.ones((2, 2)), "h": np.ones(3)}, "h must have shape"),
        ({"G": np.ones((2, 2))}, "together"),
        ({}, "box bounds"),
        ({"lower": 0.0, "upper": 1.0}, "dimension"),
    ],
)
def test_bad_polytopes_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Polytope(**kwargs)


def test_cube_validation():
    with pytest.raises(ValueError, match="c must be"):
        Polytope.cube(0.0, 2)
    with pytest.raises(TypeError, match="d must be an integer"):
        Polytope.cube(1.0, 2.5)
    with pytest.raises(ValueError, match="last axis"):
        Polytope.cube(1.0, 2).project(np.zeros(3))


def test_l1_diameter_is_exact_for_boxes_and_vertex_sets():
    assert Polytope.cube(2.0, 3).l1_diameter == pytest.approx(12.0)  # 3 sides of width 4
    # the simplex: (1, 0) to (0, 1) is 2 in L1 (the bounding box's L1 diagonal would also say 2)
    assert simplex(2).l1_diameter == pytest.approx(2.0)
    # the L1 ball {|x| + |y| ≤ 1}: its bounding box's L1 diagonal is 4, its vertex pairs give 2
    P = Polytope(np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]]), np.ones(4))
    brute = max(np.abs(u - v).sum() for u, v in itertools.combinations(P.vertices(), 2))
    assert P.l1_diameter == pytest.approx(brute) and brute == pytest.approx(2.0)
    assert P.l1_diameter <= np.sqrt(P.dim) * P.diameter + 1e-12


def test_a_polytope_beyond_what_the_lp_solver_holds_is_refused():
    """HiGHS reads |values| >= 1e20 as infinite.  On P = [-1e25, 1e25] with b_max = 1e21, laplace-solution released
    on b = (0, 0) but raised 'epigraph LP failed ... unbounded' on its neighbour (1e21, 0) (x_opt = -5e20);
    laplace-data raised after its charge; on [-1e300, 1e300] diam(P) overflowed and the subgradient method warned
    'overflow encountered in dot' on the neighbour only.  Such a P is refused; within the limit every mechanism
    releases the same record on both neighbours, silently."""
    import warnings

    from dpopt import piecewise
    from dpopt.piecewise import PiecewiseAffineProblem
    from dpopt.piecewise.polytope import BOX_LIMIT

    for c in (1e25, 1e300):
        with pytest.raises(ValueError, match=r"^P must lie within \[-1e\+19, 1e\+19\] in every coordinate"):
            Polytope.cube(c, 1)
    with pytest.raises(ValueError, match="P must lie within|unbounded"):  # HiGHS: h = 1e25 is +inf
        Polytope(np.array([[1.0], [-1.0]]), np.array([1e25, 1.0]))
    A = np.array([[1.0], [-1.0]])
    for method in ("laplace-data", "laplace-solution", "subgradient", "exponential"):
        records = []
        for b in ((0.0, 0.0), (1e21, 0.0)):
            problem = PiecewiseAffineProblem(A, np.array(b), b_max=1e21, polytope=Polytope.cube(BOX_LIMIT, 1))
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                result = piecewise.minimize(problem, 1.0, method, rng=0, **({"steps": 20} if method == "exponential"
                                                                             else {}))
            records.append(result.privacy_record())
        assert records[0] == records[1]
