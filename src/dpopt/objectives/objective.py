"""A regularized empirical risk ``F(w) = (1/n) Σ_i f(w; x_i, y_i) + h(w)`` over one data set.

The data are validated once here (NaN/inf refused, labels checked for the loss);
the per-call work is then the loss's data passes.  Row norms are computed once
and cached, so clipped gradient sums cost one pass ``X w`` and one pass ``Xᵀ r``.
Minibatches are selected with ``idx`` (indices or a boolean mask); the sampler
that draws ``idx`` belongs to the privacy core (DESIGN.md invariant 6).

``precision="float32"`` keeps a float32 copy of the data, rounded toward zero so
that no row norm grows, and every data pass reads it: 2–3× faster for the
logistic loss at d = 20, with results accurate to about 1e-7 relative, far below
any privacy noise (benchmarks/bench_objectives.py).  ``X`` and ``y`` stay the
float64 data of record.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .._validation import check_choice
from . import bounds
from ._arrays import PRECISIONS, as_data_matrix, as_params, to_precision
from .base import Function, Loss
from .losses import LinearLoss, get_loss
from .regularizers import Regularizer, Zero
from .smoothness import Constants, smoothness_constants

__all__ = ["Objective"]


class Objective(Function):
    """``F(w) = mean loss + regularizer`` with ``value``/``grad`` on ``(d,)`` and ``(R, d)``.

    Parameters
    ----------
    loss:
        A :class:`~dpopt.objectives.Loss` or its name (``"logistic"``, ``"hinge"``,
        ``"huberized_hinge"``, ``"squared"``).
    X, y:
        Data ``(n, d)`` and labels ``(n,)`` (±1 for classification losses).
    regularizer:
        A :class:`~dpopt.objectives.Regularizer` (default none).  It is
        data-independent: :meth:`clipped_grad_sum` and the other private-query
        helpers cover the loss only, and an algorithm adds ``regularizer.grad``
        (or applies ``regularizer.prox``) after the noise.
    row_norms:
        Precomputed L2 row norms of the rows the data passes read (optional;
        otherwise computed lazily once).  Norms larger than the true ones are
        safe: they only clip more.
    precision:
        ``"float64"`` (default) or ``"float32"``: the precision of the data
        passes (gradients, clipped gradient sums, values); see the module notes.
    """

    def __init__(
        self, loss, X, y, regularizer: Regularizer | None = None, *, row_norms=None, precision: str = "float64"
    ):
        self.precision = check_choice("precision", precision, PRECISIONS)
        self.loss: Loss = get_loss(loss)
        self.X = as_data_matrix(X)
        self.y = self.loss.check_labels(y, "y")
        if self.y.shape != (self.X.shape[0],):
            raise ValueError(f"y must have shape ({self.X.shape[0]},) to match X {self.X.shape}, got {self.y.shape}")
        if regularizer is None:
            regularizer = Zero()
        if not isinstance(regularizer, Regularizer):
            raise TypeError(f"regularizer must be a dpopt.objectives.Regularizer, got {type(regularizer).__name__}")
        self.regularizer = regularizer
        if row_norms is not None:
            rn = np.asarray(row_norms, dtype=float)
            if rn.shape != self.y.shape:
                raise ValueError(f"row_norms must have shape {self.y.shape}, got {rn.shape}")
            self.__dict__["row_norms"] = rn
        if self.precision != "float64":
            self.pass_data  # noqa: B018 -- build (and check) the copy now, not in the first pass

    # -- shape and data -----------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of records."""
        return self.X.shape[0]

    @property
    def dim(self) -> int:
        return self.X.shape[1]

    d = dim

    @property
    def smooth(self) -> bool:  # type: ignore[override]
        return bool(self.loss.smooth and self.regularizer.smooth)

    @cached_property
    def pass_data(self) -> tuple[np.ndarray, np.ndarray]:
        """``(X, y)`` as the data passes read them: the data of record, or their float32 copy."""
        if self.precision == "float64":
            return self.X, self.y
        return to_precision(self.X, self.precision), self.y.astype(self.precision)

    @cached_property
    def row_norms(self) -> np.ndarray:
        """L2 norm of every row the data passes read (computed once, in float64)."""
        return bounds.row_norms(self.pass_data[0], "l2")

    def _data(self, idx):
        X, y = self.pass_data
        if idx is None:
            return X, y, self.row_norms
        return X[idx], y[idx], self.row_norms[idx]

    def subset(self, idx) -> Objective:
        """The same objective on the records ``idx`` (e.g. a training fold)."""
        return Objective(
            self.loss, self.X[idx], self.y[idx], self.regularizer, row_norms=self.row_norms[idx],
            precision=self.precision,
        )

    def with_precision(self, precision: str) -> Objective:
        """The same objective with its data passes in ``precision`` (``self`` if unchanged)."""
        if check_choice("precision", precision, PRECISIONS) == self.precision:
            return self
        return Objective(self.loss, self.X, self.y, self.regularizer, precision=precision)

    # -- Function interface ------------------------------------------------------------------
    def value(self, w):
        """``F(w)``: mean loss plus regularizer."""
        w = as_params(w, self.dim)
        return self.loss.value(w, *self.pass_data) + self.regularizer.value(w)

    def grad(self, w):
        """``∇F(w)``; needs a smooth regularizer (else use :meth:`loss_grad` with its prox)."""
        w = as_params(w, self.dim)
        return self.loss.grad(w, *self.pass_data) + self.regularizer.grad(w)

    def value_and_grad(self, w):
        w = as_params(w, self.dim)
        v, g = self.loss.value_and_grad(w, *self.pass_data)
        return v + self.regularizer.value(w), g + self.regularizer.grad(w)

    def subgradient(self, w):
        """An element of ``∂F(w)`` (loss subgradient + regularizer subgradient)."""
        w = as_params(w, self.dim)
        return self.loss.grad(w, *self.pass_data) + self.regularizer.subgradient(w)

    # -- the data term (what private oracles query) -------------------------------------------
    def loss_value(self, w, idx=None):
        """Mean loss over all records or over ``idx`` (no regularizer)."""
        X, y, _ = self._data(idx)
        return self.loss.value(w, X, y)

    def loss_grad(self, w, idx=None):
        """Mean loss gradient over all records or over ``idx`` (no regularizer)."""
        X, y, _ = self._data(idx)
        return self.loss.grad(w, X, y)

    def loss_grad_sum(self, w, idx=None):
        """Sum of the loss gradients over all records or over ``idx`` (no regularizer)."""
        X, y, _ = self._data(idx)
        return self.loss.grad_sum(w, X, y)

    def per_example_values(self, w, idx=None):
        X, y, _ = self._data(idx)
        return self.loss.per_example_values(w, X, y)

    def per_example_grads(self, w, idx=None):
        X, y, _ = self._data(idx)
        return self.loss.per_example_grads(w, X, y)

    def per_example_grad_norms(self, w, idx=None):
        X, y, rn = self._data(idx)
        return self.loss.per_example_grad_norms(w, X, y, row_norms=rn)

    def clipped_grad_sum(self, w, clip, idx=None):
        """``Σ_{i∈idx} clip(∇f_i(w), C)`` (chen2020 eq. (6)); L2 sensitivity C under add/remove."""
        X, y, rn = self._data(idx)
        return self.loss.clipped_grad_sum(w, X, y, clip, row_norms=rn)

    def clipped_mean_grad(self, w, clip, idx=None):
        """The mean of the clipped per-example gradients over all records or ``idx``."""
        X, y, rn = self._data(idx)
        return self.loss.clipped_mean_grad(w, X, y, clip, row_norms=rn)

    def clipped_value_sum(self, w, cap, idx=None):
        """``Σ_{i∈idx} min{f_i(w), C_obj}`` (chen2020 Thm 1 query); sensitivity C_obj."""
        X, y, _ = self._data(idx)
        return self.loss.clipped_value_sum(w, X, y, cap)

    # -- constants ----------------------------------------------------------------------------
    def constants(self, convention: str = "exact") -> Constants:
        """``(L, μ)``: exact, or ``"kuru2022"`` (λ_max(XᵀX/n) + 2λ without ¼, μ = 2λ)."""
        if not isinstance(self.loss, LinearLoss):
            raise TypeError("constants are available for linear losses only")
        return smoothness_constants(self.loss, self.X, self.regularizer, convention=convention)

    def __repr__(self) -> str:
        extra = "" if self.precision == "float64" else f", precision={self.precision!r}"
        return f"Objective({self.loss!r}, n={self.n}, d={self.dim}, regularizer={self.regularizer!r}{extra})"
