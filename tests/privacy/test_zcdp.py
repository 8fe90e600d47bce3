"""Tests of zCDP accounting and the ρ ↔ (ε, δ) conversion."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from dpopt.privacy import events as ev
from dpopt.privacy import rdp, zcdp


@pytest.mark.parametrize("epsilon", [1e-4, 0.1, 1.0, 8.0, 100.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-8, 1e-12])
def test_rho_from_epsilon_delta_inverts_epsilon_from_rho(epsilon, delta):
    rho = zcdp.rho_from_epsilon_delta(epsilon, delta)
    assert zcdp.epsilon_from_rho(rho, delta) == pytest.approx(epsilon, rel=1e-13)

    def f(r):
        return r + 2 * math.sqrt(r * math.log(1 / delta)) - epsilon

    root = optimize.brentq(f, 0.0, epsilon, xtol=1e-300, rtol=1e-15)
    assert rho == pytest.approx(root, rel=1e-10)
    assert zcdp.delta_from_rho(rho, epsilon) == pytest.approx(delta, rel=1e-9)


def test_gaussian_rho_and_composition():
    acc = zcdp.ZCDPAccountant()
    assert acc.notion == "zcdp" and acc.rho == 0.0
    gauss = ev.Gaussian(sigma=3.0, sensitivity=1.5)
    assert acc.cost(gauss) == pytest.approx(1.5**2 / (2 * 9.0), rel=1e-15)
    assert acc.compose(gauss) is acc
    acc.compose(gauss, count=3)
    assert acc.rho == pytest.approx(4 * 0.125, rel=1e-15)
    assert zcdp.ZCDPAccountant().compose(ev.SelfComposed(gauss, 4)).rho == pytest.approx(acc.rho)
    composed = ev.Composed((gauss, ev.Laplace(scale=2.0), ev.PureDP(0.3)))
    assert zcdp.zcdp_rho(composed) == pytest.approx(0.125 + 0.5**2 / 2 + 0.3**2 / 2, rel=1e-14)


def test_pure_events_use_half_epsilon_squared():
    for event, eps in [
        (ev.Laplace(scale=4.0, sensitivity=2.0), 0.5),
        (ev.VectorLaplace(scale=1.0, sensitivity=0.2), 0.2),
        (ev.Exponential(0.7), 0.7),
        (ev.PureDP(1.1), 1.1),
        (ev.AboveThreshold.laplace(0.2, 0.1), 0.4),
    ]:
        assert zcdp.zcdp_rho(event) == pytest.approx(eps**2 / 2, rel=1e-14)


def test_gaussian_above_threshold_is_linear_rdp():
    event = ev.AboveThreshold.gaussian(1.5, 2.5, sensitivity=3.0)
    rho = zcdp.zcdp_rho(event)
    assert rho == pytest.approx(0.5 * (1 / 1.5**2 + 4 / 2.5**2), rel=1e-14)
    orders = np.array([1.5, 2.0, 10.0])
    assert np.allclose(rdp.rdp_curve(event, orders), rho * orders, rtol=1e-13)


def test_zcdp_line_dominates_rdp_curves():
    for event in (ev.Gaussian(2.0), ev.Laplace(1.0), ev.PureDP(0.1), ev.Exponential(3.0)):
        rho = zcdp.zcdp_rho(event)
        assert np.all(rdp.rdp_curve(event) <= rho * rdp.DEFAULT_ORDERS * (1 + 1e-12))
    gauss = ev.SelfComposed(ev.Gaussian(5.0), 50)
    eps_rdp = rdp.RDPAccountant().compose(gauss).get_epsilon(1e-6)
    eps_zcdp = zcdp.ZCDPAccountant().compose(gauss).get_epsilon(1e-6)
    assert eps_rdp <= eps_zcdp


def test_subsampling_is_refused_except_at_rate_one():
    gauss = ev.Gaussian(1.0)
    with pytest.raises(ValueError, match="subsampling"):
        zcdp.ZCDPAccountant().compose(ev.Subsampled(gauss, 0.1))
    with pytest.raises(ValueError, match="subsampling"):
        zcdp.zcdp_rho(
            ev.SelfComposed(ev.Subsampled(ev.Laplace(1.0), 0.5, "without_replacement"), 2)
        )
    assert zcdp.zcdp_rho(ev.Subsampled(gauss, 1.0)) == 0.5


def test_epsilon_delta_conversion_and_copy():
    acc = zcdp.ZCDPAccountant().compose(ev.Gaussian(4.0), count=10)
    rho = 10 / 32
    assert acc.get_epsilon(1e-5) == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e5)))
    eps = acc.get_epsilon(1e-5)
    assert acc.get_delta(eps) == pytest.approx(1e-5, rel=1e-9)
    assert acc.get_delta(rho / 2) == 1.0
    assert zcdp.ZCDPAccountant().get_delta(1.0) == 0.0
    assert zcdp.ZCDPAccountant().get_epsilon(1e-5) == 0.0
    clone = acc.copy()
    clone.compose(ev.Gaussian(1.0))
    assert acc.rho == pytest.approx(rho) and clone.rho == pytest.approx(rho + 0.5)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: zcdp.rho_from_epsilon_delta(0.0, 1e-5), ValueError, "epsilon"),
        (lambda: zcdp.rho_from_epsilon_delta(-1.0, 1e-5), ValueError, "epsilon"),
        (lambda: zcdp.rho_from_epsilon_delta(float("nan"), 1e-5), ValueError, "epsilon"),
        (lambda: zcdp.rho_from_epsilon_delta(1.0, 0.0), ValueError, "delta"),
        (lambda: zcdp.rho_from_epsilon_delta(1.0, 1.0), ValueError, "delta"),
        (lambda: zcdp.rho_from_epsilon_delta("1", 1e-5), TypeError, "epsilon"),
        (lambda: zcdp.epsilon_from_rho(-0.1, 1e-5), ValueError, "rho"),
        (lambda: zcdp.ZCDPAccountant().get_epsilon(0.0), ValueError, "delta"),
        (lambda: zcdp.ZCDPAccountant().get_delta(0.0), ValueError, "epsilon"),
        (lambda: zcdp.ZCDPAccountant().compose(ev.Gaussian(1.0), count=0), ValueError, "count"),
        (lambda: zcdp.ZCDPAccountant().compose("gauss"), TypeError, "event"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
