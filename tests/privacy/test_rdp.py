"""Tests of the RDP accountant: curves, Zhu–Wang, conversions, accountant API.

References are independent: dp-accounting 0.6.0 (integer orders, Laplace,
conversions), numerical integration of the Rényi divergence (scipy quad and
mpmath), and the formulas of the papers evaluated directly in plain floats.
"""

from __future__ import annotations

import logging
import math

import dp_accounting as dpa
import mpmath as mp
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from scipy import integrate

from dpopt.privacy import events as ev
from dpopt.privacy import pure, rdp

logging.getLogger("absl").setLevel(logging.ERROR)

ORDERS = rdp.DEFAULT_ORDERS
INT_ORDERS = ORDERS[ORDERS == np.round(ORDERS)]
FRAC_ORDERS = ORDERS[ORDERS != np.round(ORDERS)]

RATES = [1e-3, 1e-2, 0.1, 0.5, 1.0]
NOISES = [0.5, 1.1, 3.0, 10.0]


def sgm(noise_multiplier: float, rate: float, sensitivity: float = 1.0) -> ev.Subsampled:
    gauss = ev.Gaussian(sigma=noise_multiplier * sensitivity, sensitivity=sensitivity)
    return ev.Subsampled(gauss, rate=rate, scheme="poisson")


def dpa_accountant(noise_multiplier, rate, steps, orders):
    event = dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(noise_multiplier))
    acc = dpa.rdp.RdpAccountant(list(orders))
    acc.compose(dpa.SelfComposedDpEvent(event, steps))
    return acc


def rel_err(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))


# ------------------------------------------------------------------ default orders


def test_default_orders_grid():
    assert ORDERS.ndim == 1 and len(ORDERS) < 200  # includes the peers' grids (test_rdp_orders.py)
    assert np.all(np.diff(ORDERS) > 0) and ORDERS[0] > 1.0
    assert set(range(2, 65)) <= set(INT_ORDERS.astype(int).tolist())
    assert ORDERS.max() >= 256 and FRAC_ORDERS.min() <= 1.05
    with pytest.raises(ValueError):
        ORDERS[0] = 3.0  # read-only


# ------------------------------------------------------------------ dp-accounting agreement


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("z", NOISES)
def test_subsampled_gaussian_integer_orders_match_dp_accounting(rate, z):
    mine = rdp.rdp_curve(sgm(z, rate, sensitivity=2.5), INT_ORDERS)
    ref = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(rate, z, INT_ORDERS)
    assert rel_err(mine, ref) < 1e-9


def _mp_sgm_rdp(q, z, alpha):
    """D_α((1−q)N(0,z²) + qN(1,z²) ‖ N(0,z²)) by 40-digit quadrature."""
    with mp.workdps(40):
        q, z, alpha = mp.mpf(q), mp.mpf(z), mp.mpf(alpha)

        def integrand(x):
            return mp.npdf(x, 0, z) * ((1 - q) + q * mp.exp((2 * x - 1) / (2 * z * z))) ** alpha

        a = mp.quad(integrand, [-mp.inf, -10 * z, 0, 1, 10 * z, mp.inf])
        return float(mp.log(a) / (alpha - 1))


@pytest.mark.parametrize(
    "q, z, alpha",
    [(0.01, 1.1, 1.01), (0.001, 0.5, 1.5), (0.1, 3.0, 2.25), (0.5, 10.0, 1.05), (0.9, 0.8, 7.5)],
)
def test_subsampled_gaussian_fractional_orders_match_quadrature(q, z, alpha):
    mine = rdp.subsampled_gaussian_rdp(q, z, [alpha])[0]
    assert mine == pytest.approx(_mp_sgm_rdp(q, z, alpha), rel=1e-7)


def test_fractional_orders_never_above_dp_accounting():
    # dp-accounting 0.6.0 truncates its fractional series early and over-estimates
    # (by up to 70% at alpha = 2.25, q = 0.5, z = 10; inf near alpha = 1); ours is
    # checked against quadrature above and must never exceed theirs.
    for q in (0.01, 0.5):
        for z in (0.8, 10.0):
            mine = rdp.subsampled_gaussian_rdp(q, z, FRAC_ORDERS)
            ref = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, z, FRAC_ORDERS)
            assert np.all(mine <= ref * (1 + 1e-9))


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("z", [0.5, 1.1, 3.0, 10.0])
def test_epsilon_and_delta_match_dp_accounting(rate, z):
    worst = 0.0
    for steps in (1, 100, 10_000, 100_000):
        mine = rdp.RDPAccountant(INT_ORDERS).compose(ev.SelfComposed(sgm(z, rate), steps))
        ref = dpa_accountant(z, rate, steps, INT_ORDERS)
        for delta in (1e-3, 1e-5, 1e-10):
            eps_ref = ref.get_epsilon(delta)
            worst = max(worst, rel_err(mine.get_epsilon(delta), eps_ref))
            assert mine.get_epsilon(delta) == pytest.approx(eps_ref, rel=1e-8, abs=1e-12)
        for eps in (0.5, 2.0, 8.0):
            assert mine.get_delta(eps) == pytest.approx(ref.get_delta(eps), rel=1e-6, abs=1e-300)
    assert worst < 1e-8


@pytest.mark.parametrize(
    "z, rate, steps, close",
    [
        (1.1, 0.01, 1000, False),  # optimum at the fractional order 9.6 of the 0.1 grid
        (3.0, 1.0, 10, True),
        (1.1, 0.01, 100_000, False),
        (0.8, 0.1, 1000, False),
    ],
)
def test_default_orders_epsilon_vs_dp_accounting(z, rate, steps, close):
    # In the usual DP-SGD regime the optimal order is an integer and both agree;
    # at larger epsilon the optimum is a fractional order, where dp-accounting
    # over-estimates (22.5006 vs 22.4955 and 45.67 vs 43.09 in the last two
    # cases), so ours must only be smaller.
    mine = rdp.RDPAccountant().compose(ev.SelfComposed(sgm(z, rate), steps))
    ref = dpa_accountant(z, rate, steps, ORDERS)
    for delta in (1e-5, 1e-10):
        assert mine.get_epsilon(delta) <= ref.get_epsilon(delta) * (1 + 1e-9)
        if close:
            assert mine.get_epsilon(delta) == pytest.approx(ref.get_epsilon(delta), rel=1e-8)


def test_api_example_matches_dp_accounting():
    step = ev.Subsampled(ev.Gaussian(sigma=1.3, sensitivity=1.0), rate=0.0025, scheme="poisson")
    eps = rdp.RDPAccountant().compose(ev.SelfComposed(step, 6000)).get_epsilon(delta=1e-5)
    ref = dpa_accountant(1.3, 0.0025, 6000, ORDERS).get_epsilon(1e-5)
    assert eps == pytest.approx(ref, rel=1e-10)
    delta = rdp.RDPAccountant().compose(step).get_delta(epsilon=1.0)
    assert 0.0 <= delta < 1e-5


@pytest.mark.parametrize("t", [1e-4, 0.1, 1.0, 7.0, 300.0])
def test_laplace_matches_dp_accounting(t):
    scale, sens = 2.0, 2.0 * t
    acc = dpa.rdp.RdpAccountant(list(ORDERS))
    acc.compose(dpa.LaplaceDpEvent(scale / sens))
    mine = rdp.rdp_curve(ev.Laplace(scale=scale, sensitivity=sens), ORDERS)
    assert rel_err(mine, acc.rdp) < 1e-9


# ------------------------------------------------------------------ closed forms vs integration


def _renyi_piece(logp, logq, alpha, lo, hi, points=None):
    """log of ∫ p^α q^{1−α} over [lo, hi] by adaptive quadrature."""

    def integrand(x):
        return math.exp(alpha * logp(x) + (1.0 - alpha) * logq(x))

    value, _ = integrate.quad(integrand, lo, hi, points=points, epsabs=0, epsrel=1e-13, limit=200)
    return value


@pytest.mark.parametrize("alpha", [1.3, 2.0, 3.7, 10.0])
@pytest.mark.parametrize("scale, sens", [(1.0, 0.1), (1.0, 1.0), (0.5, 1.5)])
def test_laplace_closed_form_is_the_renyi_divergence(alpha, scale, sens):
    def logp(x):
        return -abs(x) / scale - math.log(2 * scale)

    def logq(x):
        return -abs(x - sens) / scale - math.log(2 * scale)

    d = sum(
        _renyi_piece(logp, logq, alpha, lo, hi)
        for lo, hi in [(-np.inf, 0.0), (0.0, sens), (sens, np.inf)]
    )
    expected = math.log(d) / (alpha - 1.0)
    assert rdp.rdp_curve(ev.Laplace(scale, sens), [alpha])[0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("alpha", [1.3, 2.0, 3.7, 10.0])
@pytest.mark.parametrize("sigma, sens", [(1.0, 1.0), (3.0, 0.5), (0.7, 2.0)])
def test_gaussian_closed_form_is_the_renyi_divergence(alpha, sigma, sens):
    log_norm = math.log(math.sqrt(2 * math.pi) * sigma)

    def logp(x):
        return -0.5 * (x / sigma) ** 2 - log_norm

    def logq(x):
        return -0.5 * ((x - sens) / sigma) ** 2 - log_norm

    peak = -(alpha - 1.0) * sens  # maximizer of alpha*logp + (1 - alpha)*logq
    d = _renyi_piece(logp, logq, alpha, peak - 60 * sigma, peak + 60 * sigma, points=[peak])
    expected = math.log(d) / (alpha - 1.0)
    assert rdp.rdp_curve(ev.Gaussian(sigma, sens), [alpha])[0] == pytest.approx(expected, rel=1e-8)


# ------------------------------------------------------------------ pure DP and AboveThreshold


def _randomized_response_rdp(eps, alpha):
    p = math.exp(eps) / (1 + math.exp(eps))
    return math.log(p**alpha * (1 - p) ** (1 - alpha) + (1 - p) ** alpha * p ** (1 - alpha)) / (
        alpha - 1
    )


@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 5.0])
@pytest.mark.parametrize("alpha", [1.01, 1.5, 2.0, 10.0, 100.0])
def test_pure_dp_tight_bound_is_randomized_response(eps, alpha):
    got = rdp.pure_dp_rdp(eps, [alpha])[0]
    assert got == pytest.approx(_randomized_response_rdp(eps, alpha), rel=1e-7)
    sinh_form = math.log(
        (math.sinh(alpha * eps) - math.sinh((alpha - 1) * eps)) / math.sinh(eps)
    ) / (alpha - 1)
    assert got == pytest.approx(sinh_form, rel=1e-7)
    assert got <= min(eps, alpha * eps**2 / 2) * (1 + 1e-12)


def test_pure_dp_extremes_are_stable():
    tiny = rdp.pure_dp_rdp(1e-7, ORDERS)
    assert np.allclose(tiny, ORDERS * 1e-14 / 2, rtol=1e-5)
    huge = rdp.pure_dp_rdp(800.0, ORDERS)
    assert np.all(np.isfinite(huge)) and np.all(huge <= 800.0) and huge[-1] > 799.0
    for event in (
        ev.PureDP(0.3),
        ev.Exponential(0.3),
        ev.VectorLaplace(scale=2.0, sensitivity=0.6),
    ):
        assert np.array_equal(rdp.rdp_curve(event, ORDERS), rdp.pure_dp_rdp(0.3, ORDERS))


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
def test_pure_and_laplace_match_autodp(eps):
    from autodp import rdp_bank

    alphas = [1.5, 2.0, 10.0, 100.0]
    pure_ref = [rdp_bank.RDP_pureDP({"eps": eps}, a) for a in alphas]
    laplace_ref = [rdp_bank.RDP_laplace({"b": 1.0 / eps}, a) for a in alphas]
    assert rel_err(rdp.pure_dp_rdp(eps, alphas), pure_ref) < 1e-12
    assert rel_err(rdp.laplace_rdp(eps, alphas), laplace_ref) < 1e-12


def _eq4(alpha, e1, e2):
    def h(t):
        return alpha / (2 * alpha - 1) * math.exp(t * (alpha - 1)) + (alpha - 1) / (
            2 * alpha - 1
        ) * math.exp(-t * alpha)

    return math.log(h(e1) * h(2 * e2)) / (alpha - 1)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 5.0, 20.0])
def test_above_threshold_laplace_eq4(alpha):
    e1, e2 = 0.05, 0.025
    event = ev.AboveThreshold.laplace(e1, e2, sensitivity=3.0)
    got = rdp.rdp_curve(event, [alpha])[0]
    assert got == pytest.approx(min(_eq4(alpha, e1, e2), e1 + 2 * e2), rel=1e-10)
    big = ev.AboveThreshold.laplace(2.0, 1.0)
    assert rdp.rdp_curve(big, [1000.0])[0] <= 4.0  # capped by the pure epsilon1 + 2 epsilon2


def test_above_threshold_gaussian_eq5():
    s1, s2 = 1.5, 2.5
    event = ev.AboveThreshold.gaussian(s1, s2, sensitivity=0.7)
    alphas = np.array([1.5, 2.0, 10.0])
    eq5 = alphas * (4 * s1**2 + s2**2) / (2 * s1**2 * s2**2)
    assert np.allclose(rdp.rdp_curve(event, alphas), eq5, rtol=1e-13)
    rho = 0.2  # chen2020 after eq. (5): sigma1^2 = 3/(2 rho), sigma2^2 = 3/rho gives alpha*rho
    event = ev.AboveThreshold.gaussian(math.sqrt(3 / (2 * rho)), math.sqrt(3 / rho))
    assert np.allclose(rdp.rdp_curve(event, alphas), alphas * rho, rtol=1e-13)


# ------------------------------------------------------------------ Zhu–Wang


def _zhu_wang_direct(q, alpha, eps):
    total = (1 - q) ** (alpha - 1) * (alpha * q - q + 1)
    total += math.comb(alpha, 2) * q**2 * (1 - q) ** (alpha - 2) * math.exp(eps(2))
    for l in range(3, alpha + 1):
        total += (
            3 * math.comb(alpha, l) * q**l * (1 - q) ** (alpha - l) * math.exp((l - 1) * eps(l))
        )
    return math.log(total) / (alpha - 1)


@pytest.mark.parametrize("q", [0.01, 0.2, 0.7])
@pytest.mark.parametrize("alpha", [2, 3, 6])
def test_zhu_wang_matches_direct_formula(q, alpha):
    lap = ev.Laplace(scale=1.0, sensitivity=0.8)

    def eps(l):
        return rdp.rdp_curve(lap, [float(l)])[0]

    got = rdp.zhu_wang_rdp(q, lambda o: rdp.rdp_curve(lap, o), [float(alpha)])[0]
    assert got == pytest.approx(_zhu_wang_direct(q, alpha, eps), rel=1e-10)


def test_zhu_wang_fractional_orders_are_inf_and_large_orders_finite():
    out = rdp.zhu_wang_rdp(0.01, lambda o: rdp.laplace_rdp(1.0, o), [1.5, 2.0, 1024.0])
    assert math.isinf(out[0]) and np.all(np.isfinite(out[1:]))


def test_zhu_wang_rate_one_and_trivial_bound():
    inner = ev.AboveThreshold.laplace(0.5, 0.25)
    assert np.array_equal(
        rdp.rdp_curve(ev.Subsampled(inner, 1.0), ORDERS), rdp.rdp_curve(inner, ORDERS)
    )
    at_one = rdp.zhu_wang_rdp(1.0, lambda o: rdp.rdp_curve(inner, o), [2.0, 5.0])
    assert at_one[0] == pytest.approx(rdp.rdp_curve(inner, [2.0])[0], rel=1e-12)
    assert at_one[1] >= rdp.rdp_curve(inner, [5.0])[0]  # the lemma is loose at q = 1
    for q in (1e-3, 0.05, 0.5, 0.99):
        sub = rdp.rdp_curve(ev.Subsampled(inner, q), ORDERS)
        assert np.all(sub <= rdp.rdp_curve(inner, ORDERS))
        assert np.all(np.diff(sub) >= 0)  # non-decreasing in the order


@pytest.mark.parametrize("q", [1e-3, 0.05, 0.5])
@pytest.mark.parametrize("z", [0.7, 2.0, 8.0])
def test_zhu_wang_upper_bounds_exact_subsampled_gaussian(q, z):
    zw = rdp.zhu_wang_rdp(q, lambda o: rdp.gaussian_rdp(z, o), INT_ORDERS)
    exact = rdp.subsampled_gaussian_rdp(q, z, INT_ORDERS)
    assert np.all(zw >= exact * (1 - 1e-12))


def test_subsampled_pure_event_uses_amplification_and_is_small():
    lap = ev.Laplace(scale=1.0)
    sub = rdp.rdp_curve(ev.Subsampled(lap, 0.01), ORDERS)
    amplified = rdp.pure_dp_rdp(pure.amplify_pure(1.0, 0.01), ORDERS)
    assert np.all(sub <= amplified * (1 + 1e-12))
    assert np.all(np.isfinite(sub))


def test_without_replacement():
    lap = ev.Laplace(scale=2.0)
    got = rdp.rdp_curve(ev.Subsampled(lap, 0.1, "without_replacement"), ORDERS)
    assert np.all(got <= rdp.pure_dp_rdp(pure.amplify_pure(0.5, 0.1), ORDERS))
    # a Gaussian on a fixed-size subsample: Wang-Balle-Kasiviswanathan Thm 9 (tests/dualavg checks it vs autodp)
    wor = rdp.rdp_curve(ev.Subsampled(ev.Gaussian(1.0), 0.1, "without_replacement"), ORDERS)
    assert np.all(np.isfinite(wor)) and np.all(wor <= rdp.gaussian_rdp(1.0, ORDERS))
    full = ev.Subsampled(ev.Gaussian(1.0), 1.0, "without_replacement")
    assert np.array_equal(rdp.rdp_curve(full), rdp.gaussian_rdp(1.0, ORDERS))


def test_composition_rules():
    g, lap = ev.Gaussian(2.0), ev.Laplace(1.0)
    both = rdp.rdp_curve(ev.Composed((g, lap, sgm(1.0, 0.1))))
    parts = rdp.rdp_curve(g) + rdp.rdp_curve(lap) + rdp.rdp_curve(sgm(1.0, 0.1))
    assert np.allclose(both, parts, rtol=1e-14)
    assert np.allclose(rdp.rdp_curve(ev.SelfComposed(g, 7)), 7 * rdp.rdp_curve(g), rtol=1e-14)
    assert np.array_equal(rdp.rdp_curve(sgm(1.3, 1.0)), rdp.gaussian_rdp(1.3, ORDERS))


def test_rdp_curve_rejects_non_events():
    with pytest.raises(TypeError, match="event"):
        rdp.rdp_curve("gaussian")


# ------------------------------------------------------------------ conversions


def test_conversions_order_and_round_trip():
    acc = rdp.RDPAccountant().compose(ev.SelfComposed(sgm(1.1, 0.01), 5000))
    orders, curve = acc.orders, acc.rdp
    for delta in (1e-3, 1e-6, 1e-10):
        prop1, _ = rdp.rdp_to_epsilon(orders, curve, delta, method="prop1")
        cks, _ = rdp.rdp_to_epsilon(orders, curve, delta, method="cks")
        best, order = rdp.rdp_to_epsilon(orders, curve, delta)
        assert prop1 >= cks >= best > 0 and order in orders
        assert acc.get_delta(best) == pytest.approx(delta, rel=1e-9)
    eps = [acc.get_epsilon(d) for d in (1e-2, 1e-4, 1e-8, 1e-12)]
    assert np.all(np.diff(eps) > 0)  # smaller delta, larger epsilon
    deltas = [acc.get_delta(e) for e in (0.5, 1.0, 2.0, 4.0)]
    assert np.all(np.diff(deltas) < 0)


def test_epsilon_grows_with_steps_and_zero_rdp_gives_zero():
    eps = [
        rdp.RDPAccountant().compose(sgm(1.0, 0.01), count=n).get_epsilon(1e-5) for n in (1, 10, 100)
    ]
    assert eps[0] < eps[1] < eps[2]
    assert rdp.RDPAccountant().get_epsilon(1e-5) == 0.0
    assert rdp.RDPAccountant().get_delta(1.0) == 0.0


def test_budget_per_order_is_tight():
    eps, delta = 1.5, 1e-6
    budget = rdp.rdp_budget_per_order(ORDERS, eps, delta)
    assert budget[0] < 0 < budget[-1]  # small orders unusable
    for k in np.searchsorted(ORDERS, [16.0, 32.0, 256.0]):
        curve = np.full_like(ORDERS, np.inf)
        curve[k] = budget[k]
        assert rdp.rdp_to_epsilon(ORDERS, curve, delta)[0] == pytest.approx(eps, rel=1e-12)
        curve[k] = budget[k] * 1.001
        assert rdp.rdp_to_epsilon(ORDERS, curve, delta)[0] > eps


def test_inf_orders_are_skipped():
    curve = rdp.rdp_curve(ev.Subsampled(ev.Laplace(1.0), 0.01), ORDERS)
    inf_curve = np.where(ORDERS == np.round(ORDERS), curve, np.inf)
    eps, order = rdp.rdp_to_epsilon(ORDERS, inf_curve, 1e-5)
    assert math.isfinite(eps) and order == round(order)
    assert rdp.rdp_to_epsilon([2.0], [np.inf], 1e-5)[0] == math.inf
    assert rdp.rdp_to_delta([2.0], [np.inf], 1.0)[0] == 1.0


# ------------------------------------------------------------------ accountant API


def test_accountant_api():
    acc = rdp.RDPAccountant()
    assert acc.notion == "rdp" and np.array_equal(acc.orders, ORDERS)
    step = sgm(1.0, 0.02)
    cost = acc.cost(step)
    assert np.all(acc.rdp == 0)  # cost does not compose
    assert acc.compose(step) is acc
    snapshot = acc.copy()
    acc.compose(step, count=3)
    assert np.allclose(snapshot.rdp, cost) and np.allclose(acc.rdp, 4 * cost)
    view = acc.rdp
    view[:] = 0
    assert np.allclose(acc.rdp, 4 * cost)  # rdp returns a copy
    with pytest.raises(ValueError):
        acc.orders[0] = 5.0
    eps, order = acc.get_epsilon_and_order(1e-5)
    assert eps == acc.get_epsilon(1e-5) and order in ORDERS


def test_accountant_custom_orders_and_cache():
    orders = [1.5, 2.0, 8.0, 32.0]
    acc = rdp.RDPAccountant(orders)
    assert np.array_equal(acc.orders, orders)
    step = sgm(0.9, 0.03)
    acc.compose(step)
    before = rdp._cached_curve.cache_info()
    for _ in range(500):
        acc.compose(step)
    after = rdp._cached_curve.cache_info()
    assert after.misses == before.misses  # the curve is computed once
    assert after.hits == before.hits  # and the same event object is found by identity, unhashed
    acc.compose(sgm(0.9, 0.03))  # an equal event, another object: the shared cache, by value
    assert rdp._cached_curve.cache_info().misses == before.misses
    assert np.allclose(acc.rdp, 502 * rdp.subsampled_gaussian_rdp(0.03, 0.9, orders), rtol=1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda a: a.get_epsilon(0.0), "delta"),
        (lambda a: a.get_epsilon(1.0), "delta"),
        (lambda a: a.get_epsilon(float("nan")), "delta"),
        (lambda a: a.get_delta(0.0), "epsilon"),
        (lambda a: a.get_delta(-1.0), "epsilon"),
        (lambda a: a.get_delta(float("nan")), "epsilon"),
        (lambda a: a.compose(ev.Gaussian(1.0), count=0), "count"),
    ],
)
def test_accountant_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call(rdp.RDPAccountant())


def test_bad_input_elsewhere():
    for orders in ([1.0, 2.0], [0.5], [], [2.0, np.nan], [np.inf]):
        with pytest.raises(ValueError, match="orders"):
            rdp.RDPAccountant(orders)
    with pytest.raises(TypeError, match="event"):
        rdp.RDPAccountant().compose("gaussian")
    with pytest.raises(TypeError, match="count"):
        rdp.RDPAccountant().compose(ev.Gaussian(1.0), count=1.5)
    with pytest.raises(ValueError, match="rdp"):
        rdp.rdp_to_epsilon([2.0, 3.0], [0.1], 1e-5)
    with pytest.raises(ValueError, match="rdp"):
        rdp.rdp_to_epsilon([2.0], [-0.1], 1e-5)
    with pytest.raises(ValueError, match="method"):
        rdp.rdp_to_epsilon([2.0], [0.1], 1e-5, method="fast")
    with pytest.raises(ValueError, match="noise_multiplier"):
        rdp.subsampled_gaussian_rdp(0.1, 0.0)
    with pytest.raises(ValueError, match="rate"):
        rdp.subsampled_gaussian_rdp(1.5, 1.0)
    with pytest.raises(ValueError, match="rate"):
        rdp.zhu_wang_rdp(0.0, rdp.gaussian_rdp)
    with pytest.raises(ValueError, match="epsilon"):
        rdp.rdp_budget_per_order(ORDERS, 0.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        rdp.rdp_budget_per_order(ORDERS, 1.0, 0.0)


def _focus_events():
    at = ev.AboveThreshold.laplace(0.05, 0.025, sensitivity=1.0)
    gat = ev.AboveThreshold.gaussian(3.0, 4.0, sensitivity=1.0)
    g = ev.Gaussian(sigma=8.0, sensitivity=1.0)
    return [
        ev.Subsampled(g, 0.002, "poisson"),
        ev.Subsampled(at, 0.002, "poisson"),
        ev.Subsampled(gat, 0.01, "poisson"),
        ev.Subsampled(at, 0.05, "without_replacement"),
        ev.Subsampled(g, 0.05, "without_replacement"),
        ev.Composed((ev.Subsampled(g, 0.002, "poisson"), ev.Subsampled(at, 0.002, "poisson"))),
        ev.SelfComposed(ev.Subsampled(at, 0.002, "poisson"), 7),
        ev.Laplace(20.0, 1.0),
        g,
        ev.Activated(ev.Subsampled(g, 0.1, "without_replacement"), 0.3),
    ]


@pytest.mark.parametrize("orders", [None, [float(a) for a in INT_ORDERS if a >= 2]])
def test_focused_accountant_gives_the_same_floats(orders):
    """RDPAccountant.focus: the value at the focus order comes from the curve on the orders >= it
    (bit for bit the entry of the curve on all orders), and a focused accountant reports the same
    floats as an unfocused one — at its order eagerly, at every order once asked."""
    events = _focus_events()
    grid = rdp.RDPAccountant(orders).orders
    for order in grid[[0, len(grid) // 3, len(grid) // 2, -1]]:
        sub = grid[grid >= order]
        i, j = int(np.flatnonzero(grid == order)[0]), int(np.flatnonzero(sub == order)[0])
        for event in events:
            assert rdp.rdp_curve(event, sub)[j] == rdp.rdp_curve(event, grid)[i], (order, event)
        plain, focused = rdp.RDPAccountant(orders), rdp.RDPAccountant(orders)
        focused.focus(order)
        sequence = [events[k % len(events)] for k in (0, 1, 1, 1, 5, 2, 0, 0, 3, 6, 4, 7, 8, 9, 5)]
        for event in sequence:
            for acc in (plain, focused):
                acc.compose(event, count=2 if event is events[2] else 1)
            assert focused.epsilon_at(1e-8, order) == plain.epsilon_at(1e-8, order)
            after = events[1]
            assert focused.epsilon_after(after, 1e-8, order=order) == plain.epsilon_after(after, 1e-8, order=order)
            for eps in (0.5, 2.0, 50.0):
                assert focused.fits(after, eps, 1e-8, order=order) == plain.fits(after, eps, 1e-8, order=order)
        copy = focused.copy()
        assert np.array_equal(focused.rdp, plain.rdp) and np.array_equal(copy.rdp, plain.rdp)
        assert focused.get_epsilon(1e-8) == plain.get_epsilon(1e-8)
        copy.compose(events[0])  # a copy composes on its own
        assert np.array_equal(focused.rdp, plain.rdp)
    with pytest.raises(ValueError, match="before anything is composed"):
        plain.focus(grid[0])
