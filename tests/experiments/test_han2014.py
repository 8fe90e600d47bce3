"""The han2014 reproduction in quick mode: files, columns, and the invariants its numbers obey."""

import csv
from dataclasses import replace
from html import escape

import numpy as np
import pytest

from dpopt.experiments import han2014
from dpopt.piecewise import RELATION, PiecewiseAffineProblem, Polytope, solve
from dpopt.report import read_report


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("han2014")
    calls = []
    result = han2014.run(quick=True, out=out, progress=lambda *call: calls.append(call))
    result.progress_calls = calls
    return result, out


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_writes_every_output(quick):
    result, out = quick
    for name in ("summary.csv", "runs.csv", "iterations.csv", "subgradient_outputs.csv",
                 "report.html", "fig1_iterations.png", "fig2_c.png", "fig3_m.png"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
        assert result.paths[name] == out / name
    for name in ("fig1_iterations.png", "fig2_c.png", "fig3_m.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (out / "report.html").read_text()
    assert "Fig. 2" in html and "subgradient" in html and escape(RELATION) in html


def test_summary_csv_long_form(quick):
    result, out = quick
    rows = read(out / "summary.csv")
    required = {"method", "sweep", "value", "objective_mean", "objective_std", "optimum"}
    assert required <= set(rows[0])
    config = han2014.QUICK
    assert len(rows) == 4 * (len(config.c_grid) + len(config.m_grid))
    assert {r["method"] for r in rows} == {
        "laplace-data",
        "laplace-solution",
        "exponential",
        "subgradient",
    }
    assert sorted(float(r["value"]) for r in rows if r["sweep"] == "c") == sorted(
        [c for c in config.c_grid for _ in range(4)]
    )
    assert sorted(int(r["value"]) for r in rows if r["sweep"] == "m") == sorted(
        [m for m in config.m_grid for _ in range(4)]
    )
    for r in rows:
        # Every mechanism releases a point of P, so no run beats the optimum.
        assert float(r["objective_mean"]) >= float(r["optimum"]) - 1e-7
        assert float(r["objective_std"]) >= 0 and int(r["runs"]) == config.runs
        if r["method"] == "exponential":
            assert 0 < float(r["mcmc_acceptance"]) < 1 and float(r["mcmc_rhat"]) > 0
    per_run = read(out / "runs.csv")
    assert len(per_run) == len(rows) * config.runs
    first = [float(r["objective"]) for r in per_run if r["method"] == rows[0]["method"]
             and r["sweep"] == rows[0]["sweep"] and r["value"] == rows[0]["value"]]  # fmt: skip
    assert np.mean(first) == pytest.approx(float(rows[0]["objective_mean"]))


def test_optimum_column_is_the_exact_lp_value_of_nested_instances(quick):
    result, _ = quick
    config = result.config
    full = PiecewiseAffineProblem.gaussian(
        max(config.m_grid), config.d, c=1.0, b_max=config.b_max, rng=config.seed
    )
    optimum = {(r["sweep"], r["value"]): r["optimum"] for r in result.summary}
    for c in config.c_grid:
        p = PiecewiseAffineProblem(full.A[: config.m], full.b[: config.m], b_max=1.0,
                                   polytope=Polytope.cube(c, config.d))  # fmt: skip
        assert optimum[("c", c)] == pytest.approx(solve(p).fun)
    # A larger box relaxes the problem; more pieces (nested) raise the max.
    by_c = [optimum[("c", c)] for c in sorted(config.c_grid)]
    by_m = [optimum[("m", m)] for m in sorted(config.m_grid)]
    assert np.all(np.diff(by_c) <= 1e-9) and np.all(np.diff(by_m) >= -1e-9)


def test_iterations_and_verdict(quick):
    result, out = quick
    rows = read(out / "iterations.csv")
    config = han2014.QUICK
    assert len(rows) == 2 * len(config.iteration_grid)
    assert {r["method"] for r in rows} == {"subgradient", "non-private"}
    assert len(result.verdict) == len(config.c_grid) + len(config.m_grid)
    for v in result.verdict:
        assert v["subgradient_lowest"] == (v["lowest"] == "subgradient")
        assert v["subgradient_lowest"] == (v["margin"] > 0)
    assert "optimum" in result.table
    # Last vs averaged iterate: paired rows, the configured output equals the summary's numbers.
    outputs = read(out / "subgradient_outputs.csv")
    assert len(outputs) == 2 * len(result.verdict)
    main = {(r["sweep"], r["value"]): r["objective_mean"]
            for r in read(out / "summary.csv") if r["method"] == "subgradient"}  # fmt: skip
    for r in outputs:
        if r["output"] == result.config.subgradient_output:
            assert float(r["objective_mean"]) == pytest.approx(
                float(main[(r["sweep"], r["value"])])
            )


def test_reproducible_and_validated(tmp_path):
    tiny = replace(
        han2014.QUICK, runs=5, mcmc_steps=20, c_grid=(1.0,), m_grid=(5,), iteration_grid=(3,)
    )
    first = han2014.run(config=tiny)
    second = han2014.run(config=tiny)
    assert first.summary == [
        {**row, "seconds": first.summary[i]["seconds"]} for i, row in enumerate(second.summary)
    ]
    assert first.paths == {}
    with pytest.raises(ValueError, match="runs"):
        replace(han2014.QUICK, runs=1)
    with pytest.raises(ValueError, match="c_grid"):
        replace(han2014.QUICK, c_grid=())


def test_progress_counts_every_mechanism_and_fig1_point(quick):
    result, _ = quick
    config = han2014.QUICK
    points = {(c, config.m) for c in config.c_grid} | {(config.c, m) for m in config.m_grid}
    total = 4 * len(points) + len(config.iteration_grid)
    calls = result.progress_calls
    assert [call[:2] for call in calls] == [(k, total) for k in range(1, total + 1)]
    assert all(isinstance(label, str) and label for _, _, label in calls)


def test_report_states_setup_verdict_and_privacy(quick):
    result, out = quick
    outline = read_report(out / "report.html")
    assert outline.headings[:6] == [
        "What was run", "Does the private subgradient method have the lowest expected objective?", "Figures",
        "Summary table", "Data", "Privacy guarantee",
    ]  # fmt: skip
    assert [alt for alt, _ in outline.figures] == list(result.figures)
    assert [png for _, png in outline.figures] == [p.read_bytes() for p in result.figures.values()]
    text = outline.text
    assert "dpopt reproduce han2014 --quick --seed 0" in text and f"{han2014.QUICK.runs} independent runs" in text
    wins = sum(v["subgradient_lowest"] for v in result.verdict)
    assert f"lowest mean at {wins} of {len(result.verdict)} grid points" in text
    assert f"lowest mean objective at {wins} of {len(result.verdict)}" in result.text
    privacy = next(t for t in outline.tables if t[0][:3] == ["method", "ε", "δ"])
    assert [row[0] for row in privacy[1:]] == list(han2014.METHODS)
    assert all(row[1] == f"{han2014.QUICK.epsilon:g}" and row[3] == "pure ε-DP" for row in privacy[1:])
    assert {row[5] for row in privacy[1:]} == {"exact", "approximate"}  # MCMC is only approximately ε-DP
    assert "exact ε-DP holds only in the MCMC limit" in text.replace("epsilon-DP", "ε-DP")
