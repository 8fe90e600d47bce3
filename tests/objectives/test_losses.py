"""Per-example values/gradients of the linear losses: finite differences, references, batching."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpopt.objectives import (
    HingeLoss,
    HuberizedHingeLoss,
    LogisticLoss,
    Loss,
    SquaredLoss,
    bounds,
    get_loss,
)
from dpopt.objectives import losses as losses_module

LOSSES = [
    LogisticLoss(),
    HingeLoss(),
    HuberizedHingeLoss(),
    HuberizedHingeLoss(h=0.2),
    SquaredLoss(),
]
IDS = ["logistic", "hinge", "huber0.5", "huber0.2", "squared"]


def _data(n=40, d=5, seed=0, labels="pm1"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.2, 2.0, size=(n, 1))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0) if labels == "pm1" else rng.normal(size=n)
    return X, y


def _labels_for(loss, n, seed):
    rng = np.random.default_rng(seed + 100)
    return np.where(rng.random(n) < 0.5, -1.0, 1.0) if loss.binary_labels else rng.normal(size=n)


# -- independent references: one row at a time, from the papers' formulas -------------------------
def _ref_value(loss, w, x, y):
    z = float(np.dot(x, w))
    if isinstance(loss, LogisticLoss):
        m = y * z
        return math.log1p(math.exp(-m)) if m > -30 else -m + math.log1p(math.exp(m))
    if isinstance(loss, HingeLoss):
        return max(0.0, 1.0 - y * z)
    if isinstance(loss, HuberizedHingeLoss):  # chen2020 §5.3
        h, m = loss.h, y * z
        if m < 1 - h:
            return 1 - m
        if abs(1 - m) <= h:
            return (1 + h - m) ** 2 / (4 * h)
        return 0.0
    return 0.5 * (z - y) ** 2


def _ref_grad(loss, w, x, y):
    z = float(np.dot(x, w))
    if isinstance(loss, LogisticLoss):  # kuru2022 (5.2): −z u e^{−z uᵀx}/(1 + e^{−z uᵀx})
        return -y * x / (1.0 + math.exp(y * z))
    if isinstance(loss, HingeLoss):
        return -y * x if y * z < 1 else 0.0 * x
    if isinstance(loss, HuberizedHingeLoss):
        h, m = loss.h, y * z
        if m < 1 - h:
            return -y * x
        if abs(1 - m) <= h:
            return -y * x * (1 + h - m) / (2 * h)
        return 0.0 * x
    return (z - y) * x


def _away_from_kinks(loss, X, y, w, gap=1e-3):
    m = y * (X @ w)
    if isinstance(loss, HingeLoss):
        return np.abs(m - 1) > gap
    if isinstance(loss, HuberizedHingeLoss):
        return (np.abs(m - 1 + loss.h) > gap) & (np.abs(m - 1 - loss.h) > gap)
    return np.ones(len(y), dtype=bool)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_per_example_grads_match_central_differences(loss):
    X, _ = _data(60, 6, seed=1)
    y = _labels_for(loss, 60, 1)
    w = np.random.default_rng(2).normal(size=6) * 0.7
    keep = _away_from_kinks(loss, X, y, w)
    X, y = X[keep], y[keep]
    assert len(y) > 30
    G = loss.per_example_grads(w, X, y)
    h = 1e-6
    fd = np.empty_like(G)
    for j in range(6):
        e = np.zeros(6)
        e[j] = h
        fd[:, j] = (loss.per_example_values(w + e, X, y) - loss.per_example_values(w - e, X, y)) / (
            2 * h
        )
    scale = np.maximum(1.0, np.abs(G))
    assert np.max(np.abs(G - fd) / scale) < 1e-8


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_per_example_values_and_grads_match_row_loop_reference(loss):
    X, _ = _data(25, 4, seed=3)
    y = _labels_for(loss, 25, 3)
    w = np.random.default_rng(4).normal(size=4)
    vals = loss.per_example_values(w, X, y)
    G = loss.per_example_grads(w, X, y)
    for i in range(len(y)):
        assert vals[i] == pytest.approx(_ref_value(loss, w, X[i], y[i]), rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(G[i], _ref_grad(loss, w, X[i], y[i]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_mean_value_grad_and_dense_agree(loss):
    X, _ = _data(300, 7, seed=5)
    y = _labels_for(loss, 300, 5)
    w = np.random.default_rng(6).normal(size=7)
    G = loss.per_example_grads(w, X, y)
    np.testing.assert_allclose(loss.grad(w, X, y), G.mean(axis=0), rtol=1e-12, atol=1e-14)
    v, g = loss.value_and_grad(w, X, y)
    assert v == pytest.approx(loss.per_example_values(w, X, y).mean(), rel=1e-13)
    np.testing.assert_allclose(g, G.mean(axis=0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        loss.per_example_grad_coefs(w, X, y)[:, None] * X, G, rtol=1e-13, atol=1e-15
    )
    np.testing.assert_allclose(
        loss.per_example_grad_norms(w, X, y), np.linalg.norm(G, axis=1), rtol=1e-12, atol=1e-15
    )


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
@pytest.mark.parametrize("clip", [0.05, 0.7, 100.0])
def test_clipped_grad_sum_matches_eq6_row_by_row(loss, clip):
    X, _ = _data(200, 6, seed=7)
    y = _labels_for(loss, 200, 7)
    w = np.random.default_rng(8).normal(size=6)
    ref = np.zeros(6)
    for i in range(len(y)):  # chen2020 eq. (6): clip(g, C) = g / max(1, ‖g‖₂/C)
        g = np.asarray(_ref_grad(loss, w, X[i], y[i]))
        ref += g / max(1.0, np.linalg.norm(g) / clip)
    out = loss.clipped_grad_sum(w, X, y, clip)
    np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(loss.clipped_mean_grad(w, X, y, clip), ref / 200, rtol=1e-9)
    # with precomputed row norms (the cached path) the result is identical
    rn = bounds.row_norms(X)
    np.testing.assert_array_equal(loss.clipped_grad_sum(w, X, y, clip, row_norms=rn), out)


def test_clipped_coefficients_never_exceed_clip():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(500, 8)) * rng.exponential(3.0, size=(500, 1))
    X[0] = 0.0  # a zero row: threshold inf, gradient zero
    y = np.where(rng.random(500) < 0.5, -1.0, 1.0)
    for loss in LOSSES:
        yy = y if loss.binary_labels else rng.normal(size=500) * 10
        W = rng.normal(size=(4, 8)) * 5
        for clip in (1e-3, 0.3, 2.0):
            thr = bounds.clip_thresholds(bounds.row_norms(X), clip)
            r = loss._clipped_coefs(loss.linear_predictions(W, X), yy, thr)
            assert np.all(np.abs(r) * bounds.row_norms(X) <= clip)


@pytest.fixture
def small_blocks(monkeypatch):
    """Row blocks of 85 rows for R = 7 and 600 rows for one vector, so the two partitions differ."""
    monkeypatch.setattr(losses_module, "_BLOCK_ENTRIES", 600)
    monkeypatch.setattr(losses_module, "_MIN_BLOCK_ROWS", 64)


@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
def test_batched_params_equal_separate_calls(loss, small_blocks):
    X, _ = _data(5000, 9, seed=10)  # 59 row blocks for R = 7, 9 for one vector
    y = _labels_for(loss, 5000, 10)
    W = np.random.default_rng(11).normal(size=(7, 9))
    rn = bounds.row_norms(X)
    batched = {
        "values": loss.per_example_values(W, X, y),
        "value": loss.value(W, X, y),
        "grad": loss.grad(W, X, y),
        "clipped": loss.clipped_grad_sum(W, X, y, 0.4, row_norms=rn),
        "clipped_values": loss.clipped_values(W, X, y, 0.8),
        "clipped_value_sum": loss.clipped_value_sum(W, X, y, 0.8),
        "norms": loss.per_example_grad_norms(W, X, y, row_norms=rn),
        "coefs": loss.per_example_grad_coefs(W, X, y),
    }
    vg_v, vg_g = loss.value_and_grad(W, X, y)
    assert batched["values"].shape == (7, 5000)
    assert batched["grad"].shape == (7, 9)
    dense = loss.per_example_grads(W[:2], X[:50], y[:50])
    assert dense.shape == (2, 50, 9)
    for r in range(7):
        w = W[r]
        single = {
            "values": loss.per_example_values(w, X, y),
            "value": loss.value(w, X, y),
            "grad": loss.grad(w, X, y),
            "clipped": loss.clipped_grad_sum(w, X, y, 0.4, row_norms=rn),
            "clipped_values": loss.clipped_values(w, X, y, 0.8),
            "clipped_value_sum": loss.clipped_value_sum(w, X, y, 0.8),
            "norms": loss.per_example_grad_norms(w, X, y, row_norms=rn),
            "coefs": loss.per_example_grad_coefs(w, X, y),
        }
        for key, val in single.items():
            np.testing.assert_allclose(batched[key][r], val, rtol=1e-12, atol=1e-13, err_msg=key)
        assert vg_v[r] == pytest.approx(single["value"], rel=1e-12)
        np.testing.assert_allclose(vg_g[r], single["grad"], rtol=1e-12, atol=1e-13)
        if r < 2:
            np.testing.assert_allclose(dense[r], loss.per_example_grads(w, X[:50], y[:50]))


def test_scalar_and_array_shapes_of_reductions():
    X, y = _data(30, 3)
    loss = LogisticLoss()
    assert isinstance(loss.value(np.zeros(3), X, y), float)
    assert loss.value(np.zeros(3), X, y) == pytest.approx(math.log(2.0))
    assert isinstance(loss.clipped_value_sum(np.zeros(3), X, y, 0.5), float)
    assert loss.clipped_value_sum(np.zeros(3), X, y, 0.5) == pytest.approx(15.0)
    assert loss.value(np.zeros((2, 3)), X, y).shape == (2,)


def test_logistic_is_stable_for_huge_margins():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    w = np.array([800.0, 800.0])  # margins ±800: naive exp overflows
    loss = LogisticLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = loss.per_example_values(w, X, y)
        g = loss.per_example_grads(w, X, y)
        c = loss.clipped_grad_sum(w, X, y, 1.0)
    np.testing.assert_allclose(v, [0.0, 800.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(g[1], [0.0, 1.0])
    np.testing.assert_allclose(c, [0.0, 1.0 * (1 - 2.0**-40)])


def test_huberized_hinge_definition_chen2020():
    loss = HuberizedHingeLoss(0.5)
    m = np.array([-1.0, 0.5, 0.75, 1.0, 1.5, 2.0])
    np.testing.assert_allclose(loss.loss(m), [2.0, 0.5, 0.28125, 0.125, 0.0, 0.0])
    np.testing.assert_allclose(loss.dloss(m), [-1.0, -1.0, -0.75, -0.5, 0.0, 0.0])
    # continuity of ℓ and ℓ' at the joints m = 1 ± h
    for joint in (0.5, 1.5):
        lo, hi = loss.loss(np.array([joint - 1e-12, joint + 1e-12]))
        assert lo == pytest.approx(hi, abs=1e-10)


def test_hinge_subgradient_and_dloss():
    loss = HingeLoss()
    np.testing.assert_array_equal(loss.dloss(np.array([0.0, 0.999, 1.0, 3.0])), [-1, -1, 0, 0])
    assert not loss.smooth


def test_generic_loss_base_works_for_a_nonlinear_model():
    """A model implementing only per-example values and gradients gets the rest for free."""

    class CubicLoss(Loss):  # f(w; x) = (xᵀw)³/3 + ‖w‖² x₀², gradient by hand
        def per_example_values(self, w, X, y):
            z = X @ w.T if w.ndim == 2 else X @ w
            z = z.T if w.ndim == 2 else z
            return z**3 / 3 + np.sum(w**2, axis=-1)[..., None] * X[:, 0] ** 2

        def per_example_grads(self, w, X, y):
            z = X @ w.T if w.ndim == 2 else X @ w
            z = z.T if w.ndim == 2 else z
            return (z**2)[..., None] * X + 2 * w[..., None, :] * (X[:, 0] ** 2)[:, None]

    rng = np.random.default_rng(12)
    X, y, w = rng.normal(size=(40, 3)), np.zeros(40), rng.normal(size=3)
    loss = CubicLoss()
    G = loss.per_example_grads(w, X, y)
    ref = sum(g / max(1.0, np.linalg.norm(g) / 0.3) for g in G)
    np.testing.assert_allclose(loss.clipped_grad_sum(w, X, y, 0.3), ref, rtol=1e-9)
    np.testing.assert_allclose(loss.clipped_mean_grad(w, X, y, 0.3), ref / 40, rtol=1e-9)
    np.testing.assert_allclose(loss.grad(w, X, y), G.mean(0))
    assert loss.value(w, X, y) == pytest.approx(loss.per_example_values(w, X, y).mean())
    W = rng.normal(size=(3, 3))
    np.testing.assert_allclose(
        loss.clipped_grad_sum(W, X, y, 0.3)[1], loss.clipped_grad_sum(W[1], X, y, 0.3)
    )


def test_errors_name_the_parameter():
    X, y = _data(10, 3)
    loss = LogisticLoss()
    with pytest.raises(ValueError, match="w"):
        loss.grad(np.array([1.0, np.nan, 0.0]), X, y)
    with pytest.raises(ValueError, match="last dimension 3"):
        loss.grad(np.zeros(4), X, y)
    with pytest.raises(ValueError, match="y must have shape"):
        loss.grad(np.zeros(3), X, y[:5])
    Xbad = X.copy()
    Xbad[2, 1] = np.inf
    with pytest.raises(ValueError, match="X contains 1 NaN or infinite"):
        loss.grad(np.ones(3), Xbad, y)
    with pytest.raises(ValueError, match="clip must be in"):
        loss.clipped_grad_sum(np.zeros(3), X, y, 0.0)
    with pytest.raises(ValueError, match="cap must be in"):
        loss.clipped_value_sum(np.zeros(3), X, y, -1.0)
    with pytest.raises(ValueError, match="row_norms must have shape"):
        loss.clipped_grad_sum(np.zeros(3), X, y, 1.0, row_norms=np.ones(3))
    with pytest.raises(ValueError, match="loss must be one of"):
        get_loss("nope")
    with pytest.raises(ValueError, match="only the labels -1 and \\+1"):
        loss.check_labels(np.array([0.0, 1.0]))
    assert isinstance(get_loss("huber_svm"), HuberizedHingeLoss)


# -- float32 data: the fast path of Objective(..., precision="float32") ------------------------------
@pytest.mark.parametrize("loss", LOSSES, ids=IDS)
@pytest.mark.parametrize("shape", [(6,), (4, 6)], ids=["vector", "batch"])
def test_float32_data_compute_in_float32_and_agree_with_float64(loss, shape, small_blocks):
    X, _ = _data(3000, 6, seed=21)
    y = _labels_for(loss, 3000, 21)
    X32, y32 = X.astype(np.float32), y.astype(np.float32)
    W = np.random.default_rng(22).normal(size=shape)
    exact64 = {  # float64 on the very same (rounded) data, so only the arithmetic differs
        "grad": loss.grad(W, X32.astype(float), y),
        "clipped": loss.clipped_grad_sum(W, X32.astype(float), y, 0.3),
        "value": loss.value(W, X32.astype(float), y),
    }
    fast = {
        "grad": loss.grad(W, X32, y32),
        "clipped": loss.clipped_grad_sum(W, X32, y32, 0.3),
        "value": loss.value(W, X32, y32),
    }
    assert loss.per_example_grad_coefs(W, X32, y32).dtype == np.float32
    for key, val in fast.items():
        assert np.asarray(val).dtype == np.float64, key  # block sums accumulate in float64
        scale = np.max(np.abs(exact64[key]))
        np.testing.assert_allclose(val, exact64[key], atol=2e-6 * scale, err_msg=key)


def test_float32_clipped_coefficients_stay_within_the_clip_exactly():
    """|r_i|·‖x_i‖ ≤ C in exact arithmetic, also for rows so small that C/‖x_i‖ overflows float32."""
    rng = np.random.default_rng(23)
    X = (rng.normal(size=(4000, 7)) * rng.exponential(3.0, size=(4000, 1))).astype(np.float32)
    X[:3] = [[1e-42] + [0] * 6, [-3e-39] * 7, [0] * 7]  # subnormal float32 rows and a zero row
    y = np.where(rng.random(4000) < 0.5, -1.0, 1.0).astype(np.float32)
    W = (rng.normal(size=(3, 7)) * 5).astype(np.float32)
    rn = bounds.row_norms(X)  # float64 norms of the float32 rows
    for loss in LOSSES:
        yy = y if loss.binary_labels else (rng.normal(size=4000) * 10).astype(np.float32)
        for clip in (1e-3, 0.3, 2.0):
            thr = bounds.clip_thresholds(rn, clip, np.float32)
            finite = np.isfinite(thr)
            assert thr.dtype == np.float32 and np.all(thr[finite].astype(float) * rn[finite] < clip)
            assert np.isinf(thr[0]) and np.isinf(thr[2])
            r = loss._clipped_coefs(loss.linear_predictions(W, X), yy, thr)
            assert r.dtype == np.float32
            assert np.all(np.abs(r).astype(float) * rn <= clip)
    # the worst finite coefficient against an overflowed threshold still stays within the clip
    assert float(np.finfo(np.float32).max) * rn[0] <= 1e-3


def test_float32_logistic_values_and_slopes_for_every_margin():
    m = np.concatenate([np.linspace(-120, 120, 4001), [-3e38, 3e38, 0.0]]).astype(np.float32)
    exact = LogisticLoss().loss(m.astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, slope = LogisticLoss().loss(m), LogisticLoss().dloss(m)
    assert value.dtype == np.float32 and slope.dtype == np.float32
    np.testing.assert_allclose(value, exact, rtol=3e-7, atol=2.0**-23)
    np.testing.assert_allclose(slope, LogisticLoss().dloss(m.astype(float)), rtol=3e-7, atol=1e-38)
    assert np.all((slope >= -1) & (slope <= 0))


@pytest.mark.parametrize(
    "loss", [LogisticLoss(), HingeLoss(), HuberizedHingeLoss(), HuberizedHingeLoss(h=0.2)],
    ids=["logistic", "hinge", "huber0.5", "huber0.2"],
)
def test_loss_along_is_the_loss_at_each_step_bit_for_bit(loss):
    """``loss_along(a, b, steps)[j] == loss(a − η_j b)`` exactly, one row per step (float64)."""
    rng = np.random.default_rng(3)
    m = 257
    a = rng.normal(scale=4.0, size=m)
    a[:3] = [0.0, 40.0, -800.0]  # a zero margin, a saturated loss and one whose e^{-m} overflows
    b = rng.normal(scale=3.0, size=m)
    steps = np.array([0.0, 1e-3, 0.37, 1.0, 2.5, 1e3])
    got = loss.loss_along(a, b, steps)
    assert got.shape == (len(steps), m) and got.dtype == np.float64
    want = np.stack([loss.loss(a - eta * b) for eta in steps])
    assert np.array_equal(got, want)


def test_logistic_loss_along_float32_margins_take_the_generic_path_bit_for_bit():
    """float32 a and b (a float32 objective's margins): LogisticLoss falls back to
    MarginLoss.loss_along; the rows are still ``loss(a − η_j b)`` exactly, in float64 (the steps' dtype)."""
    loss = LogisticLoss()
    rng = np.random.default_rng(4)
    a = rng.normal(scale=4.0, size=100).astype(np.float32)
    b = rng.normal(scale=3.0, size=100).astype(np.float32)
    steps = np.array([0.0, 0.25, 1.0, 7.0])
    got = loss.loss_along(a, b, steps)
    assert got.shape == (4, 100)
    want = np.stack([loss.loss(a - eta * b) for eta in steps])
    assert got.dtype == want.dtype
    assert np.array_equal(got, want)
    # and as float32 steps: float32 rows, the same as the loss of float32 margins
    steps32 = steps.astype(np.float32)
    got32 = loss.loss_along(a, b, steps32)
    assert got32.dtype == np.float32
    assert np.array_equal(got32, np.stack([loss.loss(a - eta * b) for eta in steps32]))
