"""Neighbouring data sets (one record added) holding a huge but finite value: the estimators' own
preprocessing (declared bounds, data_norm, the network's float32) neither warns nor raises on the
neighbour with that record only; both fit and are charged the same events."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from dpopt.estimators import DPLogisticRegression, DPMLPClassifier

torch.set_num_threads(1)


def _pair(record):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 1, 0)
    return (X, y), (np.vstack([X, record]), np.append(y, 1))


def _fit_both(make, record):
    fitted = []
    for X, y in _pair(record):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a warning on one neighbour only is a difference no noise covers
            fitted.append(make().fit(X, y))
    return fitted


@pytest.mark.parametrize(
    ("declared", "record"),
    [
        ({"data_norm": 1.0}, [1e200, 1e200]),  # np.linalg.norm overflowed: RuntimeWarning
        ({"bounds": (0.0, 1.5e308)}, [1.4e308, 0.0]),  # 2(x - lo) overflowed: RuntimeWarning, then inf
        ({"bounds": (-1e308, 1e308)}, [1e308, 0.0]),  # hi - lo = inf: NaN
        ({}, [1e39, 0.0]),  # inf in float32: "X must be finite" on this neighbour only
    ],
)
def test_mlp_fits_both_neighbours(declared, record):
    def make():
        return DPMLPClassifier((3,), epsilon=1.0, delta=1e-5, epochs=1, batch_rate=0.25, classes=[0, 1],
                               n_public=30, random_state=0, **declared)

    a, b = _fit_both(make, record)
    assert a.n_iter_ == b.n_iter_ == 4
    assert [e.to_dict() for e in a.privacy_events_] == [e.to_dict() for e in b.privacy_events_]
    assert all(bool(torch.isfinite(p).all()) for p in b.module_.parameters())


def test_linear_row_clipping_of_a_row_beyond_the_float_range_does_not_warn():
    # max|x|·‖x/max|x|‖ = 2.4e308 overflowed with a RuntimeWarning in _row_norms
    def make():
        return DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=[0, 1], method="dp-gd", random_state=0)

    a, b = _fit_both(make, [1.7e308, 1.7e308])
    assert np.all(np.isfinite(b.coef_))
