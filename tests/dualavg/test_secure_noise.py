"""secure_noise=True in dualavg: messages on the grid, the discrete event charged, ε within target, convergence."""

import math

import numpy as np
import pytest

from dpopt import dualavg
from dpopt.dualavg import accounting
from dpopt.privacy import events as ev
from dpopt.privacy import mechanisms

from .conftest import make_shards

KW = dict(epsilon=1.0, iota=0.5, edges=2, rounds=60, seed=5, strength=0.01, gamma=1.0)


def _inner(event):
    while isinstance(event, ev.SelfComposed | ev.Activated | ev.Subsampled):
        event = event.event
    return event


@pytest.fixture
def released(monkeypatch):
    """Every (grid, message block) a secure PrepaidGaussianRounds.release_rows returns during a run."""
    out = []
    original = mechanisms.PrepaidGaussianRounds.release_rows

    def spy(sessions, counts, value, round_index):
        messages = original(sessions, counts, value, round_index)
        out.append(({s.grid for s in sessions}, messages.copy()))
        return messages

    monkeypatch.setattr(mechanisms.PrepaidGaussianRounds, "release_rows", staticmethod(spy))
    return out


@pytest.mark.parametrize("visible", [True, False])
def test_secure_messages_lie_on_the_grid_and_the_discrete_event_is_charged(released, visible):
    shards = make_shards(n=4, q=30, d=6, seed=2)
    flt = dualavg.minimize(shards, activation_visible=visible, **KW)
    assert all(grids == {None} for grids, _ in released)
    released.clear()
    res = dualavg.minimize(shards, secure_noise=True, activation_visible=visible, **KW)
    assert released and res.info["secure_noise"] and not flt.info["secure_noise"]
    for grids, messages in released:
        (g,) = grids
        assert g == 2.0 ** math.floor(math.log2(g)) and g < 1e-6
        assert np.array_equal(messages / g, np.rint(messages / g)) and np.abs(messages / g).max() > 1e3
    assert res.epsilon <= KW["epsilon"]
    for events in (res.info["node_ledgers"][0].events, [ev.from_dict(e) for e in res.privacy_record()["events"]]):
        assert events and all(isinstance(_inner(e), ev.DiscreteGaussian) for e in events)
    discrete = _inner(res.info["node_ledgers"][0].events[0])
    assert discrete.sensitivity == math.ceil(2.0 / g + math.sqrt(6))
    # the same noise multiplier as the float run's, within the accountants' difference for the two events
    assert discrete.noise_multiplier == pytest.approx(flt.info["sigma"] / 2.0, rel=1e-8)
    if visible:  # RDP: the discrete Gaussian's curve is the Gaussian's, amplified the same way
        assert res.info["sigma"] == flt.info["sigma"]


def test_secure_run_converges_like_the_float_run():
    shards = make_shards(n=6, q=100, d=5, seed=3)
    kw = dict(iota=0.5, rounds=300, strength=0.2, edges=2, repetitions=4, seed=1)
    exact = dualavg.minimize(shards, **kw).fun.mean()
    flt = dualavg.minimize(shards, epsilon=8.0, **kw).fun.mean()
    sec = dualavg.minimize(shards, epsilon=8.0, secure_noise=True, **kw).fun.mean()
    assert abs(sec - flt) < 0.03 and sec - exact < 0.05


def test_secure_round_event_is_the_wrapped_discrete_event():
    kw = dict(lipschitz=1.0, local_samples=20, activation_rate=0.25, batch=2)
    for visible in (True, False):
        flt = accounting.round_event(3.0, activation_visible=visible, **kw)
        sec = accounting.round_event(3.0, activation_visible=visible, secure_size=7, **kw)
        assert sec == mechanisms.secure_event(flt, 7)[0]
        assert type(sec) is type(flt) and sec.rate == flt.rate
        assert _inner(sec) == mechanisms.secure_event(_inner(flt), 7)[0]


def test_secure_noise_refusals():
    shards = make_shards(n=3, q=10, d=3)
    with pytest.raises(ValueError, match="secure_noise=True needs a private run"):
        dualavg.minimize(shards, rounds=5, secure_noise=True)
    with pytest.raises(TypeError, match="secure_noise must be True or False"):
        dualavg.minimize(shards, epsilon=1.0, rounds=5, secure_noise=1)


def test_a_secure_noise_beyond_the_exact_samplers_range_is_refused_before_the_ledger_is_charged():
    """sigma = 1e12 is 1.05e18 grid steps, beyond the exact sampler's 2^46: the run was refused with the caller's
    ledger already charged for 5 rounds (the record holder's charge came before the nodes' blocks checked it)."""
    from dpopt.privacy import Ledger

    ledger = Ledger(1e9, 1e-5, "rdp", relation="replace_one")
    with pytest.raises(ValueError, match="the noise is too large for an exact secure release"):
        dualavg.minimize(make_shards(n=3, q=10, d=2), sigma=1e12, iota=1.0, rounds=5, seed=0, secure_noise=True,
                         ledger=ledger)
    assert ledger.events == []
