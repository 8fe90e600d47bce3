"""The tensor Gaussian mechanism: charges first, draws on the tensor's device from the given generator."""

import pytest
import torch

from dpopt.privacy import BudgetExceededError, Ledger, PoissonSampler
from dpopt.privacy import events as ev
from dpopt.privacy.torch_noise import gaussian_tensor


def test_noise_scale_and_charge():
    ledger = Ledger(1e6, 1e-5, "rdp")
    gen = torch.Generator().manual_seed(0)
    value = torch.zeros(200_000, dtype=torch.float64)
    out = gaussian_tensor(value, sensitivity=2.0, sigma=3.0, ledger=ledger, generator=gen,
                          sampler=PoissonSampler(0.01))
    # std of 2e5 draws is within 1% of 3 with probability > 1 - 1e-9 (relative s.e. 0.16%)
    assert float(out.std()) == pytest.approx(3.0, rel=0.01)
    assert abs(float(out.mean())) < 6 * 3.0 / 200_000**0.5
    assert ledger.events == [ev.Subsampled(ev.Gaussian(3.0, 2.0), 0.01, "poisson")]


def test_refused_charge_draws_nothing():
    ledger = Ledger(0.01, 1e-5, "rdp")
    gen = torch.Generator().manual_seed(0)
    state = gen.get_state()
    with pytest.raises(BudgetExceededError):
        gaussian_tensor(torch.zeros(3), sensitivity=1.0, sigma=0.1, ledger=ledger, generator=gen)
    assert torch.equal(gen.get_state(), state) and ledger.events == []


def test_bad_input():
    ledger = Ledger(1.0, 1e-5, "rdp")
    gen = torch.Generator()
    with pytest.raises(TypeError, match="generator"):
        gaussian_tensor(torch.zeros(3), sensitivity=1.0, sigma=1.0, ledger=ledger, generator=None)
    with pytest.raises(ValueError, match="finite"):
        gaussian_tensor(torch.tensor([float("nan")]), sensitivity=1.0, sigma=1.0, ledger=ledger, generator=gen)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_tensor(torch.zeros(3), sensitivity=1.0, sigma=0.0, ledger=ledger, generator=gen)


def test_secure_noise_releases_grid_points_and_charges_the_discrete_event():
    from dpopt.privacy import secure
    from dpopt.privacy.mechanisms import secure_event

    ledger = Ledger(1e6, 1e-5, "rdp")
    gen = torch.Generator().manual_seed(0)
    state = gen.get_state()
    n = 4000
    value = torch.full((n,), 0.3, dtype=torch.float64)
    out = gaussian_tensor(value, sensitivity=2.0, sigma=3.0, ledger=ledger, generator=gen,
                          sampler=PoissonSampler(0.01), secure_noise=True)
    assert out.dtype == torch.float64 and out.shape == (n,)
    discrete, grid = secure_event(ev.Gaussian(3.0, 2.0), n)
    assert grid == secure.grid_for(2.0, n**0.5)
    assert torch.all(torch.remainder(out, grid) == 0)  # every released value is exactly a grid point
    assert ledger.events == [ev.Subsampled(discrete, 0.01, "poisson")]
    assert torch.equal(gen.get_state(), state)  # the torch generator is not used
    # σ = 3 (to the grid's rounding); half the noise (std 1.5) is far outside (relative s.e. 1.1 %)
    assert float(out.std()) == pytest.approx(3.0, rel=0.06)
