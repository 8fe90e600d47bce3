"""Sizes beyond what can run at all are refused in one line naming the parameter and its usable range,
before any budget is opened (issue 16 §3: method_params={"steps": 10**9} ran silently until killed)."""

from __future__ import annotations

import numpy as np
import pytest

from dpopt._validation import MAX_ITERATIONS, check_iterations
from dpopt.estimators import DPHuberSVC, DPLogisticRegression
from dpopt.estimators import linear as linear_module
from dpopt.linesearch.algorithms import LineSearchHyper
from dpopt.linesearch.baselines.dp_sgd import DPSGDHyper
from dpopt.privacy import Ledger

RANGE = f"must be in [1, {MAX_ITERATIONS}]"


def _data(n=60, d=3):
    X = np.random.default_rng(0).normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _ledger(delta: float) -> Ledger:
    return Ledger(10.0, 1e-3, "rdp", relation="add_remove") if delta else Ledger(10.0, relation="replace_one")


@pytest.mark.parametrize("cls", [DPLogisticRegression, DPHuberSVC])
@pytest.mark.parametrize("method, key, delta", [
    ("dp-gd", "iterations", 0.0),
    ("dp-nag-opt", "iterations", 0.0),
    ("dp-sgd", "steps", 1e-6),  # add/remove: the fit would release a count before DP-SGD saw its steps
    ("auto", "steps", 1e-6),
    ("dp-blsgd", "planned_iterations", 1e-6),
])
def test_a_run_length_beyond_the_limit_is_refused_before_a_budget_is_opened(monkeypatch, cls, method, key, delta):
    def opened(*args, **kwargs):
        raise AssertionError("the fit opened its budget before refusing")

    monkeypatch.setattr(linear_module, "open_fit", opened)
    ledger = _ledger(delta)
    with pytest.raises(ValueError) as info:
        cls(epsilon=1.0, delta=delta, method=method, data_norm=2.0, classes=[0, 1], method_params={key: 10**9},
            ledger=ledger).fit(*_data())
    message = str(info.value)
    assert "\n" not in message and f"method_params[{key!r}] {RANGE}" in message and "got 1000000000" in message
    assert ledger.events == []


def test_the_families_refuse_the_same_run_lengths_at_their_own_boundary():
    with pytest.raises(ValueError, match=rf"steps {RANGE.replace('[', '.').replace(']', '.')}"):
        DPSGDHyper.from_kwargs(steps=10**9)
    with pytest.raises(ValueError, match="planned_iterations must be in"):
        LineSearchHyper(planned_iterations=10**9)
    assert check_iterations("steps", MAX_ITERATIONS) == MAX_ITERATIONS  # the limit itself is usable
    assert DPSGDHyper.from_kwargs(steps=10**6).steps == 10**6


def test_a_search_longer_than_can_run_is_refused_before_anything_is_spent(monkeypatch):
    """DPBayesSearchCV(n_iter=10**9) ran silently until killed (GP-UCB factors a t x t matrix at step t)."""
    from dpopt.bayesopt import MAX_STEPS
    from dpopt.estimators import DPBayesSearchCV, bayes_search

    class Forbidden:
        @staticmethod
        def from_space(*args, **kwargs):
            raise AssertionError("the candidates were drawn before the refusal")

    monkeypatch.setattr(bayes_search, "CandidateSet", Forbidden)
    ledger = Ledger(100.0, relation="replace_one")
    search = DPBayesSearchCV(DPLogisticRegression(epsilon=0.5, data_norm=2.0, classes=[0, 1]),
                             {"regularization": (1e-4, 1e-1, "log")}, n_iter=10**9, ledger=ledger)
    with pytest.raises(ValueError, match=rf"n_iter must be in \[1, {MAX_STEPS}\] \(each step factors"):
        search.fit(*_data())
    assert ledger.events == []


def test_more_candidates_than_fit_in_memory_are_refused():
    from dpopt.bayesopt import CandidateSet
    from dpopt.bayesopt.space import MAX_CANDIDATES

    with pytest.raises(ValueError, match=rf"n_candidates must be in \[1, {MAX_CANDIDATES}\]"):
        CandidateSet.from_space({"C": (1e-3, 1e3, "log")}, n_candidates=10**9)
    with pytest.raises(ValueError, match=r"the grid's size \(the product of its axes' lengths\) must be in"):
        CandidateSet.from_space({"a": list(range(1000)), "b": list(range(1000))})  # 1e6 points
    assert len(CandidateSet.from_space({"a": list(range(100)), "b": list(range(100))})) == 10_000


def test_an_audit_with_more_runs_than_fit_in_memory_is_refused_before_any_run():
    from dpopt.privacy.audit import MAX_SAMPLES, AuditTarget, audit

    def run(data, repetitions, rng):
        raise AssertionError("the target ran before the refusal")

    target = AuditTarget("guarded", run, 0.0, 1.0)
    with pytest.raises(ValueError, match=rf"samples must be in \[4, {MAX_SAMPLES}\] \(every run's statistic"):
        audit(target, samples=10**11, seed=0)
