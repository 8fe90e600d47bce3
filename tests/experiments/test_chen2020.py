"""The chen2020 convex experiment: a reduced quick run end to end, and the aggregation helpers."""

from __future__ import annotations

import csv
import math
from dataclasses import replace

import numpy as np
import pytest

from dpopt.experiments import chen2020 as C
from dpopt.report import read_report

API_COLUMNS = ("method", "dataset", "model", "epsilon", "accuracy_mean", "accuracy_std", "objective_mean")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """QUICK shrunk further for the test suite: 1500 Adult rows, one fold, two ε, a thin Fig. 1."""
    out = tmp_path_factory.mktemp("chen2020")
    config = replace(C.QUICK, max_rows=1500, eval_folds=1, study_max_rows=1500, study_epsilons=(0.2,),
                     study_values=4)
    seen = []
    result = C.run(config=config, out=out, seed=3, jobs=1, progress=lambda *a: seen.append(a))
    return result, out, seen


def test_quick_configuration_is_a_subset_of_the_paper_grid():
    assert set(C.QUICK.epsilons) <= set(C.EPSILONS) and C.QUICK.max_rows is not None
    assert C.FULL.epsilons == (0.05, 0.1, 0.2, 0.4, 0.8, 1.6) and C.FULL.delta == 1e-8 and C.FULL.mu == 0.001
    assert C.FULL.folds == 10 and "adult" in C.FULL.datasets
    assert set(C.FULL.methods) == set(C.METHODS)


def test_quick_run_writes_summary_csv_with_the_api_columns(quick_run):
    result, out, seen = quick_run
    with (out / "summary.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames
        rows = list(reader)
    assert tuple(header[: len(API_COLUMNS)]) == API_COLUMNS
    assert {"objective_std", "runs"} <= set(header)
    cells = {(r["method"], r["model"], float(r["epsilon"])) for r in rows}
    for model in C.QUICK.models:
        for eps in C.QUICK.epsilons:
            for method in C.METHODS:
                if method == "diffprivlib" and model != "logistic":
                    continue
                assert (method, model, eps) in cells
    assert all(r["dataset"] == "adult" for r in rows)
    for r in rows:
        assert 0.0 <= float(r["accuracy_mean"]) <= 1.0
        assert int(r["runs"]) == 1
    assert seen and seen[-1][0] == seen[-1][1]  # progress reached done == total


def test_quick_run_rows_have_no_errors_and_respect_budgets(quick_run):
    result, out, _ = quick_run
    assert not [r for r in result.rows + result.study if r["error"]]
    for r in result.rows:
        if r["method"] == "non-private":
            assert r["guarantee"] == "none"
            continue
        assert r["epsilon_spent"] <= r["epsilon"] * (1 + 1e-9)
        assert r["delta_spent"] <= C.QUICK.delta
    with (out / "runs.csv").open(newline="") as fh:
        assert len(list(csv.DictReader(fh))) == len(result.rows)


def test_quick_run_results_make_sense(quick_run):
    result, _, _ = quick_run
    by = {(r["method"], r["model"], r["epsilon"]): r for r in result.summary}
    for model in C.QUICK.models:
        for eps in C.QUICK.epsilons:
            non_private = by[("non-private", model, eps)]
            majority = by[("majority", model, eps)]
            assert non_private["accuracy_mean"] > majority["accuracy_mean"]
            # the private optimizers never reach a lower training objective than the exact minimizer
            for method in ("dp-blsgd", "dp-sgd", "dp-agd", "outpert"):
                assert by[(method, model, eps)]["objective_mean"] >= non_private["objective_mean"] - 1e-9
            assert math.isnan(majority["objective_mean"])


def test_quick_run_writes_figures_and_markdown(quick_run):
    result, out, _ = quick_run
    for name in ("fig1_hyperparameters.png", "fig3_logistic.png", "fig4_huber_svm.png"):
        path = out / name
        assert path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert result.figures[name] == path
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert "Test accuracy" in text and "DP-BLSGD" in text and "beat the baselines" in text
    assert result.paths["summary.csv"] == out / "summary.csv"
    assert {r["panel"] for r in result.study} >= {"alpha", "beta", "noise", "rate", "zeta"}
    assert result.to_dict()["summary"] == result.summary


def test_summarize_uses_sample_std_and_skips_errors():
    rows = [
        {"method": "m", "dataset": "d", "model": "x", "epsilon": 0.1, "accuracy": a, "objective": o,
         "error": e}
        for a, o, e in [(0.7, 1.0, ""), (0.8, 2.0, ""), (0.9, 3.0, ""), (math.nan, math.nan, "boom")]
    ]
    (row,) = C.summarize(rows)
    assert row["accuracy_mean"] == pytest.approx(0.8) and row["accuracy_std"] == pytest.approx(0.1)
    assert row["objective_mean"] == pytest.approx(2.0) and row["objective_std"] == pytest.approx(1.0)
    assert row["runs"] == 3


def test_compare_verdicts():
    def cell(method, mean, std, runs=10):
        return {"method": method, "dataset": "d", "model": "x", "epsilon": 0.2, "accuracy_mean": mean,
                "accuracy_std": std, "runs": runs}

    summary = [cell("dp-blsgd", 0.80, 0.01), cell("dp-sgd", 0.70, 0.01), cell("dp-agd", 0.801, 0.01),
               cell("outpert", 0.90, 0.01), cell("objpert", 0.50, 0.0, runs=1)]
    verdicts = {c["baseline"]: c["verdict"] for c in C.compare(summary)}
    assert verdicts == {"dp-sgd": "better", "dp-agd": "tie", "outpert": "worse", "objpert": "n/a"}
    counts = {row["baseline"]: row for row in C.comparison_counts(C.compare(summary))}
    assert counts["DP-SGD"]["higher in most cells"] and not counts["OutPert"]["higher in most cells"]
    assert counts["ObjPert"]["n/a"] == 1 and counts["ObjPert"]["better"] == 0  # one fit: no spread, no verdict


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match="method"):
        C.Config(methods=("dp-adam",))
    with pytest.raises(ValueError, match="model"):
        C.Config(models=("svm",))
    with pytest.raises(ValueError, match="eval_folds"):
        C.Config(folds=5, eval_folds=6)


def test_prepare_data_appends_a_bias_and_keeps_the_unit_ball():
    X, y, _ = C.prepare_data("adult", bias=True, max_rows=300, seed=0)
    assert X.shape == (300, 109) and y.shape == (300,)
    assert np.allclose(X[:, -1], 1 / math.sqrt(2))
    assert np.linalg.norm(X, axis=1).max() <= 1.0 + 1e-12


def test_report_states_setup_verdict_and_privacy(quick_run):
    result, out, _ = quick_run
    outline = read_report(out / "report.html")
    assert outline.headings[:6] == ["What was run", "Do DP-BLSGD and DP-BLGD beat the baselines?", "Figures",
                                    "Summary table", "Data", "Privacy guarantee"]  # fmt: skip
    assert "Hyper-parameter study (Fig. 1, logistic regression on adult)" in outline.headings
    assert outline.headings[-1] == "Files"
    assert [png for _, png in outline.figures] == [p.read_bytes() for p in result.figures.values()]
    text = outline.text
    assert "a custom configuration" in text and "Seed 3 fixes every split" in text
    assert result.datasets["adult"] in text  # the data summary
    for accountant in ("RDPAccountant", "ZCDPAccountant", "PureDPAccountant"):
        assert accountant in text  # DP-BLSGD/DP-SGD, DP-AGD, ObjPert/diffprivlib/majority
    assert "add_remove" in text and "replace_one" in text and "non-private reference" in text
    # The verdict table is comparison_counts, and the claim is spelled out for the gradient baselines.
    counts = next(t for t in outline.tables if t[0][:3] == ["method", "baseline", "cells"])
    assert len(counts) - 1 == len(C.comparison_counts(result.comparison))
    assert "DP-BLSGD vs DP-SGD: higher mean accuracy in" in text
    # Accuracy per ε and method with spread, one table per (data set, model).
    wide = [t for t in outline.tables if t[0][:2] == ["ε", "DP-BLSGD"]]
    assert len(wide) == 2 * len(C.QUICK.models)  # accuracy and objective
    assert all("±" in cell for row in wide[0][1:] for cell in row[1:3])
    assert (out / "report.html").stat().st_mtime >= (out / "summary.csv").stat().st_mtime


def test_bad_output_folder_fails_before_the_run(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="is not a folder"):
        C.run(config=C.QUICK, out=tmp_path / "f" / "out", progress=lambda *a: pytest.fail("the run started"))
