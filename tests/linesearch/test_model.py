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


@pytest.mark.parametrize("batched", [False, True])
def test_clipped_decrease_along_is_the_clipped_per_record_decrease(batched):
    X, y = data(90, 4, seed=4)
    model = LinearModel("logistic", X, y)
    rng = np.random.default_rng(5)
    idx = np.sort(rng.choice(90, 40, replace=False))
    steps = np.array([3.0, 1.0, 0.2, 0.0])
    if batched:
        w, g = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
        steps = np.stack([steps, steps / 2])
    else:
        w, g = rng.normal(size=4), rng.normal(size=4)
    cap = 0.8
    got = model.clipped_decrease_along(w, g, idx, cap)(steps)

    def f(v):  # per-record losses on idx, from the definition
        return np.log1p(np.exp(-y[idx] * (X[idx] @ v)))

    ws, gs, ss = (w, g, steps) if batched else (w[None], g[None], steps[None])
    want = np.array([[np.clip(f(wr) - f(wr - s * gr), -cap, cap).sum() for s in sr]
                     for wr, gr, sr in zip(ws, gs, ss, strict=True)])
    np.testing.assert_allclose(got, want if batched else want[0], rtol=1e-12, atol=1e-12)
    assert np.all(np.abs(got) <= cap * len(idx))
    # with a cap above every change it is the exact decrease of the (unclipped) loss sum
    exact = model.clipped_decrease_along(w, g, idx, 1e6)(steps)
    along = model.clipped_loss_along(w, g, idx, 1e6)(steps)
    np.testing.assert_allclose(exact, along[..., -1:] - along, rtol=1e-10, atol=1e-10)


def test_clipped_decrease_has_sensitivity_cap_under_add_remove():
    X, y = data(40, 3, seed=6, scale=5.0)
    rng = np.random.default_rng(7)
    w, g = rng.normal(size=3), 3.0 * rng.normal(size=3)
    steps = np.array([5.0, 1.0, 0.1])
    full = LinearModel("logistic", X, y).clipped_decrease_along(w, g, None, 0.5)(steps)
    for i in range(40):
        keep = np.arange(40) != i
        less = LinearModel("logistic", X[keep], y[keep]).clipped_decrease_along(w, g, None, 0.5)(steps)
        assert np.all(np.abs(full - less) <= 0.5 + 1e-12)
    assert np.abs(full).max() > 0.5  # the bound is not trivially met


def test_declared_data_norm_is_enforced_and_gives_public_constants():
    X, y = data(50, 3, seed=8)  # rows of norm ≈ 3√3 > 2
    model = LinearModel("logistic", X, y, l2=0.01, data_norm=2.0)
    assert model.projected_rows > 0
    assert np.linalg.norm(model.X, axis=1).max() <= 2.0
    assert model.gradient_bound == 2.0  # sup|ℓ'| = 1 times R
    assert model.smoothness_bound == pytest.approx(0.25 * 4.0 + 0.01)
    plain = LinearModel("logistic", X, y)
    assert plain.data_norm is None and plain.gradient_bound is None and plain.smoothness_bound is None
    assert LinearModel("huberized_hinge", X, y, data_norm=1.0).smoothness_bound == pytest.approx(1.0)
    assert LinearModel("squared", X, X[:, 0], data_norm=1.0).gradient_bound is None  # unbounded φ'
    with pytest.raises(ValueError, match="data_norm"):
        LinearModel("logistic", X, y, data_norm=0.0)
    # a generic PrivateModel declares nothing and has no decrease query
    ref = DenseLogistic(X, y)
    assert ref.gradient_bound is None and ref.smoothness_bound is None and ref.data_norm is None
    with pytest.raises(NotImplementedError, match="query='objective'"):
        ref.clipped_decrease_along(np.zeros(3), np.ones(3), None, 1.0)


def test_full_data_margins_are_shared_between_queries_at_the_same_point():
    X, y = data(200, 4, seed=10)
    model, fresh = LinearModel("logistic", X, y), LinearModel("logistic", X, y)
    rng = np.random.default_rng(11)
    w, g = rng.normal(size=4), rng.normal(size=4)
    total, _ = model.per_example_clipped_grad_sum(w, None, 1.0)
    assert model._margin_cache is not None and np.array_equal(model._margin_cache[0], w)
    steps = np.array([1.0, 0.5])
    np.testing.assert_array_equal(model.clipped_loss_along(w, g, None, 1.0)(steps),
                                  fresh.clipped_loss_along(w, g, None, 1.0)(steps))
    w[0] += 1.0  # the caller changes its array in place: the cache must not be fooled
    np.testing.assert_allclose(model.per_example_clipped_grad_sum(w, None, 1.0)[0],
                               fresh.per_example_clipped_grad_sum(w, None, 1.0)[0], rtol=1e-12)
    assert not np.allclose(total, model.per_example_clipped_grad_sum(w, None, 1.0)[0])


def _plain_phi(name, z, y):
    """φ(z, y) of the named loss, written from its definition (the reference of the tests below)."""
    m = y * z
    if name == "logistic":
        return np.log1p(np.exp(-m))
    if name == "hinge":
        return np.maximum(0.0, 1.0 - m)
    if name == "huberized_hinge":  # h = 0.5 (chen2020 §5.3)
        return np.where(m < 0.5, 1.0 - m, np.where(m > 1.5, 0.0, (1.5 - m) ** 2 / 2.0))
    return 0.5 * (z - y) ** 2  # squared


def _plain_sums(name, X, y, w, g, idx, steps, cap, decrease):
    """Σ_i clip(φ(z_i) − φ(z_i − η u_i), −C, C) (``decrease``) or Σ_i clip(φ(z_i − η u_i), 0, C) per η."""
    if idx is not None:
        X, y = X[idx], y[idx]
    z, u = X @ w, X @ g
    out = []
    for eta in steps:
        after = _plain_phi(name, z - eta * u, y)
        terms = np.clip(_plain_phi(name, z, y) - after, -cap, cap) if decrease else np.clip(after, 0.0, cap)
        out.append(terms.sum())
    return np.array(out)


def _spy_blocks(model):
    """Count the calls of the model's ``loss.loss_along`` (one per evaluation block of the margin path)."""
    calls = [0]
    along = getattr(model.loss, "loss_along", None)

    def counted(*args):
        calls[0] += 1
        return along(*args)

    if along is not None:
        model.loss.loss_along = counted
    return calls


@pytest.mark.parametrize("loss", ["logistic", "hinge", "huberized_hinge", "squared"])
@pytest.mark.parametrize("decrease", [True, False], ids=["decrease", "loss"])
@pytest.mark.parametrize("size", ["minibatch", "blocks"])
def test_sum_along_of_a_single_w_matches_the_plain_clipped_sums(loss, decrease, size):
    """``clipped_decrease_along``/``clipped_loss_along`` at a 1-D w (the margin fast path of ``_sum_along``
    for margin losses, the general path for SquaredLoss) against the sums written out, for a one-block
    minibatch (200 rows) and for the full data of 40,000 records (several evaluation blocks)."""
    n = 40_000 if size == "blocks" else 500
    rng = np.random.default_rng(11)
    X = rng.normal(size=(n, 4))
    y = rng.normal(scale=2.0, size=n) if loss == "squared" else np.where(rng.random(n) < 0.5, 1.0, -1.0)
    model = LinearModel(loss, X, y)
    w, g = np.array([0.8, -0.5, 0.3, 1.1]), np.array([0.4, 0.9, -0.7, 0.2])
    idx = None if size == "blocks" else np.sort(rng.choice(n, 200, replace=False))
    steps = np.array([3.0, 1.5, 0.75, 0.2, 0.05])
    cap = 0.8  # some terms clipped, others not
    calls = _spy_blocks(model)
    query = model.clipped_decrease_along if decrease else model.clipped_loss_along
    got = query(w, g, idx, cap)(steps)
    want = _plain_sums(loss, X, y, w, g, idx, steps, cap, decrease)
    assert got.shape == steps.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14 * n * cap)
    if loss != "squared":  # the margin path, in one block or in several
        assert calls[0] == 1 if size == "minibatch" else calls[0] > 1


@pytest.mark.parametrize("loss", ["logistic", "hinge", "huberized_hinge", "squared"])
@pytest.mark.parametrize("decrease", [True, False], ids=["decrease", "loss"])
@pytest.mark.parametrize("minibatch", [True, False], ids=["minibatch", "full"])
def test_sum_along_terms_are_bounded_one_record_moves_each_sum_by_at_most_cap(loss, decrease, minibatch):
    """Adding one record with extreme features and label moves every candidate's clipped sum by at most
    C (the sensitivity of chen2020 Theorem 1's queries), and by about C here: its term is clipped."""
    n = 300
    rng = np.random.default_rng(12)
    X = rng.normal(size=(n, 3))
    y = rng.normal(size=n) if loss == "squared" else np.where(rng.random(n) < 0.5, 1.0, -1.0)
    extreme_x, extreme_y = np.array([60.0, -45.0, 80.0]), (-1e4 if loss == "squared" else -1.0)
    X1, y1 = np.vstack([X, extreme_x]), np.append(y, extreme_y)
    w, g = np.array([0.5, -0.2, 0.9]), np.array([-0.3, 0.6, 0.4])
    steps = np.array([4.0, 1.0, 0.25, 0.01])
    cap = 1.5
    idx = np.sort(rng.choice(n, 120, replace=False)) if minibatch else None
    idx1 = np.append(idx, n) if minibatch else None
    values = []
    for data, indices in (((X, y), idx), ((X1, y1), idx1)):
        model = LinearModel(loss, *data)
        query = model.clipped_decrease_along if decrease else model.clipped_loss_along
        values.append(query(w, g, indices, cap)(steps))
    change = np.abs(values[1] - values[0])
    assert np.all(change <= cap * (1 + 1e-12)), change
    assert change.max() >= 0.9 * cap  # the extreme record's term is clipped, not dropped
