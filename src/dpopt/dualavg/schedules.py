"""Step parameters a_t and γ_t of Algorithm 1 (liu2024 Corollaries 3.2–3.6).

* ``"strongly_convex"`` (Cor. 3.2/3.5, h μ-strongly convex): a_t = t and a
  constant γ_t = γ (the corollaries take γ = 0; §5.2 uses γ = 20);
  A_t = t(t+1)/2.
* ``"convex"`` (Cor. 3.4/3.6): a_t = 1, γ_t = γ√t; A_t = t.

``d(x) = ½‖x‖²`` (1-strongly convex) throughout.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_nonnegative

__all__ = ["Schedule", "SCHEDULES"]

SCHEDULES = ("strongly_convex", "convex")


@dataclass(frozen=True)
class Schedule:
    kind: str
    gamma: float

    def __post_init__(self):
        check_choice("schedule", self.kind, SCHEDULES)
        object.__setattr__(self, "gamma", check_nonnegative("gamma", self.gamma))

    def a(self, t):
        t = np.asarray(t, dtype=float)
        return t if self.kind == "strongly_convex" else np.ones_like(t)

    def A(self, t):
        """A_t = Σ_{τ≤t} a_τ (A_0 = 0)."""
        t = np.asarray(t, dtype=float)
        return t * (t + 1.0) / 2.0 if self.kind == "strongly_convex" else t

    def gamma_at(self, t):
        t = np.asarray(t, dtype=float)
        return np.full_like(t, self.gamma) if self.kind == "strongly_convex" else self.gamma * np.sqrt(t)
