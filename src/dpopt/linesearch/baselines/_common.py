"""Pieces shared by the baselines of chen2020 §5.3: argument checks, hyper-parameters, ERM solver.

* :class:`Hyper` — base of the frozen hyper-parameter dataclasses, with
  :meth:`Hyper.from_kwargs` naming unknown keywords.
* :func:`check_budget`, :func:`check_private_model`, :func:`check_margin_model`.
* :func:`unit_ball_model` — the model on rows projected onto ``‖x‖₂ ≤ R``
  (DESIGN.md invariant 5: the perturbation baselines' sensitivities assume
  the bound, so it is enforced, not trusted), and :func:`smoothness_bound`, the
  public smoothness of its objective.
* :func:`solve_erm`, :func:`start_point`, :func:`diagnostic_value` — re-exported
  from :mod:`dpopt.models` (the non-private ERM solver, the public starting point
  and the non-private ``fun`` of a result are shared by every family).

This module draws no randomness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..._validation import check_delta, check_positive
from ...models import ErmSolution, LinearModel, PrivateModel, check_model, diagnostic_value, solve_erm, start_point
from ...objectives import MarginLoss, project_rows

__all__ = [
    "Hyper",
    "check_budget",
    "check_private_model",
    "check_margin_model",
    "start_point",
    "unit_ball_model",
    "smoothness_bound",
    "ErmSolution",
    "solve_erm",
    "diagnostic_value",
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
    """``model`` if it implements :class:`dpopt.models.PrivateModel` (``TypeError`` otherwise)."""
    return check_model(model)


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


def smoothness_bound(model: LinearModel, data_norm: float) -> float | None:
    """L = sup ℓ''·R² + μ, the public smoothness of F on rows projected onto ‖x‖₂ ≤ R (None for a
    loss without a finite curvature bound): lets :func:`solve_erm` finish where L-BFGS stops short."""
    curvature = float(model.loss.curvature_bound)
    return curvature * check_positive("data_norm", data_norm) ** 2 + model.l2 if math.isfinite(curvature) else None


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
