"""How to split a privacy budget ε over the iterations of DP-NAG and DP-MASG (kuru2022 §4.1).

Iteration t adds Laplace(b_t) noise to the mean gradient of a minibatch of m of
n records (L1 sensitivity S₁/m, replace-one relation) and costs, after
amplification by sampling without replacement (eq. (3.3), Thm A.3),

    ε_t = ε(S₁, b_t, n, m) = ln[(e^{S₁/(b_t m)} − 1) m/n + 1].

The -opt methods choose the b_t that minimize the bound (4.3) subject to
Σ_t ε_t = ε, problem (4.4):

    min_b Σ_t a_{T,t} b_t²   subject to   Σ_t ε(S₁, b_t, n, m) = ε.

* m = n: the closed form (4.5) of Prop. 4.2, ε_t ∝ a_{T,t}^{1/3}.
* m < n: the problem is convex (a_t b² is convex and ε(S₁, b, n, m) is a
  convex decreasing function of b) and separable given the Lagrange
  multiplier λ.  With u_t = S₁/(m b_t) (the budget before amplification),
  stationarity 2a_t b_t = λ |∂ε_t/∂b_t| reads

      u_t³ w(u_t) = 2 a_t (S₁/m)²/λ,   w(u) = q e^u / (1 − q + q e^u),  q = m/n,

  whose left side increases strictly in u: each u_t is one root of a 1-D
  equation (bracketed Newton in ln u).  Σ_t ε_t then increases strictly in
  1/λ, and a bracketed root search on ln(1/λ) makes the amplified budgets sum
  to ε.  No fall back to the m = n formula is made.

The choice of T' ≤ T (Remark 4.1) minimizes the optimized bound (4.6) over
the truncations of the schedule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from .._validation import check_finite_array, check_int, check_positive
from . import bounds
from .coefficients import coefficients, log_coefficients, prefix_log_coefficients

__all__ = [
    "Allocation",
    "coefficients",
    "log_coefficients",
    "prefix_log_coefficients",
    "amplified_epsilon",
    "inner_epsilon",
    "uniform_budgets",
    "closed_form_budgets",
    "closed_form_scales",
    "optimal_allocation",
    "allocation_from_budgets",
    "choose_iterations",
]


# ------------------------------------------------------------------- eq. (3.3) and its inverse


def _rate(n, m) -> float:
    n = check_int("n", n)
    m = check_int("batch_size", m)
    if m > n:
        raise ValueError(f"batch_size must be <= n={n}, got {m}")
    return m / n


def amplified_epsilon(inner, rate: float) -> np.ndarray:
    """ε = ln(1 + q(e^u − 1)) (eq. (3.3) with u = S/(bm), q = m/n), elementwise and stably.

    For large u written as u + ln q + ln(1 + (1 − q)e^{−u}/q), which never overflows.
    """
    inner = np.asarray(inner, dtype=float)
    if rate == 1.0:
        return inner.copy()
    small = inner < 30.0
    direct = np.log1p(rate * np.expm1(np.where(small, inner, 0.0)))
    large = (
        inner + math.log(rate) + np.log1p((1.0 - rate) / rate * np.exp(-np.maximum(inner, 30.0)))
    )
    return np.where(small, direct, large)


def inner_epsilon(budget, rate: float) -> np.ndarray:
    """u = ln(1 + (e^{ε} − 1)/q): the inverse of :func:`amplified_epsilon` (eq. (3.5) per step).

    For large ε written as ε − ln q + ln(1 + (q − 1)e^{−ε}), which never overflows.
    """
    budget = np.asarray(budget, dtype=float)
    if rate == 1.0:
        return budget.copy()
    small = budget < 30.0
    safe = np.where(small, budget, 0.0)
    direct = np.log1p(np.expm1(safe) / rate)
    large = budget - math.log(rate) + np.log1p((rate - 1.0) * np.exp(-np.maximum(budget, 30.0)))
    return np.where(small, direct, large)


# --------------------------------------------------------------------------- the allocation


@dataclass(frozen=True)
class Allocation:
    """A split of ε over T iterations.

    Attributes
    ----------
    budgets:
        ε_t, the amplified per-iteration cost charged to the ledger (sums to ε).
    inner:
        u_t = S₁/(m b_t), the Laplace mechanism's ε on the minibatch.
    scales:
        b_t, the Laplace scale added to each coordinate of the minibatch mean gradient.
    multiplier:
        The Lagrange multiplier λ of (4.4) (``nan`` for a split that is not an optimum).
    """

    budgets: np.ndarray
    inner: np.ndarray
    scales: np.ndarray
    multiplier: float = float("nan")

    @property
    def epsilon(self) -> float:
        return math.fsum(self.budgets)

    @property
    def iterations(self) -> int:
        return int(self.budgets.size)


def _normalize(budgets: np.ndarray, epsilon: float) -> np.ndarray:
    """Rescale by 1 + O(1e-15) so that the budgets add up to ε (to the last bits)."""
    return budgets * (epsilon / math.fsum(budgets))


def allocation_from_budgets(
    budgets, *, sensitivity: float, n: int, batch_size: int, multiplier=float("nan")
):
    """The :class:`Allocation` whose amplified per-iteration costs are ``budgets``."""
    budgets = check_finite_array("budgets", budgets, ndim=1)
    if budgets.size == 0 or np.any(budgets <= 0):
        raise ValueError(
            "budgets must be a non-empty array of positive numbers (a budget that underflows to 0 "
            "means the run is far too long for its step size; use fewer iterations)"
        )
    S1 = check_positive("sensitivity", sensitivity)
    rate = _rate(n, batch_size)
    inner = inner_epsilon(budgets, rate)
    return Allocation(
        budgets=budgets, inner=inner, scales=S1 / batch_size / inner, multiplier=multiplier
    )


def uniform_budgets(epsilon: float, iterations: int) -> np.ndarray:
    """ε_t = ε/T: the split of Prop. 3.1 (eq. (3.4)–(3.5)) used by DP-GD, DP-HB, DP-NAG, DP-MASG."""
    epsilon = check_positive("epsilon", epsilon)
    T = check_int("iterations", iterations)
    return np.full(T, epsilon / T)


def _check_log_a(log_a) -> np.ndarray:
    log_a = np.asarray(log_a, dtype=float)
    if log_a.ndim != 1 or log_a.size == 0 or np.any(np.isnan(log_a)) or np.any(np.isposinf(log_a)):
        raise ValueError("log_a must be a non-empty 1-D array of log-coefficients ln a_{T,t}")
    return log_a


def closed_form_budgets(log_a, epsilon: float) -> np.ndarray:
    """ε_t = ε a_{T,t}^{1/3} / Σ_j a_{T,j}^{1/3} (Prop. 4.2, m = n) from ``log_a`` = ln a_{T,t}."""
    log_a = _check_log_a(log_a)
    epsilon = check_positive("epsilon", epsilon)
    w = np.exp((log_a - log_a.max()) / 3.0)
    return _normalize(w / w.sum() * epsilon, epsilon)


def closed_form_scales(log_a, epsilon: float, *, sensitivity: float, n: int) -> np.ndarray:
    """b_t = Σ_j a_{T,j}^{1/3} S₁ / (a_{T,t}^{1/3} n ε), eq. (4.5)."""
    log_a = _check_log_a(log_a)
    S1 = check_positive("sensitivity", sensitivity)
    n = check_int("n", n)
    epsilon = check_positive("epsilon", epsilon)
    log_sum = float(np.logaddexp.reduce(log_a / 3.0))
    return np.exp(log_sum - log_a / 3.0) * S1 / (n * epsilon)


def _solve_inner(target: np.ndarray, r: float) -> np.ndarray:
    """Solve 3v − ln(1 + r e^{−e^v}) = target for v = ln u, elementwise (strictly increasing in v).

    The root lies in [target/3, (target + ln(1 + r))/3]; bracketed Newton
    (bisection whenever a Newton step leaves the bracket) to full precision.
    """
    lo = target / 3.0
    hi = (target + math.log1p(r)) / 3.0
    v = lo.copy() if r == 0.0 else 0.5 * (lo + hi)
    if r == 0.0:
        return v
    for _ in range(200):
        u = np.exp(v)
        e = r * np.exp(-u)
        f = 3.0 * v - np.log1p(e) - target
        lo = np.where(f < 0.0, v, lo)
        hi = np.where(f > 0.0, v, hi)
        step = f / (3.0 + e * u / (1.0 + e))
        new = v - step
        outside = (new <= lo) | (new >= hi)
        new = np.where(outside, 0.5 * (lo + hi), new)
        done = np.all(np.abs(new - v) <= 4e-16 * np.maximum(1.0, np.abs(v)))
        v = new
        if done:
            break
    return v


def optimal_allocation(
    log_a, epsilon: float, *, sensitivity: float, n: int, batch_size: int
) -> Allocation:
    """The exact solution of problem (4.4) for any m ≤ n (see the module docstring).

    For m = n this is the closed form (4.5).  ``log_a`` are ln a_{T,t}
    (:func:`log_coefficients`).  The returned budgets sum to ε to floating-point
    accuracy and satisfy the KKT conditions of (4.4) with multiplier λ.
    """
    log_a = _check_log_a(log_a)
    epsilon = check_positive("epsilon", epsilon)
    S1 = check_positive("sensitivity", sensitivity)
    rate = _rate(n, batch_size)
    s = S1 / batch_size
    if rate == 1.0:
        budgets = closed_form_budgets(log_a, epsilon)
        alloc = allocation_from_budgets(budgets, sensitivity=S1, n=n, batch_size=batch_size)
        # 2 a_t b_t³ = λ s  (w ≡ 1): the common value, computed at the largest coefficient.
        t = int(np.argmax(log_a))
        lam = 2.0 * math.exp(log_a[t]) * alloc.scales[t] ** 3 / s
        return Allocation(alloc.budgets, alloc.inner, alloc.scales, lam)

    r = (1.0 - rate) / rate

    def inner_of(theta: float) -> np.ndarray:
        return np.exp(_solve_inner(log_a + theta, r))

    def excess(theta: float) -> float:
        return math.fsum(amplified_epsilon(inner_of(theta), rate)) - epsilon

    # Start from the Remark 4.2 approximation ε_t ≈ q u_t (u_t ∝ a_t^{1/3}), then bracket.
    u_guess = closed_form_budgets(log_a, epsilon) / rate
    t0 = int(np.argmax(log_a))
    u0 = u_guess[t0]
    theta0 = 3.0 * math.log(u0) - math.log1p(r * math.exp(-u0)) - log_a[t0]
    lo, hi, width = theta0 - 1.0, theta0 + 1.0, 2.0
    while excess(lo) > 0.0:
        lo -= width
        width *= 2.0
    width = 2.0
    while excess(hi) < 0.0:
        hi += width
        width *= 2.0
    theta = brentq(
        excess,
        lo,
        hi,
        xtol=1e-15 * max(1.0, abs(lo), abs(hi)),
        rtol=4 * np.finfo(float).eps,
        maxiter=500,
    )
    budgets = _normalize(amplified_epsilon(inner_of(theta), rate), epsilon)
    lam = 2.0 * s**2 * math.exp(-theta)
    return allocation_from_budgets(
        budgets, sensitivity=S1, n=n, batch_size=batch_size, multiplier=lam
    )


# --------------------------------------------------------------------------- Remark 4.1


def choose_iterations(
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
) -> tuple[int, np.ndarray]:
    """T' ≤ T minimizing the optimized bound (4.6) given a guess E₀ (Remark 4.1, §5).

    ``steps``/``stages`` are the schedule of the full T iterations; the
    truncation to T' keeps its first T' entries.  Returns ``(T', curve)`` with
    ``curve[T' − 1]`` the bound (4.6) of the T'-iteration run.  As in §5 the
    criterion (4.6) is used for m < n too (Remark 4.2).
    """
    curve = bounds.optimized_bound_curve(
        steps,
        mu,
        L,
        stages,
        initial_error=initial_error,
        d=d,
        sensitivity=sensitivity,
        n=n,
        epsilon=epsilon,
    )
    return int(np.argmin(curve)) + 1, curve
