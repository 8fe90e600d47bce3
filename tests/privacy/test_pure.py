import math
from decimal import Context, Decimal

import pytest

from dpopt.privacy import PureDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.pure import amplify_pure, invert_amplification, pure_epsilon


def test_sequential_composition():
    acc = PureDPAccountant().compose(ev.Laplace(scale=2.0)).compose(ev.PureDP(0.5))
    acc.compose(ev.SelfComposed(ev.Exponential(0.1), 10))
    assert math.isclose(acc.get_epsilon(), 2.0)


def test_amplification_matches_kuru2022_eq_3_3():
    # (3.3): eps(S, b, n, m) = ln[(e^{S/(bm)} - 1) m/n + 1]
    S, b, n, m = 40.0, 0.01, 100_000, 1000
    expected = math.log((math.exp(S / (b * m)) - 1) * m / n + 1)
    event = ev.Subsampled(ev.Laplace(scale=b, sensitivity=S / m), m / n, "without_replacement")
    assert math.isclose(pure_epsilon(event), expected, rel_tol=1e-12)
    assert math.isclose(pure_epsilon(ev.Subsampled(ev.PureDP(1.0), 0.01)), math.log1p(0.01 * math.expm1(1.0)))


def test_amplification_is_precise_for_tiny_budgets():
    eps = amplify_pure(1e-12, 1e-6)
    assert math.isclose(eps, 1e-18, rel_tol=1e-9)


def reference_amplification(epsilon: float, rate: float) -> float:
    """ln(1 + q(e^ε − 1)) in 80-digit decimal arithmetic (exact inputs, no overflow up to e^1e5)."""
    ctx = Context(prec=80, Emax=10**7, Emin=-(10**7))
    eps, q = Decimal(epsilon), Decimal(rate)
    growth = ctx.subtract(ctx.exp(eps), 1)
    return float(ctx.ln(ctx.add(1, ctx.multiply(q, growth))))


@pytest.mark.parametrize("epsilon", [1e-8, 1.0, 50.0, 708.9, 709.1, 800.0, 1e5])
@pytest.mark.parametrize("rate", [1e-6, 0.01, 0.5, 0.999])
def test_amplification_matches_a_high_precision_reference(epsilon, rate):
    """No overflow for ε > 709 (e^ε is not a double) and full precision on both sides of the switch."""
    got = amplify_pure(epsilon, rate)
    assert math.isfinite(got)
    assert got == pytest.approx(reference_amplification(epsilon, rate), rel=4e-15, abs=0.0)


def test_amplification_for_huge_budgets():
    # ε + ln q to double precision once e^ε dwarfs 1/q; a Subsampled event keeps a finite cost.
    assert amplify_pure(1e300, 0.5) == 1e300
    assert amplify_pure(1e5, 1e-6) == pytest.approx(1e5 + math.log(1e-6), rel=1e-15)
    assert pure_epsilon(ev.Subsampled(ev.PureDP(800.0), 0.01)) == pytest.approx(800 + math.log(0.01))
    assert amplify_pure(800.0, 1.0) == 800.0
    # q below e^{−ε}: the amplified ε is ≈ q·e^ε, small, and still accurate.
    assert amplify_pure(710.0, 1e-310) == pytest.approx(math.log1p(math.exp(710.0 + math.log(1e-310))))


def test_amplification_is_monotone_across_the_large_epsilon_switch():
    grid = [709.0 - 1e-9, 709.0, 709.0 + 1e-9, 709.5, 710.0]
    for rate in (1e-300, 1e-6, 0.3):
        values = [amplify_pure(e, rate) for e in grid]
        assert values == sorted(values)


def test_above_threshold_laplace_is_eps1_plus_2eps2():
    # chen2020 Thm 1: eps1 = eps/2, eps2 = eps/4 gives eps.
    assert math.isclose(pure_epsilon(ev.AboveThreshold.laplace(0.5, 0.25)), 1.0)


@pytest.mark.parametrize(
    "event",
    [ev.Gaussian(1.0), ev.AboveThreshold.gaussian(1.0, 1.0), ev.Composed([ev.PureDP(1.0), ev.Gaussian(2.0)])],
)
def test_non_pure_events_are_refused(event):
    with pytest.raises(ValueError, match="pure-DP"):
        PureDPAccountant().compose(event)


def test_compensated_sum_of_equal_split_is_exact():
    acc = PureDPAccountant()
    for _ in range(1000):
        acc.compose(ev.PureDP(0.1 / 1000))
    assert abs(acc.get_epsilon() - 0.1) <= 1e-17


@pytest.mark.parametrize("rate", [1e-6, 0.01, 0.5, 1.0])
@pytest.mark.parametrize("epsilon", [1e-8, 0.3, 1.0, 1.5, 50.0, 800.0, 1e5])
def test_invert_amplification_is_the_inverse_of_amplify_pure(epsilon, rate):
    eps0 = invert_amplification(epsilon, rate)
    assert eps0 >= epsilon and math.isfinite(eps0)
    assert amplify_pure(eps0, rate) == pytest.approx(epsilon, rel=1e-12)


def test_invert_amplification_matches_a_high_precision_reference():
    # ε₀ = ln(1 + (e^ε − 1)/q) in 60-digit decimal arithmetic.
    ctx = Context(prec=60)
    for epsilon, rate in [(1e-8, 1e-3), (0.7, 0.02), (3.0, 1e-4), (720.0, 0.5)]:
        e, q = Decimal(epsilon), Decimal(rate)
        reference = ctx.ln(ctx.add(1, ctx.divide(ctx.subtract(ctx.exp(e), 1), q)))
        assert invert_amplification(epsilon, rate) == pytest.approx(float(reference), rel=1e-14)


def test_compositions_cost_the_exact_sum_of_their_parts():
    # float sums rounded to nearest fell an ulp below the exact sum: a pure ledger of that float accepted
    # SelfComposed(PureDP(e), 50) and Composed((a, b)), and refused the same releases charged one by one
    from fractions import Fraction

    from dpopt.privacy import BudgetExceededError, Ledger

    e, a, b = 0.14302060167127723, 0.4929780899589061, 0.8943838721320587
    for event, parts in ((ev.SelfComposed(ev.PureDP(e), 50), [e] * 50),
                         (ev.Composed((ev.PureDP(a), ev.PureDP(b))), [a, b])):
        exact = sum(map(Fraction, parts))
        assert Fraction(pure_epsilon(event)) >= exact > Fraction(float(exact))  # rounded up, not to nearest
        with pytest.raises(BudgetExceededError):
            Ledger(float(exact), 0.0, "pure").charge(event)
        assert PureDPAccountant().compose(event).get_epsilon() == float(exact)
