"""The strongly convex quadratic of kuru2022 §3.2, eq. (3.16): ``F(x) = ½xᵀQx + aᵀx + b``."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .._validation import check_finite_array, check_nonnegative
from ._arrays import as_data_matrix, as_params
from .base import Function

__all__ = ["Quadratic"]


class Quadratic(Function):
    """``F(x) = ½ xᵀQx + aᵀx + b`` with symmetric ``Q`` (kuru2022 eq. (3.16)); ``∇F = Qx + a``.

    ``F ∈ S_{μ,L}`` with ``μ = λ_min(Q)`` and ``L = λ_max(Q)`` (Theorem 3.5 needs Q
    positive definite; :attr:`minimizer` requires it).  Works on ``(d,)`` and
    ``(R, d)`` points.
    """

    def __init__(self, Q, a=None, b: float = 0.0):
        Q = check_finite_array("Q", Q, ndim=2)
        if Q.shape[0] != Q.shape[1]:
            raise ValueError(f"Q must be square, got shape {Q.shape}")
        if not np.allclose(Q, Q.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(Q).max(initial=0))):
            raise ValueError("Q must be symmetric")
        self.Q = 0.5 * (Q + Q.T)
        d = Q.shape[0]
        self.a = np.zeros(d) if a is None else check_finite_array("a", a, ndim=1)
        if self.a.shape != (d,):
            raise ValueError(f"a must have shape ({d},), got {self.a.shape}")
        self.b = float(check_finite_array("b", b, ndim=0))

    @classmethod
    def least_squares(cls, X, y, lam: float = 0.0) -> Quadratic:
        """``(1/2n)‖Xw − y‖² + λ‖w‖²`` as ``Q = XᵀX/n + 2λI``, ``a = −Xᵀy/n``, ``b = ‖y‖²/2n``.

        The data-dependent quadratic of kuru2022 §3.2 (a sum of per-record
        quadratics); equals ``Objective(SquaredLoss(), X, y, L2(lam))``.
        """
        X = as_data_matrix(X)
        y = check_finite_array("y", y, ndim=1)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        lam = check_nonnegative("lam", lam)
        n, d = X.shape
        return cls(X.T @ X / n + 2.0 * lam * np.eye(d), -(X.T @ y) / n, float(y @ y) / (2 * n))

    @property
    def dim(self) -> int:
        return self.Q.shape[0]

    def value(self, x):
        x = as_params(x, self.dim, "x")
        v = 0.5 * np.einsum("...i,...i->...", x @ self.Q, x) + x @ self.a + self.b
        return float(v) if np.ndim(v) == 0 else v

    def grad(self, x):
        x = as_params(x, self.dim, "x")
        return x @ self.Q + self.a

    def value_and_grad(self, x):
        x = as_params(x, self.dim, "x")
        qx = x @ self.Q
        v = 0.5 * np.einsum("...i,...i->...", qx, x) + x @ self.a + self.b
        return (float(v) if np.ndim(v) == 0 else v), qx + self.a

    @cached_property
    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of Q, ascending."""
        return np.linalg.eigvalsh(self.Q)

    @property
    def smoothness(self) -> float:
        """``L = λ_max(Q)``."""
        return float(self.eigenvalues[-1])

    @property
    def strong_convexity(self) -> float:
        """``μ = λ_min(Q)`` (≤ 0 means not strongly convex)."""
        return float(self.eigenvalues[0])

    @cached_property
    def minimizer(self) -> np.ndarray:
        """``x* = −Q⁻¹a`` (Q must be positive definite)."""
        if self.strong_convexity <= 0:
            raise ValueError("Q is not positive definite: the quadratic has no unique minimizer")
        return np.linalg.solve(self.Q, -self.a)

    @property
    def min_value(self) -> float:
        """``F(x*) = b − ½ aᵀQ⁻¹a``."""
        return float(self.value(self.minimizer))

    def __repr__(self) -> str:
        return f"Quadratic(d={self.dim}, mu={self.strong_convexity:.4g}, L={self.smoothness:.4g})"
