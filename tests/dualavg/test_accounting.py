import math

import numpy as np
import pytest

from dpopt.dualavg import accounting
from dpopt.privacy import Ledger, RDPAccountant, calibration, rdp
from dpopt.privacy import events as ev
from dpopt.privacy.mechanisms import PrepaidGaussianRounds

cal = type("cal", (), {"liu2024_noise_sigma": staticmethod(accounting.theorem1_sigma)})


def test_without_replacement_gaussian_matches_autodp():
    from autodp import mechanism_zoo, transformer_zoo

    orders = [2, 3, 5, 8, 16, 32, 64]
    for sigma, rate in [(3.0, 0.01), (1.0, 0.1), (0.8, 0.5)]:
        ours = rdp.rdp_curve(ev.Subsampled(ev.Gaussian(sigma, 1.0), rate, "without_replacement"), orders)
        g = mechanism_zoo.GaussianMechanism(sigma=sigma)
        g.neighboring = "replace_one"
        ref = transformer_zoo.AmplificationBySampling(PoissonSampling=False)(g, rate, improved_bound_flag=False)
        assert np.allclose(ours, [min(ref.RenyiDP(a), math.inf) for a in orders], rtol=1e-9)


def test_activated_rdp_is_the_labelled_mixture():
    orders = np.array([1.5, 2.0, 4.0, 10.0])
    inner = ev.Gaussian(2.0, 1.0)
    got = rdp.rdp_curve(ev.Activated(inner, 0.2), orders)
    r = orders / (2 * 4.0)
    assert np.allclose(got, np.log(0.8 + 0.2 * np.exp((orders - 1) * r)) / (orders - 1), rtol=1e-12)
    assert np.all(got <= r)
    assert ev.from_json(ev.Activated(inner, 0.2).to_json()) == ev.Activated(inner, 0.2)


def test_prepaid_rounds_charge_first_and_release_once_per_round():
    event = accounting.round_event(2.0, lipschitz=1.0, local_samples=10, activation_rate=0.5)
    led = Ledger(5.0, 1e-5, "rdp", relation="replace_one")
    block = PrepaidGaussianRounds(event, rounds=3, first_round=1, ledger=led, rng=np.random.default_rng(0))
    assert led.events == [ev.SelfComposed(event, 3)]
    block.release(np.zeros(4), 1)
    with pytest.raises(RuntimeError):
        block.release(np.zeros(4), 1)
    block.release(np.zeros(4), 3)
    with pytest.raises(RuntimeError):
        block.release(np.zeros(4), 4)
    tiny = Ledger(1e-3, 1e-5, "rdp", relation="replace_one")
    with pytest.raises(Exception, match="budget"):
        PrepaidGaussianRounds(event, rounds=3, first_round=1, ledger=tiny, rng=np.random.default_rng(0))
    assert tiny.events == []


def test_calibrated_sigma_meets_target_and_is_tight():
    kw = dict(lipschitz=1.0, local_samples=200, activation_rate=0.1)
    s = accounting.accountant_sigma(0.5, 1e-5, steps=2000, **kw)
    assert accounting.epsilon_of(s, 1e-5, steps=2000, **kw) <= 0.5 * (1 + 1e-9)
    assert accounting.epsilon_of(s * 0.99, 1e-5, steps=2000, **kw) > 0.5
    with pytest.raises(TypeError):
        calibration.calibrate_sigma_for(3.0, 1.0, 1e-5)
    e = accounting.run_event(s, steps=2000, **kw)
    assert RDPAccountant().compose(e).get_epsilon(1e-5) == pytest.approx(0.5, rel=1e-6)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: cal.liu2024_noise_sigma(1.5, 0.01, lipschitz=1.0, local_samples=1, steps=10), "epsilon"),
        (lambda: cal.liu2024_noise_sigma(0.5, 0.0, lipschitz=1.0, local_samples=1, steps=10), "delta0"),
        (lambda: cal.liu2024_noise_sigma(0.5, 0.1, lipschitz=0.0, local_samples=1, steps=10), "lipschitz"),
        (lambda: cal.liu2024_noise_sigma(0.5, 0.1, lipschitz=1.0, local_samples=0, steps=10), "local_samples"),
        (
            lambda: cal.liu2024_noise_sigma(0.5, 0.1, lipschitz=1.0, local_samples=1, steps=10, activation=0.0),
            "activation",
        ),
        (lambda: accounting.round_event(1.0, lipschitz=1.0, local_samples=3, activation_rate=0.5, batch=4), "batch"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_liu2024_theorem1_noise():
    kw = dict(lipschitz=2.0, local_samples=50, steps=40_000, activation=0.5)
    sigma = cal.liu2024_noise_sigma(0.8, 0.01, **kw)
    expected = math.sqrt(32 * 0.5**2 * 2.0**2 * 40_000 * math.log(2 / 0.01) / (50**2 * 0.8**2))
    assert sigma == pytest.approx(expected, rel=1e-14)
    doubled = dict(kw, steps=160_000)
    assert cal.liu2024_noise_sigma(0.8, 0.01, **doubled) == pytest.approx(2 * sigma, rel=1e-14)
    halved = dict(kw, activation=0.25)
    assert cal.liu2024_noise_sigma(0.8, 0.01, **halved) == pytest.approx(sigma / 2, rel=1e-14)
    assert cal.liu2024_noise_sigma(0.4, 0.01, **kw) == pytest.approx(2 * sigma, rel=1e-14)


def test_liu2024_step_condition():
    # T >= 5 q^2 eps^2 / (4 iota^2) = 5 * 100^2 * 1 / (4 * 0.25) = 50000
    kw = dict(lipschitz=1.0, local_samples=100, activation=0.5)
    with pytest.raises(ValueError, match="steps"):
        cal.liu2024_noise_sigma(1.0, 0.01, steps=49_999, **kw)
    assert cal.liu2024_noise_sigma(1.0, 0.01, steps=50_000, **kw) > 0
    assert cal.liu2024_noise_sigma(1.0, 0.01, steps=10, check_steps=False, **kw) > 0


def test_release_rows_is_each_holders_own_release():
    events = [accounting.round_event(s, lipschitz=1.0, local_samples=10, activation_rate=0.5) for s in (2.0, 2.0, 3.0)]

    def blocks():
        return [
            PrepaidGaussianRounds(
                e, rounds=2, first_round=1, ledger=Ledger(50.0, 1e-5, "rdp", relation="replace_one"),
                rng=np.random.default_rng(seed),
            )
            for seed, e in enumerate(events)
        ]

    value = np.arange(24.0).reshape(6, 4)
    one, many = blocks(), blocks()
    parts = [value[:1], value[1:3], value[3:]]
    expected = np.concatenate([block.release(part, 1) for block, part in zip(one, parts, strict=True)])
    got = PrepaidGaussianRounds.release_rows(many, [1, 2, 3], value, 1)
    assert np.array_equal(got, expected)
    with pytest.raises(RuntimeError, match="unreleased round"):
        PrepaidGaussianRounds.release_rows(many, [1, 2, 3], value, 1)  # round 1 was released
    with pytest.raises(ValueError, match="counts"):
        PrepaidGaussianRounds.release_rows(many, [1, 2, 2], value, 2)
