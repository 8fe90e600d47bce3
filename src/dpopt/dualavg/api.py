"""``dpopt.dualavg.minimize``: Algorithm 1 of liu2024 on the simulator or on MPI."""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence

import numpy as np

from .. import _validation as val
from ..privacy import Ledger
from ..privacy.calibration import run_accountant
from ..privacy.mechanisms import check_ledger
from ..result import DPResult
from . import accounting
from .algorithm import Config, NodeState, charge_rounds_again, check_charges, local_objective_sum, run_block
from .comm import SimulatedComm
from .graphs import supergraph
from .problem import LOSSES, check_shard
from .prox import Regularizer
from .schedules import Schedule

__all__ = ["minimize", "DEFAULT_STEPS", "checkpoint_path"]

#: liu2024 §5.2 (ℓ2: a_t = t, γ_t = 20) and §5.3 (ℓ1: a_t = 1, γ_t = 0.01√t).
DEFAULT_STEPS = {"l2": ("strongly_convex", 20.0), "l1": ("convex", 0.01), "none": ("convex", 0.01)}

_NOTES = (
    "Guarantee per record holder under replace-one: a record lives on one node, so it is exposed only by "
    "that node's releases (parallel composition); each node's ledger composes its own rounds, and the run's "
    "record is the worst node's. A node's round: active with probability p (activation public), then b of its "
    "q records without replacement, clipped to L, Gaussian noise (Wang-Balle-Kasiviswanathan 2019 Thm 9)."
)

_HIDDEN = (
    "CONDITIONAL: accounted as in liu2024 Lemma 4.2, with node activation hidden from the adversary (a record "
    "is used with probability iota*b/q); this does not hold if an observer can see which nodes send."
)


def _shard_source(shards, sizes):
    if callable(shards):
        if sizes is None:
            raise ValueError("sizes (the public q_i of every node) is required when shards is a loader")
        return shards, [val.check_int("sizes", q) for q in sizes]
    if not isinstance(shards, Sequence) or len(shards) < 2:
        raise TypeError("shards must be a sequence of at least two (X, y) pairs, or a loader node -> (X, y)")
    checked = [check_shard(X, y, i) for i, (X, y) in enumerate(shards)]
    return (lambda i: checked[i]), [len(y) for _, y in checked]


def checkpoint_path(directory, node: int, n: int) -> str:
    """The file holding ``node``'s state in a run of ``n`` nodes (one per rank, written every checkpoint)."""
    return os.path.join(directory, f"node_state_{node}of{n}.npz")


def minimize(
    shards,
    *,
    epsilon: float | None = None,
    delta: float = 1e-5,
    noise: str = "accountant",
    sigma: float | None = None,
    delta0: float = 0.01,
    lipschitz: float = 1.0,
    regularizer: str = "l2",
    strength: float = 5e-4,
    box: tuple | None = None,
    schedule: str | None = None,
    gamma: float | None = None,
    iota: float = 0.1,
    activation: str = "fixed",
    edges: int = 1,
    graph="complete",
    degree: int = 3,
    rounds: int | None = None,
    epochs: float = 3.0,
    batch: int = 1,
    activation_visible: bool = True,
    loss: str = "hinge",
    repetitions: int | None = None,
    seed=None,
    ledger: Ledger | None = None,
    backend: str = "simulate",
    sizes: Sequence[int] | None = None,
    dim: int | None = None,
    checkpoint_dir: str | None = None,
    checkpoint_every: int | None = None,
    resume: bool = False,
    record_every: int | None = None,
    comm=None,
    accountant=None,
    secure_noise: bool = False,
    report_objective: bool | None = None,
) -> DPResult:
    """Private distributed dual averaging (liu2024 Algorithm 1) over n nodes.

    ``shards``: a sequence of (X_i, y_i) per node (y in {−1, +1}), or a
    loader ``node -> (X_i, y_i)`` with the public ``sizes`` q_i (the MPI back
    end calls it for its own node only); every shard must have the same number of
    features (``dim`` if given: on MPI, the one width each rank can check).  Privacy: ``epsilon`` (and ``delta``)
    set a budget per record holder and σ is calibrated by the RDP accountant
    (``noise="accountant"``) or taken from Theorem 1 (``noise="theorem1"``,
    with per-step ``delta0``); ``sigma`` ≥ 0 fixes σ directly; neither (or σ = 0) →
    the non-private run.  ``ledger``, if given, must be under the replace-one
    relation (the accounting's: shard sizes public); another relation is refused.
    ``iota = 1`` is the all-active baseline [19].
    ``schedule``/``gamma`` default to §5.2 (ℓ2) and §5.3 (ℓ1).
    ``activation_visible=False`` accounts as the paper does (activation hidden
    from the adversary, amplification by ι·b/q); the result's guarantee is then
    ``"conditional"`` on that assumption (see :func:`.accounting.round_event`).
    ``rounds`` defaults to ``epochs`` passes: ⌈epochs·Σq_i/(⌈nι⌉·b)⌉.
    ``repetitions=R`` runs R independent runs at once (``x`` of shape (R, d));
    the privacy record describes one run (for experiments); releasing all R
    runs of the same shards spends their R-fold composition, stated in ``privacy_all``.
    ``backend="mpi"`` runs one node per rank (``mpiexec -n n``); with
    ``checkpoint_dir`` the state (with the node's noise stream: keep it as
    private as the shard) is saved every ``checkpoint_every`` rounds and
    ``resume=True`` continues from it without re-drawing any released noise:
    the rounds after the checkpoint that the interrupted run may have released
    are replayed only with the settings the checkpoint was written with
    (otherwise ``ValueError``: the same noise with another σ or at another
    round would give the subgradients away), and with ``secure_noise``, whose
    noise cannot be replayed, they are charged a second time; a given
    ``ledger`` is charged for the rounds the resumed call releases.
    ``accountant`` (``"rdp"``, ``"pld"``, ``"auto"``/None: the tightest that
    applies, :func:`~dpopt.privacy.calibration.run_accountant` — PLD for the
    paper's hidden activation, whose rounds are subsampled Gaussians with an
    exact PLD; RDP for visible activation) calibrates σ and keeps the ledgers.
    ``record_every=k`` records F(x̄) every k rounds in ``trajectory`` (rows
    ``[round, F per repetition]``) and x̄ itself in ``info["recorded_x"]``
    (non-private diagnostics: F reads every shard; on MPI every rank's exact
    local loss is summed across ranks, so every rank sees it).
    ``report_objective``: compute F(x̄) for ``fun`` (a non-private diagnostic;
    NaN otherwise).  None (default): only when this process holds every node —
    on MPI it would send each rank's exact local loss to the other ranks.
    ``seed`` fixes the public plan and every node's record sampling and noise
    (reproducible; on MPI every rank then knows every node's noise, so a seeded
    MPI run is not private against the other nodes); without it each holder
    draws its own sampling and noise entropy, which never leaves it.
    ``secure_noise=True`` releases every message ζ_i of eq. (5) (Algorithm 1
    line 7) on a power-of-two grid as g·(round(ĝ_i/g) + Z), Z exact discrete
    Gaussian from the OS CSPRNG (:mod:`dpopt.privacy.secure`; Mironov 2012's
    low-order-bit leak of floating-point noise is closed); each round is charged
    as the same activation/subsampling of ``DiscreteGaussian`` with the grid's
    integer sensitivity, and σ is calibrated for that charged event
    (:func:`.accounting.round_event`).  It needs a private run, cannot be
    seeded (``seed`` still fixes the public plan and the record sampling) and
    costs ~2–13 µs of CPU per released coordinate (``benchmarks/bench_dualavg.py --secure``).
    """
    backend = val.check_choice("backend", backend, ("simulate", "mpi"))
    if ledger is not None:  # the record's relation: replace-one, the shard sizes q_i public (accounting module)
        check_ledger(ledger, "replace_one", why=" (liu2024: a record is replaced, the shard sizes q_i are public)")
    if sigma is not None:  # 0: the non-private run; a negative or NaN sigma is refused, not run without noise
        sigma = val.check_nonnegative("sigma", sigma)
    load, sizes = _shard_source(shards, sizes)
    n = len(sizes)
    if comm is None:
        if backend == "mpi":
            from .mpi import MPIComm

            comm = MPIComm(n)
        else:
            comm = SimulatedComm(n)
    local_shards = [check_shard(*load(int(i)), int(i)) for i in comm.nodes]
    for i, (_, y) in zip(comm.nodes.tolist(), local_shards, strict=True):
        if len(y) != sizes[i]:  # the accountant's q_i: enforced, never trusted (and no row count in the message)
            raise ValueError(f"node {i}: its shard does not have the declared sizes[{i}] = {sizes[i]} rows")
    d = local_shards[0][0].shape[1] if dim is None else val.check_int("dim", dim)
    for i, (X, _) in zip(comm.nodes.tolist(), local_shards, strict=True):
        if X.shape[1] != d:  # (public structure) refused here, not after the first rounds are charged
            raise ValueError(f"node {i}: its shard has {X.shape[1]} features, " + (
                f"not dim={d}" if dim is not None else f"node {int(comm.nodes[0])}'s has {d}"))
    iota = val.check_rate("iota", iota)
    activation = val.check_choice("activation", activation, ("fixed", "poisson"))
    edges = val.check_int("edges", edges)
    lipschitz = val.check_positive("lipschitz", lipschitz)
    batch = val.check_int("batch", batch)
    if batch > min(sizes):
        raise ValueError(f"batch must be <= the smallest shard ({min(sizes)}), got {batch}")
    reg = Regularizer(regularizer, strength, *(box if box is not None else (-np.inf, np.inf)))
    kind, default_gamma = DEFAULT_STEPS[reg.kind]
    sched = Schedule(schedule or kind, default_gamma if gamma is None else gamma)
    R = 1 if repetitions is None else val.check_int("repetitions", repetitions)
    loss_obj = LOSSES[val.check_choice("loss", loss, tuple(LOSSES))]()
    m = int(math.ceil(n * iota - 1e-12))
    if rounds is None:
        rounds = int(math.ceil(val.check_positive("epochs", epochs) * sum(sizes) / (m * batch)))
    rounds = val.check_int("rounds", rounds)
    g = supergraph(
        graph, n, degree=degree, seed=0 if seed is None else int(np.random.SeedSequence(seed).entropy % 2**32)
    )

    # ---- noise level and the privacy record ------------------------------------------------
    p = m / n if activation == "fixed" else iota
    if not isinstance(activation_visible, bool):
        raise TypeError("activation_visible must be True or False")
    kw = dict(lipschitz=lipschitz, activation_rate=p, batch=batch, activation_visible=activation_visible)
    if not isinstance(secure_noise, bool):
        raise TypeError("secure_noise must be True or False")
    report = None
    if epsilon is not None and sigma is not None:
        raise ValueError("give epsilon (calibrated noise) or sigma (fixed noise), not both")
    private = epsilon is not None or (sigma is not None and sigma > 0)
    if secure_noise and not private:
        raise ValueError("secure_noise=True needs a private run: give epsilon or sigma > 0")
    if secure_noise:
        kw["secure_size"] = d  # the charged round: the discrete event of a d-value release
    if private:
        delta = val.check_open_unit("delta", delta)
        q_min = min(sizes)
        acc = run_accountant(accountant, ledger,
                             event=accounting.run_event(1.0, steps=rounds, local_samples=q_min, **kw))
        kw["accountant"] = acc
        sig_acc = (
            accounting.accountant_sigma(epsilon, delta, steps=rounds, local_samples=q_min, **kw) if epsilon else None
        )
        sig_thm = None
        if epsilon is not None and epsilon <= 1.0:
            sig_thm = accounting.theorem1_sigma(
                epsilon, delta0, lipschitz=lipschitz, local_samples=q_min, steps=rounds, activation=p, check_steps=False
            )
        if sigma is None:
            noise = val.check_choice("noise", noise, ("accountant", "theorem1"))
            if noise == "theorem1" and sig_thm is None:
                raise ValueError("noise='theorem1' needs epsilon in (0, 1] (Theorem 1's range)")
            sigma = sig_thm if noise == "theorem1" else sig_acc
        sigma = val.check_positive("sigma", sigma)
        thm_ok = epsilon is not None and epsilon <= 1.0 and rounds >= 5 * q_min**2 * epsilon**2 / (4 * p * p)
        report = accounting.NoiseReport(
            sigma_theorem1=sig_thm,
            sigma_accountant=sig_acc if sig_acc is not None else float("nan"),
            epsilon_theorem1_sigma=None
            if sig_thm is None
            else accounting.epsilon_of(sig_thm, delta, steps=rounds, local_samples=q_min, **kw),
            epsilon_accountant_sigma=accounting.epsilon_of(
                sigma if sig_acc is None else sig_acc, delta, steps=rounds, local_samples=q_min, **kw
            ),
            delta=delta,
            delta0=delta0,
            theorem1_delta=None
            if sig_thm is None
            else accounting.theorem1_delta(epsilon, delta0, local_samples=q_min, steps=rounds, activation=p),
            note="Theorem 1's condition T >= 5q^2eps^2/(4iota^2) "
            + ("holds" if thm_ok else "does NOT hold for this run (its sigma is then not covered by the theorem)"),
        )
        budget = epsilon if epsilon is not None else report.epsilon_accountant_sigma
        parent = ledger if ledger is not None else Ledger(budget, delta, acc.copy(), relation="replace_one")
        node_budget = (parent.epsilon, parent.delta)
        kw.pop("accountant")
        kw.pop("secure_size", None)  # the blocks take the Gaussian round and charge its discrete event
        round_events = [accounting.round_event(sigma, local_samples=q, **kw) for q in sizes]
    else:
        sigma = 0.0
        parent, node_budget, round_events = None, None, [None] * n
    cfg = Config(
        n=n,
        d=d,
        rounds=rounds,
        iota=iota,
        activation=activation,
        edges=edges,
        graph=g,
        schedule=sched,
        regularizer=reg,
        lipschitz=lipschitz,
        batch=batch,
        sigma=float(sigma),
        repetitions=R,
        loss=loss_obj,
        sizes=tuple(sizes),
        secure_noise=secure_noise,
    )

    every = rounds if checkpoint_every is None else val.check_int("checkpoint_every", checkpoint_every)
    rec = None if record_every is None else val.check_int("record_every", record_every)

    # ---- state: fresh or resumed ---------------------------------------------------------
    ckpt = None if checkpoint_dir is None else checkpoint_path(checkpoint_dir, int(comm.nodes[0]), n)
    replay = 0  # rounds a secure resume releases again with fresh noise
    if resume:
        if ckpt is None or not os.path.exists(ckpt):
            raise ValueError(f"resume=True needs an existing checkpoint in checkpoint_dir, missing {ckpt}")
        with np.load(ckpt) as data:
            state = NodeState.from_arrays(data)
            saved = json.loads(str(data["settings"])) if "settings" in data else {}
            pending = int(data["pending"]) if "pending" in data else rounds
        if ledger is not None:  # the caller's ledger pays for what this call releases (the checkpoint's is a copy)
            state.parent = ledger
        ts = comm.allsum(np.array([state.t, 1]))
        if ts[0] != state.t * ts[1]:
            raise RuntimeError("the ranks' checkpoints are from different rounds; refusing to resume")
        if pending > state.t:  # rounds the writing run may have released past its checkpoint: replayed
            if not saved:  # a checkpoint from before settings were recorded: nothing to compare them with
                raise ValueError(
                    f"resume=True replays rounds {state.t + 1}..{pending}, which the interrupted run may have "
                    "released, but this checkpoint records no settings to replay them with: start a new run"
                )
            changed = sorted(k for k, v in _settings(cfg).items() if saved.get(k) != v)
            if changed:
                raise ValueError(
                    f"resume=True replays rounds {state.t + 1}..{pending}, which the interrupted run may have "
                    f"released: give the settings the checkpoint was written with ({', '.join(changed)} differ)"
                )
            if secure_noise:  # fresh noise on released rounds: charged again (below), before anything is released
                replay = pending - state.t
    else:
        entropy = comm.broadcast(np.random.SeedSequence(seed).entropy)  # the public plan's, on every holder
        own = entropy if seed is not None else np.random.SeedSequence().entropy  # sampling and noise: never sent
        node_ledgers = (
            [Ledger(*node_budget, acc.copy(), relation="replace_one") for _ in comm.nodes]
            if private
            else [None] * len(comm.nodes)
        )
        state = NodeState.fresh(cfg, comm.nodes, entropy, node_ledgers, parent, own)
    recorded = []  # x̄ at each recorded round (kept in memory only: a resumed run records from its restart)
    stops = sorted(
        {min(k, rounds) for k in range(every, rounds + every, every)}
        | (set(range(rec, rounds + 1, rec)) if rec else set())
        | {rounds}
    )
    if private:  # the whole run (the replayed rounds, then every block) paid for before its first release
        ends = [stop for stop in stops if stop > state.t]
        check_charges(cfg, comm.nodes, state, round_events,
                      [replay] * bool(replay) + np.diff([state.t, *ends]).tolist())
    if replay:
        charge_rounds_again(cfg, comm.nodes, state, round_events, replay)
    for stop in stops:
        if stop <= state.t:
            continue
        state = run_block(cfg, comm, local_shards, state, stop, round_events)
        if rec and stop % rec == 0:
            points = comm.allgather(state.averages(cfg)).mean(axis=1)
            state.trajectory.append([stop, *_objective(cfg, comm, local_shards, state, points).tolist()])
            recorded.append(points if repetitions is not None else points[0])
        if ckpt is not None and (stop % every == 0 or stop == rounds):
            os.makedirs(checkpoint_dir, exist_ok=True)
            settings = json.dumps(_settings(cfg))
            pending = min((stop // every + 1) * every, rounds)  # the next checkpoint: released before it
            tmp = ckpt + ".tmp.npz"
            try:
                np.savez(tmp, **state.to_arrays(), settings=np.array(settings), pending=np.array(pending))
                os.replace(tmp, ckpt)
            except BaseException:  # Ctrl-C mid-write: the last whole checkpoint stays, no half-written file
                if os.path.exists(tmp):
                    os.remove(tmp)
                raise
            comm.barrier()

    x_nodes = comm.allgather(state.averages(cfg))  # (R, n, d)
    x_bar = x_nodes.mean(axis=1)
    if report_objective is None:
        report_objective = len(comm.nodes) == n
    fun = _objective(cfg, comm, local_shards, state, x_bar) if report_objective else np.full(R, np.nan)
    node_eps = [] if not private else [led.spent().epsilon for led in state.node_ledgers]
    node_eps = comm.allgather(np.array(node_eps, dtype=float)[None, :])[0] if private else np.array([])
    method = "non-private" if not private else ("dda-all-active" if iota == 1.0 else "dda")
    info = {
        "sigma": float(sigma),
        "rounds": rounds,
        "active_per_round": m,
        "activation": activation,
        "activation_rate": p,
        "edges": edges,
        "graph": g.name,
        "schedule": sched.kind,
        "gamma": sched.gamma,
        "x_nodes": x_nodes if R > 1 else x_nodes[0],
        "node_epsilons": node_eps,
        "noise_report": None if report is None else report.to_dict(),
        "node_ledgers": state.node_ledgers if private else [],
        "backend": backend,
        "recorded_x": recorded,
        "secure_noise": secure_noise,
    }
    traj = np.array(state.trajectory) if state.trajectory else None
    x_out = x_bar if repetitions is not None else x_bar[0]
    f_out = fun if repetitions is not None else float(fun[0])
    if not private:
        from ..privacy import PrivacySpent

        return DPResult(
            x=x_out,
            fun=f_out,
            method=method,
            privacy=PrivacySpent(math.inf, 0.0, "none"),
            relation="replace_one",
            guarantee="none",
            nit=rounds,
            trajectory=traj,
            info=info,
            notes="non-private run (sigma = 0)",
        )
    return DPResult.from_ledger(
        state.parent,
        repetitions=R,
        x=x_out,
        fun=f_out,
        method=method,
        guarantee="exact" if activation_visible else "conditional",
        nit=rounds,
        trajectory=traj,
        info=info,
        notes=_NOTES if activation_visible else f"{_NOTES} {_HIDDEN}",
    )


def _settings(cfg: Config) -> dict:
    """What fixes a round's messages (everything in ``cfg`` but the number of rounds), as text."""
    g = cfg.graph
    out = {f.name: repr(getattr(cfg, f.name)) for f in dataclasses.fields(cfg) if f.name not in ("rounds", "graph")}
    out["graph"] = repr((g.name, None if g.complete else g.edges.tolist()))
    out["loss"] = type(cfg.loss).__name__
    return out


def _objective(cfg, comm, local_shards, state, points=None) -> np.ndarray:
    """F(x̄) with x̄ = mean_i x̃_i (the paper's evaluation point; non-private diagnostic), (R,)."""
    if points is None:
        points = comm.allgather(state.averages(cfg)).mean(axis=1)
    return comm.allsum(local_objective_sum(cfg, local_shards, points)) / cfg.n + cfg.regularizer.value(points)
