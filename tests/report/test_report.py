"""Report building blocks: all-or-nothing output folders, the shared layout, and reading a report back."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

from dpopt import report as R

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16  # the signature is all figure_html and read_report look at


class Boom(Exception):
    pass


def test_fresh_folder_appears_only_on_success(tmp_path):
    out = tmp_path / "a" / "b" / "out"
    with R.atomic_output(out) as tmp:
        (tmp / "summary.csv").write_text("x\n1\n")
        assert not out.exists()  # nothing visible while the run writes
    assert sorted(p.name for p in out.iterdir()) == ["summary.csv"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]  # no temporary folder left
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~mask  # a normal folder, not mkdtemp's private one


@pytest.mark.parametrize("error", [Boom, KeyboardInterrupt])
def test_failed_run_leaves_nothing_and_removes_the_parents_it_made(tmp_path, error):
    out = tmp_path / "new" / "deeper" / "out"
    with pytest.raises(error), R.atomic_output(out) as tmp:
        (tmp / "summary.csv").write_text("half")
        raise error()
    assert list(tmp_path.iterdir()) == []


def test_existing_folder_keeps_other_files_and_gets_the_report_last(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "summary.csv").write_text("old")
    moved = []
    real_replace = os.replace
    monkeypatch.setattr(R.files.os, "replace", lambda a, b: (moved.append(os.path.basename(b)), real_replace(a, b)))
    with R.atomic_output(out) as tmp:
        (tmp / "report.html").write_text("<html></html>")
        (tmp / "summary.csv").write_text("new")
    assert moved == ["summary.csv", "report.html"]
    assert (out / "notes.txt").read_text() == "mine" and (out / "summary.csv").read_text() == "new"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report.html", "summary.csv"]
    with pytest.raises(Boom), R.atomic_output(out) as tmp:
        (tmp / "summary.csv").write_text("half")
        raise Boom()
    assert (out / "summary.csv").read_text() == "new"  # an interrupted rerun leaves the old results intact
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "report.html", "summary.csv"]


def test_bad_output_paths_are_refused_before_anything_runs(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(ValueError, match="out: .* exists and is not a folder"):
        R.check_output_dir(afile)
    with pytest.raises(ValueError, match="is not a folder, so"):
        R.check_output_dir(afile / "sub")
    with pytest.raises(ValueError, match="out"):
        R.check_output_dir("")
    with pytest.raises(ValueError, match="exists and is not a folder"), R.atomic_output(afile):
        pass
    assert R.check_output_dir(tmp_path / "x" / "y") == tmp_path / "x" / "y"
    assert not (tmp_path / "x").exists()  # checking creates nothing


def test_privacy_descriptions_name_the_accountant_and_relation():
    record = {"epsilon": 0.5, "delta": 1e-6, "notion": "rdp", "relation": "add_remove", "guarantee": "exact",
              "notes": "a caveat", "events": [{}, {}, {}]}
    one = R.privacy_html(record)
    assert "(ε = 0.5, δ = 1e-06)" in one and "RDPAccountant" in one and "add/remove one record" in one
    assert "Privacy events charged</th><td>3" in one and "a caveat" in one
    pure = R.privacy_html({**record, "notion": "pure", "delta": 0.0, "relation": "replace_one"})
    assert "pure, δ = 0" in pure and "PureDPAccountant" in pure and "replace one record" in pure
    table = R.privacy_table_html({"a": record, "b": {**record, "notion": "zcdp", "relation": "||b|| <= 1"},
                                  "ref": {"notion": "none", "guarantee": "none"}})
    assert "ZCDPAccountant" in table and "||b|| &lt;= 1" in table and "a: a caveat" in table
    assert "non-private reference" in table
    assert R.describe_notion("none").startswith("none")
    # every accountant dpopt registers is described (a PLD ledger's report named no accountant); other tests
    # register their own accountants in the same process, so the set is dpopt's, not the registry's
    assert {"pure", "approx", "rdp", "zcdp", "pld"} <= set(R.NOTIONS)
    assert "PLDAccountant" in R.describe_notion("pld")


def test_a_stated_guarantee_is_rounded_up_never_down():
    """A ledger spending epsilon 4.224010678886078 (20 Poisson-subsampled Gaussian steps) was reported as
    epsilon = 4.224, a guarantee the run does not have; its 4 significant digits are now rounded up."""
    from dpopt.result import format_bound

    record = {"epsilon": 4.224010678886078, "delta": 1.23456e-6, "notion": "approx", "relation": "add_remove",
              "guarantee": "exact", "events": []}
    assert "(ε = 4.225, δ = 1.235e-06)" in R.privacy_html(record)
    assert "<td>4.225</td><td>1.235e-06</td>" in R.privacy_table_html({"m": record})
    assert "(ε = 0.5, δ = 1e-06)" in R.privacy_html({**record, "epsilon": 0.5, "delta": 1e-6})  # exact: as is
    assert "ε = the cell&#x27;s ε-" in R.privacy_html({**record, "epsilon": "the cell's ε", "delta": 0.0})
    rounded = [format_bound(x, 3) for x in (1.23456e-6, 9.99951, 1e-5, 123456.7)]
    assert rounded == ["1.24e-06", "10", "1e-05", "1.24e+05"]


@dataclass(frozen=True)
class Cfg:
    runs: int = 10
    seed: int = 0


def test_reproduce_command_names_the_preset_or_says_custom():
    quick, full = Cfg(runs=2), Cfg()
    assert R.reproduce_command("p", Cfg(runs=2, seed=4), quick=quick, full=full, seed=4) == (
        "dpopt reproduce p --quick --seed 4"
    )
    assert R.reproduce_command("p", Cfg(), quick=quick, full=full, seed=0) == "dpopt reproduce p --seed 0"
    assert "custom" in R.reproduce_command("p", Cfg(runs=3), quick=quick, full=full, seed=0)


def test_experiment_report_round_trip(tmp_path):
    (tmp_path / "summary.csv").write_text("a\n")
    (tmp_path / "fig.png").write_bytes(PNG)
    path = R.write_experiment_report(
        tmp_path / "report.html", "T <1>",
        run=R.run_section(command="dpopt reproduce p", config={"seed": 3, "alpha": 0.25}, seconds=1.5),
        verdict=R.Section("Verdict", R.table_html([{"claim": "x", "holds": True}])),
        figures=R.figures_section({"A figure": tmp_path / "fig.png"}),
        summary=R.Section("Summary table", R.table_html([{"m": 1, "v": float("nan")}])),
        data=R.Section("Data", R.list_html(["n = 3"])),
        privacy=R.privacy_section({"m": {"epsilon": 1.0, "notion": "pure", "relation": "replace_one",
                                         "guarantee": "exact"}}),
        files={"summary.csv": "the numbers"},
    )  # fmt: skip
    outline = R.read_report(path)
    assert outline.title == "T <1>"
    assert outline.headings == ["What was run", "Verdict", "Figures", "Summary table", "Data",
                                "Privacy guarantee", "Files"]  # fmt: skip
    assert outline.figures == [("A figure", PNG)]
    verdict = next(t for t in outline.tables if t[0] == ["claim", "holds"])
    assert verdict[1] == ["x", "yes"]
    assert ["1", "—"] in next(t for t in outline.tables if t[0] == ["m", "v"])
    files = next(t for t in outline.tables if t[0][0] == "file")
    assert [row[0] for row in files[1:]] == ["fig.png", "summary.csv"] and files[2][2] == "the numbers"
    assert "Computed in 1.5 s" in outline.text and "dpopt reproduce p" in outline.text


def test_read_report_rejects_malformed_html_and_linked_figures(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><table><tr><td>x</td></table></body></html>")
    with pytest.raises(ValueError, match="malformed"):
        R.read_report(bad)
    bad.write_text("<html><body><section>")
    with pytest.raises(ValueError, match="never closed"):
        R.read_report(bad)
    bad.write_text('<html><body><img alt="f" src="fig.png"></body></html>')
    with pytest.raises(ValueError, match="not an embedded PNG"):
        R.read_report(bad)
