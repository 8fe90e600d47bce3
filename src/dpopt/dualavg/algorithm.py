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
   own noise stream, charged to its own ledger);
3. the messages z_j + a_t ζ_j are exchanged along the sampled edges only
   (line 8) and mixed with Metropolis weights: eq. (5), summed in node-id order;
4. active nodes take the prox step (6) with ι·A_{t+1}·h + γ_{t+1}·d; the
   weighted running average x̃_i = A_T⁻¹ Σ_t a_t x_i(t) is kept lazily.

Random streams: ``SeedSequence(entropy, spawn_key=(0, r))`` is the public plan
of repetition r; ``(1, i)`` and ``(2, i)`` are node i's record-sampling and
noise streams.  A node draws the same numbers whichever process holds it, so
the simulator and an MPI run give the same iterates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ..privacy import Ledger
from ..privacy import events as ev
from ..privacy.mechanisms import PrepaidGaussianRounds
from ..privacy.sampling import FixedSizeSampler
from .graphs import Supergraph, metropolis_neighbourhoods, sample_edges
from .problem import clipped_mean_subgradient, local_loss_sum
from .prox import Regularizer
from .schedules import Schedule

__all__ = ["Config", "NodeState", "run_block"]


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
    def fresh(cls, cfg: Config, nodes: np.ndarray, entropy: int, node_ledgers, parent) -> NodeState:
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
            public=[_stream(entropy, 0, r) for r in range(R)],
            sampling=[_stream(entropy, 1, int(i)) for i in nodes],
            noise=[_stream(entropy, 2, int(i)) for i in nodes],
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


def _plan(cfg: Config, gen: np.random.Generator):
    if cfg.activation == "fixed":
        active = np.sort(gen.choice(cfg.n, size=cfg.active_count, replace=False))
    else:
        active = np.flatnonzero(gen.random(cfg.n) < cfg.iota)
    return active, sample_edges(cfg.graph, active, cfg.edges, gen)


def _mix(ids: np.ndarray, weights: np.ndarray, message_of) -> np.ndarray:
    """Σ_j w_ij m_j of eq. (5), summed in increasing node id (identical on every back end)."""
    out = weights[0] * message_of(int(ids[0]))
    for j, w in zip(ids[1:].tolist(), weights[1:].tolist(), strict=True):
        out = out + w * message_of(j)
    return out


def _message(messages: np.ndarray, remote: dict, local: dict, r: int, j: int) -> np.ndarray:
    return messages[r, local[j]] if j in local else remote[(r, j)]


def run_block(cfg: Config, comm, shards: list, state: NodeState, stop: int, round_events: list) -> NodeState:
    """Run rounds state.t+1 … ``stop`` for the holder's nodes (prepaying them first when private)."""
    nodes = comm.nodes
    local = {int(i): k for k, i in enumerate(nodes)}
    first, count = state.t + 1, stop - state.t
    sessions = None
    if cfg.sigma > 0:
        if state.parent is not None:  # the record holder's composed record (parallel composition over nodes)
            worst = round_events[int(np.argmin(cfg.sizes))]
            state.parent.charge(worst if count == 1 else ev.SelfComposed(worst, count))
        sessions = [
            PrepaidGaussianRounds(
                round_events[int(i)], rounds=count, first_round=first, ledger=state.node_ledgers[k], rng=state.noise[k]
            )
            for k, i in enumerate(nodes)
        ]
    samplers = [FixedSizeSampler(cfg.batch, cfg.sizes[int(i)]) for i in nodes]
    sched, reg = cfg.schedule, cfg.regularizer
    p = cfg.activation_rate
    R = cfg.repetitions
    for t in range(first, stop + 1):
        a_t = float(sched.a(t))
        c_next, g_next = p * float(sched.A(t + 1)), float(sched.gamma_at(t + 1))
        plans = [_plan(cfg, state.public[r]) for r in range(R)]
        is_active = np.zeros((R, len(nodes)), dtype=bool)
        for r, (active, _) in enumerate(plans):
            for i in active.tolist():
                if i in local:
                    is_active[r, local[i]] = True
        messages = state.z.copy()
        for k in np.flatnonzero(is_active.any(axis=0)).tolist():
            reps = np.flatnonzero(is_active[:, k])
            X, y = shards[k]
            if cfg.batch == 1:  # one record uniformly (Algorithm 1 line 6): the size-1 fixed-size sample
                idx = state.sampling[k].integers(cfg.sizes[int(nodes[k])], size=(len(reps), 1))
            else:
                idx = samplers[k].indices(state.sampling[k], repetitions=len(reps))
            g = clipped_mean_subgradient(X, y, idx, state.x[reps, k], cfg.loss, cfg.lipschitz)
            zeta = g if sessions is None else sessions[k].release(g, t)
            messages[reps, k] = state.z[reps, k] + a_t * zeta
        # exchange along sampled edges whose ends are held by different processes
        hoods = [metropolis_neighbourhoods(e) for _, e in plans]
        sends, recvs = [], []
        for r, (_, e) in enumerate(plans):
            for a, b in e.tolist():
                for src, dst in ((a, b), (b, a)):
                    if src in local and dst not in local:
                        sends.append((dst, (r, src), messages[r, local[src]]))
                    elif dst in local and src not in local:
                        recvs.append((src, (r, src), messages.shape[2:]))
        remote = comm.exchange(sends, recvs)
        new_z = messages  # active nodes off every edge: z_i + a_t ζ_i; inactive: z_i
        for r in range(R):
            mixed = {}
            for i, (ids, w) in hoods[r].items():
                if i in local:
                    mixed[i] = _mix(ids, w, partial(_message, messages, remote, local, r))
            for i, value in mixed.items():
                new_z[r, local[i]] = value
        state.z = new_z
        rr, kk = np.nonzero(is_active)
        if len(rr):
            A = sched.A
            state.acc[rr, kk] += (float(A(t)) - A(state.since[rr, kk] - 1))[:, None] * state.x[rr, kk]
            state.since[rr, kk] = t + 1
            state.x[rr, kk] = reg.argmin(state.z[rr, kk], c_next, g_next)
        state.t = t
    return state


def local_objective_sum(cfg: Config, shards: list, points: np.ndarray) -> np.ndarray:
    """Σ over the holder's nodes of f_i at ``points`` (R, d) (non-private diagnostic)."""
    total = np.zeros(points.shape[:-1])
    for X, y in shards:
        total = total + local_loss_sum(X, y, points, cfg.loss)
    return total
