"""Objective perturbation, the ε-DP version of Chaudhuri, Monteleoni & Sarwate 2011 (JMLR),
Algorithm 2 and Theorem 9 (chen2020 refs. [16, 20], "OBJPERT").

For J(w) = (1/n) Σ ℓ(y_i wᵀx_i) + (Λ/2)‖w‖² with

* ‖x_i‖₂ ≤ R (enforced by projecting the rows; the paper takes R = 1),
* |ℓ'| ≤ 1 and 0 ≤ ℓ'' ≤ c (logistic: c = 1/4; Huberized hinge: c = 1/(2h)),

the algorithm releases

    w_priv = argmin_w J(w) + bᵀw/n + (Δ/2)‖w‖²,     density of b ∝ exp(−β‖b‖₂).

Budget split (Algorithm 2, steps 1–3, for rows of norm ≤ R so that the
per-record Hessian term is ≤ c' = cR² and the per-record gradient ≤ R):

    ε' = ε − log(1 + 2c'/(nΛ) + c'²/(n²Λ²));
    if ε' > 0: Δ = 0;  else: Δ = c'/(n(e^{ε/4} − 1)) − Λ and ε' = ε/2;
    β = ε'/(2R).

Privacy (proof of Theorem 9): w_priv determines b, so the density ratio of
w_priv on neighbours D, D' (replace-one, same n) is the ratio of the noise
densities at b(w; D) and b(w; D') — at most exp(β·‖b − b'‖) with
‖b − b'‖ ≤ 2R, i.e. e^{ε'} — times the ratio of the Jacobians of w ↦ b,
at most (1 + c'/(n(Λ + Δ)))² = e^{ε − ε'}.  The ledger therefore records
exactly these two parts: ``VectorLaplace(scale=1/β, sensitivity=2R)`` (ε')
when the noise b is drawn through :func:`dpopt.privacy.mechanisms.vector_laplace`,
and ``PureDP(ε − ε')`` for the Jacobian factor.  The sum is ε.

The guarantee is for the *exact* minimizer; the solver stops at ‖∇‖₂ ≤ tol
(default 1e-7), so the result's guarantee kind is ``"approximate"`` (see
Iyengar et al. 2019, "Towards practical differentially private convex
optimization", for the gap and a fix).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._validation import as_generator, check_positive
from ...models import diagnostic_value
from ...oracles import run_ledger
from ...privacy import events as ev
from ...privacy import mechanisms as mech
from ...privacy import remainder
from ...result import DPResult
from ._common import Hyper, check_budget, check_margin_model, smoothness_bound, solve_erm, unit_ball_model

__all__ = ["ObjPertHyper", "ObjPertParameters", "objpert_parameters", "objective_perturbation"]


@dataclass(frozen=True)
class ObjPertHyper(Hyper):
    """Hyper-parameters of :func:`objective_perturbation`.

    Attributes
    ----------
    data_norm:
        R, the declared bound ‖x_i‖₂ ≤ R; rows beyond it are projected onto the ball.
    tol:
        Solver tolerance on ‖∇‖₂ of the perturbed objective.
    x0:
        Starting point of the solver (default zeros).  Any point may be used,
        even a data-dependent one such as the non-private solution: the
        released point is certified to be within tol/Λ of the exact minimizer
        whatever the start, which is all the privacy argument uses.
    """

    data_norm: float = 1.0
    tol: float = 1e-7
    x0: np.ndarray | None = None

    def __post_init__(self):
        check_positive("data_norm", self.data_norm)
        check_positive("tol", self.tol)


@dataclass(frozen=True)
class ObjPertParameters:
    """The quantities of Chaudhuri et al. 2011 Algorithm 2 for one (ε, n, Λ, c, R).

    ``epsilon_noise`` is ε' (paid by the noise b), ``epsilon_jacobian`` the
    Jacobian factor ε − ε' = 2 log(1 + c'/(n(Λ + Δ))), ``extra_l2`` is Δ,
    ``beta`` the noise density parameter (b ∝ e^{−β‖b‖}), ``noise_scale`` = 1/β
    and ``sensitivity`` = 2R the L2 bound on b(w; D) − b(w; D').
    """

    epsilon: float
    epsilon_noise: float
    epsilon_jacobian: float
    extra_l2: float
    beta: float
    noise_scale: float
    sensitivity: float


def objpert_parameters(epsilon: float, *, n: int, reg: float, curvature: float,
                       data_norm: float = 1.0) -> ObjPertParameters:
    """Steps 1–3 of Chaudhuri et al. 2011 Algorithm 2 (see the module docstring).

    ``reg`` is Λ (the strong-convexity modulus of the regularizer, μ of
    (μ/2)‖w‖²), ``curvature`` the bound c on ℓ'' and ``data_norm`` R.
    """
    epsilon = check_positive("epsilon", epsilon)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    reg = check_positive("reg", reg)
    curvature = check_positive("curvature", curvature)
    data_norm = check_positive("data_norm", data_norm)
    c = curvature * data_norm**2
    eps_noise = epsilon - 2.0 * math.log1p(c / (n * reg))
    if eps_noise > 0.0:
        extra = 0.0
    else:
        extra = c / (n * math.expm1(epsilon / 4.0)) - reg
        eps_noise = epsilon / 2.0
    eps_jacobian = 2.0 * math.log1p(c / (n * (reg + extra)))
    eps_noise = min(eps_noise, remainder(epsilon, eps_jacobian))  # the two parts add up to <= epsilon exactly
    beta = eps_noise / (2.0 * data_norm)
    return ObjPertParameters(epsilon=epsilon, epsilon_noise=eps_noise, epsilon_jacobian=eps_jacobian,
                             extra_l2=extra, beta=beta,
                             noise_scale=ev.scale_for_epsilon(2.0 * data_norm, eps_noise),
                             sensitivity=2.0 * data_norm)


def objective_perturbation(model, *, epsilon: float | None = None, delta: float = 0.0, rng=None,
                           ledger=None, **hyper) -> DPResult:
    """OBJPERT: ε-DP objective perturbation (Chaudhuri et al. 2011, Algorithm 2, Theorem 9).

    ``model`` is a :class:`~dpopt.linesearch.model.LinearModel` with a smooth
    margin loss (logistic, Huberized hinge) and ``l2`` = Λ > 0.  The guarantee
    is pure ε-DP under replace-one (the relation of Theorem 9); ``delta`` is
    accepted for the common calling convention and not used (δ = 0 ≤ δ).
    Hyper-parameters: the fields of :class:`ObjPertHyper`.  ``info`` holds
    the split of ε (:class:`ObjPertParameters` as a dict) and the solver's
    certificate.  ε is spent from ``ledger`` when given (pure, replace-one;
    :func:`dpopt.oracles.run_ledger`).
    """
    model = check_margin_model(model, "objpert", smooth=True)
    if ledger is None:
        check_budget(epsilon, delta, need_delta=False)
    ledger, epsilon, _ = run_ledger(ledger, epsilon, 0.0 if ledger is None else None,
                                    accountant="pure", relation="replace_one")
    h = ObjPertHyper.from_kwargs(**hyper)
    rng = as_generator(rng)
    projected, moved = unit_ball_model(model, h.data_norm)
    p = objpert_parameters(epsilon, n=model.n, reg=model.l2, curvature=model.loss.curvature_bound,
                           data_norm=h.data_norm)
    ledger.charge(ev.PureDP(p.epsilon_jacobian))
    b = mech.vector_laplace(np.zeros(model.dim), sensitivity=p.sensitivity, scale=p.noise_scale,
                            ledger=ledger, rng=rng)
    sol = solve_erm(projected, linear=b, extra_l2=p.extra_l2, tol=h.tol, x0=h.x0,
                    smoothness=smoothness_bound(model, h.data_norm))
    info = {**p.__dict__, "rows_projected": moved, "grad_norm": sol.grad_norm,
            "distance_bound": sol.distance_bound, "solver_iterations": sol.nit}
    return DPResult.from_ledger(
        ledger, x=sol.x, fun=diagnostic_value(model, sol.x), method="objpert", nit=sol.nit, info=info,
        guarantee="approximate",
        # the notes go into the privacy record: the solver's tolerance, never its data-dependent output
        notes="epsilon-DP under replace-one (Chaudhuri et al. 2011, Thm 9) for the exact minimizer of "
              f"the perturbed objective; solved to tolerance ||grad|| <= {h.tol:.2e} (the norm reached "
              "is info['grad_norm'], non-private).",
    )
