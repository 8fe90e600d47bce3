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


def test_a_network_beyond_the_memory_limit_is_refused_before_it_is_built(monkeypatch):
    """hidden_layer_sizes=(10**7,) ran silently until killed (~61 GiB on 5 features): one line, nothing built
    or spent; the largest feasible layers still pass the check."""
    from dpopt.estimators import neural

    def built(*args, **kwargs):
        raise AssertionError("the network was built before the refusal")

    monkeypatch.setattr(neural, "_mlp", built)
    X, y = _data(n=50)
    X = np.hstack([X, X[:, :1]])  # 5 features
    ledger = Ledger(10.0, 1e-3, "rdp")
    for sizes in [(10**7,), (1000, 10**6)]:
        with pytest.raises(ValueError) as info:
            DPMLPClassifier(sizes, classes=["no", "yes"], ledger=ledger).fit(X, y)
        message = str(info.value)
        assert "\n" not in message and message.startswith(f"hidden_layer_sizes {sizes} would need about")
        assert "the usable range is up to 32 GiB, e.g. one hidden layer of at most 5,263,440 units" in message
    assert ledger.events == []
    neural._check_memory(5, (5_263_440,), 2)  # the widest single layer named is accepted
    with pytest.raises(ValueError):
        neural._check_memory(5, (5_263_441,), 2)


def test_more_iterations_than_a_run_may_plan_are_refused_before_anything_is_spent(monkeypatch):
    """epochs=1e9 at batch_rate 0.01 (1e11 iterations) ran silently: refused before the noisy count is released."""
    import importlib

    train_module = importlib.import_module("dpopt.neural.train")  # (dpopt.neural.train is also the function)

    def released(*args, **kwargs):
        raise AssertionError("the count was about to be released before the refusal")

    monkeypatch.setattr(train_module, "count_event", released)
    X, y = _data(n=50)
    ledger = Ledger(10.0, 1e-3, "rdp")
    with pytest.raises(ValueError, match=r"ceil\(epochs/batch_rate\) must be in \[1, 10000000\]"):
        DPMLPClassifier((4,), epochs=1e9, classes=["no", "yes"], ledger=ledger).fit(X, y)
    assert ledger.events == []


def test_a_pickled_fitted_classifier_does_not_carry_the_seed_of_its_noise():
    """As the linear estimators' pickles: with random_state=0 in the pickle of a fit on D (200 rows), refitting the
    unpickled parameters on D and on D' (one row removed) matched the released probabilities exactly on D only
    (and on D' only for the fit on D').  An unfitted classifier keeps its seed."""
    import pickle

    X, y = _data(60)
    clf = DPMLPClassifier(4, classes=["no", "yes"], n_public=50, epochs=0.5, batch_rate=0.1, random_state=0).fit(X, y)
    back = pickle.loads(pickle.dumps(clf))
    assert back.random_state is None and clf.random_state == 0
    np.testing.assert_array_equal(back.predict_proba(X[:3]), clf.predict_proba(X[:3]))
    assert pickle.loads(pickle.dumps(DPMLPClassifier(random_state=3))).random_state == 3
