"""Neighbouring-dataset checks of Algorithm 1 (privacy review): what one node puts on the wire, and its failures."""

import warnings

import numpy as np
import pytest

from dpopt import dualavg
from dpopt.dualavg.algorithm import _stream
from dpopt.dualavg.audit import TapComm

from .conftest import make_shards


class Wire(TapComm):
    """Node 0 of 2: records (copies of) everything it hands to the communicator, i.e. what other ranks see."""

    def __init__(self):
        super().__init__(2)
        self.wire: list = []

    def exchange(self, sends, recvs):
        self.sent.extend(np.array(a) for _, _, a in sends)  # copies: the rows are mixed in place afterwards
        self.wire.extend(("send", np.array(a)) for _, _, a in sends)
        return {key: np.zeros(shape) for _, key, shape in recvs}

    def broadcast(self, obj):
        self.wire.append(("broadcast", obj))
        return obj

    def allsum(self, value):
        self.wire.append(("allsum", np.array(value)))
        return value

    def allgather(self, local):
        self.wire.append(("allgather", np.array(local)))
        return super().allgather(local)


def test_what_a_rank_broadcasts_does_not_give_away_a_nodes_noise():
    """Another rank hears the broadcast entropy: it must not regenerate node 0's noise and subtract it.

    n = 2, q = 1, ι = 1, one round, d = 1: node 0's message is ĝ + σ ν with ĝ = −1.
    """
    wire = Wire()
    res = dualavg.minimize(
        lambda i: (np.ones((1, 1)), np.ones(1)), sizes=[1, 1], epsilon=1.0, iota=1.0, rounds=1, repetitions=20,
        comm=wire,
    )  # fmt: skip
    message = np.stack(wire.sent)[:, 0]
    entropies = [obj for kind, obj in wire.wire if kind == "broadcast"]
    assert len(entropies) == 1 and len(message) == 20
    nu = _stream(entropies[0], 2, 0).standard_normal(20)  # what any other rank (or an eavesdropper) can compute
    recovered = message - res.info["sigma"] * nu
    assert not np.allclose(recovered, -1.0, atol=1e-6)  # the exact subgradient must stay hidden
    assert np.std(message) > 0.5 * res.info["sigma"]  # the message does carry its noise


def test_a_seeded_run_is_still_reproducible():
    shards = make_shards(n=3, q=8, d=2)
    kw = dict(epsilon=1.0, iota=1.0, rounds=5, seed=4)
    assert np.array_equal(dualavg.minimize(shards, **kw).x, dualavg.minimize(shards, **kw).x)
    unseeded = [dualavg.minimize(shards, **dict(kw, seed=None)).x for _ in range(2)]
    assert not np.array_equal(*unseeded)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_one_huge_finite_record_neither_poisons_the_output_nor_warns(loss):
    """Replace one record by a finite one of norm 1e200: the run must release finite values, silently, as on D."""
    D = make_shards(n=3, q=10, d=3)
    X, y = D[0]
    X2 = X.copy()
    X2[0] = [1e200, 0.0, 0.0]
    D2 = [(X2, y), *D[1:]]
    for data in (D, D2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = dualavg.minimize(data, epsilon=1.0, iota=1.0, rounds=50, seed=1, loss=loss, report_objective=False)
        assert np.all(np.isfinite(res.x)) and np.all(np.isfinite(res.info["x_nodes"]))


def test_a_rank_sends_only_released_values_unless_the_objective_is_asked_for():
    """D, D' differ in node 0's record x = 1 vs x = 2 (y = +1): both clip to the same subgradient −L, so with
    the same seed every message is identical; then nothing else node 0 hands to other ranks may differ (the
    exact objective F(x̄) did, through an allreduce every rank sees)."""
    wires = []
    for x in (1.0, 2.0):
        wire = Wire()
        res = dualavg.minimize(
            lambda i, x=x: (np.full((1, 1), x), np.ones(1)), sizes=[1, 1], sigma=1.0, iota=1.0, rounds=3, seed=3,
            gamma=1e6, comm=wire,
        )  # fmt: skip
        assert np.isnan(res.fun)
        wires.append(wire.wire)
    assert [k for k, _ in wires[0]] == [k for k, _ in wires[1]]
    assert any(k == "send" for k, _ in wires[0])
    for (_, a), (_, b) in zip(*wires, strict=True):
        assert np.array_equal(a, b)
    asked = dualavg.minimize(
        lambda i: (np.ones((1, 1)), np.ones(1)), sizes=[1, 1], sigma=1.0, iota=1.0, rounds=3, seed=3, gamma=1e6,
        comm=Wire(), report_objective=True,
    )  # fmt: skip
    assert np.isfinite(asked.fun)


def test_the_declared_shard_sizes_are_enforced():
    shards = make_shards(n=2, q=6, d=2)
    with pytest.raises(ValueError, match=r"node 1: its shard does not have the declared sizes\[1\] = 9 rows"):
        dualavg.minimize(lambda i: shards[i], sizes=[6, 9], epsilon=1.0, iota=1.0, rounds=20, seed=0)


def _interrupted_after_releasing(shards, tmp_path, released=True, **kw):
    """A run that released rounds 3..4 (or, ``released=False``, died before them) but not their checkpoint."""
    from dpopt.dualavg import api

    original = api.run_block

    def crash_after(cfg, comm, local_shards, state, stop, round_events):
        if stop > 2 and not released:
            raise KeyboardInterrupt
        state = original(cfg, comm, local_shards, state, stop, round_events)
        if stop > 2:
            raise KeyboardInterrupt
        return state

    api.run_block = crash_after
    try:
        with pytest.raises(KeyboardInterrupt):
            dualavg.minimize(shards, rounds=4, checkpoint_dir=str(tmp_path), checkpoint_every=2, **kw)
    finally:
        api.run_block = original


def _charged_rounds(ledger):
    return sum(getattr(e, "count", 1) for e in ledger.events)


def test_resume_replays_released_rounds_only_with_the_checkpoints_noise_level(tmp_path):
    """Rounds 3..4 were released with σ = 1; replaying their noise draws at σ = 2 would give ĝ = 2ζ₁ − ζ₂ exactly."""
    shards = make_shards(n=3, q=20, d=2)
    kw = dict(iota=1.0, seed=5)
    _interrupted_after_releasing(shards, tmp_path, sigma=1.0, **kw)
    with pytest.raises(ValueError, match=r"replays rounds 3\.\.4,.*\(sigma differ\)"):
        dualavg.minimize(shards, sigma=2.0, rounds=4, checkpoint_dir=str(tmp_path), resume=True, **kw)
    resumed = dualavg.minimize(shards, sigma=1.0, rounds=4, checkpoint_dir=str(tmp_path), resume=True, **kw)
    assert np.array_equal(resumed.x, dualavg.minimize(shards, sigma=1.0, rounds=4, **kw).x)  # a replay, nothing new
    assert _charged_rounds(resumed.info["node_ledgers"][0]) == 4


def test_a_secure_resume_charges_the_rounds_it_releases_again(tmp_path):
    """Secure noise cannot be replayed: rounds 3..4, released by the interrupted run, go out again with fresh
    noise, so every node's ledger must hold 6 rounds, not 4."""
    from dpopt.privacy import Ledger

    shards = make_shards(n=2, q=20, d=2)
    kw = dict(sigma=1.0, iota=1.0, seed=5, secure_noise=True)
    _interrupted_after_releasing(shards, tmp_path, ledger=Ledger(50.0, 1e-5, "rdp", relation="replace_one"), **kw)
    resumed = dualavg.minimize(shards, rounds=4, checkpoint_dir=str(tmp_path), resume=True, **kw)
    assert [_charged_rounds(led) for led in resumed.info["node_ledgers"]] == [6, 6]


def test_a_resumed_run_charges_the_ledger_it_is_given(tmp_path):
    """The caller's ledger paid rounds 1..2 before the crash; the resumed rounds 3..4 must be charged to it too."""
    from dpopt.privacy import Ledger

    shards = make_shards(n=2, q=20, d=2)
    kw = dict(sigma=1.0, iota=1.0, seed=5)
    ledger = Ledger(50.0, 1e-5, "rdp", relation="replace_one")
    _interrupted_after_releasing(shards, tmp_path, released=False, ledger=ledger, **kw)
    assert _charged_rounds(ledger) == 2
    resumed = dualavg.minimize(shards, rounds=4, checkpoint_dir=str(tmp_path), resume=True, ledger=ledger, **kw)
    assert _charged_rounds(ledger) == 4 and resumed.epsilon == ledger.spent().epsilon


def test_a_checkpoint_without_recorded_settings_is_refused_in_words_that_fit_it(tmp_path):
    """A checkpoint written before settings were recorded cannot tell which settings would replay its released
    rounds; the refusal said 'give the settings the checkpoint was written with (activation, batch, ... differ)',
    which no call can do."""
    shards = make_shards(n=2, q=20, d=2)
    kw = dict(sigma=1.0, iota=1.0, seed=5)
    _interrupted_after_releasing(shards, tmp_path, **kw)
    (path,) = tmp_path.glob("node_state_*.npz")
    with np.load(path) as data:
        legacy = {k: data[k] for k in data.files if k not in ("settings", "pending")}
    np.savez(path, **legacy)
    with pytest.raises(ValueError, match=r"^resume=True replays rounds 3\.\.4, .* records no settings .*new run$"):
        dualavg.minimize(shards, rounds=4, checkpoint_dir=str(tmp_path), resume=True, **kw)


def test_a_ledger_of_another_relation_is_refused_before_anything_is_spent():
    """The accounting is replace-one with public shard sizes.  With batch = the smallest shard no subsampling event
    tripped the ledger's own relation check, so an add/remove ledger was accepted and the result claimed add/remove;
    under that relation one record added to node 0 (shards of 2, 2, 2 vs 3, 2, 2 rows) gave a record of 3 vs 4
    rounds (the default rounds follow the shard sizes)."""
    from dpopt.privacy import Ledger

    D = make_shards(n=3, q=2, d=2)
    X, y = D[0]
    neighbour = [(np.vstack([X, X[:1]]), np.concatenate([y, y[:1]])), *D[1:]]
    for data in (D, neighbour):
        ledger = Ledger(50.0, 1e-5, "rdp", relation="add_remove")
        with pytest.raises(ValueError, match=r"ledger\.relation must be 'replace_one' \(liu2024"):
            dualavg.minimize(data, epsilon=2.0, iota=1.0, batch=2, seed=0, ledger=ledger)
        assert ledger.events == []
    ledger = Ledger(50.0, 1e-5, "rdp", relation="replace_one")
    assert dualavg.minimize(D, epsilon=2.0, iota=1.0, batch=2, seed=0, ledger=ledger).relation == "replace_one"


@pytest.mark.parametrize("sigma", [-1.0, float("nan")])
def test_a_negative_or_nan_sigma_is_refused_not_run_without_noise(sigma):
    with pytest.raises(ValueError, match="sigma must"):
        dualavg.minimize(make_shards(n=3, q=4, d=2), sigma=sigma, iota=1.0, rounds=3, seed=0)


def test_shards_of_different_widths_are_refused_before_anything_is_spent():
    """A shard with one feature more than the others was refused only when a round drew from it: numpy's
    'inhomogeneous shape' error after the record holder's ledger had been charged 5 rounds."""
    from dpopt.privacy import Ledger

    shards = make_shards(n=3, q=10, d=3)
    X, y = shards[2]
    shards[2] = (np.hstack([X, X[:, :1]]), y)
    ledger = Ledger(5.0, 1e-5, "rdp", relation="replace_one")
    with pytest.raises(ValueError, match=r"^node 2: its shard has 4 features, node 0's has 3$"):
        dualavg.minimize(shards, epsilon=1.0, iota=1.0, rounds=5, seed=0, ledger=ledger)
    with pytest.raises(ValueError, match=r"^node 0: its shard has 3 features, not dim=4$"):
        dualavg.minimize(shards, epsilon=1.0, iota=1.0, rounds=5, seed=0, ledger=ledger, dim=4)
    assert ledger.events == []


@pytest.mark.parametrize("option", ["checkpoint_every", "record_every"])
def test_a_secure_resume_refuses_a_bad_stride_before_charging_its_rounds_again(tmp_path, option):
    """A secure resume charges the rounds it will release again before releasing them; checkpoint_every=0 or
    record_every=0 was refused only after that charge (2 rounds more on the caller's ledger, nothing released)."""
    from dpopt.privacy import Ledger

    shards = make_shards(n=2, q=20, d=2)
    kw = dict(sigma=1.0, iota=1.0, seed=5, secure_noise=True)
    _interrupted_after_releasing(shards, tmp_path, **kw)
    ledger = Ledger(50.0, 1e-5, "rdp", relation="replace_one")
    with pytest.raises(ValueError, match=option):
        dualavg.minimize(shards, rounds=4, checkpoint_dir=str(tmp_path), resume=True, ledger=ledger, **kw,
                         **{option: 0})
    assert ledger.events == []


@pytest.mark.parametrize("stride", ["checkpoint_every", "record_every"])
def test_a_run_its_ledger_cannot_pay_in_full_is_refused_before_its_first_block(tmp_path, stride):
    """The caller's ledger was charged block by block: at epsilon 6, 40 rounds of sigma 2 in blocks of 5 ran 3
    blocks (15 rounds on the wire, 5.34 charged, a checkpoint written) and were refused at the 4th, the error
    saying 'nothing was released'.  The whole run is checked first: refused with the ledger untouched."""
    from dpopt.privacy import BudgetExceededError, Ledger

    ledger = Ledger(6.0, 1e-5, "rdp", relation="replace_one")
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        dualavg.minimize(make_shards(n=3, q=10, d=2), sigma=2.0, iota=1.0, rounds=40, seed=0, ledger=ledger,
                         checkpoint_dir=str(tmp_path), **{stride: 5})
    assert ledger.events == [] and list(tmp_path.iterdir()) == []
    result = dualavg.minimize(make_shards(n=3, q=10, d=2), sigma=2.0, iota=1.0, rounds=15, seed=0, ledger=ledger,
                              checkpoint_dir=str(tmp_path), **{stride: 5})  # what it can pay runs, block by block
    assert len(ledger.events) == 3 and result.x.shape == (2,)
