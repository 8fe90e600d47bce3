"""The "approx" accountant: pure events and stated ApproxDP guarantees composed by basic composition."""

import itertools
import json
import math
from fractions import Fraction

import pytest

from dpopt import privacy
from dpopt.privacy import ApproxDPAccountant, BudgetExceededError, Ledger, budget_for, make_accountant
from dpopt.privacy import events as ev
from dpopt.privacy.approx import approx_guarantee, group_privacy


def _up(x: Fraction) -> float:
    """The smallest float >= x."""
    f = float(x)  # rounds to nearest
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def test_sums_are_exact_to_the_float():
    acc = ApproxDPAccountant()
    for _ in range(10):
        acc.compose(ev.ApproxDP(0.1, 1e-7))
    acc.compose(ev.Laplace(scale=3.0))  # pure: ε = 1/3, δ = 0
    eps = Fraction(0.1) * 10 + Fraction(1.0 / 3.0)
    delta = Fraction(1e-7) * 10
    assert acc.composed_epsilon == _up(eps) and acc.composed_delta == _up(delta)
    assert Fraction(acc.composed_epsilon) >= eps and Fraction(acc.composed_delta) >= delta
    assert acc.get_epsilon(_up(delta) * 1.01) == acc.composed_epsilon
    assert acc.get_epsilon(1e-7) == math.inf  # below the δ sum nothing is known
    assert acc.get_delta(acc.composed_epsilon * 1.01) == acc.composed_delta and acc.get_delta(0.5) == 1.0
    assert approx_guarantee(ev.SelfComposed(ev.ApproxDP(0.1, 1e-7), 10)) == (_up(Fraction(0.1) * 10), _up(delta))


def test_order_of_events_does_not_matter():
    events = [ev.ApproxDP(0.1, 1e-7), ev.ApproxDP(0.7, 3e-9), ev.PureDP(0.3), ev.Exponential(1e-3),
              ev.Composed((ev.ApproxDP(2.5, 1e-12), ev.Laplace(7.0)))]
    seen = set()
    for order in itertools.permutations(events):
        acc = ApproxDPAccountant()
        for e in order:
            acc.compose(e)
        seen.add((acc.composed_epsilon, acc.composed_delta))
    assert len(seen) == 1


def test_ledger_checks_both_sums_and_refusal_changes_nothing():
    ledger = Ledger(1.0, 1e-5, "approx", relation="replace_one")
    ledger.charge(ev.ApproxDP(0.5, 5e-6))
    before = (ledger.events, ledger.spent(), ledger.to_json())
    with pytest.raises(BudgetExceededError, match="delta=1.1e-05"):  # ε fits, δ does not
        ledger.charge(ev.ApproxDP(0.1, 6e-6))
    with pytest.raises(BudgetExceededError, match="epsilon=1.5"):  # δ fits, ε does not
        ledger.charge(ev.PureDP(1.0))
    assert not ledger.can_afford(ev.ApproxDP(0.1, 6e-6)) and ledger.can_afford(ev.ApproxDP(0.5, 5e-6))
    assert (ledger.events, ledger.spent(), ledger.to_json()) == before
    ledger.charge(ev.ApproxDP(0.5, 5e-6))  # exactly the budget
    assert ledger.spent().epsilon == 1.0 and ledger.spent().delta == 1e-5


def test_ledger_budget_for_the_exact_sums():
    parts = [ev.ApproxDP(0.1, 1e-7)] * 11 + [ev.PureDP(0.1)]
    need_eps = budget_for(*[0.1] * 12)
    need_delta = budget_for(*[1e-7] * 11)
    ledger = Ledger(need_eps, need_delta, "approx")
    for e in parts:
        ledger.charge(e)
    spent = ledger.spent()
    assert (spent.epsilon, spent.delta, spent.notion) == (_up(Fraction(0.1) * 12), _up(Fraction(1e-7) * 11), "approx")
    assert spent.epsilon <= need_eps and spent.delta <= need_delta
    below = float(Fraction(1e-7) * 11)
    while Fraction(below) >= Fraction(1e-7) * 11:  # the largest float under the exact δ sum
        below = math.nextafter(below, 0.0)
    short = Ledger(need_eps, below, "approx")
    for e in parts[:-2]:
        short.charge(e)
    with pytest.raises(BudgetExceededError):
        short.charge(parts[-2])
    assert len(short.events) == 10


def test_ledger_serializes_and_replays():
    ledger = Ledger(2.0, 1e-5, "approx", relation="replace_one")
    ledger.charge(ev.ApproxDP(0.3, 2e-6))
    ledger.child(0.5, accountant="pure").charge(ev.Exponential(0.25))
    again = Ledger.from_json(ledger.to_json())
    assert again.notion == "approx" and again.events == ledger.events
    assert again.spent() == ledger.spent() == ledger.replay()
    data = json.loads(ledger.to_json())
    assert data["spent"] == {"epsilon": 0.55, "delta": 2e-06, "notion": "approx"}
    assert data["events"][0] == {"type": "approx_dp", "epsilon": 0.3, "delta": 2e-06}
    assert make_accountant("approx").notion == "approx"


def test_a_pure_ledger_is_never_approx():
    pure = Ledger(1.0)
    with pytest.raises(ValueError, match="accountant='approx'"):
        pure.charge(ev.ApproxDP(0.1, 1e-6))
    with pytest.raises(ValueError, match="accountant='approx'"):  # an approx child's charge reaches the pure parent
        pure.child(0.5, 1e-6, accountant="approx").charge(ev.ApproxDP(0.1, 1e-6))
    assert pure.events == [] and pure.notion == "pure"
    with pytest.raises(ValueError, match="delta must be in"):
        Ledger(1.0, 0.0, "approx")


@pytest.mark.parametrize("accountant, notion", [
    (privacy.PureDPAccountant, "pure-DP"), (privacy.RDPAccountant, "Renyi DP"), (privacy.ZCDPAccountant, "zCDP"),
    (privacy.PLDAccountant, "PLD"),
])
def test_other_accountants_refuse_approx_in_one_line(accountant, notion):
    event = ev.Composed((ev.PureDP(0.1), ev.ApproxDP(0.5, 1e-6)))
    with pytest.raises(ValueError, match=f"which {notion}") as info:
        accountant().compose(event)
    assert "\n" not in str(info.value)
    assert not accountant().supports(ev.ApproxDP(0.5, 1e-6))


def test_approx_refuses_what_it_cannot_compose():
    acc = ApproxDPAccountant()
    with pytest.raises(ValueError, match="Gaussian"):
        acc.compose(ev.Gaussian(1.0))
    with pytest.raises(ValueError, match="does not amplify"):
        acc.compose(ev.Subsampled(ev.ApproxDP(1.0, 1e-6), 0.1))
    assert (acc.composed_epsilon, acc.composed_delta) == (0.0, 0.0)
    assert acc.supports(ev.Subsampled(ev.PureDP(1.0), 0.1)) and not acc.supports(ev.Gaussian(1.0))


def test_group_privacy_of_two_steps():
    eps, delta = group_privacy(0.5, 1e-6)
    assert eps == 1.0 and delta >= 1e-6 * (1 + math.exp(0.5)) and delta <= 1e-6 * (1 + math.exp(0.5)) * (1 + 1e-14)
    assert group_privacy(0.5, 0.0) == (1.0, 0.0)
    for epsilon in (50.0, 1e8):  # e^eps overflows a float at the second
        with pytest.raises(ValueError, match="delta >= 1"):
            group_privacy(epsilon, 1e-6)


def test_group_privacy_never_understates_the_exact_bound():
    """kε and δ·Σ_{i<k} e^{iε} against 60-digit arithmetic, over seeded (ε, δ, k), the overflow regime included
    (a result rounded to nearest, or e^ε taken as math.exp gives it, falls below the exact bound about half the
    time); hardly above it (1e-13; 1e-11 where it is computed in logs)."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    rng = __import__("random").Random(0)
    cases = [(rng.uniform(1e-3, 20.0), 10.0 ** rng.uniform(-12, -2), rng.choice((2, 2, 3, 5))) for _ in range(300)]
    cases += [(710.0, 1e-310, 2), (720.0, 1e-320, 2), (1.0 / 3.0, 1e-6, 7)]
    for epsilon, delta, k in cases:
        exact = mpmath.mpf(delta) * mpmath.fsum(mpmath.exp(i * mpmath.mpf(epsilon)) for i in range(k))
        if exact >= 1:
            continue
        eps_k, delta_k = group_privacy(epsilon, delta, k)
        assert Fraction(eps_k) >= k * Fraction(epsilon) and eps_k <= math.nextafter(k * epsilon, math.inf)
        assert mpmath.mpf(delta_k) >= exact, (epsilon, delta, k)
        assert mpmath.mpf(delta_k) <= exact * (1 + (1e-11 if epsilon * (k - 1) > 709 else 1e-13))
