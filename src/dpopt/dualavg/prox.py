"""The local step (6) of Algorithm 1 in closed form.

x = argmin_x ⟨z, x⟩ + c·h(x) + γ·d(x), with c = ι·A_t, d(x) = ½‖x‖² and

* h = μ/2‖x‖²:  x = −z/(cμ + γ);
* h = φ‖x‖₁:    x = −sign(z)·max(|z| − cφ, 0)/γ (soft thresholding);
* h = 0:        x = −z/γ;

optionally with a box lo ≤ x ≤ hi added to h (its indicator; ι·1_box = 1_box):
every objective is separable and strictly convex per coordinate, so the box
solution is the unconstrained one clipped coordinate-wise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_nonnegative

__all__ = ["Regularizer"]


@dataclass(frozen=True)
class Regularizer:
    """h(x): ``kind`` in {"l2", "l1", "none"} with weight ``strength`` (μ or φ), plus an optional box."""

    kind: str = "l2"
    strength: float = 0.0
    lower: float = -np.inf
    upper: float = np.inf

    def __post_init__(self):
        check_choice("regularizer", self.kind, ("l2", "l1", "none"))
        object.__setattr__(self, "strength", check_nonnegative("strength", self.strength))
        if not self.lower < self.upper:
            raise ValueError(f"box must have lower < upper, got [{self.lower}, {self.upper}]")

    @property
    def mu(self) -> float:
        """Strong-convexity modulus of h (Assumption 1)."""
        return self.strength if self.kind == "l2" else 0.0

    def value(self, x: np.ndarray) -> np.ndarray:
        """h(x) over the last axis (the box's indicator is not added)."""
        if self.kind == "l2":
            return 0.5 * self.strength * np.sum(x * x, axis=-1)
        if self.kind == "l1":
            return self.strength * np.sum(np.abs(x), axis=-1)
        return np.zeros(np.shape(x)[:-1])

    def argmin(self, z: np.ndarray, c: float, gamma: float) -> np.ndarray:
        """argmin_x ⟨z, x⟩ + c·h(x) + γ/2‖x‖² (eq. (6)), row-wise over the last axis."""
        curvature = c * self.mu + gamma
        if not curvature > 0:
            raise ValueError(
                f"step (6) needs c*mu + gamma > 0 (got c={c}, mu={self.mu}, gamma={gamma}); use gamma > 0 "
                "with an l1 or no regularizer"
            )
        if self.kind == "l1":
            x = -np.sign(z) * np.maximum(np.abs(z) - c * self.strength, 0.0) / gamma
        else:
            x = np.divide(z, -curvature)  # −z/curvature, one pass
        if np.isfinite(self.lower) or np.isfinite(self.upper):
            x = np.clip(x, self.lower, self.upper)
        return x
