"""Per-example gradients, norms and clipped sums against a loop of single-example backward passes."""

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from dpopt.neural.persample import PerSampleGradients, check_module  # noqa: E402


class Sequence(nn.Module):
    """Linear over a sequence of tokens (the ghost-norm case), then a head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4 * 5, 3)

    def forward(self, x):
        return self.head(self.norm(torch.tanh(self.embed(x))).flatten(1))


class Shared(nn.Module):
    """One Linear applied twice (weights shared across calls)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        return self.out(self.lin(torch.relu(self.lin(x))))


def _models():
    torch.manual_seed(0)
    return {
        "mlp": (nn.Sequential(nn.Flatten(), nn.Linear(12, 6), nn.ReLU(), nn.Linear(6, 3)), (12,)),
        "cnn": (nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(3, 2, 2, padding=1),
                              nn.GroupNorm(2, 2), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(2, 3)), (1, 7, 7)),
        "cnn-ghost": (nn.Sequential(nn.Conv2d(4, 6, 3, padding=1, stride=1), nn.Tanh(), nn.Conv2d(6, 5, 3),
                                    nn.Flatten(), nn.Linear(5, 3)), (4, 3, 3)),
        "cnn-strided": (nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1, dilation=1), nn.ReLU(),
                                      nn.Conv2d(3, 2, 2, dilation=2), nn.Flatten(), nn.Linear(8, 3)), (2, 8, 8)),
        "sequence": (Sequence(), (5, 3)),
        "generic": (nn.Sequential(nn.Conv1d(2, 3, 2), nn.Tanh(), nn.Flatten(), nn.Linear(9, 3)), (2, 4)),
        "grouped": (nn.Sequential(nn.Conv2d(2, 4, 2, groups=2, bias=False), nn.ELU(), nn.Flatten(),
                                  nn.Linear(36, 3)), (2, 4, 4)),
        "shared": (Shared(), (4,)),
    }


def _loss(out, y):
    return nn.functional.cross_entropy(out, y, reduction="none")


def _loop(model, x, y):
    grads = []
    params = [p for p in model.parameters() if p.requires_grad]
    for i in range(x.shape[0]):
        g = torch.autograd.grad(_loss(model(x[i:i + 1]), y[i:i + 1]).sum(), params)
        grads.append(torch.cat([t.reshape(-1) for t in g]))
    return torch.stack(grads)


@pytest.mark.parametrize("name", list(_models()))
def test_matches_loop_of_single_example_backwards(name):
    model, shape = _models()[name]
    model = model.double()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn((7,) + shape, generator=gen, dtype=torch.float64)
    y = torch.randint(0, 3, (7,), generator=gen)
    engine = PerSampleGradients(model, _loss, chunk_size=3)
    loop = _loop(model, x, y)
    mat = torch.cat([g.reshape(7, -1) for g in engine.per_example(x, y)], dim=1)
    assert torch.allclose(mat, loop, rtol=1e-6, atol=1e-9)
    norms = engine.norms(x, y)
    assert torch.allclose(norms, loop.norm(dim=1), rtol=1e-6, atol=1e-9)
    clip = 0.5 * float(loop.norm(dim=1).median())
    total, losses = engine.clipped_sum(x, y, clip)
    factor = (clip / loop.norm(dim=1)).clamp(max=1.0)
    assert torch.allclose(total, (loop * factor[:, None]).sum(0), rtol=1e-6, atol=1e-9)
    assert torch.allclose(losses, _loss(model(x), y))
    for i in range(7):  # every clipped per-example gradient lies within the clip
        single, _ = engine.clipped_sum(x[i:i + 1], y[i:i + 1], clip)
        assert float(single.norm()) <= clip


def test_float32_clipped_norm_never_exceeds_clip():
    torch.manual_seed(3)
    model = nn.Sequential(nn.Flatten(), nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    engine = PerSampleGradients(model, _loss)
    x, y = torch.randn(64, 20) * 30, torch.randint(0, 4, (64,))
    for i in range(64):
        single, _ = engine.clipped_sum(x[i:i + 1], y[i:i + 1], 1e-3)
        assert float(single.double().norm()) <= 1e-3


def test_batchnorm_refused_with_one_line_error():
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3))
    with pytest.raises(TypeError, match="BatchNorm1d.*mixes the examples") as info:
        check_module(model)
    assert "\n" not in str(info.value)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        check_module("not a module")


@pytest.mark.parametrize("record", [[1.7e308, 1.7e308], [-1.79e308, -1.79e308], [1e300, -1e300]],
                         ids=["nan-loss-along", "nan-loss-at-w", "nan-gradient"])
def test_a_record_that_overflows_the_network_raises_nothing_and_moves_each_query_by_at_most_its_clip(record):
    """A finite record so large that the network overflows (NaN loss, NaN gradient) contributes a
    clipped term like any other: a clipped gradient of norm ≤ C (0), clipped losses and decreases
    within their ranges; so whether it is in the batch changes no error and no NaN of the output
    (privacy review finding: torch.clamp passes NaN through, and a NaN gradient norm made the
    clipped sum NaN, which the oracle's finiteness check raised on one neighbour only)."""
    import numpy as np

    from dpopt.neural.model import TorchModel
    from dpopt.oracles.line_search_oracle import LineSearchOracle
    from dpopt.privacy import Ledger

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    steps = 0.5 ** np.arange(6)
    direction = np.random.default_rng(2).normal(size=42)  # 2·8 + 8 + 8·2 + 2 parameters
    out = []
    for Xd, yd in ((X, y), (np.vstack([X, [record]]), np.append(y, 1))):  # neighbours
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2)).double()
        model = TorchModel(net, torch.tensor(Xd), torch.tensor(yd))
        w = model.initial_params()
        oracle = LineSearchOracle(model, ledger=Ledger(1e6, 1e-3, "rdp"), rng=np.random.default_rng(1), rate=1.0,
                                  c_grad=1.0, c_obj=1.0, noise="gaussian", lazy=True, query="decrease", n_public=40)
        index = oracle.line_search(w, direction, steps, alpha=0.3, budget=1.0)
        gradient = oracle.noisy_gradient(w, 0.5)
        total, _ = model.per_example_clipped_grad_sum(w, None, 1.0)
        decreases = model.clipped_decrease_along(w, direction, None, 1.0)(steps)
        losses = model.clipped_loss_sum(w, None, 1.0)
        assert -1 <= int(index) < steps.size and np.all(np.isfinite(gradient))
        out.append((total, decreases, losses))
    (t0, d0, l0), (t1, d1, l1) = out
    assert np.linalg.norm(t1 - t0) <= 1.0 + 1e-12
    assert np.all(np.abs(d1 - d0) <= 1.0 + 1e-12) and abs(l1 - l0) <= 1.0 + 1e-12


class _Pair(nn.Module):
    """A shared encoder called on both halves of a record (a layer used twice)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.enc(x[:, 0]) - self.enc(x[:, 1]))


class _Difference(nn.Module):
    def forward(self, h):
        return h[:, 0] - h[:, 1]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("shape", ["shared-layer", "tokens"])
def test_a_record_whose_pieces_cancel_moves_the_clipped_sum_by_at_most_the_clip(shape, dtype):
    """A record with the same huge vector in both halves has gradient 0 (clip weight 1) but pieces
    ±M, per call of a shared layer or per token on the ghost-norm path; summed with the other
    records' they absorbed the whole layer's clipped sum (||Δ|| = 15 with C = 1; privacy review)."""
    import numpy as np

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(200, 2, 4)) + 3.0, np.zeros(200, dtype=np.int64)
    big = 1e20 if dtype == torch.float64 else 1e12
    sums = []
    for Xd, yd in ((X, y), (np.concatenate([X, np.full((1, 2, 4), big)]), np.append(y, 1))):
        torch.manual_seed(0)
        net = (_Pair() if shape == "shared-layer" else nn.Sequential(nn.Linear(4, 4), _Difference(), nn.Linear(4, 2)))
        engine = PerSampleGradients(net.to(dtype), lambda out, t: nn.functional.cross_entropy(out, t, reduction="none"))
        sums.append(engine.clipped_sum(torch.tensor(Xd, dtype=dtype), torch.tensor(yd), 1.0)[0].double())
    assert float((sums[1] - sums[0]).norm()) <= 1.0 + 1e-5
