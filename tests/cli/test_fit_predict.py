"""End to end: the installed ``dpopt`` command fits a private model on a CSV and applies it.

Every test runs the console script in a subprocess (``shutil.which("dpopt")``,
else ``python -m dpopt``) on a small CSV written into ``tmp_path``: numeric and
categorical columns, a string target, one row with a missing value.  The
release test of ``dpopt fit`` (neighbouring files) is in test_release.py.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

DPOPT = [shutil.which("dpopt")] if shutil.which("dpopt") else [sys.executable, "-m", "dpopt"]
TIMEOUT = 120


def _env() -> dict:
    env = dict(os.environ)
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def dpopt(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*DPOPT, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=_env(), timeout=TIMEOUT
    )


def dpopt_many(commands, cwd) -> list[subprocess.CompletedProcess]:
    """Run independent commands concurrently (each is a fresh interpreter start-up)."""
    procs = [
        (
            cmd,
            subprocess.Popen(
                [*DPOPT, *map(str, cmd)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=cwd,
                env=_env(),
            ),
        )
        for cmd in commands
    ]
    out = []
    for cmd, p in procs:
        stdout, stderr = p.communicate(timeout=TIMEOUT)
        out.append(subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr))
    return out


N = 300
CITIES = ("Paris", "Rome", "Oslo")
DECLARED = ["--bounds", "age=17:90", "hours=0:100", "--categories", "city=" + ",".join(CITIES)]
FIT = ["fit", "--data", "train.csv", "--target", "income", *DECLARED]


def _table(rng, n):
    age = rng.integers(18, 80, n)
    hours = rng.integers(5, 80, n)
    city = rng.choice(CITIES, n)
    score = 0.04 * age + 0.06 * hours + 1.5 * (city == "Rome") + rng.normal(0, 0.5, n)
    label = np.where(score > np.median(score), "high", "low")
    return [[str(a), str(h), c, lab] for a, h, c, lab in zip(age, hours, city, label, strict=True)]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A training CSV (with one missing value), a CSV of new rows, and a fitted model."""
    root = tmp_path_factory.mktemp("fitpredict")
    rows = _table(np.random.default_rng(0), N)
    rows[7][1] = ""  # a missing number: imputed at fit time, the row is kept
    with open(root / "train.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["age", "hours", "city", "income"], *rows])
    new = [
        ["Paris", "40", "30"],
        ["Rome", "", "70"],
        ["Berlin", "60", "50"],
        ["Oslo", "10", "200"],
        ["Oslo", "45", "45"],
    ]
    with open(root / "new.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["city", "hours", "age"], *new])  # another column order, no target
    fit = dpopt(
        "fit",
        "--data", "train.csv", "--target", "income", "--epsilon", "4", "--bounds", "age=17:90",
        "--numeric", "hours", "--categories", "city=Paris,Rome,Oslo", "--seed", "0", "--out", "model.json",
        cwd=root,
    )  # fmt: skip
    return root, fit


def test_fit_writes_a_model_with_its_privacy_record(work):
    root, fit = work
    assert fit.returncode == 0, fit.stderr
    # "hours" has no declared range and the labels no declared set: one clear warning each
    warnings = [line for line in fit.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 2 and "hours" in warnings[0] and "leaks privacy" in warnings[0]
    assert "--bounds hours=LO:HI" in warnings[0]
    assert "label set was read from the data" in warnings[1] and "--classes A,B,..." in warnings[1]
    assert "epsilon = 4" in fit.stdout and "saved      model.json" in fit.stdout
    model = json.loads((root / "model.json").read_text())
    assert model["format"] == "dpopt-model" and model["format_version"] == 1 and model["dpopt_version"]
    assert model["estimator"]["class"] == "DPLogisticRegression"
    params = model["estimator"]["params"]
    assert params["epsilon"] == 4.0 and params["random_state"] is None  # --seed is never published
    privacy = model["privacy"]
    assert 0 < privacy["epsilon"] <= 4.0 * (1 + 1e-9) and privacy["delta"] == 0.0
    assert privacy["notion"] == "pure" and privacy["relation"] in ("replace_one", "add_remove")
    assert privacy["method"] == "objpert" and privacy["events"]  # auto at n·ε/d² ≥ 0.3 (estimators._auto)
    disclosed = privacy["disclosed"]
    assert len(disclosed) == 2 and "['high', 'low']" in disclosed[0] and "hours" in disclosed[1]
    assert model["fitted"]["classes_"] == ["high", "low"]
    assert len(model["fitted"]["coef_"][0]) == len(model["feature_names"]) == 5
    assert model["data"]["rows"] == N and model["data"]["columns"] == 3 and model["data"]["missing"] == "impute"
    columns = {c["name"]: c for c in model["preprocessing"]["columns"]}
    assert columns["age"] == {"name": "age", "kind": "numeric", "source": "declared", "bounds": [17.0, 90.0]}
    assert columns["hours"]["source"] == "data"
    assert columns["city"] == {"name": "city", "kind": "categorical", "source": "declared", "categories": list(CITIES)}
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_predict_applies_the_model_and_the_account_reads_it(work):
    root, fit = work
    assert fit.returncode == 0, fit.stderr
    pred, train_pred, account = dpopt_many(
        [
            ["predict", "--model", "model.json", "--data", "new.csv", "--out", "pred.csv", "--proba"],
            ["predict", "--model", "model.json", "--data", "train.csv"],
            ["account", "--events", "model.json"],
        ],
        cwd=root,
    )
    assert pred.returncode == 0, pred.stderr
    assert "wrote 5 predictions to pred.csv" in pred.stdout
    notes = pred.stderr.splitlines()
    assert any("1 row(s) had a missing value" in line for line in notes)
    assert any("1 row(s) had a category outside the model's categories" in line for line in notes)
    with open(root / "pred.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["income", "proba_high", "proba_low"]
    assert len(rows) == 1 + 5
    assert {r[0] for r in rows[1:]} <= {"high", "low"}
    for r in rows[1:]:
        p_high, p_low = float(r[1]), float(r[2])
        assert p_high + p_low == pytest.approx(1.0, abs=1e-5)
        assert r[0] == ("high" if p_high > p_low else "low")

    # On the training file (target column ignored; the row with a missing number is imputed, as at fit time)
    assert train_pred.returncode == 0, train_pred.stderr
    lines = train_pred.stdout.splitlines()
    assert lines[0] == "income" and len(lines) == 1 + N and set(lines[1:]) <= {"high", "low"}
    with open(root / "train.csv", newline="") as fh:
        truth = [r["income"] for r in csv.DictReader(fh)]
    accuracy = np.mean(np.array(lines[1:]) == np.array(truth))
    assert accuracy > 0.6  # the private model learned something at epsilon = 4 on 299 rows

    assert account.returncode == 0, account.stderr
    assert "pure" in account.stdout


def test_multiclass_huber_svc_to_stdout(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.random(600)
    label = np.array(["a", "b", "c"])[np.digitize(x, [0.33, 0.66])]
    with open(tmp_path / "three.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([["x", "label"], *zip(map(str, x), label, strict=True)])
    fit = dpopt(
        "fit",
        "--data", "three.csv", "--target", "label", "--epsilon", "30", "--model", "huber-svc",
        "--method", "dp-nag-opt", "--bounds", "x=0:1", "--classes", "a,b,c", "--seed", "1", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert fit.returncode == 0 and fit.stdout == "" and fit.stderr == "", fit.stderr
    model = json.loads((tmp_path / "three.model.json").read_text())  # the default --out
    assert model["estimator"]["class"] == "DPHuberSVC" and model["fitted"]["classes_"] == ["a", "b", "c"]
    assert len(model["fitted"]["coef_"]) == 3 and model["privacy"]["epsilon"] <= 30 * (1 + 1e-9)
    pred = dpopt("predict", "--model", "three.model.json", "--data", "three.csv", cwd=tmp_path)
    assert pred.returncode == 0, pred.stderr
    lines = pred.stdout.splitlines()
    assert lines[0] == "label" and len(lines) == 601 and set(lines[1:]) <= {"a", "b", "c"}
    assert np.mean(np.array(lines[1:]) == label) > 0.6
    from dpopt.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["predict", "--model", "three.model.json", "--data", "three.csv", "--proba"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "DPHuberSVC models give no probabilities" in err


def test_secure_noise_flag_reaches_the_line_search(work, capsys, monkeypatch):
    root, fit = work
    assert fit.returncode == 0, fit.stderr
    from dpopt.cli import main
    from dpopt.privacy import secure

    drawn = []
    draw = secure.discrete_gaussian_array
    monkeypatch.setattr(secure, "discrete_gaussian_array", lambda *a: drawn.append(a) or draw(*a))
    monkeypatch.chdir(root)
    argv = [*FIT, "--epsilon", "2", "--delta", "1e-6", "--method", "dp-blsgd", "--classes", "high,low",
            "--seed", "0", "--out", "secure.json", "--quiet"]
    assert main(argv) == 0 and not drawn, capsys.readouterr().err
    assert main([*argv, "--secure-noise"]) == 0, capsys.readouterr().err
    assert len(drawn) >= 200  # every gradient of the 200 planned iterations
    privacy = json.loads((root / "secure.json").read_text())["privacy"]
    assert privacy["method"] == "dp-blsgd" and privacy["epsilon"] <= 2.0 * (1 + 1e-9)


BAD_CITY = ["--categories", "city=Paris,Rome,Oslo"]
BAD_INPUT = {
    "missing file": (["fit", "--data", "absent.csv", "--target", "income", "--epsilon", "1"], "no such file"),
    "unknown column": (["fit", "--data", "train.csv", "--target", "salary", "--epsilon", "1"], "'salary' not found"),
    "non-numeric": (
        ["fit", "--data", "bad.csv", "--target", "label", "--epsilon", "1", "--bounds", "age=0:120", *BAD_CITY],
        "non-numeric value 'abc'",
    ),
    "non-numeric declared": (
        ["fit", "--data", "bad.csv", "--target", "label", "--epsilon", "1", "--numeric", "age", *BAD_CITY],
        "non-numeric value 'abc'",
    ),
    "undeclared column": (
        ["fit", "--data", "bad.csv", "--target", "label", "--epsilon", "1", *BAD_CITY],
        # the data layer's words named no option
        "column(s) ['age'] have no declared type: give each numeric one --bounds COL=LO:HI (or --numeric COL)",
    ),
    "label outside classes": (
        ["fit", "--data", "one.csv", "--target", "label", "--epsilon", "1", "--bounds", "age=0:99", "--classes", "a,b"],
        "'label' has a label outside the declared classes ['a', 'b']",
    ),
    "bad classes": ([*FIT, "--epsilon", "1", "--classes", "high"], "--classes must list at least 2"),
    "missing refused": ([*FIT, "--epsilon", "1", "--missing", "error"], "missing values (counts per column)"),
    "epsilon zero": ([*FIT, "--epsilon", "0"], "--epsilon must be in (0, inf)"),
    "epsilon negative": ([*FIT, "--epsilon", "-2"], "--epsilon must be in (0, inf)"),
    "delta one": ([*FIT, "--epsilon", "1", "--delta", "1"], "--delta must be in [0, 1)"),
    "delta negative": ([*FIT, "--epsilon", "1", "--delta", "-0.1"], "--delta must be in [0, 1)"),
    "method needs delta": ([*FIT, "--epsilon", "1", "--method", "dp-blsgd"], "give --delta > 0"),
    "unknown method": ([*FIT, "--epsilon", "1", "--method", "newton"], "unknown --method 'newton'"),
    "secure noise refused": (
        [*FIT, "--epsilon", "1", "--method", "objpert", "--secure-noise", "--classes", "high,low"],
        "secure_noise=True is available for the methods",
    ),
    "one class": (
        ["fit", "--data", "one.csv", "--target", "label", "--epsilon", "1", "--bounds", "age=0:99"],
        "fewer than 2 classes",
    ),
    "bad bounds": ([*FIT, "--epsilon", "1", "--bounds", "age=90:17"], "LO < HI"),
    "bounds unknown column": ([*FIT, "--epsilon", "1", "--bounds", "weight=1:2"], "unknown feature column"),
    "output folder missing": ([*FIT, "--epsilon", "1", "--out", "nowhere/m.json"], "does not exist"),
    "not a model": (["predict", "--model", "train.csv", "--data", "new.csv"], "not a dpopt model file"),
    "no model file": (["predict", "--model", "absent.json", "--data", "new.csv"], "no such model file"),
    "columns missing": (["predict", "--model", "model.json", "--data", "one.csv"], "lack the feature column"),
    # a ;-separated file read with ',' said only "target column 'label' not found; columns are ['age;label']"
    "other delimiter": (["fit", "--data", "semi.csv", "--target", "label", "--epsilon", "1"],
                        "semi.csv has one column, 'age;label': is its delimiter ';'? give --delimiter ';'"),
    "tab delimiter": (["predict", "--model", "model.json", "--data", "tab.csv"],
                      "is its delimiter '\\t'? give --delimiter $'\\t' (a tab)"),
}


@pytest.fixture(scope="module")
def bad_files(work):
    root, fit = work
    assert fit.returncode == 0, fit.stderr
    (root / "bad.csv").write_text("age,city,label\n30,Paris,yes\nabc,Rome,no\n41,Oslo,yes\n")
    (root / "one.csv").write_text("age,label\n30,yes\n40,yes\n")
    (root / "semi.csv").write_text("age;label\n30;yes\n40;no\n")
    (root / "tab.csv").write_text("age\tlabel\n30\tyes\n40\tno\n")
    return root


def _check_one_line_error(name, argv, message, code, stdout, stderr):
    lines = stderr.splitlines()
    assert code == 2, (name, code, stderr)
    assert len(lines) == 1, (name, stderr)
    assert lines[0].startswith(f"dpopt {argv[0]}: error: ") and message in lines[0], (name, lines[0])
    assert stdout == "", name


def test_bad_input_in_the_installed_command(bad_files):
    """Two cases through the real process boundary (exit status of the console script)."""
    root = bad_files
    names = ["non-numeric", "not a model"]
    before = sorted(p.name for p in root.iterdir())
    for name, res in zip(names, dpopt_many([BAD_INPUT[n][0] for n in names], cwd=root), strict=True):
        _check_one_line_error(name, BAD_INPUT[name][0], BAD_INPUT[name][1], res.returncode, res.stdout, res.stderr)
    assert sorted(p.name for p in root.iterdir()) == before


@pytest.mark.parametrize("name", list(BAD_INPUT))
def test_bad_input_gives_one_line_and_exit_code_2(bad_files, name, capsys, monkeypatch):
    """Every case through ``dpopt.cli.main`` — the function the console script calls with
    ``sys.exit`` — in this process, to keep interpreter start-ups few."""
    from dpopt.cli import main

    root = bad_files
    monkeypatch.chdir(root)
    argv, message = BAD_INPUT[name]
    before = sorted(p.name for p in root.iterdir())
    code = main(argv)
    captured = capsys.readouterr()
    _check_one_line_error(name, argv, message, code, captured.out, captured.err)
    assert sorted(p.name for p in root.iterdir()) == before  # no model or partial file written


def test_fit_help_states_each_default_regularization_rule(capsys):
    """--regularization's help gives the rules of estimators._auto (it said 0.001 for outpert, whose rule is
    0.3·d/(n·ε) in [0.001, 0.3])."""
    import re

    from dpopt.cli import main
    from dpopt.estimators import _auto

    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    # each rule as the help states it: RATE*d/(n*epsilon) ... in [LOW, HIGH]
    stated = {float(rate): (float(low), float(high)) for rate, low, high in
              re.findall(r"([0-9.]+)\*d/\([nN]\*epsilon\)[^\[]*? in \[([0-9.e-]+), ([0-9.e-]+)\]", text)}
    assert stated == {
        _auto.OBJPERT_REGULARIZATION_RATE: _auto.OBJPERT_REGULARIZATION_RANGE,
        _auto.OUTPERT_REGULARIZATION_RATE: _auto.OUTPERT_REGULARIZATION_RANGE,
        _auto.DPSGD_REGULARIZATION_RATE: _auto.DPSGD_REGULARIZATION_RANGE,
    }, stated
    outpert = text[text.index("for outpert"):][:100]
    assert f"{_auto.OUTPERT_REGULARIZATION_RATE:g}*d/(n*epsilon), " in outpert
    assert f"{_auto.OUTPERT_GAUSSIAN_REGULARIZATION_RATE:g}*d/(n*epsilon) with --delta > 0" in outpert
