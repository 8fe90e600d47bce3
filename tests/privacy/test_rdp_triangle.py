"""The integer-order sums of the subsampled curves evaluate only their entries k ≤ α, bit for bit.

:func:`dpopt.privacy.rdp._sgm_log_a_int` (exact subsampled Gaussian) and
:func:`dpopt.privacy.rdp._zhu_wang_rdp` (Zhu & Wang's bound) sum over the grid of
orders × k = 2..max α, of which only the entries k ≤ α count.  They evaluate exp only there
(:func:`dpopt.privacy.rdp._triangle_logsumexp`); the reference below is the formula on the whole
masked grid they replaced, kept verbatim.  Every curve must be the same float, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpopt.linesearch.plan import PLAN_ORDERS
from dpopt.privacy import events as ev
from dpopt.privacy import rdp

# ------------------------------------------------------------------ the masked-grid reference


def _ref_weights(q: float, alphas: np.ndarray):
    alpha = alphas.astype(float)[:, None]
    k = np.arange(2, int(alphas.max()) + 1, dtype=float)[None, :]
    mask = k <= alpha
    log_1mq = math.log1p(-q) if q < 1.0 else -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        power = np.where(alpha == k, 0.0, (alpha - k) * log_1mq)
        weights = rdp._log_binom_int(alpha, k) + k * math.log(q) + power
    return k, mask, weights


def _ref_logsumexp(x: np.ndarray) -> np.ndarray:
    m = np.max(x, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m
    return np.squeeze(out, axis=1)


def _ref_sgm_log_a_int(q: float, z: float, alphas: np.ndarray) -> np.ndarray:
    k, mask, weights = _ref_weights(q, alphas)
    with np.errstate(invalid="ignore"):
        log_terms = weights + rdp._log_expm1((k * k - k) / (2.0 * z * z))
    return rdp._log1p_exp(_ref_logsumexp(np.where(mask, log_terms, -np.inf)))


def _ref_zhu_wang(q: float, inner, a: np.ndarray) -> np.ndarray:
    out = np.full_like(a, np.inf)
    is_int = rdp._is_integer(a)
    if not np.any(is_int):
        return out
    l, mask, weights = _ref_weights(q, a[is_int])
    eps_l = np.asarray(inner(l[0]), dtype=float)[None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        excess = np.where(l == 2, rdp._log_expm1(eps_l), (l - 1) * eps_l + np.log(3.0 - np.exp(-(l - 1) * eps_l)))
        log_terms = weights + excess
    out[is_int] = rdp._log1p_exp(_ref_logsumexp(np.where(mask, log_terms, -np.inf))) / (a[is_int] - 1.0)
    return out


def _same_bits(x, y) -> bool:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return x.shape == y.shape and x.tobytes() == y.tobytes()


# ------------------------------------------------------------------ cases

PLAN = np.array(PLAN_ORDERS)
#: The orders ≥ each of a spread of focus orders (a filter's focus sub-grids), single orders, whole grids.
ORDER_SETS = (
    [PLAN[PLAN >= f] for f in (2.0, 5.0, 16.0, 37.0, 48.0, 64.0, 128.0, 512.0, 1024.0)]
    + [np.array([a]) for a in (2.0, 3.0, 7.0, 37.0, 64.0, 256.0)]
    + [PLAN, rdp.DEFAULT_ORDERS[rdp.DEFAULT_ORDERS <= 40.0], np.array([9.0, 3.0, 1024.0, 3.0, 2.5])]
)
RATES = (1e-9, 1e-5, 0.002, 0.05, 0.37, 0.9, 0.999, 1.0 - 1e-9)
INNER = (
    ev.Laplace(scale=1.3),
    ev.Laplace(scale=0.02, sensitivity=3.0),
    ev.AboveThreshold.laplace(0.05, 0.025),
    ev.AboveThreshold.laplace(2.0, 1.5),
    ev.AboveThreshold.gaussian(3.0, 6.0),
    ev.AboveThreshold.gaussian(0.4, 0.9),
    ev.DiscreteAboveThreshold("laplace", 7.0, 12.0, 2),
    ev.DiscreteAboveThreshold("gaussian", 3e5, 6e5, 3),
    ev.DiscreteGaussian(2.0, 1),
    ev.DiscreteGaussian(900.0, 2),
)
SIGMAS = (0.3, 0.71, 1.7491, 5.0, 60.0)


@pytest.mark.parametrize("q", RATES)
def test_exact_subsampled_gaussian_sums_are_bit_identical(q):
    for z in SIGMAS:
        for a in ORDER_SETS:
            ints = a[rdp._is_integer(a)]
            assert _same_bits(rdp._sgm_log_a_int(q, z, ints), _ref_sgm_log_a_int(q, z, ints)), (q, z, a)


@pytest.mark.parametrize("q", RATES + (1.0,))
def test_zhu_wang_sums_are_bit_identical(q):
    for inner in INNER:
        for a in ORDER_SETS:
            def curve(o, inner=inner):
                return rdp._curve(inner, o)
            assert _same_bits(rdp._zhu_wang_rdp(q, curve, a), _ref_zhu_wang(q, curve, a)), (q, inner, a)


def test_zhu_wang_with_infinite_and_zero_inner_values_is_bit_identical():
    """Edge values of ε(l) (0, tiny, huge, inf) reach the sums' −inf, inf and NaN branches alike."""
    rng = np.random.default_rng(7)
    for values in (np.zeros(1023), np.full(1023, np.inf), np.full(1023, 1e-300), np.full(1023, 800.0),
                   np.abs(rng.standard_cauchy(1023))):
        for q in (1e-7, 0.3, 1.0):
            a = np.array([2.0, 3.0, 40.0, 1024.0])
            with np.errstate(invalid="ignore"):  # inf − inf in the last log1p of both
                got = rdp._zhu_wang_rdp(q, lambda o, v=values: v[: o.size], a)
                want = _ref_zhu_wang(q, lambda o, v=values: v[: o.size], a)
            assert np.array_equal(got, want, equal_nan=True) and _same_bits(got, want)


def test_subsampled_curves_are_bit_identical_through_the_dispatch(monkeypatch):
    """Whole curves (envelope, covers and pure bounds included) of Poisson-subsampled events."""
    events = [ev.Subsampled(ev.Gaussian(z), q) for z in SIGMAS[1:4] for q in (1e-5, 0.002, 0.9)]
    events += [ev.Subsampled(inner, q) for inner in INNER for q in (0.002, 0.999)]
    sets = [ORDER_SETS[i] for i in (3, 8, 9, 12, 15)]
    new = [[rdp._compute_curve(e, a) for a in sets] for e in events]
    rdp._cached_curve.cache_clear()
    with monkeypatch.context() as patch:
        patch.setattr(rdp, "_sgm_log_a_int", _ref_sgm_log_a_int)
        patch.setattr(rdp, "_zhu_wang_rdp", _ref_zhu_wang)
        old = [[rdp._compute_curve(e, a) for a in sets] for e in events]
    rdp._cached_curve.cache_clear()
    for e, got, want in zip(events, new, old, strict=True):
        for x, y in zip(got, want, strict=True):
            assert _same_bits(x, y), e


def test_the_layout_is_the_masked_grid():
    """The cached entries are the grid's k ≤ α entries, row by row, with the reference weights."""
    for q in (0.002, 0.5):
        for a in (PLAN[PLAN >= 37.0], np.array([5.0, 2.0, 9.0])):
            tri = rdp._binomial_weights(q, tuple(a.tolist()))
            k, mask, weights = _ref_weights(q, a)
            assert _same_bits(tri.k, k[0]) and tri.shape == mask.shape
            assert np.array_equal(np.flatnonzero(mask), tri.flat)
            assert _same_bits(tri.weights, weights[mask])
            assert not tri.weights.flags.writeable
