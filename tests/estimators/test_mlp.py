"""DPMLPClassifier: a private MLP with the linear estimators' declaration conventions."""

import numpy as np
import pytest
import torch

from dpopt.estimators import DPMLPClassifier, PrivacyLeakWarning
from dpopt.privacy import BudgetExceededError, Ledger

torch.set_num_threads(1)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no")
    return X, y


def test_fit_predict_with_declarations():
    X, y = _data()
    clf = DPMLPClassifier((8,), epsilon=4.0, delta=1e-5, epochs=4, batch_rate=0.1, learning_rate=0.05,
                          classes=["no", "yes"], bounds=(-3.0, 3.0), n_public=400, random_state=0)
    clf.fit(X, y)
    assert list(clf.classes_) == ["no", "yes"]
    assert clf.predict_proba(X).shape == (400, 2)
    assert np.allclose(clf.predict_proba(X).sum(1), 1.0)
    assert (clf.predict(X) == y).mean() > 0.8
    assert clf.privacy_spent_["epsilon"] <= 4.0 * (1 + 1e-9) and clf.n_iter_ == 40
    assert clf.privacy_record()["events"]
    assert clf.count_ == {"count": 400.0, "source": "declared"} == clf.privacy_record()["count"]
    again = DPMLPClassifier((8,), epsilon=4.0, delta=1e-5, epochs=4, batch_rate=0.1, learning_rate=0.05,
                            classes=["no", "yes"], bounds=(-3.0, 3.0), n_public=400, random_state=0).fit(X, y)
    assert np.array_equal(again.predict_proba(X), clf.predict_proba(X))  # seeded: reproducible


def test_label_set_from_data_is_warned_and_ledger_is_charged():
    X, y = _data(n=100)
    ledger = Ledger(10.0, 1e-5, "rdp")
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        DPMLPClassifier((4,), epsilon=1.0, delta=1e-5, epochs=1, batch_rate=0.1, n_public=100, ledger=ledger,
                        random_state=1).fit(X, y)
    assert len(ledger.events) == 10 and 0 < ledger.spent().epsilon <= 1.0 * (1 + 1e-9)
    with pytest.raises(BudgetExceededError):  # refused before any noise: nothing more is charged
        DPMLPClassifier((4,), epsilon=20.0, delta=1e-5, epochs=1, batch_rate=0.1, n_public=100, ledger=ledger,
                        classes=["no", "yes"], random_state=1).fit(X, y)
    assert len(ledger.events) == 10


@pytest.mark.parametrize(("kwargs", "match"), [({"epsilon": -1.0}, "epsilon"), ({"activation": "gelu"}, "activation"),
                                               ({"learning_rate": -1.0}, "^learning_rate must be"),
                                               ({"hidden_layer_sizes": (0,)}, "hidden_layer_sizes"),
                                               ({"hidden_layer_sizes": None}, "hidden_layer_sizes"),  # was TypeError
                                               ({"hidden_layer_sizes": "10"}, "hidden_layer_sizes"),
                                               ({"classes": ["no", "maybe"]}, "outside the declared classes")])
def test_bad_parameters(kwargs, match):
    X, y = _data(n=50)
    args = {"classes": ["no", "yes"], "n_public": 50, "epochs": 1, "batch_rate": 0.1}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        DPMLPClassifier(**args).fit(X, y)


def test_one_int_is_one_hidden_layer_as_in_scikit_learn():
    """hidden_layer_sizes=4 raised TypeError: 'int' object is not iterable."""
    X, y = _data(n=50)
    clf = DPMLPClassifier(4, classes=["no", "yes"], n_public=50, epochs=1, batch_rate=0.1, random_state=0).fit(X, y)
    assert [p.shape for p in clf.module_.parameters()][:2] == [(4, X.shape[1]), (4,)]


def test_secure_noise_fit_releases_through_the_discrete_gaussian():
    from dpopt.privacy import events as ev

    X, y = _data(n=200)
    clf = DPMLPClassifier((4,), epsilon=4.0, delta=1e-5, epochs=1, batch_rate=0.1, classes=["no", "yes"],
                          n_public=200, random_state=0, secure_noise=True).fit(X, y)
    assert clf.result_.info["secure_noise"] is True
    assert [type(e.event) for e in clf.result_.events] == [ev.DiscreteGaussian] * 10
    assert clf.privacy_spent_["epsilon"] <= 4.0 * (1 + 1e-9)


def test_undeclared_record_count_is_a_noisy_count():
    """Without n_public the fit releases a noisy count first (no CountDisclosureWarning, nothing disclosed)."""
    import warnings

    from dpopt.oracles import CountDisclosureWarning

    X, y = _data(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CountDisclosureWarning)
        clf = DPMLPClassifier((4,), epsilon=2.0, delta=1e-5, epochs=1, batch_rate=0.1, classes=["no", "yes"],
                              random_state=0).fit(X, y)
    assert clf.count_["source"] == "noisy_count" and clf.count_["count"] != 200.0
    assert clf.disclosed_ == [] and clf.privacy_record()["disclosed"] == []
    assert len(clf.privacy_events_) == 1 + 10 and clf.privacy_spent_["epsilon"] <= 2.0 * (1 + 1e-9)
