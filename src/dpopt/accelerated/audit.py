"""An audit target for DP-NAG: a short run on tiny worst-case data (see :mod:`dpopt.privacy.audit`).

The adversary of kuru2022 §2.2 sees every iterate x_1, …, x_T.  D has n = 4
records with ‖u‖₁ ≤ 1 (so S₁ = 2); D′ replaces the first record (u = (1, 0),
z = −1) by (u′ = (0, 1), z′ = +1).  Started at x₀ = (10, −10), both records
are badly misclassified, so their per-example gradients are ≈ (1, 0) and
≈ (0, −1): the mean gradients of D and D′ differ by ≈ S₁/n in L1 norm, the
worst case the Laplace scale must cover.  The step size and momentum come
from a *public* L (never from the data), as an exact guarantee requires.

The statistic is the exact privacy loss ln p_D(o)/p_D′(o) of the released
iterates: the noisy gradients are recovered from consecutive iterates
(ĝ_t = (z_t − x_t)/α_t), and the noise-free gradients of D and D′ at the
public z_t give Σ_t Σ_j (|ĝ_tj − g′_tj| − |ĝ_tj − g_tj|)/b_t — the
Neyman–Pearson statistic, so the audit's lower bound approaches the true ε.
"""

from __future__ import annotations

import numpy as np

from ..objectives import L2, Objective
from ..privacy import Ledger
from ..privacy.audit import AuditTarget
from .algorithms import nesterov
from .oracle import PrivateGradientOracle, l1_sensitivity
from .plan import make_plan

__all__ = ["NAG_AUDIT_SETTING", "nag_audit_data", "nag_audit_run", "nag_audit_target"]

#: ε, T, feature bound (‖u‖₁), public L, λ of the regularizer λ‖x‖², starting point.
NAG_AUDIT_SETTING = {
    "epsilon": 1.0,
    "iterations": 2,
    "feature_bound": 1.0,
    "L": 1.0,
    "lam": 0.01,
    "x0": (10.0, -10.0),
}


def nag_audit_data():
    """(D, D′): two 4-record data sets (X, y) that differ in the first record (replace-one)."""
    X = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    y = np.array([-1.0, 1.0, -1.0, 1.0])
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = (0.0, 1.0), 1.0
    return (X, y), (X2, y2)


def _objective(data) -> Objective:
    X, y = data
    return Objective("logistic", X, y, L2(NAG_AUDIT_SETTING["lam"]))


def _plan(objective: Objective):
    s = NAG_AUDIT_SETTING
    return make_plan(
        "dp-nag",
        epsilon=s["epsilon"],
        iterations=s["iterations"],
        n=objective.n,
        d=objective.dim,
        sensitivity=l1_sensitivity(objective.loss, s["feature_bound"]),
        L=s["L"],
        mu=objective.regularizer.strong_convexity,
    )


def nag_audit_run(data, repetitions: int, rng: np.random.Generator):
    """``repetitions`` DP-NAG runs on ``data`` → (iterates x_1..x_T of shape (R, T, d), ledger)."""
    s = NAG_AUDIT_SETTING
    objective = _objective(data)
    ledger = Ledger(s["epsilon"], relation="replace_one")
    oracle = PrivateGradientOracle(
        objective, feature_bound=s["feature_bound"], ledger=ledger, rng=rng
    )
    plan = _plan(objective)
    x0 = np.broadcast_to(np.asarray(s["x0"]), (repetitions, objective.dim))
    _, _, iterates = nesterov(oracle, x0, plan.steps, plan.momenta, plan.scales, record=1)
    return np.moveaxis(iterates[1:], 0, 1), ledger


def privacy_loss_statistic(data, neighbour):
    """The exact log-likelihood ratio ln p_D(o)/p_D′(o) of released iterates o (R, T, d)."""
    obj, obj_prime = _objective(data), _objective(neighbour)
    plan = _plan(obj)
    x0 = np.asarray(NAG_AUDIT_SETTING["x0"], dtype=float)

    def statistic(outputs: np.ndarray) -> np.ndarray:
        R = outputs.shape[0]
        x_prev = x = np.broadcast_to(x0, (R, x0.size))
        loss = np.zeros(R)
        for t in range(plan.iterations):
            beta, alpha, b = plan.momenta[t], plan.steps[t], plan.scales[t]
            z = (1.0 + beta) * x - beta * x_prev
            noisy = (z - outputs[:, t]) / alpha
            loss += (np.abs(noisy - obj_prime.grad(z)) - np.abs(noisy - obj.grad(z))).sum(
                axis=1
            ) / b
            x_prev, x = x, outputs[:, t]
        return loss

    return statistic


def nag_audit_target(samples: int = 200_000) -> AuditTarget:
    """DP-NAG, T = 2, ε = 1, full batch, worst-case replace-one neighbours (pure ledger's claim)."""
    data, neighbour = nag_audit_data()
    return AuditTarget(
        "dp-nag",
        nag_audit_run,
        data,
        neighbour,
        description=nag_audit_target.__doc__.splitlines()[0],
        statistic=privacy_loss_statistic(data, neighbour),
        statistic_name="privacy loss of the iterates",
        samples=samples,
    )
