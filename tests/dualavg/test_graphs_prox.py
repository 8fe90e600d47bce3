import numpy as np
import pytest
from scipy import optimize

from dpopt.dualavg import Regularizer, gossip_matrix, supergraph
from dpopt.dualavg.algorithm import _pair_table
from dpopt.dualavg.graphs import _decode_pairs, sample_edges


@pytest.mark.parametrize("kind", ["complete", "ring", "grid", "random_regular"])
@pytest.mark.parametrize("edges", [1, 2, 3])
def test_gossip_matrices_doubly_stochastic_on_active_nodes(kind, edges):
    n = 12
    g = supergraph(kind, n, degree=3, seed=4)
    rng = np.random.default_rng(1)
    for _ in range(50):
        active = np.sort(rng.choice(n, size=6, replace=False))
        e = sample_edges(g, active, edges, rng)
        W = gossip_matrix(n, e)
        assert np.allclose(W.sum(axis=0), 1) and np.allclose(W.sum(axis=1), 1)
        assert np.array_equal(W, W.T) and W.min() >= 0
        off = W - np.diag(np.diag(W))
        touched = np.flatnonzero(off.any(axis=1))
        assert np.isin(touched, active).all()  # only active nodes gossip (liu2024 §3.1)
        assert len(np.unique(np.sort(e, axis=1), axis=0)) == len(e) <= edges


def test_complete_graph_pairs_are_uniform():
    for m in range(2, 20):
        k = np.arange(m * (m - 1) // 2)
        ref = [(a, b) for a in range(m) for b in range(a + 1, m)]
        assert _decode_pairs(k, m).tolist() == [list(p) for p in ref]
        assert _pair_table(m).tolist() == [list(p) for p in ref]  # the simulator's cached lookup


def test_user_adjacency_and_bad_graphs():
    A = np.zeros((4, 4), int)
    for a, b in [(0, 1), (1, 2), (2, 3)]:
        A[a, b] = A[b, a] = 1
    assert supergraph(A, 4).n_edges == 3
    with pytest.raises(ValueError, match="connected"):
        supergraph(np.array([[0, 1], [2, 3]]), 4)
    with pytest.raises(ValueError, match="graph"):
        supergraph("star", 4)


@pytest.mark.parametrize(
    "reg", [Regularizer("l2", 0.3), Regularizer("l1", 0.4), Regularizer("none"), Regularizer("l1", 0.2, -0.3, 0.5)]
)
def test_prox_step_equals_numerical_argmin(reg):
    rng = np.random.default_rng(2)
    for _ in range(5):
        z = rng.normal(size=4) * 2
        c, gamma = 1.7, 0.9
        x = reg.argmin(z, c, gamma)

        def f(v, z=z, c=c, gamma=gamma):
            return z @ v + c * reg.value(v) + gamma / 2 * v @ v

        bounds = [(reg.lower if np.isfinite(reg.lower) else None, reg.upper if np.isfinite(reg.upper) else None)] * 4
        ref = optimize.minimize(f, np.zeros(4), method="Powell", bounds=bounds, options=dict(xtol=1e-10, ftol=1e-14))
        assert f(x) <= ref.fun + 1e-9
        assert np.allclose(x, ref.x, atol=1e-5)


def test_prox_needs_curvature():
    with pytest.raises(ValueError, match="gamma"):
        Regularizer("l1", 0.1).argmin(np.ones(3), 1.0, 0.0)


def test_vectorized_neighbourhoods_match_the_gossip_matrix():
    from dpopt.dualavg.algorithm import _neighbourhoods

    rng = np.random.default_rng(5)
    g = supergraph("complete", 9)
    edges = np.full((40, 3, 2), -1)
    for r in range(40):
        e = sample_edges(g, np.sort(rng.choice(9, size=5, replace=False)), int(rng.integers(1, 4)), rng)
        edges[r, : len(e)] = e
    node, ids, weights = _neighbourhoods(edges)
    for r in range(40):
        W, seen = np.eye(9), set()
        for s in np.flatnonzero(node[r] >= 0):
            if node[r, s] in seen:  # every end of the same node carries the same row
                continue
            seen.add(node[r, s])
            W[node[r, s]] = 0.0
            np.add.at(W[node[r, s]], ids[r, s], weights[r, s])
        assert np.allclose(W, gossip_matrix(9, edges[r][edges[r, :, 0] >= 0]), atol=1e-15)
