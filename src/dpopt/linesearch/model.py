"""The model interface the private line-search algorithms program against (chen2020 §4).

DP-BLSGD (chen2020 Algorithm 2) touches the data through exactly two
per-record quantities, both bounded before they are summed:

* the per-example gradient clipped to L2 norm ``C_grad`` (eq. (6)), whose sum
  over a minibatch has L2 sensitivity ``C_grad`` under add/remove-one;
* the per-example loss clipped to ``[0, C_obj]`` (the objective clipping of
  chen2020 §4.1, after Theorem 1), whose sum has sensitivity ``C_obj``.

:class:`PrivateModel` is that contract.  Convex linear models implement it
with :class:`LinearModel` (built on :mod:`dpopt.objectives`); a neural
network can implement it later (issue "neural networks") by providing the two
clipped sums for a flat parameter vector.

Regularization.  The objective is

    F(w) = (1/n) Σ_i f(w; d_i) + r(w),     r(w) = (μ/2)‖w‖²  (chen2020 §5.1, μ = 0.001),

i.e. ``l2=μ`` is the strong-convexity modulus the regularizer adds
(``dpopt.objectives.L2(μ/2)``, whose own convention is λ‖w‖² with λ = μ/2).
The paper only says "L2 regularization with a coefficient μ"; μ/2 is the
convention under which μ is the strong convexity.  The regularizer is
data-independent, so it stays *outside* the clipped sums: algorithms add
``regularizer_grad(w)`` to the noisy data gradient and ``weight·r(w)`` to the
clipped loss sum, at no privacy cost.

The number of records ``n`` is treated as public, as in DP-SGD (Abadi et al.
2016) and DP-AGD (Lee & Kifer 2018): it only normalizes sums.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from .._validation import check_nonnegative, check_positive
from ..objectives import L2, Objective, Zero
from ..objectives._arrays import as_params

__all__ = ["PrivateModel", "LinearModel"]

#: Rows of a minibatch gathered at a time (512 × d float64: a few hundred KiB, cache-resident).
_BLOCK_ROWS = 512


def _scalar(v):
    return float(v) if np.ndim(v) == 0 else v


def _steps_for(steps, w: np.ndarray) -> np.ndarray:
    """Candidate steps: ``(k,)`` for ``w`` of shape ``(d,)``, ``(R, k)`` for ``(R, d)`` (shape check only)."""
    steps = np.asarray(steps, dtype=float)
    if steps.ndim != w.ndim or (w.ndim == 2 and steps.shape[0] != w.shape[0]):
        raise ValueError(
            "steps must have shape (k,) for w of shape (d,) and (R, k) for (R, d); "
            f"got {steps.shape} for w {w.shape}"
        )
    return steps


def _check_direction(w, direction, dim: int) -> tuple[np.ndarray, np.ndarray]:
    w = as_params(w, dim)
    direction = as_params(direction, dim, "direction")
    if w.shape != direction.shape:
        raise ValueError(f"direction must have the shape of w {w.shape}, got {direction.shape}")
    return w, direction


class PrivateModel(ABC):
    """What the private line-search algorithms need from a model (chen2020 Algorithm 2).

    Parameters are a flat vector ``w`` of shape ``(d,)``; implementations may
    also accept a batch ``(R, d)`` where that is cheap (every method then
    returns one result per row).  ``indices`` selects records (an integer
    array, typically drawn by a :class:`~dpopt.privacy.PoissonSampler`);
    ``None`` means all ``n`` records.

    Subclasses implement :attr:`n`, :attr:`dim`,
    :meth:`per_example_clipped_grad_sum`, :meth:`clipped_loss_sum`,
    :meth:`loss_value` and :meth:`loss_grad`; :meth:`clipped_loss_along` has
    a generic implementation that a model can override with a cheaper one.
    ``l2`` is μ of r(w) = (μ/2)‖w‖².
    """

    l2: float = 0.0

    # -- shape ---------------------------------------------------------------------------
    @property
    @abstractmethod
    def n(self) -> int:
        """Number of records (public)."""

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length ``d`` of the flat parameter vector."""

    # -- the two private queries ---------------------------------------------------------
    @abstractmethod
    def per_example_clipped_grad_sum(self, w, indices, clip) -> tuple[np.ndarray, int]:
        """``(Σ_{i∈indices} clip(∇f_i(w), C), |indices|)`` with chen2020 eq. (6).

        Every term has L2 norm ≤ ``clip``, so the sum has L2 sensitivity
        ``clip`` under add/remove-one.  The count is for diagnostics only (it is
        data-dependent under Poisson sampling and must not be released).
        """

    @abstractmethod
    def clipped_loss_sum(self, w, indices, cap):
        """``Σ_{i∈indices} min{max{f_i(w), 0}, C_obj}``: sensitivity ``cap`` (chen2020 Thm 1).

        Every term lies in ``[0, cap]`` (enforced, not assumed), which is what
        the proof of Theorem 1 needs.  A float for ``w`` ``(d,)``; ``(R,)`` for ``(R, d)``.
        """

    def clipped_loss_along(self, w, direction, indices, cap) -> Callable[[np.ndarray], np.ndarray]:
        """``values(steps)``: :meth:`clipped_loss_sum` at ``w − η·direction`` for η in ``steps``.

        These are the values NoisyBTLS compares (chen2020 Algorithm 1, line 7).
        ``steps`` has a last axis of k candidates (shape ``(k,)``, or ``(R, k)``
        for batched ``w``); the result has the same shape.  The records are
        fixed when this is called, so every query of one line search sees the
        same minibatch.  This generic version calls :meth:`clipped_loss_sum`
        once per candidate point (it needs no batch support); :class:`LinearModel`
        computes ``X w`` and ``X·direction`` once and then only evaluates the
        loss per candidate.
        """
        w, direction = _check_direction(w, direction, self.dim)
        cap = check_positive("cap", cap)

        def values(steps):
            steps = _steps_for(steps, w)
            points = w[..., None, :] - steps[..., :, None] * direction[..., None, :]
            flat = points.reshape(-1, self.dim)  # one candidate point per row (few of them)
            out = [self.clipped_loss_sum(point, indices, cap) for point in flat]
            return np.asarray(out, dtype=float).reshape(points.shape[:-1])

        return values

    # -- non-private reporting -----------------------------------------------------------
    @abstractmethod
    def loss_value(self, w):
        """Mean loss over all records, no regularizer (non-private; for reporting)."""

    @abstractmethod
    def loss_grad(self, w) -> np.ndarray:
        """Mean loss gradient over all records, no regularizer (non-private)."""

    def regularizer_value(self, w):
        """r(w) = (μ/2)‖w‖² (data-independent)."""
        w = as_params(w, self.dim)
        return _scalar(0.5 * self.l2 * np.einsum("...i,...i->...", w, w))

    def regularizer_grad(self, w) -> np.ndarray:
        """∇r(w) = μ·w (data-independent)."""
        return self.l2 * as_params(w, self.dim)

    def value(self, w):
        """F(w) = mean loss + r(w) over all records (non-private)."""
        return self.loss_value(w) + self.regularizer_value(w)

    def grad(self, w) -> np.ndarray:
        """∇F(w) over all records (non-private)."""
        return self.loss_grad(w) + self.regularizer_grad(w)

    def initial_params(self) -> np.ndarray:
        """The data-independent starting point w₀ = 0."""
        return np.zeros(self.dim)


class LinearModel(PrivateModel):
    """A linear model ``f(w; x, y) = φ(xᵀw, y)`` on data ``X (n, d)``, ``y (n,)``.

    Parameters
    ----------
    loss:
        A :class:`~dpopt.objectives.LinearLoss` or its name (``"logistic"``,
        ``"huberized_hinge"``, ``"hinge"``, ``"squared"``).  Theorem 1's bound
        needs losses ≥ 0; the clipped-loss query clips to ``[0, C_obj]`` anyway.
    X, y:
        Data and labels (±1 for classification losses); validated once.
    l2:
        μ ≥ 0 of the regularizer r(w) = (μ/2)‖w‖² (chen2020 §5.1 uses μ = 0.001).

    Both private queries cost one product with the selected rows ``X_B``:
    per-example gradient norms are ``|φ'(z_i)|·‖x_i‖`` with the row norms
    computed once (:class:`~dpopt.objectives.Objective`), and the loss at every
    candidate step of a line search is ``φ(z − η u)`` with ``z = X_B w`` and
    ``u = X_B g`` computed once per search.
    """

    def __init__(self, loss, X, y, l2: float = 0.0):
        self.l2 = check_nonnegative("l2", l2)
        regularizer = L2(self.l2 / 2.0) if self.l2 > 0 else Zero()
        self.objective = Objective(loss, X, y, regularizer)
        self.loss = self.objective.loss
        if not hasattr(self.loss, "phi"):
            raise TypeError(f"LinearModel needs a LinearLoss, got {type(self.loss).__name__}")

    @property
    def n(self) -> int:
        return self.objective.n

    @property
    def dim(self) -> int:
        return self.objective.dim

    @property
    def X(self) -> np.ndarray:
        return self.objective.X

    @property
    def y(self) -> np.ndarray:
        return self.objective.y

    def _row_blocks(self, indices):
        """``(X_b, y_b, ‖x‖_b)`` over the selected records, in cache-sized blocks.

        A minibatch is gathered block by block (``np.take``) and every pass a
        query needs is made while the block is in cache, so each selected row
        is read from memory once per query instead of once per pass.  With
        ``indices=None`` the full data is yielded as one block (sequential
        passes; the loss blocks them itself).
        """
        obj = self.objective
        if indices is None:
            yield obj.X, obj.y, obj.row_norms
            return
        indices = np.asarray(indices)
        if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
            raise ValueError(
                "indices must be a 1-D integer array of record indices, "
                f"got shape {indices.shape} and dtype {indices.dtype}"
            )
        for start in range(0, len(indices), _BLOCK_ROWS):
            idx = indices[start : start + _BLOCK_ROWS]
            yield (np.take(obj.X, idx, axis=0), np.take(obj.y, idx),
                   np.take(obj.row_norms, idx))

    def _predictions(self, vectors, indices):
        """``(X_B v, y_B)`` for each of ``vectors`` (each ``(d,)`` or ``(R, d)``), one pass per block."""
        parts, labels = [[] for _ in vectors], []
        for X, y, _ in self._row_blocks(indices):
            if vectors[0].ndim == 1:
                both = X @ np.stack(vectors, axis=-1)  # (b, len(vectors))
                for part, column in zip(parts, both.T, strict=True):
                    part.append(column)
            else:
                for part, v in zip(parts, vectors, strict=True):
                    part.append(self.loss.linear_predictions(v, X))
            labels.append(y)
        if not labels:  # an empty minibatch
            shape = vectors[0].shape[:-1] + (0,)
            return [np.zeros(shape) for _ in vectors], np.zeros(0)
        return [np.concatenate(p, axis=-1) for p in parts], np.concatenate(labels)

    def per_example_clipped_grad_sum(self, w, indices, clip):
        w = as_params(w, self.dim)
        check_positive("clip", clip)
        total, count = np.zeros(w.shape), 0
        for X, y, norms in self._row_blocks(indices):
            total += self.loss.clipped_grad_sum(w, X, y, clip, row_norms=norms)
            count += X.shape[0]
        return total, count

    def clipped_loss_sum(self, w, indices, cap):
        w = as_params(w, self.dim)
        cap = check_positive("cap", cap)
        (z,), y = self._predictions([w], indices)
        return _scalar(np.clip(self.loss.phi(z, y), 0.0, cap).sum(axis=-1))

    def clipped_loss_along(self, w, direction, indices, cap):
        w, direction = _check_direction(w, direction, self.dim)
        cap = check_positive("cap", cap)
        (z, u), y = self._predictions([w, direction], indices)  # (m,) or (R, m) each
        labels = y[:, None]

        def values(steps):
            steps = _steps_for(steps, w)
            margins = z[..., :, None] - u[..., :, None] * steps[..., None, :]  # (..., m, k)
            return np.clip(self.loss.phi(margins, labels), 0.0, cap).sum(axis=-2)

        return values

    def loss_value(self, w):
        return self.objective.loss_value(as_params(w, self.dim))

    def loss_grad(self, w) -> np.ndarray:
        return self.objective.loss_grad(as_params(w, self.dim))

    def value(self, w):
        return self.objective.value(as_params(w, self.dim))

    def grad(self, w) -> np.ndarray:
        return self.objective.grad(as_params(w, self.dim))

    def accuracy(self, w, X=None, y=None):
        """Fraction of ``sign(x_iᵀw) == y_i`` (±1 labels; the training data by default)."""
        X = self.X if X is None else np.asarray(X, dtype=float)
        y = self.y if y is None else np.asarray(y, dtype=float)
        z = self.loss.linear_predictions(as_params(w, self.dim), X)
        return _scalar(np.mean(np.where(z >= 0, 1.0, -1.0) == y, axis=-1))

    def __repr__(self) -> str:
        return f"LinearModel({self.loss!r}, n={self.n}, d={self.dim}, l2={self.l2!r})"
