"""The scikit-learn estimator contract of DPLogisticRegression, DPHuberSVC and DPMLPClassifier.

``check_estimator`` runs every check of the installed scikit-learn on each
estimator with declared bounds, a fixed seed and a fast pure-DP method; none
may fail.  The checks whose literal demand contradicts differential privacy
are listed with the reason in :data:`dpopt.estimators.linear.SKLEARN_DP_EXCEPTIONS`;
the estimators declare them through scikit-learn's tags, and the tests below
show that each exception is real (it fails without the tag) and no wider than
stated.  Also: one-vs-rest multi-class fits keep the total budget, Pipeline,
clone and get/set_params.  DPMLPClassifier (a small network, each of its three
methods) passes the same battery with the same exceptions, declared by the same tags.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn.utils.estimator_checks as sk_checks
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator

from dpopt.estimators import DPHuberSVC, DPLogisticRegression, DPMLPClassifier
from dpopt.estimators.linear import SKLEARN_DP_EXCEPTIONS
from dpopt.privacy import PLDAccountant, PureDPAccountant, RDPAccountant
from dpopt.privacy.calibration import RUN_DISCRETIZATION

ESTIMATORS = (DPLogisticRegression, DPHuberSVC)
# Skips that depend on the environment, not on the estimator.
ENVIRONMENT_SKIPS = ("pandas is not installed", "SCIPY_ARRAY_API is not set")


def _run_checks(estimator) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # privacy-budget warnings from the many refits on the same data
        return check_estimator(estimator, expected_failed_checks={}, on_fail=None, on_skip=None)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", ["dp-nag-opt", "dp-gd", "objpert"])
def test_check_estimator_passes(cls, method):
    est = cls(epsilon=1.0, method=method, data_norm=10.0, random_state=0)
    results = _run_checks(est)
    assert len(results) > 40  # the whole battery ran
    failed = [(r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert failed == []
    skipped = [str(r["exception"]) for r in results if r["status"] == "skipped"]
    assert all(any(reason in s for reason in ENVIRONMENT_SKIPS) for s in skipped), skipped


def _mlp(method="dp-adam", epsilon=1.0, **kwargs):
    """A small private MLP whose fit takes milliseconds (one hidden layer of 8, 20 iterations)."""
    return DPMLPClassifier((8,), epsilon=epsilon, delta=1e-5, method=method, epochs=2, batch_rate=0.1,
                           data_norm=10.0, random_state=0, **kwargs)


@pytest.mark.parametrize("method", ["dp-adam", "dp-sgd", "dp-blsgd"])
def test_check_estimator_passes_mlp(method):
    torch = pytest.importorskip("torch", reason="DPMLPClassifier needs the extra dpopt[torch]")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        results = _run_checks(_mlp(method))
    finally:
        torch.set_num_threads(threads)
    assert len(results) > 40
    failed = [(r["check_name"], repr(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert failed == []
    skipped = [str(r["exception"]) for r in results if r["status"] == "skipped"]
    assert all(any(reason in s for reason in ENVIRONMENT_SKIPS) for s in skipped), skipped


def test_exceptions_name_real_checks_with_reasons():
    for name, reason in SKLEARN_DP_EXCEPTIONS.items():
        assert callable(getattr(sk_checks, name)), name
        assert len(reason) > 40


def _without_poor_score(cls):
    class Strict(cls):
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.classifier_tags.poor_score = False
            return tags

    Strict.__name__ = cls.__name__
    return Strict


def test_poor_score_exception_is_only_the_privacy_noise_mlp():
    """The MLP's poor_score tag, too, covers only the noise: the accuracy assertion passes at ε = 1e5, fails at 0.01."""
    pytest.importorskip("torch", reason="DPMLPClassifier needs the extra dpopt[torch]")
    strict = _without_poor_score(DPMLPClassifier)
    assert get_tags(_mlp()).classifier_tags.poor_score
    args = {"hidden_layer_sizes": (8,), "delta": 1e-5, "method": "dp-sgd", "epochs": 10, "batch_rate": 0.1,
            "learning_rate": 0.5, "data_norm": 3.0, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk_checks.check_classifiers_train("DPMLPClassifier", strict(epsilon=1e5, **args))
        with pytest.raises(AssertionError):
            sk_checks.check_classifiers_train("DPMLPClassifier", strict(epsilon=0.01, **args))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_poor_score_exception_is_only_the_privacy_noise(cls):
    """Without the tag the accuracy assertion fails at small ε and passes at ε = 1e5."""
    strict = _without_poor_score(cls)
    assert get_tags(cls(random_state=0)).classifier_tags.poor_score
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk_checks.check_classifiers_train(
            cls.__name__, strict(epsilon=1e5, method="dp-gd", data_norm=10.0, random_state=0)
        )
        with pytest.raises(AssertionError):
            sk_checks.check_classifiers_train(
                cls.__name__, strict(epsilon=0.01, method="dp-gd", data_norm=10.0, random_state=0)
            )


def test_random_state_none_is_non_deterministic():
    X = np.random.default_rng(0).random((200, 3))
    y = np.where(X[:, 0] > 0.5, "a", "b")
    fresh = DPLogisticRegression(epsilon=1.0, data_norm=2.0)
    assert get_tags(fresh).non_deterministic
    assert not get_tags(DPLogisticRegression(random_state=3)).non_deterministic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = clone(fresh).fit(X, y), clone(fresh).fit(X, y)
        c = DPLogisticRegression(epsilon=1.0, data_norm=2.0, random_state=3).fit(X, y)
        d = DPLogisticRegression(epsilon=1.0, data_norm=2.0, random_state=3).fit(X, y)
    assert not np.array_equal(a.coef_, b.coef_)
    assert np.array_equal(c.coef_, d.coef_)


def test_no_sample_weight():
    assert "sample_weight" not in DPLogisticRegression.fit.__code__.co_varnames


# -- multi-class: one-vs-rest within the total budget ----------------------------------------


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.default_rng(1)
    centers = np.array([[0.2, 0.2], [0.8, 0.2], [0.5, 0.8]])
    labels = rng.integers(0, 3, 3000)
    X = centers[labels] + 0.08 * rng.standard_normal((3000, 2))
    return X, np.array(["red", "green", "blue"])[labels]


@pytest.mark.parametrize("method, delta", [("outpert", 0.0), ("dp-sgd", 1e-6)])
def test_one_vs_rest_spends_the_total_budget(three_classes, method, delta):
    X, y = three_classes
    est = DPLogisticRegression(epsilon=2.0, delta=delta, method=method, data_norm=1.5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    assert list(est.classes_) == ["blue", "green", "red"]
    assert est.coef_.shape == (3, 2) and est.intercept_.shape == (3,)
    assert est.decision_function(X).shape == (3000, 3)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(est.predict(X), est.classes_[proba.argmax(axis=1)])
    assert est.score(X, y) > 0.8
    spent = est.privacy_spent_
    assert spent["epsilon"] <= 2.0 * (1 + 1e-9) and spent["delta"] <= delta * (1 + 1e-9)
    # One ledger for the fit: its log holds the three runs' events, and an accountant replays the reported epsilon.
    assert len(est.diagnostics_["problems"]) == 3
    acc = {"pure": PureDPAccountant(), "pld": PLDAccountant(RUN_DISCRETIZATION)}.get(spent["notion"], RDPAccountant())
    for e in est.privacy_events_:
        acc.compose(e)
    replayed = acc.get_epsilon() if spent["notion"] == "pure" else acc.get_epsilon(spent["delta"])
    assert replayed == pytest.approx(spent["epsilon"], rel=1e-9)
    record = est.privacy_record()
    assert record["method"] == method and len(record["events"]) == len(est.privacy_events_)


def test_one_class_is_refused():
    X = np.random.default_rng(0).random((30, 3))
    with pytest.raises(ValueError, match="at least 2 classes"):
        DPLogisticRegression(data_norm=2.0).fit(X, np.zeros(30))


# -- Pipeline, clone, get/set_params -------------------------------------------------------------


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_pipeline_clone_get_set_params(cls, three_classes):
    X, y = three_classes
    pipe = Pipeline([("scale", MinMaxScaler(clip=True)), ("dp", cls(epsilon=4.0, bounds=(0.0, 1.0), random_state=0))])
    params = pipe.get_params(deep=True)
    assert params["dp__epsilon"] == 4.0 and params["dp__bounds"] == (0.0, 1.0)
    pipe.set_params(dp__epsilon=8.0, dp__method="dp-gd")
    assert pipe.named_steps["dp"].epsilon == 8.0
    twin = clone(pipe)
    assert twin.get_params()["dp__method"] == "dp-gd"
    assert not hasattr(twin.named_steps["dp"], "coef_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y)
    assert pipe.score(X, y) > 0.6
    assert pipe.named_steps["dp"].row_bound_ == pytest.approx(np.sqrt(2))
    assert not hasattr(twin.named_steps["dp"], "coef_")  # cloning copied parameters, not the fit
    fitted_clone = clone(pipe.named_steps["dp"])
    assert fitted_clone.get_params() == pipe.named_steps["dp"].get_params()
    assert not hasattr(fitted_clone, "privacy_spent_")
    with pytest.raises(ValueError, match="Invalid parameter"):
        cls().set_params(epsilonn=1.0)
