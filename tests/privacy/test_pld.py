"""Tests of the PLD accountant: anchors (dp-accounting's PLD, the PRV accountant), closed forms, fallback.

Anchors are computed in the test run by the reference libraries: dp-accounting
0.6.0's ``PLDAccountant`` / PLD constructors (same connect-the-dots
discretization, so they agree to rounding at the same grid) and the PRV
accountant of Gopi, Lee & Wutschitz (its stated bracket [ε_lower, ε_upper]).
Closed forms: T Gaussian mechanisms with noise multiplier z compose to the
Gaussian mechanism with multiplier z/√T (μ-GDP, Dong, Roth & Su 2022, Cor. 2),
whose δ(ε) is exact (Balle & Wang 2018, Thm 8).
"""

from __future__ import annotations

import logging
import math

import dp_accounting as dpa
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa_pld

from dpopt.privacy import events as ev
from dpopt.privacy.calibration import gaussian_delta
from dpopt.privacy.pld import PLDAccountant
from dpopt.privacy.pure import amplify_pure
from dpopt.privacy.rdp import RDPAccountant

logging.getLogger("absl").setLevel(logging.ERROR)

H = 1e-3  # a coarse grid keeps the file fast; dp-accounting runs at the same grid


def poisson(event, rate):
    return ev.Subsampled(event, rate=rate, scheme="poisson")


def dpa_epsilon(event, delta, h=H):
    return dpa.pld.PLDAccountant(value_discretization_interval=h).compose(event).get_epsilon(delta)


# --------------------------------------------------------------------------- anchors


def test_opacus_reference_against_prv_and_dp_accounting():
    """Poisson q = 0.04, σ = 1.5, 2250 steps, δ = 1e-5 (Opacus's reference, ε ≈ 6.78)."""
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

    acc = PLDAccountant(discretization=H).compose(ev.SelfComposed(poisson(ev.Gaussian(1.5), 0.04), 2250))
    eps = acc.get_epsilon(1e-5)
    ref = dpa_epsilon(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.04, dpa.GaussianDpEvent(1.5)), 2250), 1e-5)
    assert eps == pytest.approx(ref, rel=1e-6)
    prv = PRVAccountant(
        prvs=PoissonSubsampledGaussianMechanism(noise_multiplier=1.5, sampling_probability=0.04),
        max_self_compositions=2250,
        eps_error=0.1,
        delta_error=1e-9,
    )
    lower, _, upper = prv.compute_epsilon(delta=1e-5, num_self_compositions=[2250])
    assert lower <= eps <= upper
    # RDP is looser by ~8 % here, and the accountant never reports more than RDP
    rdp_eps = RDPAccountant().compose(ev.SelfComposed(poisson(ev.Gaussian(1.5), 0.04), 2250)).get_epsilon(1e-5)
    assert eps < 0.95 * rdp_eps
    optimistic, pessimistic = acc.get_epsilon_bounds(1e-5)
    assert pessimistic == eps
    assert eps - 0.005 < optimistic <= eps  # the discretization gap the user sees is small


@pytest.mark.parametrize(("scale", "rate", "steps"), [(2.0, 0.05, 300), (0.5, 0.01, 1000), (1.0, 1.0, 20)])
def test_subsampled_laplace_matches_dp_accounting(scale, rate, steps):
    event = ev.SelfComposed(poisson(ev.Laplace(scale), rate), steps)
    inner = dpa.LaplaceDpEvent(scale)
    ref_event = dpa.SelfComposedDpEvent(inner if rate == 1 else dpa.PoissonSampledDpEvent(rate, inner), steps)
    for delta in (1e-5, 1e-8):
        assert PLDAccountant(H).compose(event).get_epsilon(delta) == pytest.approx(
            dpa_epsilon(ref_event, delta), rel=1e-5, abs=1e-6
        )


def test_mixed_composition_matches_dp_accounting():
    ours = PLDAccountant(H)
    ours.compose(ev.SelfComposed(poisson(ev.Gaussian(2.0), 0.02), 500))
    ours.compose(ev.SelfComposed(ev.Laplace(20.0), 10))
    ours.compose(ev.Gaussian(8.0, sensitivity=2.0))
    ref = dpa.ComposedDpEvent(
        [
            dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.02, dpa.GaussianDpEvent(2.0)), 500),
            dpa.SelfComposedDpEvent(dpa.LaplaceDpEvent(20.0), 10),
            dpa.GaussianDpEvent(4.0),
        ]
    )
    for delta in (1e-4, 1e-6):
        assert ours.get_epsilon(delta) == pytest.approx(dpa_epsilon(ref, delta), rel=1e-5)


def test_mixed_composition_against_prv_bracket():
    from prv_accountant import PRVAccountant
    from prv_accountant.privacy_random_variables import LaplaceMechanism, PoissonSubsampledGaussianMechanism

    prvs = [
        PoissonSubsampledGaussianMechanism(noise_multiplier=1.0, sampling_probability=0.01),
        LaplaceMechanism(mu=0.05),
    ]
    prv = PRVAccountant(prvs=prvs, max_self_compositions=[1000, 50], eps_error=0.05, delta_error=1e-10)
    lower, _, upper = prv.compute_epsilon(delta=1e-6, num_self_compositions=[1000, 50])
    ours = PLDAccountant(H).compose(ev.SelfComposed(poisson(ev.Gaussian(1.0), 0.01), 1000))
    ours.compose(ev.SelfComposed(ev.Laplace(scale=20.0), 50))
    assert lower <= ours.get_epsilon(1e-6) <= upper


def test_discrete_mechanisms_match_dp_accounting():
    options = {"value_discretization_interval": H, "use_connect_dots": True}
    ours = PLDAccountant(H).compose(ev.SelfComposed(ev.DiscreteLaplace(scale=4.0, sensitivity=3), 30))
    ref30 = dpa_pld.from_discrete_laplace_mechanism(0.25, 3, **options).self_compose(30)
    for delta in (1e-3, 1e-7):
        assert ours.get_epsilon(delta) == pytest.approx(ref30.get_epsilon_for_delta(delta), rel=1e-4, abs=2 * H)
    # a discrete Gaussian is accounted in any dimension: by the Gaussian of σ' = √(σ² − 16) that covers it,
    # or by its exact RDP curve when that is smaller (here, at σ = 5); never below dp-accounting's
    # one-coordinate lattice pair
    ours = PLDAccountant(H).compose(ev.SelfComposed(ev.DiscreteGaussian(sigma=5.0, sensitivity=2), 30))
    lattice = dpa_pld.from_discrete_gaussian_mechanism(5.0, 2, **options).self_compose(30)
    cover = dpa_pld.from_gaussian_mechanism(3.0, sensitivity=2, **options).self_compose(30)
    for delta in (1e-3, 1e-7):
        assert ours.get_epsilon(delta) >= lattice.get_epsilon_for_delta(delta)
        assert ours.get_epsilon(delta) <= cover.get_epsilon_for_delta(delta) + 2 * H


def test_a_discrete_gaussian_in_several_coordinates_is_covered():
    """The one-coordinate lattice pair is not the worst case on ℤ^d: at σ = 2, Δ = 2 the shift (1, 1, 1, 1)
    has a larger δ(ε = 4) than (2, 0, 0, 0).  The accountant's δ covers the worse one."""
    sigma, eps = 2.0, 4.0
    x = np.arange(-60, 61)
    pmf = np.exp(-x * x / (2 * sigma**2))
    pmf /= pmf.sum()

    def loss_pmf(shift):  # privacy loss log P(x)/P(x - shift) of one coordinate under P = N_Z(0)
        return (2 * x * shift - shift * shift) / (2 * sigma**2) * -1.0, pmf

    def delta_of(shifts):
        losses, probs = np.zeros(1), np.ones(1)
        for s in shifts:
            l1, p1 = loss_pmf(s)
            losses = (losses[:, None] + l1[None, :]).ravel()
            probs = (probs[:, None] * p1[None, :]).ravel()
            keep = probs > 1e-30
            losses, probs = losses[keep], probs[keep]
        return float(np.sum(probs * np.maximum(0.0, 1.0 - np.exp(eps - losses))))

    one, spread = delta_of([2]), delta_of([1, 1, 1, 1])
    assert spread > 1.2 * one  # the lattice pair of one coordinate would undercount
    reported = PLDAccountant(H).compose(ev.DiscreteGaussian(sigma=sigma, sensitivity=2)).get_delta(eps)
    assert reported >= spread


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize(("z", "steps"), [(10.0, 100), (3.0, 10), (1.0, 1), (30.0, 1000)])
def test_gaussian_composition_bounds_bracket_the_closed_form(z, steps):
    """μ-GDP: T Gaussians of multiplier z are exactly one Gaussian of multiplier z/√T."""
    acc = PLDAccountant(H).compose(ev.SelfComposed(ev.Gaussian(sigma=z), steps))
    for eps in (0.1, 0.5, 1.0, 3.0):
        exact = gaussian_delta(z / math.sqrt(steps), eps)
        low, high = acc.get_delta_bounds(eps)
        assert low <= exact * (1 + 1e-9) + 1e-15
        assert high >= exact * (1 - 1e-9)
        assert high <= exact + 1e-3 * max(exact, 1e-6) + 1e-12
    # and in ε: the pessimistic ε meets δ by the exact curve
    for delta in (1e-3, 1e-6):
        assert gaussian_delta(z / math.sqrt(steps), acc.get_epsilon(delta)) <= delta * (1 + 1e-9)


def test_pure_dp_bound_and_without_replacement_amplification():
    # one ε-DP release: the RR pair reaches exactly (ε, 0)
    assert PLDAccountant(H).compose(ev.PureDP(1.3)).get_epsilon(1e-12) == pytest.approx(1.3, abs=H)
    # fixed-size sampling without replacement, replace-one: log(1 + q(e^ε − 1)) (Balle et al. 2018)
    for eps0, q in ((1.0, 0.1), (3.0, 0.01), (0.2, 0.5)):
        wor = PLDAccountant(H).compose(ev.Subsampled(ev.Laplace(scale=1.0 / eps0), q, "without_replacement"))
        assert wor.get_epsilon(1e-12) <= amplify_pure(eps0, q) + H
    # the composition is much tighter than T times the amplified ε
    many = PLDAccountant(H).compose(ev.SelfComposed(ev.Subsampled(ev.Laplace(1.0), 0.05, "without_replacement"), 200))
    assert many.get_epsilon(1e-6) < 0.5 * 200 * amplify_pure(1.0, 0.05)


def test_subsampled_directions_differ_and_the_worst_is_reported():
    acc = PLDAccountant(H).compose(ev.SelfComposed(poisson(ev.Gaussian(0.8), 0.1), 50))
    remove, add = acc.pld("remove"), acc.pld("add")
    eps_remove, eps_add = remove.get_epsilon(1e-5), add.get_epsilon(1e-5)
    assert eps_remove != pytest.approx(eps_add, rel=1e-3)
    assert acc.get_epsilon(1e-5) == pytest.approx(max(eps_remove, eps_add))
    # the add direction's loss is bounded by −log(1 − q): no mass at +∞ in one step
    one = PLDAccountant(H).compose(poisson(ev.Gaussian(0.8), 0.1))
    assert one.pld("add").infinity_mass == 0.0
    assert one.pld("add").losses.max() <= -math.log(1 - 0.1) + H


def test_epsilon_and_delta_are_inverse():
    acc = PLDAccountant(H).compose(ev.SelfComposed(poisson(ev.Gaussian(1.2), 0.03), 300))
    for delta in (1e-3, 1e-5, 1e-9):
        eps = acc.get_epsilon(delta)
        assert acc.get_delta(eps) == pytest.approx(delta, rel=1e-6)
        assert acc.get_delta(eps * 1.01) < delta < acc.get_delta(eps * 0.99)


def test_tail_truncation_is_charged_to_delta():
    coarse = PLDAccountant(H, tail_mass=1e-7).compose(ev.SelfComposed(ev.Gaussian(5.0), 64))
    fine = PLDAccountant(H).compose(ev.SelfComposed(ev.Gaussian(5.0), 64))
    assert coarse.pld().infinity_mass > 0.0
    assert coarse.get_delta(1.0) >= fine.get_delta(1.0)
    assert coarse.get_delta(1.0) >= gaussian_delta(5.0 / 8.0, 1.0)


def test_self_composition_equals_repeated_composition():
    step = poisson(ev.Laplace(3.0), 0.2)
    once = PLDAccountant(H).compose(ev.SelfComposed(step, 12))
    repeated = PLDAccountant(H)
    for _ in range(12):
        repeated.compose(step)
    assert once.get_epsilon(1e-6) == pytest.approx(repeated.get_epsilon(1e-6), rel=1e-12)


# --------------------------------------------------------------------------- fallback and record


def test_above_threshold_falls_back_to_rdp_visibly():
    svt = ev.AboveThreshold.gaussian(2.0, 4.0)
    step = poisson(ev.Gaussian(1.0), 0.01)
    acc = PLDAccountant(H).compose(ev.SelfComposed(step, 500)).compose(ev.SelfComposed(svt, 5))
    kinds = {row["accountant"] for row in acc.parts()}
    assert kinds == {"pld", "rdp"}
    assert "RDP" in acc.describe() and "AboveThreshold" in acc.describe()
    both = RDPAccountant().compose(ev.SelfComposed(step, 500)).compose(ev.SelfComposed(svt, 5))
    only_pld = PLDAccountant(H).compose(ev.SelfComposed(step, 500))
    eps = acc.get_epsilon(1e-5)
    assert only_pld.get_epsilon(1e-5) < eps <= both.get_epsilon(1e-5)
    assert acc.get_delta(eps) <= 1e-5 * (1 + 1e-6)


def test_never_looser_than_rdp():
    # a single pure-DP-ish release at huge δ, where RDP's conversion can win
    for event in (ev.SelfComposed(ev.Laplace(0.5), 3), ev.SelfComposed(poisson(ev.Gaussian(0.7), 0.5), 40)):
        for delta in (1e-2, 1e-6):
            rdp_eps = RDPAccountant().compose(event).get_epsilon(delta)
            assert PLDAccountant(H).compose(event).get_epsilon(delta) <= rdp_eps


def test_interface_and_validation():
    acc = PLDAccountant(H)
    assert acc.get_epsilon(1e-5) == 0.0 and acc.get_delta(1.0) == 0.0
    assert acc.supports(ev.Gaussian(1.0)) and acc.supports(ev.AboveThreshold.laplace(1.0, 1.0))
    assert not acc.supports("gaussian")
    copy = acc.compose(ev.Gaussian(2.0)).copy()
    copy.compose(ev.Gaussian(2.0))
    assert copy.get_epsilon(1e-5) > acc.get_epsilon(1e-5)
    with pytest.raises(ValueError, match="discretization"):
        PLDAccountant(discretization=0.0)
    with pytest.raises(ValueError, match="delta"):
        acc.get_epsilon(0.0)
    with pytest.raises(TypeError, match="event"):
        acc.compose("gaussian")
    with pytest.raises(ValueError, match="count"):
        acc.compose(ev.Gaussian(1.0), count=0)


def test_wide_discrete_gaussian_is_accounted_as_the_continuous_pld():
    # the secure Gaussian's events (σ, Δ ~ 2^20) are accounted by PLD, and agree with the continuous mechanism
    wide = ev.DiscreteGaussian(sigma=2.0**21 + 3, sensitivity=2**20 + 7)
    acc = PLDAccountant(H).compose(ev.SelfComposed(wide, 10))
    assert [row["accountant"] for row in acc.parts()] == ["pld"]
    continuous = PLDAccountant(H).compose(ev.SelfComposed(ev.Gaussian(wide.noise_multiplier), 10))
    assert acc.get_epsilon(1e-5) == pytest.approx(continuous.get_epsilon(1e-5), rel=1e-4)


def test_epsilon_after_is_the_next_epsilon():
    acc = PLDAccountant(H)
    step = poisson(ev.Gaussian(1.1), 0.05)
    for _ in range(5):
        after = acc.epsilon_after(step, 1e-5)
        acc.compose(step)
        assert acc.get_epsilon(1e-5) == after
    assert after == PLDAccountant(H).compose(ev.SelfComposed(step, 5)).get_epsilon(1e-5)


def test_one_fft_power_agrees_with_repeated_squaring():
    from dpopt.privacy import pld

    base = pld.DiscretePLD.from_pair(pld._Gaussian(1 / 1.2), 0.05, "remove", H, 1e-15, True)
    squared = base.self_compose(777)
    power = pld._self_compose_fft(base, 777, 1e-15)
    assert power.infinity_mass > 0.0  # the window's upper-tail bound is charged to δ
    # squaring truncates at every level and the truncated mass doubles with each later squaring
    # (~2^k·1e-15 goes to δ); the one power truncates once, so it is a little tighter
    for delta in (1e-3, 1e-6, 1e-9):
        assert power.get_epsilon(delta) <= squared.get_epsilon(delta) * (1 + 1e-9)
        assert power.get_epsilon(delta) == pytest.approx(squared.get_epsilon(delta), rel=1e-4)


def test_a_pld_ledger_spends_a_pld_calibrated_budget_and_refuses_beyond_it():
    from dpopt.privacy import BudgetExceededError, Ledger
    from dpopt.privacy.calibration import calibrate_noise

    sigma = calibrate_noise(1.0, 1e-5, steps=60, rate=0.05, accountant="pld", discretization=H).scale
    ledger = Ledger(1.0, 1e-5, accountant=PLDAccountant(H))
    step = poisson(ev.Gaussian(sigma), 0.05)
    for _ in range(60):
        ledger.charge(step)
    assert 0.99 < ledger.spent().epsilon <= 1.0
    with pytest.raises(BudgetExceededError):
        ledger.charge(step)
    # by name, and the log replays to the same guarantee
    named = Ledger(1.0, 1e-5, accountant="pld")
    named.charge(ev.SelfComposed(step, 10))
    assert named.to_dict()["accountant"] == "pld"
    assert Ledger.from_json(named.to_json()).spent().epsilon == pytest.approx(named.spent().epsilon, rel=1e-12)


def test_a_pld_ledger_read_back_from_json_accounts_on_its_own_grid():
    """A ledger's JSON keeps its PLD accountant's grid and tail mass, so the rebuilt ledger re-charges
    its log to the same guarantee (a grid-1e-3 ledger, what families spend under, had come back at
    the default 1e-4: spent 0.99993 instead of 0.9999999999993 for the run of the test above)."""
    from dpopt.privacy import Ledger

    ledger = Ledger(3.0, 1e-5, accountant=PLDAccountant(H, tail_mass=1e-12))
    ledger.charge(ev.SelfComposed(poisson(ev.Gaussian(1.0), 0.01), 1000))
    again = Ledger.from_json(ledger.to_json())
    assert (again.accountant.discretization, again.accountant.tail_mass) == (H, 1e-12)
    assert again.spent() == ledger.spent() == ledger.replay()
    assert Ledger.from_json(Ledger(1.0, 1e-5, accountant="pld").to_json()).accountant.discretization == 1e-4


def test_a_pld_ledger_certifies_states_and_stops_exactly_where_a_fresh_accountant_says():
    from dpopt.privacy import Ledger

    grad = poisson(ev.Gaussian(2.0), 0.02)
    query = poisson(ev.Laplace(30.0), 0.02)
    both = ev.Composed((grad, query))
    ledger = Ledger(1.0, 1e-5, accountant=PLDAccountant(H))
    charged = 0
    while ledger.can_afford(both):
        ledger.charge(grad)
        ledger.charge(query)
        charged += 1
    # a few hundred charges, few PLD compositions (certified states cover the rest)
    assert charged > 50
    assert len(ledger._accountant._known["eps"]) < 40
    spent = ledger.spent().epsilon
    assert spent <= 1.0
    fresh = PLDAccountant(H).compose(ev.SelfComposed(both, charged))
    assert fresh.get_epsilon(1e-5) == pytest.approx(spent, abs=1e-9)
    # the refusal is exact: one more iteration does not fit by a fresh accountant either
    assert fresh.compose(both).get_epsilon(1e-5) > 1.0


def test_a_pld_ledger_reports_the_smaller_of_pld_and_rdp():
    from dpopt.privacy import RDPAccountant

    step = ev.Gaussian(3.0)
    acc = PLDAccountant(H).compose(step)
    rdp = RDPAccountant().compose(step).get_epsilon(1e-5)
    assert acc.get_epsilon(1e-5) <= rdp
    assert acc.fits(step, rdp * 2 + 1.0, 1e-5)  # decided by RDP without a PLD composition


def test_describe_says_when_the_grid_was_too_wide_and_rdp_answered():
    """At h = 1e-5 three Poisson-subsampled Gaussians need 1.27e6 grid points: get_epsilon reported RDP's ε over
    the whole log (as MAX_GRID_POINTS documents) while describe() said '3 event(s) by PLD'."""
    step = ev.Subsampled(ev.Gaussian(0.9), 0.2)
    acc, rdp = PLDAccountant(1e-5), RDPAccountant()
    for _ in range(3):
        acc.compose(step)
        rdp.compose(step)
    assert acc.get_epsilon(1e-5) == rdp.get_epsilon(1e-5)
    assert "grid points" in acc.describe() and "RDP accountant over the whole log (3 event(s))" in acc.describe()
    assert "by PLD" in PLDAccountant().compose(step).describe()
