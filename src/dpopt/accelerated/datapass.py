"""The batched data term of a linear-loss objective: what the gradient oracle reads from the data.

For R parameter vectors W (R, d) it computes the mean loss gradient over all
n records, or over a *different* minibatch of m records per repetition (index
sets (R, m)), and the objective F over all records (for reporting F(x_t)).

Every pass is the objectives layer's (:class:`dpopt.objectives.Objective`,
:class:`~dpopt.objectives.LinearLoss`); the per-repetition minibatch gradient,
which that layer lacks, is the small kernel :meth:`DataPass.mean_grad` below
(one gather, two batched products).

``precision="float32"`` runs the same passes on the objective's float32 copy of
the data (rounded toward zero, so every row keeps its L1 bound; see
:meth:`dpopt.objectives.Objective.with_precision`): the kuru2022 experiment's
fast path.  Results are returned in float64 with a relative error of order
1e-7, far below the privacy noise; every per-example gradient coefficient of
a margin loss still lies in [−1, 1], so the L1 sensitivity bound holds.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_choice
from ..objectives import PRECISIONS, LinearLoss, Objective

__all__ = ["DataPass", "PRECISIONS"]


class DataPass:
    """Mean loss gradients of ``objective``'s data term for batched parameters (R, d).

    ``precision`` None follows the objective's own precision.
    """

    def __init__(self, objective: Objective, precision: str | None = None):
        if not isinstance(objective, Objective):
            raise TypeError(
                f"objective must be a dpopt.objectives.Objective, got {type(objective).__name__}"
            )
        if not isinstance(objective.loss, LinearLoss):
            raise TypeError(
                f"the accelerated methods need a linear loss, got {type(objective.loss).__name__}"
            )
        if precision is None:
            precision = objective.precision
        self.precision = check_choice("precision", precision, PRECISIONS)
        self.objective = objective.with_precision(precision)
        self.n, self.d = objective.X.shape

    # -- gradients ------------------------------------------------------------------------
    def grad_sum(self, W: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """Σ_{i∈B_r} ∇f(w_r; x_i, y_i) for each row w_r of W (R, d): :meth:`mean_grad` times |B_r|."""
        if idx is None:
            return self.objective.loss_grad_sum(W)
        self._check_idx(W, idx)
        return self._minibatch_grad_sum(W, idx)

    def mean_grad(self, W: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        """(1/|B_r|) Σ_{i∈B_r} ∇f(w_r; x_i, y_i) for each row w_r of W (R, d).

        ``idx`` None means B_r = all n records; otherwise ``idx`` has shape
        (R, m) and row r holds the minibatch of repetition r.
        """
        if idx is None:
            return self.objective.loss_grad(W)
        self._check_idx(W, idx)
        return self._minibatch_grad_sum(W, idx) / idx.shape[1]

    @staticmethod
    def _check_idx(W, idx):
        if idx.ndim != 2 or idx.shape[0] != W.shape[0]:
            raise ValueError(f"idx must have shape (R, m) with R={W.shape[0]}, got {idx.shape}")

    def _minibatch_grad_sum(self, W, idx):
        X, y = self.objective.pass_data
        X, y = X[idx], y[idx]  # (R, m, d), (R, m)
        z = np.matmul(X, W.astype(X.dtype)[:, :, None])[:, :, 0]
        s = self.objective.loss.dphi(z, y)  # ∇f_i = s_i x_i
        return np.matmul(s[:, None, :], X)[:, 0, :].astype(np.float64)

    # -- values -----------------------------------------------------------------------------
    def value(self, W: np.ndarray) -> np.ndarray:
        """F(w_r) = mean loss + regularizer for each row of W (R, d): shape (R,)."""
        return np.atleast_1d(self.objective.value(W))
