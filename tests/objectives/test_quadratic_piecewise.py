"""The quadratic of kuru2022 (3.16) and the max-affine function of han2014 (2)."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.objectives import L2, MaxAffine, Objective, Quadratic, SquaredLoss


def _spd(d, seed=0):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(d, d))
    return M @ M.T + 0.5 * np.eye(d)


def test_quadratic_value_grad_and_finite_differences():
    Q = _spd(5)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=5), 1.3
    F = Quadratic(Q, a, b)
    x = rng.normal(size=5)
    assert F.value(x) == pytest.approx(0.5 * x @ Q @ x + a @ x + b, rel=1e-13)
    np.testing.assert_allclose(F.grad(x), Q @ x + a, rtol=1e-13)
    h = 1e-6
    fd = [(F.value(x + h * e) - F.value(x - h * e)) / (2 * h) for e in np.eye(5)]
    np.testing.assert_allclose(F.grad(x), fd, rtol=1e-8, atol=1e-8)
    v, g = F.value_and_grad(x)
    assert v == F.value(x)
    np.testing.assert_array_equal(g, F.grad(x))


def test_quadratic_batch_constants_and_minimizer():
    Q = _spd(4, 2)
    a = np.arange(4.0)
    F = Quadratic(Q, a, -2.0)
    X = np.random.default_rng(3).normal(size=(6, 4))
    V, G = F.value(X), F.grad(X)
    for r in range(6):
        assert V[r] == pytest.approx(F.value(X[r]), rel=1e-13)
        np.testing.assert_allclose(G[r], F.grad(X[r]), rtol=1e-13)
    ev = np.linalg.eigvalsh(Q)
    assert F.smoothness == pytest.approx(ev[-1]) and F.strong_convexity == pytest.approx(ev[0])
    np.testing.assert_allclose(F.grad(F.minimizer), 0.0, atol=1e-10)
    assert F.min_value == pytest.approx(-2.0 - 0.5 * a @ np.linalg.solve(Q, a), rel=1e-12)
    assert F.min_value <= F.value(X).min()


def test_quadratic_least_squares_equals_objective():
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(50, 3)), rng.normal(size=50)
    F = Quadratic.least_squares(X, y, lam=0.1)
    G = Objective(SquaredLoss(), X, y, L2(0.1))
    W = rng.normal(size=(4, 3))
    np.testing.assert_allclose(F.value(W), G.value(W), rtol=1e-12)
    np.testing.assert_allclose(F.grad(W), G.grad(W), rtol=1e-11, atol=1e-13)
    c = G.constants()
    assert c.L == pytest.approx(F.smoothness, rel=1e-10)
    assert c.mu == pytest.approx(F.strong_convexity, rel=1e-10)


def test_quadratic_errors():
    with pytest.raises(ValueError, match="square"):
        Quadratic(np.ones((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        Quadratic(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="a must have shape"):
        Quadratic(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="not positive definite"):
        _ = Quadratic(np.diag([1.0, -1.0])).minimizer
    with pytest.raises(ValueError, match="x must have last dimension 2"):
        Quadratic(np.eye(2)).value(np.ones(3))


def _maxaffine(m=30, d=4, seed=5):
    rng = np.random.default_rng(seed)
    return MaxAffine(rng.normal(size=(m, d)), rng.normal(size=m))


def test_max_affine_value_and_subgradient():
    f = _maxaffine()
    rng = np.random.default_rng(6)
    x = rng.normal(size=4)
    s = f.A @ x + f.b
    assert f.value(x) == pytest.approx(s.max())
    i = f.active_piece(x)
    assert i == int(np.argmax(s))
    np.testing.assert_array_equal(f.grad(x), f.A[i])
    # subgradient inequality f(y) ≥ f(x) + gᵀ(y − x) everywhere
    for yv in rng.normal(size=(200, 4)) * 3:
        assert f.value(yv) >= f.value(x) + f.grad(x) @ (yv - x) - 1e-12
    # away from ties the subgradient is the gradient (finite differences)
    h = 1e-7
    fd = [(f.value(x + h * e) - f.value(x - h * e)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(f.grad(x), fd, atol=1e-6)


def test_max_affine_batch_equals_separate_calls():
    f = _maxaffine()
    X = np.random.default_rng(7).normal(size=(9, 4))
    V, G, S = f.value(X), f.grad(X), f.scores(X)
    v2, g2 = f.value_and_grad(X)
    assert S.shape == (9, 30) and G.shape == (9, 4)
    for r in range(9):
        assert V[r] == pytest.approx(f.value(X[r]), rel=1e-14) and V[r] == v2[r]
        np.testing.assert_array_equal(G[r], f.grad(X[r]))
        np.testing.assert_array_equal(g2[r], f.grad(X[r]))
        np.testing.assert_allclose(S[r], f.scores(X[r]))


def test_max_affine_minimize_over_box_is_optimal():
    f = _maxaffine(40, 3, 8)
    x_star, v_star = f.minimize(-1.0, 1.0)
    assert np.all(np.abs(x_star) <= 1.0)
    assert v_star == pytest.approx(f.value(x_star))
    grid = np.stack(np.meshgrid(*[np.linspace(-1, 1, 41)] * 3), -1).reshape(-1, 3)
    assert v_star <= f.value(grid).min() + 1e-9
    assert f.lipschitz == pytest.approx(np.linalg.norm(f.A, axis=1).max())
    g = f.with_offsets(f.b + 1.0)
    assert g.value(x_star) == pytest.approx(v_star + 1.0)


def test_max_affine_errors():
    with pytest.raises(ValueError, match="b must have shape"):
        MaxAffine(np.ones((3, 2)), np.ones(2))
    with pytest.raises(ValueError, match="A contains"):
        MaxAffine(np.array([[np.nan, 1.0]]), np.ones(1))
