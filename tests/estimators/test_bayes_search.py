"""DPBayesSearchCV: private selection over a search space for private and scikit-learn estimators."""

import re
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.tree import DecisionTreeClassifier

from dpopt.estimators import DPBayesSearchCV, DPLogisticRegression, PrivacyLeakWarning
from dpopt.estimators.linear import UtilityWarning
from dpopt.privacy import BudgetExceededError, Ledger, budget_for
from dpopt.privacy import events as ev
from dpopt.privacy.approx import group_privacy


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=400, n_features=5, n_informative=3, random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), y


def test_sklearn_estimator_protects_validation_rows_only(data):
    X, y = data
    search = DPBayesSearchCV(DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 3, 4, 6, 8]},
                             epsilon=1e12, n_iter=6, random_state=0, prior_mean=0.5)
    with pytest.warns(PrivacyLeakWarning, match="only the validation rows"):
        search.fit(X, y)
    assert search.privacy_["protects"] == "validation rows only"
    assert search.privacy_["selection_guarantee"] == "conditional" and "k1(V, V') = 0.95" in \
        search.privacy_["selection"]["notes"]
    # ε → ∞ on a grid visited entirely: the released score is the best validation accuracy
    train, val = search._split(len(y), np.random.default_rng(0))
    assert set(search.best_params_) == {"max_depth"} and len(search.cv_results_["params"]) == 6
    assert search.cv_results_["released"].sum() == 1
    assert 0.5 < search.best_score_ <= 1.0
    assert search.predict(X).shape == (400,) and search.score(X, y) > 0.6
    assert search.privacy_["epsilon"] == pytest.approx(1e12)


def test_private_estimator_composes_training_and_selection_in_one_ledger(data):
    X, y = data
    book = Ledger(10.0, relation="replace_one")
    labels = np.unique(y).tolist()  # declared: nothing is read from the data
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=labels),
                             {"regularization": (1e-4, 1e-1, "log")}, epsilon=1.0, n_iter=4, n_candidates=16,
                             ledger=book, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        search.fit(X, y)
    # 4 training runs + the refit at ε = 0.5 each, and the two releases at 0.5 each
    assert book.spent().epsilon == pytest.approx(5 * 0.5 + 1.0)
    assert search.privacy_["protects"] == "training and validation rows"
    assert search.ledger_ is book and search.best_estimator_.coef_.shape == (1, 5)
    assert 1e-4 <= search.best_params_["regularization"] <= 1e-1
    small = Ledger(2.0, relation="replace_one")
    with pytest.raises(BudgetExceededError):
        DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0), {"regularization": (1e-4, 1e-1, "log")},
                        epsilon=1.0, n_iter=4, n_candidates=16, ledger=small, random_state=1).fit(X, y)


def test_default_ledger_is_sized_for_every_fit(data):
    X, y = data
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.25, data_norm=1.0),
                             {"regularization": [1e-3, 1e-2, 1e-1]}, epsilon=0.5, n_iter=3, random_state=2)
    search.fit(X, y)
    assert search.privacy_["epsilon"] == pytest.approx(4 * 0.25 + 0.5)


def test_algorithm_3_is_exact_and_clips_rows(data):
    X, y = data
    search = DPBayesSearchCV(LogisticRegression(fit_intercept=False), {"C": (1.0, 100.0, "log")}, algorithm=3,
                             data_norm=1.0, epsilon=1e12, n_iter=4, n_candidates=8, random_state=3)
    with pytest.warns(PrivacyLeakWarning):
        search.fit(X * 10, y)  # rows beyond the declared bound are clipped, not trusted
    assert search.privacy_["selection_guarantee"] == "exact"
    info = search.result_.info
    C = search.candidates_.points[:, 0]
    assert info["lambda_min"] == pytest.approx(1 / (C.max() * 300)) and info["validation_size"] == 100
    assert info["lambda_max"] == pytest.approx(1 / (C.min() * 300)) and np.all((C >= 1) & (C <= 100))
    assert 0.5 < search.best_score_ < 1.0
    with pytest.raises(ValueError, match="fit_intercept=False"):
        DPBayesSearchCV(LogisticRegression(), {"C": (1.0, 10.0)}, algorithm=3, data_norm=1.0).fit(X, y)
    with pytest.raises(ValueError, match="data_norm"):
        DPBayesSearchCV(LogisticRegression(fit_intercept=False), {"C": (1.0, 10.0)}, algorithm=3).fit(X, y)
    # Theorem 7 needs eq. (10)'s L2 penalty and a 1-Lipschitz mean loss: an L1 penalty through l1_ratio (sklearn
    # >= 1.8, under the default penalty) or class weights of any mean had been accepted as "exact"
    for bad in (dict(l1_ratio=1.0, solver="saga"), dict(l1_ratio=0.5, solver="saga"), dict(class_weight={0: 1, 1: 50})):
        with pytest.raises(ValueError, match="no l1_ratio or class weights"):
            DPBayesSearchCV(LogisticRegression(fit_intercept=False, **bad), {"C": (1.0, 10.0)}, algorithm=3,
                            data_norm=1.0).fit(X, y)


@pytest.mark.parametrize("kwargs,match", [
    (dict(validation_size=1.5), "validation_size must be a fraction"),
    (dict(validation_size=400), "validation_size must leave rows"),
    (dict(cv=([0, 1], [1, 2])), "disjoint"),
    (dict(cv=([0, 1], [500])), r"cv indices must lie in \[0, 400\)"),
    (dict(algorithm=5), "algorithm must be 1, 2 or 3"),
    (dict(epsilon=-1.0), "epsilon must be in"),
])
def test_bad_input(data, kwargs, match):
    X, y = data
    search = DPBayesSearchCV(DecisionTreeClassifier(), {"max_depth": [1, 2]}, n_iter=2, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match=match):
            search.fit(X, y)


def _approx_event(epsilon, delta):
    """The event each fit of an add/remove (epsilon, delta) estimator is charged under the search's replace-one."""
    return ev.ApproxDP(*group_privacy(epsilon, delta, 2))


def test_an_approximate_dp_estimator_is_charged_one_approx_event_per_fit(data):
    """dp-blsgd (add/remove, (0.5, 1e-6)): each of the 3 steps and the refit runs on its own ledger of exactly
    (0.5, 1e-6) and is charged one ApproxDP of its replace-one guarantee, (1.0, (1 + e^0.5)·1e-6); the selection's
    two pure releases (1.0) compose with them by basic composition.  Before, such an estimator was refused."""
    X, y = data
    estimator = DPLogisticRegression(epsilon=0.5, delta=1e-6, method="dp-blsgd", data_norm=1.0, classes=[0, 1],
                                     random_state=0)
    search = DPBayesSearchCV(estimator, {"regularization": (1e-4, 1e-1, "log")}, epsilon=1.0, n_iter=3,
                             n_candidates=8, random_state=0)
    search.fit(X, y)
    fit = _approx_event(0.5, 1e-6)
    assert fit.epsilon == 1.0 and fit.delta >= 1e-6 * (1 + np.exp(0.5))
    events = [ev.from_dict(e) for e in search.privacy_["events"]]
    assert [e for e in events if isinstance(e, ev.ApproxDP)] == [fit] * 4
    assert {type(e) for e in events} == {ev.ApproxDP, ev.Exponential, ev.Laplace}
    book = search.ledger_
    assert (book.notion, book.relation) == ("approx", "replace_one")
    assert book.spent().epsilon == budget_for(1.0, *[fit.epsilon] * 4) == book.epsilon
    assert book.spent().delta == budget_for(*[fit.delta] * 4) == book.delta
    assert search.privacy_["epsilon"] == 5.0 and search.privacy_["delta_ledger"] == book.spent().delta
    own = search.best_estimator_.privacy_spent_  # the refit spent at most its own budget, under add/remove
    assert own["epsilon"] <= 0.5 and own["delta"] == 1e-6 and own["relation"] == "add_remove"
    record = search.privacy_record()
    assert (record["notion"], record["epsilon"], record["delta"]) == ("approx", 5.0, book.spent().delta)
    assert Ledger.from_dict(book.to_dict()).spent() == book.spent()  # the event log re-derives the guarantee


@pytest.mark.parametrize("ledger,match", [
    (Ledger(10.0, 1e-3, "rdp", relation="replace_one"), "an (epsilon, delta) estimator's fits are charged as ApproxDP"),
    (Ledger(10.0, relation="replace_one"), "an (epsilon, delta) estimator's fits are charged as ApproxDP"),
    (Ledger(10.0, 1e-3, "approx", relation="add_remove"), "ledger.relation must be 'replace_one' for the search"),
])
def test_an_approximate_dp_estimator_needs_an_approx_replace_one_ledger(data, ledger, match):
    X, y = data
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, delta=1e-6, method="dp-blsgd", data_norm=1.0,
                                                  classes=[0, 1]),
                             {"regularization": (1e-4, 1e-1, "log")}, epsilon=1.0, n_iter=3, n_candidates=8,
                             random_state=0, ledger=ledger)
    with pytest.raises(ValueError, match=f"^{re.escape(match)}"):
        search.fit(X, y)
    assert not ledger.events


@pytest.mark.parametrize("short", ["epsilon", "delta"])
def test_an_approximate_search_the_ledger_cannot_afford_is_refused_up_front(data, short):
    """4 fits at (1.0, (1 + e^0.5)·1e-6) and the releases' 1.0: a ledger a hair short in ε or in δ refuses the
    whole search before any fit, with nothing charged; the exact sums fit."""
    X, y = data
    fit = _approx_event(0.5, 1e-6)
    need_eps, need_delta = budget_for(1.0, *[fit.epsilon] * 4), budget_for(*[fit.delta] * 4)
    budget = {"epsilon": need_eps, "delta": need_delta}
    budget[short] = np.nextafter(budget[short], 0.0)
    book = Ledger(budget["epsilon"], budget["delta"], "approx", relation="replace_one")
    estimator = DPLogisticRegression(epsilon=0.5, delta=1e-6, method="dp-blsgd", data_norm=1.0, classes=[0, 1])
    search = DPBayesSearchCV(estimator, {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=3, random_state=0,
                             ledger=book)
    fitted = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DPLogisticRegression, "fit", lambda self, X, y: fitted.append(1) or self)
        with pytest.raises(BudgetExceededError, match=r"^the search needs epsilon=5, delta=1\.05949e-05 \(4 fits "
                                                      r"at 1, 2\.64872e-06 and the releases' 1\)"):
            search.fit(X, y)
    assert not book.events and not fitted


def test_secure_noise_reaches_the_selection_and_a_secure_estimator_composes_with_it(data):
    X, y = data
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, method="dp-gd", data_norm=1.0, secure_noise=True),
                             {"regularization": [1e-3, 1e-2, 1e-1]}, epsilon=1.0, n_iter=2, random_state=0,
                             secure_noise=True)
    search.fit(X, y)
    assert search.result_.info["secure_noise"] and search.privacy_["selection"]["secure_noise"]
    kinds = {e["type"] for e in search.privacy_["events"]}
    assert {"exponential", "discrete_laplace"} <= kinds and "laplace" not in kinds  # nothing released in floats
    assert search.privacy_["epsilon"] == pytest.approx(3 * 0.5 + 1.0)
    assert search.get_params()["secure_noise"] is True


# -- neighbouring validation sets (replace one record) leave the same structure -------------------------------
SPACE = {"regularization": (1e-4, 1.0, "log")}


def _validation_rows(n, seed):
    """The validation indices DPBayesSearchCV(random_state=seed) draws for n rows (its Sobol seed, then the split)."""
    rng = np.random.default_rng(seed)
    rng.integers(2**31)
    return DPBayesSearchCV(None, {})._split(n, rng)[1]


@pytest.fixture(scope="module")
def neighbours():
    """200 rows and a neighbour whose validation record 4 has the other label: GP-UCB's trajectory differs
    between them (8 vs 7 distinct candidates of 32 in 8 steps, before the fix)."""
    X, y = make_classification(n_samples=200, n_features=5, n_informative=3, random_state=0)
    X = X / np.linalg.norm(X, axis=1).max()
    assert 4 in _validation_rows(200, 1)
    y2 = y.copy()
    y2[4] = 1 - y2[4]
    return X, y, y2


def _search(estimator, **kwargs):
    return DPBayesSearchCV(estimator, SPACE, epsilon=1.0, n_iter=8, n_candidates=32, noise_std=0.5, random_state=1,
                           **kwargs)


def test_the_privacy_record_does_not_tell_which_candidates_were_visited(neighbours):
    """Each step's private fit is charged the same event whatever its candidate (objpert's own events depend on
    the regularization), and a candidate visited again is fitted again: before, ε spent and the event log told
    neighbouring validation sets apart (5.5 vs 5.0, 20 vs 18 events)."""
    X, y, y2 = neighbours
    records = []
    for labels in (y, y2):
        search = _search(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0))
        search.fit(X, labels)
        records.append((search.privacy_["epsilon"], search.privacy_["events"]))
    assert records[0] == records[1]
    assert records[0][0] == pytest.approx(9 * 0.5 + 1.0)  # 8 steps and the refit, then the two releases
    # a ledger one fit short: before, the neighbour visiting 7 candidates released and the other raised at the
    # refit, both having spent 5.0; now both are refused before anything is spent
    for labels in (y, y2):
        book = Ledger(5.0, relation="replace_one")
        search = _search(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0),
                         ledger=book)
        with pytest.raises(BudgetExceededError, match=r"^the search needs epsilon=5\.5 \(9 fits at 0\.5 and the "):
            search.fit(X, labels)
        assert not book.events


def test_warnings_do_not_tell_which_candidates_were_visited(neighbours):
    """Only the first step's fit (its candidate is fixed before any score is seen) and the refit of the released
    candidate may warn: before, one PrivacyLeakWarning per distinct candidate fitted."""
    X, y, y2 = neighbours
    caught = []
    for labels in (y, y2):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            _search(DPLogisticRegression(epsilon=0.5, data_norm=1.0, random_state=0)).fit(X, labels)
        caught.append([(w.category, str(w.message)) for w in record])
    assert caught[0] == caught[1]
    assert [c for c, _ in caught[0]] == [PrivacyLeakWarning] * 2  # label set read: the first fit and the refit


@pytest.mark.parametrize("method,n_iter,epsilon,seed", [("dp-blsgd", 8, 0.5, 0), ("dp-agd", 4, 2.0, 3)])
def test_an_approximate_search_releases_the_same_record_on_neighbouring_data(neighbours, method, n_iter, epsilon,
                                                                             seed):
    """Three neighbours, same seed: the data, one validation label flipped, one training row dropped.  What an
    (epsilon, delta) fit's own events would have told differs between them (dp-blsgd: GP-UCB visits other
    candidates, in another order; dp-agd: the fits' own event counts, its budget increases, differ), yet the
    released record (privacy_, privacy_record()) and the warnings are identical: one ApproxDP per fit.  (The
    estimator's seed is one where the fits' own traces do differ: each fit draws its seed from it.)"""
    X, y, y2 = neighbours
    k = int(np.setdiff1d(np.arange(200), _validation_rows(200, 1))[0])  # a training row
    fitted = DPBayesSearchCV._fit_one
    outcomes = []
    for data in ((X, y), (X, y2), (np.delete(X, k, axis=0), np.delete(y, k))):
        trace = []

        def spy(model, *args, trace=trace, **kwargs):
            out = fitted(model, *args, **kwargs)
            trace.append((model.get_params()["regularization"], len(model.privacy_events_)))
            return out

        estimator = DPLogisticRegression(epsilon=epsilon, delta=1e-6, method=method, data_norm=1.0,
                                         random_state=seed)
        search = DPBayesSearchCV(estimator, SPACE, epsilon=1.0, n_iter=n_iter, n_candidates=32, noise_std=0.5,
                                 random_state=1)
        with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings(record=True) as caught:
            mp.setattr(DPBayesSearchCV, "_fit_one", staticmethod(spy))
            warnings.simplefilter("always")
            search.fit(*data)
        outcomes.append((trace, search.privacy_, search.privacy_record(), [(w.category, str(w.message))
                                                                            for w in caught]))
    traces, privacy, records, caught = zip(*outcomes, strict=True)
    assert len(set(map(tuple, traces))) > 1  # a record built from the fits' own events would differ
    assert privacy[0] == privacy[1] == privacy[2] and records[0] == records[1] == records[2]
    assert caught[0] == caught[1] == caught[2] and [c for c, _ in caught[0]] == [PrivacyLeakWarning] * 2
    fit = _approx_event(epsilon, 1e-6)
    assert privacy[0]["events"].count(fit.to_dict()) == n_iter + 1 and privacy[0]["notion"] == "approx"
    assert privacy[0]["epsilon"] == budget_for(1.0, *[fit.epsilon] * (n_iter + 1))


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("algorithm", [1, 3])
def test_a_non_finite_record_is_refused_before_anything_is_spent(neighbours, value, algorithm):
    """One NaN or infinite validation value made the run raise inside the search on that neighbour only (Alg. 3:
    'non-finite gain for candidate 0'; a private estimator: at its first score, after spending 0.5); now it is
    refused at the boundary with nothing charged, and a huge finite value releases like an ordinary one."""
    X, y, _ = neighbours
    if algorithm == 3:
        estimator, space, extra = LogisticRegression(fit_intercept=False), {"C": [0.1, 1.0, 10.0]}, {"data_norm": 1.0}
    else:
        estimator, space, extra = DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1]), SPACE, {}
    k = _validation_rows(200, 1)[0]
    results = []
    for bad in (value, 1e308, 0.5):
        X2 = X.copy()
        X2[k, 0] = bad
        book = Ledger(10.0, relation="replace_one")
        search = DPBayesSearchCV(estimator, space, algorithm=algorithm, epsilon=1.0, n_iter=3, n_candidates=8,
                                 random_state=1, ledger=book, **extra)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            if bad is value:
                with pytest.raises(ValueError, match=r"^X contains 1 NaN or infinite value\(s\)$"):
                    search.fit(X2, y)
                assert book.spent().epsilon == 0.0 and not book.events
                continue
            search.fit(X2, y)
        results.append((book.spent().epsilon, [e.to_dict()["type"] for e in book.events], sorted(search.best_params_)))
    assert results[0] == results[1]


@pytest.mark.parametrize("space,name", [
    ({"epsilon": [0.1, 1.0]}, "epsilon"),
    ({"delta": [0.0, 1e-6]}, "delta"),
])
def test_the_space_may_not_tune_a_private_estimators_budget(data, space, name):
    """Each fit of the search is charged the estimator's own ε: a candidate's own ε or δ would escape that."""
    X, y = data
    book = Ledger(10.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1]), space,
                             n_iter=2, ledger=book)
    with pytest.raises(ValueError, match=f"^space must not tune the private estimator's {name}: "):
        search.fit(X, y)
    assert not book.events


def test_a_pure_search_fits_its_default_ledger_and_a_short_ledger_is_refused_up_front(data):
    """The default ledger was sized 0.1 + 4·0.1 = 0.5 in floats, below the exact sum of the five 0.1 charges
    (four fits and the releases): the search spent everything, released, and then its refit was refused.
    Sized by the exact sum rounded up it completes; a ledger of the float sum is refused before anything."""
    X, y = data
    estimator = DPLogisticRegression(epsilon=0.1, data_norm=1.0, classes=[0, 1], random_state=0)
    search = DPBayesSearchCV(estimator, {"regularization": [1e-3, 1e-2, 1e-1]}, epsilon=0.1, n_iter=3, random_state=2)
    search.fit(X, y)
    assert search.best_estimator_.coef_.shape == (1, 5) and search.privacy_["epsilon"] == pytest.approx(0.5)
    book = Ledger(0.1 + 4 * 0.1, relation="replace_one")
    search = DPBayesSearchCV(estimator, {"regularization": [1e-3, 1e-2, 1e-1]}, epsilon=0.1, n_iter=3,
                             random_state=2, ledger=book)
    with pytest.raises(BudgetExceededError, match="^the search needs epsilon=0.5 "):
        search.fit(X, y)
    assert not book.events


def test_an_invalid_candidate_is_refused_before_anything_is_spent(data):
    """A space reaching invalid values (regularization < 0 here) raised only when GP-UCB visited such a candidate,
    which depends on the validation rows: with this seed after two fits had spent 1.0, and the message named the
    visited value.  Every candidate is checked before anything is spent."""
    X, y = data
    book = Ledger(20.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], method="objpert"),
                             {"regularization": (-0.5, 1.0)}, epsilon=1.0, n_iter=5, n_candidates=16, ledger=book,
                             random_state=1)
    with pytest.raises(ValueError, match="^regularization must be in"):
        search.fit(X, y)
    assert not book.events


def test_a_candidate_data_norm_out_of_range_is_refused_before_anything_is_spent(data):
    """data_norm is checked in fit, not in _check_params: a space reaching a row bound outside the usable range
    (1e200 here) raised only when GP-UCB visited such a candidate, with this seed after one fit had spent 0.5."""
    X, y = data
    book = Ledger(20.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], method="objpert"),
                             {"data_norm": [1.0, 2.0, 3.0, 0.5, 1e200]}, epsilon=1.0, n_iter=3, ledger=book,
                             random_state=0)
    with pytest.raises(ValueError, match=r"^the row bound \(data_norm"):
        search.fit(X, y)
    assert not book.events


class _StatesItsRelation(DPLogisticRegression):
    """dp-blsgd that claims a replace-one guarantee when its regularization is below 0.01 (a relation that depends
    on the candidate, as a space over a method would make it), and whose fits report it."""

    def _guarantee_relation(self):
        return "replace_one" if self.regularization < 0.01 else "add_remove"

    def fit(self, X, y):
        super().fit(X, y)
        self.privacy_spent_ = {**self.privacy_spent_, "relation": self._guarantee_relation()}
        return self


class _Overspends(DPLogisticRegression):
    """A fit whose own ledger reports more than its (epsilon, delta): one of the two scaled by ``self.factor``."""

    which = "delta"

    def fit(self, X, y):
        super().fit(X, y)
        self.privacy_spent_ = {**self.privacy_spent_, self.which: 2.0 * float(self.get_params()[self.which])}
        return self


class _BarePrivate:
    """A private estimator that does not say under which relation its (epsilon, delta) holds."""

    privacy_record = None

    def get_params(self, deep=True):
        return {"epsilon": 0.5, "delta": 1e-6}


def test_every_fit_is_charged_the_group_privacy_event_unless_the_estimator_is_replace_one():
    """The event of one fit: add/remove estimators (auto and the RDP methods at delta > 0, dp-agd, DPMLPClassifier,
    an estimator that does not say) are charged (2 eps, (1 + e^eps) delta); Gaussian outpert (replace-one) its own
    (eps, delta); a pure one PureDP(eps)."""
    from dpopt.estimators import DPMLPClassifier
    from dpopt.estimators.bayes_search import _fit_event

    group = _approx_event(0.5, 1e-6)
    for method in ("auto", "dp-blsgd", "dp-sgd", "dp-agd"):
        assert _fit_event(DPLogisticRegression(epsilon=0.5, delta=1e-6, method=method)) == group, method
    assert _fit_event(DPMLPClassifier(epsilon=0.5, delta=1e-6)) == group
    assert _fit_event(_BarePrivate()) == group
    assert _fit_event(DPLogisticRegression(epsilon=0.5, delta=1e-6, method="outpert")) == ev.ApproxDP(0.5, 1e-6)
    assert _fit_event(DPLogisticRegression(epsilon=0.5, method="auto")) == ev.PureDP(0.5)


def _refused_before_any_fit(search, data, cls, match):
    """``search.fit`` raises a one-line ValueError matching ``match`` before any ``cls.fit`` and any charge."""
    fitted = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(cls, "fit", lambda self, X, y: fitted.append(1) or self)
        with pytest.raises(ValueError, match=match):
            search.fit(*data)
    assert not search.ledger.events and not fitted


def test_a_candidate_that_changes_the_guarantee_of_a_fit_is_refused_before_anything_is_spent(data):
    """Every fit is charged one event, the same whatever the candidate: a space whose candidates differ in the
    relation of their guarantee (replace-one below regularization 0.01) is refused before any fit.  Before, every
    fit was charged the estimator's (eps, delta), also the add/remove candidate's, whose replace-one guarantee is
    (2 eps, (1 + e^eps) delta) (the check after the fit accepted its add/remove ledger)."""
    book = Ledger(50.0, 1e-3, "approx", relation="replace_one")
    estimator = _StatesItsRelation(epsilon=0.5, delta=1e-6, method="dp-blsgd", data_norm=1.0, classes=[0, 1],
                                   regularization=0.001)
    search = DPBayesSearchCV(estimator, {"regularization": [0.001, 0.1]}, epsilon=1.0, n_iter=3, ledger=book,
                             random_state=0)
    _refused_before_any_fit(search, data, DPLogisticRegression,
                            r"^candidate \{'regularization': 0\.1\} changes the guarantee of a fit")


@pytest.mark.parametrize("which", ["epsilon", "delta"])
def test_a_fit_that_spent_more_than_its_budget_stops_the_search(data, which):
    """The search charges each (epsilon, delta) fit the guarantee of its stated budget: a fit whose own ledger
    reports more (here faked) stops the search at once, with the one fit charged and nothing selected."""
    X, y = data
    book = Ledger(50.0, 1e-3, "approx", relation="replace_one")
    estimator = _Overspends(epsilon=0.5, delta=1e-6, method="dp-blsgd", data_norm=1.0, classes=[0, 1])
    search = DPBayesSearchCV(estimator, {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=2, ledger=book,
                             random_state=0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_Overspends, "which", which)
        with pytest.raises(RuntimeError, match="^a fit of the search spent .*beyond the estimator's"):
            search.fit(X, y)
    assert book.events == [_approx_event(0.5, 1e-6)] and not hasattr(search, "best_params_")


def test_a_fit_that_raises_after_releasing_is_charged(data):
    """An add/remove fit releases its record count first; a warning after it (auto's UtilityWarning states the
    count) raised as an error under warnings-as-errors.  That fit is charged all the same: before, the search's
    ledger stayed empty while the exception carried the noisy count out."""
    X, y = data
    book = Ledger(50.0, 1e-3, "approx", relation="replace_one")
    estimator = DPLogisticRegression(epsilon=0.05, delta=1e-6, data_norm=1.0, classes=[0, 1], random_state=0)
    search = DPBayesSearchCV(estimator, {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=2, ledger=book,
                             random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UtilityWarning, match=r"N\*epsilon/d = [0-9.]+\*"):
            search.fit(X, y)
    assert book.events == [_approx_event(0.05, 1e-6)]


def test_an_invalid_mlp_candidate_is_refused_before_anything_is_spent(data):
    """DPMLPClassifier checks its parameters without data (_check_params): a space reaching a sampling rate above 1
    is refused before any fit, not when GP-UCB visits such a candidate after other fits have spent their budget."""
    pytest.importorskip("torch")
    from dpopt.estimators import DPMLPClassifier

    book = Ledger(50.0, 1e-3, "approx", relation="replace_one")
    search = DPBayesSearchCV(DPMLPClassifier(epsilon=0.5, delta=1e-6, classes=[0, 1], data_norm=1.0),
                             {"batch_rate": [0.1, 0.5, 1.5]}, epsilon=1.0, n_iter=3, ledger=book, random_state=0)
    _refused_before_any_fit(search, data, DPMLPClassifier, r"^batch_rate must be in \(0, 1\]")


@pytest.mark.parametrize("space,match", [
    ({"epochs": [0.5, 2e7]}, r"^the iterations ceil\(epochs/batch_rate\) must be in \[1, 10000000\]"),
    ({"hidden_layer_sizes": [4, 10**8]}, r"^hidden_layer_sizes \(100000000,\) would need about"),
])
def test_an_mlp_candidate_that_cannot_run_is_refused_before_anything_is_spent(data, space, match):
    """A candidate whose run is too long (epochs) or whose network is too large for the data's features and
    classes is refused before any fit.  Before, it raised when GP-UCB visited it, after the fits before it were
    charged: on neighbouring validation sets (one label flipped) the same search raised with 2 or 4 events
    charged (epsilon 4 or 8), which told the candidates visited."""
    pytest.importorskip("torch")
    from dpopt.estimators import DPMLPClassifier

    book = Ledger(50.0, 1e-3, "approx", relation="replace_one")
    search = DPBayesSearchCV(DPMLPClassifier(epsilon=0.5, delta=1e-6, classes=[0, 1], data_norm=1.0), space,
                             epsilon=1.0, n_iter=3, ledger=book, random_state=0)
    _refused_before_any_fit(search, data, DPMLPClassifier, match)


def test_every_fit_of_a_seeded_private_estimator_draws_its_own_noise(data):
    """The fits of the search are composed as independent mechanisms, so each draws its own noise.  Before, every
    clone of DPLogisticRegression(random_state=0) drew the same stream: along a 3-step outpert search the 4 fits'
    standardized Gaussian noise vectors were equal, and sigma_2 x_1 - sigma_1 x_2 of two fits was a noise-free
    function of the training rows (it moved from 0.0912 to 0.0837 in its first coordinate when one row was
    replaced).  The fits' seeds come from the estimator's seed: the same search is reproducible."""
    seeds = []
    original = DPLogisticRegression.fit

    def fit(self, X, y):
        seeds.append(self.random_state)
        return original(self, X, y)

    estimator = DPLogisticRegression(epsilon=0.5, delta=1e-6, method="outpert", data_norm=1.0, classes=[0, 1],
                                     random_state=0)
    runs = []
    for _ in range(2):
        seeds.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(DPLogisticRegression, "fit", fit)
            search = DPBayesSearchCV(estimator, {"regularization": [0.01, 0.05, 0.2]}, epsilon=1.0, n_iter=3,
                                     random_state=1).fit(*data)
        runs.append((list(seeds), search.best_params_, search.best_score_))
    assert len(runs[0][0]) == 4 and len(set(runs[0][0])) == 4  # 3 steps and the refit
    assert runs[0] == runs[1] and estimator.random_state == 0


def test_a_regularization_an_accelerated_method_cannot_fit_is_refused_before_anything_is_spent(data):
    """kuru2022's methods need mu = regularization > 0; a space reaching 0.0 was refused ('mu must be in (0, inf)')
    only when GP-UCB visited it, after the first fit had spent 0.5 (step 2 on every seed tried)."""
    book = Ledger(50.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, method="dp-gd", data_norm=1.0, classes=[0, 1]),
                             {"regularization": [0.0, 1e-3, 1e-2]}, epsilon=1.0, n_iter=3, ledger=book,
                             random_state=0)
    _refused_before_any_fit(search, data, DPLogisticRegression, r"^method 'dp-gd' needs regularization > 0")
    X, y = data
    with pytest.raises(ValueError, match=r"needs regularization > 0"):
        DPLogisticRegression(method="dp-nag", regularization=0.0, data_norm=1.0, classes=[0, 1]).fit(X, y)
    DPLogisticRegression(method="dp-gd", regularization=0.0, data_norm=1.0, classes=[0, 1], random_state=0,
                         method_params={"mu": 1e-3, "iterations": 3}).fit(X, y)  # mu given: fits


@pytest.mark.parametrize("label,match", [(2, r"^y has a label outside the declared classes \[0, 1\]"),
                                         (0.5, r"^Unknown label type")])
def test_a_training_label_the_fits_refuse_is_refused_before_anything_is_spent(data, label, match):
    """A training row whose label the estimator refuses (outside the declared classes, or not a class label) is
    refused before any fit.  Before, the search charged the first fit, which then raised: the ledger held one
    event (epsilon 0.5 on a pure ledger, 1.0 for the dp-blsgd fit's group-privacy event) for a refused input."""
    X, y = data
    k = int(np.setdiff1d(np.arange(len(y)), _validation_rows(len(y), 0))[0])  # a training row
    labels = y.astype(float)
    labels[k] = label
    book = Ledger(50.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0),
                             {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=2, ledger=book, random_state=0)
    _refused_before_any_fit(search, (X, labels), DPLogisticRegression, match)


def test_a_pickled_fitted_search_does_not_carry_the_seeds(data):
    """A fitted search's pickle held its own seed and its private estimator's: rerunning it (clone of the
    unpickled search, 2 steps) on D and on D' (one row removed) matched the released best_estimator_ exactly on
    the data it was fitted on only.  Now neither seed is in it; the live search and an unfitted one keep theirs."""
    import pickle

    estimator = DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0)
    search = DPBayesSearchCV(estimator, {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=2, random_state=0)
    back = pickle.loads(pickle.dumps(search.fit(*data)))
    assert back.random_state is None and back.estimator.random_state is None
    assert back.best_estimator_.random_state is None and back.best_params_ == search.best_params_
    assert search.random_state == 0 and search.estimator.random_state == 0
    unfitted = pickle.loads(pickle.dumps(DPBayesSearchCV(estimator, {"regularization": [1e-3]}, random_state=5)))
    assert unfitted.random_state == 5 and unfitted.estimator.random_state == 0


class _BarePurePrivate(_BarePrivate):
    """A pure epsilon-DP private estimator that does not say under which relation its epsilon holds."""

    def get_params(self, deep=True):
        return {"epsilon": 0.5, "delta": 0.0}


class _PureAddRemove(_BarePurePrivate):
    def _guarantee_relation(self):
        return "add_remove"


def test_a_pure_add_remove_fit_is_charged_twice_its_epsilon():
    """Under the search's replace-one relation a pure epsilon-DP guarantee under add/remove (or one that does not say
    which, read as add/remove as for (epsilon, delta) estimators) is 2 epsilon (group privacy, k = 2): before, it
    was charged PureDP(epsilon) whatever its relation (the (epsilon, delta) path already used group privacy)."""
    from dpopt.estimators.bayes_search import _fit_event

    assert _fit_event(_PureAddRemove()) == _fit_event(_BarePurePrivate()) == ev.PureDP(1.0)
    assert _fit_event(DPLogisticRegression(epsilon=0.5, method="auto")) == ev.PureDP(0.5)  # replace-one: its own


def test_a_score_that_is_not_finite_does_not_stop_the_search(data):
    """roc_auc is undefined (nan) on a validation part holding one class.  Before, the search raised ('non-finite
    gain') after charging its first fit, on that validation set only: 3 validation rows all labelled 1 raised with
    1 event spent, and each neighbour with one of them relabelled 0 ran to the end (7 events).  Now the score counts
    as prior_mean and both run the same search."""
    X, y = data
    rows = _validation_rows(len(y), 0)[:3]
    records = []
    for labels in ([1, 1, 1], [0, 1, 1]):
        y2 = y.copy()
        y2[_validation_rows(len(y), 0)] = 0
        y2[rows] = labels
        book = Ledger(50.0, relation="replace_one")
        search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0),
                                 {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=3, ledger=book, random_state=0,
                                 validation_size=3, scoring="roc_auc")
        search.fit(X, y2)
        records.append([e.to_dict() for e in book.events])
    assert records[0] == records[1] and len(records[0]) == 7


@pytest.mark.parametrize("private", [True, False])
def test_a_pure_ledger_of_another_relation_is_refused_before_anything_is_spent(data, private):
    """Every ledger the search charges must be replace-one, not only an approx one: before, a pure add/remove ledger
    was charged a pure private estimator's first fit (1 event, epsilon 0.5), whose fit then refused the ledger's
    copy; with scikit-learn's LogisticRegression (Algorithm 3) the releases were charged to it (2 events)."""
    book = Ledger(50.0, relation="add_remove")
    if private:
        search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0),
                                 {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=3, ledger=book, random_state=0)
    else:
        search = DPBayesSearchCV(LogisticRegression(fit_intercept=False), {"C": [1.0, 10.0]}, algorithm=3,
                                 data_norm=1.0, epsilon=1.0, n_iter=3, ledger=book, random_state=0)
    with pytest.raises(ValueError, match=r"^ledger.relation must be 'replace_one' for the search"):
        search.fit(*data)
    assert not book.events


@pytest.mark.parametrize("mlp", [False, True])
def test_bounds_of_another_length_are_refused_before_anything_is_spent(data, mlp):
    """``bounds`` that do not match the features are refused before any fit: before, the search charged the first
    fit, which then raised (1 event; DPMLPClassifier's was numpy's broadcasting error, not one line)."""
    if mlp:
        pytest.importorskip("torch")
        from dpopt.estimators import DPMLPClassifier

        cls, space = DPMLPClassifier, {"learning_rate": [0.01, 0.1]}
        estimator = DPMLPClassifier(epsilon=0.5, delta=1e-6, bounds=(0.0, [1.0, 2.0]), classes=[0, 1])
        book = Ledger(50.0, 1e-3, "approx", relation="replace_one")
    else:
        cls, space = DPLogisticRegression, {"regularization": [1e-3, 1e-2]}
        estimator = DPLogisticRegression(epsilon=0.5, bounds=(0.0, [1.0, 2.0]), classes=[0, 1], random_state=0)
        book = Ledger(50.0, relation="replace_one")
    search = DPBayesSearchCV(estimator, space, epsilon=1.0, n_iter=2, ledger=book, random_state=0)
    _refused_before_any_fit(search, data, cls, r"^bounds must be scalars or arrays of length 5 \(the number of ")


@pytest.mark.parametrize("name", ["refit", "secure_noise"])
def test_a_flag_that_is_not_a_bool_is_refused_before_anything_is_spent(data, name):
    """refit='no' is truthy: the search refitted (one more charged fit, a released model); secure_noise='no' turned
    exact noise on.  Both are refused in one line before any fit."""
    book = Ledger(50.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0),
                             {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=2, ledger=book, random_state=0,
                             **{name: "no"})
    with pytest.raises(TypeError, match=f"^{name} must be True or False, got str"):
        search.fit(*data)
    assert not book.events


@pytest.mark.parametrize("scoring", ["accuracy", "roc_auc"])
def test_a_validation_label_outside_the_declared_classes_is_refused_before_anything_is_spent(data, scoring):
    """The estimator's declared classes are every label that can occur: a validation row labelled 2 was scored as a
    wrong prediction (accuracy: the search ran, 7 events) or raised in the scorer (roc_auc: 'multi_class must be
    in ...', after the first fit was charged, 1 event), where the same label on a training row is refused up front."""
    X, y = data
    labels = y.astype(float)
    labels[_validation_rows(len(y), 0)[0]] = 2
    book = Ledger(50.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, classes=[0, 1], random_state=0),
                             {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=2, ledger=book, random_state=0,
                             scoring=scoring)
    _refused_before_any_fit(search, (X, labels), DPLogisticRegression,
                            r"^y has a label outside the declared classes \[0, 1\]")


@pytest.mark.parametrize("scoring", ["neg_log_loss", "roc_auc"])
def test_a_scorer_that_refuses_the_validation_part_does_not_stop_the_search(data, scoring):
    """A validation row whose label the fits never saw (classes read from the training part): neg_log_loss ('y_true
    and y_prob contain different number of classes') and roc_auc raised after the first fit was charged (1 event),
    on that validation set only; its neighbour with the row labelled 1 ran the whole search (6 events).  The score
    counts as prior_mean, as a score that is not finite does, and both run the same search."""
    X, y = data
    records = []
    for label in (2, 1):
        labels = y.copy()
        labels[_validation_rows(len(y), 0)[0]] = label
        book = Ledger(50.0, relation="replace_one")
        search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=1.0, random_state=0),
                                 {"regularization": [1e-3, 1e-2]}, epsilon=1.0, n_iter=2, ledger=book, random_state=0,
                                 scoring=scoring)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # (the label set is read from the training part)
            search.fit(X, labels)
        records.append([e.to_dict() for e in book.events])
    assert records[0] == records[1] and len(records[0]) == 6


class _ThirdPartyPureAddRemove(LogisticRegression):
    """A pure epsilon-DP estimator under add/remove that reports its own events (a Laplace count, sensitivity 1)."""

    privacy_record = None

    def __init__(self, epsilon=0.5, C=1.0):
        super().__init__(C=C)
        self.epsilon = epsilon

    def _guarantee_relation(self):
        return "add_remove"

    def fit(self, X, y):
        super().fit(X, y)
        self.privacy_events_ = [ev.Laplace(1.0 / self.epsilon, 1.0)]
        return self


def test_the_refit_of_a_pure_add_remove_estimator_is_charged_twice_its_epsilon(data):
    """9dbf0f0 charged the fits along the search PureDP(2 eps) for a pure add/remove estimator and budgeted the refit
    alike, but the refit charged the estimator's own events: Laplace(2, 1), epsilon 0.5 under add/remove, recorded
    as 0.5 on the replace-one ledger where one replaced record costs 1.0 (the search spent 3.5 of the 4.0 it
    stated).  The refit is charged the search's event, as an (epsilon, delta) estimator's is."""
    book = Ledger(50.0, relation="replace_one")
    search = DPBayesSearchCV(_ThirdPartyPureAddRemove(), {"C": [1.0, 10.0]}, epsilon=1.0, n_iter=2, ledger=book,
                             random_state=0)
    search.fit(*data)
    assert book.events[-1] == ev.PureDP(1.0)
    assert book.spent().epsilon == pytest.approx(4.0)
