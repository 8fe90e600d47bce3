"""Floating-point-safe noise: exact discrete Laplace and discrete Gaussian samplers on a grid.

Floating-point Laplace or Gaussian noise leaks through the low-order bits of
the release: the set of doubles that ``value + noise`` can take depends on
``value``, so an attacker who sees one release can often tell neighbouring
inputs apart with certainty (Mironov 2012, "On significance of the least
significant bits for differential privacy", §3).  The remedy used here is the
one of Canonne, Kamath & Steinke 2020 ("The discrete Gaussian for
differential privacy"): release on a grid g·ℤ with g a power of two,

    release = g · (round(value/g) + Z),    Z ~ discrete Laplace or discrete Gaussian,

with Z drawn *exactly* (rational arithmetic on Python integers, no floating
point) from a cryptographic source (:mod:`secrets`, i.e. the operating
system's CSPRNG).  Every step is exact in double precision while
|value|/g < 2⁵³, so the released double is exactly the grid point and its
distribution is the discrete one the privacy analysis assumes.

Rounding moves each coordinate by at most g/2, so the integer query
round(value/g) has L1 sensitivity ⌊Δ₁/g⌋ + d and L2 sensitivity
⌈Δ₂/g + √d⌉ for d coordinates; the grid is chosen fine enough
(Δ/g ≈ 2²⁰·d) that this costs a relative 2⁻²⁰ of ε.  The charged events are
:class:`~dpopt.privacy.events.DiscreteLaplace` /
:class:`~dpopt.privacy.events.DiscreteGaussian` with those integer
sensitivities.

Samplers (CKS 2020): :func:`bernoulli_exp` (Algorithm 1), :func:`discrete_laplace`
(Algorithm 2), :func:`discrete_gaussian` (Algorithm 3), and :func:`exponential_index`,
the exponential mechanism over integer scores by rejection with :func:`bernoulli_exp`.
They are pure Python and cost microseconds per sample (``benchmarks/bench_pld.py``,
section 3); the mechanisms use them only when asked (``secure_noise=True``).
"""

from __future__ import annotations

import math
import os
import threading
from fractions import Fraction

import numpy as np

from .. import _validation as val

__all__ = [
    "bernoulli_exp",
    "discrete_laplace",
    "discrete_gaussian",
    "discrete_laplace_array",
    "discrete_gaussian_array",
    "exponential_index",
    "grid_for",
    "snap_to_grid",
    "l1_grid_sensitivity",
    "l2_grid_sensitivity",
]


class _EntropyPool:
    """Uniform integers from the operating system's CSPRNG (``os.urandom``, as :mod:`secrets` uses).

    Bytes are read 512 at a time and handed out bit by bit, so a draw costs no
    system call; :meth:`randbelow` is exact (rejection of out-of-range values).
    """

    _CHUNK = 512

    def __init__(self):
        self._bits = 0
        self._count = 0
        self._pid = os.getpid()
        self._lock = threading.Lock()

    def _take(self, k: int) -> int:
        if self._pid != os.getpid():  # a forked child must not reuse the parent's buffered bits
            self._bits, self._count, self._pid = 0, 0, os.getpid()
        if self._count < k:
            fresh = int.from_bytes(os.urandom(max(self._CHUNK, (k + 7) // 8)), "little")
            self._bits |= fresh << self._count
            self._count += 8 * max(self._CHUNK, (k + 7) // 8)
        out = self._bits & ((1 << k) - 1)
        self._bits >>= k
        self._count -= k
        return out

    def randbelow(self, n: int) -> int:
        """A uniform integer in [0, n), n ≥ 1."""
        if n <= 1:
            return 0
        k = (n - 1).bit_length()
        with self._lock:
            while True:
                r = self._take(k)
                if r < n:
                    return r


_POOL = _EntropyPool()
_randbelow = _POOL.randbelow

# The grid leaves a relative 2^-20 of the sensitivity to rounding.
_GRID_BITS = 20
# Doubles represent every integer up to 2^53 exactly.
_EXACT_INTEGERS = 2.0**53


def _bernoulli(num: int, den: int) -> bool:
    """Bernoulli(num/den) for integers 0 ≤ num ≤ den, den ≥ 1."""
    return _randbelow(den) < num


def bernoulli_exp(num: int, den: int) -> bool:
    """Bernoulli(exp(−γ)) for the rational γ = num/den ≥ 0, exactly (CKS 2020, Algorithm 1).

    For γ ≤ 1: draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first A_k = 0;
    the result is whether that k is odd.  For γ > 1: ⌊γ⌋ independent
    Bernoulli(e⁻¹) draws all succeed, then one Bernoulli(exp(−(γ − ⌊γ⌋))).
    """
    if num < 0 or den <= 0:
        raise ValueError(f"bernoulli_exp needs gamma = num/den >= 0, got {num}/{den}")
    while num > den:  # peel off whole units: exp(−γ) = e^{−1}·exp(−(γ−1))
        if not bernoulli_exp(1, 1):
            return False
        num -= den
    k = 1
    while _bernoulli(num, den * k):
        k += 1
    return k % 2 == 1


def _geometric_exp(num: int, den: int) -> int:
    """V with P(V = v) ∝ exp(−v·num/den): count Bernoulli(exp(−num/den)) successes before a failure."""
    v = 0
    while bernoulli_exp(num, den):
        v += 1
    return v


def discrete_laplace(scale: Fraction) -> int:
    """One exact draw of P(x) ∝ exp(−|x|/scale) on ℤ (CKS 2020, Algorithm 2), scale = t/s rational > 0."""
    scale = Fraction(scale)
    if scale <= 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    t, s = scale.numerator, scale.denominator
    while True:
        u = _randbelow(t)
        if not bernoulli_exp(u, t):
            continue
        v = _geometric_exp(1, 1)
        y = (u + t * v) // s
        negative = _randbelow(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma: Fraction) -> int:
    """One exact draw of P(x) ∝ exp(−x²/(2σ²)) on ℤ (CKS 2020, Algorithm 3), σ rational > 0.

    Proposes Y from the discrete Laplace of scale t = ⌊σ⌋ + 1 and accepts with
    probability exp(−(|Y| − σ²/t)²/(2σ²)); with σ² = p/q that exponent is the
    rational (|Y|·q·t − p)² / (2·p·q·t²).
    """
    sigma = Fraction(sigma)
    if sigma <= 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    var = sigma * sigma
    p, q = var.numerator, var.denominator
    t = math.floor(sigma) + 1
    while True:
        y = discrete_laplace(Fraction(t))
        if bernoulli_exp((abs(y) * q * t - p) ** 2, 2 * p * q * t * t):
            return y


def discrete_laplace_array(scale: float, shape) -> np.ndarray:
    """An int64 array of independent exact discrete Laplace draws (scale read exactly from the double)."""
    scale = val.check_positive("scale", scale)
    exact = Fraction(scale)
    size = int(np.prod(shape, dtype=np.int64))
    return np.array([discrete_laplace(exact) for _ in range(size)], dtype=np.int64).reshape(shape)


def discrete_gaussian_array(sigma: float, shape) -> np.ndarray:
    """An int64 array of independent exact discrete Gaussian draws (σ read exactly from the double)."""
    sigma = val.check_positive("sigma", sigma)
    exact = Fraction(sigma)
    size = int(np.prod(shape, dtype=np.int64))
    return np.array([discrete_gaussian(exact) for _ in range(size)], dtype=np.int64).reshape(shape)


def exponential_index(gaps, epsilon: Fraction, sensitivity: int) -> int:
    """One exact draw of i with P(i) ∝ exp(−ε·gap_i/(2Δ)), for integer gaps ≥ 0 and integer Δ ≥ 1.

    gap_i = max_j u_j − u_i for integer scores u of sensitivity Δ (the exponential mechanism,
    McSherry & Talwar 2007).  Rejection: propose i uniformly (exact :func:`_randbelow`), accept
    with :func:`bernoulli_exp` of the rational γ_i = ε·gap_i/(2Δ) (ε read exactly as a fraction);
    the accepted i has exactly the target law.  The best candidate has γ = 0, so the expected
    number of proposals is n/Σ_j exp(−γ_j) ≤ n.
    """
    epsilon = Fraction(epsilon)
    if epsilon <= 0 or sensitivity < 1:
        raise ValueError(f"exponential_index needs epsilon > 0 and a sensitivity >= 1, got {epsilon}, {sensitivity}")
    n = len(gaps)
    if n == 0 or min(gaps) < 0:
        raise ValueError("exponential_index needs a non-empty list of gaps >= 0")
    num, den = epsilon.numerator, 2 * sensitivity * epsilon.denominator
    while True:
        i = _randbelow(n)
        if bernoulli_exp(num * int(gaps[i]), den):
            return i


# --------------------------------------------------------------------------- the grid


def grid_for(sensitivity: float, rounding: float) -> float:
    """The grid step g = 2^k ≤ Δ/(2²⁰·r), where rounding adds at most r grid steps to the sensitivity.

    r is d for the L1 sensitivity and √d for the L2 sensitivity of d
    coordinates; the rounding then costs at most a relative 2⁻²⁰ of Δ.
    """
    sensitivity = val.check_positive("sensitivity", sensitivity)
    rounding = val.check_positive("rounding", rounding)
    return 2.0 ** math.floor(math.log2(sensitivity / rounding) - _GRID_BITS)


def l1_grid_sensitivity(sensitivity: float, grid: float, coordinates: int) -> int:
    """Integer L1 sensitivity of round(value/g) over d coordinates: ⌊Δ₁/g⌋ + d."""
    return math.floor(sensitivity / grid) + coordinates


def l2_grid_sensitivity(sensitivity: float, grid: float, coordinates: int) -> int:
    """An integer bound on the L2 sensitivity of round(value/g) over d coordinates: ⌈Δ₂/g + √d⌉."""
    return math.ceil(sensitivity / grid + math.sqrt(coordinates))


def snap_to_grid(value: np.ndarray, grid: float) -> np.ndarray:
    """round(value/g) as exact integers in float64 (``ValueError`` if |value|/g reaches 2⁵³)."""
    scaled = np.asarray(value, dtype=float) / grid  # exact: g is a power of two
    if scaled.size and np.max(np.abs(scaled)) >= _EXACT_INTEGERS / 4:
        raise ValueError(
            f"value is too large for the secure-noise grid g={grid:g} (|value|/g must stay below 2^51); "
            "rescale the query"
        )
    return np.rint(scaled)
