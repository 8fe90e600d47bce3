import math

import pytest

from dpopt.privacy import PureDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.pure import amplify_pure, pure_epsilon


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
