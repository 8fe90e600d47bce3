"""Seeded generators of kuru2022 §5, han2014 §5.1 and the SVM data."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.datasets import han2014_problem, kuru2022_logistic, svm_data
from dpopt.objectives import Box, MaxAffine, bounds


def test_kuru2022_data():
    ds = kuru2022_logistic(rng=0)
    assert (ds.n, ds.d) == (100_000, 20)
    assert ds.X.min() >= 0 and ds.X.max() <= 1
    assert ds.norm == "l1" and ds.norm_bound == 20.0 and ds.rows_changed == 0
    assert np.all(bounds.row_norms(ds.X, "l1") <= 20.0)
    w = ds.info["w_true"]
    np.testing.assert_array_equal(ds.y, np.where(ds.X @ w >= 0, 1.0, -1.0))
    assert set(np.unique(ds.y)) <= {-1.0, 1.0}
    again = kuru2022_logistic(rng=0)
    np.testing.assert_array_equal(again.X, ds.X)
    other = kuru2022_logistic(n=50, d=3, rng=np.random.default_rng(1))
    assert other.X.shape == (50, 3)
    # the declared bound gives kuru2022's S₁ = 2 × 20
    assert bounds.kuru_l1_sensitivity(ds.norm_bound) == 40.0
    with pytest.raises(ValueError, match="n must be >= 2"):
        kuru2022_logistic(n=1)


def test_han2014_problem():
    p = han2014_problem(m=25, d=4, c=2.0, rng=3)
    assert p.A.shape == (25, 4) and p.b.shape == (25,)
    assert isinstance(p.objective, MaxAffine) and isinstance(p.box, Box)
    assert p.diameter == pytest.approx(2 * np.sqrt(4) * 2.0)
    x, v = p.optimum()
    assert np.all(np.abs(x) <= 2.0) and v == pytest.approx(p.objective.value(x))
    # nested over m for one seed (han2014 Fig. 3)
    big = han2014_problem(m=60, d=4, c=2.0, rng=3)
    np.testing.assert_array_equal(big.first(25).A, p.A)
    np.testing.assert_array_equal(big.first(25).b, p.b)
    # roughly standard normal entries
    z = han2014_problem(m=4000, d=5, rng=4)
    assert abs(z.A.mean()) < 0.05 and z.A.std() == pytest.approx(1.0, abs=0.05)
    assert z.b.std() == pytest.approx(1.0, abs=0.05)
    scaled = han2014_problem(m=4000, d=5, rng=4, sigma_b=0.1)
    np.testing.assert_allclose(scaled.b, 0.1 * z.b)
    with pytest.raises(ValueError, match="c must be in"):
        han2014_problem(c=0.0)
    with pytest.raises(ValueError, match="m must be <="):
        p.first(26)


def test_svm_data_separable_and_noisy():
    ds = svm_data(n=3000, d=6, rng=5, margin=0.2, norm_bound=2.0)
    w = ds.info["w_true"]
    assert np.linalg.norm(w) == pytest.approx(1.0)
    assert np.all(ds.row_norms <= 2.0)
    assert np.min(ds.y * (ds.X @ w)) >= 0.2 * 2.0 - 1e-12
    assert 0.4 < np.mean(ds.y == 1) < 0.6
    noisy = svm_data(n=3000, d=6, rng=5, margin=0.2, label_noise=0.1)
    flipped = noisy.info["flipped"]
    assert len(flipped) == 300
    assert np.all(noisy.y[flipped] * (noisy.X[flipped] @ noisy.info["w_true"]) < 0)
    with pytest.raises(ValueError, match="margin must be in"):
        svm_data(margin=1.0)
    with pytest.raises(ValueError, match="label_noise"):
        svm_data(label_noise=1.0)
