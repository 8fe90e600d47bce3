"""The batched data term of a linear-loss objective: what the gradient oracle reads from the data.

For R parameter vectors W (R, d) it computes the mean loss gradient over all
n records, or over a *different* minibatch of m records per repetition (index
sets (R, m)), and the mean loss over all records (for reporting F(x_t)).

``precision="float64"`` (default) delegates to the objectives layer
(:class:`dpopt.objectives.Objective`, :class:`~dpopt.objectives.LinearLoss`);
the per-repetition minibatch gradient, which that layer lacks, is the small
kernel :meth:`DataPass.mean_grad` below (one gather, two batched products).

``precision="float32"`` is a fast path for the logistic loss used by the
kuru2022 experiment: data in single precision and σ(−m) = (1 − tanh(m/2))/2,
so a full pass costs two single-precision matrix products and one
vectorized tanh.  Results are returned in float64; their relative error is
of order 1e-7, far below the privacy noise.  Every per-example gradient
coefficient still lies in [0, 1], so the L1 sensitivity bound holds.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_choice
from ..objectives import LinearLoss, LogisticLoss, Objective

__all__ = ["DataPass", "PRECISIONS"]

PRECISIONS = ("float64", "float32")

# Rows per block of the float32 data pass (≈ 256 KiB of float32 temporaries for R = 20).
_BLOCK_ROWS = 4096


class DataPass:
    """Mean loss gradients of ``objective``'s data term for batched parameters (R, d)."""

    def __init__(self, objective: Objective, precision: str = "float64"):
        if not isinstance(objective, Objective):
            raise TypeError(
                f"objective must be a dpopt.objectives.Objective, got {type(objective).__name__}"
            )
        if not isinstance(objective.loss, LinearLoss):
            raise TypeError(
                f"the accelerated methods need a linear loss, got {type(objective.loss).__name__}"
            )
        self.precision = check_choice("precision", precision, PRECISIONS)
        self.objective = objective
        self.n, self.d = objective.X.shape
        if precision == "float32":
            if not isinstance(objective.loss, LogisticLoss):
                raise ValueError("precision='float32' is implemented for the logistic loss only")
            # Rows scaled by y/2: the half margins are (y/2) xᵀw = Xh @ w.
            half = (0.5 * objective.y)[:, None] * objective.X
            self._Xh = np.ascontiguousarray(half, dtype=np.float32)
            self._Xh_sum = half.sum(axis=0)
            # Row blocks, stored transposed (d, rows), so that one block's (R, rows)
            # temporaries stay in cache between the two products.
            self._blocks = [
                np.ascontiguousarray(self._Xh[i : i + _BLOCK_ROWS].T)
                for i in range(0, self.n, _BLOCK_ROWS)
            ]

    # -- gradients ------------------------------------------------------------------------
    def mean_grad(self, W: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """(1/|B_r|) Σ_{i∈B_r} ∇f(w_r; x_i, y_i) for each row w_r of W (R, d).

        ``idx`` None means B_r = all n records; otherwise ``idx`` has shape
        (R, m) and row r holds the minibatch of repetition r.
        """
        if idx is None:
            return self._full_grad(W)
        if idx.ndim != 2 or idx.shape[0] != W.shape[0]:
            raise ValueError(f"idx must have shape (R, m) with R={W.shape[0]}, got {idx.shape}")
        if self.precision == "float32":
            return self._minibatch_grad_logistic32(W, idx)
        return self._minibatch_grad(W, idx)

    def _full_grad(self, W):
        if self.precision == "float64":
            return self.objective.loss_grad(W)
        W32 = W.astype(np.float32)
        G = np.zeros((self.d, W.shape[0]))
        for XhT in self._blocks:
            H = np.matmul(W32, XhT)  # (R, rows) half margins m/2
            np.tanh(H, out=H)
            G += XhT @ H.T  # Σ_i (y_i x_i/2) tanh(m_i/2)
        return (G.T - self._Xh_sum) / self.n

    def _minibatch_grad(self, W, idx):
        X = self.objective.X[idx]  # (R, m, d)
        y = self.objective.y[idx]  # (R, m)
        z = np.matmul(X, W[:, :, None])[:, :, 0]
        s = self.objective.loss.dphi(z, y)  # ∇f_i = s_i x_i
        return np.matmul(s[:, None, :], X)[:, 0, :] / idx.shape[1]

    def _minibatch_grad_logistic32(self, W, idx):
        Xh = self._Xh[idx]  # (R, m, d)
        h = np.matmul(Xh, W.astype(np.float32)[:, :, None])  # (R, m, 1) half margins
        np.tanh(h, out=h)
        h -= 1.0  # ∇f_i = (y_i x_i/2)(tanh(m_i/2) − 1)
        G = np.matmul(Xh.transpose(0, 2, 1), h)[:, :, 0]
        return G.astype(np.float64) / idx.shape[1]

    # -- values -----------------------------------------------------------------------------
    def mean_loss(self, W: np.ndarray) -> np.ndarray:
        """(1/n) Σ_i f(w_r; x_i, y_i) for each row of W (R, d): shape (R,)."""
        if self.precision == "float64":
            return np.atleast_1d(self.objective.loss_value(W))
        # ℓ(m) = log(1 + e^{−m}) = max(−m, 0) + log 2 − log(1 + tanh(|m|/2)), with h = m/2:
        # no cancellation (1 + tanh|h| ∈ [1, 2]) and no overflow.
        W32 = W.astype(np.float32)
        negative = np.zeros(W.shape[0])
        logs = np.zeros(W.shape[0])
        for XhT in self._blocks:
            H = np.matmul(W32, XhT)
            negative += np.minimum(H, 0.0).sum(axis=1, dtype=np.float64)
            np.abs(H, out=H)
            np.tanh(H, out=H)
            H += 1.0
            np.log(H, out=H)
            logs += H.sum(axis=1, dtype=np.float64)
        return (-2.0 * negative - logs) / self.n + math.log(2.0)

    def value(self, W: np.ndarray) -> np.ndarray:
        """F(w_r) = mean loss + regularizer for each row of W: shape (R,)."""
        return self.mean_loss(W) + np.atleast_1d(self.objective.regularizer.value(W))
