"""dpopt.privacy.mcmc: the Metropolis sampler of the continuous exponential mechanism.

(The module lives in the privacy core; its tests sit here beside their only
user, mechanism 3 of han2014.)
"""

import numpy as np
import pytest

from dpopt.privacy import BudgetExceededError, Ledger
from dpopt.privacy import events as ev
from dpopt.privacy.mcmc import metropolis_exponential, split_rhat


def run_gaussian_target(chains=3000, steps=400, seed=0, **kwargs):
    # u(x) = −‖x‖², ε = 2, Δu = 0.5: π ∝ exp(−2‖x‖²), i.e. N(0, I/4) in 2-D.
    return metropolis_exponential(
        lambda X: -np.sum(X**2, axis=-1),
        np.zeros((chains, 2)),
        epsilon=2.0,
        sensitivity=0.5,
        proposal_std=0.5,
        steps=steps,
        ledger=Ledger(2.0),
        rng=np.random.default_rng(seed),
        **kwargs,
    )


def test_unconstrained_target_moments():
    # 3000 independent chains: the sample variance of N(0, 1/4) has sd 0.25·√(2/3000) ≈ 0.0065;
    # ±0.03 is > 4.5 sd, while an ε/Δu temperature off by 2 moves the variance to 1/8 or 1/2.
    run = run_gaussian_target(steps=2000)
    assert run.samples.shape == (3000, 2) and run.acceptance_rate.shape == (3000,)
    np.testing.assert_allclose(run.samples.var(axis=0), 0.25, atol=0.03)
    np.testing.assert_allclose(run.samples.mean(axis=0), 0.0, atol=0.04)
    assert run.rhat < 1.02  # halves of 500 autocorrelated draws: R̂ − 1 is O(τ/n)
    assert run.utility_trace.shape == (1000, 3000)
    assert run.event == ev.Exponential(2.0)


def test_support_is_respected_and_truncates_the_target():
    # On the half-plane x₀ ≥ 0 the first coordinate is half-normal: E x₀ = σ√(2/π), σ = 1/2.
    run = run_gaussian_target(contains=lambda X: X[:, 0] >= 0.0)
    assert np.all(run.samples[:, 0] >= 0.0)
    assert run.samples[:, 0].mean() == pytest.approx(0.5 * np.sqrt(2 / np.pi), abs=0.02)


def test_charges_before_drawing_and_refuses_without_budget():
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    ledger = Ledger(0.5)
    with pytest.raises(BudgetExceededError):
        metropolis_exponential(
            lambda X: -np.sum(X**2, axis=-1),
            np.zeros(2),
            epsilon=1.0,
            sensitivity=1.0,
            proposal_std=0.1,
            steps=10,
            ledger=ledger,
            rng=rng,
        )
    assert ledger.events == [] and rng.bit_generator.state == state


def test_single_chain_shapes():
    run = metropolis_exponential(
        lambda X: -np.abs(X[:, 0]),
        np.zeros(1),
        epsilon=1.0,
        sensitivity=1.0,
        proposal_std=0.3,
        steps=50,
        ledger=Ledger(1.0),
        rng=np.random.default_rng(0),
    )
    assert run.samples.shape == (1,) and np.ndim(run.acceptance_rate) == 0
    assert np.isfinite(run.rhat)


def test_split_rhat_detects_disagreeing_chains():
    rng = np.random.default_rng(1)
    mixed = rng.normal(size=(500, 8))
    assert split_rhat(mixed) == pytest.approx(1.0, abs=0.01)
    stuck = mixed + np.arange(8)  # chains centred at different values
    assert split_rhat(stuck) > 1.5
    drifting = mixed + np.linspace(0, 5, 500)[:, None]  # within-chain trend: split halves disagree
    assert split_rhat(drifting) > 1.2
    assert split_rhat(np.ones((10, 3))) == 1.0
    with pytest.raises(ValueError, match="at least 4"):
        split_rhat(np.zeros((3, 2)))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (
            {"x0": np.full(2, 3.0), "contains": lambda X: np.all(np.abs(X) <= 1, axis=-1)},
            ValueError,
            "x0",
        ),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"proposal_std": -1.0}, ValueError, "proposal_std"),
        ({"steps": 3}, ValueError, "steps"),
        ({"rng": 0}, TypeError, "Generator"),
        ({"ledger": None}, TypeError, "Ledger"),
        ({"utility_fn": lambda X: np.zeros(1)}, ValueError, "utility_fn"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    args = dict(
        utility_fn=lambda X: -np.sum(X**2, axis=-1),
        x0=np.zeros((3, 2)),
        epsilon=1.0,
        sensitivity=1.0,
        proposal_std=0.1,
        steps=10,
        ledger=Ledger(1.0),
        rng=np.random.default_rng(0),
    )
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        metropolis_exponential(args.pop("utility_fn"), args.pop("x0"), **args)
