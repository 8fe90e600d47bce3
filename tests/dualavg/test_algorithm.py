import numpy as np
import pytest
from scipy import optimize

from dpopt import dualavg
from dpopt.dualavg.problem import objective
from dpopt.objectives import HingeLoss
from dpopt.privacy import PLDAccountant, RDPAccountant
from dpopt.privacy.calibration import RUN_DISCRETIZATION

from .conftest import make_shards


def hinge_l2_minimum(shards, mu):
    """F* of (1/n)Σ_i mean hinge + μ/2‖x‖² by SLSQP on the epigraph form (small problems only)."""
    X = np.concatenate([s[0] for s in shards])
    y = np.concatenate([s[1] for s in shards])
    w = np.concatenate([np.full(len(s[1]), 1.0 / (len(shards) * len(s[1]))) for s in shards])
    N, d = X.shape
    fun = lambda v: w @ v[d:] + mu / 2 * v[:d] @ v[:d]  # noqa: E731
    jac = lambda v: np.concatenate([mu * v[:d], w])  # noqa: E731
    A = np.hstack([y[:, None] * X, np.eye(N)])
    cons = [{"type": "ineq", "fun": lambda v: A @ v - 1.0, "jac": lambda v: A}]
    res = optimize.minimize(
        fun,
        np.concatenate([np.zeros(d), np.ones(N)]),
        jac=jac,
        constraints=cons,
        bounds=[(None, None)] * d + [(0, None)] * N,
        method="SLSQP",
        options=dict(ftol=1e-14, maxiter=500),
    )
    return res.fun


def test_non_private_all_active_converges_to_optimum():
    shards = make_shards(n=5, q=30, d=4)
    mu = 0.05
    f_star = hinge_l2_minimum(shards, mu)
    res = dualavg.minimize(shards, iota=1.0, edges=2, rounds=2000, seed=3, strength=mu, gamma=1.0)
    assert res.guarantee == "none" and res.info["sigma"] == 0.0
    assert res.fun == pytest.approx(float(objective(shards, res.x, HingeLoss(), dualavg.Regularizer("l2", mu))))
    assert 0 <= res.fun - f_star < 5e-3
    # the nodes agree (consensus)
    assert np.max(np.abs(res.info["x_nodes"] - res.x)) < 0.05


def test_private_run_record_and_both_sigmas(shards):
    res = dualavg.minimize(shards, epsilon=0.8, delta=1e-5, iota=0.5, rounds=200, seed=1, strength=0.05, gamma=1.0)
    rep = res.info["noise_report"]
    assert rep["epsilon_accountant_sigma"] == pytest.approx(0.8, rel=1e-6)
    assert rep["sigma_theorem1"] > 0 and rep["epsilon_theorem1_sigma"] > 0
    assert res.epsilon == pytest.approx(0.8, rel=1e-6) and res.relation == "replace_one"
    # the record replays: one node's T rounds, parallel over nodes
    acc = RDPAccountant()
    for e in res.events:
        acc.compose(e)
    assert acc.get_epsilon(1e-5) == pytest.approx(res.epsilon, rel=1e-12)
    assert np.allclose(res.info["node_epsilons"], res.epsilon, rtol=1e-9)
    assert "record holder" in res.notes


def test_smaller_iota_needs_less_noise():
    kw = dict(lipschitz=1.0, local_samples=100, batch=1)
    s_small = dualavg.accountant_sigma(1.0, 1e-5, steps=1000, activation_rate=0.1, **kw)
    s_large = dualavg.accountant_sigma(1.0, 1e-5, steps=1000, activation_rate=1.0, **kw)
    assert s_small < s_large


def test_checkpoint_resume_matches_uninterrupted(shards, tmp_path):
    kw = dict(epsilon=1.0, delta=1e-5, iota=0.5, edges=2, rounds=60, seed=7, strength=0.05, gamma=1.0)
    full = dualavg.minimize(shards, **kw)
    part = dualavg.minimize(shards, checkpoint_dir=str(tmp_path), checkpoint_every=20, **dict(kw, rounds=60))
    assert np.array_equal(part.x, full.x)
    # a job interrupted after its round-40 checkpoint, then resumed
    mid = tmp_path / "mid"
    from dpopt.dualavg import api

    original = api.run_block

    def stop_at_40(cfg, comm, local_shards, state, stop, round_events):
        if stop > 40:
            raise KeyboardInterrupt
        return original(cfg, comm, local_shards, state, stop, round_events)

    api.run_block = stop_at_40
    try:
        with pytest.raises(KeyboardInterrupt):
            dualavg.minimize(shards, checkpoint_dir=str(mid), checkpoint_every=20, **kw)
    finally:
        api.run_block = original
    resumed = dualavg.minimize(shards, checkpoint_dir=str(mid), checkpoint_every=20, resume=True, **kw)
    assert np.array_equal(resumed.x, full.x)
    assert resumed.epsilon == pytest.approx(full.epsilon, rel=1e-12)


def test_bad_input(shards):
    with pytest.raises(ValueError, match="iota"):
        dualavg.minimize(shards, iota=0.0)
    with pytest.raises(ValueError, match="backend"):
        dualavg.minimize(shards, backend="grpc")
    with pytest.raises(ValueError, match="batch"):
        dualavg.minimize(shards, batch=1000)
    with pytest.raises(ValueError, match="labels"):
        dualavg.minimize([(s[0], s[1] * 2) for s in shards])
    with pytest.raises(ValueError, match="not both"):
        dualavg.minimize(shards, epsilon=1.0, sigma=1.0)


def test_hidden_activation_is_a_conditional_guarantee_with_more_amplification(shards):
    kw = dict(epsilon=1.0, iota=0.5, rounds=50, seed=2, strength=0.05, gamma=1.0)
    visible = dualavg.minimize(shards, **kw)
    hidden = dualavg.minimize(shards, activation_visible=False, **kw)
    assert visible.guarantee == "exact" and hidden.guarantee == "conditional"
    assert "CONDITIONAL" in hidden.notes
    assert hidden.info["sigma"] < visible.info["sigma"]


def test_hidden_activation_defaults_to_pld_and_visible_activation_to_rdp(shards):
    kw = dict(epsilon=0.8, delta=1e-5, iota=0.5, rounds=100, seed=1, strength=0.05, gamma=1.0)
    hidden = dualavg.minimize(shards, activation_visible=False, **kw)
    hidden_rdp = dualavg.minimize(shards, activation_visible=False, accountant="rdp", **kw)
    visible = dualavg.minimize(shards, **kw)
    assert hidden.privacy.notion == "pld" and hidden_rdp.privacy.notion == "rdp" and visible.privacy.notion == "rdp"
    assert hidden.info["sigma"] < hidden_rdp.info["sigma"]  # the same guarantee with less noise
    assert hidden.epsilon <= 0.8 and np.allclose(hidden.info["node_epsilons"], hidden.epsilon, rtol=1e-6)
    pld = PLDAccountant(RUN_DISCRETIZATION)
    for e in hidden.events:
        pld.compose(e)
    assert pld.get_epsilon(1e-5) == pytest.approx(hidden.epsilon, rel=1e-9)
