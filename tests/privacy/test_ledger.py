import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.privacy import BudgetExceededError, Ledger, PureDPAccountant, RDPAccountant
from dpopt.privacy import events as ev

pure_events = st.one_of(
    st.builds(ev.PureDP, st.floats(1e-4, 2.0)),
    st.builds(ev.Laplace, st.floats(0.1, 100.0), st.floats(0.1, 10.0)),
    st.builds(ev.Subsampled, st.builds(ev.PureDP, st.floats(1e-3, 3.0)), st.floats(1e-3, 1.0),
              st.sampled_from(["poisson", "without_replacement"])),
)
rdp_events = st.one_of(
    st.builds(ev.Gaussian, st.floats(0.5, 20.0)),
    st.builds(ev.Subsampled, st.builds(ev.Gaussian, st.floats(0.6, 10.0)), st.floats(1e-3, 0.5)),
    st.builds(ev.AboveThreshold.gaussian, st.floats(1.0, 20.0), st.floats(1.0, 20.0)),
    st.builds(ev.Laplace, st.floats(1.0, 100.0)),
)


def _try_charges(ledger, sequence):
    for event in sequence:
        before_json, before_spent = ledger.to_json(), ledger.spent()
        try:
            ledger.charge(event)
        except BudgetExceededError:
            assert ledger.to_json() == before_json
            assert ledger.spent() == before_spent
        assert ledger.spent().epsilon <= ledger.epsilon * (1 + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 5.0), st.lists(pure_events, max_size=25))
def test_pure_ledger_never_overspends_and_refusals_change_nothing(budget, sequence):
    _try_charges(Ledger(budget), sequence)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.2, 8.0), st.lists(rdp_events, max_size=12))
def test_rdp_ledger_never_overspends_and_refusals_change_nothing(budget, sequence):
    _try_charges(Ledger(budget, 1e-6, "rdp"), sequence)


def test_refuses_before_release_and_reports():
    ledger = Ledger(1.0)
    ledger.charge(ev.PureDP(0.7))
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        ledger.charge(ev.PureDP(0.4))
    assert ledger.spent().epsilon == pytest.approx(0.7)
    assert ledger.remaining().epsilon == pytest.approx(0.3)
    assert ledger.can_afford(ev.PureDP(0.3))
    assert not ledger.can_afford(ev.PureDP(0.31))
    assert len(ledger.events) == 1


def test_equal_split_spends_exactly_the_budget():
    ledger = Ledger(1.0)
    for _ in range(1000):
        ledger.charge(ev.Laplace(scale=1000.0))
    assert ledger.spent().epsilon == pytest.approx(1.0, rel=1e-12)


def test_log_replays_to_the_same_guarantee():
    ledger = Ledger(5.0, 1e-5, "rdp")
    step = ev.Subsampled(ev.Gaussian(1.1), 0.01)
    for _ in range(200):
        ledger.charge(step)
    ledger.charge(ev.AboveThreshold.gaussian(3.0, 4.0))
    assert ledger.replay() == ledger.spent()
    again = Ledger.from_json(ledger.to_json())
    assert again.spent() == ledger.spent()
    direct = RDPAccountant()
    for e in ledger.events:
        direct.compose(e)
    assert direct.get_epsilon(1e-5) == ledger.spent().epsilon
    data = json.loads(ledger.to_json())
    assert data["accountant"] == "rdp" and len(data["events"]) == 201


def test_pure_log_replays():
    ledger = Ledger(1.0, relation="replace_one")
    ledger.charge(ev.Subsampled(ev.Laplace(0.5, 0.01), 0.01, "without_replacement"))
    acc = PureDPAccountant()
    for e in ledger.events:
        acc.compose(e)
    assert acc.get_epsilon() == ledger.spent().epsilon == ledger.replay().epsilon
    assert Ledger.from_json(ledger.to_json()).relation == "replace_one"


def test_remaining_rdp_tells_what_fits():
    ledger = Ledger(1.0, 1e-6, "rdp")
    ledger.charge(ev.Gaussian(5.0))
    orders, room = ledger.remaining_rdp()
    small, big = ev.Gaussian(20.0), ev.Gaussian(1.0)
    acc = RDPAccountant(orders)
    assert np.any(acc.cost(small) <= room) == ledger.can_afford(small)
    assert np.any(acc.cost(big) <= room) == ledger.can_afford(big)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": 1.0, "delta": 1.0, "accountant": "rdp"}, "delta"),
        ({"epsilon": 1.0, "delta": 1e-5}, "delta"),
        ({"epsilon": 1.0, "accountant": "rdp"}, "delta"),
        ({"epsilon": 1.0, "accountant": "gdp"}, "accountant"),
    ],
)
def test_bad_budgets(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Ledger(**kwargs)


def test_pure_ledger_refuses_gaussian():
    with pytest.raises(ValueError, match="pure-DP"):
        Ledger(1.0).charge(ev.Gaussian(1.0))
