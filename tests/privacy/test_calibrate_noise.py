"""Tests of calibration through the tightest accountant (:func:`dpopt.privacy.calibration.calibrate_noise`)."""

from __future__ import annotations

import pytest

from dpopt.privacy import events as ev
from dpopt.privacy.calibration import calibrate_gaussian_sigma, calibrate_laplace_scale, calibrate_noise
from dpopt.privacy.pld import PLDAccountant
from dpopt.privacy.rdp import RDPAccountant

H = 1e-2  # a coarse PLD grid: still a certified upper bound, and fast


def sgd(sigma, rate=0.02, steps=200):
    return ev.SelfComposed(ev.Subsampled(ev.Gaussian(sigma), rate), steps)


def test_pld_calibration_is_certified_tight_and_below_rdp():
    pld = calibrate_noise(2.0, 1e-5, steps=200, rate=0.02, discretization=H)  # "best"
    assert pld.accountant == "pld" and pld.epsilon <= 2.0
    assert PLDAccountant(H).compose(sgd(pld.scale)).get_epsilon(1e-5) <= 2.0
    assert PLDAccountant(H).compose(sgd(pld.scale * (1 - 1e-3))).get_epsilon(1e-5) > 2.0
    rdp_sigma = calibrate_gaussian_sigma(2.0, 1e-5, steps=200, rate=0.02)
    assert RDPAccountant().compose(sgd(rdp_sigma)).get_epsilon(1e-5) <= 2.0
    assert pld.scale < 0.97 * rdp_sigma
    assert calibrate_noise(2.0, 1e-5, steps=200, rate=0.02, accountant="rdp").scale == rdp_sigma


def test_laplace_pure_and_approximate():
    pure = calibrate_noise(1.0, noise="laplace", steps=10, rate=0.1, sensitivity=2.0)
    assert pure.accountant == "pure"
    assert pure.scale == calibrate_laplace_scale(1.0, sensitivity=2.0, steps=10, rate=0.1)
    # with a delta to spend, many subsampled Laplace steps need much less noise than pure composition
    approx = calibrate_noise(1.0, 1e-6, noise="laplace", steps=400, rate=0.01, discretization=H)
    assert approx.accountant in ("pld", "rdp")
    assert approx.scale < 0.5 * calibrate_laplace_scale(1.0, sensitivity=1.0, steps=400, rate=0.01)
    step = ev.Subsampled(ev.Laplace(approx.scale), 0.01)
    assert PLDAccountant(H).compose(ev.SelfComposed(step, 400)).get_epsilon(1e-6) <= 1.0 + 1e-12


@pytest.mark.parametrize(("steps", "rate", "epsilon"), [(300, 1.0, 0.1), (10, 0.013, 2.0), (300, 0.5, 2.0)])
def test_a_pure_calibrated_laplace_run_fits_a_ledger_of_its_budget(steps, rate, epsilon):
    """sensitivity/eps0 rounded to nearest could leave each step's cost an ulp over epsilon/steps:
    these runs reported epsilon + 1 ulp and a Ledger(epsilon) refused their last step."""
    from dpopt.privacy import Ledger

    out = calibrate_noise(epsilon, noise="laplace", steps=steps, rate=rate, sensitivity=1.0)
    assert out.accountant == "pure" and out.epsilon <= epsilon
    step = ev.Subsampled(ev.Laplace(out.scale), rate, "without_replacement") if rate < 1.0 else ev.Laplace(out.scale)
    ledger = Ledger(epsilon, relation="replace_one")
    for _ in range(steps):
        ledger.charge(step)
    assert ledger.spent().epsilon <= epsilon


def test_without_replacement_gaussian_uses_pld():
    out = calibrate_noise(1.0, 1e-5, steps=50, rate=0.05, scheme="without_replacement", discretization=H)
    assert out.accountant == "pld"
    event = ev.SelfComposed(ev.Subsampled(ev.Gaussian(out.scale), 0.05, "without_replacement"), 50)
    assert PLDAccountant(H).compose(event).get_epsilon(1e-5) <= 1.0


def test_validation():
    with pytest.raises(ValueError, match="delta"):
        calibrate_noise(1.0, 0.0, noise="gaussian")
    with pytest.raises(ValueError, match="noise"):
        calibrate_noise(1.0, 1e-5, noise="cauchy")
    with pytest.raises(ValueError, match="accountant"):
        calibrate_noise(1.0, 1e-5, accountant="zcdp")
    with pytest.raises(ValueError, match="does not apply"):
        calibrate_noise(1.0, 1e-5, accountant="pure")
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_noise(-1.0, 1e-5)
