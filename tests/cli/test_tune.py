"""``dpopt tune`` end to end on a small CSV: the same data conventions and errors as ``dpopt fit``."""

from __future__ import annotations

import contextlib
import csv
import io
import json

import numpy as np
import pytest

from dpopt.cli import main
from dpopt.cli.tune import parse_space

N = 300


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune")
    rng = np.random.default_rng(0)
    age, hours = rng.integers(18, 80, N), rng.integers(5, 80, N)
    city = rng.choice(("Paris", "Rome", "Oslo"), N)
    score = 0.04 * age + 0.06 * hours + 1.5 * (city == "Rome") + rng.normal(0, 0.5, N)
    label = np.where(score > np.median(score), "high", "low")
    with open(folder / "train.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["age", "hours", "city", "income"],
                                  *zip(age.tolist(), hours.tolist(), city, label, strict=True)])
    return folder


BASE = ["tune", "--data", "train.csv", "--target", "income", "--bounds", "age=17:90", "hours=0:100",
        "--categories", "city=Paris,Rome,Oslo", "--seed", "0", "--n-iter", "3", "--n-candidates", "16"]


@pytest.fixture(scope="module")
def tuned(root):
    """One private tune run (report.json and, beside it, report.model.json): its exit code and stdout."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.chdir(root)
        code = main([*BASE, "--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--train-epsilon", "0.5",
                     "--out", "report.json"])
    return code, out.getvalue()


def test_tune_a_private_estimator_writes_its_report(root, tuned):
    code, stdout = tuned
    assert code == 0
    report = json.loads((root / "report.json").read_text())
    assert set(report["best_params"]) == {"regularization"} and 1e-4 <= report["best_params"]["regularization"] <= 0.1
    privacy = report["privacy"]
    # 3 fits + the refit at 0.5 each, and the two releases
    assert privacy["epsilon"] == pytest.approx(4 * 0.5 + 1.0) and privacy["protects"] == "training and validation rows"
    assert privacy["selection_guarantee"] == "conditional" and "k1(V, V') = 0.95" in privacy["selection"]["notes"]
    assert any("label set" in d for d in report["disclosed"])
    assert "selection conditional" in stdout and "saved      report.json" in stdout
    # the score's noise scale is stated (Algorithm 1's bound at these settings is far above accuracy's range)
    scale = report["best_score_noise_scale"]
    assert scale > 0 and f"Laplace noise of scale {scale:.3g})" in stdout
    assert "model      report.model.json" in stdout


def test_tuned_model_is_saved_with_one_ledger_and_predicts(root, tuned, capsys, monkeypatch):
    """The refit model saved beside the report loads in dpopt predict and dpopt account."""
    monkeypatch.chdir(root)
    assert tuned[0] == 0
    report = json.loads((root / "report.json").read_text())
    model = json.loads((root / "report.model.json").read_text())
    assert model["format"] == "dpopt-model" and model["preprocessing"] is not None
    assert model["estimator"]["params"]["regularization"] == pytest.approx(report["best_params"]["regularization"])
    record = model["privacy"]
    # one ledger: the 3 fits, the refit and both releases, as the report states
    assert record["epsilon"] == pytest.approx(report["privacy"]["epsilon"]) == pytest.approx(4 * 0.5 + 1.0)
    assert len(record["events"]) == len(report["privacy"]["events"])
    assert record["guarantee"] in ("approximate", "conditional")  # the weaker of the refit's and the selection's
    assert any("label set" in d for d in record["disclosed"])
    assert main(["account", "--events", "report.model.json"]) == 0
    capsys.readouterr()
    assert main(["predict", "--model", "report.model.json", "--data", "train.csv", "--out", "pred.csv"]) == 0
    with open(root / "pred.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["income"] and len(rows) == N + 1 and {r[0] for r in rows[1:]} <= {"high", "low"}


def test_tune_algorithm_3_with_sklearn_protects_validation_only(root, capsys, monkeypatch):
    monkeypatch.chdir(root)
    code = main([*BASE, "--estimator", "sklearn-logistic", "--algorithm", "3", "--space", "C=1:100:log",
                 "--epsilon", "1", "--out", "alg3.json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "only the validation rows are protected" in captured.err
    assert not (root / "alg3.model.json").exists()  # a non-private estimator's refit is not saved
    privacy = json.loads((root / "alg3.json").read_text())["privacy"]
    assert privacy["selection_guarantee"] == "exact" and privacy["epsilon"] == pytest.approx(1.0)


@pytest.mark.parametrize("extra,message", [
    (["--space", "C=1:100:log", "--epsilon", "0"], "--epsilon must be in"),
    (["--space", "C=100:1", "--epsilon", "1"], "need finite LO < HI"),
    (["--space", "C=a:b", "--epsilon", "1"], "expected LO:HI"),
    (["--space", "C", "--epsilon", "1"], "--space items look like"),
    (["--space", "C=1:10", "--epsilon", "1", "--algorithm", "3"], "--algorithm 3 needs exact minimizers"),
    (["--space", "C=1:10", "--epsilon", "1", "--algorithm", "2"], "give --A and --tau"),
    (["--space", "C=1:10", "--epsilon", "1", "--k1", "2"], "--k1 must be in"),
    (["--space", "C=1:10", "--epsilon", "1", "--estimator", "svm"], "--estimator must be one of"),
    # the estimator's own message said "set delta > 0", which is --train-delta here (--delta is the search's)
    (["--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--method", "dp-agd"],
     "--method dp-agd gives (epsilon, delta)-DP: give --train-delta > 0"),
    (["--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--method", "dp-agd", "--train-delta", "1"],
     "--train-delta must be in [0, 1)"),
    # these three were the estimator's words after the data were read: sklearn's "Invalid parameter
    # 'regularisation' for estimator DPLogisticRegression(...)", "method must be ...", "epsilon must be ..."
    (["--space", "regularisation=1e-4:1e-1:log", "--epsilon", "1"],
     "--space names 'regularisation', not a parameter of --estimator logistic; its parameters are accountant,"),
    (["--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--method", "dp-blsg"],
     "unknown --method 'dp-blsg'; choose auto or one of dp-gd"),
    (["--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--train-epsilon", "1e-9"],
     "--train-epsilon must be in [1e-08, 1e+08]"),
    # a BudgetExceededError traceback (refused before anything was released)
    (["--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--train-epsilon", "1e-3", "--train-delta", "1e-6",
      "--method", "dp-blsgd"], "nothing was released: at delta=1e-06 Renyi-DP accounting states no epsilon below"),
])
def test_tune_errors_are_one_line(root, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(root)
    assert main([*BASE, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpopt tune: error:") and message in err[0]


def test_unknown_column_and_missing_file_follow_fit(root, capsys, monkeypatch):
    monkeypatch.chdir(root)
    space = ["--space", "regularization=1e-3:1e-2"]
    assert main(["tune", "--data", "nope.csv", "--target", "income", *space, "--epsilon", "1"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["tune", "--data", "train.csv", "--target", "wage", *space, "--epsilon", "1"]) == 2
    assert "target column 'wage' not found" in capsys.readouterr().err


def test_parse_space():
    assert parse_space(["C=1e-3:1e3:log", "k=1,2,3", "a=0.5,1.5"]) == {
        "C": (1e-3, 1e3, "log"), "k": [1, 2, 3], "a": [0.5, 1.5]}


def test_tune_secure_noise_releases_everything_exactly(root, capsys, monkeypatch):
    monkeypatch.chdir(root)
    code = main([*BASE, "--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--train-epsilon", "0.5",
                 "--method", "dp-gd", "--secure-noise", "--out", "secure.json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    privacy = json.loads((root / "secure.json").read_text())["privacy"]
    kinds = {e["type"] for e in privacy["events"]}
    assert {"exponential", "discrete_laplace"} <= kinds and "laplace" not in kinds
    assert privacy["selection"]["secure_noise"] and privacy["epsilon"] == pytest.approx(4 * 0.5 + 1.0)
    assert "exact, floating-point safe" in captured.out and "discrete Laplace noise" in captured.out
    # a training method that has no exact sampler refuses in one line
    assert main([*BASE, "--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--method", "objpert",
                 "--secure-noise", "--out", "refused.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "secure_noise=True is available for the methods" in err[0]


def test_tune_an_approximate_dp_method_end_to_end(root, capsys, monkeypatch):
    """dpopt tune --method dp-blsgd --train-delta: each of the 3 fits and the refit is charged one ApproxDP of its
    replace-one guarantee (2 x 0.5, (1 + e^0.5) x 1e-6), composed with the releases' 1.0 by basic composition; the
    saved model's record is re-checked by dpopt account and the model predicts.  Before, the method was refused."""
    from dpopt.privacy import budget_for
    from dpopt.privacy.approx import group_privacy

    monkeypatch.chdir(root)
    code = main([*BASE, "--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--train-epsilon", "0.5",
                 "--train-delta", "1e-6", "--method", "dp-blsgd", "--out", "approx.json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    privacy = json.loads((root / "approx.json").read_text())["privacy"]
    eps, delta = group_privacy(0.5, 1e-6)
    fits = [e for e in privacy["events"] if e["type"] == "approx_dp"]
    assert fits == [{"type": "approx_dp", "epsilon": eps, "delta": delta}] * 4
    assert privacy["notion"] == "approx" and privacy["relation"] == "replace_one"
    assert privacy["epsilon"] == budget_for(1.0, *[eps] * 4) and privacy["delta_ledger"] == budget_for(*[delta] * 4)
    assert f"epsilon = 5, delta = {privacy['delta_ledger']:.3g} (approx accounting" in captured.out
    model = json.loads((root / "approx.model.json").read_text())
    assert (model["privacy"]["epsilon"], model["privacy"]["delta"]) == (privacy["epsilon"], privacy["delta_ledger"])
    assert main(["account", "--events", "approx.model.json"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("stated     epsilon = 5 (approx, delta = 1.05949e-05): the event log gives 5")
    assert "approx                 5   1.06e-05" in out
    assert main(["predict", "--model", "approx.model.json", "--data", "train.csv", "--out", "approx.csv"]) == 0


def test_the_data_warnings_come_after_the_search_and_a_refusal_is_one_line(root, capsys, monkeypatch):
    """hours without --bounds: its range is read from the data (a warning).  tune printed that warning while
    reading, so a search refused afterwards printed two lines (and, on a terminal, the warning ran into the
    keepalive's redrawn status line); as dpopt fit, it comes once the search has run."""
    monkeypatch.chdir(root)
    argv = ["tune", "--data", "train.csv", "--target", "income", "--bounds", "age=17:90", "--numeric", "hours",
            "--categories", "city=Paris,Rome,Oslo", "--classes", "high,low", "--seed", "0", "--n-iter", "2",
            "--n-candidates", "8", "--space", "regularization=1e-4:1e-1:log", "--epsilon", "1"]
    assert main([*argv, "--method", "objpert", "--secure-noise", "--out", "refused.json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "secure_noise=True is available for the methods" in err[0], err
    assert main([*argv, "--quiet", "--out", "warned.json"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dpopt tune: warning: no --bounds declared for numeric column(s) hours")


def test_a_report_that_cannot_be_written_leaves_neither_file(root, capsys, monkeypatch, tmp_path):
    # the report was written in place before the model: a failure between them left one file without the other
    import os

    out, replace = tmp_path / "r.json", os.replace

    def refused(src, dst):  # the report's last step fails, after the model was saved
        if str(dst) == str(out):
            raise PermissionError(13, "Permission denied")
        replace(src, dst)

    monkeypatch.chdir(root)
    monkeypatch.setattr(os, "replace", refused)
    argv = [*BASE, "--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--out", str(out)]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"dpopt tune: error: cannot write the report to {out}")
    assert list(tmp_path.iterdir()) == []


def test_an_output_folder_that_is_not_writable_is_refused_before_any_work(root, capsys, monkeypatch):
    # --out /sys/r.json ran the whole search and then failed to write (os.access says yes to root there)
    import os
    import tempfile

    mkstemp = tempfile.mkstemp

    def locked(*args, dir=None, **kwargs):
        if str(dir) == "locked":
            raise PermissionError(13, "Permission denied")
        return mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.chdir(root)
    os.makedirs("locked", exist_ok=True)
    monkeypatch.setattr(tempfile, "mkstemp", locked)
    argv = [*BASE, "--space", "regularization=1e-4:1e-1:log", "--epsilon", "1", "--out", "locked/r.json"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        "dpopt tune: error: --out folder 'locked' is not writable (Permission denied)"]
