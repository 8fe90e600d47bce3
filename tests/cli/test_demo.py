"""End to end: the installed ``dpopt demo`` (the main job) on the embedded Adult data."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

METHODS = ("dp-nag-opt", "dp-blsgd", "dp-sgd", "objpert", "outpert")


def dpopt(*args: str, cwd) -> subprocess.CompletedProcess:
    exe = shutil.which("dpopt")
    command = [exe] if exe else [sys.executable, "-m", "dpopt"]
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=600)


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.tables = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs).get("src", ""))
        self.tables += tag == "table"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The default demo, run once: no arguments besides where to write."""
    cwd = tmp_path_factory.mktemp("demo")
    done = dpopt("demo", "--quiet", cwd=cwd)
    return cwd, done


def test_demo_runs_without_arguments_and_prints_the_table(demo):
    cwd, done = demo
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --quiet
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Private logistic regression on UCI Adult")
    table = {line.split()[0]: line.split()[1:] for line in lines[3:-1]}
    assert set(table) == {"non-private", "majority", *METHODS}
    # Three ε columns of accuracies plus the seconds column.
    for name, cells in table.items():
        accuracies = [float(c) for c in cells[:3]]
        assert all(0.0 <= a <= 1.0 for a in accuracies), (name, cells)
    assert float(table["majority"][0]) == pytest.approx(0.7638, abs=1e-4)  # 12,435 of 16,281 test rows earn ≤ 50K
    assert float(table["non-private"][0]) > 0.82


def test_demo_writes_a_self_contained_report_and_its_data(demo):
    cwd, _ = demo
    out = cwd / "dpopt-demo"
    parser = _Images()
    parser.feed((out / "report.html").read_text())
    assert parser.images and all(src.startswith("data:image/png;base64,") for src in parser.images)
    assert parser.tables >= 3
    assert "ε by PLD" in (out / "report.html").read_text()  # the tighter ε of the (ε, δ) methods
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["method"] for r in rows} == {"non-private", "majority", *METHODS}
    assert len(rows) == 2 + 3 * len(METHODS)
    private = [r for r in rows if r["method"] in METHODS]
    # Every fit spent at most its budget, with the δ its notion needs.
    for r in private:
        assert float(r["epsilon_spent"]) <= float(r["epsilon"]) * (1 + 1e-9)
        assert (float(r["delta"]) > 0) == (r["method"] in ("dp-blsgd", "dp-sgd"))


def test_each_saved_event_log_is_rechecked_by_dpopt_account(demo):
    cwd, _ = demo
    logs = sorted((cwd / "dpopt-demo" / "privacy").glob("*.json"))
    assert len(logs) == 3 * len(METHODS)
    log = next(p for p in logs if p.name.startswith("dp-sgd_eps0.4"))
    record = json.loads(log.read_text())
    done = dpopt("account", "--events", str(log), "--delta", str(record["delta"]), "--json", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert record["notion"] == "pld"  # DP-SGD calibrates by the tightest accountant
    pld = next(r for r in json.loads(done.stdout)["results"] if r["accountant"] == "pld")
    # The same events through the same accountant at a finer grid (1e-4 against the run's 1e-3):
    # never above the record, and within the coarser grid's discretization error of it.
    assert pld["epsilon"] <= record["epsilon"] * (1 + 1e-9)
    assert pld["epsilon"] == pytest.approx(record["epsilon"], rel=5e-2)
    assert pld["epsilon"] <= 0.4 * (1 + 1e-6)
    rdp = next(r for r in json.loads(done.stdout)["results"] if r["accountant"] == "rdp")
    assert pld["epsilon"] < rdp["epsilon"]  # RDP, shown beside it, would have needed more noise


def test_bad_input_is_one_line_and_exit_code_2(tmp_path):
    for args in (("--epsilons", "0"), ("--methods", "no-such-method"), ("--delta", "2")):
        done = dpopt("demo", "--quiet", *args, "--out", str(tmp_path / "x"), cwd=tmp_path)
        assert done.returncode == 2, args
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not (tmp_path / "x").exists()


def test_the_report_rounds_the_pld_epsilon_up():
    """One Gaussian(1) at delta 1e-5 has PLD epsilon 4.37718: the demo report printed 4.377, below it."""
    from dpopt.cli.demo_report import _pld_epsilon

    assert _pld_epsilon({"delta": 1e-5, "events": [{"type": "gaussian", "sigma": 1.0, "sensitivity": 1.0}]}) == "4.378"
