"""Rényi differential privacy (RDP): curves of privacy events, composition, conversion.

A mechanism M is (α, ε(α))-RDP if D_α(M(D) ‖ M(D')) ≤ ε(α) for all neighbours
D ~ D' (Mironov 2017, "Rényi differential privacy", CSF; chen2020 Def. 3).
RDP composes by adding curves order by order (chen2020 Lemma 3), and converts
to (ε, δ)-DP at any order (chen2020 Prop. 1; Canonne, Kamath & Steinke 2020).

This module evaluates the RDP curve of every event of :mod:`dpopt.privacy.events`
on a grid of orders (:func:`rdp_curve`), converts curves to (ε, δ)
(:func:`rdp_to_epsilon`, :func:`rdp_to_delta`, :func:`rdp_budget_per_order`)
and keeps a running total (:class:`RDPAccountant`).

Curves hold ``np.inf`` at orders where no bound is implemented (for example
:func:`zhu_wang_rdp` at fractional orders); ``inf`` is always a valid RDP
bound and conversions simply skip those orders.

References
----------
* Mironov 2017 — Gaussian (Prop. 3, Cor. 3 here as α Δ²/(2σ²)), Laplace (Prop. 6).
* Mironov, Talwar & Zhang 2019, "Rényi differential privacy of the sampled
  Gaussian mechanism" — Poisson-subsampled Gaussian, §3.3 (integer orders:
  binomial expansion; fractional orders: the two-sided series).
* Zhu & Wang 2019, "Poisson subsampled Rényi differential privacy" — general
  Poisson amplification; quoted as chen2020 Lemma 4.
* Bun & Steinke 2016, "Concentrated differential privacy" — pure ε-DP is
  (α, α ε²/2)-RDP (Prop. 1.4; chen2020 Lemma 2) and the tight conversion of
  Lemma 4's proof, attained by randomized response.
* chen2020 Theorems 2 and 3 — AboveThreshold with Laplace / Gaussian noise,
  eqs. (4) and (5).
* Canonne, Kamath & Steinke 2020 ("The discrete Gaussian for differential
  privacy", Prop. 12) / Asoodeh et al. 2020 — the improved RDP → (ε, δ)
  conversion used by Google's dp-accounting.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import special

from .. import _validation as val
from . import events as ev
from .accountant import AccountantBase, register_accountant
from .pure import amplify_pure, pure_epsilon

__all__ = [
    "DEFAULT_ORDERS",
    "DENSE_ORDERS",
    "RDPAccountant",
    "rdp_curve",
    "gaussian_rdp",
    "laplace_rdp",
    "pure_dp_rdp",
    "randomized_response_rdp",
    "above_threshold_rdp",
    "discrete_laplace_rdp",
    "subsampled_gaussian_rdp",
    "zhu_wang_rdp",
    "without_replacement_rdp",
    "activated_rdp",
    "rdp_to_epsilon",
    "rdp_to_delta",
    "rdp_budget_per_order",
    "total_variation_room",
    "filter_order",
]

_FRACTIONAL_ORDERS = (
    1.01,
    1.02,
    1.03,
    1.05,
    1.075,
    1.1,
    1.125,
    1.15,
    1.2,
    1.25,
    1.3,
    1.35,
    1.4,
    1.5,
    1.6,
    1.75,
    1.9,
    2.25,
    2.5,
    2.75,
    3.25,
    3.5,
    3.75,
    4.5,
    5.5,
    6.5,
    7.5,
)
_LARGE_ORDERS = (72, 80, 96, 112, 128, 160, 192, 256, 320, 384, 512, 768, 1024)

#: The default grids of Opacus 1.x (1.1, 1.2, …, 10.9 and 12..63) and of
#: dp-accounting 0.6 (the same fractional grid, 11..63, 128, 256, 512): the
#: default grid contains both, so its ε (the minimum over orders) is never
#: larger than theirs for the same curve.
_PEER_ORDERS = tuple(1 + x / 10.0 for x in range(1, 100)) + tuple(range(11, 64)) + (128, 256, 512)

#: Default grid of Rényi orders: fractional orders near 1 (which matter for
#: large ε), the 0.1-spaced grid of Opacus and dp-accounting up to 10.9, every
#: integer 2..64 (the usual DP-SGD regime) and larger integers up to 1024
#: (small ε / tiny δ).  182 orders.
DEFAULT_ORDERS: np.ndarray = np.array(
    sorted(set(_FRACTIONAL_ORDERS) | set(_PEER_ORDERS) | set(range(2, 65)) | set(_LARGE_ORDERS)), dtype=float
)
DEFAULT_ORDERS.setflags(write=False)

#: :data:`DEFAULT_ORDERS` plus every tenth in (1, 11): a superset of Opacus's default grid
#: (1.1, 1.2, …, 10.9, 12, …, 63), so an accountant on it is never looser than Opacus's on
#: the same events (measured: up to 0.3 % tighter than DEFAULT_ORDERS for DP-SGD at ε ≈ 3,
#: whose best order falls between DEFAULT_ORDERS' fractional points).  180 orders, about
#: twice the cost per new curve.
DENSE_ORDERS: np.ndarray = np.array(
    sorted(set(DEFAULT_ORDERS.tolist()) | {round(1.0 + k / 10.0, 10) for k in range(1, 100)}), dtype=float
)
DENSE_ORDERS.setflags(write=False)

# Fractional-order series: stop once the bound on the remainder is below this
# fraction of A - 1, and give up (no bound at that order) past this many terms.
# The absolute floor (on A ≥ 1, in log) is below double resolution of A.
_SERIES_RTOL = 1e-13
_SERIES_LOG_ATOL = math.log(1e-18)
_SERIES_MAX_TERMS = 1 << 21
#: Curves an accountant keeps by event identity (:meth:`RDPAccountant._curve_of`).
_CURVES_BY_ID = 512


# --------------------------------------------------------------------------- helpers


#: The largest Rényi order accepted: the exact subsampled curves sum about α terms at an integer order α
#: (0.3 s at 2^20; at 2^53 numpy could not allocate them).  The default grid ends at 1024.
MAX_ORDER = float(1 << 20)


def _check_orders(orders) -> np.ndarray:
    """Orders as a 1-D float array of finite values in (1, :data:`MAX_ORDER`]."""
    if orders is None:
        return DEFAULT_ORDERS
    out = np.atleast_1d(np.asarray(orders, dtype=float))
    if out.ndim != 1 or out.size == 0:
        raise ValueError(f"orders must be a non-empty 1-D sequence, got shape {out.shape}")
    if not np.all(np.isfinite(out)) or np.any(out <= 1.0) or np.any(out > MAX_ORDER):
        bad = out[~(np.isfinite(out) & (out > 1) & (out <= MAX_ORDER))]
        raise ValueError(f"orders must be in (1, {MAX_ORDER:.0f}] (subsampled curves sum about one term per unit "
                         f"of order), got {bad}")
    return out


def _is_integer(orders: np.ndarray) -> np.ndarray:
    return orders == np.round(orders)


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(e^x − 1) for x ≥ 0 without overflow (−inf at 0)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore"):
        small = np.log(np.expm1(np.minimum(x, 1.0)))
    large = x + np.log1p(-np.exp(-np.maximum(x, 1.0)))
    return np.where(x < 1.0, small, large)


@functools.lru_cache(maxsize=8)
def _log_factorials(n: int) -> np.ndarray:
    """log k! for k = 0..n (read-only)."""
    out = special.gammaln(np.arange(n + 1, dtype=float) + 1.0)
    out.setflags(write=False)
    return out


def _log_binom_int(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """log C(n, k) for integer arrays with 0 ≤ k ≤ n (−inf-free; caller masks k > n)."""
    n_i, k_i = np.asarray(n, dtype=np.int64), np.asarray(k, dtype=np.int64)
    lf = _log_factorials(int(np.max(n_i)))
    return lf[n_i] - lf[k_i] - lf[np.clip(n_i - k_i, 0, None)]


def _logsumexp(x: np.ndarray, axis=None) -> np.ndarray | float:
    """log Σ exp(x) along ``axis`` (−inf entries ignored; all −inf gives −inf)."""
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out.item() if axis is None else np.squeeze(out, axis=axis)


class _Triangle(NamedTuple):
    """The entries k ≤ α of the (orders × k = 2..max α) grid of the integer-order sums, kept row by
    row: row α holds k = 2..α, the first α − 1 columns (:func:`_binomial_weights`)."""

    k: np.ndarray  # k = 2..max α (floats), one per column
    cols: np.ndarray  # the column of each entry
    starts: np.ndarray  # the index of each row's first entry
    counts: np.ndarray  # entries per row (α − 1)
    flat: np.ndarray  # the position of each entry in the row-major (orders × columns) grid
    shape: tuple  # (orders, columns)
    weights: np.ndarray  # log C(α,k) + k log q + (α−k) log(1−q) at each entry


def _triangle_logsumexp(tri: _Triangle, x: np.ndarray) -> np.ndarray:
    """Per row, :func:`_logsumexp` (axis 1) of the grid holding ``x`` at the entries k ≤ α and −inf elsewhere.

    The same floats as that call on the full grid, with exp evaluated at the entries only: a
    row's maximum is its entries' (a −inf beside them changes no maximum), exp(−inf − m) is
    exactly 0, and the exponentials are summed in a zero grid of the same shape, so numpy's
    (pairwise) summation along each row adds the same numbers in the same order.
    """
    m = np.maximum.reduceat(x, tri.starts)
    m = np.where(np.isfinite(m), m, 0.0)
    grid = np.zeros(tri.shape)
    grid.reshape(-1)[tri.flat] = np.exp(x - np.repeat(m, tri.counts))
    with np.errstate(divide="ignore"):
        return np.log(np.sum(grid, axis=1)) + m


def _log1p_exp(x: np.ndarray | float) -> np.ndarray:
    """log(1 + e^x), accurate for very negative x."""
    return np.logaddexp(0.0, x)


# --------------------------------------------------------------------------- base curves


def gaussian_rdp(noise_multiplier: float, orders=None) -> np.ndarray:
    """RDP of the Gaussian mechanism: ε(α) = α/(2 z²), z = σ/Δ₂ (Mironov 2017; chen2020 Lemma 1)."""
    return _gaussian_rdp(val.check_positive("noise_multiplier", noise_multiplier), _check_orders(orders))


def _gaussian_rdp(z: float, a: np.ndarray) -> np.ndarray:
    return a / (2.0 * z * z)


def laplace_rdp(epsilon: float, orders=None) -> np.ndarray:
    """RDP of the Laplace mechanism with t = Δ₁/b (Mironov 2017, Prop. 6).

    ε(α) = 1/(α−1) · log[α/(2α−1)·e^{(α−1)t} + (α−1)/(2α−1)·e^{−αt}].  Factoring
    out e^{(α−1)t} gives the overflow-free form used here,
    ε(α) = t + log1p[(α−1)/(2α−1)·expm1(−(2α−1)t)]/(α−1), whose log1p argument
    lies in (−1/2, 0].  Capped at t (the pure-DP limit α → ∞) against rounding.
    """
    return _laplace_rdp(val.check_positive("epsilon", epsilon), _check_orders(orders))


def _laplace_rdp(t: float, a: np.ndarray) -> np.ndarray:
    """:func:`laplace_rdp` on checked arguments (the curves' inner loop: no validation)."""
    inner = np.log1p((a - 1.0) / (2.0 * a - 1.0) * np.expm1(-(2.0 * a - 1.0) * t))
    return np.minimum(np.maximum(t + inner / (a - 1.0), 0.0), t)  # np.clip(·, 0, t)


def _log_cosh(x: np.ndarray) -> np.ndarray:
    """log cosh x, accurate both for tiny x (via 2 sinh²(x/2)) and huge x."""
    x = np.abs(np.asarray(x, dtype=float))
    small = np.log1p(2.0 * np.sinh(np.minimum(x, 1.0) / 2.0) ** 2)
    large = x + np.log1p(np.exp(-2.0 * x)) - math.log(2.0)
    return np.where(x < 1.0, small, large)


def randomized_response_rdp(epsilon: float, k: int, orders=None) -> np.ndarray:
    """Exact RDP of k-ary randomized response (:class:`~dpopt.privacy.events.RandomizedResponse`).

    For true values x ≠ x′ the output y has probabilities (e^ε, 1, 1, …)/Z and
    (1, e^ε, 1, …)/Z with Z = e^ε + k − 1, so Σ_y P(y)^α Q(y)^{1−α} =
    (e^{αε} + e^{(1−α)ε} + k − 2)/Z and D_α = log of that/(α − 1), the same
    for both orders of the pair.  For k = 2 it is :func:`pure_dp_rdp`'s tight bound.
    """
    eps = val.check_positive("epsilon", epsilon)
    k = val.check_int("k", k, minimum=2)
    a = _check_orders(orders)
    terms = [a * eps, (1.0 - a) * eps] + ([np.full_like(a, math.log(k - 2))] if k > 2 else [])
    log_z = float(np.logaddexp(eps, math.log(k - 1)))
    return np.maximum((special.logsumexp(np.stack(terms), axis=0) - log_z) / (a - 1.0), 0.0)


def pure_dp_rdp(epsilon: float, orders=None) -> np.ndarray:
    """RDP implied by pure ε-DP: the minimum of three valid bounds.

    * ε itself (D_α ≤ D_∞ ≤ ε);
    * α ε²/2 (Bun & Steinke 2016, Prop. 1.4; chen2020 Lemma 2);
    * the tight bound 1/(α−1)·log[(sinh(αε) − sinh((α−1)ε))/sinh(ε)] (Bun &
      Steinke 2016, proof of Lemma 4), which is the Rényi divergence of
      randomized response.  Since (sinh(αε) − sinh((α−1)ε))/sinh ε
      = cosh((α−½)ε)/cosh(ε/2), it is evaluated as
      [log cosh((α−½)ε) − log cosh(ε/2)]/(α−1), stable for tiny and huge ε.
    """
    return _pure_dp_rdp(val.check_positive("epsilon", epsilon), _check_orders(orders))


def _pure_dp_rdp(eps: float, a: np.ndarray) -> np.ndarray:
    """:func:`pure_dp_rdp` on checked arguments."""
    tight = (_log_cosh((a - 0.5) * eps) - _log_cosh(0.5 * eps)) / (a - 1.0)
    return np.maximum(np.minimum(np.minimum(tight, a * eps * eps / 2.0), eps), 0.0)


def discrete_laplace_rdp(scale: float, shift: int, orders=None) -> np.ndarray:
    """D_α(L ‖ L + k) of the discrete Laplace L, P(x) ∝ exp(−|x|/t) on ℤ, shifted by an integer k, exactly.

    With β = 1/t and r = e^{−β}, P(x) = (1 − r)/(1 + r)·r^{|x|}, and the Rényi moment
    H_α = Σ_x P(x)^α P(x − k)^{1−α} splits into three geometric sums over ℤ
    (x ≤ 0, 0 < x < k, x ≥ k):

        H_α = e^{(α−1)kβ} · [(1 + e^{−(2α−1)kβ})/(1 + r)
                             + (1 − r)/(1 + r) · s(1 − s^{k−1})/(1 − s)],   s = e^{−(2α−1)β},

    the discrete counterpart of the continuous H_α(Lap(0, λ) ‖ Lap(μ, λ)) of chen2020's
    proof of Theorem 2 (appendix B); D_α = log H_α/(α − 1), evaluated in log space.
    ``scale`` is t, ``shift`` k ≥ 1 (grid units).  Capped at kβ, the pure-DP limit.
    """
    t = val.check_positive("scale", scale)
    k = val.check_int("shift", shift, minimum=1)
    a = _check_orders(orders)
    beta = 1.0 / t
    b = (2.0 * a - 1.0) * beta  # −log s
    log_ends = np.logaddexp(0.0, -b * k) - math.log1p(math.exp(-beta))
    if k > 1:
        log_middle = (math.log(-math.expm1(-beta)) - math.log1p(math.exp(-beta)) - b
                      + np.log(-np.expm1(-b * (k - 1))) - np.log(-np.expm1(-b)))
        log_ends = np.logaddexp(log_ends, log_middle)
    return np.clip(k * beta + log_ends / (a - 1.0), 0.0, k * beta)


def above_threshold_rdp(event: ev.AboveThreshold | ev.DiscreteAboveThreshold, orders=None) -> np.ndarray:
    """RDP of one AboveThreshold run (chen2020 Algorithm 1).

    Laplace noise, eq. (4) (Thm 2): the product inside the log is the Laplace
    Rényi moment at t = ε₁ times the one at t = 2ε₂, so ε(α) is
    :func:`laplace_rdp` (ε₁) + :func:`laplace_rdp` (2ε₂); it is capped by the
    pure-DP conversion of ε₁ + 2ε₂ (Thm 1, Lemma 5).
    Gaussian noise, eq. (5) (Thm 3): ε(α) = α(4σ₁² + σ₂²)/(2σ₁²σ₂²)
    = α/2·(1/σ₁² + 4/σ₂²) with σ₁, σ₂ the noise multipliers.

    :class:`~dpopt.privacy.events.DiscreteAboveThreshold` (integer queries of
    integer sensitivity Δ, noise on ℤ).  The proof of Theorems 2–3 (chen2020
    appendix B) bounds P(v; D) by the changes of variables z → z + Δ (the
    threshold noise) and y_k → y_k + 2Δ (the halting query's noise); on ℤ with
    integer Δ these are bijections of the counting measure and the indicator
    steps hold verbatim, so the moment is bounded by
    H_α(λ ‖ λ + Δ)·H_α(ν ‖ ν + 2Δ) for the discrete noises λ, ν.  Discrete
    Gaussian: for an integer shift μ, D_α(N_ℤ(0, σ²) ‖ N_ℤ(μ, σ²)) = αμ²/(2σ²)
    (Canonne, Kamath & Steinke 2020, Prop. 5), the continuous value, so eq. (5)
    holds with σ₁, σ₂ in grid units.  Discrete Laplace: the same product with
    :func:`discrete_laplace_rdp` at shifts Δ (scale Δ/ε₁) and 2Δ (scale Δ/ε₂),
    capped by the pure ε₁ + 2ε₂ (the sparse-vector proof shifts by the same integers).
    """
    return _above_threshold_rdp(event, _check_orders(orders))


def _above_threshold_rdp(event, a: np.ndarray) -> np.ndarray:
    """:func:`above_threshold_rdp` on checked arguments."""
    if isinstance(event, ev.DiscreteAboveThreshold):
        if event.noise == "gaussian":
            return a / 2.0 * (1.0 / event.sigma1**2 + 4.0 / event.sigma2**2)
        k = event.sensitivity
        eq4 = discrete_laplace_rdp(event.threshold_scale, k, a) + discrete_laplace_rdp(event.query_scale, 2 * k, a)
        return np.minimum(eq4, pure_dp_rdp(event.epsilon1 + 2.0 * event.epsilon2, a))
    if not isinstance(event, ev.AboveThreshold):
        raise TypeError(f"event must be an AboveThreshold event, got {type(event).__name__}")
    if event.noise == "gaussian":
        return a / 2.0 * (1.0 / event.sigma1**2 + 4.0 / event.sigma2**2)
    eps1, eps2 = event.epsilon1, event.epsilon2
    eq4 = _laplace_rdp(val.check_positive("epsilon", eps1), a) + _laplace_rdp(
        val.check_positive("epsilon", 2.0 * eps2), a)
    return np.minimum(eq4, _pure_dp_rdp(val.check_positive("epsilon", eps1 + 2.0 * eps2), a))


# ------------------------------------------------------------ Poisson-subsampled Gaussian


def _int_order_grid(alphas: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Broadcast grid (α column, l row from 2 to max α) and the mask l ≤ α."""
    alpha = alphas.astype(float)[:, None]
    l = np.arange(2, int(alphas.max()) + 1, dtype=float)[None, :]
    return alpha, l, l <= alpha


def _sgm_log_a_int(q: float, z: float, alphas: np.ndarray) -> np.ndarray:
    """log A_α at integer orders α (Mironov, Talwar & Zhang 2019, §3.3).

    A_α = Σ_k C(α,k) (1−q)^{α−k} q^k e^{(k²−k)/(2z²)}.  Because the binomial
    weights sum to one, A_α − 1 = Σ_{k≥2} C(α,k)(1−q)^{α−k} q^k expm1((k²−k)/(2z²)),
    a sum of positive terms, so log A_α = log1p(A_α − 1) keeps full relative
    precision even when the RDP is tiny.  Vectorized over all orders at once.
    """
    tri = _binomial_weights(q, tuple(alphas.tolist()))
    k = tri.k
    with np.errstate(invalid="ignore"):
        log_terms = tri.weights + _log_expm1((k * k - k) / (2.0 * z * z))[tri.cols]
    return _log1p_exp(_triangle_logsumexp(tri, log_terms))


def _sgm_series_terms(q: float, z: float, alpha: float, n: int):
    """Signs and log-magnitudes of the first n terms (i = 0..n−1) of the fractional series.

    Term i is C(α,i)·(s₀(i) + s₁(i)) with
    s₀(i) = q^i (1−q)^{α−i} e^{(i²−i)/(2z²)} Φ((z₀−i)/z) and
    s₁(i) = q^{α−i} (1−q)^i e^{(j²−j)/(2z²)} Φ((j−z₀)/z), j = α − i.
    """
    z0 = z * z * (math.log1p(-q) - math.log(q)) + 0.5
    i = np.arange(n, dtype=float)
    log_b = (
        special.gammaln(alpha + 1.0) - special.gammaln(i + 1.0) - special.gammaln(alpha - i + 1.0)
    )
    n_pos = math.floor(alpha) + 1  # C(α,i) > 0 for i ≤ n_pos, then alternates
    sign = np.where((i <= n_pos) | ((i - n_pos) % 2 == 0), 1.0, -1.0)
    j = alpha - i
    log_q, log_1mq = math.log(q), math.log1p(-q)
    log_s0 = i * log_q + j * log_1mq + (i * i - i) / (2 * z * z) + special.log_ndtr((z0 - i) / z)
    log_s1 = j * log_q + i * log_1mq + (j * j - j) / (2 * z * z) + special.log_ndtr((j - z0) / z)
    return sign, log_b + np.logaddexp(log_s0, log_s1)


@functools.lru_cache(maxsize=4)
def _euler_weights(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights turning f₀..f_depth into the Euler sum and the depth-th difference.

    Σ_{k<depth} (−Δ)^k f₀/2^{k+1} = Σ_j w_j f_j with w_j = (−1)^j Σ_{k=j}^{depth−1} C(k,j)/2^{k+1},
    and (−Δ)^depth f₀ = Σ_j (−1)^j C(depth, j) f_j.  Exact rationals rounded once.
    """
    from fractions import Fraction

    w = [
        (-1) ** j * float(sum(Fraction(math.comb(k, j), 2 ** (k + 1)) for k in range(j, depth)))
        for j in range(depth + 1)
    ]
    v = [(-1) ** j * float(math.comb(depth, j)) for j in range(depth + 1)]
    return np.array(w), np.array(v)


def _euler_tail(log_f: np.ndarray, depth: int) -> tuple[float, float]:
    """Σ_{m≥0} (−1)^m f_m by the Euler transform Σ_k (−Δ)^k f₀ / 2^{k+1}, relative to f₀.

    Returns (value, bound on the remainder), both divided by f₀.  For a
    completely monotone sequence f the differences (−Δ)^k f₀ are non-negative
    and non-increasing in k, so the remainder after ``depth`` terms is at most
    (−Δ)^depth f₀ / 2^depth; ``depth``·1e-12 is added for rounding of the f_j.
    """
    w, v = _euler_weights(depth)
    f = np.exp(log_f[: depth + 1] - log_f[0])
    return float(w @ f), abs(float(v @ f)) / 2.0**depth + depth * 1e-12


def _sgm_log_a_frac(q: float, z: float, alpha: float) -> float:
    """log A_α at a fractional order α (Mironov, Talwar & Zhang 2019, §3.3).

    A_α = Σ_{i≥0} C(α,i) [s₀(i) + s₁(i)] (see :func:`_sgm_series_terms`), with
    generalized binomials C(α,i) and z₀ = z² log(1/q − 1) + ½.  The first N
    terms are summed in log space (positive and negative parts separately).

    Past i > α the terms alternate in sign and their magnitudes decay only
    polynomially (like i^{−α−2}), so plain truncation needs ~10⁵ terms near
    α = 1.  The magnitudes are completely monotone in i: |C(α,i)| is a moment
    sequence for i > α, and s₀/s₁ equal (1−q)^α e^{−z₀²/(2z²)}·g(x) with
    g(x) = e^{x²/2}Φ(−x) a Laplace transform evaluated at x = (i−z₀)/z and
    (i+z₀−α)/z.  The tail is therefore summed by the Euler transform with a
    rigorous remainder bound (:func:`_euler_tail`); N grows until that bound
    is below ``_SERIES_RTOL``·(A − 1) or 1e-18 (below the resolution of A ≥ 1).
    Returns inf (no bound) if it never is.
    """
    depth = 40
    n_head = max(64, math.floor(alpha) + 2)
    while n_head <= _SERIES_MAX_TERMS:
        sign, log_t = _sgm_series_terms(q, z, alpha, n_head + depth + 1)
        head, tail = log_t[:n_head], log_t[n_head:]
        log_pos = _logsumexp(np.where(sign[:n_head] > 0, head, -np.inf))
        log_neg = _logsumexp(np.where(sign[:n_head] < 0, head, -np.inf))
        value, remainder = _euler_tail(tail, depth)
        rel = -math.exp(log_neg - log_pos) + sign[n_head] * value * math.exp(tail[0] - log_pos)
        log_a = float(log_pos + math.log1p(rel))
        log_err = math.log(remainder) + float(tail[0])
        log_tol = math.log(_SERIES_RTOL) + float(_log_expm1(max(log_a, 1e-300)))
        if log_err < max(log_tol, _SERIES_LOG_ATOL):
            return log_a
        n_head *= 4
    return math.inf


def subsampled_gaussian_rdp(rate: float, noise_multiplier: float, orders=None) -> np.ndarray:
    """Exact RDP of the Poisson-subsampled Gaussian mechanism (DP-SGD's accountant).

    ε(α) = log A_α/(α − 1) with A_α from :func:`_sgm_log_a_int` at integer
    orders and :func:`_sgm_log_a_frac` at fractional ones (Mironov, Talwar &
    Zhang 2019); at ``rate == 1`` it is the Gaussian α/(2z²).  Integer orders
    agree with dp-accounting 0.6.0 and Opacus 1.6.0 to ~1e-12; fractional
    orders agree with Opacus to ~1e-10 and with 40-digit quadrature to ~1e-9,
    whereas dp-accounting 0.6.0 stops its fractional series after 1000 terms
    and over-estimates there (by up to 70% at α = 2.25, q = 0.5, z = 10).
    """
    q = val.check_rate("rate", rate)
    z = val.check_positive("noise_multiplier", noise_multiplier)
    return _subsampled_gaussian_rdp(q, z, _check_orders(orders))


def _subsampled_gaussian_rdp(q: float, z: float, a: np.ndarray) -> np.ndarray:
    """:func:`subsampled_gaussian_rdp` on checked arguments."""
    full = _gaussian_rdp(z, a)
    if q == 1.0:
        return full
    log_a = np.empty_like(a)
    is_int = _is_integer(a)
    if np.any(is_int):
        log_a[is_int] = _sgm_log_a_int(q, z, a[is_int])
    for idx in np.flatnonzero(~is_int):
        log_a[idx] = _sgm_log_a_frac(q, z, float(a[idx]))
    return np.minimum(np.maximum(log_a / (a - 1.0), 0.0), full)  # np.clip(·, 0, full)


# --------------------------------------------------------------------------- Zhu–Wang


def zhu_wang_rdp(rate: float, inner: Callable[[np.ndarray], np.ndarray], orders=None) -> np.ndarray:
    """Zhu & Wang 2019 bound for Poisson subsampling (chen2020 Lemma 4), integer α ≥ 2.

    ε'(α) ≤ 1/(α−1)·log{(1−q)^{α−1}(αq − q + 1) + C(α,2) q²(1−q)^{α−2} e^{ε(2)}
                         + 3 Σ_{l=3}^{α} C(α,l) q^l (1−q)^{α−l} e^{(l−1)ε(l)}}

    where ε(·) is the RDP curve of the mechanism run on the subsample, given
    by ``inner`` (a function of an array of orders) and evaluated at every
    integer 2..max(orders).  The first term is the l = 0, 1 part of the
    binomial weights Σ_l C(α,l) q^l(1−q)^{α−l} = 1, so the bracket minus one
    equals C(α,2)q²(1−q)^{α−2}·expm1(ε(2)) + Σ_{l≥3} C(α,l)q^l(1−q)^{α−l}
    (3e^{(l−1)ε(l)} − 1), a sum of positive terms computed with logsumexp;
    this is exact algebra and keeps precision for tiny q.
    Fractional orders get ``inf`` (the lemma does not cover them).
    """
    return _zhu_wang_rdp(val.check_rate("rate", rate), inner, _check_orders(orders))


def _zhu_wang_rdp(q: float, inner: Callable[[np.ndarray], np.ndarray], a: np.ndarray) -> np.ndarray:
    """:func:`zhu_wang_rdp` on checked arguments."""
    out = np.full_like(a, np.inf)
    is_int = _is_integer(a)
    if not np.any(is_int):
        return out
    tri = _binomial_weights(q, tuple(a[is_int].tolist()))
    l = tri.k
    eps_l = np.asarray(inner(l), dtype=float)  # ε(l) for l = 2..max α
    with np.errstate(invalid="ignore", over="ignore"):
        excess = np.where(
            l == 2, _log_expm1(eps_l), (l - 1) * eps_l + np.log(3.0 - np.exp(-(l - 1) * eps_l))
        )
        log_terms = tri.weights + excess[tri.cols]
    out[is_int] = _log1p_exp(_triangle_logsumexp(tri, log_terms)) / (a[is_int] - 1.0)
    return out


@functools.lru_cache(maxsize=64)
def _binomial_weights(q: float, alphas: tuple) -> _Triangle:
    """The binomial weights log C(α,k) + k log q + (α−k) log(1−q), k = 2..α, for the integer
    ``alphas``, that both the exact subsampled Gaussian at integer orders (:func:`_sgm_log_a_int`)
    and Zhu–Wang's bound (:func:`_zhu_wang_rdp`) put on their k-th terms, with the layout of
    the entries k ≤ α (:class:`_Triangle`).  They depend on q and the orders only, so every σ or
    inner curve of a run shares them; read-only.  (α − k)·log(1 − q) is 0 at k = α, also for q = 1.
    """
    orders = np.array(alphas, dtype=float)
    counts = orders.astype(np.int64) - 1
    width = int(counts.max())
    k = np.arange(2, width + 2, dtype=float)
    rows = np.repeat(np.arange(orders.size), counts)
    starts = np.cumsum(counts) - counts
    cols = np.arange(rows.size) - np.repeat(starts, counts)
    alpha, kk = orders[rows], k[cols]
    log_1mq = math.log1p(-q) if q < 1.0 else -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        power = np.where(alpha == kk, 0.0, (alpha - kk) * log_1mq)
        weights = _log_binom_int(alpha, kk) + kk * math.log(q) + power
    tri = _Triangle(k, cols, starts, counts, rows * width + cols, (orders.size, width), weights)
    for x in tri:
        if isinstance(x, np.ndarray):
            x.setflags(write=False)
    return tri


def without_replacement_rdp(
    rate: float, inner: Callable[[np.ndarray], np.ndarray], orders=None, *, inner_pure: float = math.inf
) -> np.ndarray:
    """RDP of a mechanism run on a fixed-size subsample drawn without replacement (replace-one).

    Wang, Balle & Kasiviswanathan 2019 ("Subsampled Rényi differential
    privacy and analytical moments accountant", Thm 9), at integer α ≥ 2,
    with γ = ``rate`` and ε(·) the inner curve (``inner(orders)``), ε(∞) =
    ``inner_pure`` (∞ for a Gaussian):

        ε'(α) ≤ 1/(α−1) · log(1 + γ² C(α,2) min{4(e^{ε(2)}−1), e^{ε(2)} min{2, (e^{ε(∞)}−1)²}}
                               + Σ_{j=3..α} γ^j C(α,j) e^{(j−1)ε(j)} min{2, (e^{ε(∞)}−1)^j}).

    The theorem covers any sampling in which the differing record is used
    with probability γ and, given whether it is used, the rest of the sample
    has the same law under both neighbours (Girgis et al. 2021, Lemma 10 use
    the same structure).  Fractional orders get ``inf`` (no bound).
    """
    rate = val.check_rate("rate", rate)
    a = _check_orders(orders)
    out = np.full(a.shape, np.inf)
    is_int = _is_integer(a) & (a >= 2)
    if not is_int.any():
        return out
    alphas = a[is_int]
    js = np.arange(2, int(alphas.max()) + 1, dtype=float)
    eps_j = np.asarray(inner(js), dtype=float)
    # log min{2, (e^{ε(∞)} − 1)^j}; log 2 for a mechanism with no pure guarantee.
    log_pure = float(_log_expm1(np.array(inner_pure))) if math.isfinite(inner_pure) else math.inf
    log_cap_j = np.minimum(math.log(2.0), js * log_pure)
    e2 = eps_j[0]
    log_second = min(math.log(4.0) + float(_log_expm1(np.array(e2))), e2 + float(log_cap_j[0]))
    alpha, j, mask = _int_order_grid(alphas)
    with np.errstate(invalid="ignore"):
        log_terms = j * math.log(rate) + _log_binom_int(alpha, j) + (j - 1.0) * eps_j[None, :] + log_cap_j[None, :]
    log_terms[:, 0] = 2.0 * math.log(rate) + _log_binom_int(alpha[:, 0], np.full(alpha.shape[0], 2.0)) + log_second
    total = _logsumexp(np.where(mask, log_terms, -np.inf), axis=1)
    out[is_int] = _log1p_exp(total) / (alphas - 1.0)
    return out


def activated_rdp(rate: float, inner_curve: np.ndarray, orders=None) -> np.ndarray:
    """RDP of (activation bit, output) when ``inner`` is released with probability ``rate``.

    The activation is independent of the data and seen by the adversary, so
    D_α = 1/(α−1) · log(1 − p + p·e^{(α−1)ε(α)}) exactly
    (see :class:`~dpopt.privacy.events.Activated`).  Computed in log space.
    """
    rate = val.check_rate("rate", rate)
    a = _check_orders(orders)
    r = np.asarray(inner_curve, dtype=float)
    if rate == 1.0:
        return r.copy()
    with np.errstate(over="ignore"):
        # log(1 + p·expm1((α−1)ε)) = log1p(exp(log p + log expm1((α−1)ε)))
        return _log1p_exp(math.log(rate) + _log_expm1((a - 1.0) * r)) / (a - 1.0)



# --------------------------------------------------------------------------- dispatch


def _try_pure_epsilon(event: ev.Event) -> float | None:
    try:
        return pure_epsilon(event)
    except ValueError:
        return None


def _monotone_envelope(a: np.ndarray, curve: np.ndarray) -> np.ndarray:
    """min over α' ≥ α of curve(α') at the given orders.

    Valid for the curve of one mechanism because the Rényi divergence of any
    pair of distributions is non-decreasing in α (van Erven & Harremoës 2014,
    Thm 3), so a bound at α' also bounds every smaller order.
    """
    order = np.argsort(a, kind="stable")
    env = np.minimum.accumulate(curve[order][::-1])[::-1]
    out = np.empty_like(curve)
    out[order] = env
    return out


def _subsampled_curve(event: ev.Subsampled, a: np.ndarray) -> np.ndarray:
    inner = event.event
    if event.rate == 1.0:
        return _curve(inner, a)
    if event.scheme == ev.WITHOUT_REPLACEMENT:
        eps = _try_pure_epsilon(inner)
        bound = without_replacement_rdp(
            event.rate, lambda o: _curve(inner, o), a, inner_pure=math.inf if eps is None else eps
        )
        if eps is not None:
            bound = np.minimum(bound, pure_dp_rdp(amplify_pure(eps, event.rate), a))
        return _monotone_envelope(a, bound)
    if isinstance(inner, ev.Gaussian):
        return _subsampled_gaussian_rdp(event.rate, val.check_positive("noise_multiplier", inner.noise_multiplier), a)
    trivial = _curve(inner, a)
    bound = np.minimum(trivial, _zhu_wang_rdp(event.rate, lambda o: _curve(inner, o), a))
    cover = inner.dominating_gaussian() if isinstance(inner, ev.DiscreteGaussian) else None
    if cover is not None:  # the continuous Gaussian that covers it (DiscreteGaussian.dominating_gaussian)
        bound = np.minimum(bound, _subsampled_gaussian_rdp(event.rate, cover.noise_multiplier, a))
    eps = _try_pure_epsilon(inner)
    if eps is not None:  # Li, Qardaji & Su 2012 amplification holds for Poisson sampling too
        bound = np.minimum(bound, pure_dp_rdp(amplify_pure(eps, event.rate), a))
    return _monotone_envelope(a, bound)


def _compute_curve(event: ev.Event, a: np.ndarray) -> np.ndarray:
    if isinstance(event, ev.Gaussian | ev.DiscreteGaussian):
        # the discrete Gaussian is ½(Δ/σ)²-concentrated DP, like the continuous one (Canonne, Kamath & Steinke 2020)
        return _gaussian_rdp(val.check_positive("noise_multiplier", event.noise_multiplier), a)
    if isinstance(event, ev.DiscreteLaplace):
        return pure_dp_rdp(event.epsilon, a)
    if isinstance(event, ev.Laplace):
        return laplace_rdp(event.epsilon, a)
    if isinstance(event, ev.VectorLaplace | ev.Exponential | ev.PureDP | ev.Snapping):
        return pure_dp_rdp(event.epsilon, a)
    if isinstance(event, ev.RandomizedResponse):
        return randomized_response_rdp(event.epsilon, event.k, a)
    if isinstance(event, ev.AboveThreshold | ev.DiscreteAboveThreshold):
        return _above_threshold_rdp(event, a)
    if isinstance(event, ev.Subsampled):
        return _subsampled_curve(event, a)
    if isinstance(event, ev.Activated):
        return activated_rdp(event.rate, _curve(event.event, a), a)
    if isinstance(event, ev.Composed):
        total = np.zeros_like(a)
        for sub in event.events:
            total = total + _curve(sub, a)
        return total
    if isinstance(event, ev.SelfComposed):
        return event.count * _curve(event.event, a)
    if isinstance(event, ev.RenyiBound):
        return np.where(a <= event.order, event.rdp, np.inf)
    if isinstance(event, ev.ApproxDP):
        raise ev.ApproxDP.refusal("Renyi DP")
    raise TypeError(f"no RDP curve is known for event type {type(event).__name__}")


@functools.lru_cache(maxsize=2048)
def _cached_curve(event: ev.Event, orders_key: tuple) -> np.ndarray:
    out = _compute_curve(event, np.array(orders_key, dtype=float))
    out.setflags(write=False)
    return out


def _curve(event: ev.Event, a: np.ndarray, key: tuple | None = None) -> np.ndarray:
    """Cached curve (read-only array) of a validated event at validated orders."""
    return _cached_curve(event, tuple(a.tolist()) if key is None else key)


def rdp_curve(event: ev.Event, orders=None) -> np.ndarray:
    """RDP ε(α) of one ``event`` at each of ``orders`` (default :data:`DEFAULT_ORDERS`).

    Dispatch (see the functions named for formulas and references):

    * ``Gaussian`` → :func:`gaussian_rdp`;  ``Laplace`` → :func:`laplace_rdp`;
    * ``VectorLaplace``, ``Exponential``, ``PureDP`` → :func:`pure_dp_rdp`;
    * ``AboveThreshold``, ``DiscreteAboveThreshold`` → :func:`above_threshold_rdp`;
    * ``Subsampled`` with ``rate == 1`` → the inner curve;
      ``"poisson"`` of a Gaussian → :func:`subsampled_gaussian_rdp` (exact);
      ``"poisson"`` of anything else → min of the inner curve,
      :func:`zhu_wang_rdp` (integer orders) and, when the inner event is pure
      ε-DP, the pure conversion of the amplified ε, then made non-increasing
      towards small orders (a bound at α' ≥ α also holds at α); ``"without_replacement"``
      → :func:`without_replacement_rdp` (integer orders), and for a pure-DP
      inner event also the pure conversion of
      :func:`~dpopt.privacy.pure.amplify_pure`, made non-increasing likewise;
    * ``Activated`` → :func:`activated_rdp`;
    * ``Composed`` → sum; ``SelfComposed`` → count × curve.

    Curves are cached per (event, orders), so repeated calls are cheap.
    """
    if not isinstance(event, ev.Event):
        raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
    a = _check_orders(orders)
    return np.array(_curve(event, a))


# --------------------------------------------------------------------------- conversions


def _check_curve(orders, rdp) -> tuple[np.ndarray, np.ndarray]:
    a = _check_orders(orders)
    r = np.atleast_1d(np.asarray(rdp, dtype=float))
    if r.shape != a.shape:
        raise ValueError(f"rdp must have the same shape as orders, got {r.shape} and {a.shape}")
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("rdp values must be >= 0 (inf allowed) and not NaN")
    return a, r


def _check_conversion_delta(delta) -> float:
    return val.check_conversion_delta(delta, "RDP")


def _conversion_terms(a: np.ndarray, delta: float) -> tuple:
    """Per-order constants of the ε conversions at ``delta`` (read-only arrays).

    ``(c, l, m)`` with prop1 ε = r + c and CKS ε = (r + l) − m, evaluated in
    exactly this order everywhere (:func:`rdp_to_epsilon`,
    :meth:`RDPAccountant.epsilon_after`), so a budget check and the reported ε
    agree to the last bit.
    """
    c = math.log(1.0 / delta) / (a - 1.0)
    l = np.log1p(-1.0 / a)
    m = (math.log(delta) + np.log(a)) / (a - 1.0)
    for x in (c, l, m):
        x.setflags(write=False)
    return c, l, m


def _epsilons(r: np.ndarray, terms: tuple, delta: float, method: str = "best") -> np.ndarray:
    """ε at every order for the curve ``r`` (inf where undefined); see :func:`rdp_to_epsilon`."""
    c, l, m = terms
    with np.errstate(invalid="ignore"):
        if method == "prop1":
            eps = r + c
        elif method == "cks":
            eps = (r + l) - m
        else:
            eps = np.minimum(r + c, (r + l) - m)
            eps = np.where(delta * delta >= -np.expm1(-r), 0.0, eps)
    return np.where(np.isnan(eps), np.inf, eps)


def total_variation_room(delta: float) -> float:
    """The largest RDP value r that the ``"best"`` conversion maps to ε = 0 at ``delta``: the
    total-variation shortcut δ² ≥ 1 − e^{−r} of :func:`rdp_to_epsilon`, by its very float test.

    At any order a composition with RDP ≤ this value is (0, δ)-DP, so a Rényi filter whose budget
    B(α) is below it accepts up to it (a parent is charged that much, :meth:`Ledger.fix_filter_order`).
    """
    square = _check_conversion_delta(delta) ** 2
    return _largest_where(-math.log1p(-square), lambda r: bool(square >= -np.expm1(-np.float64(r))))


def _largest_where(start: float, holds) -> float:
    """The largest float r ≥ 0 near ``start`` with ``holds(r)``, for a test that holds up to some value and
    fails beyond it (a float test of a monotone conversion): down from ``start`` while it fails, then up
    while the next float still holds."""
    r = start
    while r > 0.0 and not holds(r):
        r = math.nextafter(r, 0.0)
    while holds(math.nextafter(r, math.inf)):
        r = math.nextafter(r, math.inf)
    return r


def rdp_to_epsilon(orders, rdp, delta: float, method: str = "best") -> tuple[float, float]:
    """Smallest ε over ``orders`` such that the RDP curve implies (ε, δ)-DP.

    ``method``:

    * ``"prop1"`` — ε = ε(α) + log(1/δ)/(α−1) (Mironov 2017 Prop. 3; chen2020 Prop. 1);
    * ``"cks"`` — ε = ε(α) + log((α−1)/α) − (log δ + log α)/(α−1) (Canonne,
      Kamath & Steinke 2020 Prop. 12; Asoodeh et al. 2020), always ≤ prop1;
    * ``"best"`` — the minimum of both, and ε = 0 at orders where
      δ ≥ √(1 − e^{−ε(α)}) (total variation ≤ √(1 − e^{−KL}) and KL ≤ D_α,
      as in dp-accounting).

    Returns ``(epsilon, order)``: ε clipped at 0 and the order attaining it.
    """
    a, r = _check_curve(orders, rdp)
    delta = _check_conversion_delta(delta)
    val.check_choice("method", method, ("best", "prop1", "cks"))
    eps = _epsilons(r, _conversion_terms(a, delta), delta, method)
    best = int(np.argmin(eps))
    return max(0.0, float(eps[best])), float(a[best])


def rdp_to_delta(orders, rdp, epsilon: float) -> tuple[float, float]:
    """Smallest δ over ``orders`` such that the RDP curve implies (ε, δ)-DP.

    At each order log δ = (α−1)(ε(α) − ε + log(1 − 1/α)) − log α (Canonne,
    Kamath & Steinke 2020 Prop. 12, as used by dp-accounting), combined with
    the order-free bound δ ≤ √(1 − e^{−ε(α)}).  Returns ``(delta, order)``
    with δ clipped to [0, 1].
    """
    a, r = _check_curve(orders, rdp)
    epsilon = val.check_positive("epsilon", epsilon)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_kl = 0.5 * np.log(-np.expm1(-r))
        log_cks = (a - 1.0) * (r - epsilon + np.log1p(-1.0 / a)) - np.log(a)
    log_delta = np.minimum(np.where(np.isnan(log_kl), np.inf, log_kl), log_cks)
    log_delta = np.where(np.isnan(log_delta), np.inf, log_delta)
    best = int(np.argmin(log_delta))
    return float(min(1.0, math.exp(min(log_delta[best], 0.0)))), float(a[best])


def rdp_budget_per_order(orders, epsilon: float, delta: float) -> np.ndarray:
    """Per-order RDP budget ε_tot(α) for a target (ε, δ) (chen2020 §4.3, Algorithm 2).

    The largest RDP value at order α that the order-α conversions of
    :func:`rdp_to_epsilon` still turn into ≤ ε at δ: the maximum of
    ε − log(1/δ)/(α−1) (prop1) and ε − log(1 − 1/α) + (log δ + log α)/(α−1)
    (CKS).  (The order-free total-variation shortcut, which only helps when
    the RDP is below −log(1 − δ²) ≈ δ², is left out.)  A composition whose
    running RDP stays ≤ this budget at *some* order is (ε, δ)-DP.  Values are
    negative for small orders, meaning the order is unusable.
    """
    a = _check_orders(orders)
    epsilon = val.check_positive("epsilon", epsilon)
    delta = _check_conversion_delta(delta)
    prop1 = epsilon - math.log(1.0 / delta) / (a - 1.0)
    cks = epsilon - np.log1p(-1.0 / a) + (math.log(delta) + np.log(a)) / (a - 1.0)
    return np.maximum(prop1, cks)


def filter_order(step: ev.Event, epsilon: float, delta: float, orders=None) -> float:
    """The order at which the most repetitions of ``step`` fit an (ε, δ) budget.

    For each order α the budget allows B(α)/ε_step(α) repetitions
    (:func:`rdp_budget_per_order`); the order with the most is returned.  A
    Rényi filter must fix its order before the run (Feldman & Zrnic 2021,
    Thm 3.1 is proven for one order α); computed from a *planned* step —
    public budgets, noise scales, rates and clipping bounds — this choice
    reveals nothing about the data.  ``ValueError`` if not one step fits.
    """
    if not isinstance(step, ev.Event):
        raise TypeError(f"step must be a privacy Event, got {type(step).__name__}")
    a = _check_orders(orders)
    budget = rdp_budget_per_order(a, epsilon, delta)
    cost = _curve(step, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        repetitions = np.where(budget > 0.0, budget / cost, -np.inf)
    repetitions = np.where(np.isnan(repetitions), -np.inf, repetitions)
    best = int(np.argmax(repetitions))
    if not repetitions[best] >= 1.0:
        raise ValueError(f"not one step fits the budget epsilon={epsilon:g}, delta={delta:g} at any order")
    return float(a[best])


# --------------------------------------------------------------------------- accountant


#: (id(a), id(b)) -> (a, b, a == b) for event objects compared before (see _equal_events)
_EQUAL_BY_IDS: dict = {}


def _equal_events(a: ev.Event, b: ev.Event) -> bool:
    """``a == b``, remembered for these two objects: a loop that charges a gradient and a line
    search alternately compares the same two objects at every charge, and the dataclass equality
    of nested events is several Python calls.  Events are immutable, so the answer for two objects
    never changes; each entry holds both objects, so their ids cannot be reused while it lives."""
    key = (id(a), id(b))
    hit = _EQUAL_BY_IDS.get(key)
    if hit is not None and hit[0] is a and hit[1] is b:
        return hit[2]
    if len(_EQUAL_BY_IDS) >= 4096:
        _EQUAL_BY_IDS.clear()
    equal = a == b
    _EQUAL_BY_IDS[key] = (a, b, equal)
    return equal


class RDPAccountant(AccountantBase):
    """Running RDP curve of a sequence of events (Rényi composition, chen2020 Lemma 3).

    >>> from dpopt.privacy import events as ev
    >>> step = ev.Subsampled(ev.Gaussian(sigma=1.3), rate=0.0025, scheme="poisson")
    >>> eps = RDPAccountant().compose(ev.SelfComposed(step, 6000)).get_epsilon(delta=1e-5)
    >>> round(eps, 2)
    0.72

    ``orders`` defaults to :data:`DEFAULT_ORDERS`.  Curves are cached per
    (event, orders), so charging the same step many times costs O(#orders)
    per charge.
    """

    notion = "rdp"

    def __init__(self, orders=None):
        a = np.array(_check_orders(orders), dtype=float)
        a.setflags(write=False)
        self._orders = a
        self._key = tuple(a.tolist())
        self._rdp = np.zeros_like(a)
        # Run-length composition: _rdp = _base + _count · curve(_last), so n charges of one
        # event give exactly n·curve, the value calibration (and SelfComposed) computes.
        self._base, self._last, self._count = self._rdp, None, 0
        self._terms: dict = {}
        self._curves = ev.IdentityCache(_CURVES_BY_ID)  # event -> its curve: a loop charges the same objects
        self._focus = None  # see focus()

    # -- one order eagerly, the others on demand -----------------------------------------------
    def focus(self, order: float) -> None:
        """Compose eagerly at ``order`` only; the curve at the other orders is computed when asked.

        For a Rényi filter (:class:`~dpopt.privacy.Ledger` with ``filter_order``), whose every
        check is at one order: its events' curves are then computed on the orders ≥ ``order``
        only (a curve's value at α depends on no smaller order: every formula is per order, or
        per order over the same grid 2..max α, and the monotone envelope at α looks at larger
        orders only), so a run whose budgets change does not compute each new event at every
        order.  Every value — the composed RDP at ``order``, and at all orders once asked
        (:attr:`rdp`, :meth:`get_epsilon`) — is the same float as without focusing, computed by
        the same arithmetic.  Before anything is composed only.
        """
        if self._last is not None:
            raise ValueError("focus() must be called before anything is composed")
        i = self.order_index(order)
        a = self._orders
        sub = a[a >= a[i]]
        self._focus = (i, sub, tuple(sub.tolist()), int(np.flatnonzero(sub == a[i])[0]))
        self._runs: list = []  # (event, count) of every run of equal events, in order
        self._value = self._value_base = 0.0  # the composed RDP at the focus order (and before the last run)
        self._values = ev.IdentityCache(_CURVES_BY_ID)  # event -> its RDP at the focus order
        self._rdp = self._base = None  # materialized by _arrays() when asked

    def focused_cost(self, event: ev.Event) -> float:
        """The RDP of ``event`` at the focus order (:meth:`focus`), the value :meth:`compose` adds."""
        if self._focus is None:
            raise ValueError("focused_cost needs a focus order (focus())")
        if not isinstance(event, ev.Event):
            raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
        return self._focused(event)

    def _focused(self, event: ev.Event) -> float:
        """The RDP of ``event`` at the focus order: its curve's entry there, from the orders ≥ it."""
        value = self._values.get(event)
        if value is None:
            _, sub, key, j = self._focus
            value = self._values.put(event, float(_curve(event, sub, key)[j]))
        return value

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(composed curve, curve before the last run) at every order (materialized if focused)."""
        if self._rdp is None:
            rdp = base = np.zeros_like(self._orders)
            for event, count in self._runs:  # compose()'s arithmetic, run by run
                base = rdp
                rdp = base + count * self._curve_of(event)
            self._rdp, self._base = rdp, base
        return self._rdp, self._base

    # -----------------------------------------------------------------------------------------
    @property
    def orders(self) -> np.ndarray:
        """The Rényi orders (read-only array)."""
        return self._orders

    @property
    def rdp(self) -> np.ndarray:
        """A copy of the composed RDP curve, one value per order."""
        return self._arrays()[0].copy()

    def cost(self, event: ev.Event) -> np.ndarray:
        """The RDP curve ``event`` would add, without composing it."""
        if not isinstance(event, ev.Event):
            raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
        return np.array(self._curve_of(event))

    def _curve_of(self, event: ev.Event) -> np.ndarray:
        """:func:`_curve` of ``event`` at this accountant's orders, found by identity first (no
        hashing of the event and the orders) when the same event object is charged again."""
        curve = self._curves.get(event)
        return curve if curve is not None else self._curves.put(event, _curve(event, self._orders, self._key))

    def _same_as_last(self, event: ev.Event) -> bool:
        last = self._last
        return last is not None and (event is last or _equal_events(event, last))

    def compose(self, event: ev.Event, count: int = 1) -> RDPAccountant:
        """Add ``count`` repetitions of ``event``; returns ``self`` so calls chain."""
        if not isinstance(event, ev.Event):
            raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
        if count != 1:
            count = val.check_int("count", count, minimum=1)
        if self._focus is not None:
            value = self._focused(event)  # (raises, composing nothing, for an event without a curve)
            if self._same_as_last(event):
                self._count += count
                self._runs[-1] = (self._last, self._count)
            else:
                self._value_base, self._last, self._count = self._value, event, count
                self._runs.append((event, count))
            self._value = self._value_base + self._count * value
            self._rdp = self._base = None
            return self
        curve = self._curve_of(event)
        if self._same_as_last(event):
            self._count += count
        else:
            self._base, self._last, self._count = self._rdp, event, count
        self._rdp = self._base + self._count * curve
        return self

    def _curve_after(self, event: ev.Event) -> np.ndarray:
        """The composed curve after one more ``event``, by the arithmetic of :meth:`compose`."""
        curve = self._curve_of(event)
        rdp, base = self._arrays()
        if self._same_as_last(event):
            return base + (self._count + 1) * curve
        return rdp + 1 * curve

    def _value_after(self, event: ev.Event, i: int) -> float:
        """Entry ``i`` of :meth:`_curve_after` by the same float arithmetic, at one order only."""
        if self._focus is not None and i == self._focus[0]:
            value = self._focused(event)
            if self._same_as_last(event):
                return self._value_base + (self._count + 1) * value
            return self._value + 1 * value
        curve = self._curve_of(event)
        rdp, base = self._arrays()
        if self._same_as_last(event):
            return float(base[i] + (self._count + 1) * curve[i])
        return float(rdp[i] + 1 * curve[i])

    def _value_at(self, i: int) -> float:
        """Entry ``i`` of the composed curve."""
        if self._focus is not None and i == self._focus[0]:
            return self._value
        return float(self._arrays()[0][i])

    def copy(self) -> RDPAccountant:
        other = RDPAccountant.__new__(RDPAccountant)
        other._orders, other._key, other._rdp = self._orders, self._key, self._rdp
        other._base, other._last, other._count = self._base, self._last, self._count
        other._terms, other._curves, other._focus = self._terms, self._curves, self._focus
        if self._focus is not None:
            other._runs, other._values = list(self._runs), self._values
            other._value, other._value_base = self._value, self._value_base
        return other

    def _terms_at(self, delta: float) -> tuple:
        terms = self._terms.get(delta)
        if terms is None:
            terms = self._terms[delta] = _conversion_terms(
                self._orders, _check_conversion_delta(delta)
            )
        return terms

    def order_index(self, order: float) -> int:
        """The position of ``order`` in :attr:`orders` (``ValueError`` if it is not there)."""
        key = ("index", order)
        cached = self._terms.get(key)
        if cached is None:
            hits = np.flatnonzero(self._orders == float(order))
            if hits.size == 0:
                raise ValueError(f"order {order!r} is not one of this accountant's orders")
            cached = self._terms[key] = int(hits[0])
        return cached

    def _epsilon_of(self, curve: np.ndarray, delta: float, order: float | None) -> float:
        terms = self._terms_at(delta)
        if order is not None:
            i = self.order_index(order)
            curve, terms = curve[i : i + 1], tuple(t[i : i + 1] for t in terms)
        return max(0.0, float(np.min(_epsilons(curve, terms, delta))))

    def _epsilon_of_entry(self, value: float, delta: float, i: int) -> float:
        """:meth:`_epsilon_of` at the order of index ``i`` for a curve whose entry there is ``value``."""
        terms = tuple(t[i : i + 1] for t in self._terms_at(delta))
        return max(0.0, float(np.min(_epsilons(np.array([value]), terms, delta))))

    def epsilon_after(self, event: ev.Event, delta: float, *, order: float | None = None) -> float:
        """The ε :meth:`get_epsilon` would report after composing ``event`` (composes nothing).

        Same arithmetic as :meth:`compose` then :func:`rdp_to_epsilon`, from
        cached per-order conversion constants, without copying the
        accountant.  With ``order``, the ε of the conversion at that one order
        (a Rényi filter's check).
        """
        if order is not None:
            i = self.order_index(order)
            return self._epsilon_of_entry(self._value_after(event, i), delta, i)
        return self._epsilon_of(self._curve_after(event), delta, order)

    def _headroom(self, epsilon: float, delta: float) -> tuple:
        """(B, margin): per-order RDP budget of (ε, δ) and a rounding margin, cached."""
        key = ("headroom", epsilon, delta)
        cached = self._terms.get(key)
        if cached is None:
            c, l, m = self._terms_at(delta)
            budget = np.maximum(epsilon - c, (epsilon - l) + m)
            margin = 1e-9 * (abs(epsilon) + np.abs(c) + np.abs(l) + np.abs(m) + np.abs(budget))
            cached = self._terms[key] = (budget, margin)
        return cached

    def filter_room(self, epsilon: float, delta: float, order: float) -> float:
        """The largest RDP value at ``order`` whose conversion there is within ε at δ, by the very
        float test of :meth:`fits` (``order=``): all that a Rényi filter at that order accepts.

        It is B(α) (:func:`rdp_budget_per_order`, computed by formula) give or take a few ulps, or
        the larger :func:`total_variation_room`; a filter's parent is charged this much
        (:meth:`~dpopt.privacy.Ledger.fix_filter_order`).
        """
        i = self.order_index(order)
        budget, margin = self._headroom(epsilon, delta)
        exact = _largest_where(max(float(budget[i]), total_variation_room(delta)),
                               lambda r: self._epsilon_of_entry(r, delta, i) <= epsilon)
        return max(exact, float(budget[i]) - float(margin[i]))  # (fits' shortcut accepts up to B(α) − margin)

    def fits(self, event: ev.Event, epsilon: float, delta: float, *, order: float | None = None) -> bool:
        """Whether ``epsilon_after(event, delta, order=order) <= epsilon``, mostly without converting.

        The composed curve after ``event`` is compared with the cached
        per-order budget B(α) (:func:`rdp_budget_per_order`); only when it is
        within a rounding margin of B(α) at the deciding orders is the exact
        conversion of :meth:`epsilon_after` computed, so the answer always
        agrees with the ε later reported.
        """
        budget, margin = self._headroom(epsilon, delta)
        if order is not None:  # a filter: one order, in Python floats (the same arithmetic per entry)
            i = self.order_index(order)
            low = self._value_after(event, i)
            slack, tol = float(budget[i]) - low, float(margin[i])
            if slack >= tol:
                return True
            if delta * delta < 0.25 and slack < -tol and low > 2.0 * delta * delta:
                return False
            return self._epsilon_of_entry(low, delta, i) <= epsilon
        after = self._curve_after(event)
        slack = budget - after
        if np.any(slack >= margin):
            return True
        if delta * delta < 0.25 and np.all(slack < -margin) and after.min() > 2.0 * delta * delta:
            return False  # above B at every order, and too large for the total-variation shortcut
        return self._epsilon_of(after, delta, order) <= epsilon

    def epsilon_at(self, delta: float, order: float) -> float:
        """The ε of the composed curve converted at one ``order`` only."""
        i = self.order_index(order)
        return self._epsilon_of_entry(self._value_at(i), delta, i)

    def _guarantee(self, event: ev.Event) -> np.ndarray:
        """The event's RDP curve at this accountant's orders (raises where none is known)."""
        return self._curve_of(event)

    def describe(self) -> str:
        a = self._orders
        return (
            f"Renyi DP at {a.size} orders in [{a.min():g}, {a.max():g}], converted to (epsilon, delta) "
            "by the better of Mironov 2017 Prop. 3 and Canonne-Kamath-Steinke 2020 Prop. 12"
        )

    def get_epsilon_and_order(self, delta: float) -> tuple[float, float]:
        """(ε, optimal order) at ``delta`` by :func:`rdp_to_epsilon` (``"best"``)."""
        return rdp_to_epsilon(self._orders, self._arrays()[0], delta)

    def get_epsilon(self, delta: float) -> float:
        """Smallest ε such that everything composed so far is (ε, δ)-DP."""
        return self.get_epsilon_and_order(delta)[0]

    def get_delta(self, epsilon: float) -> float:
        """Smallest δ such that everything composed so far is (ε, δ)-DP."""
        return rdp_to_delta(self._orders, self._arrays()[0], epsilon)[0]

    def __repr__(self) -> str:
        return f"RDPAccountant(orders={len(self._orders)} orders)"


register_accountant("rdp", RDPAccountant)
