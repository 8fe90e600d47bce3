"""Audit targets for the private line search: NoisyBTLS (both noises) and a short DP-BLSGD run.

Each factory returns an :class:`~dpopt.privacy.audit.AuditTarget` whose
``run(data, R, rng)`` makes R independent runs and returns ``(outputs,
ledger)``; the claim is what the ledger spent.  D is a tiny logistic data set
and D′ adds one worst-case record:

* NoisyBTLS (chen2020 Algorithm 1): at the public point w = (1, 0) with the
  public direction g = (0, −1), the added record x* = (−10, 400), y* = +1 has
  loss ≈ 10 at w (clipped to C_obj) and ≈ e^{−40} at every candidate
  w − ηg, so it raises *every* query by Δ_q = C_obj — the largest shift
  Theorem 1 allows.  The R searches are one batched call (one charge).
* DP-BLSGD (chen2020 Algorithm 2): two outer iterations on Poisson minibatches;
  the added record x* = (20, 0), y* = +1 has a per-example gradient far beyond
  C_grad and a loss far above C_obj at the start, on a coordinate no other
  record touches.  Its control flow (line-search failures, CHEB) depends on
  the data, so the R runs are made one after the other; the claim is the
  largest ε any run's ledger spent (every run stays within the same budget).

The record count used to normalize sums (``n_public`` / the ray's
``weight``) is the same fixed number on D and D′, as it must be for the
add/remove relation (see :mod:`dpopt.linesearch.oracle`).

Register them with :func:`dpopt.experiments.audits.register` (e.g. names
``"noisy-btls-laplace"``, ``"noisy-btls-gaussian"``, ``"dp-blsgd"``).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..oracles.line_search import Ray
from ..oracles.noisy_btls import noisy_btls
from ..privacy import Ledger
from ..privacy.audit import AuditTarget
from .algorithms import dp_blsgd
from .model import LinearModel

__all__ = [
    "NOISY_BTLS_SETTING",
    "DP_BLSGD_SETTING",
    "noisy_btls_audit_data",
    "noisy_btls_audit_run",
    "noisy_btls_audit_target",
    "dp_blsgd_audit_data",
    "dp_blsgd_audit_run",
    "dp_blsgd_audit_target",
]

#: NoisyBTLS audit: budgets per noise (ε_BT, ρ_BT), C_obj, η₀, β, max_it, α, weight, δ of RDP claims.
NOISY_BTLS_SETTING = {
    "budget": {"laplace": 1.0, "gaussian": 0.05},
    "cap": 1.0,
    "eta0": 1.0,
    "beta": 0.5,
    "max_it": 4,
    "alpha": 0.5,
    "weight": 4.0,
    "delta": 1e-5,
}
_W = np.array([1.0, 0.0])
_G = np.array([0.0, -1.0])

#: DP-BLSGD audit: (ε, δ), Poisson rate, outer iterations, planned iterations (budget split),
#: public n, candidate steps and eager query evaluation (fewer Python calls per run).
DP_BLSGD_SETTING = {
    "epsilon": 2.0,
    "delta": 1e-5,
    "rate": 0.5,
    "max_iter": 2,
    "planned_iterations": 2,
    "n_public": 4,
    "max_it": 5,
    "lazy": False,
}


def noisy_btls_audit_data():
    """D: four records x = (0, ±1); D′ adds x* = (−10, 400), y* = +1 (see the module docstring)."""
    X = np.array([[0.0, 1.0], [0.0, -1.0], [0.0, 1.0], [0.0, -1.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    return (X, y), (np.vstack([X, [-10.0, 400.0]]), np.append(y, 1.0))


def noisy_btls_audit_run(data, repetitions: int, rng: np.random.Generator, *, noise: str):
    """R NoisyBTLS searches along w − ηg on ``data`` → (chosen steps (R,), ledger)."""
    s = NOISY_BTLS_SETTING
    X, y = data
    model = LinearModel("logistic", X, y)
    budget = s["budget"][noise]
    ledger = (Ledger(budget) if noise == "laplace"
              else Ledger(10.0, s["delta"], "rdp"))  # an RDP claim is whatever was spent
    W = np.broadcast_to(_W, (repetitions, 2))
    G = np.broadcast_to(_G, (repetitions, 2))
    ray = Ray.of_model(model, W, G, cap=s["cap"], weight=s["weight"])
    steps = noisy_btls(ray, eta0=s["eta0"], budget=budget, ledger=ledger, rng=rng, noise=noise,
                       alpha=s["alpha"], beta=s["beta"], max_it=s["max_it"])
    return steps, ledger


def noisy_btls_audit_target(noise: str = "laplace", samples: int = 400_000) -> AuditTarget:
    """NoisyBTLS (chen2020 Alg. 1), 4 candidate steps, worst-case record shifting every query by Δ_q."""
    data, neighbour = noisy_btls_audit_data()
    return AuditTarget(
        f"noisy-btls-{noise}",
        partial(noisy_btls_audit_run, noise=noise),
        data,
        neighbour,
        description=f"NoisyBTLS ({noise}), every query shifted by the sensitivity C_obj",
        statistic_name="chosen step",
        samples=samples,
        batch_size=samples,
    )


def dp_blsgd_audit_data():
    """D: four records x = (0, ±1); D′ adds x* = (20, 0), y* = +1 (gradient and loss beyond the clips)."""
    X = np.array([[0.0, 1.0], [0.0, -1.0], [0.0, 1.0], [0.0, -1.0]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    return (X, y), (np.vstack([X, [20.0, 0.0]]), np.append(y, 1.0))


def dp_blsgd_audit_run(data, repetitions: int, rng: np.random.Generator):
    """R short DP-BLSGD runs on ``data`` → (last iterates (R, 2), the ledger that spent the most)."""
    s = DP_BLSGD_SETTING
    X, y = data
    model = LinearModel("logistic", X, y, l2=1e-3)
    outputs = np.empty((repetitions, model.dim))
    claim, spent = None, -1.0
    for r, child in enumerate(rng.spawn(repetitions)):
        result = dp_blsgd(model, epsilon=s["epsilon"], delta=s["delta"], rng=child, rate=s["rate"],
                          max_iter=s["max_iter"], planned_iterations=s["planned_iterations"],
                          n_public=s["n_public"], max_it=s["max_it"], lazy=s["lazy"])
        outputs[r] = result.x
        if result.epsilon > spent:
            spent = result.epsilon
            claim = Ledger(s["epsilon"], s["delta"], "rdp")
            for event in result.events:
                claim.charge(event)
    return outputs, claim


def dp_blsgd_audit_target(samples: int = 20_000) -> AuditTarget:
    """DP-BLSGD (chen2020 Alg. 2), 2 iterations, q = 1/2, worst-case record beyond both clips."""
    data, neighbour = dp_blsgd_audit_data()
    return AuditTarget(
        "dp-blsgd",
        dp_blsgd_audit_run,
        data,
        neighbour,
        description="DP-BLSGD, 2 iterations at q = 1/2, one record beyond C_grad and C_obj",
        classifier="linear",
        statistic_name="last iterate",
        samples=samples,
        batch_size=samples,
    )
