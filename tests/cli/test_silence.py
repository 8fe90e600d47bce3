"""No command is silent for long or refuses in more than one line (issue 16 §3): sizes that cannot run at
all are refused before any work, slow steps keep a progress line alive, a CSV that is not UTF-8 is named
in one line without its bytes, and ``dpopt tune`` warns once per message.

Every test calls ``dpopt.cli.main`` in this process; slowness is simulated (a step that waits until the
keepalive has shown it) with the first progress line brought forward, so that each test takes well under a
second or two.
"""

from __future__ import annotations

import csv
import threading

import numpy as np
import pytest

from dpopt.cli import main

N = 80
DECLARED = ["--bounds", "a=0:1", "b=0:1", "--categories", "city=Paris,Rome"]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    a, b = rng.random(N), rng.random(N)
    city = rng.choice(("Paris", "Rome"), N)
    with open(tmp_path / "train.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["a", "b", "city", "y"], *zip(
            a.round(3).tolist(), b.round(3).tolist(), city, np.where(a + b > 1, "yes", "no"), strict=True)])
    # a Latin-1 file: 'é' is byte 0xe9, not UTF-8
    (tmp_path / "latin.csv").write_bytes("a,b,city,y\n0.5,0.5,Paris,yes\n0.1,0.2,Orléans,no\n".encode("latin-1"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _slow(monkeypatch, owner, name: str, step: str) -> None:
    """Make ``owner.name`` a slow step: it returns once the keepalive has shown ``step … still running``
    (at most 10 s: a fixed sleep could end before the line on a loaded machine; a broken keepalive still
    fails the test's assertion)."""
    from dpopt.progress import Progress

    shown = threading.Event()
    write = Progress._write

    def _write(self, done, total, label, now, *, final):
        write(self, done, total, label, now, final=final)
        if label == f"{step} … still running":
            shown.set()

    monkeypatch.setattr(Progress, "_write", _write)
    original = getattr(owner, name)

    def slow(*args, **kwargs):
        shown.wait(10.0)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, slow)


def _forbid(monkeypatch, owner, name: str, what: str) -> None:
    def forbidden(*args, **kwargs):
        raise AssertionError(f"{what} before the refusal")

    monkeypatch.setattr(owner, name, forbidden)


def _one_line_error(capsys, command: str) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dpopt {command}: error: "), captured.err
    return lines[0]


# -- a CSV that is not UTF-8 --------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["fit", "predict"])
def test_a_latin1_csv_is_named_in_one_line_without_its_bytes(folder, capsys, command):
    if command == "fit":
        argv = ["fit", "--data", "latin.csv", "--target", "y", *DECLARED, "--epsilon", "1"]
    else:
        assert main(["fit", "--data", "train.csv", "--target", "y", *DECLARED, "--epsilon", "1", "--quiet",
                     "--classes", "no,yes", "--out", "m.json"]) == 0
        capsys.readouterr()
        argv = ["predict", "--model", "m.json", "--data", "latin.csv"]
    assert main(argv) == 2
    line = _one_line_error(capsys, command)
    offset = len("a,b,city,y\n0.5,0.5,Paris,yes\n0.1,0.2,Orl")  # the byte of é
    assert f"latin.csv is not UTF-8 text (undecodable byte at offset {offset}, line 3)" in line
    assert "--encoding" in line
    for data in ("0xe9", "\\xe9", "é", "Orl"):  # the bytes and the values around them are data
        assert data not in line


def test_encoding_reads_a_latin1_csv(folder, capsys):
    argv = ["fit", "--data", "latin.csv", "--target", "y", "--bounds", "a=0:1", "b=0:1",
            "--categories", "city=Paris,Orléans", "--epsilon", "1", "--classes", "no,yes", "--quiet"]
    assert main([*argv, "--encoding", "latin-1", "--out", "m.json"]) == 0
    assert "error" not in capsys.readouterr().err
    assert main([*argv, "--encoding", "klingon"]) == 2
    assert "unknown --encoding 'klingon'" in _one_line_error(capsys, "fit")


def test_load_csv_names_the_file_and_the_offset(folder):
    from dpopt.datasets import PrivacyLeakWarning, load_csv
    from dpopt.datasets.csvfile import CSVEncodingError

    where = r"latin\.csv' is not UTF-8 text \(undecodable byte at offset 40, line 3\)"
    with pytest.raises(CSVEncodingError, match=where):
        load_csv("latin.csv", "y")
    with pytest.warns(PrivacyLeakWarning):  # (the label values are read whatever is declared)
        data = load_csv("latin.csv", "y", encoding="latin-1", categorical=["city"], positive_class="yes")
    assert data.X.shape[0] == 2


# -- sizes that cannot run at all: refused before any work ---------------------------------------------


def test_tune_refuses_more_steps_or_candidates_than_can_run_before_reading_the_data(folder, capsys, monkeypatch):
    from dpopt.cli import tune

    _forbid(monkeypatch, tune, "load_encoded", "the data were read")
    base = ["tune", "--data", "train.csv", "--target", "y", *DECLARED, "--space", "regularization=1e-4:1e-1:log",
            "--epsilon", "1"]
    assert main([*base, "--n-iter", "1000000000"]) == 2
    assert "--n-iter must be in [1, 10000] (each step factors" in _one_line_error(capsys, "tune")
    assert main([*base, "--n-candidates", "1000000000"]) == 2
    assert "--n-candidates must be in [1, 32768]" in _one_line_error(capsys, "tune")


def test_audit_refuses_more_samples_than_fit_in_memory_before_any_run(capsys, monkeypatch):
    from dpopt.experiments import audits

    _forbid(monkeypatch, audits, "run", "an audit ran")
    assert main(["audit", "laplace", "--samples", "100000000000"]) == 2
    line = _one_line_error(capsys, "audit")
    assert "--samples must be in [4, 1073741824] (every run's statistic is kept in memory" in line


# -- slow steps keep a progress line alive ------------------------------------------------------------


def _first_progress(monkeypatch, module, seconds: float = 0.05) -> None:
    """The first progress line after ``seconds`` and the next ones as often (a slow step is seen whichever
    step came first on a loaded machine)."""
    from dpopt.progress import Progress

    keepalive = Progress.keepalive
    monkeypatch.setattr(module, "FIRST_PROGRESS", seconds, raising=False)
    monkeypatch.setattr(Progress, "keepalive", lambda self, interval=4.0, **kw: keepalive(self, seconds, **kw))


def test_fit_shows_a_slow_read(folder, capsys, monkeypatch):
    from dpopt.cli import fit
    from dpopt.datasets import csvfile

    _first_progress(monkeypatch, fit)
    _slow(monkeypatch, csvfile, "read_csv_columns", "reading train.csv")
    assert main(["fit", "--data", "train.csv", "--target", "y", *DECLARED, "--epsilon", "1", "--classes",
                 "no,yes", "--out", "m.json"]) == 0
    assert "dpopt fit: [0/1] reading train.csv … still running" in capsys.readouterr().err


def test_tune_shows_a_slow_search_and_warns_once(folder, capsys, monkeypatch):
    from dpopt.cli import tune
    from dpopt.estimators import DPBayesSearchCV

    _first_progress(monkeypatch, tune)
    _slow(monkeypatch, DPBayesSearchCV, "fit", "searching (2 Bayesian-optimization steps)")
    assert main(["tune", "--data", "train.csv", "--target", "y", *DECLARED, "--space",
                 "regularization=1e-4:1e-1:log", "--epsilon", "1", "--n-iter", "2", "--n-candidates", "8",
                 "--seed", "0", "--out", "r.json"]) == 0
    err = capsys.readouterr().err
    assert "dpopt tune: [0/1] searching (2 Bayesian-optimization steps) … still running" in err
    # the first step's fit and the refit both warned that the label set was read from the data: once here
    assert err.count("classes was not given") == 1 and "Declare --classes A,B,..." in err


def test_audit_shows_a_slow_target(capsys, monkeypatch):
    from dpopt.cli import audit
    from dpopt.experiments import audits

    _first_progress(monkeypatch, audit)
    _slow(monkeypatch, audits, "run", "auditing laplace")
    assert main(["audit", "laplace", "--samples", "2000", "--seed", "1"]) == 0
    captured = capsys.readouterr()
    assert "dpopt audit: [0/1] auditing laplace … still running" in captured.err
    assert captured.out.splitlines()[0].startswith("target")


def test_predict_shows_a_slow_read(folder, capsys, monkeypatch):
    from dpopt.cli import predict
    from dpopt.datasets import csvfile

    assert main(["fit", "--data", "train.csv", "--target", "y", *DECLARED, "--epsilon", "1", "--quiet",
                 "--classes", "no,yes", "--out", "m.json"]) == 0
    capsys.readouterr()
    _first_progress(monkeypatch, predict)
    _slow(monkeypatch, csvfile, "read_csv_columns", "reading train.csv")
    assert main(["predict", "--model", "m.json", "--data", "train.csv", "--out", "p.csv"]) == 0
    assert "dpopt predict: [0/2] reading train.csv … still running" in capsys.readouterr().err


def test_dualavg_shows_a_slow_run(capsys, monkeypatch):
    import dpopt.dualavg
    from dpopt.cli import dualavg

    _first_progress(monkeypatch, dualavg)
    _slow(monkeypatch, dpopt.dualavg, "minimize", "dual averaging on 2 nodes (simulate)")
    assert main(["dualavg", "--synthetic", "20", "--nodes", "2", "--rounds", "10", "--epsilon", "1"]) == 0
    captured = capsys.readouterr()
    assert "dpopt dualavg: [0/1] dual averaging on 2 nodes (simulate) … still running" in captured.err
    assert "after 10 rounds" in captured.out


def test_dualavg_refuses_a_synthetic_task_that_cannot_be_held_before_running(capsys, monkeypatch):
    import dpopt.dualavg

    _forbid(monkeypatch, dpopt.dualavg, "minimize", "the run started")
    assert main(["dualavg", "--synthetic", "1000000000", "--nodes", "4", "--epsilon", "1"]) == 2
    line = _one_line_error(capsys, "dualavg")
    assert "need 626 GiB (8 bytes a value); the usable range is up to 32 GiB: at most 51,130,563 records a node" in line
