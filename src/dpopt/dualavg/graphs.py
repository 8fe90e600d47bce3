"""Supergraphs, per-round edge sampling and Metropolis gossip weights (liu2024 §2.1, §5.1).

A round's gossip matrix W(t) lives on the *active* nodes only (liu2024 §3.1:
w_ij(t) > 0 only for i ∈ N(t), j ∈ N_i(t)): ``edges`` distinct edges are drawn
uniformly from the supergraph's edges whose two ends are both active, and the
sampled graph gets Metropolis weights w_ij = 1/(1 + max(deg_i, deg_j)),
w_ii = 1 − Σ_j w_ij (Xiao & Boyd 2004 [33]).  Every other row is e_i, so W(t)
is symmetric and doubly stochastic (Assumption 2 i).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_choice, check_int

__all__ = ["Supergraph", "supergraph", "sample_edges", "metropolis_neighbourhoods", "gossip_matrix", "KINDS"]

KINDS = ("complete", "ring", "grid", "random_regular")


class Supergraph:
    """An undirected connected graph on n nodes: the links that may ever carry a message."""

    def __init__(self, n: int, edges, *, complete: bool = False, name: str = "custom"):
        self.n = check_int("n", n, minimum=2)
        self.complete = complete
        self.name = name
        if complete:
            self.edges = None
            return
        e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        if e.size == 0:
            raise ValueError("adjacency must have at least one edge")
        if e.min() < 0 or e.max() >= self.n or np.any(e[:, 0] == e[:, 1]):
            raise ValueError(f"adjacency edges must join two different nodes in 0..{self.n - 1}")
        e = np.unique(np.sort(e, axis=1), axis=0)
        self.edges = e
        if not _connected(self.n, e):
            raise ValueError("adjacency must describe a connected graph (gossip cannot reach every node otherwise)")

    @property
    def n_edges(self) -> int:
        return self.n * (self.n - 1) // 2 if self.complete else len(self.edges)

    def __repr__(self) -> str:
        return f"Supergraph({self.name!r}, n={self.n}, edges={self.n_edges})"


def _connected(n: int, edges: np.ndarray) -> bool:
    parent = np.arange(n)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    return len({find(i) for i in range(n)}) == 1


def supergraph(kind="complete", n: int = 20, *, degree: int = 3, seed: int = 0) -> Supergraph:
    """A named supergraph, or a user's adjacency (a symmetric 0/1 (n, n) matrix or an (E, 2) edge list).

    ``"grid"`` uses the most nearly square r × c = n layout; ``"random_regular"``
    draws a connected ``degree``-regular graph from the public ``seed``
    (configuration model with rejection).
    """
    n = check_int("n", n, minimum=2)
    if not isinstance(kind, str):
        a = np.asarray(kind)
        if a.ndim == 2 and a.shape == (n, n):
            if not np.array_equal(a, a.T):
                raise ValueError("adjacency matrix must be symmetric")
            i, j = np.nonzero(np.triu(a, 1))
            return Supergraph(n, np.stack([i, j], axis=1))
        return Supergraph(n, a)
    kind = check_choice("graph", kind, KINDS)
    if kind == "complete":
        return Supergraph(n, None, complete=True, name="complete")
    if kind == "ring":
        i = np.arange(n)
        return Supergraph(n, np.stack([i, (i + 1) % n], axis=1), name="ring")
    if kind == "grid":
        rows = max(r for r in range(1, math.isqrt(n) + 1) if n % r == 0)
        cols = n // rows
        idx = np.arange(n).reshape(rows, cols)
        e = np.concatenate(
            [np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1), np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)]
        )
        return Supergraph(n, e, name=f"grid{rows}x{cols}")
    degree = check_int("degree", degree, minimum=2)
    if degree >= n or (n * degree) % 2:
        raise ValueError(f"degree must be < n and n*degree even for a random regular graph, got {degree} with n={n}")
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        stubs = rng.permutation(np.repeat(np.arange(n), degree)).reshape(-1, 2)
        s = np.sort(stubs, axis=1)
        if np.any(s[:, 0] == s[:, 1]) or len(np.unique(s, axis=0)) < len(s):
            continue
        if _connected(n, s):
            return Supergraph(n, s, name=f"random_regular{degree}")
    raise ValueError(f"could not draw a simple connected {degree}-regular graph on {n} nodes")


def _decode_pairs(k: np.ndarray, m: int) -> np.ndarray:
    """Pair index k ∈ [0, m(m−1)/2) → (a, b), a < b, in row-major order of the upper triangle."""
    # a is the largest row with start(a) = a·m − a(a+1)/2 ≤ k
    a = np.floor(((2 * m - 1) - np.sqrt((2 * m - 1) ** 2 - 8.0 * k)) / 2).astype(np.int64)
    start = a * m - a * (a + 1) // 2
    a = np.where(start > k, a - 1, a)
    start = a * m - a * (a + 1) // 2
    a_next = (a + 1) * m - (a + 1) * (a + 2) // 2
    bump = a_next <= k
    a = np.where(bump, a + 1, a)
    start = np.where(bump, a_next, start)
    return np.stack([a, a + 1 + (k - start)], axis=1)


def sample_edges(graph: Supergraph, active: np.ndarray, edges: int, rng: np.random.Generator) -> np.ndarray:
    """``edges`` distinct supergraph edges with both ends in ``active`` (sorted ids), uniformly; (e, 2).

    Fewer are returned when fewer exist (e.g. one edge between two active nodes).
    """
    m = len(active)
    if m < 2:
        return np.empty((0, 2), dtype=np.int64)
    if graph.complete:
        total = m * (m - 1) // 2
        k = np.sort(rng.choice(total, size=min(edges, total), replace=False))
        return active[_decode_pairs(k, m)]
    is_active = np.zeros(graph.n, dtype=bool)
    is_active[active] = True
    cand = graph.edges[is_active[graph.edges[:, 0]] & is_active[graph.edges[:, 1]]]
    if len(cand) == 0:
        return np.empty((0, 2), dtype=np.int64)
    pick = np.sort(rng.choice(len(cand), size=min(edges, len(cand)), replace=False))
    return cand[pick]


def metropolis_neighbourhoods(round_edges: np.ndarray) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """node → (closed neighbourhood sorted by id, Metropolis weights) for every node on a sampled edge.

    Nodes absent from the dict keep w_ii = 1.  Each node's row is built from
    the public edge list alone, so every holder of a node computes it identically.
    """
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if len(round_edges) == 0:
        return out
    nodes, deg = np.unique(round_edges, return_counts=True)
    degree = dict(zip(nodes.tolist(), deg.tolist(), strict=True))
    nbrs: dict[int, list[int]] = {i: [] for i in degree}
    for a, b in round_edges.tolist():
        nbrs[a].append(b)
        nbrs[b].append(a)
    for i, js in nbrs.items():
        w = {j: 1.0 / (1.0 + max(degree[i], degree[j])) for j in js}
        w[i] = 1.0 - sum(w[j] for j in sorted(js))
        ids = np.array(sorted(w), dtype=np.int64)
        out[i] = (ids, np.array([w[j] for j in ids.tolist()]))
    return out


def gossip_matrix(n: int, round_edges: np.ndarray) -> np.ndarray:
    """The dense W(t) of one round (for tests and diagnostics)."""
    W = np.eye(n)
    for i, (ids, w) in metropolis_neighbourhoods(np.asarray(round_edges).reshape(-1, 2)).items():
        W[i] = 0.0
        W[i, ids] = w
    return W
