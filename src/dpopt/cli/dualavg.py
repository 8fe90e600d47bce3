"""``dpopt dualavg``: private distributed dual averaging (liu2024 Algorithm 1).

Data: ``--shards DIR`` (``shards.json`` + ``node{i}.npz``, see
``dpopt.dualavg.shards``) or ``--synthetic Q --dim D --nodes N`` (each node
generates its own shard from the public seed).  ``--backend mpi`` runs one
node per MPI rank; started outside an MPI job it launches
``mpiexec -n N python -m dpopt.dualavg ...`` itself.  Rank 0 (or the
simulator) prints and, with ``--out``, writes a JSON summary: the solution,
F(x̄) (non-private diagnostic), both noise levels and the privacy record.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import traceback

import numpy as np

from . import FIRST_PROGRESS, Parser, UserError, check_out


def _add_arguments(p) -> None:
    p.add_argument("--backend", choices=("simulate", "mpi"), default="simulate",
                   help="every node in this process, or one MPI rank per node (default %(default)s)")
    p.add_argument("--shards", help="shard directory (shards.json + node{i}.npz)")
    p.add_argument("--synthetic", type=int, metavar="Q", help="records per node of a synthetic task")
    p.add_argument("--dim", type=int, default=20, help="features of the synthetic task (default %(default)s)")
    p.add_argument("--nodes", type=int, help="number of nodes (synthetic data; MPI: ranks)")
    p.add_argument("--data-seed", type=int, default=0, help="public seed of the synthetic shards (default %(default)s)")
    p.add_argument("--epsilon", type=float, help="budget per record holder; omit for the non-private run")
    p.add_argument("--delta", type=float, default=1e-5, help="delta per record holder (default %(default)s)")
    p.add_argument("--noise", choices=("accountant", "theorem1"), default="accountant",
                   help="sigma calibrated by the accountant, or liu2024 Theorem 1's (default %(default)s)")
    p.add_argument("--delta0", type=float, default=0.01, help="Theorem 1's per-step delta (default %(default)s)")
    p.add_argument(
        "--secure-noise",
        action="store_true",
        help="release every message on a grid with exact discrete Gaussian noise from the OS CSPRNG "
        "(floating-point safe; not reproducible by --seed; ~2-13 us of CPU per coordinate)",
    )
    p.add_argument("--lipschitz", type=float, default=1.0,
                   help="clipping bound L of a record's subgradient (default %(default)s)")
    p.add_argument("--regularizer", choices=("l2", "l1", "none"), default="l2", help="(default %(default)s)")
    p.add_argument("--strength", type=float, default=5e-4, help="regularization strength (default %(default)s)")
    p.add_argument("--schedule", choices=("strongly_convex", "convex"),
                   help="step schedule (default: strongly_convex for l2, convex otherwise; liu2024 §5.2-5.3)")
    p.add_argument("--gamma", type=float, help="step constant gamma (default: 20 for l2, 0.01 otherwise)")
    p.add_argument("--iota", type=float, default=0.1,
                   help="fraction of nodes active each round, in (0, 1]; 1 is the all-active baseline "
                   "(default %(default)s)")
    p.add_argument("--activation", choices=("fixed", "poisson"), default="fixed",
                   help="ceil(n*iota) nodes a round, or each node with probability iota (default %(default)s)")
    p.add_argument("--edges", type=int, default=1,
                   help="edges between active nodes sampled each round (default %(default)s)")
    p.add_argument("--graph", choices=("complete", "ring", "grid", "random_regular"), default="complete",
                   help="supergraph the edges are sampled from (default %(default)s)")
    p.add_argument("--rounds", type=int, help="rounds (default: --epochs passes over the records)")
    p.add_argument("--epochs", type=float, default=3.0, help="passes that set --rounds (default %(default)s)")
    p.add_argument("--batch", type=int, default=1, help="records per active node and round (default %(default)s)")
    p.add_argument(
        "--seed", type=int,
        help="fixes the plan and every node's record sampling and noise (reproducible runs; with --backend mpi "
        "every rank then knows every node's noise: omit it for a run private against the other nodes)",
    )
    p.add_argument("--checkpoint-dir", help="folder for checkpoints (holds each node's noise stream: keep it "
                   "as private as the shards)")
    p.add_argument("--checkpoint-every", type=int, help="save a checkpoint every K rounds")
    p.add_argument("--resume", action="store_true",
                   help="continue from --checkpoint-dir without drawing released noise again")
    p.add_argument("--out", help="write the JSON summary here")
    p.add_argument(
        "--report-objective",
        action="store_true",
        help="also print and save F(x_bar), computed from every shard outside the guarantee (non-private)",
    )


def register(sub) -> None:
    p = sub.add_parser("dualavg", help="private distributed dual averaging (simulated or on MPI)", description=__doc__)
    _add_arguments(p)
    p.set_defaults(func=run)


def _in_mpi_job() -> bool:
    return any(k in os.environ for k in ("PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_SIZE"))


def _read_index(directory: str, *, every_file: bool) -> dict:
    """``--shards DIR``'s index with a list of sizes, or a one-line UserError.

    ``every_file``: also require every node's file here (the simulator reads them all; an MPI rank reads its own,
    which may live on its own machine only).
    """
    from ..dualavg.shards import read_index

    if not os.path.isdir(directory):
        raise UserError(f"--shards {directory!r} is not a folder (it needs shards.json and node{{i}}.npz)")
    try:
        index = read_index(directory)
    except (ValueError, OSError) as exc:  # no shards.json, not JSON (JSONDecodeError), not UTF-8, unreadable
        raise UserError(f"--shards {directory!r}: shards.json cannot be read ({exc})") from None
    sizes = index.get("sizes") if isinstance(index, dict) else None
    if not isinstance(sizes, list) or not sizes:
        raise UserError(f"--shards {directory!r}: shards.json needs \"sizes\": a list of each node's record count")
    names = [f"node{i}.npz" for i in range(len(sizes))] if every_file else []
    missing = [name for name in names if not os.path.isfile(os.path.join(directory, name))]
    if missing:
        raise UserError(f"--shards {directory!r}: {len(missing)} shard file(s) missing, first {missing[0]}")
    return index


def _check_synthetic(args) -> None:
    """Refuse a synthetic task whose records cannot be held (float64, ``--dim`` features and a label, on every
    node) before anything runs: --synthetic 1e9 raised numpy's MemoryError after a traceback, --dim 1e9 and
    --nodes 1e8 ran silently until killed."""
    from .._validation import MEMORY_LIMIT

    for option, value in (("--synthetic", args.synthetic), ("--nodes", args.nodes), ("--dim", args.dim)):
        if value < 1:
            raise UserError(f"{option} must be >= 1, got {value}")
    need = 8 * args.nodes * args.synthetic * (args.dim + 1)
    if need > MEMORY_LIMIT:
        raise UserError(
            f"--synthetic {args.synthetic} records on each of --nodes {args.nodes} with --dim {args.dim} features "
            f"need {need / 2**30:.3g} GiB (8 bytes a value); the usable range is up to {MEMORY_LIMIT / 2**30:g} GiB: "
            f"at most {MEMORY_LIMIT // (8 * args.nodes * (args.dim + 1)):,} records a node here"
        )


def _data(args):
    from ..dualavg import shards as sh

    if args.shards:
        index = _read_index(args.shards, every_file=args.backend == "simulate")
        return sh.shard_loader(args.shards), index["sizes"], index.get("dim")
    if args.synthetic is None or args.nodes is None:
        raise UserError("give --shards DIR, or --synthetic Q with --nodes N")
    _check_synthetic(args)
    sizes = [args.synthetic] * args.nodes

    def load(i):
        return sh.synthetic_shard(i, size=args.synthetic, dim=args.dim, seed=args.data_seed)

    return load, sizes, args.dim


def _check_settings(args, sizes) -> None:
    """The options' ranges, named as options, before anything runs: under --backend mpi a rank's error is a
    traceback from every rank and an MPI_Abort (--iota 2 printed 4 tracebacks, exit code 1)."""
    from .._validation import check_int, check_open_unit, check_positive, check_rate
    from ..dualavg.api import checkpoint_path

    try:
        if args.epsilon is not None:
            check_positive("--epsilon", args.epsilon)
            check_open_unit("--delta", args.delta)
        check_rate("--iota", args.iota)
        check_positive("--lipschitz", args.lipschitz)
        check_int("--edges", args.edges)
        check_int("--batch", args.batch, maximum=min(sizes), why="the smallest shard's record count")
        if args.rounds is not None:
            check_int("--rounds", args.rounds)
        else:
            check_positive("--epochs", args.epochs)
        if args.checkpoint_every is not None:
            check_int("--checkpoint-every", args.checkpoint_every)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.resume:
        if args.checkpoint_dir is None:
            raise UserError("--resume needs --checkpoint-dir (the folder of the interrupted run's checkpoints)")
        if not os.path.isdir(args.checkpoint_dir):
            raise UserError(f"--resume: --checkpoint-dir {args.checkpoint_dir!r} is not a folder")
        # (an MPI rank's checkpoint, like its shard, may live on its own machine only: each rank checks its own)
        nodes = range(len(sizes)) if args.backend == "simulate" else ()
        paths = [checkpoint_path(args.checkpoint_dir, i, len(sizes)) for i in nodes]
        missing = [path for path in paths if not os.path.isfile(path)]
        if missing:
            raise UserError(f"--resume: no checkpoint of this run in --checkpoint-dir ({len(missing)} of "
                            f"{len(paths)} node files missing, first {missing[0]})")


#: Set in the ranks' environment by the launcher of ``--backend mpi`` (``_launch``).
LAUNCHED = "DPOPT_DUALAVG_LAUNCHED"


def _launch(args, argv, n: int) -> int:
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if mpiexec is None:
        raise UserError("mpiexec not found: pip install 'dpopt[mpi]' (mpi4py and the MPICH wheel)")
    env = {**os.environ, LAUNCHED: "1"}  # the ranks leave the one "interrupted" line to this process
    with subprocess.Popen([mpiexec, "-n", str(n), sys.executable, "-m", "dpopt.dualavg", *argv], env=env) as job:
        try:
            return job.wait()
        except KeyboardInterrupt:  # a terminal's Ctrl-C reached mpiexec too, which stops the ranks: wait for it
            try:
                job.wait(timeout=5)
            except subprocess.TimeoutExpired:  # only this process was interrupted: pass it on (a kill would
                job.send_signal(signal.SIGINT)  # orphan the ranks)
                job.wait()
            raise


def run(args, argv=None) -> int:
    if args.out:
        check_out("--out", args.out)
    if args.secure_noise and args.epsilon is None:
        raise UserError("--secure-noise needs --epsilon (it is an option of the private run)")
    load, sizes, dim = _data(args)  # dim: every rank checks its own shard against the declared width
    _check_settings(args, sizes)
    if args.backend == "mpi" and not _in_mpi_job():
        return _launch(args, sys.argv[2:] if argv is None else argv, len(sizes))
    from ..dualavg import minimize
    from ..progress import Progress

    comm = None
    if args.backend == "mpi":
        from ..dualavg.mpi import MPIComm

        comm = MPIComm(len(sizes))
    # a run takes seconds to hours (--synthetic 2000 --nodes 20: 21 s, silent): the root keeps a line alive
    progress = Progress("dpopt dualavg", quiet=comm is not None and not comm.is_root, first=FIRST_PROGRESS)
    progress.note(0, 1, f"dual averaging on {len(sizes)} nodes ({args.backend})")
    try:
        with progress.keepalive():
            res = minimize(
                load,
                sizes=sizes,
                dim=dim,
                epsilon=args.epsilon,
                delta=args.delta,
                noise=args.noise,
                delta0=args.delta0,
                lipschitz=args.lipschitz,
                regularizer=args.regularizer,
                strength=args.strength,
                schedule=args.schedule,
                gamma=args.gamma,
                iota=args.iota,
                activation=args.activation,
                edges=args.edges,
                graph=args.graph,
                rounds=args.rounds,
                epochs=args.epochs,
                batch=args.batch,
                seed=args.seed,
                backend=args.backend,
                checkpoint_dir=args.checkpoint_dir,
                checkpoint_every=args.checkpoint_every,
                resume=args.resume,
                comm=comm,
                secure_noise=args.secure_noise,
                report_objective=args.report_objective,
            )
    except Exception as exc:
        from ..privacy import BudgetExceededError

        refused = isinstance(exc, ValueError | TypeError | BudgetExceededError)  # (refused before any release)
        if comm is None:
            if refused:
                raise UserError(str(exc)) from None
            raise
        # a failing rank takes the whole job down: never a silent partial model; a refusal in one line (from
        # each rank that refuses), anything else with its traceback
        detail = f"error: {exc}" if refused else f"failed:\n{traceback.format_exc()}"
        sys.stderr.write(f"dpopt dualavg: rank {comm.rank} {detail}\n")
        sys.stderr.flush()
        comm.abort(2 if refused else 1)
        if refused:
            return 2  # (MPI_Abort may return before the job manager ends this process: no second report)
        raise
    if comm is not None and not comm.is_root:
        return 0
    summary = {
        "method": res.method,
        "x": np.asarray(res.x).tolist(),
        "objective_nonprivate": res.fun if args.report_objective else None,
        "rounds": res.nit,
        "sigma": res.info["sigma"],
        "noise_report": res.info["noise_report"],
        "privacy": res.privacy_record() if res.guarantee != "none" else None,
        "backend": args.backend,
        "secure_noise": args.secure_noise,
    }
    text = json.dumps(summary, indent=2, default=float)
    if args.out:
        tmp = args.out + ".tmp"
        try:
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, args.out)
        except BaseException:  # Ctrl-C mid-write leaves no half-written file
            if os.path.exists(tmp):
                os.remove(tmp)
            raise
    shown = f"F(x_bar) = {res.fun:.6g} (non-private diagnostic) " if args.report_objective else ""
    print(f"{res.method}: {shown}after {res.nit} rounds, sigma = {res.info['sigma']:.6g}", end="")
    from ..result import format_bound  # (a stated guarantee is rounded up, as the other commands print it)

    print("" if res.guarantee == "none" else
          f", (epsilon, delta) = ({format_bound(res.epsilon, 6)}, {format_bound(res.delta, 6)}) per record holder")
    return 0


def main(argv=None) -> int:
    """``python -m dpopt.dualavg``: the same command without the ``dpopt`` prefix."""
    parser = Parser(prog="python -m dpopt.dualavg", description=__doc__)
    _add_arguments(parser)
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    try:
        return run(args, argv)
    except UserError as exc:
        print(f"dpopt dualavg: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C reaches every rank: one line (the launcher's, or else rank 0's), no traceback
        if LAUNCHED not in os.environ and os.environ.get("PMI_RANK", "0") == "0":
            print("dpopt dualavg: interrupted", file=sys.stderr)
        return 130
