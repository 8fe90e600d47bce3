import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpopt.privacy import BudgetExceededError, Ledger, PureDPAccountant, RDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.pure import invert_amplification


def pure_events(scheme):
    return st.one_of(
        st.builds(ev.PureDP, st.floats(1e-4, 2.0)),
        st.builds(ev.Laplace, st.floats(0.1, 100.0), st.floats(0.1, 10.0)),
        st.builds(ev.Subsampled, st.builds(ev.PureDP, st.floats(1e-3, 3.0)), st.floats(1e-3, 1.0),
                  st.just(scheme)),
    )


#: Each sampling scheme with the relation its amplification theorem is proven for.
SCHEME_RELATION = {"poisson": "add_remove", "without_replacement": "replace_one"}
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
        assert ledger.spent().epsilon <= ledger.epsilon  # no slack
        assert ledger.replay() == ledger.spent()


@settings(max_examples=60, deadline=None)
@given(st.floats(0.05, 5.0), st.sampled_from(sorted(SCHEME_RELATION)).flatmap(
    lambda scheme: st.tuples(st.just(scheme), st.lists(pure_events(scheme), max_size=25))))
def test_pure_ledger_never_overspends_and_refusals_change_nothing(budget, scheme_sequence):
    scheme, sequence = scheme_sequence
    _try_charges(Ledger(budget, relation=SCHEME_RELATION[scheme]), sequence)


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


def test_an_rdp_budget_below_what_rdp_can_state_says_so():
    # at delta = 1e-6 the order-1024 conversion alone costs 0.00575: dpopt fit --epsilon 1e-3 --delta 1e-6
    # --method dp-blsgd said only that a Laplace count "would spend epsilon=0.00575", and a smaller epsilon
    # that its budget "is empty at order 1024"
    floor = "Renyi-DP accounting states no epsilon below 0.00575 (orders up to 1024), so raise epsilon or delta"
    with pytest.raises(BudgetExceededError, match=re.escape(f"nothing was released: at delta=1e-06 {floor}")):
        Ledger(1e-3, 1e-6, "rdp").charge(ev.Laplace(scale=1e4))
    with pytest.raises(ValueError, match="is empty at order 1024: at delta=1e-06 Renyi-DP accounting"):
        Ledger(1.0, 1e-6, "rdp").child(1e-6, 1e-6).fix_filter_order(1024)
    with pytest.raises(BudgetExceededError, match=r"nothing was released$"):  # a budget RDP can state
        Ledger(0.01, 1e-6, "rdp").charge(ev.Laplace(scale=1e-2))


def test_equal_split_spends_exactly_the_budget():
    # ε = 1/1000 rounds up: 1000 such charges exceed 1 by 2e-17, which an exact ledger refuses;
    # an equal share rounded down (equal_share) and a scale rounded up (scale_for_epsilon) fit.
    from dpopt.privacy import equal_share

    naive = Ledger(1.0)
    with pytest.raises(BudgetExceededError):
        for _ in range(1000):
            naive.charge(ev.Laplace(scale=1000.0))
    assert len(naive.events) == 999
    ledger = Ledger(1.0)
    step = ev.Laplace(scale=ev.scale_for_epsilon(1.0, equal_share(1.0, 1000)))
    for _ in range(1000):
        ledger.charge(step)
    assert ledger.spent().epsilon == pytest.approx(1.0, rel=1e-12) and ledger.spent().epsilon <= 1.0


def test_budget_for_affords_every_part_exactly():
    """0.1 + 4·0.1 rounds to 0.5, below the exact sum of five 0.1s: a Ledger(0.5) refuses the fifth;
    budget_for rounds the exact sum up (one ulp here) and is the sum itself where that is a float."""
    import math

    from dpopt.privacy import budget_for

    assert 0.1 + 4 * 0.1 == 0.5
    short = Ledger(0.1 + 4 * 0.1)
    with pytest.raises(BudgetExceededError):
        for _ in range(5):
            short.charge(ev.PureDP(0.1))
    ledger = Ledger(budget_for(*[0.1] * 5))
    for _ in range(5):
        ledger.charge(ev.PureDP(0.1))
    assert budget_for(*[0.1] * 5) == math.nextafter(0.5, 1.0) and budget_for(0.25, 0.5) == 0.75 == budget_for(0.75)
    assert budget_for() == 0.0


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


# --------------------------------------------------------------------------- children


def test_child_charges_its_parent_and_the_parent_log_is_the_record():
    root = Ledger(1.0)
    a, b = root.child(0.4), root.child(0.4)
    a.charge(ev.PureDP(0.1))
    b.charge(ev.PureDP(0.3))
    a.charge(ev.PureDP(0.2))
    root.charge(ev.PureDP(0.05))
    assert root.events == [ev.PureDP(0.1), ev.PureDP(0.3), ev.PureDP(0.2), ev.PureDP(0.05)]
    assert a.events == [ev.PureDP(0.1), ev.PureDP(0.2)] and b.events == [ev.PureDP(0.3)]
    assert root.spent().epsilon == pytest.approx(0.65, rel=1e-15)
    assert a.spent().epsilon == pytest.approx(0.3, rel=1e-15)
    assert root.replay() == root.spent() and a.replay() == a.spent()
    assert a.parent is root and root.parent is None


def _snapshot(*ledgers):
    return [(x.to_json(), x.spent()) for x in ledgers]


def test_child_refuses_its_own_overspend_and_changes_nothing():
    root = Ledger(1.0)
    kid = root.child(0.3)
    kid.charge(ev.PureDP(0.2))
    before = _snapshot(root, kid)
    assert not kid.can_afford(ev.PureDP(0.2)) and root.can_afford(ev.PureDP(0.2))
    with pytest.raises(BudgetExceededError, match="this ledger"):
        kid.charge(ev.PureDP(0.2))
    assert _snapshot(root, kid) == before


def test_child_refuses_what_the_parent_cannot_afford_and_changes_nothing():
    root = Ledger(1.0)
    first, second = root.child(0.8), root.child(0.8)  # children may over-subscribe the parent
    first.charge(ev.PureDP(0.7))
    before = _snapshot(root, first, second)
    assert not second.can_afford(ev.PureDP(0.5))
    with pytest.raises(BudgetExceededError, match="parent"):
        second.charge(ev.PureDP(0.5))
    assert _snapshot(root, first, second) == before
    second.charge(ev.PureDP(0.3))  # what still fits in both is accepted
    assert root.spent().epsilon == pytest.approx(1.0, rel=1e-15)


def test_grandchildren_charge_every_ancestor():
    root = Ledger(2.0, 1e-6, "rdp")
    kid = root.child(1.0)
    grandkid = kid.child(0.5)
    assert kid.delta == grandkid.delta == 1e-6 and grandkid.notion == "rdp"
    step = ev.Subsampled(ev.Gaussian(2.0), 0.05)
    while grandkid.can_afford(step):
        grandkid.charge(step)
    n = len(grandkid.events)
    assert n > 0 and root.events == kid.events == grandkid.events
    assert grandkid.spent().epsilon <= 0.5 and grandkid.replay() == grandkid.spent()
    direct = RDPAccountant().compose(ev.SelfComposed(step, n))
    assert root.spent().epsilon == pytest.approx(direct.get_epsilon(1e-6), rel=1e-12)
    with pytest.raises(BudgetExceededError):
        grandkid.charge(step)
    assert len(root.events) == n


def test_child_budget_is_validated():
    with pytest.raises(ValueError, match="epsilon"):
        Ledger(1.0).child(0.0)
    with pytest.raises(ValueError, match="delta"):
        Ledger(1.0).child(0.5, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        Ledger(1.0, 1e-5, "rdp").child(0.5, 0.0)


# --------------------------------------------------------------------------- accountants


def test_accountant_by_instance_or_name():
    from dpopt.privacy import ZCDPAccountant

    ledger = Ledger(1.0, 1e-5, RDPAccountant(orders=[2.0, 8.0, 32.0]))
    ledger.charge(ev.Gaussian(10.0))
    assert ledger.notion == "rdp" and list(ledger.remaining_rdp()[0]) == [2.0, 8.0, 32.0]
    assert Ledger.from_json(ledger.to_json()).spent() == ledger.spent()
    z = Ledger(1.0, 1e-5, "zcdp")
    z.charge(ev.Gaussian(10.0))
    assert z.spent().epsilon == ZCDPAccountant().compose(ev.Gaussian(10.0)).get_epsilon(1e-5)
    with pytest.raises(TypeError, match="accountant"):
        Ledger(1.0, accountant=3)


def test_registered_names_extend_the_ledger():
    from dpopt.privacy.accountant import accountant_names, register_accountant

    class Halved(PureDPAccountant):
        notion = "test-halved"

        def copy(self):
            other = Halved()
            other._exact = self._exact
            return other

    register_accountant("test-halved", Halved)
    register_accountant("test-halved", Halved)  # idempotent for the same factory
    with pytest.raises(ValueError, match="already registered"):
        register_accountant("test-halved", PureDPAccountant)
    assert {"pure", "rdp", "zcdp", "test-halved"} <= set(accountant_names())
    ledger = Ledger(1.0, accountant="test-halved")
    ledger.charge(ev.PureDP(0.5))
    assert ledger.notion == "test-halved" and ledger.spent().epsilon == 0.5


# --------------------------------------------------------------------------- relations


@pytest.mark.parametrize(
    ("relation", "event"),
    [
        ("replace_one", ev.Subsampled(ev.Laplace(1.0), 0.1, "poisson")),
        ("add_remove", ev.Subsampled(ev.Laplace(1.0), 0.1, "without_replacement")),
        ("||b - b'||_inf <= b_max", ev.Subsampled(ev.Laplace(1.0), 0.1, "poisson")),
        ("add_remove", ev.Composed((ev.Laplace(9.0), ev.SelfComposed(
            ev.Subsampled(ev.PureDP(0.1), 0.5, "without_replacement"), 3)))),
        # an activation wrapping (liu2024's rounds) hides no sampling scheme from the check
        ("replace_one", ev.Activated(ev.Subsampled(ev.Gaussian(1.0), 0.01, "poisson"), 1.0)),
        ("add_remove", ev.Activated(ev.Subsampled(ev.Laplace(1.0), 0.01, "without_replacement"), 0.5)),
        ("add_remove", ev.SelfComposed(ev.Activated(
            ev.Subsampled(ev.Gaussian(2.0), 0.1, "without_replacement"), 0.3), 4)),
    ],
)
def test_sampling_scheme_must_match_the_relation(relation, event):
    ledger = Ledger(10.0, relation=relation)
    with pytest.raises(ValueError, match="relation"):
        ledger.charge(event)
    with pytest.raises(ValueError, match="relation"):
        ledger.can_afford(event)
    assert ledger.events == []


def test_matching_schemes_and_full_batches_are_accepted():
    Ledger(10.0, relation="add_remove").charge(ev.Subsampled(ev.Laplace(1.0), 0.1, "poisson"))
    Ledger(10.0, relation="replace_one").charge(
        ev.Subsampled(ev.Laplace(1.0), 0.1, "without_replacement"))
    paper = Ledger(10.0, relation="||b - b'||_inf <= b_max")
    paper.charge(ev.Subsampled(ev.Laplace(1.0), 1.0, "poisson"))  # rate 1: no amplification
    Ledger(10.0, 1e-5, "rdp", relation="replace_one").charge(  # a network node's round (liu2024)
        ev.Activated(ev.Subsampled(ev.Gaussian(5.0), 0.1, "without_replacement"), 0.5))
    with pytest.raises(ValueError, match="mixes"):
        Ledger(10.0).charge(ev.Composed((ev.Subsampled(ev.PureDP(1.0), 0.5, "poisson"),
                                         ev.Subsampled(ev.PureDP(1.0), 0.5, "without_replacement"))))


def test_relation_type():
    from dpopt.privacy import Relation

    assert Relation.ADD_REMOVE == "add_remove" and Relation("replace_one").kind == "replace_one"
    paper = Relation.paper("||b - b'||_inf <= b_max")
    assert paper.kind == "paper" and paper.description == "||b - b'||_inf <= b_max"
    assert json.loads(json.dumps({"r": paper}))["r"] == str(paper)
    for bad in ("", "  ", None, 3):
        with pytest.raises(ValueError, match="relation"):
            Relation(bad)
    with pytest.raises(ValueError, match="standard"):
        Relation.paper("add_remove")
    assert isinstance(Ledger(1.0, relation="replace_one").relation, Relation)


# --------------------------------------------------------------------------- exact splits


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-6, 1e6), st.floats(1e-6, 1e3))
def test_scale_for_epsilon_is_the_smallest_scale_within_the_budget(sensitivity, epsilon):
    scale = ev.scale_for_epsilon(sensitivity, epsilon)
    assert sensitivity / scale <= epsilon
    assert scale == sensitivity / epsilon or sensitivity / np.nextafter(scale, 0.0) > epsilon


@pytest.mark.parametrize("steps", [3, 7, 10, 49, 300])
@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 2.0])
def test_fit_scales_to_budget_makes_a_split_exact(steps, epsilon):
    from dpopt.privacy.calibration import fit_scales_to_budget

    rate, unit = 0.1, 1.0 / 30
    inner = invert_amplification(epsilon / steps, rate)
    naive = np.full(steps, unit / inner)

    def events(scales):
        return [ev.Subsampled(ev.Laplace(b, unit), rate, "without_replacement") for b in scales.tolist()]

    def ledger():
        return Ledger(epsilon, relation="replace_one")

    fitted = fit_scales_to_budget(naive, events, ledger)
    book = ledger()
    for e in events(fitted):
        book.charge(e)
    assert book.spent().epsilon <= epsilon
    assert np.all(fitted >= naive) and np.all(fitted <= naive * (1 + 64 * 2.0**-52))


@pytest.mark.parametrize("epsilon", [0.05, 0.2, 0.8, 1.6])
@pytest.mark.parametrize(("steps", "rate", "clip"), [(100, 0.01, 1.0), (37, 0.1, 3.0), (1, 1.0, 0.7)])
def test_calibrated_gaussian_steps_fit_the_ledger_exactly(epsilon, steps, rate, clip):
    from dpopt.privacy.calibration import calibrate_gaussian_sigma

    sigma = calibrate_gaussian_sigma(epsilon, 1e-8, steps=steps, rate=rate, sensitivity=clip)
    step = ev.Gaussian(sigma, clip) if rate == 1.0 else ev.Subsampled(ev.Gaussian(sigma, clip), rate)
    ledger = Ledger(epsilon, 1e-8, "rdp")
    for _ in range(steps):
        ledger.charge(step)  # no slack: the calibration's arithmetic is the ledger's
    assert ledger.spent().epsilon <= epsilon
    assert ledger.spent() == ledger.replay()
    assert ledger.spent().epsilon == RDPAccountant().compose(ev.SelfComposed(step, steps)).get_epsilon(1e-8)


def test_run_length_composition_equals_self_composition():
    a, b = ev.Subsampled(ev.Gaussian(1.3), 0.02), ev.Laplace(5.0)
    acc = RDPAccountant()
    for e in [a] * 7 + [b] + [a] * 5:
        before = acc.copy()
        eps = acc.epsilon_after(e, 1e-6)
        acc.compose(e)
        assert eps == acc.get_epsilon(1e-6) and before.get_epsilon(1e-6) <= eps
    expected = RDPAccountant().compose(ev.SelfComposed(a, 7)).compose(b).compose(ev.SelfComposed(a, 5))
    np.testing.assert_array_equal(acc.rdp, expected.rdp)


# --------------------------------------------------------------------------- Renyi filter


_FIRST = ev.Subsampled(ev.Gaussian(2.0), 0.01)


def _drifting_stream():
    """Subsampled Gaussian steps (cheapest near order 21), then pure-DP steps (cheaper at large orders)."""
    return [_FIRST] * 10 + [ev.Laplace(scale=100.0)] * 700


def test_a_filter_checks_one_order_where_the_grid_would_accept_any():
    from dpopt.privacy.rdp import filter_order, rdp_budget_per_order

    epsilon, delta = 1.0, 1e-6
    order = filter_order(_FIRST, epsilon, delta)
    grid, filt = Ledger(epsilon, delta, "rdp"), Ledger(epsilon, delta, "rdp", filter_order=order)
    accepted_grid = accepted_filter = 0
    for event in _drifting_stream():
        if grid.can_afford(event):
            grid.charge(event)
            accepted_grid += 1
        if filt.can_afford(event):
            filt.charge(event)
            accepted_filter += 1
    assert accepted_filter < accepted_grid  # the grid moved on to other orders
    # the filter's composition fits the budget at its one order (Feldman & Zrnic 2021, Thm 3.1) ...
    orders, room = filt.remaining_rdp()
    assert list(orders) == [order] and room[0] >= 0.0
    i = RDPAccountant().order_index(order)
    assert grid.accountant.rdp[i] > rdp_budget_per_order([order], epsilon, delta)[0]
    # ... and its guarantee is the filter's: the budget, reproduced by replay and by JSON
    assert filt.spent().epsilon == epsilon and filt.replay() == filt.spent()
    assert Ledger.from_json(filt.to_json()).spent() == filt.spent()


def test_a_filter_decides_alone_in_one_pass_as_the_full_check_does(monkeypatch):
    """A root or detached filter decides a charge by one test against its kept room
    (Ledger._filter_room, Ledger._fits_with_room) when it fits with room to spare, and otherwise asks
    the full check: over random streams of alternating events, up to and past the budget and at
    budgets that land a charge within the rounding margin, it accepts and refuses exactly what a
    ledger without the one-test path does, with the same composed RDP at every step."""
    from dpopt.privacy.rdp import filter_order

    pool = [ev.Subsampled(ev.Gaussian(2.0), 0.01), ev.Subsampled(ev.AboveThreshold.laplace(0.2, 0.1), 0.01),
            ev.Laplace(scale=50.0), ev.Gaussian(8.0)]
    calls = [0]
    within = Ledger._fits_with_room

    def counted(self, event):
        fits = within(self, event)
        calls[0] += fits
        return fits

    monkeypatch.setattr(Ledger, "_fits_with_room", counted)
    gen = np.random.default_rng(3)
    for _ in range(6):
        epsilon, delta = float(gen.uniform(0.2, 2.0)), 1e-6
        order = filter_order(pool[0], epsilon, delta)
        fast = Ledger(epsilon, delta, "rdp", filter_order=order)
        slow = Ledger(epsilon, delta, "rdp", filter_order=order)
        slow._filter_room = lambda: None  # the full check only
        stream = [pool[j] for j in gen.integers(0, len(pool), size=3000)]
        accepted = 0
        for event in stream:
            ok = fast.can_afford(event)
            assert ok == slow.can_afford(event)
            if ok:
                fast.charge(event)
                slow.charge(event)
                accepted += 1
            else:
                with pytest.raises(BudgetExceededError):
                    fast.charge(event)
                with pytest.raises(BudgetExceededError):
                    slow.charge(event)
            assert fast._accountant._value == slow._accountant._value
        assert 0 < accepted < len(stream)  # the budget ran out within the stream
        assert fast.events == slow.events
        np.testing.assert_array_equal(fast.accountant.rdp, slow.accountant.rdp)
    assert calls[0] > 0  # charges decided by the one test
    # a charge landing within the rounding margin of B(α) goes to the exact check
    event = pool[2]
    probe = Ledger(1.0, 1e-6, "rdp", filter_order=32.0)
    cost = probe._accountant.focused_cost(event)
    edge = Ledger(1.0, 1e-6, "rdp", filter_order=32.0)
    index = edge._accountant.order_index(32.0)
    edge._room = (cost, 1e-9, index, (edge.filter_order, edge.epsilon, edge.delta))  # room exactly the cost:
    assert not within(edge, event)  # not decided by the one test
    assert edge.can_afford(event) == probe.can_afford(event)


def test_a_filters_one_pass_room_follows_its_order_and_budget():
    """The room a filter keeps for its one-pass check (B(α) at its order) is that of the order and
    budget in force: an order fixed again before the first charge, or a budget set anew, is what
    the next charge is checked against (a stale B(α) at a larger order accepted every charge)."""
    step = ev.Gaussian(20.0)  # RDP α/800: fits B(64) ≈ 0.78, not B(4) < 0
    ledger = Ledger(1.0, 1e-6, "rdp", filter_order=64.0)
    assert ledger.can_afford(step)  # B(64) kept
    ledger.fix_filter_order(4.0)  # B(4) < 0 at this budget: nothing fits at order 4
    assert not ledger.can_afford(step)
    with pytest.raises(BudgetExceededError):
        ledger.charge(step)
    assert ledger.events == [] and not Ledger(1.0, 1e-6, "rdp", filter_order=4.0).can_afford(step)
    ledger = Ledger(1.0, 1e-6, "rdp", filter_order=64.0)
    ledger.charge(step)
    ledger.epsilon = 1e-3  # a smaller budget: the next charge is refused, as a fresh check says
    assert not ledger.can_afford(step) and not ledger._fits(step)
    with pytest.raises(BudgetExceededError):
        ledger.charge(step)
    assert len(ledger.events) == 1


def test_filter_order_is_fixed_before_the_run_and_up_the_chain():
    ledger = Ledger(1.0, 1e-6, "rdp")
    with pytest.raises(ValueError, match="not one of"):
        ledger.fix_filter_order(3.33)
    ledger.fix_filter_order(32.0)
    kid = ledger.child(0.5)
    assert kid.filter_order == 32.0
    ledger.charge(ev.Gaussian(20.0))
    with pytest.raises(ValueError, match="before anything"):
        ledger.fix_filter_order(16.0)
    with pytest.raises(ValueError, match="RDP"):
        Ledger(1.0, filter_order=32.0)


def test_a_filter_child_of_a_plain_ledger_charges_its_guarantee_once():
    from dpopt.privacy.rdp import rdp_budget_per_order

    root = Ledger(2.0, 1e-6, "rdp")
    root.charge(ev.Gaussian(30.0))
    kid = root.child(1.0)
    kid.fix_filter_order(32.0)
    formula = float(rdp_budget_per_order([32.0], 1.0, 1e-6)[0])
    bound = root.events[1]  # B(α), or the few ulps above it that the child's own float test still accepts
    assert root.events == [ev.Gaussian(30.0), bound] and bound.order == 32.0
    assert formula <= bound.rdp <= formula * (1 + 1e-15)
    spent_before = root.spent()
    while kid.can_afford(ev.Gaussian(8.0)):
        kid.charge(ev.Gaussian(8.0))
    assert len(kid.events) > 1 and root.events == [ev.Gaussian(30.0), bound]  # adaptive events stay
    assert root.spent() == spent_before and kid.spent().epsilon == 1.0
    grandkid = kid.child(0.5)  # a child of a filter at the same order charges up to the filter
    grandkid.fix_filter_order(32.0)
    assert grandkid.events == [] and not grandkid._detached
    # a parent that cannot afford the whole filter refuses it, and nothing changes
    small = Ledger(0.5, 1e-6, "rdp")
    greedy = small.child(1.0)
    with pytest.raises(BudgetExceededError):
        greedy.fix_filter_order(32.0)
    assert small.events == [] and greedy.filter_order is None
    assert json.loads(ev.RenyiBound(32.0, 0.5).to_json())["type"] == "renyi_bound"
    assert ev.from_json(bound.to_json()) == bound


def test_a_filter_child_never_spends_more_than_the_bound_its_parent_was_charged():
    """A detached filter accepts every composition its conversion at α maps within (ε, δ), which
    includes the total-variation shortcut (ε = 0 while δ² ≥ 1 − e^{−RDP}); where that room is above
    B(α) its parent must be charged for it.  At ε = 0.005, δ = 0.1, α = 4.2, B(α) = 0.0058 while
    the child accepted 47 steps of RDP 2.1e-4 (0.00987 at α), 1.69 times the RenyiBound charged."""
    root = Ledger(10.0, 0.2, "rdp")
    kid = root.child(0.005, 0.1)
    kid.fix_filter_order(4.2)
    (bound,) = root.events
    step = ev.Gaussian(100.0)
    while kid.can_afford(step):
        kid.charge(step)
    spent = RDPAccountant().compose(step, len(kid.events))
    assert len(kid.events) > 1
    assert spent.rdp[spent.order_index(4.2)] <= bound.rdp
    assert root.events == [bound] and tuple(kid.spent()) == (0.005, 0.1)


@pytest.mark.parametrize(("epsilon", "delta", "order"), [(1.0742464217913363, 0.003210558562309243, 4.7),
                                                       (1.1904133599836995, 0.00019736483347999515, 8.0),
                                                       (0.005, 0.1, 4.2)])
def test_a_filter_child_accepts_nothing_beyond_the_bound_its_parent_holds(epsilon, delta, order):
    """B(α) is computed by formula, the filter's checks by its conversion in floats: these children
    accepted RenyiBound(α, r) up to 5 (and 3) ulps above the B(α) their parent had been charged (54 of
    207 random budgets); the parent is now charged the largest value the child's own test accepts."""
    import math

    root = Ledger(10.0, 0.2, "rdp")
    kid = root.child(epsilon, delta)
    kid.fix_filter_order(order)
    (bound,) = root.events
    assert kid.can_afford(ev.RenyiBound(order, bound.rdp))
    assert not kid.can_afford(ev.RenyiBound(order, math.nextafter(bound.rdp, math.inf)))


@pytest.mark.parametrize("order", [8.0, 32.0])
def test_filter_cost_is_what_a_charge_adds_at_the_filter_order(order):
    """``Ledger.filter_cost(event)`` is the very float a charge adds to the composed RDP at the filter
    order: after == before + cost, bit for bit, both in the filter's own value and in the full curve
    the accountant materializes from the events' curves at every order; a repeated event composes as
    base + count·cost."""
    ledger = Ledger(50.0, 1e-6, "rdp")
    ledger.fix_filter_order(order)
    i = ledger.accountant.order_index(order)
    step = ev.Composed((ev.Subsampled(ev.Gaussian(1.2), 0.02),
                        ev.Subsampled(ev.AboveThreshold.laplace(0.3, 0.15), 0.02)))
    events = [ev.Gaussian(40.0), ev.Subsampled(ev.Gaussian(0.9), 0.05), step,
              ev.Subsampled(ev.AboveThreshold.gaussian(3.0, 4.0), 0.01), ev.Laplace(scale=80.0)]
    for event in events:
        cost = ledger.filter_cost(event)
        assert isinstance(cost, float) and cost > 0.0
        assert cost == RDPAccountant().cost(event)[i]  # the event's curve at that order
        before = ledger.accountant
        before_value, before_curve = before._value_at(i), before.rdp[i] if ledger.events else 0.0
        ledger.charge(event)
        after = ledger.accountant
        assert after._value_at(i) == before_value + cost
        assert after.rdp[i] == before_curve + cost
    base, cost = ledger.accountant.rdp[i], ledger.filter_cost(step)
    ledger.charge(step)
    ledger.charge(step)  # the same event twice in a row: one run of two
    assert ledger.accountant.rdp[i] == ledger.accountant._value_at(i) == base + 2 * cost
    assert ledger.filter_cost(step) == cost  # unchanged by charging


def test_filter_cost_needs_a_filter_order():
    event = ev.Subsampled(ev.Gaussian(1.0), 0.01)
    for ledger in (Ledger(1.0, 1e-6, "rdp"), Ledger(1.0)):
        with pytest.raises(ValueError, match="filter_cost needs a Renyi filter") as info:
            ledger.filter_cost(event)
        assert "\n" not in str(info.value)


@pytest.mark.parametrize("accountant, delta", [("pure", 0.0), ("approx", 1e-6), ("rdp", 1e-6), ("zcdp", 1e-6),
                                               ("pld", 1e-6)])
def test_spent_by_copies_is_the_guarantee_of_charging_every_copy(accountant, delta):
    """R repetitions released together: this ledger's events composed R times, the (ε, δ) of a ledger that
    charged all R runs' events (R = 1: spent())."""
    from dpopt.privacy import events as ev

    one = ev.Laplace(2.0, 1.0) if accountant in ("pure", "approx", "pld") else ev.Gaussian(3.0, 1.0)
    run, every = Ledger(1e3, delta, accountant), Ledger(1e3, delta, accountant)
    run.charge(one)
    run.charge(ev.Subsampled(one, 0.5, "poisson") if accountant == "rdp" else one)
    for _ in range(4):
        for event in run.events:
            every.charge(event)
    got, want = run.spent_by_copies(4), every.spent()
    assert got.notion == want.notion and got.delta == want.delta
    assert got.epsilon == pytest.approx(want.epsilon, rel=1e-9)
    assert got.epsilon > run.spent().epsilon and run.spent_by_copies(1) == run.spent()
    assert Ledger(1.0).spent_by_copies(3).epsilon == 0.0  # nothing charged


def test_spent_by_copies_of_an_approx_ledger_is_the_sums_past_its_delta():
    """20 copies of ApproxDP(1, 1e-6) on a ledger of delta 1e-5 are (20, 2e-5) by basic composition: the
    epsilon was taken at the budget's delta, which the copies' delta sum exceeds, and read inf."""
    from dpopt.privacy import events as ev

    ledger = Ledger(10.0, 1e-5, "approx")
    ledger.charge(ev.ApproxDP(1.0, 1e-6))
    got = ledger.spent_by_copies(20)
    assert got.epsilon == 20.0 and got.delta == pytest.approx(2e-5, rel=1e-12) and got.delta >= 2e-5


def test_spent_by_copies_refuses_a_renyi_filter_and_a_bad_count():
    from dpopt.privacy import events as ev

    ledger = Ledger(10.0, 1e-6, "rdp")
    ledger.fix_filter_order(8.0)
    ledger.charge(ev.Gaussian(5.0, 1.0))
    with pytest.raises(ValueError, match="filter"):
        ledger.spent_by_copies(2)
    with pytest.raises(ValueError, match="copies"):
        Ledger(1.0).spent_by_copies(0)


@pytest.mark.parametrize(("epsilon", "order"), [(0.2230765647919426, 36.0), (0.24297822743184178, 40.0)])
def test_a_filter_with_all_of_its_parents_budget_is_accepted(epsilon, order):
    """A child with the whole budget of its parent: the formula's B(alpha) converts an ulp above epsilon, and the
    parent refused RenyiBound(alpha, B(alpha)) ('would spend epsilon=0.223077 of this ledger's budget of
    0.223077'), as DPLogisticRegression(method='dp-blsgd') with a declared n_public did at 2 of 60 budgets.
    The parent is charged the most the filter accepts: nothing above it."""
    from dpopt.privacy import events as ev

    delta = 1e-5 if order == 36.0 else 1e-6
    parent = Ledger(epsilon, delta, "rdp")
    kid = parent.child(epsilon, delta)
    kid.fix_filter_order(order)
    (bound,) = parent.events
    acc = kid._accountant
    assert acc.fits(ev.RenyiBound(order, bound.rdp), epsilon, delta, order=order)
    assert not acc.fits(ev.RenyiBound(order, math.nextafter(bound.rdp, math.inf)), epsilon, delta, order=order)


def test_a_filter_order_fixed_again_does_not_charge_the_parent_twice():
    """fix_filter_order on a filter already charged to its parent (nothing charged to the filter yet, e.g. a run
    that raised after fixing it) charged the parent a second RenyiBound: twice the filter's budget, nothing
    released.  Now refused, the parent unchanged."""
    parent = Ledger(10.0, 1e-5, "rdp")
    kid = parent.child(2.0, 1e-5)
    kid.fix_filter_order(32.0)
    assert len(parent.events) == 1
    with pytest.raises(ValueError, match="fixed already"):
        kid.fix_filter_order(32.0)
    assert len(parent.events) == 1 and kid.filter_order == 32.0


def test_a_filters_refusal_states_the_epsilon_at_its_order():
    """A Renyi filter refuses by the conversion at its order; the message stated the best order's epsilon,
    below the budget: 'would spend epsilon=4.72851 of this ledger's budget of 5' for a Gaussian(1) at order 64
    (32.101 there)."""
    ledger = Ledger(5.0, 1e-5, "rdp", filter_order=64.0)
    event = ev.Gaussian(1.0)
    with pytest.raises(BudgetExceededError) as info:
        ledger.charge(event)
    stated = float(re.search(r"epsilon=([0-9.e+-]+) of", str(info.value)).group(1))
    assert stated > 5.0
