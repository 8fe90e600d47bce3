"""The plan of DP-BLSGD and friends: the planned iterations spend the budget and the run makes them."""

import math

import numpy as np
import pytest
from scipy import optimize

from dpopt.linesearch.algorithms import METHODS, LineSearchHyper, dp_blsgd
from dpopt.linesearch.model import LinearModel
from dpopt.linesearch.plan import RESERVE, fit_remaining, plan_run
from dpopt.oracles import count_event
from dpopt.privacy import Ledger, RDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.rdp import rdp_budget_per_order, rdp_curve


def make_model(n=400, d=3, seed=0, n_public=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ np.linspace(1.0, -1.0, d) + rng.logistic(size=n) > 0, 1.0, -1.0)
    return LinearModel("logistic", X, y, l2=1e-3, n_public=n if n_public else None)


def step(hyper, rate, rho, bt):
    wrap = (lambda e: e) if rate == 1.0 else (lambda e: ev.Subsampled(e, rate))
    return ev.Composed((wrap(ev.Gaussian(1.0 / math.sqrt(2.0 * rho), 1.0)),
                        wrap(ev.AboveThreshold.laplace(bt / 2, bt / 4, 1.0) if hyper.noise == "laplace"
                             else ev.AboveThreshold.gaussian(math.sqrt(1.5 / bt), math.sqrt(3.0 / bt), 1.0))))


@pytest.mark.parametrize(("epsilon", "rate", "iterations", "noise"),
                         [(0.4, 0.1, 50, "laplace"), (0.4, 0.01, 300, "laplace"), (2.0, 1.0, 20, "gaussian")])
def test_the_plan_spends_the_budget_in_the_planned_iterations(epsilon, rate, iterations, noise):
    """T(1 + reserve) iterations at the planned budgets fit at the filter order, 1 % more ε_iter does not
    (at any integer order): the planned T, not the budget, ends the run."""
    delta = 1e-8
    hyper = LineSearchHyper(planned_iterations=iterations, noise=noise)
    plan = plan_run(hyper, ledger=Ledger(epsilon, delta, "rdp"), epsilon=epsilon, delta=delta, rate=rate)
    assert plan.iterations == iterations
    assert plan.rho_grad == pytest.approx(plan.eps_iter**2 / 2)
    assert plan.budget_bt == pytest.approx(plan.eps_iter if noise == "laplace" else plan.eps_iter**2 / 2)
    assert plan.eps_iter > epsilon / (2 * iterations)  # amplification: more than §5.4's split
    target = iterations * (1 + RESERVE)
    orders = np.array([a for a in range(2, 257)], dtype=float)
    budget = rdp_budget_per_order(orders, epsilon, delta)
    at = orders.tolist().index(plan.order)
    assert target * rdp_curve(step(hyper, rate, plan.rho_grad, plan.budget_bt), orders)[at] <= budget[at]
    more = plan.eps_iter * 1.01
    bigger = step(hyper, rate, more**2 / 2, more if noise == "laplace" else more**2 / 2)
    assert np.all(target * rdp_curve(bigger, orders) > budget)


def test_the_plan_makes_room_for_the_noisy_count_and_a_spent_ledger():
    epsilon, delta = 0.5, 1e-6
    hyper = LineSearchHyper(planned_iterations=40)
    model = make_model(n_public=False)
    prior = count_event(model, epsilon=epsilon, delta=delta)
    assert prior == ev.Gaussian(prior.sigma, 1.0)
    assert count_event(make_model(), epsilon=epsilon, delta=delta) is None  # a declared count
    alone = plan_run(hyper, ledger=Ledger(epsilon, delta, "rdp"), epsilon=epsilon, delta=delta, rate=0.1)
    counted = plan_run(hyper, ledger=Ledger(epsilon, delta, "rdp"), epsilon=epsilon, delta=delta, rate=0.1,
                       prior=prior)
    assert counted.eps_iter < alone.eps_iter
    spent = Ledger(epsilon, delta, "rdp")
    spent.charge(ev.Gaussian(20.0, 1.0))
    assert plan_run(hyper, ledger=spent, epsilon=epsilon, delta=delta, rate=0.1).eps_iter < alone.eps_iter
    # the whole run, count included, fits and makes the planned iterations
    result = dp_blsgd(model, epsilon=epsilon, delta=delta, rng=0, planned_iterations=40)
    assert result.info["normalizer"]["source"] == "noisy_count"
    assert result.nit == result.info["planned_iterations"] == 40
    replay = RDPAccountant().compose(ev.Composed(result.events))
    assert replay.epsilon_at(delta, result.info["filter_order"]) <= epsilon


@pytest.mark.parametrize("method", sorted(METHODS))
def test_without_budget_increases_the_run_is_exactly_the_plan(method):
    model = make_model()
    hyper = {"budget_increase": "no", "planned_iterations": 30}
    if method != "dp-blgd":
        hyper["rate"] = 0.2
    result = METHODS[method](model, epsilon=0.5, delta=1e-6, rng=3, **hyper)
    info = result.info
    assert result.nit == info["iterations"] == info["planned_iterations"] == 30
    assert len(result.events) == 60 and info["stop"] == "planned"
    assert info["rho_grad"] == info["rho_grad_initial"]


def test_failed_searches_take_from_the_later_iterations_not_the_count():
    """CHEB's increases, charged in full, leave the remaining iterations less; the budgets in force shrink
    (as ε_iter) so that the planned count is still made, within the budget at the filter order."""
    epsilon, delta = 0.1, 1e-6
    model = make_model(n=400, seed=2)
    result = dp_blsgd(model, epsilon=epsilon, delta=delta, rng=1, rate=0.05, planned_iterations=80)
    info = result.info
    assert info["line_search_failures"] >= 3, "too few failures to exercise the rescaling"
    grown = info["rho_grad_initial"] * 1.3 ** info["cheb_actions"]["gradient"]
    assert info["rho_grad"] < 0.9 * grown  # CHEB's growth, then scaled down for the later iterations
    assert result.nit == info["planned_iterations"] == 80 and info["stop"] == "planned"
    replay = RDPAccountant().compose(ev.Composed(result.events))
    assert replay.epsilon_at(delta, info["filter_order"]) <= epsilon


def test_fit_remaining_scales_the_budgets_as_eps_iter_only_when_needed():
    epsilon, delta, rate = 0.5, 1e-6, 0.1
    hyper = LineSearchHyper(planned_iterations=50)
    ledger = Ledger(epsilon, delta, "rdp")
    plan = plan_run(hyper, ledger=ledger, epsilon=epsilon, delta=delta, rate=rate)
    ledger.fix_filter_order(plan.order)
    rho, bt = plan.rho_grad, plan.budget_bt
    assert fit_remaining(hyper, ledger=ledger, rate=rate, remaining=50, rho=rho, bt=bt) == (rho, bt)
    for _ in range(20):  # spend 20 iterations' worth at 1.69× the budgets: 50 more no longer fit
        ledger.charge(step(hyper, rate, 1.69 * rho, 1.3 * bt))
    new_rho, new_bt = fit_remaining(hyper, ledger=ledger, rate=rate, remaining=50, rho=rho, bt=bt)
    assert new_rho < rho and new_rho / rho == pytest.approx((new_bt / bt) ** 2)
    _, room = ledger.remaining_rdp()
    cost = rdp_curve(step(hyper, rate, new_rho, new_bt), [plan.order])
    assert 50 * (1 + RESERVE) * cost[0] <= room[0] < 50 * (1 + RESERVE) * cost[0] * 1.01


class _Room:
    """The one thing :func:`fit_remaining` asks of a ledger: its room at the filter order."""

    def __init__(self, order, room):
        self.order, self.room = order, room

    def remaining_rdp(self):
        return np.array([self.order]), np.array([self.room])


def _counting(monkeypatch):
    """Count the RDP evaluations (one per λ tried) made through plan._fits."""
    from dpopt.linesearch import plan

    calls = [0]
    fits = plan._fits

    def counted(*args, **kwargs):
        calls[0] += 1
        return fits(*args, **kwargs)

    monkeypatch.setattr(plan, "_fits", counted)
    return calls


def test_fit_remaining_fits_within_one_percent_in_fewer_evaluations(monkeypatch):
    """Random budgets, orders and rooms: the scale fits, is within 1 % (log λ ≤ 0.01) of the largest
    that fits (found to 1e-10 here), so within 1 % of what bracketing from λ = 1 in 25 % steps and
    Brent's method (the former search, kept as plan._largest) returns, in fewer evaluations."""
    from dpopt.linesearch import plan

    calls = _counting(monkeypatch)
    rng = np.random.default_rng(5)
    old_calls = new_calls = 0
    new_per_case = []
    for _ in range(60):
        noise = str(rng.choice(["laplace", "gaussian"]))
        hyper = LineSearchHyper(planned_iterations=100, noise=noise)
        rate = 1.0 if rng.random() < 0.1 else float(np.exp(rng.uniform(math.log(1e-3), 0.0)))
        rho = float(np.exp(rng.uniform(math.log(1e-6), math.log(2.0))))
        bt = (math.sqrt(2 * rho) if noise == "laplace" else rho) * float(np.exp(rng.uniform(-1.0, 1.0)))
        order = float(rng.choice(plan.PLAN_ORDERS))
        remaining = int(rng.integers(1, 600))
        power = 1.0 if noise == "laplace" else 2.0
        wanted = -float(np.exp(rng.uniform(math.log(1e-4), math.log(2.0)))) if rng.random() < 0.9 else 0.1
        cost = rdp_curve(step(hyper, rate, rho * math.exp(2 * wanted), bt * math.exp(power * wanted)), [order])[0]
        room = remaining * (1 + RESERVE) * cost

        def gap(u, hyper=hyper, rate=rate, order=order, room=room, rho=rho, bt=bt, power=power,
                remaining=remaining):
            n = plan._fits(hyper, rate, np.array([order]), np.array([room]), rho * math.exp(2 * u),
                           bt * math.exp(power * u))
            return math.log(max(float(n.max()), 1e-300)) - math.log(remaining * (1 + RESERVE))

        calls[0] = 0
        new_rho, new_bt = fit_remaining(hyper, ledger=_Room(order, room), rate=rate, remaining=remaining,
                                        rho=rho, bt=bt)
        new_calls += calls[0]
        new_per_case.append(calls[0])
        calls[0] = 0
        old = plan._largest(gap, 0.0, cap=0.0, step=math.log(1.25), tol=plan._RESCALE_TOL)
        old_calls += calls[0]
        u = 0.5 * math.log(new_rho / rho)
        assert new_bt == pytest.approx(bt * math.exp(power * u), rel=1e-12)
        assert gap(u) >= 0.0 and gap(old) >= 0.0  # both fit
        if gap(0.0) >= 0.0:
            assert (new_rho, new_bt) == (rho, bt)
            continue
        lo = -0.01
        while gap(lo) < 0.0:
            lo *= 2.0
        largest = optimize.brentq(gap, lo, 0.0, xtol=1e-10) - 1e-10
        assert gap(largest) >= 0.0
        assert largest - plan._RESCALE_TOL <= u <= largest + 1e-9
        assert abs(u - old) <= plan._RESCALE_TOL
    assert new_calls < 0.8 * old_calls, (new_calls, old_calls)
    assert max(new_per_case) <= 12


def test_fit_remaining_finds_the_cliff_at_the_budgets_before_the_increase(monkeypatch):
    """At 200-row minibatches (q = 0.002, the floor benchmark's runs) the per-iteration RDP at the
    filter order has a cliff: above the plan's budgets, calibrated to the largest that fit, the
    subsampled AboveThreshold's amplification breaks down and gap(λ = 1) is about −10 after CHEB's
    increase.  Started at the scale undoing the increase (``before``) the rescaling takes 3
    evaluations; without it, more, to the same 1 %."""
    from dpopt.linesearch import plan

    calls = _counting(monkeypatch)
    epsilon, delta, rate = 0.4, 1e-8, 0.002
    hyper = LineSearchHyper(planned_iterations=300)
    planned = plan_run(hyper, ledger=Ledger(epsilon, delta, "rdp"), epsilon=epsilon, delta=delta, rate=rate)
    rho, bt, order, remaining = planned.rho_grad, planned.budget_bt, planned.order, 200
    cost = rdp_curve(step(hyper, rate, rho, bt), [order])[0]
    room = _Room(order, remaining * (1 + RESERVE) * cost * math.exp(0.3))
    up = rdp_curve(step(hyper, rate, 1.3 * rho, bt), [order])[0]
    assert math.log(up / cost) > 5.0  # the cliff: 30 % more ρ costs e^5 times the RDP
    results = {}
    for before in ((rho, bt), None):
        calls[0] = 0
        results[before] = fit_remaining(hyper, ledger=room, rate=rate, remaining=remaining, rho=1.3 * rho,
                                        bt=bt, before=before), calls[0]
    (hinted, n_hinted), (plain, n_plain) = results[(rho, bt)], results[None]
    assert n_hinted == 3 < n_plain
    for new_rho, new_bt in (hinted, plain):
        assert remaining * (1 + RESERVE) * rdp_curve(step(hyper, rate, new_rho, new_bt), [order])[0] <= room.room
        # within 1 % of λ (2 % of ρ) of the edge, which is above ρ: ρ itself fits the room
        assert new_rho >= math.exp(-2.0 * plan._RESCALE_TOL) * rho
    assert hinted[0] / plain[0] == pytest.approx(1.0, abs=0.021)


def test_fit_remaining_takes_few_evaluations_in_a_run(monkeypatch):
    """A seeded run with failed searches: each rescaling takes at most 3 evaluations (λ = 1, the
    guess, the confirmation), and the run still ends within its budget."""
    from dpopt.linesearch import algorithms

    calls = _counting(monkeypatch)
    counts = []
    rescale = algorithms.fit_remaining

    def counted(*args, **kwargs):
        start = calls[0]
        try:
            return rescale(*args, **kwargs)
        finally:
            counts.append(calls[0] - start)

    monkeypatch.setattr(algorithms, "fit_remaining", counted)
    epsilon, delta = 0.1, 1e-6
    result = dp_blsgd(make_model(n=400, seed=2), epsilon=epsilon, delta=delta, rng=1, rate=0.05,
                      planned_iterations=80)
    assert len(counts) >= 3 and max(counts) <= 3, counts
    replay = RDPAccountant().compose(ev.Composed(result.events))
    assert replay.epsilon_at(delta, result.info["filter_order"]) <= epsilon


def _filter_ledger_and_oracle(epsilon, delta, rate, noise, planned=100, spent=10):
    """A Rényi-filter ledger made as ``_descend`` makes it (the plan's orders, the plan's filter order),
    ``spent`` iterations charged at the plan's budgets, and an oracle whose ``step_event`` it checks."""
    from dpopt.linesearch.plan import PLAN_ORDERS
    from dpopt.oracles import PrivateOracle

    hyper = LineSearchHyper(planned_iterations=planned, noise=noise)
    ledger = Ledger(epsilon, delta, "rdp", orders=PLAN_ORDERS)
    plan = plan_run(hyper, ledger=ledger, epsilon=epsilon, delta=delta, rate=rate)
    ledger.fix_filter_order(plan.order)
    oracle = PrivateOracle(make_model(n=500), ledger=ledger, rng=np.random.default_rng(1), normalizer=500,
                           rate=rate, c_grad=0.5, c_obj=1.0, noise=noise)
    for _ in range(spent):
        ledger.charge(oracle.step_event(plan.rho_grad, plan.budget_bt))
    return hyper, ledger, oracle, plan


def _leave_room(ledger, room):
    """Charge a Gaussian event that leaves about ``room`` RDP at the filter order (α/(2σ²) at order α)."""
    extra = ledger.remaining_rdp()[1][0] - room
    assert extra > 0.0
    ledger.charge(ev.Gaussian(math.sqrt(ledger.filter_order / (2.0 * extra))))
    return float(ledger.remaining_rdp()[1][0])


@pytest.mark.parametrize(("noise", "epsilon", "delta", "rate", "increase", "slack", "expect"), [
    ("laplace", 1.0, 1e-6, 0.01, (1.3, 1.0), 0.01, "before"),  # a larger ρ: the answer lowers ε_BT
    ("gaussian", 0.4, 1e-8, 0.002, (1.0, 1.3), 0.01, "before"),  # the floor benchmark's rate
    ("laplace", 1.0, 1e-6, 0.01, (1.0, 1.3), 0.01, "larger"),  # the answer keeps more ε_BT than before
    ("gaussian", 1.0, 1e-6, 0.01, (1.3, 1.0), 0.01, "larger"),  # the answer keeps more ρ than before
    ("laplace", 1.0, 1e-6, 0.01, (1.3, 1.0), -0.05, "no room"),  # the rest does not fit at before
])
def test_fit_remaining_returns_before_only_when_it_dominates_and_fits(noise, epsilon, delta, rate, increase,
                                                                     slack, expect):
    """After a failed search raised the budgets (ρ, bt) = (a·ρ₀, b·bt₀), ``fit_remaining`` with ``before``
    = (ρ₀, bt₀) and ``charged`` = the oracle's ``step_event`` returns ``before`` itself exactly when it is
    at least the scaled answer (the result without ``charged``) in both budgets and the remaining
    iterations fit at it (checked at the filter's own cost of that event); the scaled answer otherwise.
    Either way the remaining iterations and the reserve fit the room at the filter order."""
    hyper, ledger, oracle, plan = _filter_ledger_and_oracle(epsilon, delta, rate, noise)
    before = (plan.rho_grad, plan.budget_bt)
    remaining = 40
    wanted = remaining * (1.0 + RESERVE)
    room = _leave_room(ledger, wanted * ledger.filter_cost(oracle.step_event(*before)) * math.exp(slack))
    options = {"ledger": ledger, "rate": rate, "remaining": remaining, "rho": increase[0] * before[0],
               "bt": increase[1] * before[1], "before": before}
    scaled = fit_remaining(hyper, **options)
    got = fit_remaining(hyper, **options, charged=oracle.step_event)
    dominates = before[0] >= scaled[0] and before[1] >= scaled[1]
    fits_before = wanted * ledger.filter_cost(oracle.step_event(*before)) <= room
    assert scaled != before
    if expect == "before":
        assert dominates and fits_before
        assert got == before  # the very floats (no new RDP curves)
    else:
        assert not dominates if expect == "larger" else (dominates and not fits_before)
        assert got == scaled
    assert wanted * ledger.filter_cost(oracle.step_event(*got)) <= room
    assert wanted * ledger.filter_cost(oracle.step_event(*scaled)) <= room


@pytest.mark.parametrize("accountant", ["zcdp", "pld", "pure"])
def test_a_line_search_on_a_non_renyi_ledger_is_one_line_before_any_charge(accountant):
    """Given a ledger and no epsilon, DP-BLSGD spends that ledger as its Renyi filter: a zCDP, PLD or pure one
    raised AttributeError ('ZCDPAccountant' object has no attribute 'orders')."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    ledger = Ledger(1.0, 0.0 if accountant == "pure" else 1e-6, accountant)
    with pytest.raises(ValueError, match=f"^the line-search methods spend through a Renyi filter.*'{accountant}'"):
        dp_blsgd(LinearModel("logistic", X, np.sign(X[:, 0]) + (X[:, 0] == 0), l2=1e-3), ledger=ledger, rng=0)
    assert ledger.events == []
