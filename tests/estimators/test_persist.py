"""JSON model files: exact round trip, privacy record, refusal of other files, atomic writes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpopt.estimators import DPHuberSVC, DPLogisticRegression
from dpopt.estimators.persist import FORMAT, ModelFormatError, load_model, model_to_dict, save_model
from dpopt.privacy import PureDPAccountant

pytestmark = pytest.mark.filterwarnings("ignore:classes was not given:dpopt.estimators.PrivacyLeakWarning")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = np.where(X @ [1.0, -1.0, 0.5] > 0.25, "yes", "no")
    return X, y


@pytest.mark.parametrize(
    "est",
    [
        DPLogisticRegression(epsilon=2.0, method="dp-nag-opt", data_norm=2.0, random_state=0),
        DPHuberSVC(epsilon=2.0, method="objpert", bounds=(0.0, 1.0), random_state=0),
        DPLogisticRegression(epsilon=3.0, method="outpert", data_norm=2.0, random_state=1, fit_intercept=False),
    ],
    ids=["logistic", "huber-box", "no-intercept"],
)
def test_round_trip_predicts_identically(tmp_path, data, est):
    X, y = data
    est.fit(X, y)
    path = save_model(tmp_path / "m.json", est, feature_names=["a", "b", "c"], data={"rows": 400})
    saved = load_model(path)
    back = saved.estimator
    assert type(back) is type(est) and back.get_params() == {**est.get_params(), "random_state": None}  # no seed
    np.testing.assert_array_equal(back.coef_, est.coef_)
    np.testing.assert_array_equal(back.intercept_, est.intercept_)
    assert back.classes_.tolist() == est.classes_.tolist()
    Xnew = np.random.default_rng(5).normal(0.5, 1.0, (50, 3))  # outside the box: clipping must match too
    np.testing.assert_array_equal(back.decision_function(Xnew), est.decision_function(Xnew))
    np.testing.assert_array_equal(back.predict(Xnew), est.predict(Xnew))
    assert back.privacy_spent_ == est.privacy_spent_
    assert back.privacy_events_ == est.privacy_events_
    assert saved.feature_names == ("a", "b", "c") and saved.data == {"rows": 400}


def test_privacy_record_replays_and_lists_disclosures(tmp_path, data):
    X, y = data
    est = DPLogisticRegression(epsilon=1.5, method="dp-gd", data_norm=2.0, random_state=0, classes=["no", "yes"])
    est.fit(X, y)
    path = save_model(tmp_path / "m.json", est, disclosed=["the category sets of city were read from the data"])
    record = json.loads(path.read_text())
    assert record["format"] == FORMAT and record["format_version"] == 1 and record["dpopt_version"]
    privacy = record["privacy"]
    assert privacy["epsilon"] == pytest.approx(1.5) and privacy["delta"] == 0.0 and privacy["notion"] == "pure"
    assert privacy["relation"] == "replace_one" and privacy["method"] == "dp-gd"
    assert privacy["disclosed"] == ["the category sets of city were read from the data"]
    acc = PureDPAccountant()
    for e in load_model(path).estimator.privacy_events_:
        acc.compose(e)
    assert acc.get_epsilon() == pytest.approx(privacy["epsilon"], rel=1e-12)


def test_multiclass_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    X = rng.random((300, 2))
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [0.33, 0.66])]
    est = DPLogisticRegression(epsilon=3.0, method="dp-nag-opt", data_norm=1.5, random_state=0).fit(X, y)
    back = load_model(save_model(tmp_path / "m.json", est)).estimator
    np.testing.assert_array_equal(back.predict_proba(X), est.predict_proba(X))


def test_refuses_files_that_are_not_models(tmp_path, data):
    X, y = data
    (tmp_path / "text.json").write_text("hello")
    (tmp_path / "other.json").write_text(json.dumps({"coef_": [1, 2]}))
    (tmp_path / "future.json").write_text(json.dumps({"format": FORMAT, "format_version": 99}))
    with pytest.raises(ModelFormatError, match="not a dpopt model file .not JSON"):
        load_model(tmp_path / "text.json")
    with pytest.raises(ModelFormatError, match="not a dpopt model file"):
        load_model(tmp_path / "other.json")
    with pytest.raises(ModelFormatError, match="version 99"):
        load_model(tmp_path / "future.json")
    with pytest.raises(FileNotFoundError, match="model file not found"):
        load_model(tmp_path / "absent.json")
    est = DPLogisticRegression(epsilon=1.0, method="dp-gd", data_norm=2.0, random_state=0).fit(X, y)
    damaged = model_to_dict(est)
    damaged["fitted"]["coef_"] = [[1.0, 2.0]]
    (tmp_path / "damaged.json").write_text(json.dumps(damaged))
    with pytest.raises(ModelFormatError, match="inconsistent"):
        load_model(tmp_path / "damaged.json")
    damaged["estimator"]["class"] = "Pickle"
    (tmp_path / "damaged.json").write_text(json.dumps(damaged))
    with pytest.raises(ModelFormatError, match="unknown estimator"):
        load_model(tmp_path / "damaged.json")


def test_unfitted_and_generator_seed(tmp_path, data):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        model_to_dict(DPLogisticRegression())
    X, y = data
    est = DPLogisticRegression(epsilon=1.0, method="dp-gd", data_norm=2.0, random_state=np.random.default_rng(0)).fit(
        X, y
    )
    assert model_to_dict(est)["estimator"]["params"]["random_state"] is None


def test_atomic_write_leaves_old_file_on_failure(tmp_path, data, monkeypatch):
    X, y = data
    est = DPLogisticRegression(epsilon=1.0, method="dp-gd", data_norm=2.0, random_state=0).fit(X, y)
    path = save_model(tmp_path / "m.json", est)
    before = path.read_text()

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("dpopt.estimators.persist.os.replace", broken_replace)
    est2 = DPLogisticRegression(epsilon=2.0, method="dp-gd", data_norm=2.0, random_state=1).fit(X, y)
    with pytest.raises(OSError, match="disk full"):
        save_model(path, est2)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json"]  # no temporary file left behind
