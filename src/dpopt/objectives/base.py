"""The two interfaces every algorithm family programs against.

:class:`Function` — a deterministic objective ``F(x)`` evaluated at one point
``x`` of shape ``(d,)`` or at a batch of ``R`` points of shape ``(R, d)``:
``value`` → ``()``/``(R,)``, ``grad`` → ``(d,)``/``(R, d)``.  Implemented by
:class:`~dpopt.objectives.Objective` (mean loss + regularizer over a data set),
:class:`~dpopt.objectives.Quadratic` (kuru2022 eq. (3.16)) and
:class:`~dpopt.objectives.MaxAffine` (han2014 eq. (2), where ``grad`` is a
subgradient).

:class:`Loss` — a per-example loss ``f(w; x_i, y_i)`` over a data matrix ``X``
``(n, d)`` and labels ``y`` ``(n,)``.  The generic implementations below work from
the dense per-example gradients, so any model (e.g. a PyTorch module wrapped to
take numpy parameters) only has to provide :meth:`Loss.per_example_values` and
:meth:`Loss.per_example_grads`; linear models
(:class:`~dpopt.objectives.losses.LinearLoss`) override the rest with paths that
never build the ``(n, d)`` tensor.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .._validation import check_finite_array
from . import bounds
from ._arrays import as_params, check_xy_shapes, ensure_finite_result

__all__ = ["Function", "Loss"]


class Function(ABC):
    """A deterministic objective over ``R^d`` evaluated on ``(d,)`` or ``(R, d)`` points."""

    #: Whether :meth:`grad` is a gradient (True) or only a subgradient (False).
    smooth: bool = True

    @property
    @abstractmethod
    def dim(self) -> int:
        """The dimension ``d`` of the parameter vector."""

    @abstractmethod
    def value(self, x) -> float | np.ndarray:
        """``F(x)``: a float for ``x`` of shape ``(d,)``, an array ``(R,)`` for ``(R, d)``."""

    @abstractmethod
    def grad(self, x) -> np.ndarray:
        """``∇F(x)`` (a subgradient where ``smooth`` is False), same shape as ``x``."""

    def value_and_grad(self, x) -> tuple[float | np.ndarray, np.ndarray]:
        """Both at once (subclasses share the data pass where they can)."""
        return self.value(x), self.grad(x)

    def __call__(self, x):
        return self.value(x)


def _scalar(v):
    return float(v) if np.ndim(v) == 0 else v


class Loss(ABC):
    """A per-example loss ``f(w; x_i, y_i)``; parameters ``w`` of shape ``(d,)`` or ``(R, d)``.

    Shapes: ``per_example_values`` → ``(n,)``/``(R, n)``; ``per_example_grads`` →
    ``(n, d)``/``(R, n, d)``; ``value`` → scalar/``(R,)``; ``grad`` and the clipped
    gradient sums → ``(d,)``/``(R, d)``.

    Inputs are trusted to be finite (the data enter through
    :class:`~dpopt.objectives.Objective` or :mod:`dpopt.datasets`, which check them
    once); reductions verify their own result and name the bad input if it is not
    finite.
    """

    #: Short name used in reports and by :func:`~dpopt.objectives.losses.get_loss`.
    name: str = "loss"
    #: Whether the per-example loss is differentiable (hinge: False, grads are subgradients).
    smooth: bool = True
    #: Whether the labels must be ±1.
    binary_labels: bool = False

    # -- to implement -----------------------------------------------------------------
    @abstractmethod
    def per_example_values(self, w, X, y) -> np.ndarray:
        """``f(w; x_i, y_i)`` for every row: ``(n,)`` or ``(R, n)``."""

    @abstractmethod
    def per_example_grads(self, w, X, y) -> np.ndarray:
        """``∇_w f(w; x_i, y_i)`` for every row: ``(n, d)`` or ``(R, n, d)``."""

    # -- generic implementations ----------------------------------------------------------
    def check_labels(self, y, name: str = "y", *, require_both: bool = False) -> np.ndarray:
        """Validate labels once (e.g. ±1 for classification losses) and return them as floats."""
        if self.binary_labels:
            return bounds.check_binary_labels(y, name, require_both=require_both)
        return check_finite_array(name, y, ndim=1)

    def value(self, w, X, y) -> float | np.ndarray:
        """Mean loss ``(1/n) Σ_i f(w; x_i, y_i)``."""
        out = self.per_example_values(w, X, y).mean(axis=-1, dtype=np.float64)
        ensure_finite_result(out, w=w, X=X, y=y)
        return _scalar(out)

    def grad(self, w, X, y) -> np.ndarray:
        """Mean gradient ``(1/n) Σ_i ∇f(w; x_i, y_i)``."""
        out = self.per_example_grads(w, X, y).mean(axis=-2)
        ensure_finite_result(out, w=w, X=X, y=y)
        return out

    def value_and_grad(self, w, X, y):
        """Mean loss and mean gradient."""
        return self.value(w, X, y), self.grad(w, X, y)

    def per_example_grad_norms(self, w, X, y, *, row_norms=None) -> np.ndarray:
        """L2 norm of every per-example gradient: ``(n,)`` or ``(R, n)``."""
        return bounds.row_norms(self.per_example_grads(w, X, y), "l2")

    def clipped_grad_sum(self, w, X, y, clip, *, row_norms=None) -> np.ndarray:
        """``Σ_i clip(∇f_i, C)`` with chen2020 eq. (6); L2 sensitivity C (add/remove).

        ``row_norms`` (the L2 norms of the rows of X) lets linear models skip a
        pass over X; the generic implementation ignores it.
        """
        G = bounds.clip_by_l2_norm(self.per_example_grads(w, X, y), clip)
        out = G.sum(axis=-2)
        ensure_finite_result(out, w=w, X=X, y=y)
        return out

    def clipped_mean_grad(self, w, X, y, clip, *, row_norms=None) -> np.ndarray:
        """``(1/n) Σ_i clip(∇f_i, C)`` (chen2020 eq. (6)); see :meth:`clipped_grad_sum`."""
        X, y = check_xy_shapes(X, y)
        return self.clipped_grad_sum(w, X, y, clip, row_norms=row_norms) / X.shape[0]

    def clipped_values(self, w, X, y, cap) -> np.ndarray:
        """Loss clipping ``min{f_i, C_obj}`` per example: ``(n,)`` or ``(R, n)``."""
        return bounds.clip_values(self.per_example_values(w, X, y), cap)

    def clipped_value_sum(self, w, X, y, cap) -> float | np.ndarray:
        """``Σ_i min{f_i, C_obj}`` — the line-search query of chen2020 (sensitivity C_obj)."""
        out = self.clipped_values(w, X, y, cap).sum(axis=-1, dtype=np.float64)
        ensure_finite_result(out, w=w, X=X, y=y)
        return _scalar(out)

    # -- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _params(w, X) -> np.ndarray:
        return as_params(w, np.shape(X)[1])

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
