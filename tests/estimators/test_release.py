"""The release test of the estimators: what a fit releases must not depend on one record.

For every estimator and every method, a fit on D and on a neighbour D′ (one
record replaced by an extreme one: a new label, a missing value, a
non-numeric value, a row of norm 1e12, a duplicate of another row) either

* releases objects of identical *structure* — shapes, dtypes, class sets, the
  privacy record's notion/relation/guarantee and events, the disclosed list,
  the warnings, the keys of the saved model file — or
* is refused with a one-line error before anything is spent.

What is not declared (label set, row bound) is read from the data only with a
:class:`PrivacyLeakWarning` and a ``disclosed_`` entry, on D and D′ alike.
Then: the label set and the shared ledger (issue 14 finding 1), the
non-private diagnostics (finding 6), and a statistical audit of the released
coefficients at n = 4 (the engine of :mod:`dpopt.privacy.audit`).
"""

from __future__ import annotations

import functools
import json
import warnings

import numpy as np
import pytest

from dpopt.estimators import METHODS, DPHuberSVC, DPLogisticRegression, PrivacyLeakWarning, UtilityWarning
from dpopt.estimators import linear as linear_module
from dpopt.estimators._dispatch import ACCELERATED, needs_delta, notion_of, relation_of
from dpopt.estimators.persist import model_to_dict
from dpopt.privacy import (
    BudgetExceededError,
    Ledger,
    PLDAccountant,
    PureDPAccountant,
    RDPAccountant,
    ZCDPAccountant,
)
from dpopt.privacy import events as ev
from dpopt.privacy.audit import AuditTarget, audit
from dpopt.privacy.calibration import RUN_DISCRETIZATION
from dpopt.result import NON_PRIVATE, Diagnostics

N, D = 40, 3
CLASSES = ["no", "yes"]
# Methods whose event log is fixed by the plan (the others adapt their steps to noisy answers,
# so the number of events is itself a private output and may differ between D and D').
PLANNED = (*ACCELERATED, "dp-sgd", "objpert", "outpert")
# Keep every run short: the structure does not depend on the number of iterations.
SHORT = {
    **{m: {"iterations": 20} for m in ACCELERATED},
    "dp-sgd": {"steps": 20},
    **{m: {"max_iter": 15} for m in ("dp-blsgd", "dp-blgd", "dp-blsgd-ac", "dp-agd")},
}


def _data():
    rng = np.random.default_rng(0)
    X = rng.random((N, D))
    y = np.where(X @ [1.0, -1.0, 0.5] > 0.25, "yes", "no")
    return X, y


def _neighbour(kind: str):
    """D' = D with record 0 replaced by an extreme one of the given kind."""
    X, y = _data()
    X, y = X.astype(object) if kind == "non-numeric" else X.copy(), y.astype(object)
    if kind == "new label":
        y[0] = "maybe"
    elif kind == "missing value":
        X[0, 1] = np.nan
    elif kind == "non-numeric":
        X[0, 1] = "abc"
    elif kind == "norm 1e12":
        X[0] = 1e12 / np.sqrt(D)
    elif kind == "duplicated row":
        X[0], y[0] = X[1], y[1]
    return X, y


NEIGHBOURS = ("new label", "missing value", "non-numeric", "norm 1e12", "duplicated row")
# With the label set and the row bound declared, these neighbours are refused (nothing spent).
REFUSED = {"new label": "outside the declared classes", "missing value": "NaN", "non-numeric": "could not convert"}


def _skeleton(obj, drop_events: bool):
    """The structure of a JSON-like object: floats become their type, other leaves stay."""
    if isinstance(obj, dict):
        return {k: _skeleton(v, drop_events) for k, v in obj.items() if not (drop_events and k == "events")}
    if isinstance(obj, list):
        return [_skeleton(v, drop_events) for v in obj]
    return "float" if isinstance(obj, float) else obj


def _fit(cls, method, X, y, **params):
    delta = 1e-5 if needs_delta(method) else 0.0
    est = cls(epsilon=1.0, delta=delta, method=method, random_state=0, method_params=SHORT.get(method), **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    return est, sorted((w.category.__name__, str(w.message)) for w in caught)


def _structure(est, caught, method) -> dict:
    adaptive = method not in PLANNED
    spent = dict(est.privacy_spent_)
    assert spent["epsilon"] <= 1.0  # no relative slack: the ledger refuses any overspend
    spent.pop("epsilon")
    return {
        "coef": (est.coef_.shape, est.coef_.dtype.str),
        "intercept": (est.intercept_.shape, est.intercept_.dtype.str),
        "classes": (est.classes_.tolist(), est.classes_.dtype.kind),
        "n_features_in": est.n_features_in_,
        "privacy": spent,
        "events": sorted({type(e).__name__ for e in est.privacy_events_}) if adaptive else est.privacy_events_,
        "disclosed": est.disclosed_,
        "warnings": caught,
        "attributes": sorted(k for k in vars(est) if k.endswith("_") and not k.startswith("_")),
        "model file": _skeleton(json.loads(json.dumps(model_to_dict(est))), drop_events=adaptive),
    }


CASES = [(cls, m) for i, m in enumerate(METHODS) for cls in ((DPLogisticRegression, DPHuberSVC)[i % 2],)]


@pytest.mark.parametrize("cls, method", CASES, ids=[f"{c.__name__}-{m}" for c, m in CASES])
def test_declared_release_has_the_same_structure_on_neighbours(cls, method):
    declared = {"classes": CLASSES, "data_norm": 1.0}
    base = _structure(*_fit(cls, method, *_data(), **declared), method)
    assert base["warnings"] == [] and base["disclosed"] == []
    assert base["privacy"]["relation"] == relation_of(method)
    assert base["privacy"]["notion"] == notion_of(method, 1e-5 if needs_delta(method) else 0.0)
    for kind in NEIGHBOURS:
        X, y = _neighbour(kind)
        ledger = Ledger(10.0, 1e-3, "rdp", relation=relation_of(method))
        if kind in REFUSED:
            with pytest.raises(ValueError, match=REFUSED[kind]) as info:
                _fit(cls, method, X, y, ledger=ledger, **declared)
            assert "\n" not in str(info.value) or kind == "missing value"  # scikit-learn's NaN message
            assert ledger.events == []  # refused before anything was spent
        else:
            assert _structure(*_fit(cls, method, X, y, **declared), method) == base, kind


@pytest.mark.parametrize("method", ["dp-nag-opt", "dp-sgd"])
def test_undeclared_release_warns_and_discloses_on_every_neighbour(method):
    """Without classes= and data_norm=, both are read from the data: always warned and disclosed,
    and the only structural difference between neighbours is inside what is disclosed."""
    base_est, base_warnings = _fit(DPLogisticRegression, method, *_data())
    for kind in ("new label", "norm 1e12", "duplicated row"):
        est, caught = _fit(DPLogisticRegression, method, *_neighbour(kind))
        for est_, caught_ in ((base_est, base_warnings), (est, caught)):
            # (a UtilityWarning on this tiny set states the released count N̂ for dp-sgd: post-processing)
            assert [c for c, _ in caught_ if c != "UtilityWarning"] == ["PrivacyLeakWarning", "PrivacyLeakWarning"]
            assert len(est_.disclosed_) == 2
            assert "label set" in est_.disclosed_[0] and "row norm" in est_.disclosed_[1]
            assert json.loads(json.dumps(model_to_dict(est_)))["privacy"]["disclosed"] == est_.disclosed_
        if kind == "new label":  # the disclosed label set is what differs
            assert est.classes_.tolist() == ["maybe", "no", "yes"] and est.coef_.shape == (3, D)


def test_dispatch_tables_match_the_families():
    """relation_of/notion_of (used to refuse a mismatched ledger before any noise) agree with what
    every method reports."""
    X, y = _data()
    for method in METHODS:
        est, _ = _fit(DPLogisticRegression, method, X, y, classes=CLASSES, data_norm=1.0)
        delta = 1e-5 if needs_delta(method) else 0.0
        assert est.privacy_spent_["relation"] == relation_of(method), method
        assert est.privacy_spent_["notion"] == notion_of(method, delta), method


# -- finding 1: the label set and the ledger ------------------------------------------------------


def test_undeclared_label_set_warns_and_is_disclosed():
    X, y = _data()
    with pytest.warns(PrivacyLeakWarning, match="label set was read from the data"):
        est = DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    assert est.disclosed_ == ["the label set ['no', 'yes'] was read from the data (classes= not declared)"]
    assert model_to_dict(est)["privacy"]["disclosed"] == est.disclosed_


def test_smoothness_read_from_the_data_warns_and_is_disclosed():
    # method_params={"L": None}: kuru2022's step sizes from the data's L (section 5), a conditional guarantee;
    # the record said so only by its kind, with nothing disclosed and no warning
    X, y = _data()
    for method in ("dp-gd", "dp-nag-opt"):
        est = DPLogisticRegression(method=method, data_norm=1.0, classes=CLASSES, random_state=0,
                                   method_params={"L": None, "iterations": 5})
        with pytest.warns(PrivacyLeakWarning, match="smoothness constant L"):
            est.fit(X, y)
        assert est.privacy_spent_["guarantee"] == "conditional"
        assert any("smoothness constant L" in item for item in est.disclosed_)
        assert any("smoothness constant L" in item for item in model_to_dict(est)["privacy"]["disclosed"])
    with warnings.catch_warnings():  # the public L (the default) reads nothing
        warnings.simplefilter("error")
        est = DPLogisticRegression(method="dp-gd", data_norm=1.0, classes=CLASSES, random_state=0).fit(X, y)
    assert est.disclosed_ == [] and est.privacy_spent_["guarantee"] == "exact"


def test_declared_label_set_fixes_the_shape_and_refuses_other_labels():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing read from the data: no privacy warning
        warnings.filterwarnings("ignore", category=UtilityWarning)  # 40 rows at ε/3: auto's small-budget note
        est = DPLogisticRegression(epsilon=1.0, data_norm=1.0, classes=["no", "yes", "maybe"], random_state=0)
        est.fit(X, y)  # "maybe" never occurs: still three one-vs-rest problems
    assert est.classes_.tolist() == ["maybe", "no", "yes"] and est.coef_.shape == (3, D)
    assert est.disclosed_ == []
    y[0] = "never"
    with pytest.raises(ValueError, match=r"label outside the declared classes \['maybe', 'no', 'yes'\]"):
        est.fit(X, y)
    for bad in (["yes"], ["a", "a"], "yes", [["a", "b"]]):
        with pytest.raises(ValueError, match="classes must be a list of at least 2 distinct labels"):
            DPLogisticRegression(classes=bad, data_norm=1.0).fit(X, y)


def test_one_vs_rest_spends_one_ledger_whose_log_is_the_record():
    X, y = _data()
    y = y.astype(object)
    y[:10] = "maybe"
    ledger = Ledger(3.0, relation="replace_one")
    est = DPLogisticRegression(
        epsilon=2.0, method="dp-nag-opt", data_norm=1.0, classes=["maybe", "no", "yes"], ledger=ledger, random_state=0
    ).fit(X, y)
    assert ledger.events == est.privacy_events_ and len(est.privacy_events_) == 3  # one event per problem
    acc = PureDPAccountant()
    for e in ledger.events:
        acc.compose(e)
    assert acc.get_epsilon() == pytest.approx(est.privacy_spent_["epsilon"], rel=1e-12)
    assert est.privacy_spent_["epsilon"] == pytest.approx(2.0, rel=1e-9)


@pytest.mark.parametrize("accountant, delta, method", [("pure", 0.0, "dp-gd"), ("rdp", 1e-6, "dp-sgd")])
def test_two_estimators_sharing_a_ledger_refuse_the_overspending_fit_before_any_noise(accountant, delta, method):
    X, y = _data()
    ledger = Ledger(1.0, delta, accountant, relation=relation_of(method))
    first = DPHuberSVC(epsilon=0.6, delta=delta, method=method, data_norm=1.0, classes=CLASSES, ledger=ledger)
    first.set_params(method_params=SHORT[method], random_state=0).fit(X, y)
    spent = ledger.spent().epsilon
    assert spent == pytest.approx(first.privacy_spent_["epsilon"]) and ledger.events == first.privacy_events_
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    second = DPLogisticRegression(epsilon=0.6, delta=delta, method=method, data_norm=1.0, classes=CLASSES)
    second.set_params(ledger=ledger, random_state=rng)
    with pytest.raises(BudgetExceededError, match="nothing was spent"):
        second.fit(X, y)
    assert rng.bit_generator.state == state  # no noise was drawn
    assert ledger.spent().epsilon == spent and not hasattr(second, "coef_")


def test_a_fit_that_raises_spends_nothing(monkeypatch):
    X, y = _data()
    y = y.astype(object)
    y[:10] = "maybe"
    ledger = Ledger(5.0, relation="replace_one")
    calls = []
    real = linear_module.fit_linear

    def failing_second_problem(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("interrupted")
        return real(*args, **kwargs)

    monkeypatch.setattr(linear_module, "fit_linear", failing_second_problem)
    est = DPLogisticRegression(epsilon=3.0, method="dp-gd", data_norm=1.0, classes=["maybe", "no", "yes"])
    est.set_params(ledger=ledger, random_state=0, method_params={"iterations": 5})
    with pytest.raises(RuntimeError, match="interrupted"):
        est.fit(X, y)
    assert len(calls) == 2 and ledger.events == [] and ledger.spent().epsilon == 0.0


def test_ledger_of_another_relation_or_accountant_is_refused_before_the_fit():
    X, y = _data()
    for ledger, match in (
        (Ledger(5.0, relation="add_remove"), "relation"),
        (Ledger(5.0, relation="add_remove"), "epsilon, delta"),
        ("budget", "ledger must be"),
    ):
        method = "dp-gd" if match == "relation" else "dp-sgd"
        est = DPLogisticRegression(method=method, delta=1e-6, data_norm=1.0, classes=CLASSES, ledger=ledger)
        with pytest.raises((ValueError, TypeError), match=match):
            est.fit(X, y)


# -- finding 6: non-private statistics stay out of what is released ----------------------------------

NON_PRIVATE_KEYS = ("fun", "trajectory", "info", "rows_projected", "grad_norm", "n_iter_", "nit", "diagnostics")


def _keys(obj) -> set:
    if isinstance(obj, dict):
        return set(obj) | {k for v in obj.values() for k in _keys(v)}
    if isinstance(obj, list):
        return {k for v in obj for k in _keys(v)}
    return set()


@pytest.mark.parametrize("method", ["objpert", "outpert", "dp-nag-opt", "dp-blgd"])
def test_diagnostics_are_labelled_and_never_saved(method):
    X, y = _data()
    est, _ = _fit(DPLogisticRegression, method, X, y, classes=CLASSES, data_norm=1.0)
    saved = model_to_dict(est)
    assert not _keys(saved) & set(NON_PRIVATE_KEYS), _keys(saved) & set(NON_PRIVATE_KEYS)
    assert not hasattr(est, "results_") and not hasattr(est, "n_iter_")
    assert isinstance(est.diagnostics_, Diagnostics) and est.diagnostics_.label == NON_PRIVATE
    assert "NON-PRIVATE" in repr(est.diagnostics_)
    problem = est.diagnostics_["problems"][0]
    assert {"fun", "trajectory", "info", "nit"} <= set(problem) and np.isfinite(problem["fun"])


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPHuberSVC])
def test_a_pickled_estimator_holds_no_diagnostics(cls):
    # joblib/pickle is scikit-learn's way to save a model: it carried diagnostics_, whose exact objective
    # value and solver gradient norm differ between replace-one neighbours (objpert: 0.4364 vs 0.4602)
    import pickle

    X, y = _data()
    Xr, yr = _neighbour("duplicated row")
    for data in ((X, y), (Xr.astype(float), yr)):
        est, _ = _fit(cls, "objpert", *data, classes=CLASSES, data_norm=1.0)
        assert est.diagnostics_["problems"]  # kept in the process that fitted
        back = pickle.loads(pickle.dumps(est))
        assert est.diagnostics_["problems"]  # pickling leaves the fitted estimator's own diagnostics alone
        assert isinstance(back.diagnostics_, Diagnostics) and dict(back.diagnostics_) == {}
        assert not _keys(back.__dict__) & set(NON_PRIVATE_KEYS)
        np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
        assert back.privacy_record() == est.privacy_record()


def test_result_release_holds_only_the_solution_and_its_record():
    X, y = _data()
    from dpopt.estimators._dispatch import fit_linear

    result = fit_linear(
        "objpert", "logistic", X / np.sqrt(D), np.where(y == "yes", 1.0, -1.0), epsilon=1.0, delta=0.0,
        regularization=1e-3, rng=np.random.default_rng(0), params={},
    )  # fmt: skip
    released = result.release()
    assert set(released) == {"x", "privacy"} and not _keys(released["privacy"]) & {"fun", "info", "trajectory"}
    assert set(result.diagnostics) == {"fun", "trajectory", "info", "nit"}
    assert "rows_projected" in result.diagnostics["info"] and isinstance(result.diagnostics, Diagnostics)
    assert "nit" not in repr(result) and "fun" not in repr(result)  # objpert's nit: the solver's iterations


# -- a statistical audit of the released coefficients at n = 4 --------------------------------------

EPSILON = 1.0
AUDIT_DATA = (np.ones((4, 1)), np.ones(4, dtype=int))
# Replace one record by one with the other label: at w = 0 the Huberized hinge's per-record
# gradient is -y x, so the mean gradient moves by exactly its sensitivity 2/n (tight worst case).
AUDIT_NEIGHBOUR = (np.ones((4, 1)), np.array([0, 1, 1, 1]))


def _audit_target(noise_epsilon: float) -> AuditTarget:
    """R fits of DPHuberSVC (dp-gd, one step) released as coef_; the claim is the fit's own ledger,
    except for the twin (``noise_epsilon`` ≠ ε: too little noise), which claims ε."""

    def run(data, repetitions, rng):
        X, y = data
        out = np.empty(repetitions)
        for r in range(repetitions):
            est = DPHuberSVC(
                epsilon=noise_epsilon, method="dp-gd", data_norm=1.0, classes=[0, 1], fit_intercept=False,
                method_params={"iterations": 1}, random_state=rng,
            ).fit(X, y)  # fmt: skip
            out[r] = est.coef_[0, 0]
        claim = Ledger(EPSILON, relation=est.privacy_spent_["relation"])
        for event in est.privacy_events_ if noise_epsilon == EPSILON else [ev.PureDP(EPSILON)]:
            claim.charge(event)
        return out, claim

    return AuditTarget("DPHuberSVC dp-gd coef_", run, AUDIT_DATA, AUDIT_NEIGHBOUR, samples=700, batch_size=700)


def test_audit_of_released_coefficients_passes_and_a_twin_with_half_the_noise_fails():
    correct = audit(_audit_target(EPSILON), seed=3, confidence=0.95)
    assert correct.epsilon == pytest.approx(EPSILON) and correct.relation == "replace_one"
    assert correct.passes, str(correct)
    twin = audit(_audit_target(2 * EPSILON), seed=3, confidence=0.95)
    assert not twin.passes, str(twin)


def test_replay_accountants_agree_with_every_notion():
    """The record of each notion replays with its accountant (the log is the record)."""
    X, y = _data()
    pld = functools.partial(PLDAccountant, RUN_DISCRETIZATION)
    for method, accountant, option in (("dp-gd", PureDPAccountant, None), ("dp-sgd", pld, None),
                                       ("dp-sgd", RDPAccountant, "rdp"), ("dp-agd", ZCDPAccountant, None)):
        est, _ = _fit(DPLogisticRegression, method, X, y, classes=CLASSES, data_norm=1.0, accountant=option)
        acc = accountant()
        for e in est.privacy_events_:
            acc.compose(e)
        spent = est.privacy_spent_
        replayed = acc.get_epsilon() if spent["notion"] == "pure" else acc.get_epsilon(spent["delta"])
        assert replayed == pytest.approx(spent["epsilon"], rel=1e-9), method


def test_model_file_does_not_publish_the_seed_of_the_noise():
    """A seeded fit's model file stored ``random_state`` (dpopt fit --seed 0 too): whoever holds D and
    D' refitted both with the file's own parameters and matched the released coef_ bit for bit, so the
    file told D from D' with certainty.  The seed stays out of the file; a refit draws fresh noise."""
    fitted = {}
    for name, (X, y) in (("D", _data()), ("D'", _neighbour("duplicated row"))):
        est, _ = _fit(DPLogisticRegression, "dp-gd", X, y, classes=CLASSES, data_norm=1.0)
        fitted[name] = (est, X, y)
    saved = json.loads(json.dumps(model_to_dict(fitted["D"][0])))
    params = saved["estimator"]["params"]
    assert params["random_state"] is None
    released = np.asarray(saved["fitted"]["coef_"])
    for _, X, y in fitted.values():  # the attack: refit each candidate with the published parameters
        refit = DPLogisticRegression(**params).fit(X, y)
        assert not np.array_equal(refit.coef_, released)


@pytest.mark.parametrize("key, value", [("repetitions", 50), ("private", False)])
def test_method_params_cannot_release_more_than_one_charged_fit(key, value):
    """``method_params={"repetitions": R}`` reached accelerated.minimize's experiment switch: R independent ε-DP
    fits were released (coef_ of shape (1, R - 1, d + 1)) and charged as one ε.  On 4 rows with one label flipped
    (dp-gd, ε = 1, one iteration, 40 seeds each), the mean over R = 2000 released fits told D from D' with
    threshold accuracy 1.00, where ε = 1 allows e/(1 + e) = 0.73.  ``private=False`` fitted without noise.  Both
    are refused before anything is spent."""
    X, y = _data()
    ledger = Ledger(5.0, relation="replace_one")
    est = DPLogisticRegression(epsilon=1.0, method="dp-gd", data_norm=1.0, classes=CLASSES, ledger=ledger,
                               random_state=0, method_params={key: value, "iterations": 5})
    with pytest.raises(ValueError, match=rf"^method_params\['{key}'\] is not a hyper-parameter of one private fit"):
        est.fit(X, y)
    assert ledger.events == []
    fitted = est.set_params(method_params={"iterations": 5}).fit(X, y)
    assert fitted.coef_.shape == (1, D) and len(ledger.events) == 5


def test_iterates_carried_out_of_the_float_range_neither_raise_nor_warn_after_the_releases():
    """A step far above 1/L (method_params) carries the iterates to the edge of the float range, where whether the
    next query point overflows depends on one record: with step 1.01508e156, 3 iterations, seed 3, D raised
    'w contains 1 NaN or infinite value(s)' after two charged releases and left the shared ledger empty (a fit that
    raises spends nothing), while D' (one record replaced) fitted and was charged 3 events; repeated fits gave that
    bit away for free.  Now every step size completes silently on both, with the same record, charged alike."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (20, 2))
    y = (X[:, 0] > 0).astype(int)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [1.0, 1.0], 1 - y[0]
    for method, precision in (("dp-gd", "float64"), ("dp-nag", "float32")):
        for step in np.geomspace(1e150, 1e160, 25):
            records = []
            for data in ((X, y), (X2, y2)):
                ledger = Ledger(1e6, relation="replace_one")
                params = {"iterations": 3, "step": float(step), "precision": precision}
                if method == "dp-nag":
                    params.update(step=float(step) * 1e-135, momentum=0.9, mu=1e-300)  # mu * step < 1
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    est = DPLogisticRegression(epsilon=100.0, method=method, data_norm=1.0, classes=[0, 1],
                                               regularization=1e-3, random_state=3, ledger=ledger,
                                               method_params=params).fit(*data)
                assert len(ledger.events) == 3
                records.append(json.dumps(est.privacy_record()))
            assert records[0] == records[1]


@pytest.mark.parametrize("seed", [0, "generator"])
def test_a_pickled_fitted_estimator_does_not_carry_the_seed_of_its_noise(seed):
    """A JSON model file stores random_state as null (a known seed voids the guarantee); a pickle carried it: with
    random_state=0 (dp-gd, 40 rows, one record replaced), refitting D and D' with the unpickled parameters matched
    the released coef_ exactly on the training set and on it only (a generator: through its seed sequence's entropy)."""
    import pickle

    X, y = _data()
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [1.0, 1.0, 1.0], "yes" if y[0] == "no" else "no"
    rs = 0 if seed == 0 else np.random.default_rng(7)
    est = DPLogisticRegression(epsilon=1.0, method="dp-gd", data_norm=2.0, classes=CLASSES, random_state=rs,
                               method_params={"iterations": 5}).fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    assert back.get_params()["random_state"] is None and est.random_state is rs
    np.testing.assert_array_equal(back.coef_, est.coef_)
    for data in ((X, y), (X2, y2)):
        assert not np.array_equal(DPLogisticRegression(**back.get_params()).fit(*data).coef_, back.coef_)
    unfitted = pickle.loads(pickle.dumps(DPLogisticRegression(random_state=3)))
    assert unfitted.random_state == 3  # joblib ships seeded clones to its workers
