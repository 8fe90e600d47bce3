"""Benchmark: liu2024 Algorithm 1 — simulator rounds per second and MPI time per round.

* Simulator (one process, all nodes on one array axis; private, σ from the
  accountant, 2 edges per round, one repetition): the issue's target run
  (n = 1000 nodes, d = 1000, all active ι = 1 as in [19], 1000 rounds, goal
  under a minute), then rounds per second over a small grid of n and d, so
  that the growth with each is visible.  Wall and CPU seconds are both shown:
  on a shared machine the wall time also counts other people's processes.
* MPI (one rank per node, ``mpiexec -n 4`` and ``-n 20``, d = 2000, ι = 1):
  per round and rank, the CPU time of the rounds outside the communicator
  (compute), and the wall and CPU time inside its ``exchange`` (point-to-point
  messages between the two ends of each sampled edge; a rank off every edge
  makes no call); the transfer alone (median exchange of d doubles each way
  between two ranks that are both ready); wall time per round.  The goal is
  ≤ 2 ms of communication per round.  With more ranks than cores, time in
  ``exchange`` is mostly waiting for the partner to be scheduled and finish
  its own compute, so the CPU bound ranks × compute / cores is printed next
  to it; ``busy`` is MPICH's own polling wait, ``nap`` the back end's default.

* Secure noise (``--secure``): CPU time per simulator round at n = 20 nodes,
  d = 100 and 1,000, float Gaussian messages against ``secure_noise=True``
  (exact discrete Gaussian from the OS CSPRNG, ``secure.discrete_gaussian_vector``), with ι = 0.1
  (2 senders per round) and ι = 1 (20 senders), and the cost per released
  coordinate.

Run:  python benchmarks/bench_dualavg.py [--quick] [--ranks 20] [--skip-mpi] [--secure]
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


def simulate(n: int, d: int, rounds: int, iota: float, q: int = 50) -> tuple[float, float]:
    """(wall, CPU) seconds of ``rounds`` rounds, set-up and accounting included."""
    from dpopt import dualavg

    shards = _synthetic(n, q, d)
    start, cpu = time.perf_counter(), time.process_time()
    dualavg.minimize(shards, epsilon=1.0, iota=iota, edges=2, rounds=rounds, seed=0)
    return time.perf_counter() - start, time.process_time() - cpu


def _rounds_cpu(shards, rounds: int, iota: float, secure_noise: bool) -> float:
    """CPU seconds inside ``run_block`` (the rounds alone: no set-up, calibration or final gathers)."""
    from dpopt import dualavg
    from dpopt.dualavg import api

    spent, run_block = [0.0], api.run_block

    def timed_block(*args):
        cpu = time.process_time()
        try:
            return run_block(*args)
        finally:
            spent[0] += time.process_time() - cpu

    api.run_block = timed_block
    try:
        dualavg.minimize(shards, epsilon=1.0, iota=iota, edges=2, rounds=rounds, seed=0, secure_noise=secure_noise)
    finally:
        api.run_block = run_block
    return spent[0]


def _secure(quick: bool) -> None:
    """CPU ms per simulator round, float vs secure noise, n = 20 (the rounds alone)."""
    n = 20
    print("secure noise, simulator, n = 20 nodes, q = 50 (CPU ms per round inside run_block)")
    print(f"  {'d':>5} {'iota':>5} {'senders':>8} {'float':>9} {'secure':>9} {'ratio':>7} {'µs/coord':>9}")
    for d in (100, 1000):
        shards = _synthetic(n, 50, d)
        for iota in (0.1, 1.0):
            senders = int(round(n * iota))
            rounds = max(2, (40 if quick else 400) // senders)
            flt = _rounds_cpu(shards, 20 * rounds, iota, False) / (20 * rounds)
            sec = _rounds_cpu(shards, rounds, iota, True) / rounds
            extra = (sec - flt) / (senders * d)
            print(f"  {d:5d} {iota:5.1f} {senders:8d} {1e3 * flt:9.3f} {1e3 * sec:9.1f} {sec / flt:7.0f} "
                  f"{1e6 * extra:9.1f}")


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


def _transfer_time(inner, d: int, repeats: int = 300) -> float | None:
    """Median seconds of one exchange of d doubles each way between ranks 0 and 1, both ready, others idle.

    What a round's communication costs when nobody waits for a partner to
    compute: the two ranks meet at a barrier of their own before each exchange
    (through the back end's ``exchange``), while the other ranks sleep.
    """
    import numpy as np

    pair = inner.comm.Split(0 if inner.rank < 2 else 1, inner.rank)
    times = []
    if inner.rank < 2:
        peer = 1 - inner.rank
        x = np.ones(d)
        for _ in range(repeats):
            pair.Barrier()
            start = time.perf_counter()
            inner.exchange([(peer, (0, inner.rank), x)], [(peer, (0, peer), (d,))])
            times.append(time.perf_counter() - start)
    done = inner.comm.Ibarrier()
    while not done.Test():  # the others wait without polling, so the two ranks have the cores
        time.sleep(1e-3)
    pair.Free()
    return float(np.median(times)) if times else None


def mpi_worker(d: int, rounds: int, iota: float, q: int, wait: str) -> None:
    from dpopt import dualavg
    from dpopt.dualavg import api
    from dpopt.dualavg.mpi import MPIComm
    from dpopt.dualavg.shards import synthetic_shard

    if wait == "busy":  # MPICH's own wait (polls, yielding every MPIR_CVAR_POLLS_BEFORE_YIELD polls)
        MPIComm._wait = lambda self, requests: self._MPI.Request.Waitall(requests)
    inner = MPIComm()
    comm = _TimedComm(inner)
    n = inner.n
    spent = [0.0, 0.0]
    run_block = api.run_block

    def timed_block(*args):  # the rounds alone: no set-up, calibration or final gathers
        start, cpu = time.perf_counter(), time.process_time()
        try:
            return run_block(*args)
        finally:
            spent[0] += time.perf_counter() - start
            spent[1] += time.process_time() - cpu

    api.run_block = timed_block
    inner.barrier()
    dualavg.minimize(
        lambda i: synthetic_shard(i, size=q, dim=d, seed=1), sizes=[q] * n, epsilon=1.0, iota=iota, edges=2,
        rounds=rounds, seed=0, backend="mpi", comm=comm,
    )  # fmt: skip
    transfer = _transfer_time(inner, d)
    per = inner.comm.gather((spent[0], spent[1], comm.spent, comm.cpu, comm.calls), root=0)
    if inner.is_root:
        k = len(per) * rounds
        print(
            json.dumps(
                {
                    "wall_per_round_s": max(p[0] for p in per) / rounds,
                    "compute_cpu_s": sum(p[1] - p[3] for p in per) / k,
                    "exchange_wall_s": sum(p[2] for p in per) / k,
                    "exchange_wall_max_s": max(p[2] for p in per) / rounds,
                    "exchange_cpu_s": sum(p[3] for p in per) / k,
                    "exchanges_per_round": sum(p[4] for p in per) / k,
                    "transfer_s": transfer,
                }
            )
        )


def run_mpi(ranks: int, d: int, rounds: int, iota: float, q: int, wait: str) -> dict | None:
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if mpiexec is None:
        print("mpiexec not found (pip install 'dpopt[mpi]'); skipping the MPI benchmark")
        return None
    cmd = [mpiexec, "-n", str(ranks), sys.executable, __file__, "--mpi-worker", "--d", str(d), "--rounds", str(rounds),
           "--iota", str(iota), "--q", str(q), "--wait", wait]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _simulator(quick: bool) -> None:
    print("simulator (private, edges=2, 1 repetition); wall and CPU seconds")
    rounds = 200 if quick else 1000
    wall, cpu = simulate(1000, 1000, rounds, 1.0)
    print(
        f"  target: n=1000 d=1000 iota=1, {rounds} rounds: {wall:6.1f} s wall, {cpu:6.1f} s CPU "
        f"(goal for 1000 rounds: < 60 s)"
    )
    head = f"{'n':>5} {'d':>5} {'iota':>5} {'rounds':>6} {'rounds/s (wall)':>16} {'rounds/s (CPU)':>15}"
    print(f"  {head} {'ms CPU/round':>13}")
    grid = [(20, 100), (20, 1000), (20, 2000), (100, 1000), (1000, 100), (1000, 1000)]
    for n, d in grid:
        for iota in (1.0, 0.1) if (n, d) in {(20, 2000), (1000, 1000)} else (1.0,):
            r = int(min(2000, max(100, 4e7 / (n * d))) / (5 if quick else 1))
            wall, cpu = simulate(n, d, r, iota)
            print(f"  {n:5d} {d:5d} {iota:5.1f} {r:6d} {r / wall:16.1f} {r / cpu:15.1f} {1e3 * cpu / r:13.3f}")


def _mpi(args) -> None:
    cores = os.cpu_count() or 1
    print(f"MPI, d={args.d}, iota=1, {args.rounds} rounds; ms per round and rank (mean over ranks unless marked)")
    print(
        f"  {'ranks':>5} {'wait':>5} {'compute CPU':>11} {'exch. wall':>10} {'(max rank)':>10} {'exch. CPU':>9} "
        f"{'transfer':>8} {'wall/round':>10} {'ranks·CPU/cores':>15}"
    )
    for ranks in sorted({4, args.ranks}):
        for wait in ("nap", "busy"):
            res = run_mpi(ranks, args.d, args.rounds, 1.0, args.q, wait)
            if res is None:
                return
            bound = ranks * (res["compute_cpu_s"] + res["exchange_cpu_s"]) / min(ranks, cores)
            print(
                f"  {ranks:5d} {wait:>5} {1e3 * res['compute_cpu_s']:11.3f} {1e3 * res['exchange_wall_s']:10.3f} "
                f"{1e3 * res['exchange_wall_max_s']:10.3f} {1e3 * res['exchange_cpu_s']:9.3f} "
                f"{1e3 * res['transfer_s']:8.3f} {1e3 * res['wall_per_round_s']:10.3f} {1e3 * bound:15.3f}"
            )
    print(f"  ({cores} cores; transfer: one exchange of {args.d} doubles each way between two ready ranks, median)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--ranks", type=int, default=20)
    p.add_argument("--skip-mpi", action="store_true")
    p.add_argument("--skip-simulator", action="store_true")
    p.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--wait", choices=("nap", "busy"), default="nap", help=argparse.SUPPRESS)
    p.add_argument("--d", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=400)
    p.add_argument("--iota", type=float, default=1.0)
    p.add_argument("--q", type=int, default=50)
    p.add_argument("--secure", action="store_true", help="only the float-vs-secure-noise table")
    args = p.parse_args()
    from dpopt.experiments._blas import single_threaded_blas

    with single_threaded_blas():
        if args.mpi_worker:
            mpi_worker(args.d, args.rounds, args.iota, args.q, args.wait)
            return
        load = os.getloadavg()[0]
        print(f"cores: {os.cpu_count()}, load average at start: {load:.1f}")
        if args.secure:
            _secure(args.quick)
            return
        if not args.skip_simulator:
            _simulator(args.quick)
        if not args.skip_mpi:
            _mpi(args)


if __name__ == "__main__":
    main()
