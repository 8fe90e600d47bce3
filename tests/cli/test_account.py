"""``dpopt account`` shows the PLD accountant's ε beside RDP, and says what produced it."""

from __future__ import annotations

import json

import pytest

from dpopt.cli import main
from dpopt.privacy import events as ev


def results(capsys, *args):
    assert main(["account", *args, "--json"]) == 0
    return {row["accountant"]: row for row in json.loads(capsys.readouterr().out)["results"]}


def test_pld_is_tighter_than_rdp_for_dp_sgd(capsys):
    rows = results(capsys, "--mechanism", "gaussian", "--rate", "0.04", "--sigma", "1.5", "--steps", "2250")
    pld, rdp = rows["pld"], rows["rdp"]
    assert pld["applies"] and rdp["applies"]
    assert pld["epsilon_optimistic"] <= pld["epsilon"] < 0.95 * rdp["epsilon"]
    assert pld["epsilon"] == pytest.approx(6.77, abs=0.01)  # Opacus's reference case
    assert "2250 event(s) by PLD" in pld["produced_by"]


def test_event_log_with_a_sparse_vector_part_names_the_rdp_fallback(capsys, tmp_path):
    log = tmp_path / "log.json"
    events = [ev.SelfComposed(ev.Subsampled(ev.Gaussian(1.0), 0.01), 200), ev.AboveThreshold.gaussian(2.0, 4.0)]
    log.write_text(json.dumps([e.to_dict() for e in events]))
    rows = results(capsys, "--events", str(log), "--delta", "1e-6")
    assert rows["pld"]["epsilon"] <= rows["rdp"]["epsilon"]
    assert "RDP fallback (AboveThreshold)" in rows["pld"]["produced_by"]
    assert main(["account", "--events", str(log)]) == 0
    assert "pld: PLD accountant" in capsys.readouterr().out


@pytest.mark.parametrize("content", [None, b"\xff\xfe\x00z"], ids=["folder", "not UTF-8"])
def test_an_events_path_that_is_a_folder_or_binary_is_one_line(tmp_path, capsys, content):
    path = tmp_path / "log.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    assert main(["account", "--events", str(path)]) == 2
    err = capsys.readouterr().err
    expected = "a JSON file, got the directory" if content is None else "is not UTF-8 text"
    assert len(err.splitlines()) == 1 and err.startswith("dpopt account: error: ") and expected in err
