"""The §5.7 networks, their diagnostics and the non-private Adam reference (dpopt.neural.networks, .reference)."""

import numpy as np
import pytest
import torch

from dpopt.neural.networks import cnn, diagnostics, evaluate, mlp
from dpopt.neural.reference import adam_reference


def _digits_like(n=64, side=8, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, size=n).astype(np.int64)
    X = rng.uniform(-1, 1, size=(n, 1, side, side)).astype(np.float32)
    X[np.arange(n), 0, y % side, y % side] = 3.0  # a learnable mark per class
    return X, y


@pytest.mark.parametrize("side, build", [(8, lambda s: cnn(s, kernel=3, padding=1, seed=1)),
                                         (28, lambda s: cnn(s, seed=1)), (8, lambda s: mlp(s, [16], seed=1))])
def test_networks_map_images_to_class_scores_reproducibly(side, build):
    X = torch.zeros((5, 1, side, side))
    net = build(side)
    assert net(X).shape == (5, 10)
    again = build(side)
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), again.parameters(), strict=True))


def test_cnn_refuses_images_too_small_for_its_kernels():
    with pytest.raises(ValueError, match="side"):
        cnn(8)  # 5×5 kernels without padding do not fit 8×8 twice


def test_evaluate_is_accuracy_and_regularized_mean_loss():
    X, y = _digits_like()
    net = mlp(8, [16], seed=0)
    accuracy, objective = evaluate(net, (X, y), (X, y), l2=0.5)
    with torch.no_grad():
        out = net(torch.from_numpy(X))
        want = float(torch.nn.functional.cross_entropy(out, torch.from_numpy(y)))
        want += 0.25 * sum(float(p.square().sum()) for p in net.parameters())
        assert accuracy == pytest.approx(float((out.argmax(1).numpy() == y).mean()))
    assert objective == pytest.approx(want)


def test_adam_reference_lowers_the_objective_and_calls_back_every_iteration():
    X, y = _digits_like()
    net = mlp(8, [32], seed=0)
    before = evaluate(net, (X, y), (X, y), l2=0.0)[1]
    seen = []
    adam_reference(net, (X, y), steps=60, rate=0.5, rng=np.random.default_rng(0), lr=1e-2,
                   callback=lambda t, m: seen.append(t))
    assert seen == list(range(1, 61))
    assert evaluate(net, (X, y), (X, y), l2=0.0)[1] < 0.5 * before
    with pytest.raises(ValueError, match="rate"):
        adam_reference(net, (X, y), steps=1, rate=1.5, rng=np.random.default_rng(0))


def test_diagnostics_split_the_objective_into_loss_and_regularizer():
    torch.manual_seed(0)
    net = mlp(4, [5], seed=1)
    X, y = torch.rand(30, 1, 4, 4), torch.randint(0, 10, (30,))
    out = diagnostics(net, (X, y), (X, y), l2=0.5)
    norm = sum(float(p.detach().square().sum()) for p in net.parameters())
    assert out["regularizer"] == pytest.approx(0.25 * norm)
    assert out["loss"] == pytest.approx(float(torch.nn.functional.cross_entropy(net(X), y)), rel=1e-6)
    assert out["objective"] == pytest.approx(out["loss"] + out["regularizer"])
    assert evaluate(net, (X, y), (X, y), l2=0.5) == (out["accuracy"], out["objective"])
