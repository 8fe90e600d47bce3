"""Clipping and projection never leave a row above its bound; L1 projection is exact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import brentq, minimize

from dpopt.objectives import LogisticLoss, bounds

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
matrices = st.integers(1, 6).flatmap(
    lambda d: arrays(np.float64, st.tuples(st.integers(1, 12), st.just(d)), elements=finite)
)
radii = st.floats(min_value=1e-6, max_value=1e3, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(X=matrices, bound=radii, norm=st.sampled_from(["l1", "l2", "linf"]))
def test_project_rows_never_leaves_a_row_above_the_bound(X, bound, norm):
    P, changed = bounds.project_rows(X, bound, norm)
    assert np.all(bounds.row_norms(P, norm) <= bound)
    outside = bounds.row_norms(X, norm) > bound
    assert changed == int(outside.sum())
    np.testing.assert_array_equal(P[~outside], X[~outside])  # rows inside are untouched
    S, changed_s = bounds.project_rows(X, bound, norm, method="scale")
    assert np.all(bounds.row_norms(S, norm) <= bound) and changed_s == changed


@settings(max_examples=150, deadline=None)
@given(G=matrices, clip=radii)
def test_clip_by_l2_norm_never_exceeds_clip(G, clip):
    C = bounds.clip_by_l2_norm(G, clip)
    assert np.all(bounds.row_norms(C) <= clip)
    small = bounds.row_norms(G) <= clip * (1 - 2.0**-40)
    np.testing.assert_array_equal(C[small], G[small])
    # clipping only shrinks: same direction
    assert np.all(np.einsum("ij,ij->i", C, G) >= 0)


@settings(max_examples=100, deadline=None)
@given(
    X=arrays(np.float64, (8, 3), elements=st.floats(-50, 50)),
    w=arrays(np.float64, (3,), elements=st.floats(-20, 20)),
    clip=radii,
)
def test_efficient_clipped_gradients_are_within_clip(X, w, clip):
    y = np.array([1.0, -1.0] * 4)
    loss = LogisticLoss()
    thr = bounds.clip_thresholds(bounds.row_norms(X), clip)
    r = loss._clipped_coefs(loss.linear_predictions(w, X), y, thr)
    assert np.all(bounds.row_norms(r[:, None] * X) <= clip)


def _scipy_l1_projection(v, z):
    """Reference 1: minimize ½‖w − v‖² s.t. ‖w‖₁ ≤ z with SLSQP on the split w = p − q, p, q ≥ 0."""
    d = len(v)

    def f(u):
        return 0.5 * np.sum((u[:d] - u[d:] - v) ** 2)

    def g(u):
        r = u[:d] - u[d:] - v
        return np.concatenate([r, -r])

    start = np.concatenate([np.maximum(v, 0), np.maximum(-v, 0)])
    start *= min(1.0, 0.99 * z / max(start.sum(), 1e-300))  # feasible start
    res = minimize(
        f,
        start,
        jac=g,
        bounds=[(0, None)] * (2 * d),
        constraints=[
            {"type": "ineq", "fun": lambda u: z - u.sum(), "jac": lambda u: -np.ones(2 * d)}
        ],
        method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    assert res.success, res.message
    return res.x[:d] - res.x[d:]


def _brentq_l1_projection(v, z):
    """Reference 2: KKT form w = sign(v)·max(|v| − θ, 0), θ the root of Σ max(|v| − θ, 0) = z."""
    if np.abs(v).sum() <= z:
        return v.copy()
    theta = brentq(
        lambda t: np.maximum(np.abs(v) - t, 0).sum() - z, 0.0, np.abs(v).max(), xtol=1e-15
    )
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0)


def test_l1_projection_matches_scipy_solve():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(25, 6)) * rng.uniform(0.5, 5, size=(25, 1))
    z = 2.0
    P = bounds.project_l1_ball(V, z)
    for v, p in zip(V, P, strict=True):
        ref = _scipy_l1_projection(v, z)
        np.testing.assert_allclose(p, ref, atol=1e-5)
        np.testing.assert_allclose(p, _brentq_l1_projection(v, z), atol=1e-10)
        # p is at least as close to v as the solver's point and as the scaled point
        assert np.linalg.norm(p - v) <= np.linalg.norm(ref - v) + 1e-9
        if np.abs(v).sum() > z:
            scaled = v * z / np.abs(v).sum()
            assert np.linalg.norm(p - v) <= np.linalg.norm(scaled - v) + 1e-12


def test_l1_projection_special_cases():
    # a single dominant coordinate: projection keeps only it
    np.testing.assert_allclose(bounds.project_l1_ball(np.array([5.0, 0.1, -0.1]), 1.0), [1, 0, 0])
    # ties and signs
    p = bounds.project_l1_ball(np.array([[3.0, -3.0, 0.0]]), 2.0)
    np.testing.assert_allclose(p, [[1.0, -1.0, 0.0]])
    # inside: unchanged, 1-D and 3-D shapes
    v = np.array([0.1, -0.2])
    np.testing.assert_array_equal(bounds.project_l1_ball(v, 1.0), v)
    T = np.random.default_rng(1).normal(size=(2, 3, 4)) * 10
    P = bounds.project_l1_ball(T, 1.5)
    assert P.shape == T.shape and np.all(np.abs(P).sum(-1) <= 1.5)


def test_project_rows_refuses_bad_input():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="X contains 1 NaN"):
        bounds.project_rows(np.array([[np.nan, 1.0]]), 1.0)
    with pytest.raises(ValueError, match="bound must be in"):
        bounds.project_rows(X, 0.0)
    with pytest.raises(ValueError, match="norm must be one of"):
        bounds.project_rows(X, 1.0, "l3")
    with pytest.raises(ValueError, match="method must be one of"):
        bounds.project_rows(X, 1.0, method="shrink")


def test_labels():
    np.testing.assert_array_equal(bounds.check_binary_labels([1, -1, 1]), [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="only the labels -1 and \\+1; found \\[0.0\\]"):
        bounds.check_binary_labels([0, 1])
    with pytest.raises(ValueError, match="both classes"):
        bounds.check_binary_labels([1, 1, 1])
    bounds.check_binary_labels([1, 1], require_both=False)
    with pytest.raises(ValueError, match="labels contains 1 NaN"):
        bounds.check_binary_labels([1.0, np.nan], "labels")


def test_sensitivities_follow_the_relation():
    assert bounds.clipped_grad_sum_sensitivity(3.0) == 3.0
    assert bounds.clipped_grad_sum_sensitivity(3.0, "replace_one") == 6.0
    assert bounds.kuru_l1_sensitivity(20.0) == 40.0  # kuru2022 §5: S₁ = 2 × 20
    assert bounds.kuru_l1_sensitivity(20.0, "add_remove") == 20.0
    assert bounds.clipped_loss_sum_sensitivity(1.0, "replace_one") == 1.0
    with pytest.raises(ValueError, match="relation must be one of"):
        bounds.kuru_l1_sensitivity(1.0, "neighbours")
    with pytest.raises(ValueError, match="l1_bound"):
        bounds.kuru_l1_sensitivity(0.0)


def test_kuru_eq_5_2_bound_holds_on_projected_data():
    """‖∇f(x; u, z) − ∇f(x; u', z')‖₁ ≤ 2·sup‖u‖₁ for the logistic loss, at any x."""
    rng = np.random.default_rng(2)
    U, _ = bounds.project_rows(rng.normal(size=(400, 5)) * 4, 3.0, "l1")
    z = np.where(rng.random(400) < 0.5, -1.0, 1.0)
    loss = LogisticLoss()
    S1 = bounds.kuru_l1_sensitivity(3.0)
    for x in rng.normal(size=(20, 5)) * 5:
        G = loss.per_example_grads(x, U, z)
        l1 = np.abs(G).sum(axis=1)
        assert np.all(l1 <= 3.0)
        assert l1.max() + np.sort(l1)[-2] <= S1  # worst pair of records
    # replace-one: the gradient *sum* moves by at most S₁
    U2, z2 = U.copy(), z.copy()
    U2[7] = [3.0, 0, 0, 0, 0]
    z2[7] = -z[7]
    x = rng.normal(size=5)
    diff = loss.grad(x, U, z) * 400 - loss.grad(x, U2, z2) * 400
    assert np.abs(diff).sum() <= S1


def test_clipped_values_and_their_sum():
    loss = LogisticLoss()
    X = np.array([[1.0], [-3.0], [10.0]])
    y = np.ones(3)
    w = np.array([-1.0])
    v = loss.per_example_values(w, X, y)
    np.testing.assert_allclose(loss.clipped_values(w, X, y, 1.0), np.minimum(v, 1.0))
    assert loss.clipped_value_sum(w, X, y, 1.0) == pytest.approx(np.minimum(v, 1.0).sum())
    assert np.all(loss.clipped_values(w, X, y, 1.0) <= 1.0)
