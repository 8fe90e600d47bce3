"""Algorithm 1 of liu2024 (differentially private distributed dual averaging), once, for any back end.

The same code runs every node block: the simulator's block is all n nodes,
an MPI rank's block is its one node.  Arrays carry repetitions on axis 0 and
the block's nodes on axis 1.  Per round t (Algorithm 1, lines 4–13):

1. the public plan — active set N(t) (⌈nι⌉ uniformly without replacement, or
   Poisson with rate ι) and the sampled edges of W(t) — is drawn from a
   public stream that every holder replays identically;
2. each active node draws b of its q_i records (b = 1: line 6) from its own
   sampling stream, clips their subgradients to L and releases
   ζ_i = ĝ_i + ν_i through its prepaid Gaussian block (line 7, noise from its
   own noise stream, charged to its own ledger); with ``secure_noise`` the
   block releases ζ_i = g·(round(ĝ_i/g) + Z_i) instead, Z_i exact discrete
   Gaussian from the OS CSPRNG (so nothing leaks through the low-order bits of
   a floating-point ν_i; no noise stream is read and the run cannot be replayed);
3. the messages z_j + a_t ζ_j are exchanged along the sampled edges only
   (line 8) and mixed with Metropolis weights: eq. (5), summed in node-id order;
4. active nodes take the prox step (6) with ι·A_{t+1}·h + γ_{t+1}·d; the
   weighted running average x̃_i = A_T⁻¹ Σ_t a_t x_i(t) is kept lazily.

Random streams: ``SeedSequence(entropy, spawn_key=(0,))`` is the public plan
of all repetitions, its entropy shared by every holder; ``(1, i)`` and
``(2, i)`` of the holder's *own* entropy are node i's record-sampling and noise
streams.  Without a seed the own entropy is drawn by the holder and never sent
(a holder that knew another's could replay its records and subtract its
noise); with a seed it is the seed's, so a node draws the same numbers
whichever process holds it and the simulator and an MPI run give the same
iterates (and every rank knows every node's noise).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..privacy import Ledger
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from ..privacy.mechanisms import PrepaidGaussianRounds
from ..privacy.sampling import FixedSizeSampler
from .graphs import Supergraph, _decode_pairs, sample_edges
from .problem import clipped_mean_subgradient, local_loss_sum
from .prox import Regularizer
from .schedules import Schedule

__all__ = ["Config", "NodeState", "run_block", "charge_rounds_again"]


@dataclass(frozen=True)
class Config:
    n: int
    d: int
    rounds: int
    iota: float
    activation: str  # "fixed" | "poisson"
    edges: int
    graph: Supergraph
    schedule: Schedule
    regularizer: Regularizer
    lipschitz: float
    batch: int
    sigma: float  # 0 → non-private
    repetitions: int
    loss: object
    sizes: tuple  # q_i of every node (public)
    secure_noise: bool = False  # messages on a grid with exact discrete Gaussian noise (OS CSPRNG)

    @property
    def active_count(self) -> int:
        return int(np.ceil(self.n * self.iota - 1e-12))

    @property
    def activation_rate(self) -> float:
        """A node's marginal probability of being active in a round (what (6) scales h by)."""
        return self.active_count / self.n if self.activation == "fixed" else self.iota


def _stream(entropy: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))


@dataclass
class NodeState:
    """Everything a holder needs to continue a run after round ``t`` (and to checkpoint it)."""

    t: int
    z: np.ndarray
    x: np.ndarray
    acc: np.ndarray
    since: np.ndarray
    public: list
    sampling: list
    noise: list
    node_ledgers: list
    parent: Ledger | None
    trajectory: list = field(default_factory=list)

    @classmethod
    def fresh(cls, cfg: Config, nodes: np.ndarray, entropy: int, node_ledgers, parent, own_entropy: int) -> NodeState:
        R, b, d = cfg.repetitions, len(nodes), cfg.d
        x0 = cfg.regularizer.argmin(
            np.zeros((R, b, d)), cfg.activation_rate * float(cfg.schedule.A(1)), float(cfg.schedule.gamma_at(1))
        )
        return cls(
            t=0,
            z=np.zeros((R, b, d)),
            x=x0,
            acc=np.zeros((R, b, d)),
            since=np.ones((R, b), dtype=np.int64),
            public=[_stream(entropy, 0)],
            sampling=[_stream(own_entropy, 1, int(i)) for i in nodes],
            noise=[_stream(own_entropy, 2, int(i)) for i in nodes],
            node_ledgers=list(node_ledgers),
            parent=parent,
        )

    # -- checkpoints ----------------------------------------------------------
    def to_arrays(self) -> dict:
        meta = {
            "t": self.t,
            "public": [g.bit_generator.state for g in self.public],
            "sampling": [g.bit_generator.state for g in self.sampling],
            "noise": [g.bit_generator.state for g in self.noise],
            "node_ledgers": [led.to_json() for led in self.node_ledgers],
            "parent": None if self.parent is None else self.parent.to_json(),
            "trajectory": self.trajectory,
        }
        return {"z": self.z, "x": self.x, "acc": self.acc, "since": self.since, "meta": np.array(json.dumps(meta))}

    @classmethod
    def from_arrays(cls, data) -> NodeState:
        meta = json.loads(str(data["meta"]))

        def gens(states):
            out = []
            for s in states:
                g = np.random.default_rng()
                g.bit_generator.state = s
                out.append(g)
            return out

        return cls(
            t=int(meta["t"]),
            z=np.array(data["z"]),
            x=np.array(data["x"]),
            acc=np.array(data["acc"]),
            since=np.array(data["since"]),
            public=gens(meta["public"]),
            sampling=gens(meta["sampling"]),
            noise=gens(meta["noise"]),
            node_ledgers=[Ledger.from_json(s) for s in meta["node_ledgers"]],
            parent=None if meta["parent"] is None else Ledger.from_json(meta["parent"]),
            trajectory=[list(row) for row in meta["trajectory"]],
        )

    def averages(self, cfg: Config) -> np.ndarray:
        """x̃_i(t) = A_t⁻¹ Σ_{τ≤t} a_τ x_i(τ) of the block's nodes, (R, b, d)."""
        t = max(self.t, 1)
        A = cfg.schedule.A
        tail = (float(A(t)) - A(self.since - 1))[..., None] * self.x
        return (self.acc + tail) / float(A(t))


_sampler = lru_cache(maxsize=16)(FixedSizeSampler)  # a round's samplers, built once per (size, population)


@lru_cache(maxsize=8)
def _everyone(R: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(active ids, is_active) of a round in which all n nodes of all R repetitions are active (read-only)."""
    active, is_active = np.broadcast_to(np.arange(n), (R, n)), np.ones((R, n), dtype=bool)
    is_active.flags.writeable = False
    return active, is_active


@lru_cache(maxsize=8)
def _pair_table(m: int) -> np.ndarray | None:
    """Row k = the k-th pair (a < b) of range(m) in row-major order (what :func:`_decode_pairs` computes), if small."""
    if m * (m - 1) // 2 > 1 << 21:
        return None
    table = np.stack(np.triu_indices(m, 1), axis=1)
    table.flags.writeable = False
    return table


def _plan(cfg: Config, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The public plan of one round for all R repetitions from the one public stream.

    Returns (is_active (R, n) bool, edges (R, E, 2) int, −1 where a repetition
    has fewer edges).  Fixed-size activation on the complete supergraph is
    drawn vectorized: ⌈nι⌉ nodes, then E distinct pairs among them, both
    uniformly (fixed-size samplers of the privacy core); other settings loop
    over repetitions with :func:`sample_edges`.
    """
    R, n, E = cfg.repetitions, cfg.n, cfg.edges
    if cfg.activation == "fixed" and cfg.graph.complete:
        m = cfg.active_count
        reps = np.arange(R)[:, None]
        if m == n:
            active, is_active = _everyone(R, n)
        else:
            active = np.sort(_sampler(m, n).indices(gen, repetitions=R), axis=1)
            is_active = np.zeros((R, n), dtype=bool)
            is_active[reps, active] = True
        total = m * (m - 1) // 2
        e = min(E, total)
        if e == 0:
            return is_active, np.full((R, 0, 2), -1, dtype=np.int64)
        pairs = (
            np.broadcast_to(np.arange(total), (R, total))
            if e == total
            else np.sort(_sampler(e, total).indices(gen, repetitions=R), axis=1)
        )
        table = _pair_table(m)
        pos = (table[pairs] if table is not None else _decode_pairs(pairs.ravel(), m).reshape(R, e, 2))
        return is_active, active[reps[:, :, None], pos]
    is_active = np.zeros((R, n), dtype=bool)
    edges = np.full((R, E, 2), -1, dtype=np.int64)
    for r in range(R):
        if cfg.activation == "fixed":
            act = np.sort(gen.choice(n, size=cfg.active_count, replace=False))
        else:
            act = np.flatnonzero(gen.random(n) < cfg.iota)
        is_active[r, act] = True
        e = sample_edges(cfg.graph, act, E, gen)
        edges[r, : len(e)] = e
    return is_active, edges


def _neighbourhoods(edges: np.ndarray):
    """Closed neighbourhoods with Metropolis weights for every edge end, vectorized over repetitions.

    ``edges`` (R, E, 2), −1 for absent edges.  Slot s = 2e + side is one end
    of one edge.  Returns (node (R, S), ids (R, S, S+1) sorted with padding
    equal to the node itself, weights (R, S, S+1) with 0 on padding); rows of
    slots holding the same node are identical.  w_uv = 1/(1 + max(deg_u, deg_v)),
    w_uu = 1 − Σ_v w_uv (Xiao & Boyd 2004), a doubly stochastic W(t).
    """
    R, E, _ = edges.shape
    node = edges.reshape(R, 2 * E)
    partner = edges[:, :, ::-1].reshape(R, 2 * E)
    valid = node >= 0
    same = (node[:, :, None] == node[:, None, :]) & valid[:, :, None] & valid[:, None, :]
    deg = same.sum(axis=2)  # degree of the node at each slot
    deg_partner = deg.reshape(R, E, 2)[:, :, ::-1].reshape(R, 2 * E)
    w_nb = np.where(same, 1.0 / (1.0 + np.maximum(deg[:, :, None], deg_partner[:, None, :])), 0.0)  # u→partner(s')
    big = np.iinfo(np.int64).max
    nb_ids = np.where(same, partner[:, None, :], big)
    ids = np.concatenate([node[:, :, None], nb_ids], axis=2)
    w_self = 1.0 - np.sum(w_nb, axis=2)
    weights = np.concatenate([w_self[:, :, None], w_nb], axis=2)
    at = (np.arange(R)[:, None, None], np.arange(2 * E)[None, :, None], np.argsort(ids, axis=2, kind="stable"))
    ids, weights = ids[at], weights[at]
    ids = np.where(ids == big, node[:, :, None], ids)
    return node, ids, weights


def _draw_records(cfg: Config, shards: list, state: NodeState, samplers: list, nodes, senders, counts):
    """Each sender's b records for each of its active repetitions, from its own sampling stream.

    Returns rows (P, b, d) and labels (P, b), sender-major (sender k's
    ``counts`` repetitions together); b = 1 is Algorithm 1 line 6 (one record
    uniformly: the size-1 fixed-size sample).
    """
    b, gens = cfg.batch, state.sampling
    single = b == 1 and len(counts) == sum(counts)  # one record per sender
    if single:  # a scalar draw is the number integers(q, size=(1, 1)) gives, without the array round trip
        idx = [gens[k].integers(cfg.sizes[i]) for k, i in zip(senders, nodes[senders].tolist(), strict=True)]
    elif b == 1:
        idx = [gens[k].integers(cfg.sizes[int(nodes[k])], size=(c, 1)) for k, c in zip(senders, counts, strict=True)]
    else:
        idx = [samplers[k].indices(gens[k], repetitions=c) for k, c in zip(senders, counts, strict=True)]
    if single:  # copy the rows straight into one block
        rows = np.array([shards[k][0][i] for k, i in zip(senders, idx, strict=True)])[:, None, :]
        labels = np.array([shards[k][1][i] for k, i in zip(senders, idx, strict=True)])[:, None]
        return rows, labels
    rows = np.concatenate([shards[k][0][i] for k, i in zip(senders, idx, strict=True)])
    labels = np.concatenate([shards[k][1][i] for k, i in zip(senders, idx, strict=True)])
    return rows, labels


def _exchange(cfg: Config, comm, state: NodeState, edges: np.ndarray, local_index: np.ndarray) -> np.ndarray:
    """Messages on the world's node axis (R, n, d): local ones, plus those received along sampled edges.

    Only the two ends of a sampled edge that live in different processes send
    to each other (point to point, line 8); nothing else crosses.
    """
    nodes, is_local = comm.nodes, local_index >= 0
    world = np.zeros((cfg.repetitions, cfg.n, cfg.d))
    world[:, nodes] = state.z
    sends, recvs = [], []
    for r, e in zip(*np.nonzero(edges[:, :, 0] >= 0), strict=True):
        a, b = int(edges[r, e, 0]), int(edges[r, e, 1])
        for src, dst in ((a, b), (b, a)):
            if is_local[src] and not is_local[dst]:
                sends.append((dst, (int(r), src), state.z[r, local_index[src]]))
            elif is_local[dst] and not is_local[src]:
                recvs.append((src, (int(r), src), (cfg.d,)))
    for (r, j), value in comm.exchange(sends, recvs).items():
        world[r, j] = value
    return world


def _charged(cfg: Config, round_event: ev.Event, count: int) -> ev.Event:
    """``count`` rounds of ``round_event`` as the blocks charge them (the discrete event with secure noise)."""
    event = mech.secure_event(round_event, cfg.d)[0] if cfg.secure_noise else round_event
    return event if count == 1 else ev.SelfComposed(event, count)


def charge_rounds_again(cfg: Config, nodes, state: NodeState, round_events: list, count: int) -> None:
    """Charge ``count`` more rounds of the holder's nodes (and the record holder's), releasing nothing.

    A resumed secure-noise run re-releases, with fresh noise, the rounds after
    its checkpoint that the interrupted run may already have released.
    """
    if state.parent is not None:
        state.parent.charge(_charged(cfg, round_events[int(np.argmin(cfg.sizes))], count))
    for ledger, i in zip(state.node_ledgers, nodes, strict=True):
        ledger.charge(_charged(cfg, round_events[int(i)], count))


def check_charges(cfg: Config, nodes, state: NodeState, round_events: list, counts) -> None:
    """Charge copies of the record holder's and the nodes' ledgers with blocks of ``counts`` rounds, in the order
    :func:`charge_rounds_again` and :func:`run_block` charge them: a run they cannot pay in full is refused
    (``BudgetExceededError``) before its first block, not at the block that overspends after the blocks before
    it have put their messages on the wire."""
    if cfg.sigma <= 0:
        return
    parent = None if state.parent is None else copy.deepcopy(state.parent)
    ledgers = [copy.deepcopy(ledger) for ledger in state.node_ledgers]
    for count in counts:
        for ledger, i in zip(ledgers, nodes, strict=True):
            ledger.charge(_charged(cfg, round_events[int(i)], count))
        if parent is not None:
            parent.charge(_charged(cfg, round_events[int(np.argmin(cfg.sizes))], count))


def run_block(cfg: Config, comm, shards: list, state: NodeState, stop: int, round_events: list) -> NodeState:
    """Run rounds state.t+1 … ``stop`` for the holder's nodes (prepaying them first when private).

    Per round the work is O(active nodes · d) plus O(edge ends · d): z is
    updated in place, only the rows of sampled edges' ends are mixed, and when
    every node of a single repetition is active the rows are the arrays' own
    (views, no gathers).
    """
    nodes = comm.nodes
    n, R, nb = cfg.n, cfg.repetitions, len(comm.nodes)
    local_index = np.full(n, -1, dtype=np.int64)
    local_index[nodes] = np.arange(nb)
    is_local = local_index >= 0
    everything_local = bool(is_local.all())
    first, count = state.t + 1, stop - state.t
    sessions = None
    if cfg.sigma > 0:
        # the nodes' blocks first: each refuses a release it cannot make (secure noise beyond its exact sampler's
        # range) before charging its node's ledger, so that such a run leaves the record holder's ledger untouched
        sessions = [
            PrepaidGaussianRounds(
                round_events[int(i)], rounds=count, first_round=first, ledger=state.node_ledgers[k],
                rng=state.noise[k], secure_noise=cfg.secure_noise, size=cfg.d,
            )
            for k, i in enumerate(nodes)
        ]
        if state.parent is not None:  # the record holder's composed record (parallel composition over nodes)
            state.parent.charge(_charged(cfg, round_events[int(np.argmin(cfg.sizes))], count))
    samplers = [FixedSizeSampler(cfg.batch, cfg.sizes[int(i)]) for i in nodes] if cfg.batch > 1 else None
    sched, reg = cfg.schedule, cfg.regularizer
    p = cfg.activation_rate
    public = state.public[0]
    ts = np.arange(first, stop + 2)  # the block's a_t, A_t and γ_t, computed once; entry t − first
    a_of, A_of, gamma_of = (f(ts).tolist() for f in (sched.a, sched.A, sched.gamma_at))
    for t in range(first, stop + 1):
        a_t, A_t = a_of[t - first], A_of[t - first]
        c_next, g_next = p * A_of[t + 1 - first], gamma_of[t + 1 - first]
        all_active, edges = _plan(cfg, public)
        kk, rr = np.nonzero(all_active[:, nodes].T)  # sender-major: each node's active repetitions together
        # the active (repetition, node) rows: a view when all nodes of the one repetition are active
        sel = (0, slice(None)) if R == 1 and len(kk) == nb else (rr, kk)
        if len(kk):
            per_node = np.bincount(kk, minlength=nb)
            senders = np.flatnonzero(per_node)
            counts = per_node[senders].tolist()
            senders = senders.tolist()
            rows, labels = _draw_records(cfg, shards, state, samplers, nodes, senders, counts)
            g = clipped_mean_subgradient(rows, labels, state.x[sel], cfg.loss, cfg.lipschitz)
            if sessions is not None:  # each node's noise stream, through its prepaid block (line 7)
                g = PrepaidGaussianRounds.release_rows([sessions[k] for k in senders], counts, g, t)
            g *= a_t
            state.z[sel] += g  # the message z_j + a_t ζ_j; inactive nodes keep z_j
        if edges.shape[1]:  # eq. (5) on the sampled edges' ends only, summed in increasing node id
            ends = edges.reshape(R, -1)
            er, es = np.nonzero((ends >= 0) & is_local[np.maximum(ends, 0)])
            if len(er):  # a holder without an edge end neither sends nor receives
                node, ids, weights = _neighbourhoods(edges)
                world = state.z if everything_local else _exchange(cfg, comm, state, edges, local_index)
                gathered = world[er[:, None], ids[er, es]]  # (P, K, d), a copy
                w = weights[er, es]
                mixed = w[:, 0, None] * gathered[:, 0]
                for k in range(1, w.shape[1]):
                    mixed = mixed + w[:, k, None] * gathered[:, k]
                state.z[er, local_index[node[er, es]]] = mixed
        if len(kk):  # the running average's lazy term, then the prox step (6)
            state.acc[sel] += (A_t - sched.A(state.since[sel] - 1))[:, None] * state.x[sel]
            state.since[sel] = t + 1
            state.x[sel] = reg.argmin(state.z[sel], c_next, g_next)
        state.t = t
    return state


def local_objective_sum(cfg: Config, shards: list, points: np.ndarray) -> np.ndarray:
    """Σ over the holder's nodes of f_i at ``points`` (R, d) (non-private diagnostic)."""
    total = np.zeros(points.shape[:-1])
    for X, y in shards:
        total = total + local_loss_sum(X, y, points, cfg.loss)
    return total
