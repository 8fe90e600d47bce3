"""PrepaidGaussianRounds with secure_noise=True: the discrete round event prepaid, releases on the grid."""

import math

import numpy as np
import pytest

from dpopt.privacy import BudgetExceededError, Ledger
from dpopt.privacy import events as ev
from dpopt.privacy.mechanisms import PrepaidGaussianRounds, secure_event

ROUND = ev.Activated(ev.Subsampled(ev.Gaussian(3.0, 2.0), 0.1, ev.WITHOUT_REPLACEMENT), 0.5)


def _block(ledger=None, secure=True, size=10, rounds=3):
    ledger = ledger or Ledger(50.0, 1e-5, "rdp", relation="replace_one")
    return PrepaidGaussianRounds(ROUND, rounds=rounds, first_round=1, ledger=ledger, rng=np.random.default_rng(0),
                                 secure_noise=secure, size=size)  # fmt: skip


def test_secure_event_keeps_the_wrapping_around_the_discrete_event():
    discrete, grid = secure_event(ROUND, 10)
    inner, inner_grid = secure_event(ROUND.event.event, 10)
    assert discrete == ev.Activated(ev.Subsampled(inner, 0.1, ev.WITHOUT_REPLACEMENT), 0.5) and grid == inner_grid
    assert isinstance(inner, ev.DiscreteGaussian) and inner.sensitivity == math.ceil(2.0 / grid + math.sqrt(10))
    assert inner.noise_multiplier == pytest.approx(1.5, rel=1e-15)


def test_secure_block_prepays_the_discrete_rounds_and_releases_on_the_grid():
    led = Ledger(50.0, 1e-5, "rdp", relation="replace_one")
    block = _block(led)
    discrete, grid = secure_event(ROUND, 10)
    assert led.events == [ev.SelfComposed(discrete, 3)] and block.grid == grid
    value = np.linspace(-1.0, 1.0, 10)
    out = block.release(value, 1)
    assert out.shape == (10,) and np.array_equal(out / grid, np.rint(out / grid))
    with pytest.raises(RuntimeError):
        block.release(value, 1)
    rows = PrepaidGaussianRounds.release_rows([block], [400], np.tile(value, (400, 1)), 2)
    assert np.array_equal(rows / grid, np.rint(rows / grid))
    noise = rows - value
    assert abs(noise.mean()) < 0.1 * 3.0 and noise.std() == pytest.approx(3.0, rel=0.05)  # σ = 3 in value units
    tiny = Ledger(1e-3, 1e-5, "rdp", relation="replace_one")
    with pytest.raises(BudgetExceededError):
        _block(tiny)
    assert tiny.events == []


def test_secure_blocks_of_different_noise_release_each_their_own():
    wide = ev.Activated(ev.Subsampled(ev.Gaussian(30.0, 2.0), 0.1, ev.WITHOUT_REPLACEMENT), 0.5)
    ledger = Ledger(50.0, 1e-5, "rdp", relation="replace_one")
    blocks = [_block(), PrepaidGaussianRounds(wide, rounds=3, first_round=1, ledger=ledger,
                                              rng=np.random.default_rng(0), secure_noise=True, size=10)]  # fmt: skip
    rows = PrepaidGaussianRounds.release_rows(blocks, [300, 300], np.zeros((600, 10)), 1)
    assert rows[:300].std() == pytest.approx(3.0, rel=0.05) and rows[300:].std() == pytest.approx(30.0, rel=0.05)
    assert all(b._last == 1 for b in blocks)


def test_secure_block_refusals():
    with pytest.raises(ValueError, match="needs size"):
        _block(size=None)
    block = _block()
    with pytest.raises(ValueError, match="size=10"):
        block.release(np.zeros(9), 1)
    with pytest.raises(ValueError, match="all secure_noise or all not"):
        PrepaidGaussianRounds.release_rows([_block(), _block(secure=False)], [1, 1], np.zeros((2, 10)), 1)
    with pytest.raises(TypeError, match="wrap a Gaussian"):
        PrepaidGaussianRounds(ev.Activated(ev.Laplace(1.0), 0.5), rounds=1, first_round=1,
                              ledger=Ledger(5.0, 1e-5, "rdp"), rng=np.random.default_rng(0), secure_noise=True, size=2)


def test_secure_prepaid_block_refuses_noise_beyond_the_exact_range_before_charging():
    ledger = Ledger(1e6, 0.5, "rdp")
    huge = ev.Gaussian(sigma=1e12, sensitivity=1.0)  # ~1e12·2^20·√d grid steps: past 2^46
    with pytest.raises(ValueError, match="too large for an exact secure release"):
        PrepaidGaussianRounds(huge, rounds=2, first_round=0, ledger=ledger, rng=np.random.default_rng(0),
                              secure_noise=True, size=4)
    assert ledger.events == []
