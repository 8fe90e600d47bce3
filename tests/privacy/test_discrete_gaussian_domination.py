"""The continuous Gaussian that covers a discrete Gaussian release (events.DiscreteGaussian.dominating_gaussian)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

from dpopt.privacy import PLDAccountant, RDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.rdp import rdp_curve, zhu_wang_rdp


def _eta(tau: float) -> float:
    return 2.0 * sum(math.exp(-2.0 * math.pi**2 * tau**2 * k * k) for k in range(1, 20))


@pytest.mark.parametrize(("sigma_c", "tau"), [(2.0, 0.35), (1.5, 0.5), (3.0, 0.3)])
def test_rounding_kernel_turns_the_continuous_gaussian_into_the_discrete_one_within_eta(sigma_c, tau):
    """The proof's identity, at a τ small enough for η to be visible: N(0, σ'²) followed by the kernel
    N_ℤ(y, τ²) has, at every integer w, the probability of N_ℤ(0, σ'² + τ²) within (1 ± η)/(1 ∓ η)."""
    ks = np.arange(-60, 61)

    def kernel(y, w):
        weights = np.exp(-((ks - y) ** 2) / (2 * tau**2))
        return math.exp(-((w - y) ** 2) / (2 * tau**2)) / weights.sum()

    def density(u):
        return math.exp(-u * u / (2 * sigma_c**2)) / (math.sqrt(2 * math.pi) * sigma_c)

    ws = np.arange(-12, 13)
    pushed = np.array([integrate.quad(lambda u, w=w: density(u) * kernel(u, w), -40, 40, limit=400,
                                      points=list(range(-12, 13)))[0] for w in ws])
    total = sigma_c**2 + tau**2
    target = np.exp(-(np.arange(-200, 201) ** 2) / (2 * total))
    discrete = np.exp(-(ws**2) / (2 * total)) / target.sum()
    eta = _eta(tau)
    assert eta > 1e-4  # the factor is visible here, so the bound is really exercised
    ratio = pushed / discrete
    assert np.all(ratio <= (1 + eta) / (1 - eta) * (1 + 1e-7)) and np.all(ratio >= (1 - eta) / (1 + eta) * (1 - 1e-7))
    assert np.ptp(ratio) > eta / 100  # and it is not trivially 1


def test_wide_discrete_gaussian_is_accounted_as_the_continuous_one_at_sigma_prime():
    event = ev.DiscreteGaussian(sigma=14.0 * 4194307, sensitivity=4194307)
    cover = event.dominating_gaussian()
    assert cover.sensitivity == 4194307 and cover.sigma == pytest.approx(math.sqrt(event.sigma**2 - 16.0), rel=1e-15)
    assert cover.sigma < event.sigma
    assert ev.DiscreteGaussian(sigma=4.0, sensitivity=1).dominating_gaussian() is None  # σ ≤ τ: none
    step = ev.Subsampled(event, 0.05, "poisson")
    continuous = ev.Subsampled(cover, 0.05, "poisson")
    orders = np.array([2.0, 8.0, 32.0, 128.0])
    np.testing.assert_allclose(rdp_curve(step, orders), rdp_curve(continuous, orders), rtol=1e-12)
    # the generic Poisson bound it replaces is far looser here
    generic = zhu_wang_rdp(0.05, lambda o: rdp_curve(event, o), orders)
    assert np.all(generic[1:] > 3 * rdp_curve(step, orders)[1:])
    rdp = RDPAccountant().compose(ev.SelfComposed(step, 5268)).get_epsilon(1e-5)
    assert rdp == pytest.approx(RDPAccountant().compose(ev.SelfComposed(continuous, 5268)).get_epsilon(1e-5), rel=1e-9)
    pld = PLDAccountant().compose(ev.SelfComposed(step, 500)).get_epsilon(1e-5)
    assert pld == pytest.approx(PLDAccountant().compose(ev.SelfComposed(continuous, 500)).get_epsilon(1e-5), rel=1e-9)
