"""The embedded UCI Adult data set."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt.datasets import load, load_adult
from dpopt.datasets.adult import ADULT_NUMERIC, read_adult_raw


@pytest.fixture(scope="module")
def adult():
    return load_adult()


def test_all_rows_train_and_test(adult):
    assert adult.n == 48_842
    assert int(np.sum(adult.groups == "train")) == 32_561
    assert int(np.sum(adult.groups == "test")) == 16_281
    assert adult.d == 108 and len(adult.feature_names) == 108
    assert adult.rows_dropped == 0
    # class balance as in adult.names: 23.93% '>50K'
    assert np.mean(adult.y == 1) == pytest.approx(0.2393, abs=5e-4)
    assert adult.classes == ("<=50K", ">50K")
    assert "CC BY 4.0" in adult.source and "10.24432/C5XW20" in adult.source


def test_features_scaled_and_rows_bounded(adult):
    assert np.all(np.isfinite(adult.X))
    assert np.all(adult.row_norms <= 1.0)
    assert adult.norm == "l2" and adult.norm_bound == 1.0 and adult.rows_changed == 0
    # undo the schema scaling: numeric columns lie in [0, 1] and hit both ends, one-hots are 0/1
    raw = adult.X * np.sqrt(14)
    names = list(adult.feature_names)
    for c in ADULT_NUMERIC:
        col = raw[:, names.index(c)]
        assert col.min() == pytest.approx(0.0, abs=1e-12) and col.max() == pytest.approx(1.0)
    onehot = [j for j, f in enumerate(names) if "=" in f]
    assert np.allclose(np.unique(np.round(raw[:, onehot], 12)), [0.0, 1.0])
    groups = {f.split("=")[0] for f in names if "=" in f}
    assert len(groups) == 8
    for g in groups:  # exactly one category per attribute in every row
        cols = [j for j, f in enumerate(names) if f.startswith(g + "=")]
        np.testing.assert_allclose(raw[:, cols].sum(axis=1), 1.0)
    assert set(adult.data_derived_bounds) == set(ADULT_NUMERIC)
    assert "data-dependent" in adult.notes


def test_raw_table_and_labels():
    columns, groups = read_adult_raw()
    assert len(groups) == 48_842
    assert set(columns["income"].tolist()) == {"<=50K", ">50K"}  # trailing '.' removed
    assert columns["age"][0] == "39" and columns["workclass"][0] == "State-gov"


def test_splits_options_and_registry(adult):
    train = load("adult:train")
    test = load_adult("test")
    assert train.n == 32_561 and test.n == 16_281
    np.testing.assert_array_equal(train.X, adult.X[adult.groups == "train"])
    dropped = load_adult(missing="drop")
    assert dropped.n == 45_222 and dropped.rows_dropped == 3_620
    bounded = load_adult(numeric_bounds={"age": (0, 100)}, drop_columns=("fnlwgt",), norm_bound=2.0)
    assert "age" not in bounded.data_derived_bounds and "fnlwgt" not in bounded.feature_names
    assert np.all(bounded.row_norms <= 2.0) and bounded.d == 107
    raw = load_adult(norm_bound=None)
    assert raw.norm_bound is None and raw.X.max() == 1.0
    with pytest.raises(ValueError, match="split must be one of"):
        load_adult("validation")
    with pytest.raises(ValueError, match="drop_columns names unknown"):
        load_adult(drop_columns=("salary",))
