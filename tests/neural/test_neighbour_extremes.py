"""dpopt.neural.train on neighbouring float64 data sets, one holding a record beyond float32's range:
the cast to the network's float32 saturates instead of making that record inf, so both neighbours
train (no "X must be finite" on one of them only) and are charged the same events."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn

from dpopt.neural import train
from dpopt.neural.model import as_tensors

torch.set_num_threads(1)


@pytest.mark.parametrize("method", ["dp-sgd", "dp-blsgd"])
def test_a_float64_record_beyond_float32_trains_on_both_neighbours(method):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = (X[:, 0] > 0).astype(np.int64)
    runs = []
    for data in ((X, y), (np.vstack([X, [1e39, -1e300, 0.0]]), np.append(y, 1))):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            runs.append(train(net, data, method=method, epsilon=1.0, delta=1e-5, steps=3, batch_rate=0.5,
                              n_public=20, seed=0))
    a, b = (run.result for run in runs)
    assert a.nit == b.nit == 3 and [e.to_dict() for e in a.events] == [e.to_dict() for e in b.events]
    assert np.all(np.isfinite(b.x))


def test_as_tensors_saturates_a_narrowing_cast_and_still_refuses_nan_and_inf():
    X, _ = as_tensors((np.array([[1e39, -1e300, 0.5]]), np.zeros(1)), dtype=torch.float32)
    assert X.dtype == torch.float32
    assert X.tolist()[0] == [torch.finfo(torch.float32).max, -torch.finfo(torch.float32).max, 0.5]
    for bad in (np.inf, np.nan):
        with pytest.raises(ValueError, match="X must be finite"):
            as_tensors((np.array([[bad]]), np.zeros(1)), dtype=torch.float32)
