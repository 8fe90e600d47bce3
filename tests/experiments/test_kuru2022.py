"""The kuru2022 §5 experiment in quick mode: files, columns, figures, claims, privacy."""

from __future__ import annotations

import csv
import json
import math
import multiprocessing

import numpy as np
import pytest

from dpopt.experiments import kuru2022
from dpopt.privacy import PureDPAccountant
from dpopt.privacy import events as ev
from dpopt.report import read_report


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("kuru2022")
    lines = []
    result = kuru2022.run(quick=True, out=out, progress=lambda *call: lines.append(call))
    return result, out, lines


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_outputs_are_written(quick_run):
    result, out, lines = quick_run
    cfg = kuru2022.QUICK
    for name in ("summary.csv", "runs.csv", "trajectories.csv", "summary.md", "report.html",
                 *(f"privacy/{m}.json" for m in kuru2022.METHODS)):
        assert (out / name).stat().st_size > 0
        assert result.paths[name] == out / name
    assert len(result.figures) == 4
    for path in result.figures.values():
        assert path.suffix == ".png" and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    grid = len(kuru2022.METHODS) * len(cfg.batch_sizes) * len(cfg.iterations) * len(cfg.cs)
    assert [call[:2] for call in lines] == [(k, grid) for k in range(grid + 1)]  # F*, then points
    assert lines[0][2].startswith("F* =")
    assert "Claims" in (out / "summary.md").read_text()


def test_summary_csv_is_long_form(quick_run):
    result, out, _ = quick_run
    rows = read(out / "summary.csv")
    cfg = kuru2022.QUICK
    assert list(rows[0]) == list(kuru2022.SUMMARY_COLUMNS)
    assert {r["method"] for r in rows} == set(kuru2022.METHODS)
    keys = {(r["method"], int(r["m"]), int(r["T"]), float(r["c"])) for r in rows}
    assert len(keys) == len(rows) == len(kuru2022.METHODS) * 2 * 2 * 2
    assert {int(r["m"]) for r in rows} == set(cfg.batch_sizes)
    for r in rows:
        mean, std = float(r["final_error_mean"]), float(r["final_error_std"])
        assert math.isfinite(mean) and mean > 0 and std >= 0  # F(x_T) > F* for a noisy run
    for row, r in zip(result.summary_rows, rows, strict=True):  # the CSV is the returned table
        assert r["method"] == row["method"] and int(r["m"]) == row["m"] and int(r["T"]) == row["T"]
        assert float(r["final_error_mean"]) == row["final_error_mean"]


def test_every_run_spent_exactly_epsilon(quick_run):
    result, _, _ = quick_run
    for row in result.rows:
        assert row["epsilon_spent"] == pytest.approx(kuru2022.QUICK.epsilon, rel=1e-12)
        assert row["events"] == row["T_run"]
        assert row["guarantee"] == "exact"  # given the hyper-parameters (see summary.md)
        if not row["method"].endswith("-opt"):
            assert row["T_run"] == row["T"]
        else:
            assert 1 <= row["T_run"] <= row["T"]


def test_trajectories_start_at_x0_and_end_at_the_final_error(quick_run):
    result, out, _ = quick_run
    traj = read(out / "trajectories.csv")
    assert {
        "method",
        "m",
        "T",
        "c",
        "t",
        "error_mean",
        "error_std",
        "error_q10",
        "error_q90",
    } <= set(traj[0])
    by_run = {}
    for r in traj:
        by_run.setdefault((r["method"], r["m"], r["T"], r["c"]), []).append(r)
    starts = {float(pts[0]["error_mean"]) for pts in by_run.values()}
    assert max(starts) - min(starts) < 1e-6 * max(starts)  # every run starts at F(x₀) − F*
    for row in result.rows:
        pts = by_run[(row["method"], str(row["m"]), str(row["T"]), str(row["c"]))]
        assert int(pts[0]["t"]) == 0 and int(pts[-1]["t"]) == row["T_run"]
        # the last point (single precision) agrees with the double-precision final error
        assert float(pts[-1]["error_mean"]) == pytest.approx(
            row["final_error_mean"], rel=1e-4, abs=1e-6
        )
        q10 = np.array([float(p["error_q10"]) for p in pts])
        q90 = np.array([float(p["error_q90"]) for p in pts])
        assert np.all(q10 <= q90)


def test_claims_are_computed_from_the_rows(quick_run):
    result, _, _ = quick_run
    claims = kuru2022.check_claims(result.rows, kuru2022.QUICK)
    assert claims == result.claims
    err = {(r["method"], r["m"], r["T"], r["c"]): r["final_error_mean"] for r in result.rows}
    for m, res in claims["claim2"].items():
        best_gd = min(err[("dp-gd", m, T, 1.0)] for T in kuru2022.QUICK.iterations)
        assert res["best_dp_gd"] == best_gd
        assert res["holds"] == (min(res["dp-nag-opt"], res["dp-masg-opt"]) < best_gd)
    assert "DP-NAG-opt" in result.text


def test_results_do_not_depend_on_the_number_of_workers():
    cfg = kuru2022.Config(
        n=600,
        batch_sizes=(30, 600),
        iterations=(20,),
        cs=(1.0,),
        repetitions=2,
        trajectory_points=6,
    )
    one = kuru2022.run(config=cfg, jobs=1)
    two = kuru2022.run(config=cfg, jobs=2)
    assert [r["final_error_mean"] for r in one.rows] == [r["final_error_mean"] for r in two.rows]


def test_report_is_self_contained_and_states_what_it_shows(quick_run):
    result, out, _ = quick_run
    outline = read_report(out / "report.html")
    assert outline.headings == ["What was run", "Do the paper's claims hold?", "Figures", "Summary table", "Data",
                                "Privacy guarantee", "Files"]  # fmt: skip
    assert [alt for alt, _ in outline.figures] == list(result.figures)
    assert [png for _, png in outline.figures] == [p.read_bytes() for p in result.figures.values()]
    text = outline.text
    assert "dpopt reproduce kuru2022 --quick --seed 0" in text and "--quick configuration" in text
    assert f"{len(result.rows)} grid points, {kuru2022.QUICK.repetitions} repetitions" in text
    assert result.problem["data"] in text and f"{result.f_star:.12g}" in text  # data summary and F*
    assert "PureDPAccountant" in text and "replace_one" in text and "b/√2" in text
    # The verdict tables are the claims, cell for cell.
    claim2 = next(t for t in outline.tables if t[0][:2] == ["m", "holds"])
    for row, (m, res) in zip(claim2[1:], result.claims["claim2"].items(), strict=True):
        assert row[:2] == [str(m), "yes" if res["holds"] else "no"]
    # One wide table per (m, c), its cells the summary rows.
    wide = [t for t in outline.tables if t[0][0] == "method" and t[0][1].startswith("T = ")]
    assert len(wide) == len(kuru2022.QUICK.batch_sizes) * len(kuru2022.QUICK.cs)
    row = result.rows[0]
    assert f"{row['final_error_mean']:.3g} ± {row['final_error_std']:.2g}" in " ".join(wide[0][1])


def test_privacy_records_replay_to_the_reported_epsilon(quick_run):
    result, out, _ = quick_run
    assert sorted(p.stem for p in (out / "privacy").iterdir()) == sorted(kuru2022.METHODS)
    for method in kuru2022.METHODS:
        record = json.loads((out / "privacy" / f"{method}.json").read_text())
        assert record["method"] == method and record["notion"] == "pure" and record["relation"] == "replace_one"
        events = [ev.from_dict(e) for e in record["events"]]
        assert len(events) >= 1 and all(isinstance(e, ev.Subsampled) for e in events)  # m < n: amplified
        replay = PureDPAccountant().compose(ev.Composed(events)).get_epsilon()
        assert replay == pytest.approx(record["epsilon"], rel=1e-12)
        assert record["epsilon"] == pytest.approx(kuru2022.QUICK.epsilon, rel=1e-12)


def test_bad_output_folder_fails_before_the_run(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("")
    with pytest.raises(ValueError, match="exists and is not a folder"):
        kuru2022.run(quick=True, out=taken, progress=lambda *a: pytest.fail("the run started"))


def test_interrupted_parallel_run_stops_its_workers_and_writes_nothing(tmp_path):
    cfg = kuru2022.Config(n=600, batch_sizes=(30, 600), iterations=(20, 40), cs=(1.0,), repetitions=2,
                          trajectory_points=6)  # fmt: skip

    def interrupt(done, total, label):
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        kuru2022.run(config=cfg, jobs=2, out=tmp_path / "out", progress=interrupt)
    assert multiprocessing.active_children() == []  # the workers were terminated, not left running
    assert list(tmp_path.iterdir()) == []
