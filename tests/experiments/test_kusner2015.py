"""The kusner2015 reproduction on a tiny configuration: both parts, the CSV contract, the report."""

import csv
from dataclasses import replace

import numpy as np
import pytest

from dpopt.experiments import kusner2015 as k
from dpopt.experiments import registry

TINY = replace(k.QUICK, n_settings=6, n_valsets=8, validation_sizes=(1000, 3000), pool=4000, svm_train=200,
               seeds=2, epsilons=(1.0,), n_candidates=6, n_iter=4, train_rows=2000, test_rows=1000)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("kusner") / "out"
    return k.run(config=TINY, out=out), out


def test_summary_follows_the_api_columns(result):
    res, out = result
    with open(out / "summary.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == k.SUMMARY_COLUMNS
    likelihood = [r for r in rows if r["part"] == "likelihood"]
    assert {r["method"] for r in likelihood} == {"gp"}
    assert len(likelihood) == len(TINY.validation_sizes) * len(TINY.k1_grid)
    tuning = [r for r in rows if r["part"] == "tuning"]
    assert [r["method"] for r in tuning] == list(k.METHODS)
    for r in tuning:
        assert 0.5 < float(r["accuracy_mean"]) <= 1.0 and float(r["score_error_mean"]) >= 0
    assert (out / "report.html").is_file() and (out / "fig1_likelihood.png").is_file()
    assert {"privacy/alg1.json", "privacy/alg3.json", "privacy/grid-expmech.json"} <= set(res.paths)


def test_likelihood_is_finite_and_k1_ml_in_unit_interval(result):
    res, _ = result
    assert all(np.isfinite(r["loglik"]) for r in res.likelihood)
    for h in res.hyper:
        assert 0.0 < h["k1_ml"] < 1.0 and h["signal_var"] > 0 and h["noise_var"] > 0
    assert set(res.best_k1()) == set(TINY.validation_sizes)


def test_private_methods_record_their_guarantee(result):
    res, out = result
    assert res.privacy["alg1"]["guarantee"] == "conditional" and res.privacy["alg3"]["guarantee"] == "exact"
    assert res.privacy["grid-expmech"]["epsilon"] == pytest.approx(1.0)
    text = (out / "report.html").read_text()
    assert "Adult" in text and "k1" in text and "dpopt.experiments.kusner2015.run(config=...)" in text
    # the released score of the non-private references is exact, so their score error is their gap to max over Λ
    np_bo = [r for r in res.tuning_runs if r["method"] == "non-private-bo"]
    assert all(r["score_error"] >= 0 for r in np_bo)


def test_tuned_space_includes_the_budget_split():
    # kuru2022 Remark 4.1's E0 sets dp-nag-opt's split of epsilon over T' <= T iterations
    assert set(k.SPACE) == {"initial_error", "regularization", "iterations"}


def test_registered_for_reproduce():
    assert registry.get("kusner2015").load() is k.run
