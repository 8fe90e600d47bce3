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
