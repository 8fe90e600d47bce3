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
They are pure Python and cost tens of microseconds per sample (``benchmarks/bench_pld.py``,
section 3); :func:`discrete_gaussian_vector` runs Algorithm 3 on arrays with every
decision still exact (~2–4 µs per sample in batches of thousands), and
:func:`discrete_gaussian_array` uses it.  The mechanisms use them only when asked
(``secure_noise=True``).
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
    "discrete_gaussian_vector",
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
    """An int64 array of independent exact discrete Gaussian draws (σ read exactly from the double).

    Drawn by :func:`discrete_gaussian_vector` (the same algorithm, vectorized) for σ ≤ 2⁴⁰, else one
    :func:`discrete_gaussian` at a time.
    """
    sigma = val.check_positive("sigma", sigma)
    size = int(np.prod(shape, dtype=np.int64))
    if sigma <= _VECTOR_MAX_SIGMA:
        return discrete_gaussian_vector(sigma, size).reshape(shape)
    exact = Fraction(sigma)
    return np.array([discrete_gaussian(exact) for _ in range(size)], dtype=np.int64).reshape(shape)


def exponential_index(gaps, epsilon: Fraction, sensitivity: int) -> int:
    """One exact draw of i with P(i) ∝ exp(−ε·gap_i/(2Δ)), for integer gaps ≥ 0 and integer Δ ≥ 1.

    gap_i = max_j u_j − u_i for integer scores u of sensitivity Δ (the exponential mechanism,
    McSherry & Talwar 2007).  Rejection: propose i uniformly (exact :func:`_randbelow`), accept
    with :func:`bernoulli_exp` of the rational γ_i = ε·gap_i/(2Δ) (ε read exactly as a fraction);
    the accepted i has exactly the target law.  The best candidate has γ = 0, so the expected
    number of proposals is n/Σ_j exp(−γ_j) ≤ n.

    Timing: the number of proposals depends on the scores, so the *running time* of this draw
    depends on the data (unlike the discrete Laplace and Gaussian samplers, whose time depends
    only on the noise).  The guarantee covers the released index, not how long it took; a
    release whose computation time an adversary can measure needs a constant-time sampler.
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


# --------------------------------------------------------------------------- the vectorized exact sampler
#
# CKS 2020 Algorithms 1–3 run on arrays: every random decision is still an exact Bernoulli of a
# rational, from uniform bits of os.urandom, so the draws have exactly the discrete Gaussian law.
# * Integer steps (the discrete Laplace proposal of integer scale t, Algorithms 1–2 with s = 1):
#   Bernoulli(num/den) is [uniform integer below den < num], by masked rejection in int64.
# * The acceptance Bernoulli(exp(−γ)), γ = (|Y|t − σ²)²/(2σ²t²), whose exact rational has ~110-bit
#   parts: exp(−γ) = Π_{j ≤ M} exp(−γ/M) with M = ⌊γ̂⌋ + 2 (so γ/M < 1 while |γ̂ − γ| < 1), each
#   factor by Algorithm 1, whose steps are Bernoulli(r), r = γ/(M·k).  A step compares a uniform
#   real U ∈ [0, 1) with r: its first 53 bits decide when they lie farther than a margin from the
#   float estimate r̂; otherwise more bits of the same U are drawn and compared with the exact
#   rational r (Python integers), so the decision is [U < r] either way.  The margin,
#   2⁻⁴⁰·(1 + γ̂)/(M·k) + 2⁻⁴⁵, is 2⁹ times the float error: with u = 2⁻⁵³, A = |Y|t, S = σ²,
#   D = A − S, the computed difference is off by ≤ 2u(A + S), and (A + S)/(σt) ≤ √(2γ) + 2 (t > σ),
#   so |γ̂ − γ| ≤ 2u(√(2γ) + 2)√(2γ) + 8uγ + O(u²) ≤ 16u(1 + γ) = 2⁻⁴⁹(1 + γ) for |Y|, t < 2⁵³.

#: Above this σ the scalar sampler is used (keeps t·k and |Y|·t in the vectorized ranges).
_VECTOR_MAX_SIGMA = 2.0**40
#: The fast path's margin (see above): a decision closer than 2^-_MARGIN_BITS·(1 + γ̂)/(M·k) + 2^-45 is exact.
_MARGIN_BITS = 40


def _urandom_u64(size: int) -> np.ndarray:
    return np.frombuffer(os.urandom(8 * size), dtype=np.uint64)


def _uniform_below(n: int, size: int) -> np.ndarray:
    """``size`` independent uniform integers in [0, n) (int64), 1 ≤ n ≤ 2⁶², by masked rejection."""
    out = np.zeros(size, dtype=np.int64)
    if n == 1:
        return out
    mask = np.uint64((1 << (n - 1).bit_length()) - 1)
    todo = np.arange(size)
    while todo.size:
        r = (_urandom_u64(todo.size) & mask).astype(np.int64)
        ok = r < n
        out[todo[ok]] = r[ok]
        todo = todo[~ok]
    return out


def _bernoulli_exp_ratio(num: np.ndarray, den: int) -> np.ndarray:
    """Bernoulli(exp(−num/den)) per entry, integers 0 ≤ num ≤ den (Algorithm 1 for γ ≤ 1, vectorized)."""
    out = np.empty(num.shape, dtype=bool)
    alive, k = np.arange(num.size), 1
    while alive.size:
        if den * k > 2**62:  # never in practice (k! grows): finish the survivors one at a time
            for i in alive.tolist():
                kk = k
                while _bernoulli(int(num[i]), den * kk):
                    kk += 1
                out[i] = kk % 2 == 1
            break
        go = _uniform_below(den * k, alive.size) < num[alive]
        out[alive[~go]] = k % 2 == 1
        alive, k = alive[go], k + 1
    return out


def _discrete_laplace_int(t: int, size: int) -> np.ndarray:
    """``size`` exact draws of P(y) ∝ exp(−|y|/t) on ℤ for an integer scale t (Algorithm 2, s = 1)."""
    out, filled = np.empty(size, dtype=np.int64), 0
    while filled < size:
        u = _uniform_below(t, 2 * (size - filled) + 8)
        u = u[_bernoulli_exp_ratio(u, t)]
        v, alive = np.zeros(u.size, dtype=np.int64), np.arange(u.size)
        while alive.size:  # V: Bernoulli(1/e) successes before the first failure
            alive = alive[_bernoulli_exp_ratio(np.ones(alive.size, dtype=np.int64), 1)]
            v[alive] += 1
        y = u + t * v
        negative = (_urandom_u64(y.size) & np.uint64(1)).astype(bool)
        y = np.where(negative, -y, y)[~(negative & (y == 0))]
        take = min(y.size, size - filled)
        out[filled : filled + take] = y[:take]
        filled += take
    return out


def _below(prefix: int, bits: int, num: int, den: int) -> bool:
    """[U < num/den] for the uniform real U whose first ``bits`` binary digits are ``prefix`` (more drawn lazily)."""
    while True:
        if (prefix + 1) * den <= num << bits:
            return True
        if prefix * den >= num << bits:
            return False
        prefix, bits = 2 * prefix + _randbelow(2), bits + 1


def _accept(y: np.ndarray, sigma: float, t: int) -> np.ndarray:
    """Bernoulli(exp(−(|y| − σ²/t)²/(2σ²))) per entry, exactly (section comment)."""
    var = Fraction(sigma) ** 2
    p, q = var.numerator, var.denominator
    s2, tf = sigma * sigma, float(t)
    gamma = (np.abs(y).astype(float) * tf - s2) ** 2 / (2.0 * s2 * tf * tf)
    m = np.floor(gamma).astype(np.int64) + 2
    owner = np.repeat(np.arange(y.size), m)  # one Algorithm-1 run of γ/M per factor
    g, mf = gamma[owner], m[owner].astype(float)
    factor_ok = np.empty(owner.size, dtype=bool)
    alive, k = np.arange(owner.size), 1
    while alive.size:
        est = g[alive] / (mf[alive] * k)
        margin = 2.0**-_MARGIN_BITS * (1.0 + g[alive]) / (mf[alive] * k) + 2.0**-45
        u = _urandom_u64(alive.size) >> np.uint64(11)  # the first 53 bits of U
        lo = u.astype(float) * 2.0**-53  # exact
        go = lo + 2.0**-53 <= est - margin
        stop = lo >= est + margin
        for i in np.flatnonzero(~(go | stop)).tolist():  # too close to call in floats: exact
            j = int(owner[alive[i]])
            num = (abs(int(y[j])) * q * t - p) ** 2
            go[i] = _below(int(u[i]), 53, num, 2 * p * q * t * t * int(m[j]) * k)
        stop = ~go
        factor_ok[alive[stop]] = k % 2 == 1
        alive, k = alive[go], k + 1
    return np.bincount(owner, weights=~factor_ok, minlength=y.size) == 0


def discrete_gaussian_vector(sigma: float, size: int) -> np.ndarray:
    """``size`` exact draws of P(x) ∝ exp(−x²/(2σ²)) on ℤ (CKS 2020, Algorithm 3, vectorized), σ ≤ 2⁴⁰.

    The discrete Laplace proposal of scale t = ⌊σ⌋ + 1 is accepted with probability
    exp(−(|Y| − σ²/t)²/(2σ²)), each decision exact (section comment above); σ is read exactly
    from the double.  About 1 µs per draw in batches of thousands.
    """
    sigma = val.check_positive("sigma", sigma)
    if sigma > _VECTOR_MAX_SIGMA:
        raise ValueError(f"sigma must be <= 2^40 for the vectorized sampler, got {sigma!r}")
    size = val.check_int("size", size, minimum=0)
    t = math.floor(Fraction(sigma)) + 1
    out, filled = np.empty(size, dtype=np.int64), 0
    while filled < size:
        y = _discrete_laplace_int(t, (size - filled) * 3 // 2 + 8)
        y = y[_accept(y, sigma, t)]
        take = min(y.size, size - filled)
        out[filled : filled + take] = y[:take]
        filled += take
    return out


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


#: |value|/g is clamped to this many grid steps before rounding (see :func:`snap_to_grid`)
SNAP_LIMIT = _EXACT_INTEGERS / 8


def snap_to_grid(value: np.ndarray, grid: float) -> np.ndarray:
    """round(clip(value/g, ±2⁵⁰)) as exact integers in float64.

    Values beyond 2⁵⁰ grid steps are clamped, never refused: whether a value is that large
    depends on the data, so an error there would tell neighbours apart with certainty.
    Clamping is 1-Lipschitz, so the sensitivity the release is charged for still holds, and
    with noise of at most 2⁴⁶ grid steps (``mechanisms.SECURE_MAX_SCALE``) the noisy integer
    stays below 2⁵³, exact in a double.
    """
    with np.errstate(over="ignore"):  # a huge value overflows to ±inf, clamped below; no warning on its neighbour only
        scaled = np.asarray(value, dtype=float) / grid  # exact: g is a power of two
    return np.rint(np.clip(scaled, -SNAP_LIMIT, SNAP_LIMIT))
