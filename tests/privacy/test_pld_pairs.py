"""PLD pairs checked against closed forms and brute force: k-ary randomized response, and
fixed-size sampling without replacement under replace-one (Zhu, Dong & Wang 2022)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as dpa_pld

from dpopt.privacy import events as ev
from dpopt.privacy.pld import PLDAccountant
from dpopt.privacy.pure import PureDPAccountant
from dpopt.privacy.rdp import RDPAccountant, randomized_response_rdp

H = 1e-3


def _rr_delta(epsilon: float, k: int, at: float, count: int = 1) -> float:
    """Exact δ(ε′) of ``count`` compositions of k-ary RR: losses (+ε, 0, −ε) w.p. (e^ε, k−2, 1)/Z, multinomially."""
    z = math.expm1(epsilon) + k
    p = (math.exp(epsilon) / z, (k - 2) / z, 1.0 / z)
    total = 0.0
    for up in range(count + 1):
        for down in range(count + 1 - up):
            mid = count - up - down
            loss = (up - down) * epsilon
            if loss <= at:
                continue
            ways = math.factorial(count) // (math.factorial(up) * math.factorial(down) * math.factorial(mid))
            total += ways * p[0] ** up * p[1] ** mid * p[2] ** down * -math.expm1(at - loss)
    return total


@pytest.mark.parametrize("k", [2, 3, 10])
def test_randomized_response_pld_matches_its_closed_form(k):
    eps = 0.7
    acc = PLDAccountant(H).compose(ev.SelfComposed(ev.RandomizedResponse(eps, k), 6))
    for at in (0.3, 1.0, 2.5):
        exact = _rr_delta(eps, k, at, count=6)
        low, high = acc.get_delta_bounds(at)
        assert low - 1e-12 <= exact <= high + 1e-12  # the optimistic and pessimistic δ bracket the truth
        assert high == pytest.approx(exact, rel=2e-2, abs=1e-9)
    # one release: ε-DP exactly (δ(ε) = 0), and more than that is not claimed
    one = PLDAccountant(H).compose(ev.RandomizedResponse(eps, k))
    assert one.get_delta(eps) == pytest.approx(0.0, abs=1e-12)
    assert one.get_delta(eps / 2) == pytest.approx(_rr_delta(eps, k, eps / 2), rel=1e-2)
    assert PureDPAccountant().compose(ev.RandomizedResponse(eps, k)).get_epsilon() == eps


@pytest.mark.parametrize("k", [2, 5])
def test_randomized_response_pld_matches_dp_accounting(k):
    eps = 1.3
    p = k / (math.exp(eps) + k - 1)  # dp-accounting's noise parameter: uniform output w.p. p
    theirs = dpa_pld.from_randomized_response(p, k, value_discretization_interval=H).self_compose(20)
    ours = PLDAccountant(H).compose(ev.SelfComposed(ev.RandomizedResponse(eps, k), 20))
    for delta in (1e-3, 1e-6):
        assert ours.get_epsilon(delta) == pytest.approx(theirs.get_epsilon_for_delta(delta), rel=1e-2)


def test_randomized_response_rdp_is_the_renyi_divergence():
    eps, k = 0.9, 4
    z = math.expm1(eps) + k
    P = np.array([math.exp(eps), 1.0, 1.0, 1.0]) / z  # true value x
    Q = np.array([1.0, math.exp(eps), 1.0, 1.0]) / z  # true value x′
    orders = np.array([1.5, 2.0, 8.0, 64.0])
    direct = np.log(np.sum(P**orders[:, None] * Q ** (1 - orders[:, None]), axis=1)) / (orders - 1)
    np.testing.assert_allclose(randomized_response_rdp(eps, k, orders), direct, rtol=1e-12)
    curve = RDPAccountant(orders).compose(ev.RandomizedResponse(eps, k)).rdp
    np.testing.assert_allclose(curve, direct, rtol=1e-12)
    assert np.all(direct < eps)  # tighter than the pure-DP bound D_α ≤ ε


def _discrete_laplace_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    r = math.exp(-1.0 / scale)
    return (1 - r) / (1 + r) * r ** np.abs(support)


def _brute_force_delta(data, neighbour, m: int, scale: float, at: float) -> float:
    """max over both orders of δ(ε′) between the exact output laws of Σ_{i∈S} x_i + Z, S a uniform m-subset."""
    n = len(data)
    reach = int(60 * scale) + n + 2
    support = np.arange(-reach, reach + 1)
    noise = _discrete_laplace_pmf(scale, support)

    def law(x):
        sums = np.zeros(2 * reach + 1)
        subsets = list(itertools.combinations(range(n), m))
        for s in subsets:
            sums += np.roll(noise, int(sum(x[i] for i in s)))  # the support is wide enough not to wrap mass
        return sums / len(subsets)

    p, q = law(data), law(neighbour)
    return max(np.maximum(p - math.exp(at) * q, 0).sum(), np.maximum(q - math.exp(at) * p, 0).sum())


def test_sampling_without_replacement_pair_bounds_brute_force_and_is_tight():
    """Fixed-size sampling of m of n records, replace-one, discrete Laplace on the sample's sum.

    The accountant's pair for ``Subsampled(DiscreteLaplace, m/n, "without_replacement")`` must bound
    δ(ε′) of every replace-one pair of 0/1 data sets (enumerated over all m-subsets), and the worst
    pair — one record changes from 0 to 1 — attains it (Zhu, Dong & Wang 2022, sampling without
    replacement under substitution).
    """
    n, m, scale = 6, 2, 1.5
    event = ev.Subsampled(ev.DiscreteLaplace(scale, 1), m / n, "without_replacement")
    acc = PLDAccountant(1e-4).compose(event)
    worst = {at: 0.0 for at in (0.05, 0.2, 0.4)}
    for ones in range(n):  # data sets with `ones` ones; the neighbour flips record 0 from 0 to 1
        data = [0] * (n - ones) + [1] * ones
        if data[0] == 1:
            continue
        neighbour = [1] + data[1:]
        for at in worst:
            brute = _brute_force_delta(data, neighbour, m, scale, at)
            worst[at] = max(worst[at], brute)
            assert brute <= acc.get_delta(at) + 1e-12
    for at, brute in worst.items():
        assert acc.get_delta(at) == pytest.approx(brute, rel=5e-3, abs=1e-9)
    # the amplified pure bound log(1 + q(e^ε − 1)) is the ε at δ = 0, and the PLD finds it (up to its grid)
    pure = PureDPAccountant().compose(event).get_epsilon()
    assert acc.get_delta(pure + 2e-4) == pytest.approx(0.0, abs=1e-12)
    assert acc.get_delta(0.95 * pure) > 0.0
