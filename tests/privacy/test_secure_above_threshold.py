"""Floating-point-safe AboveThreshold: exact discrete noise on grid-rounded queries (chen2020 Algorithm 1).

The discrete Laplace Rényi divergence is checked against a direct sum over ℤ,
the charged ``DiscreteAboveThreshold`` against chen2020 eqs. (4)–(5) in grid units.
"""

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from dpopt.privacy import Ledger, RDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy import mechanisms as mech
from dpopt.privacy.pure import pure_epsilon
from dpopt.privacy.rdp import discrete_laplace_rdp, laplace_rdp, rdp_curve
from dpopt.privacy.zcdp import zcdp_rho

ORDERS = np.array([1.5, 2.0, 3.0, 10.0, 64.0, 512.0])


def direct_discrete_laplace_rdp(scale: float, shift: int, order: float) -> float:
    """D_α(L ‖ L + k) by summing P(x)^α P(x − k)^{1−α} over x ∈ [−W, W] (tails below 1e-30)."""
    width = int(80 * scale) + 2 * shift + 10
    x = np.arange(-width, width + 1, dtype=float)
    log_p = -np.abs(x) / scale
    log_p -= logsumexp(log_p)
    log_q = -np.abs(x - shift) / scale
    log_q -= logsumexp(log_q)
    return float(logsumexp(order * log_p + (1.0 - order) * log_q)) / (order - 1.0)


@pytest.mark.parametrize("scale, shift", [(0.7, 1), (2.5, 3), (40.0, 7), (300.0, 1), (10.0, 20)])
def test_discrete_laplace_rdp_is_the_renyi_divergence_summed_over_the_integers(scale, shift):
    got = discrete_laplace_rdp(scale, shift, ORDERS)
    want = [direct_discrete_laplace_rdp(scale, shift, a) for a in ORDERS]
    assert got == pytest.approx(want, rel=1e-9, abs=1e-15)
    assert np.all(got <= shift / scale + 1e-15)  # the pure-DP cap


def test_discrete_laplace_rdp_tends_to_the_continuous_one_on_a_fine_grid():
    # shift k at scale k/ε: the grid gets finer as k grows, the divergence tends to Mironov's
    fine = discrete_laplace_rdp(2**20 / 0.3, 2**20, ORDERS)
    assert fine == pytest.approx(laplace_rdp(0.3, ORDERS), rel=1e-5)
    with pytest.raises(ValueError, match="shift"):
        discrete_laplace_rdp(1.0, 0, ORDERS)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_secure_event_keeps_the_paper_parameters_in_grid_units(noise):
    event = (ev.AboveThreshold.laplace(0.2, 0.1, 1.5) if noise == "laplace"
             else ev.AboveThreshold.gaussian(2.0, 3.0, 1.5))
    discrete, grid = mech.secure_event(event, 1)
    assert isinstance(discrete, ev.DiscreteAboveThreshold) and discrete.noise == noise
    assert math.log2(grid) == round(math.log2(grid))
    assert discrete.sensitivity == math.floor(1.5 / grid) + 1  # ⌊Δ_q/g⌋ + 1 after rounding
    assert ev.from_json(discrete.to_json()) == discrete
    curve = rdp_curve(discrete, ORDERS)
    if noise == "gaussian":  # eq. (5) with σ₁, σ₂ in grid units: the same multipliers
        assert (discrete.sigma1, discrete.sigma2) == pytest.approx((2.0, 3.0), rel=1e-15)
        assert curve == pytest.approx(ORDERS / 2.0 * (1 / 4.0 + 4 / 9.0), rel=1e-12)
        assert zcdp_rho(discrete) == pytest.approx(0.5 * (1 / 4.0 + 4 / 9.0))
    else:  # eq. (4) with the discrete Laplace's moments at shifts Δ and 2Δ, capped by ε₁ + 2ε₂
        assert (discrete.epsilon1, discrete.epsilon2) == pytest.approx((0.2, 0.1), rel=1e-12)
        assert pure_epsilon(discrete) == pytest.approx(0.4)
        assert curve == pytest.approx(rdp_curve(event, ORDERS), rel=1e-4)  # a 2⁻²⁰ grid costs nothing visible
        coarse = ev.DiscreteAboveThreshold("laplace", 3.0, 5.0, 2)  # Δ = 2, ε₁ = 2/3, ε₂ = 2/5
        eq4 = [direct_discrete_laplace_rdp(3.0, 2, a) + direct_discrete_laplace_rdp(5.0, 4, a) for a in ORDERS]
        assert rdp_curve(coarse, ORDERS) == pytest.approx(np.minimum(eq4, 2 / 3 + 4 / 5), rel=1e-9)


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_secure_above_threshold_charges_the_discrete_event_first_and_answers(noise, lazy):
    event = (ev.AboveThreshold.laplace(2.0, 1.0, 1.0) if noise == "laplace"
             else ev.AboveThreshold.gaussian(0.5, 0.5, 1.0))
    ledger = Ledger(50.0, 1e-5, RDPAccountant())
    # queries far below, then far above (beyond the grid's range: clamped, not refused), per repetition
    queries = np.array([[-60.0, -50.0, 1e300, 40.0], [-60.0, 60.0, -50.0, -40.0], [-60.0] * 4])
    if lazy:
        session = mech.AboveThresholdSession(event, ledger=ledger, rng=np.random.default_rng(0),
                                             batch_shape=3, secure_noise=True)
        fired = [session.ask(queries[:, j]) for j in range(4)]
        index = np.where(np.any(fired, axis=0), np.argmax(fired, axis=0), -1)
    else:
        index = mech.above_threshold(queries, event=event, ledger=ledger, rng=np.random.default_rng(0),
                                     secure_noise=True)
    assert index.tolist() == [2, 1, -1]
    assert ledger.events == [mech.secure_event(event, 1)[0]]


def test_secure_above_threshold_is_not_seeded_and_refuses_before_charging():
    event = ev.AboveThreshold.gaussian(4.0, 4.0, 1.0)
    queries = np.zeros((400, 1))
    runs = [mech.above_threshold(queries, event=event, ledger=Ledger(1e3, 1e-5, RDPAccountant()),
                                 rng=np.random.default_rng(0), secure_noise=True) for _ in range(2)]
    assert not np.array_equal(*runs)  # the noise comes from the OS CSPRNG, not from rng
    assert 0.3 < np.mean(runs[0] == 0) < 0.7  # P(ν ≥ λ) = 1/2 up to ties
    ledger = Ledger(1.0, 1e-5, RDPAccountant())
    with pytest.raises(ValueError):
        mech.above_threshold(np.array([np.nan]), event=event, ledger=ledger, rng=np.random.default_rng(0),
                             secure_noise=True)
    assert ledger.events == []
