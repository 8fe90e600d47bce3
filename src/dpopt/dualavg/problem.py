"""The distributed problem (liu2024 eq. (1)): node shards, the local clipped subgradient, F(x).

F(x) = (1/n) Σ_i f_i(x) + h(x), f_i(x) = (1/q_i) Σ_j ℓ(x; ξ_i^(j)) for a
margin loss ℓ (hinge by default, eq. (27)).  A node only ever reads its own
shard; the per-record subgradient is clipped to the Lipschitz bound L
(Assumption 3 enforced, not trusted: DESIGN.md invariant 5).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite_array
from ..objectives import HingeLoss, LogisticLoss
from ..objectives.bounds import clip_thresholds, row_norms
from ..objectives.losses import MarginLoss

__all__ = ["LOSSES", "check_shard", "clipped_mean_subgradient", "local_loss_sum", "objective"]

LOSSES = {"hinge": HingeLoss, "logistic": LogisticLoss}


def check_shard(X, y, node: int) -> tuple[np.ndarray, np.ndarray]:
    """Validated (X (q, d), y (q,) in {−1, +1}) of one node."""
    X = check_finite_array(f"X of node {node}", X, ndim=2)
    y = check_finite_array(f"y of node {node}", y, ndim=1)
    if len(y) != len(X) or len(y) == 0:
        raise ValueError(f"node {node}: X and y must have the same, non-zero number of rows")
    if not np.all(np.abs(y) == 1.0):
        raise ValueError(f"node {node}: labels y must be -1 or +1")
    return X, y


def clipped_mean_subgradient(
    rows: np.ndarray, labels: np.ndarray, x: np.ndarray, loss: MarginLoss, clip: float
) -> np.ndarray:
    """Mean over the batch of per-record subgradients clipped to ‖·‖ ≤ ``clip``; (k, d).

    ``rows`` (k, b, d), ``labels`` (k, b): k draws of b records each (from
    any nodes); ``x`` (k, d): the point of each draw.  Algorithm 1 step 6 with b = 1.
    A record's subgradient is coef · row, so coef is clipped to ±``clip``/‖row‖
    (:func:`~dpopt.objectives.bounds.clip_thresholds`): a huge but finite record
    (‖row‖ or row·x overflowing) gets a bounded, finite subgradient and no warning,
    as every other record does.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        margins = labels * np.einsum("kbd,kd->kb", rows, x)
        coef = loss.dloss(margins) * labels
        thr = clip_thresholds(row_norms(rows), clip)
    coef = np.fmax(np.fmin(coef, thr), -thr)  # fmin/fmax: a NaN coefficient (from an overflowed row·x) becomes ±thr
    if rows.shape[1] == 1:
        return coef * rows[:, 0]
    return np.einsum("kb,kbd->kd", coef, rows) / rows.shape[1]


def local_loss_sum(X: np.ndarray, y: np.ndarray, x: np.ndarray, loss: MarginLoss) -> np.ndarray:
    """f_i(x) for points x (..., d): the mean loss over the shard (non-private diagnostic)."""
    return np.mean(loss.loss(y * (x @ X.T)), axis=-1)


def objective(shards, x: np.ndarray, loss: MarginLoss, regularizer) -> np.ndarray:
    """F(x) of eq. (1) for points x (..., d) (non-private: reads every shard)."""
    f = np.mean([local_loss_sum(X, y, x, loss) for X, y in shards], axis=0)
    return f + regularizer.value(x)
