"""An add/remove fit releases its record count before its run: nothing may refuse after that count.

``DPLogisticRegression(delta > 0)`` with ``"auto"``, DP-SGD or a line-search method draws N̂ = n + Lap
first and then runs the method.  A ``method_params`` entry the method refused (an unknown name, a bad
value) raised after the draw: the fit charged nothing (all or nothing), yet ``count_`` held N̂, so
every refused fit on a shared ledger was a free count (at epsilon = 1e6, 200.00002 on D and 199.00002 on
D' less one row, with 0 events charged on either).  Under ``"auto"`` an entry that only one of its
methods takes raised or not by the method N̂ chose.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpopt.estimators import DPLogisticRegression
from dpopt.estimators import linear as linear_module
from dpopt.estimators._budget import FitBudget
from dpopt.privacy import Ledger


def _data(n=60):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, (X[:, 0] > 0).astype(int)


def _refusing_count(*args, **kwargs):
    raise AssertionError("the record count was released before the refusal")


@pytest.mark.parametrize(("method", "params", "error"), [
    ("dp-blsgd", {"foo": 1}, TypeError),
    ("dp-blsgd-ac", {"rate": 2.0}, ValueError),
    ("dp-blgd", {"rate": 0.5}, TypeError),
    ("dp-sgd", {"lr": -1.0}, ValueError),
    ("dp-sgd", {"epsilon": 1.0}, TypeError),  # the estimator's own keyword, a clash inside the family before
    ("auto", {"xi": -1.0}, ValueError),  # DP-BLSGD's only, a bad value: refused whichever method N̂ picks
    ("auto", {"foo": 1}, TypeError),
    # checked by the runs only once started: under auto they raised or not by the method N-hat chose (the
    # majority takes no entry), so whether the fit raised was a bit of N-hat that nothing charged
    ("auto", {"w0": np.zeros(7)}, ValueError),
    ("auto", {"accountant": "foo"}, ValueError),
    ("dp-sgd", {"w0": [0.0, np.nan, 0.0, 0.0]}, ValueError),
    ("dp-blsgd", {"secure_noise": "no"}, TypeError),
])
def test_method_params_refused_before_the_count(monkeypatch, method, params, error):
    monkeypatch.setattr(FitBudget, "release_count", _refusing_count)
    ledger = Ledger(1e6, 1e-5, "rdp", relation="add_remove")
    est = DPLogisticRegression(epsilon=1e6, delta=1e-6, method=method, classes=[0, 1], data_norm=1.0,
                               method_params=params, ledger=ledger, random_state=0)
    with pytest.raises(error) as info:
        est.fit(*_data())
    assert "\n" not in str(info.value) and ledger.events == [] and not hasattr(est, "count_")


@pytest.mark.parametrize("method", ["auto", "dp-blsgd", "dp-blgd"])
def test_a_run_budget_the_filter_refuses_is_refused_before_the_count(monkeypatch, method):
    """At epsilon 0.0058, delta 1e-6 the count fits but the 98 % left for the run is below what Renyi-DP states:
    DP-BLSGD's filter refused it after the count. Under auto on 10,000 rows 4 of 12 seeded fits raised (N-hat in
    DP-BLSGD's band) and 8 released (majority or DP-SGD), the raising ones charging nothing."""
    monkeypatch.setattr(FitBudget, "release_count", _refusing_count)
    ledger = Ledger(1.0, 1e-6, "rdp", relation="add_remove")
    est = DPLogisticRegression(epsilon=0.0058, delta=1e-6, method=method, classes=[0, 1], data_norm=1.0,
                               ledger=ledger, random_state=0)
    with pytest.raises(ValueError, match=r"^epsilon=0.0058 leaves 0.005684 to the run after the record count"):
        est.fit(*_data())
    assert ledger.events == []


def test_a_fit_that_raises_after_the_count_leaves_no_count(monkeypatch):
    """Whatever raises after the count (here the run's budget, empty at DP-BLSGD's filter order once the
    count has its share), the fit spends nothing and so shows no N̂."""
    monkeypatch.setattr(linear_module, "check_filter_budget", lambda *args: None)  # (now refused up front)
    ledger = Ledger(0.0058, 1e-6, "rdp", relation="add_remove")
    est = DPLogisticRegression(epsilon=0.0058, delta=1e-6, method="dp-blsgd", classes=[0, 1], data_norm=1.0,
                               ledger=ledger, random_state=1)
    with pytest.raises(ValueError, match="is empty at order"):
        est.fit(*_data())
    assert ledger.events == [] and not hasattr(est, "count_")


def test_auto_hands_each_method_the_entries_it_takes():
    """``steps`` (DP-SGD's) and ``planned_iterations`` (DP-BLSGD's) together: whichever auto chooses runs
    with its own entry, the other ignored, on D and on D' alike."""
    params = {"steps": 3, "planned_iterations": 3, "n_public": 60}  # a declared N: auto's choice is fixed
    methods = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epsilon in (0.8, 50.0):  # N·ε/d: 11.8 (DP-BLSGD's band), then DP-SGD's
            for n in (60, 59):
                est = DPLogisticRegression(epsilon=epsilon, delta=1e-6, classes=[0, 1], data_norm=1.0,
                                           method_params=params, random_state=0).fit(*_data(n))
                methods.add(est.method_)
                info = est.diagnostics_["problems"][0]["info"]
                if est.method_ == "dp-sgd":
                    assert info["steps"] == 3
                elif est.method_ == "dp-blsgd":
                    assert info["planned_iterations"] == 3
    assert methods == {"dp-sgd", "dp-blsgd"}


@pytest.mark.parametrize("notion", ["zcdp", "approx"])
@pytest.mark.parametrize("method", ["auto", "dp-sgd", "dp-blsgd"])
def test_a_ledger_that_cannot_compose_the_run_is_refused_before_the_count(monkeypatch, notion, method):
    """DP-SGD's subsampled steps and DP-BLSGD's Renyi filter need an RDP or PLD ledger: on a zCDP or approx one
    they were refused at their first charge, after the count; under auto the majority (chosen at small N-hat)
    fitted and DP-SGD (larger N-hat) raised, so whether the fit raised followed N-hat."""
    monkeypatch.setattr(FitBudget, "release_count", _refusing_count)
    ledger = Ledger(100.0, 1e-5, notion, relation="add_remove")
    est = DPLogisticRegression(epsilon=5.0, delta=1e-6, method=method, classes=[0, 1], data_norm=1.0,
                               ledger=ledger, random_state=0)
    with pytest.raises(ValueError, match=rf"^method '{method}' spends Renyi-DP events .* accountant '{notion}'"):
        est.fit(*_data())
    assert ledger.events == []


def test_dp_sgd_at_rate_one_still_runs_on_a_zcdp_ledger():
    ledger = Ledger(100.0, 1e-5, "zcdp", relation="add_remove")
    est = DPLogisticRegression(epsilon=5.0, delta=1e-6, method="dp-sgd", classes=[0, 1], data_norm=1.0,
                               method_params={"rate": 1.0, "steps": 5}, ledger=ledger, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(*_data())
    assert ledger.spent().epsilon > 0
