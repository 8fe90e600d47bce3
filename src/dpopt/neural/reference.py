"""The non-private reference of chen2020 §5.7: Adam on the same Poisson minibatches, no clipping, no noise.

Adam (Kingma & Ba 2015, Algorithm 1) with its defaults on the mean
cross-entropy + (μ/2)‖w‖² (chen2020 §5.1; ``weight_decay=μ``), minibatches
drawn at the private methods' rate q.  It reads the data without privacy: a
baseline for comparison, never a release.
"""

from __future__ import annotations

import numpy as np
import torch

from .._validation import check_int, check_rate
from .model import as_tensors

__all__ = ["adam_reference"]


def adam_reference(module: torch.nn.Module, data, *, steps: int, rate: float, rng: np.random.Generator,
                   lr: float = 1e-3, l2: float = 0.0, callback=None) -> torch.nn.Module:
    """Train ``module`` in place for ``steps`` non-private Adam iterations on Poisson minibatches at ``rate``.

    ``rng`` draws the minibatches (one uniform per record and iteration; an empty
    batch skips the update); ``callback(iteration, module)`` runs after every
    iteration.  Returns ``module``.
    """
    steps = check_int("steps", steps)
    rate = check_rate("rate", rate)
    X, y = as_tensors(data)
    opt = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=l2)
    n = len(y)
    for t in range(1, steps + 1):
        idx = torch.from_numpy(np.flatnonzero(rng.random(n) < rate))
        if len(idx):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(module(X[idx]), y[idx]).backward()
            opt.step()
        if callback is not None:
            callback(t, module)
    return module
