"""The linesearch method registry: every name fits, requirements, and sign(Xw) prediction helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpopt.linesearch import registry as reg
from dpopt.linesearch.model import LinearModel
from dpopt.result import DPResult

DELTA = 1e-8
NAMES = ("dp-blsgd", "dp-blgd", "dp-blsgd-ac", "dp-sgd", "dp-agd", "objpert", "outpert", "non-private",
         "majority", "diffprivlib")


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(1500, 6))
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = np.where(X @ np.arange(1.0, 7.0) + 0.2 * rng.normal(size=1500) >= 0, 1.0, -1.0)
    return {
        "logistic": LinearModel("logistic", X, y, l2=1e-2),
        "huber_svm": LinearModel("huberized_hinge", X, y, l2=1e-2),
        "hinge": LinearModel("hinge", X, y, l2=1e-2),
    }


def test_every_name_of_the_api_is_registered():
    assert set(reg.METHODS) == set(NAMES) and len(reg.METHODS) == len(NAMES)
    for name in NAMES:
        assert callable(reg.METHODS[name])
        assert reg.SPECS[name].name == name
    with pytest.raises(KeyError):
        reg.METHODS["dp-adam"]


@pytest.mark.parametrize("name", NAMES)
def test_fit_calls_every_method(name, models):
    model = models["logistic"]
    if name == "diffprivlib" and not reg.applicable(name, model):
        pytest.skip(reg.requirement_error(name, model))
    eps = 2.0
    res = reg.fit(name, model, epsilon=eps, delta=DELTA, rng=0)
    assert isinstance(res, DPResult) and res.method == name
    assert res.x.shape == (model.dim,)
    if name == "non-private":
        assert res.guarantee == "none" and math.isinf(res.privacy.epsilon)
    else:
        assert res.privacy.epsilon <= eps * (1 + 1e-9) and res.privacy.delta <= DELTA
        assert res.events, "a private method must record what it charged"
    acc = reg.accuracy(res, model.X, model.y)
    assert 0.0 <= acc <= 1.0
    if name not in ("majority",):
        assert acc > 0.6  # ε = 2 on 1500 easy records: every method learns something


def test_requirements(models):
    assert reg.applicable("objpert", models["huber_svm"]) and reg.applicable("outpert", models["huber_svm"])
    assert "smooth" in reg.requirement_error("objpert", models["hinge"])
    assert "logistic" in reg.requirement_error("diffprivlib", models["huber_svm"])
    assert reg.applicable("dp-sgd", models["hinge"]) and reg.applicable("non-private", models["hinge"])
    assert "PrivateModel" in reg.requirement_error("dp-sgd", "not a model")
    with pytest.raises(ValueError, match="method must be one of"):
        reg.fit("sgd", models["logistic"], epsilon=1.0, delta=DELTA)
    with pytest.raises(ValueError, match="method must be one of"):
        reg.applicable("sgd", models["logistic"])


def test_predict_is_sign_with_ties_to_plus_one():
    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    w = np.array([2.0, 0.0])
    assert reg.predict(w, X).tolist() == [1.0, -1.0, 1.0]
    batch = np.array([[2.0, 0.0], [-1.0, -1.0]])
    assert reg.predict(batch, X).tolist() == [[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0]]
    acc = reg.accuracy(batch, X, np.array([1.0, -1.0, -1.0]))
    assert acc.tolist() == pytest.approx([2 / 3, 1 / 3])


def test_predict_honours_the_majority_label(models):
    res = reg.fit("majority", models["logistic"], epsilon=100.0, delta=0.0, rng=0)
    label = res.info["constant_label"]
    assert label == (1.0 if np.mean(models["logistic"].y == 1.0) >= 0.5 else -1.0)
    pred = reg.predict(res, models["logistic"].X)
    assert np.all(pred == label)
    assert reg.accuracy(res, models["logistic"].X, models["logistic"].y) == pytest.approx(
        np.mean(models["logistic"].y == label))


def test_predict_validates_shapes():
    with pytest.raises(ValueError, match="columns"):
        reg.predict(np.zeros(3), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="labels"):
        reg.accuracy(np.zeros(2), np.zeros((4, 2)), np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        reg.predict(np.zeros(2), np.full((4, 2), np.nan))
