"""The release test of ``dpopt fit``: what a model file releases must not depend on one record.

For a matrix of configurations that uses every ``dpopt fit`` option, the file
D and each neighbour D′ (one record replaced by an extreme one: a new label,
a missing value, a non-numeric value, numbers of size 1e12, a duplicate of
another row) either give model files of identical *structure* — every key,
shape, dtype, string and integer of the model file (floats compared by type),
the schema, n, the class set, the event log, the disclosed list and the
warnings on standard error — or D′ is refused with one line and exit code 2
and no file.  Where an option leaves something undeclared (the label set,
``--missing drop``'s n), the difference is confined to that quantity and is
warned and disclosed on D and D′ alike.  Runs go through ``dpopt.cli.main`` in
this process (the console script is exercised in test_fit_predict.py).
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from dpopt.cli import main

N = 40
CITIES = "Paris,Rome,Oslo"
HEADER = ["age", "hours", "city", "label"]


def _rows():
    rng = np.random.default_rng(0)
    age, hours = rng.integers(18, 80, N), rng.integers(5, 80, N)
    city = rng.choice(CITIES.split(","), N)
    label = np.where(0.04 * age + 0.06 * hours + (city == "Rome") > 5.5, "yes", "no")
    return [[str(a), str(h), c, lab] for a, h, c, lab in zip(age, hours, city, label, strict=True)]


def _neighbour(kind: str):
    rows = _rows()
    if kind == "new label":
        rows[0][3] = "maybe"
    elif kind == "missing value":
        rows[0][0] = ""
    elif kind == "non-numeric":
        rows[0][0] = "abc"
    elif kind == "norm 1e12":
        rows[0][0] = rows[0][1] = "1e12"
    elif kind == "duplicated row":
        rows[0] = list(rows[1])
    return rows


NEIGHBOURS = ("new label", "missing value", "non-numeric", "norm 1e12", "duplicated row")
DECLARED = ["--bounds", "age=0:100", "hours=0:100", "--categories", f"city={CITIES}", "--classes", "no,yes"]
FIRST = ["--seed", "0", "--quiet", "--out", "model.json"]
# name -> (options, neighbours refused (with the message), what the configuration leaves undeclared)
CONFIGS = {
    "declared": (DECLARED, {"new label", "non-numeric"}, ()),
    "indicator huber": (
        [*DECLARED, "--missing", "indicator", "--model", "huber-svc", "--method", "dp-gd", "--data-norm", "1.5",
         "--regularization", "0.01"],
        {"new label", "non-numeric"}, (),
    ),  # fmt: skip
    "rdp add-remove": ([*DECLARED, "--delta", "1e-5", "--method", "dp-sgd"], {"new label", "non-numeric"}, ()),
    "objpert": ([*DECLARED, "--method", "objpert"], {"new label", "non-numeric"}, ()),
    "json files, delimiter": (
        ["--bounds", "bounds.json", "--categories", "categories.json", "--classes", "no,yes", "--delimiter", ";"],
        {"new label", "non-numeric"}, (),
    ),  # fmt: skip
    "range from data": (
        ["--bounds", "age=0:100", "--numeric", "hours", "--categories", f"city={CITIES}", "--classes", "no,yes"],
        {"new label", "non-numeric"}, ("range",),
    ),  # fmt: skip
    "labels from data": (DECLARED[:-2], {"non-numeric"}, ("labels",)),
    "missing drop": ([*DECLARED, "--missing", "drop"], {"new label", "non-numeric"}, ("n",)),
    "missing error": ([*DECLARED, "--missing", "error"], {"new label", "non-numeric", "missing value"}, ()),
}
REFUSAL = {
    "new label": "has a label outside the declared classes",
    "non-numeric": "non-numeric value",
    "missing value": "missing values",
}


def _write(folder, rows, delimiter=","):
    with open(folder / "data.csv", "w", newline="") as fh:
        csv.writer(fh, delimiter=delimiter).writerows([HEADER, *rows])
    (folder / "bounds.json").write_text(json.dumps({"age": [0, 100], "hours": [0, 100]}))
    (folder / "categories.json").write_text(json.dumps({"city": CITIES.split(",")}))


def _fit(folder, rows, options, capsys):
    delimiter = ";" if "--delimiter" in options else ","
    _write(folder, rows, delimiter)
    (folder / "model.json").unlink(missing_ok=True)
    code = main(["fit", "--data", "data.csv", "--target", "label", "--epsilon", "2", *options, *FIRST])
    out, err = capsys.readouterr()
    model = json.loads((folder / "model.json").read_text()) if code == 0 else None
    # 40 rows at ε = 2 is below auto's learnable size: its utility warning is not a privacy warning
    err = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("dpopt fit: utility warning:"))
    return code, out, err, model


def _skeleton(obj):
    if isinstance(obj, dict):
        return {k: _skeleton(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_skeleton(v) for v in obj]
    return "float" if isinstance(obj, float) else obj


def _structure(model, err, undeclared) -> dict:
    model = json.loads(json.dumps(model))
    disclosed = model["privacy"].pop("disclosed")
    warnings = err.splitlines()
    if "labels" in undeclared:  # the label set, K and the model's shape are disclosed
        for key in ("classes_", "coef_", "intercept_"):
            model["fitted"].pop(key)
        model["data"].pop("classes")
        model["privacy"].pop("events")
        assert "label set" in disclosed[0] and "label set" in warnings[0]
        disclosed, warnings = disclosed[1:], warnings[1:]
    if "n" in undeclared:  # --missing drop: n is disclosed
        model["data"].pop("rows")
        assert "number of complete rows" in disclosed[-1] and "--missing drop" in warnings[-1]
        disclosed, warnings = disclosed[:-1], warnings[:-1]
    return {"model": _skeleton(model), "disclosed": disclosed, "warnings": warnings}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_fit_releases_the_same_structure_on_neighbouring_files(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options, refused, undeclared = CONFIGS[name]
    code, out, err, model = _fit(tmp_path, _rows(), options, capsys)
    assert code == 0 and out == "", err
    assert len(err.splitlines()) == len(undeclared)  # --quiet: only the privacy warnings remain
    base = _structure(model, err, undeclared)
    assert model["data"].get("rows", N) == N
    assert ("rows" in model["data"]) == (model["privacy"]["relation"] == "replace_one" or "n" in undeclared)
    for kind in NEIGHBOURS:
        code, out, err, model = _fit(tmp_path, _neighbour(kind), options, capsys)
        if kind in refused:
            assert code == 2 and out == "" and model is None, (kind, err)
            lines = err.splitlines()
            assert len(lines) == 1 and REFUSAL[kind] in lines[0], (kind, err)
            assert not (tmp_path / "model.json").exists()
            continue
        assert code == 0, (kind, err)
        assert _structure(model, err, undeclared) == base, kind


def test_undeclared_column_is_refused_and_no_raw_value_is_written(tmp_path, capsys, monkeypatch):
    """Finding 5: one non-numeric value in an undeclared column used to turn it categorical and
    write every raw value into the model file."""
    monkeypatch.chdir(tmp_path)
    rows = _rows()
    rows[0][1] = "abc"
    options = ["--bounds", "age=0:100", "--categories", f"city={CITIES}", "--classes", "no,yes"]
    code, out, err, model = _fit(tmp_path, rows, options, capsys)
    assert code == 2 and model is None and len(err.splitlines()) == 1
    assert "column(s) ['hours'] have no declared type" in err and "never read from private data" in err
    code, out, err, model = _fit(tmp_path, _rows(), options, capsys)
    assert code == 2 and "['hours'] have no declared type" in err


def test_missing_values_keep_every_row_by_default(tmp_path, capsys, monkeypatch):
    """Finding 2: one empty field used to drop its row (n = 40 -> 39) under a replace-one claim."""
    monkeypatch.chdir(tmp_path)
    code, _, err, model = _fit(tmp_path, _neighbour("missing value"), DECLARED, capsys)
    assert code == 0 and err == "" and model["data"]["rows"] == N and model["privacy"]["disclosed"] == []
    code, _, err, model = _fit(tmp_path, _neighbour("missing value"), [*DECLARED, "--missing", "indicator"], capsys)
    assert code == 0 and model["data"]["rows"] == N
    assert model["feature_names"] == [
        "age", "age:missing", "hours", "hours:missing", "city=Paris", "city=Rome", "city=Oslo", "city:missing",
    ]  # fmt: skip
    code, _, err, model = _fit(tmp_path, _neighbour("missing value"), [*DECLARED, "--missing", "drop"], capsys)
    assert code == 0 and model["data"]["rows"] == N - 1
    assert "--missing drop" in err and "(39)" in model["privacy"]["disclosed"][0]


def test_privacy_warnings_are_never_silenced_by_quiet(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = ["--bounds", "age=0:100", "--numeric", "hours", "--categories", f"city={CITIES}"]
    code, out, err, model = _fit(tmp_path, _rows(), options, capsys)  # FIRST has --quiet
    assert code == 0 and out == ""
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith("dpopt fit: warning: ") for line in lines)
    assert "hours" in lines[0] and "label set" in lines[1]
    assert len(model["privacy"]["disclosed"]) == 2


@pytest.mark.parametrize("method", ["dp-sgd", "auto"])
def test_fit_prints_no_row_count_under_add_remove(method, tmp_path, capsys, monkeypatch):
    """Under add/remove-one (--delta > 0) n differs between neighbours and is not covered by the
    guarantee (the model file leaves it out), yet the progress line and the summary printed it:
    "on 40 rows x 5 features" and "data 40 rows" on D, "39 rows" on D' = D less one record.  The
    output of D and D' must now agree up to released floats (the count N̂, timings)."""
    monkeypatch.chdir(tmp_path)
    options = [*DECLARED, "--delta", "1e-5", "--method", method, "--seed", "0", "--out", "model.json"]
    outputs = []
    for rows in (_rows(), _rows()[1:]):
        _write(tmp_path, rows)
        code = main(["fit", "--data", "data.csv", "--target", "label", "--epsilon", "2", *options])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "rows" not in json.loads((tmp_path / "model.json").read_text())["data"]
        # (a keepalive line, "… still running", comes only when a step outlasts its interval: a loaded machine)
        err = "".join(line for line in err.splitlines(keepends=True) if "… still running (" not in line)
        outputs.append(re.sub(r"\d+\.\d+", "FLOAT", out + err))
    assert outputs[0] == outputs[1]
