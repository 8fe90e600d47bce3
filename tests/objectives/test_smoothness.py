"""(L, μ): exact constants bound the Hessian; kuru2022's convention drops the ¼."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.objectives import (
    L1,
    L2,
    HingeLoss,
    HuberizedHingeLoss,
    LogisticLoss,
    Objective,
    SquaredLoss,
    kuru2022_constants,
    lipschitz_bound,
    smoothness_constants,
)
from dpopt.objectives.smoothness import gram_eigenvalue_range


def _data(n=400, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y


def _hessian_eigs(loss, X, y, w, lam):
    """Hessian of the mean loss + λ‖w‖² by differencing the (exact) gradient."""
    d = len(w)
    h = 1e-6
    H = np.column_stack(
        [(loss.grad(w + h * e, X, y) - loss.grad(w - h * e, X, y)) / (2 * h) for e in np.eye(d)]
    )
    H = 0.5 * (H + H.T) + 2 * lam * np.eye(d)
    return np.linalg.eigvalsh(H)


def test_logistic_exact_constants():
    X, y = _data()
    lam = 0.01
    c = smoothness_constants(LogisticLoss(), X, L2(lam))
    lo, hi = np.linalg.eigvalsh(X.T @ X / len(y))[[0, -1]]
    assert c.L == pytest.approx(hi / 4 + 2 * lam, rel=1e-12)
    assert c.mu == pytest.approx(2 * lam)
    # at w = 0 the logistic Hessian is XᵀX/(4n): the bound is attained
    ev0 = _hessian_eigs(LogisticLoss(), X, y, np.zeros(5), lam)
    assert ev0[-1] == pytest.approx(c.L, rel=1e-6)
    rng = np.random.default_rng(1)
    for w in rng.normal(size=(5, 5)) * 3:
        ev = _hessian_eigs(LogisticLoss(), X, y, w, lam)
        assert ev[-1] <= c.L * (1 + 1e-6) and ev[0] >= c.mu * (1 - 1e-6)


def test_kuru2022_convention():
    X, _ = _data()
    c = kuru2022_constants(X, 0.01)
    # "L is estimated as the largest singular value of (1/n)UᵀU + 2λI_d", μ = 2λ
    sv = np.linalg.svd(X.T @ X / len(X) + 0.02 * np.eye(5), compute_uv=False)[0]
    assert c.L == pytest.approx(sv, rel=1e-12) and c.mu == pytest.approx(0.02)
    assert c.convention == "kuru2022"
    exact = smoothness_constants(LogisticLoss(), X, L2(0.01))
    assert exact.L < c.L
    assert c.condition_number == pytest.approx(c.L / 0.02)


def test_squared_and_huber_and_hinge():
    X, y = _data(seed=2)
    lo, hi = np.linalg.eigvalsh(X.T @ X / len(y))[[0, -1]]
    c = smoothness_constants(SquaredLoss(), X, L2(0.1))
    assert c.L == pytest.approx(hi + 0.2) and c.mu == pytest.approx(lo + 0.2)
    hub = smoothness_constants(HuberizedHingeLoss(0.5), X, None)
    assert hub.L == pytest.approx(hi / 1.0) and hub.mu == 0.0
    for w in np.random.default_rng(3).normal(size=(4, 5)):
        ev = _hessian_eigs(HuberizedHingeLoss(0.5), X, y, w, 0.0)
        assert ev[-1] <= hub.L * (1 + 1e-5)
    assert smoothness_constants(HingeLoss(), X).L == np.inf
    # a non-smooth regularizer adds nothing (handled by its prox)
    l1 = smoothness_constants(LogisticLoss(), X, L1(1.0))
    assert l1.L == pytest.approx(hi / 4) and l1.mu == 0.0


def test_objective_constants_and_lipschitz():
    X, y = _data(seed=4)
    obj = Objective("logistic", X, y, L2(0.05))
    assert obj.constants() == smoothness_constants(LogisticLoss(), X, L2(0.05))
    assert obj.constants("kuru2022") == kuru2022_constants(X, 0.05)
    assert lipschitz_bound(LogisticLoss(), 2.0) == 2.0
    assert lipschitz_bound(SquaredLoss(), 2.0) == np.inf
    with pytest.raises(ValueError, match="convention"):
        obj.constants("paper")


def test_gram_range_large_d_uses_svd():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 5000))
    lo, hi = gram_eigenvalue_range(X)
    assert lo == 0.0
    assert hi == pytest.approx(np.linalg.svd(X, compute_uv=False)[0] ** 2 / 30, rel=1e-8)
