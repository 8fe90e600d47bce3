"""Budget adaptation of the private line search: CHEB (chen2020 Algorithm 3) and GradAvg.

Everything here is post-processing of privately released gradients: it draws
no noise and touches no data, so it costs no privacy (chen2020 §4.2).

* :func:`angle_between` and :class:`AngleAverage` — the moving average of the
  angles between consecutive noisy gradients, eq. (7), initialised at 90°.
* :func:`angle_thresholds` — θ_max = φ_max·θ̄, θ_min = φ_min·θ̄, eq. (8).
* :func:`cheb` — Algorithm 3, lines 5–12: given the gradient g̃_t that failed
  the line search and a second, independent noisy gradient g̃_t2 at the same
  point, decide whether the gradient budget ρ_grad or the line-search budget
  ε_BT grows by (1 + ξ), and average the two gradients.
* :func:`gradient_average` — GradAvg of DP-AGD (Lee & Kifer 2018, Alg. 2): the
  budget-weighted average of two independent noisy gradients, used by
  DP-BLGD's budget increase.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_nonnegative, check_open_unit, check_positive

__all__ = [
    "INITIAL_ANGLE",
    "angle_between",
    "AngleAverage",
    "angle_thresholds",
    "ChebOutcome",
    "cheb",
    "gradient_average",
]

#: θ̄ before any angle has been measured (chen2020 Algorithm 2, line 2).
INITIAL_ANGLE = 90.0


def angle_between(a, b) -> float:
    """Angle between two vectors in degrees, in [0, 180] (90 if either is zero)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be vectors of the same shape, got {a.shape} and {b.shape}")
    # ‖a‖·‖b‖ as np.linalg.norm computes it (sqrt of the dot product), without its dispatch
    norm = math.sqrt(a.dot(a)) * math.sqrt(b.dot(b))
    if norm == 0.0 or not math.isfinite(norm):
        return INITIAL_ANGLE
    cosine = min(max(float(a @ b) / norm, -1.0), 1.0)
    return math.degrees(math.acos(cosine))  # (the floats of np.degrees(np.arccos(·)), without the ufunc calls)


@dataclass
class AngleAverage:
    """θ̄ ← ψ θ̄ + (1 − ψ) θ_t, the moving average of eq. (7); ``value`` starts at 90°."""

    psi: float = 0.8
    value: float = INITIAL_ANGLE

    def __post_init__(self):
        self.psi = check_open_unit("psi", self.psi)
        self.value = check_nonnegative("value", self.value)

    def update(self, theta: float) -> float:
        """Fold in the angle θ_t between consecutive gradients; returns the new θ̄."""
        theta = check_nonnegative("theta", theta)
        self.value = self.psi * self.value + (1.0 - self.psi) * theta
        return self.value


def angle_thresholds(theta_bar: float, phi_max: float, phi_min: float) -> tuple[float, float]:
    """(θ_max, θ_min) = (φ_max θ̄, φ_min θ̄), eq. (8), with φ_max > 1 and 0 < φ_min < 1."""
    theta_bar = check_nonnegative("theta_bar", theta_bar)
    phi_max = check_positive("phi_max", phi_max)
    if phi_max <= 1.0:
        raise ValueError(f"phi_max must be > 1, got {phi_max!r}")
    phi_min = check_open_unit("phi_min", phi_min)
    return phi_max * theta_bar, phi_min * theta_bar


@dataclass(frozen=True)
class ChebOutcome:
    """Result of :func:`cheb`.

    ``action`` is ``"gradient"`` (ρ_grad was enlarged, Algorithm 3 line 8),
    ``"line_search"`` (ε_BT was enlarged, line 10) or ``"none"``.
    """

    rho_grad: float
    budget_bt: float
    gradient: np.ndarray
    theta: float
    action: str


def cheb(g, g2, *, rho_grad: float, budget_bt: float, xi: float, theta_bar: float,
         phi_max: float = 1.1, phi_min: float = 0.5, force_gradient: bool = False) -> ChebOutcome:
    """Check and Enlarge Budget (chen2020 Algorithm 3, lines 5–12).

    ``g`` is g̃_t (the gradient the line search failed with) and ``g2`` the
    independent noisy gradient g̃_t2 drawn at the same point with budget
    ``rho_grad`` (lines 2–4, done by the caller through the privacy core).  If
    g·g2 < 0 or θ = ∠(g, g2) > θ_max the gradient is judged too noisy and
    ρ_grad ← (1 + ξ)ρ_grad; else if θ < θ_min the gradient is judged reliable
    and the line search's budget ε_BT (or ρ_BT) ← (1 + ξ)·budget.  Either way
    the two gradients are averaged (line 11).  ``force_gradient`` skips the
    test and always enlarges ρ_grad (the "must" allocation of chen2020 §5.5).
    """
    rho_grad = check_positive("rho_grad", rho_grad)
    budget_bt = check_positive("budget_bt", budget_bt)
    xi = check_positive("xi", xi)
    g = np.asarray(g, dtype=float)
    g2 = np.asarray(g2, dtype=float)
    theta = angle_between(g, g2)
    theta_max, theta_min = angle_thresholds(theta_bar, phi_max, phi_min)
    if force_gradient or float(g @ g2) < 0.0 or theta > theta_max:
        rho_grad, action = (1.0 + xi) * rho_grad, "gradient"
    elif theta < theta_min:
        budget_bt, action = (1.0 + xi) * budget_bt, "line_search"
    else:
        action = "none"
    return ChebOutcome(rho_grad, budget_bt, 0.5 * (g + g2), theta, action)


def gradient_average(g_old, rho_old: float, g_new, rho_new: float) -> np.ndarray:
    """(ρ_old g_old + ρ_new g_new)/(ρ_old + ρ_new): GradAvg of Lee & Kifer 2018.

    For two independent Gaussian estimates of the same gradient with budgets
    ρ (noise variance ∝ 1/ρ) this is the minimum-variance unbiased combination,
    and it has the noise variance of a single estimate with budget
    ρ_old + ρ_new.
    """
    rho_old = check_positive("rho_old", rho_old)
    rho_new = check_positive("rho_new", rho_new)
    g_old = np.asarray(g_old, dtype=float)
    g_new = np.asarray(g_new, dtype=float)
    return (rho_old * g_old + rho_new * g_new) / (rho_old + rho_new)
