"""Seeded folds, train/test splits and node partitions; Dataset helpers."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.datasets import Dataset, kfold_indices, partition_indices, train_test_indices


def test_kfold_partition_and_seed():
    folds = kfold_indices(103, 10, rng=0)
    tests = np.concatenate([t for _, t in folds])
    np.testing.assert_array_equal(np.sort(tests), np.arange(103))
    for train, test in folds:
        assert len(np.intersect1d(train, test)) == 0 and len(train) + len(test) == 103
        assert len(test) in (10, 11)
    again = kfold_indices(103, 10, rng=0)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again, strict=True))


def test_stratified_folds_keep_class_balance():
    y = np.r_[np.ones(30), -np.ones(70)]
    for _, test in kfold_indices(100, 10, rng=1, stratify=y):
        assert np.sum(y[test] == 1) == 3
    with pytest.raises(ValueError, match="stratify must have shape"):
        kfold_indices(100, 10, stratify=y[:5])
    with pytest.raises(ValueError, match="k must be <= n"):
        kfold_indices(5, 10)


def test_train_test_and_partition():
    train, test = train_test_indices(50, 0.2, rng=2)
    assert len(test) == 10 and len(np.union1d(train, test)) == 50
    parts = partition_indices(101, 20, rng=3)
    assert len(parts) == 20 and sum(len(p) for p in parts) == 101
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(101))
    with pytest.raises(ValueError, match="test_fraction"):
        train_test_indices(10, 1.0)


def test_dataset_helpers():
    X = np.arange(12.0).reshape(4, 3)
    ds = Dataset(
        X=X,
        y=np.array([1.0, -1, 1, -1]),
        feature_names=("a", "b", "c"),
        name="t",
        groups=np.array(["train", "test", "train", "test"]),
    )
    assert ds.n == 4 and ds.d == 3
    np.testing.assert_allclose(ds.row_norms, np.linalg.norm(X, axis=1))
    tr = ds.group("train")
    assert tr.n == 2 and tr.name == "t" and list(tr.groups) == ["train", "train"]
    assert ds.subset([0, 3]).X.shape == (2, 3)
    assert "n=4, d=3" in ds.summary()
    b = ds.enforce_bound(5.0, "l1")
    assert np.all(np.abs(b.X).sum(1) <= 5.0) and b.rows_changed == 3 and b.norm == "l1"
    assert "3 rows changed" in b.notes and ds.rows_changed == 0
    with pytest.raises(ValueError, match="no group 'dev'"):
        ds.group("dev")
    with pytest.raises(ValueError, match="feature_names has 2 names for 3 columns"):
        Dataset(X=X, y=np.ones(4), feature_names=("a", "b"), name="bad")
