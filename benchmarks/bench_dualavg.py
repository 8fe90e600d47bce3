"""Benchmark: liu2024 Algorithm 1 — simulator rounds per second and MPI time per round.

* Simulator (one process, all nodes on one array axis): rounds per second at
  n = 20 (d = 2000) and n = 1000 (d = 1000), ι ∈ {0.1, 1}, private (σ from the
  accountant), one repetition; the issue's target is 1000 nodes × 1000 rounds
  at d = 1000 in under a minute.
* MPI (one rank per node, ``mpiexec -n 20``, d = 2000): wall time per round
  and the time spent in the communicator's ``exchange`` (point-to-point
  messages along the round's sampled edges), the maximum over ranks of the
  mean per round; goal ≤ 2 ms of communication per round.  Ranks beyond the
  machine's cores share them, which inflates both numbers (stated in the output).

Run:  python benchmarks/bench_dualavg.py [--quick] [--ranks 20] [--skip-mpi]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time


def _synthetic(n: int, q: int, d: int):
    from dpopt.dualavg.shards import synthetic_shard

    return [synthetic_shard(i, size=q, dim=d, seed=1) for i in range(n)]


def simulate(n: int, d: int, rounds: int, iota: float, q: int = 50) -> float:
    from dpopt import dualavg

    shards = _synthetic(n, q, d)
    start = time.perf_counter()
    dualavg.minimize(shards, epsilon=1.0, iota=iota, edges=2, rounds=rounds, seed=0)
    return rounds / (time.perf_counter() - start)


class _TimedComm:
    def __init__(self, inner):
        self.inner, self.spent, self.cpu, self.calls = inner, 0.0, 0.0, 0
        self.n, self.nodes, self.is_root, self.rank = inner.n, inner.nodes, inner.is_root, inner.rank

    def exchange(self, sends, recvs):
        start, cpu = time.perf_counter(), time.process_time()
        out = self.inner.exchange(sends, recvs)
        self.spent += time.perf_counter() - start
        self.cpu += time.process_time() - cpu
        self.calls += 1
        return out

    def __getattr__(self, name):
        return getattr(self.inner, name)


def mpi_worker(d: int, rounds: int, iota: float, q: int) -> None:
    from dpopt import dualavg
    from dpopt.dualavg import api
    from dpopt.dualavg.mpi import MPIComm
    from dpopt.dualavg.shards import synthetic_shard

    inner = MPIComm()
    comm = _TimedComm(inner)
    n = inner.n
    rounds_time = [0.0, 0.0]
    run_block = api.run_block

    def timed_block(*args):  # the rounds alone: no set-up, calibration or final gathers
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return run_block(*args)
        finally:
            rounds_time[0] += time.perf_counter() - start
            rounds_time[1] += time.process_time() - cpu

    api.run_block = timed_block
    inner.barrier()
    start = time.perf_counter()
    dualavg.minimize(
        lambda i: synthetic_shard(i, size=q, dim=d, seed=1), sizes=[q] * n, epsilon=1.0, iota=iota, edges=2,
        rounds=rounds, seed=0, backend="mpi", comm=comm,
    )  # fmt: skip
    wall = time.perf_counter() - start
    per = inner.comm.gather((wall, rounds_time[0], comm.spent, comm.calls, rounds_time[1], comm.cpu), root=0)
    if inner.is_root:
        out = {
            "cpu_per_rank_round_s": sum(p[4] - p[5] for p in per) / len(per) / rounds,
            "exchange_cpu_per_rank_round_s": sum(p[5] for p in per) / len(per) / rounds,
            "exchanges_per_rank_round": sum(p[3] for p in per) / len(per) / rounds,
            "wall_per_round_s": max(p[1] for p in per) / rounds,
            "exchange_per_round_s": max(p[2] for p in per) / rounds,
            "exchange_mean_per_round_s": sum(p[2] for p in per) / len(per) / rounds,
            "compute_per_round_s": max(p[1] - p[2] for p in per) / rounds,
            "job_s": max(p[0] for p in per),
        }
        print(json.dumps(out))


def run_mpi(ranks: int, d: int, rounds: int, iota: float, q: int) -> dict | None:
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if mpiexec is None:
        print("mpiexec not found (pip install 'dpopt[mpi]'); skipping the MPI benchmark")
        return None
    cmd = [mpiexec, "-n", str(ranks), sys.executable, __file__, "--mpi-worker", "--d", str(d), "--rounds", str(rounds),
           "--iota", str(iota), "--q", str(q)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--ranks", type=int, default=20)
    p.add_argument("--skip-mpi", action="store_true")
    p.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--d", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--iota", type=float, default=1.0)
    p.add_argument("--q", type=int, default=50)
    args = p.parse_args()
    from dpopt.experiments._blas import single_threaded_blas

    with single_threaded_blas():
        if args.mpi_worker:
            mpi_worker(args.d, args.rounds, args.iota, args.q)
            return
        rounds_big = 200 if args.quick else 1000
        print(f"cores: {os.cpu_count()}")
        print("simulator (private, edges=2, 1 repetition):")
        for n, d, rounds in [(20, 2000, 1000 if not args.quick else 200), (1000, 1000, rounds_big)]:
            for iota in (0.1, 1.0):
                rate = simulate(n, d, rounds, iota)
                print(
                    f"  n={n:5d} d={d:5d} iota={iota:<4}: {rate:9.1f} rounds/s  "
                    f"({rounds} rounds in {rounds / rate:6.2f} s)"
                )
        if args.skip_mpi:
            return
        for ranks in sorted({4, args.ranks}):
            for iota in (0.1, 1.0):
                res = run_mpi(ranks, args.d, args.rounds, iota, args.q)
                if res is None:
                    return
                print(
                    f"MPI {ranks:2d} ranks d={args.d} iota={iota:<4}: {1e3 * res['wall_per_round_s']:8.3f} ms/round, "
                    f"of which exchange {1e3 * res['exchange_per_round_s']:8.3f} ms/round (max over ranks)"
                    + (
                        f"  [{ranks} ranks on {os.cpu_count()} cores: oversubscribed]"
                        if ranks > (os.cpu_count() or 1)
                        else ""
                    )
                )


if __name__ == "__main__":
    main()
