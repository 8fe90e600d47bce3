"""Smoothness ``L`` and strong convexity ``μ`` of regularized empirical risks, and Lipschitz bounds.

For a linear loss ``F(w) = (1/n) Σ φ(x_iᵀw, y_i) + h(w)`` the Hessian of the data
term is ``(1/n) Xᵀ diag(φ'') X``, so

    L = sup φ'' · λ_max(XᵀX/n) + L_h,        μ = inf φ'' · λ_min(XᵀX/n) + μ_h.

Exact values (``convention="exact"``): logistic ``sup φ'' = 1/4`` →
``L = λ_max(XᵀX)/(4n) + 2λ``, ``μ = 2λ``; squared ``L = λ_max(XᵀX/n) + 2λ``,
``μ = λ_min(XᵀX/n) + 2λ``; Huberized hinge ``sup φ'' = 1/(2h)``; hinge is not
smooth (``L = inf``).

``convention="kuru2022"`` reproduces kuru2022 §5: ``L`` is the largest eigenvalue of
``UᵀU/n + 2λI`` (the logistic factor ¼ is *not* applied) and ``μ = 2λ``.

A non-smooth regularizer (L1, indicators) contributes 0 to both: proximal methods
treat it through its prox, and the constants are those of the smooth part.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_positive
from ._arrays import as_data_matrix
from .losses import LinearLoss
from .regularizers import L2, Regularizer, Zero

__all__ = [
    "Constants",
    "gram_eigenvalue_range",
    "smoothness_constants",
    "kuru2022_constants",
    "lipschitz_bound",
]

#: Above this many features λ_max comes from a truncated SVD and λ_min is not computed.
_DENSE_GRAM_MAX_D = 4096


@dataclass(frozen=True)
class Constants:
    """Smoothness ``L``, strong convexity ``μ`` and the convention that produced them."""

    L: float
    mu: float
    convention: str = "exact"

    @property
    def condition_number(self) -> float:
        """``κ = L/μ`` (``inf`` when μ = 0)."""
        return self.L / self.mu if self.mu > 0 else np.inf


def gram_eigenvalue_range(X) -> tuple[float, float]:
    """``(λ_min, λ_max)`` of ``XᵀX/n`` (λ_min reported as 0 above 4096 features)."""
    X = as_data_matrix(X)
    n, d = X.shape
    if d <= _DENSE_GRAM_MAX_D:
        ev = np.linalg.eigvalsh(X.T @ X / n)
        return max(float(ev[0]), 0.0), float(ev[-1])
    from scipy.sparse.linalg import svds  # lazy: only needed for very wide data

    s = svds(X, k=1, return_singular_vectors=False)
    return 0.0, float(s[0]) ** 2 / n


def _reg(regularizer) -> Regularizer:
    if regularizer is None:
        return Zero()
    if not isinstance(regularizer, Regularizer):
        raise TypeError(f"regularizer must be a dpopt.objectives.Regularizer, got {type(regularizer).__name__}")
    return regularizer


def smoothness_constants(loss: LinearLoss, X, regularizer=None, *, convention: str = "exact") -> Constants:
    """``(L, μ)`` of ``mean loss + regularizer`` on the data ``X``; see the module docstring."""
    check_choice("convention", convention, ("exact", "kuru2022"))
    if not isinstance(loss, LinearLoss):
        raise TypeError(f"loss must be a dpopt.objectives.LinearLoss, got {type(loss).__name__}")
    reg = _reg(regularizer)
    lo, hi = gram_eigenvalue_range(X)
    if convention == "kuru2022":
        return Constants(L=hi + reg.smoothness, mu=reg.strong_convexity, convention="kuru2022")
    curv = loss.curvature_bound
    L = np.inf if not np.isfinite(curv) else curv * hi + reg.smoothness
    mu = loss.curvature_lower * lo + reg.strong_convexity
    return Constants(L=float(L), mu=float(mu), convention="exact")


def kuru2022_constants(X, lam: float) -> Constants:
    """kuru2022 §5: ``L = λ_max(UᵀU/n + 2λI)`` (no ¼) and ``μ = 2λ``.

    For the ``λ‖x‖²``-regularized logistic loss, as the authors' code computes it
    (``svds(1/n*(X'*X) + 2*lambda*eye(d), 1)``).
    """
    from .losses import LogisticLoss

    return smoothness_constants(LogisticLoss(), X, L2(lam), convention="kuru2022")


def lipschitz_bound(loss: LinearLoss, row_bound: float) -> float:
    """Bound on every per-example gradient norm, ``sup|φ'|·‖x‖ ≤ sup|φ'|·row_bound``.

    The norm is the one ``row_bound`` refers to (L2 for clipping, L1 for kuru2022
    eq. (5.2)).  ``inf`` for the squared loss (unbounded derivative).
    """
    if not isinstance(loss, LinearLoss):
        raise TypeError(f"loss must be a dpopt.objectives.LinearLoss, got {type(loss).__name__}")
    return float(loss.derivative_bound * check_positive("row_bound", row_bound))
