"""Error bounds of kuru2022, to pick T, α and β before any privacy budget is spent.

* Heavy ball on a quadratic (Thm 3.5): the rate ρ of (3.18), the noise floor
  m(α, β) and the bound (3.17).
* NAG / MASG (Thm 4.1, Thm 4.3): the bound (4.3) for given noise scales b_t,
  and its optimum over the budget split, (4.6) (Remark 4.1), for one T or for
  every T' ≤ T at once.
* The noise levels those bounds take as input: σ_s²(m, n) of (3.13) and the
  gradient-noise bound ℰ_T of (3.12).

None of these functions touches data: they take the public constants μ, L,
the dimension d, the sensitivity S₁, n, m and ε.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._validation import check_finite_array, check_int, check_nonnegative, check_positive
from .calibration import step_epsilon
from .coefficients import prefix_log_coefficients

__all__ = [
    "hb_roots",
    "hb_rate",
    "hb_noise_floor",
    "hb_quadratic_bound",
    "subsampling_variance",
    "gradient_noise_bound",
    "nag_bound",
    "optimized_bound",
    "optimized_bound_curve",
]


# --------------------------------------------------------------------------- heavy ball, Thm 3.5


def hb_roots(step: float, momentum: float, lam) -> tuple[np.ndarray, np.ndarray]:
    """a_{λ,±} = (1 + β − αλ ± √((1 + β − αλ)² − 4β))/2, the eigenvalues of T_i (App. B.3).

    Complex where the discriminant is negative; ``lam`` may be an array.
    """
    step = check_positive("step", step)
    momentum = check_nonnegative("momentum", momentum)
    lam = np.asarray(lam, dtype=float)
    trace = 1.0 + momentum - step * lam
    root = np.sqrt((trace**2 - 4.0 * momentum).astype(complex))
    return (trace + root) / 2.0, (trace - root) / 2.0


def hb_rate(step: float, momentum: float, mu: float, L: float) -> float:
    """ρ = max{|a_{μ,±}|, |a_{L,±}|}, eq. (3.18): the rate of HB on a quadratic in S_{μ,L}."""
    mu = check_positive("mu", mu)
    L = check_positive("L", L)
    if mu > L:
        raise ValueError(f"mu must be <= L, got mu={mu}, L={L}")
    plus, minus = hb_roots(step, momentum, np.array([mu, L]))
    return float(np.max(np.abs(np.concatenate([plus, minus]))))


def hb_noise_floor(step: float, momentum: float, eigenvalues, noise_variance: float) -> float:
    """m(α, β) = (σ_T²/2) Σ_i 2α(1 + β) / ((1 − β) λ_i (2 + 2β − αλ_i)) of Thm 3.5.

    ``eigenvalues`` are the λ_i of Q in (3.16); ``noise_variance`` is σ_T² with
    E(w_t w_tᵀ | x_t) ⪯ σ_T² I.  Needs 0 ≤ β < 1 and αλ_i < 2 + 2β (stability).
    """
    step = check_positive("step", step)
    momentum = check_nonnegative("momentum", momentum)
    if momentum >= 1.0:
        raise ValueError(f"momentum must be in [0, 1), got {momentum}")
    lam = check_finite_array("eigenvalues", eigenvalues, ndim=1)
    if lam.size == 0 or np.any(lam <= 0):
        raise ValueError("eigenvalues must be a non-empty array of positive numbers")
    gap = 2.0 + 2.0 * momentum - step * lam
    if np.any(gap <= 0):
        raise ValueError(
            "step is too large for these eigenvalues: need step*lambda < 2 + 2*momentum"
        )
    sigma2 = check_nonnegative("noise_variance", noise_variance)
    terms = 2.0 * step * (1.0 + momentum) / ((1.0 - momentum) * lam * gap)
    return float(sigma2 / 2.0 * terms.sum())


def hb_quadratic_bound(
    t,
    step: float,
    momentum: float,
    eigenvalues,
    noise_variance: float,
    initial_distance: float,
    *,
    growth: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The bound (3.17): E[F(x_t)] − F* ≤ V(ξ₀) C_t² ρ^{2t} + L m(α, β), for iterations ``t``.

    ``initial_distance`` is E‖ξ₀ − ξ*‖² with ξ₀ = (x₀, x₋₁) (= 2‖x₀ − x*‖² when
    x₋₁ = x₀), so V(ξ₀) = initial_distance + σ_T² α²/(1 − ρ²).  Thm 3.5 only
    says C_t = O(t); ``growth`` gives C_t (default C_t = t, the paper's choice
    for Fig. 1).  L is the largest eigenvalue.
    """
    lam = check_finite_array("eigenvalues", eigenvalues, ndim=1)
    floor = hb_noise_floor(step, momentum, lam, noise_variance)
    # hb_noise_floor has checked 0 ≤ β < 1 and αλ_i < 2 + 2β, the Jury conditions for
    # |a_{λ,±}| < 1: the rate is below 1.
    rho = hb_rate(step, momentum, float(lam.min()), float(lam.max()))
    t = np.asarray(t, dtype=float)
    if np.any(t < 0):
        raise ValueError("t must be >= 0")
    C = t if growth is None else np.asarray(growth(t), dtype=float)
    V0 = check_nonnegative("initial_distance", initial_distance) + noise_variance * step**2 / (
        1 - rho**2
    )
    return V0 * C**2 * rho ** (2.0 * t) + float(lam.max()) * floor


# --------------------------------------------------------------------------- noise levels


def subsampling_variance(sensitivity: float, batch_size: int, n: int) -> float:
    """σ_s²(m, n) = (S₁²/4)(1/m)(n − m)/(n − 1) of eq. (3.13) (0 for m = n)."""
    S1 = check_positive("sensitivity", sensitivity)
    n = check_int("n", n)
    m = check_int("batch_size", batch_size)
    if m > n:
        raise ValueError(f"batch_size must be <= n={n}, got {m}")
    if m == n:
        return 0.0
    return S1**2 / 4.0 / m * (n - m) / (n - 1)


def gradient_noise_bound(
    epsilon: float, iterations: int, *, sensitivity: float, batch_size: int, n: int, d: int
):
    """ℰ_T = σ_s²(m, n) + 2 d S₁²/(m² ε₀²) of eq. (3.12), ε₀ from eq. (3.5)."""
    d = check_int("d", d)
    eps0 = step_epsilon(epsilon, iterations, n, batch_size)
    S1 = check_positive("sensitivity", sensitivity)
    return subsampling_variance(S1, batch_size, n) + 2.0 * d * S1**2 / (batch_size**2 * eps0**2)


# ------------------------------------------------------------------- NAG / MASG, Thm 4.1 and 4.3


def _check_coefficients(a0, a):
    a0 = check_nonnegative("a0", a0)
    a = check_finite_array("a", a, ndim=1)
    if a.size == 0 or np.any(a < 0):
        raise ValueError("a must be a non-empty array of non-negative coefficients")
    return a0, a


def nag_bound(
    a0: float, a, scales, *, initial_error: float, d: int, subsampling: float = 0.0
) -> float:
    """The bound (4.3): a_{T,0} E₀ + Σ_t a_{T,t} (b_t² d + σ_s²/2).

    ``a0, a`` from :func:`dpopt.accelerated.allocation.coefficients`, ``scales``
    the Laplace scales b_t, ``subsampling`` σ_s²(m, n) (:func:`subsampling_variance`).
    """
    a0, a = _check_coefficients(a0, a)
    b = check_finite_array("scales", scales, ndim=1)
    if b.shape != a.shape:
        raise ValueError(f"scales must have shape {a.shape}, got {b.shape}")
    d = check_int("d", d)
    E0 = check_nonnegative("initial_error", initial_error)
    s2 = check_nonnegative("subsampling", subsampling)
    return float(a0 * E0 + np.sum(a * (b**2 * d + s2 / 2.0)))


def _noise_constant(d, sensitivity, n, epsilon) -> float:
    d = check_int("d", d)
    S1 = check_positive("sensitivity", sensitivity)
    n = check_int("n", n)
    epsilon = check_positive("epsilon", epsilon)
    return d * S1**2 / (n**2 * epsilon**2)


def optimized_bound(
    a0: float, a, *, initial_error: float, d: int, sensitivity: float, n: int, epsilon: float
) -> float:
    """The optimized bound (4.6): a_{T,0} E₀ + (d S₁²/(n² ε²)) (Σ_t a_{T,t}^{1/3})³.

    The value of (4.3) at the split (4.5) of Prop. 4.2 (m = n); for m < n it is
    the approximation of Remark 4.2.
    """
    a0, a = _check_coefficients(a0, a)
    E0 = check_nonnegative("initial_error", initial_error)
    return float(a0 * E0 + _noise_constant(d, sensitivity, n, epsilon) * np.sum(np.cbrt(a)) ** 3)


def optimized_bound_curve(
    steps,
    mu: float,
    L: float,
    stages=None,
    *,
    initial_error: float,
    d: int,
    sensitivity: float,
    n: int,
    epsilon: float,
) -> np.ndarray:
    """(4.6) for every truncation T' = 1, …, T of the schedule (index T' − 1), in O(T).

    Remark 4.1: the minimizer over T' is the number of iterations DP-NAG-opt
    and DP-MASG-opt run, given a guess E₀ of the initial error.
    """
    E0 = check_nonnegative("initial_error", initial_error)
    log_a0, log_sum_cbrt = prefix_log_coefficients(steps, mu, L, stages)
    const = _noise_constant(d, sensitivity, n, epsilon)
    return E0 * np.exp(log_a0) + const * np.exp(3.0 * log_sum_cbrt)
