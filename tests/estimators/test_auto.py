"""method="auto": the measured table's choice, its regularization rule, and the small-budget warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpopt.datasets import load_sklearn
from dpopt.estimators import DPLogisticRegression, UtilityWarning
from dpopt.estimators._auto import (
    APPROX_LEARNABLE_R,
    PURE_LEARNABLE_S,
    choose,
    objpert_regularization,
)


def test_pure_budget_below_the_table_threshold_returns_the_private_majority_with_numbers():
    choice = choose(n=398, d=31, epsilon=0.5, delta=0.0)
    assert choice.method == "majority"
    assert "398*0.5/31^2 = 0.207" in choice.warning and f"< {PURE_LEARNABLE_S:g}" in choice.warning
    assert choose(n=398, d=31, epsilon=1.0, delta=0.0).method == "objpert"  # s = 0.414
    assert choose(n=1000, d=108, epsilon=2.0, delta=0.0).method == "majority"  # s = 0.171: r = 18.5 is not enough


def test_pure_budget_above_the_threshold_is_objective_perturbation_with_the_rate_rule():
    choice = choose(n=32561, d=108, epsilon=1.0, delta=0.0)
    r = 32561 / 108
    assert choice.method == "objpert" and choice.warning is None
    assert choice.regularization == pytest.approx(0.08 / r)
    assert objpert_regularization(1.0) == 3e-3 and objpert_regularization(1e9) == 1e-5


def test_approximate_budget_is_dp_blsgd_at_every_size_and_warns_only():
    small = choose(n=100, d=50, epsilon=0.1, delta=1e-6)
    large = choose(n=10**6, d=50, epsilon=1.0, delta=1e-6)
    assert small.method == large.method == "dp-blsgd"
    assert large.warning is None and f"< {APPROX_LEARNABLE_R:g}" in small.warning


@pytest.fixture(scope="module")
def breast_cancer():
    data = load_sklearn("breast_cancer")
    order = np.random.default_rng(0).permutation(len(data.y))
    tr, te = order[:398], order[398:]
    return (data.X[tr], data.y[tr]), (data.X[te], data.y[te])


def _accuracy(train, test, epsilon, seed):
    est = DPLogisticRegression(epsilon=epsilon, data_norm=1.0, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        est.fit(*train)
    return float(np.mean(est.predict(test[0]) == test[1])), est


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0])
def test_auto_is_never_below_the_majority_class_on_small_data(breast_cancer, epsilon):
    # Before the table, auto was dp-nag-opt here: mean accuracy 0.43 against the majority's 0.61.
    train, test = breast_cancer
    majority = max(np.mean(test[1] == 1), np.mean(test[1] == -1))
    accs = [_accuracy(train, test, epsilon, seed)[0] for seed in range(5)]
    assert np.mean(accs) >= majority - 1e-9


def test_small_budget_warns_and_large_budget_learns(breast_cancer):
    train, test = breast_cancer
    with pytest.warns(UtilityWarning, match=r"n\*epsilon/d\^2 = 398\*0.5/31\^2"):
        DPLogisticRegression(epsilon=0.5, data_norm=1.0, random_state=0).fit(*train)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UtilityWarning)
        est = DPLogisticRegression(epsilon=5.0, data_norm=1.0, random_state=0).fit(*train)
    assert est.method_ == "objpert" and est.score(*test) > 0.75


def test_dpopt_fit_prints_the_utility_warning_with_the_numbers(tmp_path, capsys):
    from dpopt.cli import main

    rng = np.random.default_rng(0)
    lines = ["a,b,label"] + [f"{x:.3f},{z:.3f},{'yes' if x > z else 'no'}" for x, z in rng.random((60, 2))]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    code = main(["fit", "--data", str(tmp_path / "d.csv"), "--target", "label", "--epsilon", "0.01",
                 "--bounds", "a=0:1", "b=0:1", "--classes", "no,yes",
                 "--out", str(tmp_path / "m.json"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0
    assert "dpopt fit: utility warning: the budget is too small" in err and "60*0.01/3^2 = 0.0667" in err
