"""Sensitivities of kusner2015's releases (Theorems 1, 3, 5, 7), one function per formula.

Algorithms 1–2 (``conditional``: they hold with probability ≥ 1 − δ under
Assumption 1, the multi-task GP with a stated k₁(V, V′)) and Algorithm 3
(``exact``: worst case under Assumption 2, a convex 1-Lipschitz training loss
and an L-Lipschitz validation loss g ∈ [0, g*]).
"""

from __future__ import annotations

import math

from .._validation import check_int, check_nonnegative, check_open_unit, check_positive
from .gp import beta

__all__ = [
    "c_term",
    "q_term",
    "c1_constant",
    "selection_sensitivity_gp",
    "score_sensitivity_alg1",
    "score_sensitivity_alg2",
    "per_record_term",
    "score_sensitivity_alg3",
]


def _check_k1(k1: float) -> float:
    k1 = float(k1)
    if not 0.0 <= k1 <= 1.0 or math.isnan(k1):
        raise ValueError(f"k1 must be in [0, 1], got {k1!r}")
    return k1


def c_term(k1: float, n_candidates: int, delta: float, *, union: int = 3) -> float:
    """c = 2√((1 − k₁(V, V′)) log(union·|Λ|/δ)): Algorithm 1 (union = 3) and Algorithm 2 (union = 2).

    Theorem 1: |f(λ) − f′(λ)| ≤ σ₁√(2 log(3|Λ|/δ)) = c for every λ ∈ Λ with
    probability ≥ 1 − δ/3, where σ₁ = √(2(1 − k₁)).
    """
    k1 = _check_k1(k1)
    return 2.0 * math.sqrt((1.0 - k1) * math.log(union * n_candidates / check_open_unit("delta", delta)))


def q_term(noise_std: float, delta: float) -> float:
    """q = σ√(4 log(3/δ)), the bound on twice the largest observation noise (Theorem 3)."""
    return check_nonnegative("noise_std", noise_std) * math.sqrt(4.0 * math.log(3.0 / check_open_unit("delta", delta)))


def c1_constant(noise_std: float) -> float:
    """C₁ = 8/log(1 + σ⁻²) (Algorithm 1; Srinivas et al. 2010 Thm 1)."""
    return 8.0 / math.log1p(check_positive("noise_std", noise_std) ** -2)


def selection_sensitivity_gp(T: int, n_candidates: int, delta: float, c: float) -> float:
    """Δ = 2√β_{T+1} + c, the sensitivity of μ_T(λ) for the exponential mechanism (Theorem 1)."""
    T = check_int("n_iter", T)
    return 2.0 * math.sqrt(float(beta(T + 1, n_candidates, delta))) + check_nonnegative("c", c)


def score_sensitivity_alg1(T: int, n_candidates: int, delta: float, *, gamma_T: float, noise_std: float,
                           c: float) -> float:
    """√(C₁ β_T γ_T / T) + c + q: the sensitivity of max_t v_t (Theorem 3).

    Algorithm 1 draws Lap(√(C₁β_Tγ_T)/(ε√T) + c/ε + q/ε), i.e. this over ε.
    """
    T = check_int("n_iter", T)
    gamma_T = check_nonnegative("gamma_T", gamma_T)
    regret = math.sqrt(c1_constant(noise_std) * float(beta(T, n_candidates, delta)) * gamma_T / T)
    return regret + check_nonnegative("c", c) + q_term(noise_std, delta)


def score_sensitivity_alg2(A: float, tau: float, dim: int, c: float) -> float:
    """A·exp(−2τ/(log 2)^{d/4}) + c: the sensitivity of max_{2≤t≤T} f(λ_t) (Theorem 5).

    ``A`` and ``tau`` are the constants of de Freitas et al. (2012) Theorem 2
    for the true f; the user states them, they are not estimated from data.
    """
    A = check_nonnegative("A", A)
    tau = check_nonnegative("tau", tau)
    dim = check_int("dim", dim)
    return A * math.exp(-2.0 * tau / math.log(2.0) ** (dim / 4.0)) + check_nonnegative("c", c)


def per_record_term(validation_size: int, *, lipschitz: float, g_star: float, lambda_min: float) -> float:
    """How much one swapped validation record moves f_V(w_λ) for a fixed λ ≥ λ_min.

    min{g*, 2L/λ_min}/m.  g ∈ [0, g*] gives g*/m (Chaudhuri & Vinterbo 2013).
    The second term: w_λ minimizes (λ/2)‖w‖² + mean 1-Lipschitz loss, so
    ‖w_λ‖ ≤ 1/λ, and an L-Lipschitz g whose value at w = 0 is the same for
    every record (a function of the margin, e.g. ramp or normalized sigmoid)
    moves by at most L/λ from that common value for each of the two records:
    2L/(mλ_min).  kusner2015 Theorem 7 prints L/(mλ_min); the factor 2 is
    what the argument supports, so dpopt uses it.
    """
    m = check_int("validation_size", validation_size)
    lipschitz = check_positive("lipschitz", lipschitz)
    g_star = check_positive("g_star", g_star)
    lambda_min = check_positive("lambda_min", lambda_min)
    return min(g_star, 2.0 * lipschitz / lambda_min) / m


def score_sensitivity_alg3(validation_size: int, *, lipschitz: float, g_star: float, lambda_min: float,
                           lambda_max: float) -> float:
    """Δ_f = (λ_max − λ_min)L/(λ_max λ_min) + per-record term (Theorem 7, Definition 5).

    The total sensitivity of max_t f_V(w_{λ_t}) when a swapped record may also
    change which λ Bayesian optimization evaluates.
    """
    record = per_record_term(validation_size, lipschitz=lipschitz, g_star=g_star, lambda_min=lambda_min)
    lambda_max = check_positive("lambda_max", lambda_max)
    if lambda_max < lambda_min:
        raise ValueError(f"lambda_max must be >= lambda_min ({lambda_min}), got {lambda_max}")
    return (lambda_max - lambda_min) * lipschitz / (lambda_max * lambda_min) + record
