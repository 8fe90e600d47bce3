"""The MPI back end: a real 4-rank job against the simulator, resume, and a failing rank."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from dpopt import dualavg
from dpopt.dualavg.shards import write_shards

from .conftest import make_shards

MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
pytest.importorskip("mpi4py", reason="the MPI back end needs the dpopt[mpi] extra")

ARGS = ["--epsilon", "1", "--iota", "0.5", "--edges", "2", "--rounds", "120", "--seed", "5",
        "--strength", "0.01", "--gamma", "1"]  # fmt: skip
KW = dict(epsilon=1.0, iota=0.5, edges=2, rounds=120, seed=5, strength=0.01, gamma=1.0)


def _mpi(args, n=4, timeout=120):
    if MPIEXEC is None:
        pytest.skip("mpiexec (MPICH wheel of dpopt[mpi]) is not on PATH")
    cmd = [MPIEXEC, "-n", str(n), sys.executable, "-m", "dpopt.dualavg", "--backend", "mpi", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_four_ranks_match_the_simulator(tmp_path):
    shards = make_shards(n=4, q=30, d=6, seed=2)
    write_shards(tmp_path / "data", shards)
    out = tmp_path / "mpi.json"
    proc = _mpi(["--shards", str(tmp_path / "data"), "--out", str(out), *ARGS])
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    sim = dualavg.minimize(shards, **KW)
    assert np.max(np.abs(np.array(got["x"]) - sim.x)) <= 1e-12
    assert got["privacy"]["epsilon"] == pytest.approx(sim.epsilon, rel=1e-12)
    assert got["noise_report"]["sigma_accountant"] == pytest.approx(sim.info["sigma"], rel=1e-12)


def test_mpi_resume_and_a_failing_rank_fails_the_job(tmp_path):
    shards = make_shards(n=4, q=30, d=6, seed=2)
    data = write_shards(tmp_path / "data", shards)
    ck = tmp_path / "ck"
    full = _mpi(["--shards", str(data), "--out", str(tmp_path / "a.json"), "--checkpoint-dir", str(ck),
                 "--checkpoint-every", "40", *ARGS])  # fmt: skip
    assert full.returncode == 0, full.stderr
    resumed = _mpi(["--shards", str(data), "--out", str(tmp_path / "b.json"), "--checkpoint-dir", str(ck),
                    "--checkpoint-every", "40", "--resume", *ARGS])  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    a, b = (json.loads((tmp_path / f).read_text()) for f in ("a.json", "b.json"))
    assert a["x"] == b["x"] and a["privacy"]["epsilon"] == b["privacy"]["epsilon"]
    os.remove(data / "node2.npz")  # rank 2 cannot read its shard
    bad = _mpi(["--shards", str(data), "--out", str(tmp_path / "c.json"), *ARGS])
    assert bad.returncode != 0
    assert "rank 2 failed" in bad.stderr
    assert not (tmp_path / "c.json").exists()


def test_mpi_secure_noise_charges_the_discrete_event(tmp_path):
    """Secure noise is not seeded, so no iterate comparison: the run's record is the simulator's discrete one."""
    shards = make_shards(n=2, q=20, d=3, seed=2)
    write_shards(tmp_path / "data", shards)
    out = tmp_path / "mpi.json"
    args = ["--epsilon", "1", "--iota", "1", "--rounds", "20", "--seed", "5", "--secure-noise"]
    proc = _mpi(["--shards", str(tmp_path / "data"), "--out", str(out), *args], n=2)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(out.read_text())
    sim = dualavg.minimize(shards, epsilon=1.0, iota=1.0, rounds=20, seed=5, secure_noise=True)
    assert got["secure_noise"] and np.all(np.isfinite(got["x"]))
    assert got["privacy"]["events"] == sim.privacy_record()["events"]
    text = json.dumps(got["privacy"]["events"])
    assert '"discrete_gaussian"' in text and '"gaussian"' not in text
    assert got["privacy"]["epsilon"] == pytest.approx(sim.epsilon, rel=1e-12) and sim.epsilon <= 1.0
