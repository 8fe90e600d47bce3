"""The snapping mechanism (Mironov 2012, "On significance of the least significant bits for
differential privacy", §5): Laplace-like noise for continuous outputs that is safe in floating point.

For a query of sensitivity 1, noise scale λ and a clamp bound B (λ < B < 2⁴⁶λ), with Λ the
smallest power of two ≥ λ, the release is

    clamp_B( Λ · round( (clamp_B(f(D)) + S·λ·ln U) / Λ ) ),                     (Mironov 2012, §5.2)

S a uniform sign and U uniform on (0, 1) drawn with *every* double in (0, 1) reachable with its
exact probability (:func:`uniform_open01`: a geometric binary exponent and 52 uniform mantissa
bits), both from the operating system's CSPRNG.  Theorem 1 of the paper: this is
(1/λ + 2⁻⁴⁹B/λ)-DP — the rounding to the grid Λℤ hides the low-order bits that make the naive
floating-point Laplace release distinguishable, and the clamp to B bounds the rounding error
of the sum (Λ/λ < 2 enters through the grid; the 2⁻⁴⁹B/λ term is the floating-point error).
The theorem assumes ``ln`` correctly rounded; numpy's ``log`` is accurate to within an ulp,
not proven correctly rounded — the remaining gap the paper's crlibm assumption closes.

A query of sensitivity Δ is released as Δ₂ · snap(f/Δ₂) with Δ₂ = 2^⌈log₂Δ⌉ ≥ Δ, so that the
scaling is exact in floating point: f/Δ₂ has sensitivity ≤ 1, and the event
:class:`~dpopt.privacy.events.Snapping` records the power of two Δ₂ as its sensitivity (its
ε = (Δ₂ + 2⁻⁴⁹B)/λ in the query's units).
"""

from __future__ import annotations

import math
import os

import numpy as np

from .. import _validation as val

__all__ = ["uniform_open01", "snap", "power_of_two_at_least"]


def power_of_two_at_least(x: float) -> float:
    """The smallest power of two ≥ ``x`` (> 0), exactly."""
    x = val.check_positive("x", x)
    mantissa, exponent = math.frexp(x)  # x = m·2^e, m ∈ [½, 1)
    return math.ldexp(1.0, exponent - 1) if mantissa == 0.5 else math.ldexp(1.0, exponent)


def _words(count: int) -> np.ndarray:
    return np.frombuffer(os.urandom(8 * count), dtype=np.uint64).copy()


def uniform_open01(size: int) -> np.ndarray:
    """``size`` draws of U uniform on (0, 1) in which every double is reachable (Mironov 2012, §5.2).

    U = (2⁵² + M)·2^(−52−E): M uniform on 52 bits, and E ≥ 1 geometric with P(E = e) = 2^−e
    (one plus the number of trailing zero bits of uniform 64-bit words, more words while they
    are all zero), so U lands in the binade [2^−E, 2^(1−E)) with that binade's probability and
    uniformly on its doubles: P(U = u) is exactly the length of u's rounding interval.
    """
    size = val.check_int("size", size, minimum=0)
    mantissa = _words(size) >> np.uint64(12)
    exponent = np.ones(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        word = _words(pending.size)
        zero = word == 0
        low = word & (~word + np.uint64(1))  # the lowest set bit, 2^tz (0 for a zero word)
        tz = np.where(zero, 64, np.log2(np.where(zero, 1, low).astype(float)).astype(np.int64))
        exponent[pending] += tz
        pending = pending[zero]
    return np.ldexp((mantissa + np.uint64(1 << 52)).astype(float), -52 - exponent)


def snap(value, *, scale: float, bound: float, sensitivity: float = 1.0) -> np.ndarray:
    """The snapping mechanism's release of ``value`` (no ledger: :func:`dpopt.privacy.mechanisms.snapping` charges).

    ``scale`` λ and ``bound`` B are in the query's units and ``sensitivity`` must be a power of
    two (the module docstring: the caller rounds Δ up); every coordinate is released independently.
    """
    scale = val.check_positive("scale", scale)
    bound = val.check_positive("bound", bound)
    sensitivity = val.check_positive("sensitivity", sensitivity)
    if power_of_two_at_least(sensitivity) != sensitivity:
        raise ValueError(f"sensitivity must be a power of two for the snapping mechanism, got {sensitivity!r}")
    x = np.asarray(value, dtype=float) / sensitivity  # exact: a power of two
    lam, b = scale / sensitivity, bound / sensitivity
    grid = power_of_two_at_least(lam)
    size = x.size
    sign = np.where(_words(size) & np.uint64(1), 1.0, -1.0)
    noisy = np.clip(x.reshape(-1), -b, b) + sign * lam * np.log(uniform_open01(size))
    snapped = np.clip(grid * np.rint(noisy / grid), -b, b)  # noisy/grid and the product are exact
    return (snapped * sensitivity).reshape(x.shape)
