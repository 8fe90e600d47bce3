"""Pieces shared by the baselines of chen2020 §5.3: argument checks, hyper-parameters, ERM solver.

* :class:`Hyper` — base of the frozen hyper-parameter dataclasses, with
  :meth:`Hyper.from_kwargs` naming unknown keywords.
* :func:`check_budget`, :func:`check_private_model`, :func:`check_margin_model`.
* :func:`unit_ball_model` — the model on rows projected onto ``‖x‖₂ ≤ R``
  (DESIGN.md invariant 5: the perturbation baselines' sensitivities assume
  the bound, so it is enforced, not trusted).
* :func:`solve_erm` — the regularized ERM minimizer by L-BFGS, optionally with
  the linear and quadratic perturbation terms of objective perturbation, and
  a certified bound on the distance to the exact minimizer.

This module draws no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
from scipy import optimize

from ..._validation import check_delta, check_finite_array, check_positive
from ...objectives import MarginLoss, project_rows
from ..model import LinearModel, PrivateModel

__all__ = [
    "Hyper",
    "check_budget",
    "check_private_model",
    "check_margin_model",
    "start_point",
    "unit_ball_model",
    "ErmSolution",
    "solve_erm",
]


@dataclass(frozen=True)
class Hyper:
    """Base class of the baselines' hyper-parameter dataclasses."""

    @classmethod
    def from_kwargs(cls, **hyper):
        """Build from keyword arguments, naming any unknown one."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(hyper) - known)
        if unknown:
            raise TypeError(f"unknown hyper-parameter(s) {unknown} for {cls.__name__}; known: {sorted(known)}")
        return cls(**hyper)


def check_budget(epsilon, delta, *, need_delta: bool) -> tuple[float, float]:
    """ε > 0 and δ ∈ [0, 1) (δ > 0 when ``need_delta``)."""
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta("delta", delta)
    if need_delta and delta == 0.0:
        raise ValueError("delta must be in (0, 1) for this method's (epsilon, delta) accounting")
    return epsilon, delta


def check_private_model(model) -> PrivateModel:
    if not isinstance(model, PrivateModel):
        raise TypeError(
            f"model must be a dpopt.linesearch.PrivateModel (e.g. LinearModel), got {type(model).__name__}"
        )
    return model


def check_margin_model(model, method: str, *, smooth: bool = False, logistic: bool = False) -> LinearModel:
    """A :class:`LinearModel` with a margin loss (|ℓ'| ≤ 1, labels ±1) and an L2 regularizer μ > 0.

    ``smooth`` additionally requires a finite curvature bound ``c ≥ sup ℓ''``
    (objective perturbation); ``logistic`` requires the logistic loss (diffprivlib).
    """
    if not isinstance(model, LinearModel):
        raise TypeError(f"{method} needs a dpopt.linesearch.LinearModel, got {type(model).__name__}")
    loss = model.loss
    if not isinstance(loss, MarginLoss) or loss.derivative_bound > 1.0:
        raise ValueError(f"{method} needs a margin loss with |l'| <= 1 (logistic, huberized_hinge), got {loss!r}")
    if smooth and not (loss.smooth and math.isfinite(loss.curvature_bound)):
        raise ValueError(f"{method} needs a smooth loss with bounded l'' (logistic, huberized_hinge), got {loss!r}")
    if logistic and loss.name != "logistic":
        raise ValueError(f"{method} fits logistic regression only, got {loss!r}")
    if model.l2 <= 0.0:
        raise ValueError(f"{method} needs a strongly convex objective: the model's l2 must be > 0")
    return model


def start_point(model: PrivateModel, w0) -> np.ndarray:
    """The public starting point: ``w0`` if given (shape (d,)), else the model's (zeros)."""
    if w0 is None:
        return model.initial_params()
    w0 = check_finite_array("w0", w0, ndim=1)
    if w0.shape != (model.dim,):
        raise ValueError(f"w0 must have shape ({model.dim},), got {w0.shape}")
    return w0.copy()


def unit_ball_model(model: LinearModel, data_norm: float) -> tuple[LinearModel, int]:
    """``model`` on rows projected onto ``{‖x‖₂ ≤ data_norm}``, and how many rows moved.

    Returns ``model`` itself when every row already satisfies the bound.
    """
    data_norm = check_positive("data_norm", data_norm)
    X, changed = project_rows(model.X, data_norm, "l2")
    if changed == 0:
        return model, 0
    bound = data_norm if model.data_norm is None else min(data_norm, model.data_norm)
    return LinearModel(model.loss, X, model.y, l2=model.l2, data_norm=bound), changed


@dataclass(frozen=True)
class ErmSolution:
    """An approximate minimizer and the certificate of how close it is.

    ``grad_norm`` is ‖∇J(x)‖₂ at the returned point; for a λ-strongly convex J
    the exact minimizer x* satisfies ‖x − x*‖₂ ≤ grad_norm/λ (``distance_bound``).
    """

    x: np.ndarray
    fun: float
    grad_norm: float
    distance_bound: float
    nit: int


def solve_erm(model: PrivateModel, *, linear=None, extra_l2: float = 0.0, tol: float = 1e-8,
              max_iter: int = 10_000, x0=None) -> ErmSolution:
    """argmin_w J(w) = F(w) + bᵀw/n + (Δ/2)‖w‖² by L-BFGS, to ‖∇J‖₂ ≤ ``tol`` when it can.

    ``F`` is the model's regularized objective (mean loss + (μ/2)‖w‖²), ``b``
    the optional ``linear`` vector (objective perturbation's noise, chen2020
    ref. [16], Chaudhuri et al. 2011 Algorithm 2) and Δ = ``extra_l2``.  The
    returned :class:`ErmSolution` certifies the distance to the exact minimizer
    through strong convexity (modulus μ + Δ); callers that need an exact
    minimizer for their privacy argument check ``grad_norm``.
    """
    tol = check_positive("tol", tol)
    n = model.n
    b = None if linear is None else check_finite_array("linear", linear, ndim=1) / n
    delta_reg = float(extra_l2)

    objective = getattr(model, "objective", None)  # LinearModel: one data pass for both
    value_and_grad = objective.value_and_grad if objective is not None else (
        lambda w: (model.value(w), model.grad(w)))

    def fun(w):
        value, grad = value_and_grad(w)
        if b is not None:
            value, grad = value + float(b @ w), grad + b
        if delta_reg:
            value, grad = value + 0.5 * delta_reg * float(w @ w), grad + delta_reg * w
        return value, grad

    x = start_point(model, x0)
    # L-BFGS-B's gtol bounds the largest gradient entry; tol/√d bounds the L2 norm by tol.
    options = {"maxiter": max_iter, "gtol": tol / (4.0 * math.sqrt(model.dim)), "ftol": 0.0, "maxcor": 20}
    res = optimize.minimize(fun, x, jac=True, method="L-BFGS-B", options=options)
    x = np.asarray(res.x, dtype=float)
    value, grad = fun(x)
    grad_norm = float(np.linalg.norm(grad))
    modulus = model.l2 + delta_reg
    bound = grad_norm / modulus if modulus > 0 else math.inf
    return ErmSolution(x=x, fun=float(value), grad_norm=grad_norm, distance_bound=bound, nit=int(res.nit))
