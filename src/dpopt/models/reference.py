"""Non-private references every family may compare against (no privacy guarantee).

* :func:`solve_erm` — the regularized ERM minimizer of a model by L-BFGS, with
  optional linear and quadratic perturbation terms (objective perturbation)
  and a certified bound on the distance to the exact minimizer.
* :func:`predict` / :func:`accuracy` — sign(Xw) predictions (ties → +1) of a
  result, a parameter vector ``(d,)`` or a batch ``(R, d)``; a constant-label
  result (the private majority class, ``info["constant_label"]``) predicts its label.
* :func:`diagnostic_value` — F(w) for a result's non-private ``fun`` and trajectory,
  NaN where one record makes it overflow (no error, no warning).

Everything here reads data without noise: it is for references and for
evaluation on held-out data, never for a release under a guarantee.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .._validation import check_finite_array, check_positive
from .base import PrivateModel, start_point

__all__ = ["ErmSolution", "solve_erm", "predict", "accuracy", "diagnostic_value"]


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
              max_iter: int = 10_000, x0=None, smoothness: float | None = None) -> ErmSolution:
    """argmin_w J(w) = F(w) + bᵀw/n + (Δ/2)‖w‖² by L-BFGS, to ‖∇J‖₂ ≤ ``tol`` when it can.

    ``F`` is the model's regularized objective (mean loss + (μ/2)‖w‖²), ``b``
    the optional ``linear`` vector (objective perturbation's noise, chen2020
    ref. [16], Chaudhuri et al. 2011 Algorithm 2) and Δ = ``extra_l2``.  The
    returned :class:`ErmSolution` certifies the distance to the exact minimizer
    through strong convexity (modulus μ + Δ); callers that need an exact
    minimizer for their privacy argument check ``grad_norm``.

    Where L-BFGS stops short of ``tol`` (it did on ordinary data with an ill-conditioned J, on
    one of two neighbouring data sets), and J is strongly convex with a public smoothness bound
    L of F (``smoothness``, default ``model.smoothness_bound``), the search goes on from its point
    by Nesterov's accelerated gradient (:func:`_accelerate`), which reaches ‖∇J‖₂ ≤ ``tol`` on
    every data set in exact arithmetic: whether the certificate is reached then depends on public
    constants, not on the data.
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
    nit = int(res.nit)
    smoothness = model.smoothness_bound if smoothness is None else check_positive("smoothness", smoothness)
    if grad_norm > tol and modulus > 0 and smoothness is not None:
        x, extra = _accelerate(fun, x, grad, grad_norm, smoothness=smoothness + delta_reg,
                               modulus=modulus, tol=tol)
        value, grad = fun(x)
        grad_norm, nit = float(np.linalg.norm(grad)), nit + extra
    bound = grad_norm / modulus if modulus > 0 else math.inf
    return ErmSolution(x=x, fun=float(value), grad_norm=grad_norm, distance_bound=bound, nit=nit)


def _accelerate(fun, x, grad, grad_norm: float, *, smoothness: float, modulus: float, tol: float):
    """``(point, iterations)``: Nesterov's accelerated gradient for a μ-strongly convex, L-smooth J
    (constant momentum (√κ − 1)/(√κ + 1), κ = L/μ; Nesterov 2004, §2.2, the constant step scheme for
    μ > 0) from ``x``,
    stopped at the first point with ‖∇J‖₂ ≤ ``tol``, else the point of least ‖∇J‖₂ seen.

    The iteration cap (:func:`_iteration_cap`) is what the scheme's rate guarantees.
    """
    kappa = max(smoothness / modulus, 1.0)
    root = math.sqrt(kappa)
    momentum = (root - 1.0) / (root + 1.0)
    cap = _iteration_cap(kappa, grad_norm, tol)
    best, best_norm = x, grad_norm
    previous, y, gy = x, x, grad
    for k in range(1, cap + 1):
        current = y - gy / smoothness
        y = current + momentum * (current - previous)
        previous = current
        _, gy = fun(y)
        norm = float(np.linalg.norm(gy))
        if norm < best_norm:
            best, best_norm = y, norm
        if norm <= tol:
            return y, k
    return best, cap


def _iteration_cap(kappa: float, grad_norm: float, tol: float) -> int:
    """Iterations after which :func:`_accelerate` has reached ‖∇J(y_k)‖₂ ≤ ``tol`` in exact arithmetic.

    The scheme's rate J(x_k) − J* ≤ ρ^k (J(x₀) − J* + μ‖x₀ − x*‖²/2), ρ = 1 − 1/√κ, from
    ‖∇J(x₀)‖ = g₀ (so J(x₀) − J* ≤ g₀²/(2μ) and ‖x₀ − x*‖ ≤ g₀/μ) gives ‖x_k − x*‖ ≤ √2 (g₀/μ) ρ^{k/2};
    with y_k = (1 + β) x_k − β x_{k−1}, β < 1, ‖∇J(y_k)‖ ≤ L(2‖x_k − x*‖ + ‖x_{k−1} − x*‖)
    ≤ 3√2 κ g₀ ρ^{(k−1)/2}, which is ≤ ``tol`` once (k − 1)/2 ≥ √κ ln(3√2 κ g₀/tol) (ln(1/ρ) ≥ 1/√κ).
    """
    return 2 * math.ceil(math.sqrt(kappa) * math.log(max(3.0 * math.sqrt(2.0) * kappa * grad_norm / tol, 1.0))) + 2


def diagnostic_value(model: PrivateModel, w):
    """F(w) = ``model.value(w)`` for a result's non-private ``fun`` and trajectory; NaN where it is
    not finite, with no error and no warning.

    A finite record so large that its loss overflows (x·w beyond the float range, possible without
    a declared data bound) makes F(w) inf or NaN, for which ``model.value`` warns and raises
    ``FloatingPointError``.  A run computes F after its releases: raising there would withhold x
    on the neighbour holding that record only, after its budget was spent.
    """
    with np.errstate(all="ignore"):
        try:
            return model.value(w)
        except FloatingPointError:
            nan = np.full(np.shape(w)[:-1], math.nan)
            return float(nan) if nan.ndim == 0 else nan


def _params_and_label(result_or_w):
    from ..result import DPResult  # noqa: PLC0415 -- the result type sits above the models layer

    if isinstance(result_or_w, DPResult):
        return np.asarray(result_or_w.x, dtype=float), result_or_w.info.get("constant_label")
    return np.asarray(result_or_w, dtype=float), None


def predict(result_or_w, X) -> np.ndarray:
    """Labels ±1 = sign(Xw) with ties → +1: ``(n,)`` for w ``(d,)``, ``(R, n)`` for ``(R, d)``.

    ``result_or_w`` is a :class:`~dpopt.result.DPResult` or a parameter array;
    a result with ``info["constant_label"]`` (:func:`~dpopt.oracles.majority`)
    predicts that label for every row.
    """
    X = check_finite_array("X", X, ndim=2)
    w, label = _params_and_label(result_or_w)
    w = check_finite_array("w", w, ndim=(1, 2))
    if w.shape[-1] != X.shape[1]:
        raise ValueError(f"w has {w.shape[-1]} coefficients but X has {X.shape[1]} columns")
    shape = w.shape[:-1] + (X.shape[0],)
    if label is not None:
        return np.full(shape, float(label))
    z = X @ w if w.ndim == 1 else w @ X.T
    return np.where(z >= 0.0, 1.0, -1.0)


def accuracy(result_or_w, X, y):
    """Fraction of rows with ``predict == y``: a float, or ``(R,)`` for a batch of parameters."""
    y = check_finite_array("y", y, ndim=1)
    pred = predict(result_or_w, X)
    if pred.shape[-1] != y.shape[0]:
        raise ValueError(f"y must have {pred.shape[-1]} labels, got {y.shape[0]}")
    out = np.mean(pred == y, axis=-1)
    return float(out) if np.ndim(out) == 0 else out
