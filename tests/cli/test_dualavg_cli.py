import json
import os
import shutil
import subprocess
import sys

import pytest

from dpopt.cli import main

ARGS = ["--synthetic", "20", "--nodes", "3", "--dim", "4", "--rounds", "30", "--epsilon", "1", "--iota", "1",
        "--seed", "4"]  # fmt: skip


def test_dualavg_command_writes_a_private_summary(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["dualavg", *ARGS, "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["method"] == "dda-all-active" and summary["objective_nonprivate"] is None
    assert summary["privacy"]["relation"] == "replace_one"
    assert "non-private" not in capsys.readouterr().out
    assert main(["dualavg", *ARGS, "--out", str(out), "--report-objective"]) == 0
    assert json.loads(out.read_text())["objective_nonprivate"] > 0


def test_dualavg_command_states_its_epsilon_rounded_up(tmp_path, capsys):
    """Theorem 1's noise over 31 rounds spends epsilon 0.72605537 (not the budget): it was printed 0.726055,
    a guarantee the run does not have."""
    out = tmp_path / "r.json"
    assert main(["dualavg", *ARGS, "--noise", "theorem1", "--rounds", "31", "--out", str(out)]) == 0
    spent = json.loads(out.read_text())["privacy"]["epsilon"]
    printed = capsys.readouterr().out.split("(epsilon, delta) = (")[1].split(",")[0]
    assert float(printed) >= spent and printed == "0.726056"


def test_dualavg_command_needs_data():
    assert main(["dualavg", "--epsilon", "1"]) == 2


def test_dualavg_command_secure_noise(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["dualavg", *ARGS, "--rounds", "5", "--secure-noise", "--out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["secure_noise"] and summary["privacy"]["epsilon"] <= 1.0
    text = json.dumps(summary["privacy"]["events"])
    assert '"discrete_gaussian"' in text and '"gaussian"' not in text
    capsys.readouterr()
    assert main(["dualavg", "--synthetic", "20", "--nodes", "3", "--secure-noise"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    assert main(["dualavg", *ARGS, "--secure-noise", "--iota", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "iota" in err


def test_dpopt_dualavg_backend_mpi_launches_mpiexec(tmp_path):
    pytest.importorskip("mpi4py", reason="the MPI back end needs the dpopt[mpi] extra")
    if shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")) is None:
        pytest.skip("mpiexec (MPICH wheel of dpopt[mpi]) is not on PATH")
    out, sim = tmp_path / "mpi.json", tmp_path / "sim.json"
    cmd = [sys.executable, "-m", "dpopt", "dualavg", "--backend", "mpi", *ARGS, "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert main(["dualavg", *ARGS, "--out", str(sim)]) == 0
    assert json.loads(out.read_text())["x"] == json.loads(sim.read_text())["x"]


@pytest.mark.slow  # mpiexec and two ranks start, run until the root's first progress line, and stop: 4-8 s
def test_ctrl_c_of_an_mpi_run_is_one_line_and_leaves_no_summary(tmp_path):
    # every rank printed its KeyboardInterrupt traceback, and the launcher killed mpiexec (orphaning the ranks)
    import signal

    pytest.importorskip("mpi4py", reason="the MPI back end needs the dpopt[mpi] extra")
    if shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")) is None:
        pytest.skip("mpiexec (MPICH wheel of dpopt[mpi]) is not on PATH")
    cmd = [sys.executable, "-m", "dpopt", "dualavg", "--backend", "mpi", "--synthetic", "200", "--nodes", "2",
           "--epsilon", "1", "--rounds", "10000000", "--out", "mpi.json"]
    job = subprocess.Popen(cmd, cwd=tmp_path, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                           start_new_session=True)  # its own group, as a terminal's foreground job
    assert "still running" in job.stderr.readline()  # the ranks are running (the root's first progress line)
    os.killpg(job.pid, signal.SIGINT)  # what Ctrl-C sends: every process of the group
    err = job.stderr.read()
    assert job.wait(timeout=60) == 130
    assert [line for line in err.splitlines() if "still running" not in line] == ["dpopt dualavg: interrupted"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # mpiexec and three ranks: 3-6 s
def test_a_rank_that_refuses_its_shard_says_so_in_one_line(tmp_path):
    # each refusing rank wrote 'rank i failed:' and its traceback, then a second traceback after MPI_Abort
    import numpy as np

    from dpopt.dualavg.shards import write_shards

    pytest.importorskip("mpi4py", reason="the MPI back end needs the dpopt[mpi] extra")
    if shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")) is None:
        pytest.skip("mpiexec (MPICH wheel of dpopt[mpi]) is not on PATH")
    write_shards(tmp_path / "sh", [(np.full((10, 3), 0.1), np.ones(10))] * 3)
    np.savez(tmp_path / "sh" / "node1.npz", X=np.full((10, 4), 0.1), y=np.ones(10))  # not the declared 3 features
    cmd = [sys.executable, "-m", "dpopt", "dualavg", "--backend", "mpi", "--shards", "sh", "--epsilon", "1",
           "--rounds", "5", "--out", "s.json"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    ours = [line for line in proc.stderr.splitlines() if not line.startswith("Abort(2)")]  # (MPICH's own line)
    assert ours == ["dpopt dualavg: rank 1 error: node 1: its shard has 4 features, not dim=3"]
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        (None, "is not a folder"),  # the folder itself is missing
        ("", "shards.json cannot be read"),  # no shards.json
        ("not json", "shards.json cannot be read"),
        ('{"dim": 3}', 'shards.json needs "sizes"'),
        ('{"sizes": [5, 5]}', "2 shard file(s) missing, first node0.npz"),
    ],
)
def test_dualavg_command_refuses_a_broken_shard_folder_in_one_line(tmp_path, capsys, index, expected):
    shards = tmp_path / "shards"
    if index is not None:
        shards.mkdir()
        if index:
            (shards / "shards.json").write_text(index)
    assert main(["dualavg", "--shards", str(shards), "--epsilon", "1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith("dpopt dualavg: error: --shards ")
    assert expected in err


def test_dualavg_command_checks_every_shard_against_the_declared_dim(tmp_path, capsys):
    """shards.json's dim reaches minimize (an MPI rank sees its own shard only): a shard of another width is
    refused in one line before anything runs, not after rounds were charged."""
    import numpy as np

    from dpopt.dualavg.shards import write_shards

    rng = np.random.default_rng(0)
    folder = write_shards(tmp_path / "shards", [(rng.normal(size=(5, 3)), np.ones(5)) for _ in range(2)])
    index = json.loads((folder / "shards.json").read_text())
    (folder / "shards.json").write_text(json.dumps({**index, "dim": 4}))
    assert main(["dualavg", "--shards", str(folder), "--epsilon", "1", "--rounds", "3"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "dpopt dualavg: error: node 0: its shard has 3 features, not dim=4\n"


def test_every_dualavg_option_is_explained_with_the_default_the_code_uses():
    # dpopt dualavg --help listed --iota, --edges, --rounds, --gamma, ... with no word and no default
    import argparse

    from dpopt.cli import build_parser
    from dpopt.dualavg.api import DEFAULT_STEPS

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices["dualavg"]
    options = {a.dest: a for a in parser._actions if a.dest != "help"}
    assert [name for name, a in options.items() if not a.help] == []  # (tests/cli/test_help.py: the defaults)
    kinds = {reg: kind for reg, (kind, _) in DEFAULT_STEPS.items()}
    gammas = {reg: gamma for reg, (_, gamma) in DEFAULT_STEPS.items()}
    assert kinds == {"l2": "strongly_convex", "l1": "convex", "none": "convex"}
    assert "strongly_convex for l2, convex otherwise" in options["schedule"].help
    assert gammas == {"l2": 20.0, "l1": 0.01, "none": 0.01} and "20 for l2, 0.01 otherwise" in options["gamma"].help


def test_dualavg_command_refuses_in_one_line_what_the_budget_cannot_pay(capsys):
    """Theorem 1's sigma at 3 rounds gives epsilon = 5.07 under the accountant, more than --epsilon 1: the run is
    refused before anything is released, and the command said so in a BudgetExceededError traceback; at --epsilon
    1e-300 Theorem 1's formula divided by (q epsilon)^2 = 0 (ZeroDivisionError traceback)."""
    base = ["dualavg", "--synthetic", "20", "--nodes", "3", "--dim", "3", "--rounds", "3", "--iota", "1"]
    assert main([*base, "--epsilon", "1", "--noise", "theorem1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "nothing was released" in err
    assert main([*base, "--epsilon", "1e-300", "--noise", "theorem1"]) == 0
    assert "sigma = 1.12765e+300" in capsys.readouterr().out


@pytest.mark.parametrize("extra, message", [
    (["--iota", "2"], "--iota must be in (0, 1], got 2.0"),
    (["--batch", "100"], "--batch must be in [1, 50] (the smallest shard's record count), got 100"),
    (["--edges", "0"], "--edges must be >= 1, got 0"),
    (["--rounds", "0"], "--rounds must be >= 1, got 0"),
    (["--delta", "2"], "--delta must be in (0, 1), got 2.0"),
    (["--resume"], "--resume needs --checkpoint-dir (the folder of the interrupted run's checkpoints)"),
    (["--resume", "--checkpoint-dir", "nock"], "--resume: --checkpoint-dir 'nock' is not a folder"),
])
@pytest.mark.parametrize("backend", ["simulate", "mpi"])
def test_bad_settings_are_one_line_before_any_rank_starts(tmp_path, monkeypatch, capsys, backend, extra, message):
    # under --backend mpi each was a traceback from every rank, MPICH's abort lines and exit code 1
    monkeypatch.chdir(tmp_path)
    argv = ["dualavg", "--synthetic", "50", "--nodes", "3", "--epsilon", "1", "--backend", backend, *extra]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"dpopt dualavg: error: {message}"] and captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_resume_without_this_runs_checkpoints_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ck").mkdir()
    argv = ["dualavg", "--synthetic", "50", "--nodes", "3", "--epsilon", "1", "--resume", "--checkpoint-dir", "ck"]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines() == [
        "dpopt dualavg: error: --resume: no checkpoint of this run in --checkpoint-dir (3 of 3 node files missing, "
        "first ck/node_state_0of3.npz)"]


def test_ctrl_c_while_a_checkpoint_or_the_summary_is_written_leaves_no_half_file(tmp_path, monkeypatch, capsys):
    # np.savez's "<checkpoint>.tmp.npz" and the summary's "<out>.tmp" stayed behind when Ctrl-C came mid-write
    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(os, "replace", interrupted)  # the last step of both writes
    base = ["dualavg", "--synthetic", "20", "--nodes", "3", "--epsilon", "1", "--rounds", "4", "--out", "s.json"]
    assert main([*base, "--checkpoint-dir", "ck", "--checkpoint-every", "2"]) == 130  # at the first checkpoint
    assert list((tmp_path / "ck").iterdir()) == []
    assert main(base) == 130  # at the summary
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]
    assert capsys.readouterr().err.splitlines()[-1] == "dpopt dualavg: interrupted"
