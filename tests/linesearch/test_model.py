"""The PrivateModel contract and LinearModel (clipped sums of chen2020 eq. (6) and Theorem 1)."""

import numpy as np
import pytest

from dpopt.linesearch.model import LinearModel, PrivateModel
from dpopt.objectives import LogisticLoss


def data(n=60, d=4, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=scale, size=(n, d))
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return X, y


class DenseLogistic(PrivateModel):
    """A PrivateModel written from the definitions only (dense per-example gradients, loops over R).

    Exercises the generic :meth:`PrivateModel.clipped_loss_along` and serves as
    the reference for LinearModel's vectorized paths.
    """

    def __init__(self, X, y, l2=0.0):
        self.X, self.y, self.l2 = X, y, l2

    @property
    def n(self):
        return len(self.y)

    @property
    def dim(self):
        return self.X.shape[1]

    def _f(self, w, idx):
        X, y = (self.X, self.y) if idx is None else (self.X[idx], self.y[idx])
        return np.log1p(np.exp(-y * (X @ w))), X, y

    def per_example_clipped_grad_sum(self, w, indices, clip):
        _, X, y = self._f(w, indices)
        G = (-y / (1.0 + np.exp(y * (X @ w))))[:, None] * X
        norms = np.linalg.norm(G, axis=1)
        G = G / np.maximum(1.0, norms / clip)[:, None]
        return G.sum(axis=0), len(y)

    def clipped_loss_sum(self, w, indices, cap):
        w = np.asarray(w)
        if w.ndim == 2:
            return np.array([self.clipped_loss_sum(v, indices, cap) for v in w])
        f, _, _ = self._f(w, indices)
        return float(np.clip(f, 0.0, cap).sum())

    def loss_value(self, w):
        return float(self._f(w, None)[0].mean())

    def loss_grad(self, w):
        return self.per_example_clipped_grad_sum(w, None, np.inf)[0] / self.n


def test_clipped_grad_sum_matches_definition_and_is_bounded():
    X, y = data()
    model, ref = LinearModel("logistic", X, y), DenseLogistic(X, y)
    w = np.array([0.3, -0.2, 0.1, 0.5])
    idx = np.array([0, 3, 7, 8, 20, 59])
    for clip in (0.05, 1.0, 100.0):
        got, count = model.per_example_clipped_grad_sum(w, idx, clip)
        want, _ = ref.per_example_clipped_grad_sum(w, idx, clip)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        assert count == len(idx)
        # each clipped term has norm <= clip, so the sum has norm <= |B| clip
        assert np.linalg.norm(got) <= len(idx) * clip * (1 + 1e-12)
    # with a huge threshold nothing is clipped: the full sum is n * mean gradient
    full, count = model.per_example_clipped_grad_sum(w, None, 1e9)
    np.testing.assert_allclose(full / count, model.loss_grad(w), rtol=1e-10)


def test_clipped_loss_sum_clips_to_zero_and_cap():
    X, y = data(scale=10.0)
    model = LinearModel("logistic", X, y)
    w = np.array([1.0, -2.0, 0.5, 3.0])
    values = LogisticLoss().per_example_values(w, X, y)
    assert values.max() > 2.0  # the cap matters on this data
    for cap in (0.1, 1.0, 2.0):
        assert model.clipped_loss_sum(w, None, cap) == pytest.approx(np.minimum(values, cap).sum())
        assert 0.0 <= model.clipped_loss_sum(w, None, cap) <= model.n * cap
    idx = np.arange(10)
    assert model.clipped_loss_sum(w, idx, 1.0) == pytest.approx(np.minimum(values[:10], 1.0).sum())


def test_clipped_loss_sum_enforces_nonnegativity_for_signed_losses():
    """Theorem 1's sensitivity C_obj needs every term in [0, C_obj]; a signed loss is clipped at 0."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 2))
    y = rng.normal(size=30)

    class Signed(LogisticLoss):
        binary_labels = False

        def phi(self, z, y):
            return z - y  # can be negative

    model = LinearModel(Signed(), X, y)
    w = np.array([0.5, -1.0])
    raw = X @ w - y
    assert raw.min() < 0
    assert model.clipped_loss_sum(w, None, 1.0) == pytest.approx(np.clip(raw, 0, 1).sum())


@pytest.mark.parametrize("batched", [False, True])
def test_clipped_loss_along_matches_generic_stacking(batched):
    X, y = data(80, 5, seed=2)
    model, ref = LinearModel("logistic", X, y), DenseLogistic(X, y)
    rng = np.random.default_rng(3)
    idx = np.sort(rng.choice(80, 25, replace=False))
    steps = np.array([2.0, 1.0, 0.5, 0.1, 0.0])
    if batched:
        w, g = rng.normal(size=(3, 5)), rng.normal(size=(3, 5))
        steps = np.stack([steps, 2 * steps, steps / 3])
    else:
        w, g = rng.normal(size=5), rng.normal(size=5)
    got = model.clipped_loss_along(w, g, idx, 1.5)(steps)
    want = PrivateModel.clipped_loss_along(ref, w, g, idx, 1.5)(steps)
    assert got.shape == steps.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # step 0 is the origin
    np.testing.assert_allclose(got[..., -1], ref.clipped_loss_sum(w, idx, 1.5), rtol=1e-12)


def test_regularizer_convention_is_mu_over_two():
    X, y = data()
    mu = 0.25
    model = LinearModel("logistic", X, y, l2=mu)
    w = np.array([1.0, 2.0, -1.0, 0.5])
    loss = LogisticLoss().value(w, X, y)
    assert model.value(w) == pytest.approx(loss + 0.5 * mu * w @ w)
    assert model.regularizer_value(w) == pytest.approx(0.5 * mu * w @ w)
    np.testing.assert_allclose(model.regularizer_grad(w), mu * w)
    # grad by central finite differences
    h = 1e-6
    fd = np.array([(model.value(w + h * e) - model.value(w - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(model.grad(w), fd, rtol=1e-6, atol=1e-8)
    # the base-class formulas agree with the Objective-based ones
    np.testing.assert_allclose(PrivateModel.grad(model, w), model.grad(w), rtol=1e-12)
    assert PrivateModel.value(model, w) == pytest.approx(model.value(w))


def test_accuracy_and_initial_params():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    model = LinearModel("huberized_hinge", X, y, l2=0.001)
    assert model.accuracy(np.array([1.0, 1.0])) == 1.0
    assert model.accuracy(np.array([-1.0, -1.0])) == 0.0
    np.testing.assert_array_equal(model.initial_params(), np.zeros(2))
    assert model.n == 4 and model.dim == 2


def test_bad_inputs_name_the_parameter():
    X, y = data()
    with pytest.raises(ValueError, match="l2"):
        LinearModel("logistic", X, y, l2=-1.0)
    with pytest.raises(ValueError, match="loss"):
        LinearModel("no-such-loss", X, y)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        LinearModel("logistic", bad, y)
    with pytest.raises(ValueError, match="y"):
        LinearModel("logistic", X, y[:-1])
    model = LinearModel("logistic", X, y)
    w = np.zeros(4)
    with pytest.raises(ValueError, match="clip"):
        model.per_example_clipped_grad_sum(w, None, 0.0)
    with pytest.raises(ValueError, match="cap"):
        model.clipped_loss_sum(w, None, -1.0)
    with pytest.raises(ValueError, match="indices"):
        model.clipped_loss_sum(w, np.zeros((2, 2), dtype=int), 1.0)
    with pytest.raises(ValueError, match="w"):
        model.clipped_loss_sum(np.zeros(3), None, 1.0)
    with pytest.raises(ValueError, match="direction"):
        model.clipped_loss_along(w, np.zeros(3), None, 1.0)
    with pytest.raises(ValueError, match="steps"):
        model.clipped_loss_along(w, w, None, 1.0)(np.zeros((2, 3)))


def test_minibatches_larger_than_a_block_and_empty_minibatches():
    X, y = data(n=3000, d=3, seed=8)
    model, ref = LinearModel("logistic", X, y), DenseLogistic(X, y)
    rng = np.random.default_rng(9)
    idx = np.sort(rng.choice(3000, 1700, replace=False))  # several gather blocks
    w, g = rng.normal(size=3), rng.normal(size=3)
    got, count = model.per_example_clipped_grad_sum(w, idx, 0.5)
    np.testing.assert_allclose(got, ref.per_example_clipped_grad_sum(w, idx, 0.5)[0], rtol=1e-10)
    assert count == 1700
    assert model.clipped_loss_sum(w, idx, 1.0) == pytest.approx(ref.clipped_loss_sum(w, idx, 1.0))
    steps = np.array([1.0, 0.3])
    np.testing.assert_allclose(model.clipped_loss_along(w, g, idx, 1.0)(steps),
                               PrivateModel.clipped_loss_along(ref, w, g, idx, 1.0)(steps))
    empty = np.array([], dtype=int)
    total, count = model.per_example_clipped_grad_sum(w, empty, 1.0)
    np.testing.assert_array_equal(total, np.zeros(3))
    assert count == 0
    assert model.clipped_loss_sum(w, empty, 1.0) == 0.0
    np.testing.assert_array_equal(model.clipped_loss_along(w, g, empty, 1.0)(steps), [0.0, 0.0])
