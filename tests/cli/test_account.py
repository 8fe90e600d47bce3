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


def test_an_approx_ledger_is_re_checked_in_epsilon_and_delta(capsys, tmp_path):
    """A ledger of the approx accountant (a tuning run's fits as ApproxDP, a pure release) states its composed
    (epsilon, delta): the log re-derives both; a file stating less delta than its events add up to is refused."""
    from dpopt.privacy import Ledger, budget_for

    ledger = Ledger(2.0, 1e-5, "approx", relation="replace_one")
    ledger.charge(ev.ApproxDP(0.5, 3e-6))
    ledger.charge(ev.ApproxDP(0.25, 1e-6))
    ledger.child(1.0, accountant="pure").charge(ev.Laplace(4.0))
    path = tmp_path / "ledger.json"
    path.write_text(ledger.to_json())
    rows = results(capsys, "--events", str(path))
    delta = budget_for(3e-6, 1e-6)  # the exact sum rounded up: 4.000000000000001e-06
    assert rows["approx"] == {"accountant": "approx", "applies": True, "epsilon": 1.0, "delta": delta}
    assert not rows["pure"]["applies"] and "accountant='approx'" in rows["rdp"]["reason"]
    assert main(["account", "--events", str(path)]) == 0
    assert capsys.readouterr().out.startswith("stated     epsilon = 1 (approx, delta = 4e-06): the event log gives 1")
    data = json.loads(ledger.to_json())
    data["spent"]["delta"] = 3e-6
    path.write_text(json.dumps(data))
    assert main(["account", "--events", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "states delta=3e-06 but its event log gives delta=4e-06" in err
    assert "approx" not in results(capsys, "--mechanism", "laplace", "--scale", "1")  # no ApproxDP: no approx row


def test_an_approx_record_stating_a_hair_less_epsilon_is_refused(capsys, tmp_path):
    """Basic composition's sums are exact and rounded up the same way when stated and when re-derived, so the
    re-check has no slack: a file stating the next float below its epsilon is refused (it passed within 1e-9)."""
    import math

    from dpopt.privacy import Ledger

    ledger = Ledger(2.0, 1e-5, "approx", relation="replace_one")
    ledger.charge(ev.ApproxDP(0.5, 3e-6))
    ledger.charge(ev.ApproxDP(0.25, 1e-6))
    data = json.loads(ledger.to_json())
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(data))
    assert main(["account", "--events", str(path)]) == 0
    capsys.readouterr()
    data["spent"]["epsilon"] = math.nextafter(0.75, 0.0)
    path.write_text(json.dumps(data))
    assert main(["account", "--events", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "but its event log gives epsilon=0.75 under approx" in err


def _ledger_file(tmp_path, edit):
    from dpopt.privacy import Ledger

    ledger = Ledger(5.0, 1e-5, "rdp")
    for _ in range(3):
        ledger.charge(ev.Subsampled(ev.Gaussian(1.0), 0.1))
    data = json.loads(ledger.to_json())
    edit(data)
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(data))
    return str(path)


@pytest.mark.parametrize("field,value", [("epsilon", float("nan")), ("delta", float("nan")), ("epsilon", True)])
def test_a_stated_guarantee_that_is_nan_is_refused(capsys, tmp_path, field, value):
    """A stated epsilon of NaN passed the re-check (no log gives more than NaN) and was printed as stated."""
    path = _ledger_file(tmp_path, lambda data: data["spent"].__setitem__(field, value))
    assert main(["account", "--events", path]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "states a guarantee this dpopt cannot check" in err


def test_a_stated_relation_the_log_s_subsampling_does_not_hold_under_is_refused(capsys, tmp_path):
    """A ledger file edited to replace_one kept its Poisson-subsampled log (amplified under add/remove only):
    the re-check accepted it, where Ledger.from_dict refuses it."""
    assert main(["account", "--events", _ledger_file(tmp_path, lambda data: None)]) == 0
    capsys.readouterr()
    path = _ledger_file(tmp_path, lambda data: data.__setitem__("relation", "replace_one"))
    assert main(["account", "--events", path]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "under the 'replace_one' relation" in err


def test_the_table_rounds_epsilon_up(capsys):
    """RDP epsilon 4.224010678886... was printed as 4.22401, below the guarantee the accountant states."""
    assert main(["account", "--mechanism", "gaussian", "--rate", "0.1", "--sigma", "1", "--steps", "20"]) == 0
    rdp = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("rdp "))
    assert rdp.split()[1:] == ["4.22402", "1e-05"]


@pytest.mark.parametrize("depth", [400, 100_000])
def test_a_log_nested_too_deeply_is_one_line(capsys, tmp_path, depth):
    """Composed events nested 400 deep, or JSON arrays 100,000 deep, ended in a RecursionError traceback."""
    inner, outer = '{"type": "pure_dp", "epsilon": 0.1}', '{"type": "composed", "events": ['
    path = tmp_path / "log.json"
    path.write_text("[" * depth + "]" * depth if depth > 1000 else outer * depth + inner + "]}" * depth)
    assert main(["account", "--events", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "too deeply" in err
    path.write_text(outer * 50 + inner + "]}" * 50)  # 50 deep is read and accounted
    assert main(["account", "--events", str(path)]) == 0


def test_a_pld_ledger_is_re_checked_on_its_own_grid(capsys, tmp_path):
    """A PLD ledger at discretization 2e-5 states epsilon 3.3731507343 for 20 Subsampled(Gaussian(2), 0.3): the
    re-check on the default grid (1e-4, a hair looser: 3.3731508214) called its guarantee false."""
    from dpopt.privacy import Ledger
    from dpopt.privacy.pld import PLDAccountant

    ledger = Ledger(5.0, 1e-5, PLDAccountant(2e-5))
    ledger.charge(ev.SelfComposed(ev.Subsampled(ev.Gaussian(2.0), 0.3), 20))
    path = tmp_path / "ledger.json"
    path.write_text(ledger.to_json())
    assert main(["account", "--events", str(path)]) == 0
    assert capsys.readouterr().out.startswith("stated     epsilon = 3.37315 (pld, delta = 1e-05)")


def test_an_rdp_ledger_is_re_checked_on_its_own_orders(capsys, tmp_path):
    """An RDP ledger on the order 7.15 alone states epsilon 2.93303 for 3000 Subsampled(Gaussian(1.1), 0.01): the
    re-check on the default orders (best 7.2: 2.93314) called its guarantee false."""
    from dpopt.privacy import Ledger

    ledger = Ledger(5.0, 1e-5, "rdp", orders=[7.15])
    ledger.charge(ev.SelfComposed(ev.Subsampled(ev.Gaussian(1.1), 0.01), 3000))
    path = tmp_path / "ledger.json"
    path.write_text(ledger.to_json())
    assert main(["account", "--events", str(path)]) == 0
    assert capsys.readouterr().out.startswith("stated     epsilon = 2.93303 (rdp, delta = 1e-05)")


def test_a_refusal_prints_the_two_epsilons_apart(capsys, tmp_path):
    """A ledger whose stated epsilon was edited 1e-7 below its log's was refused as 'states epsilon=4.22401 but its
    event log gives epsilon=4.22401': the message showed no difference."""
    path = _ledger_file(tmp_path, lambda data: data["spent"].__setitem__("epsilon", data["spent"]["epsilon"] - 1e-7))
    assert main(["account", "--events", path]) == 2
    err = capsys.readouterr().err
    stated, derived = (err.split(f"{word} epsilon=")[1].split()[0] for word in ("states", "gives"))
    assert stated != derived and float(stated) < float(derived)


def test_an_approx_log_whose_deltas_reach_one_states_nothing(capsys, tmp_path):
    """Five ApproxDP(0.1, 0.3) add up to delta 1.5: the approx row printed (0.500001, 1.5) as a guarantee."""
    path = tmp_path / "log.json"
    path.write_text(ev.SelfComposed(ev.ApproxDP(0.1, 0.3), 5).to_json())
    rows = results(capsys, "--events", str(path))
    assert not rows["approx"]["applies"] and "add up to 1.5 >= 1" in rows["approx"]["reason"]
    path.write_text(ev.SelfComposed(ev.ApproxDP(0.1, 0.1), 5).to_json())  # 0.5: stated, and printed as 0.5
    assert main(["account", "--events", str(path)]) == 0
    approx = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("approx "))
    assert approx.split() == ["approx", "0.5", "0.5"]
