"""The networks of chen2020 §5.7 and their non-private diagnostics.

* :func:`mlp` — fully connected ReLU layers (§5.7: one hidden layer of 1000 for
  MNIST, two of 256 for Fashion-MNIST) over flattened images;
* :func:`cnn` — the §5.7 convolutional network: two convolution + ReLU + 2×2
  max-pool blocks (6 and 16 channels), then fully connected 256 → 128 → classes;
* :func:`evaluate` — test accuracy and the training objective (mean
  cross-entropy + (μ/2)‖w‖², chen2020 §5.1) on fixed subsets: non-private
  diagnostics of a run, never releases; :func:`diagnostics` also gives the
  objective's two terms apart.

Initialization is seeded (``seed=``: torch's global generator) so a run is
reproducible from its task seed.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_int

__all__ = ["mlp", "cnn", "evaluate", "diagnostics", "set_threads"]


def set_threads(count: int = 1) -> None:
    """torch's intra-op thread count (experiment workers use one, so numbers do not depend on the worker count)."""
    torch.set_num_threads(check_int("count", count))


def _seed(seed: int | None) -> None:
    if seed is not None:
        torch.manual_seed(int(seed))


def mlp(side: int, hidden, *, classes: int = 10, channels: int = 1, seed: int | None = None) -> nn.Sequential:
    """ReLU network over ``channels``×``side``×``side`` images with the ``hidden`` widths (chen2020 §5.7)."""
    _seed(seed)
    layers, width = [nn.Flatten()], channels * side * side
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    return nn.Sequential(*layers, nn.Linear(width, classes))


def cnn(side: int, *, kernel: int = 5, padding: int = 0, classes: int = 10, channels: int = 1,
        seed: int | None = None) -> nn.Sequential:
    """The §5.7 CNN: [conv(6) ReLU pool] [conv(16) ReLU pool] 256 128 ``classes`` (``kernel``×``kernel``)."""
    after = ((side + 2 * padding - kernel + 1) // 2 + 2 * padding - kernel + 1) // 2
    if after < 1:
        raise ValueError(f"side must leave a feature map after two conv+pool blocks of kernel {kernel}, got {side}")
    _seed(seed)
    return nn.Sequential(nn.Conv2d(channels, 6, kernel, padding=padding), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, kernel, padding=padding), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * after * after, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                         nn.Linear(128, classes))


def diagnostics(module: nn.Module, test, train, l2: float) -> dict:
    """Non-private diagnostics on ``(X, y)`` subsets: ``accuracy`` on ``test``, and on ``train`` the mean
    cross-entropy ``loss``, the ``regularizer`` (μ/2)‖w‖² and their sum, the training ``objective`` (chen2020 §5.1)."""
    (Xte, yte), (Xtr, ytr) = (tuple(torch.as_tensor(v) for v in pair) for pair in (test, train))
    with torch.no_grad():
        accuracy = float((module(Xte).argmax(1) == yte).double().mean())
        loss = float(nn.functional.cross_entropy(module(Xtr), ytr))
        regularizer = 0.5 * l2 * float(sum(p.square().sum() for p in module.parameters()))
    return {"accuracy": accuracy, "loss": loss, "regularizer": regularizer, "objective": loss + regularizer}


def evaluate(module: nn.Module, test, train, l2: float) -> tuple[float, float]:
    """(test accuracy, training objective: mean cross-entropy + (μ/2)‖w‖²) on ``(X, y)`` subsets (non-private)."""
    out = diagnostics(module, test, train, l2)
    return out["accuracy"], out["objective"]
