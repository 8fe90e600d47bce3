"""Tests of noise calibration: RDP-calibrated Gaussian, analytic Gaussian, Laplace, papers."""

from __future__ import annotations

import logging
import math

import dp_accounting as dpa
import numpy as np
import pytest
from scipy import integrate, stats

from dpopt.privacy import calibration as cal
from dpopt.privacy import events as ev
from dpopt.privacy import pure, rdp

logging.getLogger("absl").setLevel(logging.ERROR)

INT_ORDERS = rdp.DEFAULT_ORDERS[rdp.DEFAULT_ORDERS == np.round(rdp.DEFAULT_ORDERS)]


def rdp_epsilon(sigma, delta, *, steps, rate, sensitivity=1.0, orders=None):
    step = ev.Subsampled(ev.Gaussian(sigma, sensitivity), rate, "poisson")
    return rdp.RDPAccountant(orders).compose(ev.SelfComposed(step, steps)).get_epsilon(delta)


# ------------------------------------------------------------------ RDP calibration


@pytest.mark.parametrize(
    "epsilon, delta, steps, rate",
    [
        (1.0, 1e-5, 1, 1.0),
        (0.5, 1e-6, 1000, 0.01),
        (8.0, 1e-5, 10_000, 0.004),
        (0.2, 1e-10, 100_000, 1e-3),
        (3.0, 1e-3, 10, 0.5),
    ],
)
def test_calibrated_sigma_is_the_smallest_that_meets_the_target(epsilon, delta, steps, rate):
    sigma = cal.calibrate_gaussian_sigma(epsilon, delta, steps=steps, rate=rate)
    assert rdp_epsilon(sigma, delta, steps=steps, rate=rate) <= epsilon
    assert rdp_epsilon(sigma * (1 - 1e-6), delta, steps=steps, rate=rate) > epsilon


def test_calibration_matches_dp_accounting():
    epsilon, delta, steps, rate = 2.0, 1e-5, 2000, 0.01
    sigma = cal.calibrate_gaussian_sigma(epsilon, delta, steps=steps, rate=rate, orders=INT_ORDERS)

    def make_event(z):
        return dpa.SelfComposedDpEvent(
            dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(z)), steps
        )

    ref = dpa.calibrate_dp_mechanism(
        lambda: dpa.rdp.RdpAccountant(list(INT_ORDERS)),
        make_event,
        epsilon,
        delta,
        dpa.ExplicitBracketInterval(0.3, 10.0),
        tol=1e-10,
    )
    assert sigma == pytest.approx(ref, rel=1e-8)


def test_calibration_scales_and_is_monotone():
    base = cal.calibrate_gaussian_sigma(1.0, 1e-5, steps=100, rate=0.05)
    scaled = cal.calibrate_gaussian_sigma(1.0, 1e-5, steps=100, rate=0.05, sensitivity=3.0)
    assert scaled == pytest.approx(3.0 * base, rel=1e-12)
    assert cal.calibrate_gaussian_sigma(1.0, 1e-5, steps=400, rate=0.05) > base
    assert cal.calibrate_gaussian_sigma(0.5, 1e-5, steps=100, rate=0.05) > base
    assert cal.calibrate_gaussian_sigma(1.0, 1e-7, steps=100, rate=0.05) > base
    assert cal.calibrate_gaussian_sigma(1.0, 1e-5, steps=100, rate=0.1) > base


# ------------------------------------------------------------------ analytic Gaussian


def _hockey_stick(sigma, epsilon):
    """sup over events of P(A) − e^ε Q(A) for N(1, σ²) vs N(0, σ²), by quadrature."""

    def integrand(x):
        return max(
            stats.norm.pdf(x, 1.0, sigma) - math.exp(epsilon) * stats.norm.pdf(x, 0, sigma), 0
        )

    cut = 0.5 + epsilon * sigma**2  # densities cross here
    value, _ = integrate.quad(integrand, cut, cut + 40 * sigma, epsabs=0, epsrel=1e-12, limit=200)
    return value


@pytest.mark.parametrize("sigma, epsilon", [(1.0, 0.5), (0.5, 2.0), (3.0, 0.1), (2.0, 1.0)])
def test_gaussian_delta_is_the_hockey_stick_divergence(sigma, epsilon):
    assert cal.gaussian_delta(sigma, epsilon) == pytest.approx(
        _hockey_stick(sigma, epsilon), rel=1e-8
    )
    assert cal.gaussian_delta(2 * sigma, epsilon, sensitivity=2.0) == pytest.approx(
        cal.gaussian_delta(sigma, epsilon), rel=1e-12
    )


@pytest.mark.parametrize(
    "epsilon, delta", [(1.0, 1e-5), (0.1, 1e-5), (0.5, 1e-10), (5.0, 1e-6), (20.0, 1e-3)]
)
def test_analytic_gaussian_sigma(epsilon, delta):
    sigma = cal.analytic_gaussian_sigma(epsilon, delta)
    assert cal.gaussian_delta(sigma, epsilon) <= delta
    assert cal.gaussian_delta(sigma * (1 - 1e-6), epsilon) > delta
    assert sigma == pytest.approx(dpa.get_sigma_gaussian(epsilon, delta), rel=1e-7)
    if epsilon < 1:  # the classic calibration (Dwork & Roth Thm A.1) is valid and larger
        assert math.sqrt(2 * math.log(1.25 / delta)) / epsilon > sigma
    assert cal.analytic_gaussian_sigma(epsilon, delta, sensitivity=0.5) == pytest.approx(
        0.5 * sigma, rel=1e-12
    )


def test_analytic_gaussian_reference_value():
    # epsilon = 1, delta = 1e-5: the analytic Gaussian mechanism needs sigma = 3.7306
    # (also what autodp's ana_gaussian_mech and dp-accounting's get_sigma_gaussian
    # return), against 4.8448 for the classic formula sqrt(2 ln(1.25/delta))/epsilon.
    assert cal.analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.7306, abs=1e-4)
    assert math.sqrt(2 * math.log(1.25e5)) == pytest.approx(4.8448, abs=1e-4)


def test_rdp_calibration_is_never_below_analytic():
    # RDP conversion is lossy for a single Gaussian release, never optimistic.
    for epsilon, delta in [(0.5, 1e-5), (2.0, 1e-8)]:
        assert cal.calibrate_gaussian_sigma(epsilon, delta) >= cal.analytic_gaussian_sigma(
            epsilon, delta
        )


# ------------------------------------------------------------------ Laplace


@pytest.mark.parametrize("steps, rate", [(1, 1.0), (100, 1.0), (100, 0.01), (5000, 0.3)])
def test_calibrate_laplace_scale_inverts_amplification(steps, rate):
    sens, epsilon = 2.0, 1.0
    scale = cal.calibrate_laplace_scale(epsilon, sensitivity=sens, steps=steps, rate=rate)
    step = ev.Subsampled(ev.Laplace(scale, sens), rate, "without_replacement")
    spent = pure.PureDPAccountant().compose(ev.SelfComposed(step, steps)).get_epsilon()
    assert spent == pytest.approx(epsilon, rel=1e-12)
    assert pure.amplify_pure(sens / scale, rate) == pytest.approx(epsilon / steps, rel=1e-12)
    if rate == 1.0:
        assert scale == pytest.approx(sens * steps / epsilon, rel=1e-15)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: cal.calibrate_gaussian_sigma(0.0, 1e-5), ValueError, "epsilon"),
        (lambda: cal.calibrate_gaussian_sigma(float("nan"), 1e-5), ValueError, "epsilon"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 0.0), ValueError, "delta"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 1.0), ValueError, "delta"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 1e-5, rate=0.0), ValueError, "rate"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 1e-5, rate=1.5), ValueError, "rate"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 1e-5, steps=0), ValueError, "steps"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 1e-5, steps=2.0), TypeError, "steps"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 1e-5, sensitivity=0), ValueError, "sensitivity"),
        (lambda: cal.calibrate_gaussian_sigma(1.0, 1e-5, orders=[0.5]), ValueError, "orders"),
        (lambda: cal.analytic_gaussian_sigma(-1.0, 1e-5), ValueError, "epsilon"),
        (lambda: cal.analytic_gaussian_sigma(1.0, 1.2), ValueError, "delta"),
        (lambda: cal.gaussian_delta(0.0, 1.0), ValueError, "sigma"),
        (lambda: cal.gaussian_delta(1.0, 0.0), ValueError, "epsilon"),
        (lambda: cal.calibrate_laplace_scale(0.0, sensitivity=1.0), ValueError, "epsilon"),
        (lambda: cal.calibrate_laplace_scale(1.0, sensitivity=-1.0), ValueError, "sensitivity"),
        (lambda: cal.calibrate_laplace_scale(1.0, sensitivity=1.0, rate=0), ValueError, "rate"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("accountant", ["pure", "rdp", "zcdp", "pld"])
def test_calibrate_scale_inverts_any_accountant(accountant):
    from dpopt.privacy import make_accountant

    epsilon, delta = 0.8, (0.0 if accountant == "pure" else 1e-6)
    if accountant == "pure":
        def event_of(b):
            return ev.SelfComposed(ev.Subsampled(ev.Laplace(b, 0.1), 0.05, "without_replacement"), 20)
    elif accountant == "zcdp":
        def event_of(s):
            return ev.SelfComposed(ev.Gaussian(s, 1.0), 20)
    else:
        def event_of(s):
            return ev.SelfComposed(ev.Subsampled(ev.Gaussian(s, 1.0), 0.05), 20)
    scale = cal.calibrate_scale(event_of, epsilon, delta, accountant=accountant)

    def eps(s):
        acc = make_accountant(accountant).compose(event_of(s))
        return acc.get_epsilon() if accountant == "pure" else acc.get_epsilon(delta)

    assert eps(scale) <= epsilon < eps(scale * (1 - 1e-6))
    with pytest.raises(ValueError, match="delta"):
        cal.calibrate_scale(event_of, epsilon, 1e-5 if accountant == "pure" else 0.0, accountant=accountant)
