"""End to end: the installed ``dpopt reproduce`` command writes summary.csv and a self-contained report.

han2014 and kuru2022 run in their ``--quick`` form (each well under 30 s); chen2020's quick run takes
about a minute and a half, so its report is checked in-process on a smaller configuration in
tests/experiments/test_chen2020.py.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dpopt.cli import main
from dpopt.report import read_report

#: API.md "Command line": the grid and metric columns, and the papers' method names.
API = {
    "han2014": (
        ("method", "sweep", "value", "objective_mean", "objective_std", "optimum"),
        {"laplace-data", "laplace-solution", "exponential", "subgradient"},
    ),
    "kuru2022": (
        ("method", "m", "T", "c", "final_error_mean", "final_error_std"),
        {"dp-gd", "dp-hb", "dp-nag", "dp-nag-opt", "dp-masg", "dp-masg-opt"},
    ),
}


def command() -> list[str]:
    exe = shutil.which("dpopt")
    return [exe] if exe else [sys.executable, "-m", "dpopt"]


def dpopt(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*command(), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module", params=sorted(API))
def reproduced(request, tmp_path_factory):
    """``dpopt reproduce PAPER --quick --quiet``, run once per paper (han2014 into its default folder)."""
    paper = request.param
    cwd = tmp_path_factory.mktemp(paper)
    args = ["reproduce", paper, "--quick", "--quiet", "--seed", "1"]
    if paper == "kuru2022":
        args += ["--out", "results/kuru"]
    done = dpopt(*args, cwd=cwd)
    out = cwd / ("dpopt-han2014-quick" if paper == "han2014" else "results/kuru")
    return paper, done, out


def test_exits_zero_and_prints_the_summary_and_paths(reproduced):
    paper, done, out = reproduced
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --quiet
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if " files written to " in line)
    written = [line.strip() for line in lines[header + 1 : -1]]
    assert lines[header].startswith(f"{len(written)} files written to ")
    cwd = out.parent if paper == "han2014" else out.parent.parent
    assert sorted(written) == sorted(p.relative_to(cwd).as_posix() for p in out.rglob("*") if p.is_file())
    assert {"summary.csv", "report.html", "privacy"} <= {Path(p).relative_to(out.relative_to(cwd)).parts[0]
                                                         for p in written}
    assert lines[-1].endswith("report.html in a browser for the full report.")
    verdict = "lowest mean objective at" if paper == "han2014" else "DP-NAG-opt"
    assert verdict in done.stdout


def test_summary_csv_has_the_api_columns_and_method_names(reproduced):
    paper, _, out = reproduced
    columns, methods = API[paper]
    with (out / "summary.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    assert tuple(reader.fieldnames[: len(columns)]) == columns
    assert {r["method"] for r in rows} == methods
    assert all(float(r[columns[-2]]) == float(r[columns[-2]]) for r in rows)  # no NaN means


def test_report_parses_and_embeds_its_figures(reproduced):
    paper, _, out = reproduced
    outline = read_report(out / "report.html")
    assert outline.headings[:6] == ["What was run", outline.headings[1], "Figures", "Summary table", "Data",
                                    "Privacy guarantee"]  # fmt: skip
    assert outline.headings[-1] == "Files"
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(outline.figures) == len(pngs) >= 3
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") for _, png in outline.figures)
    assert sorted(png for _, png in outline.figures) == sorted((out / name).read_bytes() for name in pngs)
    assert f"dpopt reproduce {paper} --quick --seed 1" in outline.text  # how to rerun it
    assert "seed | 1" in " | ".join(" | ".join(row) for table in outline.tables for row in table)
    assert "PureDPAccountant" in outline.text  # both papers are pure ε-DP
    relation = "||b - b'||_inf <= b_max" if paper == "han2014" else "replace_one"
    assert relation in outline.text
    assert "--quick configuration" in outline.text  # the reader is told these are not the paper's numbers


def test_saved_privacy_records_are_rechecked_by_dpopt_account(reproduced, capsys):
    paper, _, out = reproduced
    method, epsilon = ("subgradient", 0.1) if paper == "han2014" else ("dp-nag-opt", 1.0)
    record = json.loads((out / "privacy" / f"{method}.json").read_text())
    assert record["epsilon"] == pytest.approx(epsilon, rel=1e-12)
    assert _main(["account", "--events", str(out / "privacy" / f"{method}.json"), "--json"]) == 0
    pure = next(r for r in json.loads(capsys.readouterr().out)["results"] if r["accountant"] == "pure")
    assert pure["epsilon"] == pytest.approx(epsilon, rel=1e-9)  # the event log reproduces the guarantee


def _interrupt_after_first_line(tmp_path, args, expected_first, sig, **popen) -> str:
    """Start ``dpopt reproduce ARGS``, wait for its first progress line, send ``sig``; check that it stops cleanly."""
    process = subprocess.Popen([*command(), "reproduce", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, **popen)  # fmt: skip
    first = process.stderr.readline()  # progress goes to stderr: the grid has started
    while "still running" in first:  # the keepalive line of a slow start (a loaded machine)
        first = process.stderr.readline()
    assert first.startswith(expected_first), first
    process.send_signal(sig)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "dpopt reproduce: interrupted"
    assert list(tmp_path.iterdir()) == []
    return process.pid


def test_interrupted_run_leaves_no_output_folder(tmp_path):
    """Ctrl-C while the grid runs: exit code 130, and neither the folder nor a temporary one remains."""
    _interrupt_after_first_line(
        tmp_path, ["han2014", "--quick", "--out", "new/out"], "reproduce han2014: [ 1/", signal.SIGINT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not inherited as ignored
    )  # fmt: skip


def test_sigterm_stops_a_parallel_reproduction_and_leaves_nothing(tmp_path):
    """``kill`` (SIGTERM) during a two-worker run: exit code 130, no output folder, no process left behind."""
    pid = _interrupt_after_first_line(
        tmp_path, ["kuru2022", "--quick", "--jobs", "2", "--out", "new/out"], "reproduce kuru2022: [ 0/",
        signal.SIGTERM, start_new_session=True,
    )  # fmt: skip
    with pytest.raises(ProcessLookupError):  # every worker of the session has gone
        os.killpg(pid, 0)


def test_existing_file_as_out_is_a_one_line_error(tmp_path):
    (tmp_path / "taken").write_text("")
    done = dpopt("reproduce", "han2014", "--quick", "--out", "taken", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["dpopt reproduce: error: --out: 'taken' exists and is not a folder"]
    assert done.stdout == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (["--jobs", "0"], "--jobs must be a positive integer, got 0"),
        (["--jobs", "two"], "argument --jobs: invalid int value: 'two'"),
        (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
        (["--out", "file.txt/sub"], "--out: 'file.txt' is not a folder"),
    ],
)
def test_bad_input_exits_2_with_one_line_before_running(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("")
    code = _main(["reproduce", "han2014", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1 and err.startswith("dpopt reproduce: error: ") and message in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]  # nothing ran, nothing written


def test_unknown_paper_is_a_one_line_error(capsys):
    assert _main(["reproduce", "smith2099"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "invalid choice: 'smith2099'" in err


def _main(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own errors
        return exc.code


def test_an_out_folder_that_cannot_be_written_is_refused_before_running(tmp_path, monkeypatch, capsys):
    # --out /sys/x ran the experiment and ended in mkdtemp's PermissionError traceback: os.access said yes (root)
    import tempfile

    mkstemp = tempfile.mkstemp

    def locked(*args, dir=None, **kwargs):
        if str(dir) == "locked":
            raise PermissionError(13, "Permission denied")
        return mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.chdir(tmp_path)
    (tmp_path / "locked").mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", locked)
    assert _main(["reproduce", "han2014", "--quick", "--out", "locked/run"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "dpopt reproduce: error: --out: no permission to write into 'locked' (Permission denied)"]
