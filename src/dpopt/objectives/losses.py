"""Losses of linear models, vectorized over rows and over a batch of R parameter vectors.

A linear model's per-example loss is ``f(w; x_i, y_i) = φ(x_iᵀw, y_i)``, so its
per-example gradient is ``s_i x_i`` with the scalar coefficient
``s_i = ∂φ/∂z (x_iᵀw, y_i)``.  Everything the algorithms need then costs one
pass ``z = X w`` and one pass ``Xᵀ r``:

* mean gradient: ``r = s / n``;
* per-example gradient norms: ``|s_i|·‖x_i‖`` (row norms computed once per data set);
* the sum of per-example gradients clipped to L2 norm ``C`` (chen2020 eq. (6)):
  ``clip(s_i x_i, C) = sign(s_i)·min(|s_i|, C/‖x_i‖)·x_i``, i.e.
  ``r_i = clip(s_i, −C/‖x_i‖, C/‖x_i‖)``.

Both products and the elementwise work between them run on blocks of at least
4,096 rows (a loop over blocks, never over rows), sized so that a block's
``(R, rows)`` temporaries stay in cache between the two products.

Precision follows the data: float32 ``X`` (e.g. ``Objective(..., precision=
"float32")``) makes every pass compute in float32 and accumulate the block
sums in float64; any other ``X`` computes in float64.

Margin losses (``φ(z, y) = ℓ(y z)`` with ``y ∈ {−1, +1}``) are given by the scalar
function ``ℓ`` of the margin ``m = y xᵀw`` and its derivative ``dloss(m) = ℓ'(m)``:
logistic (chen2020 §5.1, kuru2022 eq. (5.1)), hinge (chen2020 §5.1, liu2024 eq. (27))
and the Huberized hinge of chen2020 §5.3.  The squared loss ``½(xᵀw − y)²`` takes
real labels.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from .._validation import check_positive
from . import bounds
from ._arrays import check_xy_shapes, compute_dtype, ensure_finite_result
from .base import Loss, _scalar

__all__ = [
    "LinearLoss",
    "MarginLoss",
    "LogisticLoss",
    "HingeLoss",
    "HuberizedHingeLoss",
    "SquaredLoss",
    "get_loss",
    "LOSSES",
]

#: Number of (repetition × row) entries per block: 2**18 (1 MiB of float32, 2 MiB of
#: float64 temporaries), so one parameter vector takes 262,144 rows per block and a
#: batch of R = 20 takes 13,107.  Measured on 100,000 × 20 and 50,000 × 100 data
#: (benchmarks/bench_objectives.py): larger blocks stop helping, blocks under 4,096
#: rows pay for the many small BLAS calls.
_BLOCK_ENTRIES = 2**18
_MIN_BLOCK_ROWS = 4096


def _row_blocks(n: int, repetitions: int):
    rows = max(_MIN_BLOCK_ROWS, _BLOCK_ENTRIES // max(repetitions, 1))
    for start in range(0, n, rows):
        yield slice(start, min(start + rows, n))


def _row_norms(X, y, row_norms) -> np.ndarray:
    """The given L2 row norms (shape-checked) or, without them, a pass over X."""
    if row_norms is None:
        return bounds.row_norms(X)
    if np.shape(row_norms) != y.shape:
        raise ValueError(f"row_norms must have shape {y.shape}, got {np.shape(row_norms)}")
    return np.asarray(row_norms, dtype=float)


def _accumulate(out: np.ndarray, r: np.ndarray, X: np.ndarray) -> None:
    """``out += Xᵀ r`` (one GEMV for ``r`` of shape (n,), one GEMM for (R, n)), summed in ``out``'s dtype."""
    out += X.T @ r if r.ndim == 1 else r @ X


def _floating(a) -> np.ndarray:
    """``a`` as a float32 or float64 array (other dtypes become float64)."""
    a = np.asarray(a)
    return a if a.dtype in (np.float32, np.float64) else a.astype(np.float64)


def _sigmoid_of_negative(m, out=None) -> np.ndarray:
    """``σ(−m) = 1/(1 + e^m)`` in three vectorized passes, in ``m``'s precision.

    ``e^m`` overflowing to ``inf`` gives ``0``, the correctly rounded value, so
    the overflow warning is silenced; the result lies in ``[0, 1]`` for every
    finite ``m``.  (``np.exp`` is vectorized in float32 and faster than
    ``scipy.special.expit`` in both precisions.)
    """
    with np.errstate(over="ignore"):
        e = np.exp(m, out=out)
    e += 1.0
    return np.reciprocal(e, out=e)


class LinearLoss(Loss):
    """``f(w; x, y) = φ(xᵀw, y)``: implement :meth:`phi` and :meth:`dphi`.

    Class attributes describe the loss for the constants of
    :mod:`dpopt.objectives.smoothness`: ``curvature_bound = sup φ''``,
    ``curvature_lower = inf φ''`` and ``derivative_bound = sup |φ'|`` (so a
    per-example gradient has L2 norm ≤ ``derivative_bound·‖x‖₂`` and L1 norm
    ≤ ``derivative_bound·‖x‖₁``).
    """

    curvature_bound: float = np.inf
    curvature_lower: float = 0.0
    derivative_bound: float = np.inf

    @abstractmethod
    def phi(self, z, y) -> np.ndarray:
        """Per-example loss as a function of the linear prediction ``z = xᵀw``."""

    @abstractmethod
    def dphi(self, z, y) -> np.ndarray:
        """``∂φ/∂z`` (a subgradient where φ has a kink)."""

    def _coefs(self, z, y) -> np.ndarray:
        """``s = ∂φ/∂z`` from a temporary ``z`` (subclasses may overwrite ``z`` in place)."""
        return self.dphi(z, y)

    def _clipped_coefs(self, z, y, thresholds) -> np.ndarray:
        """``clip(s, −t, t)``: coefficients of the clipped gradients (may overwrite ``z``)."""
        s = self._coefs(z, y)
        np.fmin(s, thresholds, out=s)  # (fmin/fmax: a NaN coefficient, from an overflowed x·w, becomes ±t)
        return np.fmax(s, -thresholds, out=s)

    # -- the data passes ------------------------------------------------------------------
    @staticmethod
    def linear_predictions(w, X) -> np.ndarray:
        """``z = X w``: ``(n,)`` for ``w`` ``(d,)``, ``(R, n)`` for ``w`` ``(R, d)``."""
        return X @ w if w.ndim == 1 else w @ X.T

    def _prepare(self, w, X, y):
        """Shape-checked ``w``, ``X``, ``y`` with ``w`` and ``y`` in the precision of ``X``."""
        X, y = check_xy_shapes(X, y)
        dtype = compute_dtype(X)
        return self._params(w, X).astype(dtype, copy=False), X, y.astype(dtype, copy=False)

    def per_example_grad_coefs(self, w, X, y) -> np.ndarray:
        """The coefficients ``s_i`` with ``∇f_i = s_i x_i``: ``(n,)`` or ``(R, n)``.

        ``per_example_grads(w, X, y) == coefs[..., None] * X`` without building it.
        """
        w, X, y = self._prepare(w, X, y)
        return self._coefs(self.linear_predictions(w, X), y)

    def per_example_values(self, w, X, y) -> np.ndarray:
        """``φ(x_iᵀw, y_i)`` for every row: ``(n,)`` or ``(R, n)``."""
        w, X, y = self._prepare(w, X, y)
        return self.phi(self.linear_predictions(w, X), y)

    def per_example_grads(self, w, X, y) -> np.ndarray:
        """Dense per-example gradients ``s_i x_i``: ``(n, d)`` or ``(R, n, d)`` (memory n·d·R)."""
        s = self.per_example_grad_coefs(w, X, y)
        return s[..., None] * np.asarray(X)

    def per_example_grad_norms(self, w, X, y, *, row_norms=None) -> np.ndarray:
        """``‖∇f_i‖₂ = |s_i|·‖x_i‖₂`` without forming the gradients."""
        rn = _row_norms(X, y, row_norms)
        s = self.per_example_grad_coefs(w, X, y)
        np.abs(s, out=s)
        s *= rn
        return s

    def _reduce(self, w, X, y, coefs):
        """``Σ_blocks X_bᵀ r_b`` with ``r_b = coefs(X_b w, rows of b)``: two BLAS calls per block.

        Each block's ``(R, rows)`` predictions are made, turned into coefficients
        in place and reduced while they are in cache; the block sums accumulate
        in float64 whatever the precision of ``X``.
        """
        out = np.zeros(w.shape)
        # Non-finite data show up in the result, which the callers check and explain.
        with np.errstate(invalid="ignore", over="ignore"):
            for sl in _row_blocks(X.shape[0], 1 if w.ndim == 1 else w.shape[0]):
                Xb = X[sl]
                _accumulate(out, coefs(self.linear_predictions(w, Xb), sl), Xb)
        return out

    def grad_sum(self, w, X, y) -> np.ndarray:
        """Gradient sum ``Xᵀ s``: ``(d,)`` or ``(R, d)`` (:meth:`grad` times n)."""
        w, X, y = self._prepare(w, X, y)
        out = self._reduce(w, X, y, lambda z, sl: self._coefs(z, y[sl]))
        ensure_finite_result(out, w=w, X=X, y=y)
        return out

    def grad(self, w, X, y) -> np.ndarray:
        """Mean gradient ``Xᵀ s / n``: ``(d,)`` or ``(R, d)``."""
        out = self.grad_sum(w, X, y)
        out /= np.shape(X)[0]
        return out

    def value_and_grad(self, w, X, y):
        """Mean loss and mean gradient from one pass ``X w`` and one pass ``Xᵀ s``."""
        w, X, y = self._prepare(w, X, y)
        z = self.linear_predictions(w, X)
        value = self.phi(z, y).mean(axis=-1, dtype=np.float64)
        out = np.zeros(w.shape)
        _accumulate(out, self._coefs(z, y), X)
        out /= X.shape[0]
        ensure_finite_result(out, w=w, X=X, y=y)
        ensure_finite_result(value, w=w, X=X, y=y)
        return _scalar(value), out

    def clipped_grad_sum(self, w, X, y, clip, *, row_norms=None) -> np.ndarray:
        """``Σ_i clip(∇f_i, C)`` (chen2020 eq. (6)) in one pass ``X w`` and one pass ``Xᵀ r``.

        Each clipped per-example gradient has L2 norm ≤ C, so the sum has L2
        sensitivity C under add/remove-one (2C under replace-one), see
        :func:`~dpopt.objectives.bounds.clipped_grad_sum_sensitivity`.  Pass the
        precomputed ``row_norms`` (L2 norms of the rows of X, e.g.
        ``Objective.row_norms``) to avoid an extra pass over X.
        """
        w, X, y = self._prepare(w, X, y)
        thr = bounds.clip_thresholds(_row_norms(X, y, row_norms), clip, w.dtype)
        out = self._reduce(w, X, y, lambda z, sl: self._clipped_coefs(z, y[sl], thr[sl]))
        ensure_finite_result(out, w=w, X=X, y=y)
        return out

    def clipped_mean_grad(self, w, X, y, clip, *, row_norms=None) -> np.ndarray:
        """``(1/n) Σ_i clip(∇f_i, C)`` (chen2020 eq. (6))."""
        return self.clipped_grad_sum(w, X, y, clip, row_norms=row_norms) / np.shape(X)[0]


class MarginLoss(LinearLoss):
    """``φ(z, y) = ℓ(y z)`` with labels ±1: implement :meth:`loss` and :meth:`dloss` of the margin.

    ``ℓ`` is non-increasing with ``ℓ' ∈ [−1, 0]``, so per-example gradients have
    ``‖∇f_i‖ ≤ ‖x_i‖`` in every norm and ``|s_i| = −ℓ'(m_i)``.
    """

    binary_labels = True
    derivative_bound = 1.0

    @abstractmethod
    def loss(self, m) -> np.ndarray:
        """``ℓ(m)`` of the margin ``m = y xᵀw``."""

    @abstractmethod
    def dloss(self, m) -> np.ndarray:
        """``ℓ'(m)`` (a subgradient at kinks), in ``[−1, 0]``."""

    def phi(self, z, y):
        return self.loss(y * z)

    def dphi(self, z, y):
        return y * self.dloss(y * z)

    def loss_along(self, a, b, steps) -> np.ndarray:
        """``ℓ(a_i − η_j b_i)``, one row per step η_j and one column per record i: the losses of a
        line search w − η g, with ``a = y·Xw`` and ``b = y·Xg`` (chen2020 Algorithm 1's queries)."""
        margins = np.multiply.outer(steps, b)
        np.subtract(a, margins, out=margins)
        return self.loss(margins)

    def _coefs(self, z, y):
        np.multiply(z, y, out=z)
        g = self.dloss(z)
        g *= y
        return g

    def _clipped_coefs(self, z, y, thresholds):
        # s = y·ℓ'(m) with ℓ' ≤ 0, so clip(s, ±t) = −y·min(−ℓ'(m), t).
        np.multiply(z, y, out=z)
        g = self.dloss(z)
        np.negative(g, out=g)
        np.fmin(g, thresholds, out=g)  # NaN (from an overflowed x·w) -> t: still within the clip
        g *= -y
        return g


class LogisticLoss(MarginLoss):
    """``ℓ(m) = log(1 + e^{−m})`` — chen2020 §5.1, kuru2022 eq. (5.1) (minimized, see DESIGN.md).

    ``ℓ'(m) = −σ(−m)``, ``ℓ'' = σ(m)σ(−m) ≤ 1/4``.  Computed stably with
    ``logaddexp`` and ``σ(−m) = 1/(1 + e^m)`` (no overflow for any finite margin).
    """

    name = "logistic"
    curvature_bound = 0.25

    def loss(self, m):
        m = _floating(m)
        if m.dtype == np.float64:
            return np.logaddexp(0.0, -m)
        # float32: max(−m, 0) + log(1 + e^{−|m|}) with numpy's vectorized exp and log
        # (logaddexp and log1p are not vectorized: 6× slower); absolute error ≤ 2⁻²³.
        e = np.abs(m)
        np.negative(e, out=e)
        np.exp(e, out=e)
        e += 1.0
        np.log(e, out=e)
        e += np.maximum(-m, 0.0)
        return e

    def dloss(self, m):
        return -_sigmoid_of_negative(_floating(m))

    def loss_along(self, a, b, steps) -> np.ndarray:
        if a.dtype != np.float64 or b.dtype != np.float64:
            return super().loss_along(a, b, steps)
        t = np.multiply.outer(steps, b)
        t -= a  # η b − a = −(a − η b), the same floats negated
        return np.logaddexp(0.0, t, out=t)

    def _coefs(self, z, y):
        # s = y·ℓ'(m) = −y·σ(−m), five in-place passes over the (R, block) array.
        np.multiply(z, y, out=z)  # m
        _sigmoid_of_negative(z, out=z)  # σ(−m) = |s|
        z *= -y
        return z

    def _clipped_coefs(self, z, y, thresholds):
        # −y·min(σ(−m), t), six in-place passes over the (R, block) array.
        np.multiply(z, y, out=z)
        _sigmoid_of_negative(z, out=z)
        np.fmin(z, thresholds, out=z)  # NaN (from an overflowed x·w) -> t: still within the clip
        z *= -y
        return z


class HingeLoss(MarginLoss):
    """``ℓ(m) = max(0, 1 − m)`` — the SVM loss of chen2020 §5.1 and liu2024 eq. (27).

    Not differentiable at ``m = 1``; ``dloss`` returns the subgradient ``−1`` for
    ``m < 1`` and ``0`` for ``m ≥ 1``.
    """

    name = "hinge"
    smooth = False

    def loss(self, m):
        return np.maximum(0.0, 1.0 - _floating(m))

    def dloss(self, m):
        m = _floating(m)
        return -(m < 1.0).astype(m.dtype)

    def _coefs(self, z, y):
        np.multiply(z, y, out=z)
        return np.less(z, 1.0) * -y

    def _clipped_coefs(self, z, y, thresholds):
        np.multiply(z, y, out=z)
        return np.less(z, 1.0) * (-y * np.minimum(thresholds, 1.0))


class HuberizedHingeLoss(MarginLoss):
    """The Huberized hinge loss of chen2020 §5.3 (baselines needing smoothness), ``h = 0.5``.

    ::

        ℓ(m) = 1 − m                    if m < 1 − h
               (1 + h − m)² / (4h)      if |1 − m| ≤ h
               0                        if m > 1 + h

    ``ℓ'(m) = −clip((1 + h − m)/(2h), 0, 1)``, ``ℓ'' ≤ 1/(2h)``.
    """

    name = "huberized_hinge"

    def __init__(self, h: float = 0.5):
        self.h = check_positive("h", h)
        self.curvature_bound = 1.0 / (2.0 * self.h)

    def loss(self, m):
        m = _floating(m)
        h = self.h
        quad = (1.0 + h - m) ** 2 / (4.0 * h)
        return np.where(m < 1.0 - h, 1.0 - m, np.where(m > 1.0 + h, 0.0, quad))

    def dloss(self, m):
        m = _floating(m)
        return -np.clip((1.0 + self.h - m) / (2.0 * self.h), 0.0, 1.0)

    def _ramp(self, z, ny):
        """``max((1 + h − m)/(2h), 0)`` in place, with ``(1 + h − m)/(2h) = (1 + h)/(2h) − z·y/(2h)``."""
        h = self.h
        np.multiply(z, ny / (2.0 * h), out=z)
        z += (1.0 + h) / (2.0 * h)
        return np.maximum(z, 0.0, out=z)

    def _coefs(self, z, y):
        ny = -y
        t = self._ramp(z, ny)
        np.minimum(t, 1.0, out=t)
        t *= ny
        return t

    def _clipped_coefs(self, z, y, thresholds):
        ny = -y
        t = self._ramp(z, ny)
        np.fmin(t, np.minimum(thresholds, 1.0), out=t)  # NaN (from an overflowed x·w) -> the clip
        t *= ny
        return t

    def __repr__(self) -> str:
        return f"HuberizedHingeLoss(h={self.h!r})"


class SquaredLoss(LinearLoss):
    """``φ(z, y) = ½ (z − y)²`` with real labels (least squares; the quadratic of kuru2022 §3.2).

    ``∂φ/∂z = z − y``; ``φ'' = 1``.  Gradients are unbounded unless the labels and
    parameters are, so private use needs per-example clipping.
    """

    name = "squared"
    curvature_bound = 1.0
    curvature_lower = 1.0

    def phi(self, z, y):
        return 0.5 * (z - y) ** 2

    def dphi(self, z, y):
        return z - y


#: Losses by name, for configuration files and the command line.
LOSSES = {
    "logistic": LogisticLoss,
    "hinge": HingeLoss,
    "huberized_hinge": HuberizedHingeLoss,
    "huber_svm": HuberizedHingeLoss,
    "squared": SquaredLoss,
}


def get_loss(name: str, **kwargs) -> LinearLoss:
    """A loss by name: ``"logistic"``, ``"hinge"``, ``"huberized_hinge"``, ``"squared"``.

    ``"huber_svm"`` is an alias of ``"huberized_hinge"``; a Loss instance is returned as is.
    """
    if isinstance(name, Loss):
        return name
    try:
        cls = LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {name!r}") from None
    return cls(**kwargs)
