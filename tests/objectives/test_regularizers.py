"""Prox maps satisfy their optimality conditions; the dual-averaging prox too; batching."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from dpopt.objectives import L1, L2, Box, L1Ball, L2Ball, Zero, prox_dual_averaging

TOL = 1e-10


def _points(seed=0, R=6, d=5, scale=2.0):
    return np.random.default_rng(seed).normal(size=(R, d)) * scale


def _check_prox_optimality(reg, x, t, p):
    """0 ∈ (p − x)/t + ∂h(p), checked coordinate-wise or via the normal cone."""
    g = (x - p) / t  # must lie in ∂h(p)
    if isinstance(reg, L2):
        np.testing.assert_allclose(g, 2 * reg.lam * p, atol=TOL)
    elif isinstance(reg, L1):
        nz = np.abs(p) > 0
        np.testing.assert_allclose(g[nz], reg.lam * np.sign(p[nz]), atol=TOL)
        assert np.all(np.abs(g[~nz]) <= reg.lam + TOL)
    elif isinstance(reg, Box):
        lo = np.broadcast_to(reg.lo, p.shape)
        hi = np.broadcast_to(reg.hi, p.shape)
        assert np.all((p >= lo) & (p <= hi))
        inner = (p > lo) & (p < hi)
        np.testing.assert_allclose(g[inner], 0.0, atol=TOL)
        assert np.all(g[p == lo] <= TOL) and np.all(g[p == hi] >= -TOL)
    elif isinstance(reg, L2Ball):
        norm = np.linalg.norm(p)
        assert norm <= reg.radius
        if np.linalg.norm(x) <= reg.radius:
            np.testing.assert_allclose(p, x)
        else:  # x − p = α p with α ≥ 0 and p on the sphere
            assert norm == pytest.approx(reg.radius, rel=1e-11)
            alpha = g @ p / (p @ p)
            np.testing.assert_allclose(g, alpha * p, atol=1e-9)
            assert alpha >= 0
    elif isinstance(reg, L1Ball):
        assert np.abs(p).sum() <= reg.radius
        if np.abs(x).sum() <= reg.radius:
            np.testing.assert_allclose(p, x)
        else:  # normal cone of the L1 ball at p: g = θ·s with s ∈ ∂‖p‖₁, θ ≥ 0
            theta = np.max(np.abs(g))
            nz = np.abs(p) > 0
            np.testing.assert_allclose(g[nz], theta * np.sign(p[nz]), atol=1e-9)
            assert np.all(np.abs(g[~nz]) <= theta + 1e-9)
    else:
        np.testing.assert_allclose(p, x)


REGS = [
    Zero(),
    L2(0.3),
    L1(0.4),
    Box(-0.5, 1.0),
    Box(np.array([-1, -2, 0, -0.1, -3.0]), np.array([1, 0, 2, 0.1, 3.0])),
    L2Ball(1.5),
    L1Ball(2.0),
]
REG_IDS = ["zero", "l2", "l1", "box", "box-vec", "l2ball", "l1ball"]


@pytest.mark.parametrize("reg", REGS, ids=REG_IDS)
@pytest.mark.parametrize("t", [0.05, 1.0, 7.0])
def test_prox_optimality_conditions(reg, t):
    X = _points(1)
    P = reg.prox(X, t)
    for x, p in zip(X, P, strict=True):
        _check_prox_optimality(reg, x, t, p)


@pytest.mark.parametrize("reg", REGS, ids=REG_IDS)
def test_prox_minimizes_the_prox_objective_numerically(reg):
    """Compare with a direct numerical minimization of ½‖p − x‖² + t·h(p)."""
    x = _points(2, R=1, d=5)[0]
    t = 0.8
    p = reg.prox(x, t)
    base = 0.5 * np.sum((p - x) ** 2) + t * reg.value(p)
    rng = np.random.default_rng(3)
    for _ in range(200):  # no nearby point does better
        q = p + rng.normal(size=5) * 10.0 ** rng.uniform(-6, 0)
        val = t * reg.value(q) if np.isfinite(reg.value(q)) else np.inf
        assert 0.5 * np.sum((q - x) ** 2) + val >= base - 1e-12
    if isinstance(reg, (L2, Zero)):
        res = minimize(lambda q: 0.5 * np.sum((q - x) ** 2) + t * reg.value(q), x, tol=1e-12)
        np.testing.assert_allclose(p, res.x, atol=1e-6)


@pytest.mark.parametrize("reg", REGS, ids=REG_IDS)
def test_batch_equals_separate_calls(reg):
    X = _points(4)
    steps = np.linspace(0.1, 2.0, X.shape[0])
    P = reg.prox(X, 0.5)
    Pv = reg.prox(X, steps)
    V = reg.value(X)
    for r in range(X.shape[0]):
        np.testing.assert_allclose(P[r], reg.prox(X[r], 0.5))
        np.testing.assert_allclose(Pv[r], reg.prox(X[r], steps[r]))
        assert V[r] == reg.value(X[r]) or (np.isinf(V[r]) and np.isinf(reg.value(X[r])))


def test_values_grads_and_subgradients():
    x = np.array([1.0, -2.0, 0.0])
    assert L2(0.5).value(x) == pytest.approx(2.5)
    np.testing.assert_allclose(L2(0.5).grad(x), x)
    assert L1(2.0).value(x) == pytest.approx(6.0)
    np.testing.assert_allclose(L1(2.0).subgradient(x), [2.0, -2.0, 0.0])
    with pytest.raises(TypeError, match="not differentiable"):
        L1(1.0).grad(x)
    assert Box(-3, 3).value(x) == 0.0
    assert Box(-1, 1).value(x) == np.inf
    assert L2Ball(1.0).value(x) == np.inf
    np.testing.assert_array_equal(Box(-3, 3).subgradient(x), 0.0)
    with pytest.raises(ValueError, match="outside"):
        L2Ball(1.0).subgradient(x)
    assert L2(0.25).strong_convexity == 0.5 and L2(0.25).smoothness == 0.5
    with pytest.raises(ValueError, match="lo <= hi"):
        Box(1.0, 0.0)
    with pytest.raises(ValueError, match="step"):
        L2(1.0).prox(x, 0.0)
    with pytest.raises(ValueError, match="lam"):
        L1(-1.0)


def test_projections_land_inside_their_own_sets():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 7)) * 30
    for reg in (L2Ball(0.3), L1Ball(0.7), Box(-0.2, 0.4)):
        P = reg.prox(X, 1.0)
        assert np.all(reg.value(P) == 0.0)


@pytest.mark.parametrize("h", [None, L2(0.2), L1(0.3), Box(-0.4, 0.4), L2Ball(0.5), L1Ball(0.6)])
def test_prox_dual_averaging_optimality(h):
    """x = argmin ⟨z, x⟩ + s·h(x) + β½‖x‖²  ⇔  0 ∈ z + s·∂h(x) + βx (liu2024 eq. (6))."""
    rng = np.random.default_rng(6)
    Z = rng.normal(size=(5, 4)) * 3
    beta, scale = 2.5, 1.7
    Xs = prox_dual_averaging(Z, beta, h, scale)
    for z, x in zip(Z, Xs, strict=True):
        if h is None:
            np.testing.assert_allclose(x, -z / beta)
            continue
        # −(z + βx)/s must be a subgradient of h at x: reuse the prox check with t = s/β
        _check_prox_optimality(h, -z / beta, scale / beta, x)
        # and directly: no nearby point has a smaller objective
        obj = z @ x + scale * h.value(x) + 0.5 * beta * x @ x
        for _ in range(100):
            q = x + rng.normal(size=4) * 1e-3
            vq = h.value(q)
            if np.isfinite(vq):
                assert z @ q + scale * vq + 0.5 * beta * q @ q >= obj - 1e-12


def test_prox_dual_averaging_per_repetition_parameters_and_errors():
    rng = np.random.default_rng(7)
    Z = rng.normal(size=(3, 4))
    betas = np.array([1.0, 2.0, 4.0])
    out = prox_dual_averaging(Z, betas, L1(0.5), scale=np.array([1.0, 0.5, 2.0]))
    for r, (b, s) in enumerate(zip(betas, [1.0, 0.5, 2.0], strict=True)):
        np.testing.assert_allclose(out[r], prox_dual_averaging(Z[r], b, L1(0.5), s))
    with pytest.raises(ValueError, match="beta"):
        prox_dual_averaging(Z, 0.0)
    with pytest.raises(TypeError, match="Regularizer"):
        prox_dual_averaging(Z, 1.0, "l1")
