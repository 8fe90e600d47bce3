"""dpopt.neural.train: the three methods, their budgets, stopping, Ctrl-C and input validation."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from dpopt.neural import TorchModel, train
from dpopt.neural.methods import NeuralHyper, iteration_event, make_oracle
from dpopt.privacy import Ledger, PLDAccountant, RDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.calibration import RUN_DISCRETIZATION
from dpopt.privacy.rdp import DENSE_ORDERS


def _data(n=300, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X @ rng.normal(size=d) > 0).astype(np.int64)
    return X, y


def _net(seed=0, d=5):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d, 8), nn.Tanh(), nn.Linear(8, 2))


@pytest.mark.parametrize("method", ["dp-sgd", "dp-adam", "dp-blsgd"])
def test_methods_spend_the_budget_they_report_and_learn(method):
    X, y = _data()
    net = _net()
    out = train(net, (X, y), method=method, n_public=300, epsilon=3.0, delta=1e-5, steps=60, batch_rate=0.2, clip=1.0,
                seed=4, lr=0.05 if method == "dp-adam" else None)
    module, history, result = out
    assert module is net
    assert result.nit == 60 and result.info["stop"] == "completed"
    assert result.epsilon <= 3.0 * (1 + 1e-9)
    assert result.epsilon > 2.9  # calibrated to use the budget
    assert result.privacy.notion == "pld"  # the default: the tightest accountant
    replay = PLDAccountant(RUN_DISCRETIZATION).compose(ev.Composed(result.events)).get_epsilon(1e-5)
    assert replay == pytest.approx(result.epsilon, rel=1e-12)
    assert RDPAccountant(DENSE_ORDERS).compose(ev.Composed(result.events)).get_epsilon(1e-5) > result.epsilon
    assert np.all(np.diff(history["epsilon"]) > 0)
    accuracy = (net(torch.from_numpy(X)).argmax(1).numpy() == y).mean()
    assert accuracy > 0.75
    assert np.allclose(result.x, torch.nn.utils.parameters_to_vector(net.parameters()).detach().numpy())


def test_equal_per_iteration_budget_and_split():
    X, y = _data()
    hyper = NeuralHyper()
    z = 1.3
    for method in ("dp-sgd", "dp-adam", "dp-blsgd"):
        out = train(_net(), (X, y), method=method, n_public=300, epsilon=50.0, delta=1e-5, steps=3, batch_rate=0.1,
                    noise_multiplier=z, seed=0)
        info = out.result.info
        assert info["rho_grad"] + info["rho_search"] == pytest.approx(1 / (2 * z * z), rel=1e-12)
        if method == "dp-blsgd":
            assert info["rho_search"] == pytest.approx(0.1 / (2 * z * z))
    # the events charged per iteration are the ones the calibration composes
    ledger = Ledger(50.0, 1e-5, "rdp")
    oracle = make_oracle(TorchModel(_net(), *_data()), ledger=ledger, rng=np.random.default_rng(0), rate=0.1,
                         clip=1.0, hyper=hyper, normalizer=300)
    blsgd = iteration_event("dp-blsgd", z, hyper, rate=0.1, clip=1.0, dim=oracle.model.dim)
    assert isinstance(blsgd, ev.Composed) and len(blsgd.events) == 2
    gradient, search = blsgd.events
    assert gradient.event.sigma == pytest.approx(1.0 / math.sqrt(2 * 0.9 / (2 * z * z)))
    assert isinstance(search.event, ev.AboveThreshold) and search.rate == 0.1
    rho = 1 / (2 * z * z)
    assert gradient == oracle.gradient_event(0.9 * rho) and search == oracle.line_search_event(0.1 * rho)
    sgd = iteration_event("dp-sgd", z, hyper, rate=0.1, clip=1.0, dim=oracle.model.dim)
    assert sgd == oracle.gradient_event(rho)


def test_failed_line_search_returns_the_smallest_step():
    X, y = _data()
    # η₀ so large that every candidate overshoots: the search fails and takes β^max_it·η₀
    out = train(_net(), (X, y), method="dp-blsgd", n_public=300, epsilon=100.0, delta=1e-5, steps=2, batch_rate=0.5,
                noise_multiplier=0.3, seed=1, eta0=1e6, max_it=3, alpha=0.5)
    assert out.history["step_size"][0] == pytest.approx(1e6 * 0.8**3)


def test_interrupt_keeps_last_iterate_and_true_epsilon():
    X, y = _data()
    net = _net()
    calls = {"n": 0}
    kept = {}

    def loss(out, target):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return nn.functional.cross_entropy(out, target, reduction="none")

    def callback(iteration, module):
        kept["w"] = torch.nn.utils.parameters_to_vector(module.parameters()).detach().clone()

    ledger = Ledger(5.0, 1e-5, "rdp")
    out = train(net, (X, y), method="dp-sgd", n_public=300, epsilon=5.0, delta=1e-5, steps=50, batch_rate=0.1, seed=2,
                loss=loss, ledger=ledger, callback=callback)
    assert out.result.info["stop"] == "interrupted"
    assert out.result.nit == 4
    assert torch.equal(torch.nn.utils.parameters_to_vector(net.parameters()).detach(), kept["w"])
    assert out.result.epsilon == ledger.spent().epsilon > 0
    assert len(out.result.events) == 4


def test_stops_when_budget_runs_out():
    X, y = _data()
    out = train(_net(), (X, y), method="dp-blsgd", n_public=300, epsilon=2.0, delta=1e-5, steps=500, batch_rate=0.1,
                noise_multiplier=1.0, seed=3)
    assert out.result.info["stop"] == "budget"
    assert 0 < out.result.nit < 500 and out.result.epsilon <= 2.0 * (1 + 1e-9)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"method": "sgd"}, "method must be one of"),
        ({"batch_rate": 0.0}, "batch_rate"),
        ({"clip": -1.0}, "clip"),
        ({"epochs": 1.0}, "exactly one of epochs and steps"),
        ({"delta": 0.0}, "delta"),
        ({"epsilon": 0.0}, "epsilon"),
    ],
)
def test_bad_input_one_line_errors(kwargs, match):
    args = {"method": "dp-sgd", "epsilon": 1.0, "delta": 1e-5, "steps": 2, "batch_rate": 0.1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        train(_net(), _data(), **args)


def test_batchnorm_model_refused():
    net = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    with pytest.raises(TypeError, match="BatchNorm1d"):
        train(net, _data(), method="dp-sgd", epsilon=1.0, delta=1e-5, steps=2, batch_rate=0.1)


def test_torch_model_meets_the_line_search_contract():
    X, y = _data(n=40)
    model = TorchModel(_net(), X, y, l2=1e-3)
    w = model.initial_params()
    d = model.loss_grad(w)
    idx = np.arange(0, 40, 3)
    values = model.clipped_decrease_along(w, d, idx, 3.0)(np.array([0.0, 0.5]))
    assert values[0] == 0.0 and values[1] > 0.0  # a small step along the gradient decreases the loss
    total, count = model.per_example_clipped_grad_sum(w, None, 1e6)
    assert count == 40
    assert np.allclose(total / 40, d, atol=1e-6)


def test_undeclared_record_count_is_released_with_noise_and_composed_into_the_budget():
    """Without n_public the normalizer is a noisy count charged first (the data's n is private under
    add/remove-one): no disclosure, the calibration covers it, neighbours' logs are the same."""
    import warnings

    from dpopt.oracles import CountDisclosureWarning
    from dpopt.oracles.normalizer import count_sigma

    X, y = _data()
    runs = []
    for rows in (300, 299):  # add/remove neighbours
        with warnings.catch_warnings():
            warnings.simplefilter("error", CountDisclosureWarning)
            runs.append(train(_net(), (X[:rows], y[:rows]), method="dp-blsgd", epsilon=5.0, delta=1e-5, steps=4,
                              batch_rate=0.1, seed=0).result)
    for result in runs:
        assert result.info["normalizer"]["source"] == "noisy_count"
        assert result.events[0] == ev.Gaussian(count_sigma(5.0, 1e-5), 1.0)  # released before the run
        assert len(result.events) == 1 + 4 * 2 and result.info["stop"] == "completed"
        assert result.epsilon <= 5.0 * (1 + 1e-9)
        assert "noisy record count" in result.notes
    assert runs[0].events == runs[1].events
    assert runs[0].info["normalizer"]["count"] != 300.0  # noised, not the data's n
    declared = train(_net(), (X, y), method="dp-sgd", epsilon=5.0, delta=1e-5, steps=2, batch_rate=0.1, seed=0,
                     n_public=300).result
    assert declared.info["normalizer"] == {"count": 300.0, "source": "declared"} and len(declared.events) == 2
    # a given noise multiplier: nothing calibrated, the count is still charged first
    fixed = train(_net(), (X, y), method="dp-sgd", epsilon=5.0, delta=1e-5, steps=2, batch_rate=0.1, seed=0,
                  noise_multiplier=3.0).result
    assert isinstance(fixed.events[0], ev.Gaussian) and len(fixed.events) == 3


def test_a_ledger_of_another_relation_is_refused_before_the_noisy_count():
    """The count is charged before the first iteration; a replace-one ledger (Poisson amplification and the
    oracle's sensitivities are add/remove-one) was refused at that iteration, after the count was spent."""
    ledger = Ledger(5.0, 1e-5, "rdp", relation="replace_one")
    with pytest.raises(ValueError, match="^ledger.relation must be 'add_remove' for neural training") as info:
        train(_net(), _data(), method="dp-sgd", epsilon=5.0, delta=1e-5, steps=2, batch_rate=0.1, seed=0,
              ledger=ledger)
    assert "\n" not in str(info.value) and ledger.events == []


@pytest.mark.parametrize("kind", ["mlp", "cnn", "frozen-first", "not-sequential"])
def test_decrease_along_matches_plain_forward_passes(kind):
    torch.manual_seed(0)
    if kind == "cnn":
        net, x = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Tanh(), nn.Flatten(), nn.Linear(4, 2)), torch.randn(30, 1, 4, 3)
    else:
        net, x = nn.Sequential(nn.Flatten(), nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 2)), torch.randn(30, 5)
    if kind == "frozen-first":
        net[1].bias.requires_grad_(False)
    if kind == "not-sequential":
        net = nn.ModuleDict({"f": net})
        net.forward = net["f"].forward
    net = net.double()
    y = torch.randint(0, 2, (30,))
    model = TorchModel(net, x.double(), y, chunk_size=2)  # several chunks of 8 records
    assert (model._first_affine() is None) == (kind in ("frozen-first", "not-sequential"))
    w = model.get_tensor()
    d = torch.randn(model.dim, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    idx = np.arange(3, 30, 2)
    values = model.decrease_along_tensor(w, d, idx, 0.05)(np.array([0.0, 0.1, 0.7]))
    assert torch.equal(model.get_tensor(), w)  # the module is left at w
    expected = []
    for eta in (0.0, 0.1, 0.7):
        model.set_tensor(w)
        base = model.losses_tensor(idx)
        model.set_tensor(w - eta * d)
        expected.append(float((base - model.losses_tensor(idx)).clamp(-0.05, 0.05).sum()))
    assert np.allclose(values, expected, rtol=1e-10, atol=1e-12)
    assert model.decrease_along_tensor(w, d, np.array([], dtype=int), 0.05)(np.array([0.3]))[0] == 0.0


def test_secure_noise_training_charges_discrete_gaussians_within_budget():
    X, y = _data(n=200)
    out = train(_net(), (X, y), method="dp-sgd", n_public=200, epsilon=3.0, delta=1e-5, steps=20, batch_rate=0.2,
                clip=1.0, seed=4, secure_noise=True)
    result = out.result
    assert result.info["secure_noise"] is True and result.info["stop"] == "completed"
    assert all(isinstance(e.event, ev.DiscreteGaussian) for e in result.events)
    assert 2.9 < result.epsilon <= 3.0 * (1 + 1e-9)  # z calibrated for the discrete event that is charged
    plain = train(_net(), (X, y), method="dp-sgd", n_public=200, epsilon=3.0, delta=1e-5, steps=20,
                  batch_rate=0.2, clip=1.0, seed=4)
    assert result.info["noise_multiplier"] == pytest.approx(plain.result.info["noise_multiplier"], rel=0.01)


@pytest.mark.parametrize("bad", [7, 2, -1], ids=["far", "one-past", "negative"])
def test_a_class_index_out_of_range_is_refused_when_the_model_is_built(bad):
    """One record whose label is not a class of the network used to train fine on D and raise inside a
    release on D' = D + that record, after charges (privacy review); now the model refuses it in one
    line before anything is charged, and the check's forward pass draws nothing from torch's stream."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 4), nn.Dropout(0.5), nn.ReLU(), nn.Linear(4, 2)).double()
    state = torch.random.get_rng_state()
    TorchModel(net, X, y)  # in range: accepted
    assert torch.equal(torch.random.get_rng_state(), state)
    ledger = Ledger(2.0, 1e-5, "rdp")
    with pytest.raises(ValueError, match=r"class indices 0 … 1 \(the module has 2 outputs\)") as info:
        train(net, (np.vstack([X, [[0.1, 0.2]]]), np.append(y, bad)), epsilon=2.0, delta=1e-5, steps=5,
              batch_rate=0.2, n_public=40, seed=1, ledger=ledger)
    assert "\n" not in str(info.value) and ledger.events == []
    TorchModel(net, X, np.eye(2)[y])  # class probabilities: not index-checked
