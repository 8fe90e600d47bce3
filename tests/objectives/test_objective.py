"""Objective = mean loss + regularizer: values, gradients, minibatches, validation."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.objectives import (
    L1,
    L2,
    Box,
    Function,
    HingeLoss,
    LogisticLoss,
    Objective,
    SquaredLoss,
    bounds,
)


def _data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(rng.random(n) < 0.4, -1.0, 1.0)
    return X, y


def test_value_grad_and_finite_differences():
    X, y = _data()
    obj = Objective(LogisticLoss(), X, y, L2(0.01))
    assert isinstance(obj, Function) and obj.smooth and obj.n == 200 and obj.dim == 4
    w = np.random.default_rng(1).normal(size=4)
    assert obj.value(w) == pytest.approx(LogisticLoss().value(w, X, y) + 0.01 * w @ w)
    h = 1e-6
    fd = [(obj.value(w + h * e) - obj.value(w - h * e)) / (2 * h) for e in np.eye(4)]
    np.testing.assert_allclose(obj.grad(w), fd, rtol=1e-8, atol=1e-9)
    v, g = obj.value_and_grad(w)
    assert v == pytest.approx(obj.value(w), rel=1e-14)
    np.testing.assert_allclose(g, obj.grad(w), rtol=1e-13)
    assert obj(w) == obj.value(w)


def test_batch_equals_separate():
    X, y = _data()
    obj = Objective("squared", X, np.random.default_rng(2).normal(size=200), L2(0.2))
    W = np.random.default_rng(3).normal(size=(5, 4))
    V, G = obj.value(W), obj.grad(W)
    for r in range(5):
        assert V[r] == pytest.approx(obj.value(W[r]), rel=1e-13)
        np.testing.assert_allclose(G[r], obj.grad(W[r]), rtol=1e-12)


def test_minibatch_queries_use_cached_row_norms():
    X, y = _data(500, 6, seed=4)
    obj = Objective("logistic", X, y)
    np.testing.assert_allclose(obj.row_norms, np.linalg.norm(X, axis=1))
    idx = np.array([3, 10, 11, 400])
    w = np.ones(6) * 0.3
    loss = LogisticLoss()
    np.testing.assert_allclose(
        obj.clipped_grad_sum(w, 0.2, idx), loss.clipped_grad_sum(w, X[idx], y[idx], 0.2)
    )
    np.testing.assert_allclose(
        obj.clipped_mean_grad(w, 0.2, idx), loss.clipped_mean_grad(w, X[idx], y[idx], 0.2)
    )
    assert obj.clipped_value_sum(w, 0.5, idx) == pytest.approx(
        loss.clipped_value_sum(w, X[idx], y[idx], 0.5)
    )
    np.testing.assert_allclose(obj.loss_grad(w, idx), loss.grad(w, X[idx], y[idx]))
    assert obj.loss_value(w) == pytest.approx(loss.value(w, X, y))
    np.testing.assert_allclose(
        obj.per_example_values(w, idx), loss.per_example_values(w, X[idx], y[idx])
    )
    np.testing.assert_allclose(
        obj.per_example_grads(w, idx), loss.per_example_grads(w, X[idx], y[idx])
    )
    np.testing.assert_allclose(
        obj.per_example_grad_norms(w, idx),
        np.linalg.norm(loss.per_example_grads(w, X[idx], y[idx]), axis=1),
    )
    mask = np.zeros(500, dtype=bool)
    mask[idx] = True
    np.testing.assert_allclose(
        obj.clipped_grad_sum(w, 0.2, mask), obj.clipped_grad_sum(w, 0.2, idx)
    )
    sub = obj.subset(idx)
    assert sub.n == 4 and sub.value(w) == pytest.approx(loss.value(w, X[idx], y[idx]))
    # the regularizer is not part of the private data term
    reg = Objective("logistic", X, y, L2(5.0))
    np.testing.assert_allclose(reg.clipped_grad_sum(w, 0.2), obj.clipped_grad_sum(w, 0.2))
    # clipped sums never exceed n·C in norm
    assert np.linalg.norm(obj.clipped_grad_sum(w * 100, 0.2)) <= 500 * 0.2


def test_nonsmooth_regularizers_and_losses():
    X, y = _data()
    obj = Objective(HingeLoss(), X, y, L1(0.1))
    assert not obj.smooth
    w = np.array([0.5, -0.2, 0.0, 1.0])
    with pytest.raises(TypeError, match="not differentiable"):
        obj.grad(w)
    np.testing.assert_allclose(obj.subgradient(w), HingeLoss().grad(w, X, y) + 0.1 * np.sign(w))
    boxed = Objective("logistic", X, y, Box(-1, 1))
    assert boxed.value(np.full(4, 2.0)) == np.inf
    np.testing.assert_allclose(
        boxed.subgradient(np.zeros(4)), LogisticLoss().grad(np.zeros(4), X, y)
    )


def test_validation_names_the_parameter():
    X, y = _data(20, 3)
    Xn = X.copy()
    Xn[4, 2] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN or infinite"):
        Objective("logistic", Xn, y)
    with pytest.raises(ValueError, match="y must contain only the labels -1 and \\+1"):
        Objective("logistic", X, (y > 0).astype(float))
    yn = y.copy()
    yn[0] = np.inf
    with pytest.raises(ValueError, match="y contains 1 NaN"):
        Objective("squared", X, yn)
    with pytest.raises(ValueError, match="y must have shape"):
        Objective("logistic", X, y[:5])
    with pytest.raises(TypeError, match="Regularizer"):
        Objective("logistic", X, y, regularizer=0.1)
    with pytest.raises(ValueError, match="row_norms must have shape"):
        Objective("logistic", X, y, row_norms=np.ones(3))
    obj = Objective("logistic", X, y)
    with pytest.raises(ValueError, match="w must have last dimension 3"):
        obj.value(np.zeros(4))
    with pytest.raises(ValueError, match="w contains 1 NaN"):
        obj.grad(np.array([0.0, np.nan, 0.0]))
    # squared loss takes real labels
    Objective(SquaredLoss(), X, np.linspace(-3, 7, 20))


def test_overflow_is_reported_not_returned():
    X = np.array([[1e200, 1.0], [1.0, 1.0]])
    obj = Objective("squared", X, np.array([0.0, 1.0]))
    with pytest.raises(FloatingPointError, match="not finite"):
        obj.grad(np.array([1e200, 0.0]))


def test_precomputed_row_norms_are_used():
    X, y = _data(30, 3)
    rn = bounds.row_norms(X)
    obj = Objective("logistic", X, y, row_norms=rn)
    assert obj.row_norms is not None
    np.testing.assert_array_equal(obj.row_norms, rn)


# -- precision="float32" -------------------------------------------------------------------------
def test_float32_objective_agrees_with_float64_and_keeps_its_precision():
    X, y = _data(3000, 5, seed=31)
    exact = Objective(LogisticLoss(), X, y, L2(0.01))
    fast = Objective(LogisticLoss(), X, y, L2(0.01), precision="float32")
    assert exact.with_precision("float64") is exact
    assert repr(fast).endswith("precision='float32')")
    Xp, yp = fast.pass_data
    assert Xp.dtype == np.float32 and yp.dtype == np.float32
    assert fast.X.dtype == np.float64  # the data of record stay float64
    W = np.random.default_rng(32).normal(size=(3, 5))
    idx = np.arange(0, 3000, 7)
    pairs = {
        "value": (fast.value(W), exact.value(W)),
        "grad": (fast.grad(W), exact.grad(W)),
        "loss_grad idx": (fast.loss_grad(W, idx), exact.loss_grad(W, idx)),
        "clipped": (fast.clipped_grad_sum(W, 0.5), exact.clipped_grad_sum(W, 0.5)),
        "clipped_value_sum": (fast.clipped_value_sum(W, 1.0), exact.clipped_value_sum(W, 1.0)),
    }
    for key, (got, want) in pairs.items():
        assert got.dtype == np.float64, key
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * np.abs(want).max(), err_msg=key)
    sub = fast.subset(idx)
    assert sub.precision == "float32"
    np.testing.assert_allclose(sub.grad(W), fast.loss_grad(W, idx) + L2(0.01).grad(W), rtol=1e-12)
    back = fast.with_precision("float64")
    np.testing.assert_array_equal(back.grad(W), exact.grad(W))
    with pytest.raises(ValueError, match="precision"):
        Objective(LogisticLoss(), X, y, precision="float16")


def test_float32_rows_are_rounded_toward_zero_so_no_norm_grows():
    rng = np.random.default_rng(33)
    X = rng.normal(size=(2000, 9)) * rng.exponential(2.0, size=(2000, 1))
    X, _ = bounds.project_rows(X, 1.0, "l1")
    fast = Objective("logistic", X, np.ones(2000), precision="float32")
    X32 = fast.pass_data[0].astype(float)
    assert np.all(np.abs(X32) <= np.abs(X))
    assert np.all(np.sign(X32) * np.sign(X) >= 0)
    assert np.all(np.abs(X32 - X) <= 2.0**-23 * np.abs(X))
    for norm in ("l1", "l2", "linf"):
        assert np.all(bounds.row_norms(X32, norm) <= bounds.row_norms(X, norm))
    assert bounds.row_norms(X32, "l1").max() <= 1.0  # the enforced bound survives the rounding
    np.testing.assert_array_equal(fast.row_norms, bounds.row_norms(X32))
    with pytest.raises(ValueError, match="range of float32"):
        Objective("logistic", np.full((3, 2), 1e300), np.ones(3), precision="float32")
