"""Regularizers ``h`` with closed-form proximal maps, on ``(d,)`` and ``(R, d)`` points.

``prox(x, t) = argmin_p { ½‖p − x‖² + t·h(p) }``.  Regularizers are data-independent:
a private algorithm adds their gradient or applies their prox *after* the noisy
data term, at no privacy cost.

* :class:`L2` — ``λ‖x‖²`` (kuru2022 eq. (5.1), liu2024 §5.2 with λ = μ/2): prox ``x/(1 + 2λt)``.
* :class:`L1` — ``λ‖x‖₁`` (liu2024 §5.3): soft thresholding at ``λt``.
* :class:`Box` — indicator of ``{lo ≤ x ≤ hi}`` (the polytope of han2014 §5.1): clipping.
* :class:`L2Ball`, :class:`L1Ball` — indicators of norm balls: Euclidean projection.
* :func:`prox_dual_averaging` — the dual-averaging step of liu2024 eq. (6) with ``d(x) = ½‖x‖²``.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite_array, check_nonnegative, check_positive
from . import bounds
from ._arrays import as_params, per_row

__all__ = [
    "Regularizer",
    "Zero",
    "L2",
    "L1",
    "Box",
    "L2Ball",
    "L1Ball",
    "prox_dual_averaging",
]

#: Relative tolerance of the indicator regularizers' membership test (their own
#: projections land inside exactly; this only absorbs rounding in user inputs).
_TOL = 1e-9


def _out(v):
    return float(v) if np.ndim(v) == 0 else v


class Regularizer:
    """Base class: ``value``, ``grad`` (smooth ones), ``subgradient`` and ``prox``.

    ``strong_convexity`` and ``smoothness`` are the regularizer's contributions to
    the constants ``μ`` and ``L`` of a composite objective
    (:mod:`dpopt.objectives.smoothness`).  Non-smooth regularizers report
    ``smoothness = 0``: proximal methods handle them through :meth:`prox`.
    """

    smooth: bool = True
    strong_convexity: float = 0.0
    smoothness: float = 0.0

    def value(self, x) -> float | np.ndarray:
        """``h(x)``: a float for ``(d,)``, an array ``(R,)`` for ``(R, d)``."""
        raise NotImplementedError

    def grad(self, x) -> np.ndarray:
        """``∇h(x)``; raises ``TypeError`` for non-smooth regularizers (use prox or subgradient)."""
        raise TypeError(f"{type(self).__name__} is not differentiable: use its prox (proximal methods) or subgradient")

    def subgradient(self, x) -> np.ndarray:
        """An element of ``∂h(x)`` (the gradient where ``h`` is smooth)."""
        return self.grad(x)

    def prox(self, x, step) -> np.ndarray:
        """``argmin_p ½‖p − x‖² + step·h(p)``; ``step`` a scalar or one value per repetition."""
        raise NotImplementedError

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class Zero(Regularizer):
    """``h = 0`` (no regularization); prox is the identity."""

    def value(self, x):
        x = as_params(x, name="x")
        return _out(np.zeros(x.shape[:-1]))

    def grad(self, x):
        return np.zeros_like(as_params(x, name="x"))

    def prox(self, x, step):
        x = as_params(x, name="x")
        per_row(step, x, "step")
        return x.copy()


class L2(Regularizer):
    """``h(x) = λ‖x‖₂²`` (note: no ½), ``∇h = 2λx``, ``prox(x, t) = x/(1 + 2λt)``; μ = L = 2λ."""

    def __init__(self, lam: float):
        self.lam = check_nonnegative("lam", lam)

    @property
    def strong_convexity(self) -> float:  # type: ignore[override]
        return 2.0 * self.lam

    @property
    def smoothness(self) -> float:  # type: ignore[override]
        return 2.0 * self.lam

    def value(self, x):
        x = as_params(x, name="x")
        return _out(self.lam * np.einsum("...i,...i->...", x, x))

    def grad(self, x):
        return 2.0 * self.lam * as_params(x, name="x")

    def prox(self, x, step):
        x = as_params(x, name="x")
        t = per_row(step, x, "step")
        return x / (1.0 + 2.0 * self.lam * t)


class L1(Regularizer):
    """``h(x) = λ‖x‖₁``; subgradient ``λ·sign(x)`` (0 at 0); prox = soft thresholding at ``λt``."""

    smooth = False

    def __init__(self, lam: float):
        self.lam = check_nonnegative("lam", lam)

    def value(self, x):
        x = as_params(x, name="x")
        return _out(self.lam * np.abs(x).sum(axis=-1))

    def subgradient(self, x):
        return self.lam * np.sign(as_params(x, name="x"))

    def prox(self, x, step):
        x = as_params(x, name="x")
        t = per_row(step, x, "step")
        return np.sign(x) * np.maximum(np.abs(x) - self.lam * t, 0.0)


class _Indicator(Regularizer):
    """Indicator of a closed convex set C: ``h = 0`` on C, ``+inf`` outside; prox = projection."""

    smooth = False

    def contains(self, x) -> bool | np.ndarray:
        raise NotImplementedError

    def project(self, x) -> np.ndarray:
        raise NotImplementedError

    def value(self, x):
        x = as_params(x, name="x")
        return _out(np.where(self.contains(x), 0.0, np.inf))

    def subgradient(self, x):
        """``0 ∈ N_C(x)`` for ``x ∈ C``; the subdifferential is empty outside C (ValueError)."""
        x = as_params(x, name="x")
        if not np.all(self.contains(x)):
            raise ValueError(f"x lies outside the set of {self!r}: the subdifferential is empty")
        return np.zeros_like(x)

    def prox(self, x, step):
        x = as_params(x, name="x")
        per_row(step, x, "step")
        return self.project(x)


class Box(_Indicator):
    """Indicator of ``{x : lo ≤ x ≤ hi}`` (scalars or ``(d,)`` arrays); prox clips coordinates.

    han2014 §5.1 uses the hypercube ``−c ≤ x ≤ c``: ``Box(-c, c)``.
    """

    def __init__(self, lo, hi):
        lo_a = check_finite_array("lo", lo, ndim=(0, 1))
        hi_a = check_finite_array("hi", hi, ndim=(0, 1))
        if np.any(lo_a > hi_a):
            raise ValueError("Box needs lo <= hi in every coordinate")
        self.lo = float(lo_a) if lo_a.ndim == 0 else lo_a
        self.hi = float(hi_a) if hi_a.ndim == 0 else hi_a

    def contains(self, x):
        scale = _TOL * np.maximum(1.0, np.maximum(np.abs(self.lo), np.abs(self.hi)))
        return np.all((x >= self.lo - scale) & (x <= self.hi + scale), axis=-1)

    def project(self, x):
        return np.clip(x, self.lo, self.hi)


class L2Ball(_Indicator):
    """Indicator of ``{x : ‖x‖₂ ≤ radius}``; prox = ``x·min(1, radius/‖x‖)``."""

    def __init__(self, radius: float):
        self.radius = check_positive("radius", radius)

    def contains(self, x):
        return bounds.row_norms(x, "l2") <= self.radius * (1.0 + _TOL)

    def project(self, x):
        return bounds.project_l2_ball(x, self.radius)


class L1Ball(_Indicator):
    """Indicator of ``{x : ‖x‖₁ ≤ radius}``; prox = Euclidean projection (Duchi et al. 2008)."""

    def __init__(self, radius: float):
        self.radius = check_positive("radius", radius)

    def contains(self, x):
        return bounds.row_norms(x, "l1") <= self.radius * (1.0 + _TOL)

    def project(self, x):
        return bounds.project_l1_ball(x, self.radius)


def prox_dual_averaging(z, beta, h: Regularizer | None = None, scale=1.0) -> np.ndarray:
    """``argmin_x { ⟨z, x⟩ + scale·h(x) + β·½‖x‖² }`` in closed form.

    This is the primal step of dual averaging with prox-function
    ``d(x) = ½‖x‖²`` — liu2024 eq. (2) (``scale = t``, ``β = γ_t``) and eq. (6)
    (``scale = ιA_{t+1}``, ``β = γ_{t+1}``).  Completing the square,
    ``⟨z, x⟩ + (β/2)‖x‖² = (β/2)‖x + z/β‖² − ‖z‖²/(2β)``, so the minimizer is
    ``prox_{(scale/β)·h}(−z/β)``.  ``z`` may be ``(d,)`` or ``(R, d)``; ``beta``
    and ``scale`` scalars or one value per repetition.
    """
    z = as_params(z, name="z")
    b = per_row(beta, z, "beta")
    s = np.asarray(scale, dtype=float)
    if s.ndim == 0:
        s = check_nonnegative("scale", float(s))
    else:
        s = np.asarray(per_row(s, z, "scale"))
    x0 = -z / b
    if h is None or isinstance(h, Zero) or np.all(np.asarray(s) == 0):
        return x0
    if not isinstance(h, Regularizer):
        raise TypeError(f"h must be a dpopt.objectives.Regularizer, got {type(h).__name__}")
    step = s / b
    if np.ndim(step) == 2:
        step = step[:, 0]
    return h.prox(x0, step)
