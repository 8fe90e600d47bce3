"""The coefficients a_{T,t}, the budget split (4.4)/(4.5) and the choice of T' (Remark 4.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpopt.accelerated import allocation as al
from dpopt.accelerated import bounds, schedules
from dpopt.accelerated import calibration as kc
from dpopt.privacy import calibration as cal
from dpopt.privacy.pure import amplify_pure

L, MU = 5.0, 0.02
S1, N, D = 40.0, 100_000, 20


# --------------------------------------------------------------------------- coefficients


def test_nag_coefficients_are_thm_4_1():
    alpha, T = 0.7 / L, 50
    a0, a = al.coefficients(np.full(T, alpha), MU, L)
    r = 1 - math.sqrt(MU * alpha)
    expected = np.array([r ** (T - t) * alpha * (1 + alpha * L) for t in range(1, T + 1)])
    np.testing.assert_allclose(a, expected, rtol=1e-12)
    assert a0 == pytest.approx(r**T, rel=1e-12)
    assert np.all(np.diff(a) > 0)  # a_{T,t} increases towards the end: later steps matter more


def test_masg_coefficients_are_thm_4_3():
    T = 250
    stages, steps = schedules.masg_stages(T, L=L, mu=MU, c=1.0)
    a0, a = al.coefficients(steps, MU, L, stages)
    rho = 1 - np.sqrt(MU * steps)
    for t in (1, 17, 100, 180, T):  # eq. (4.8) term by term
        prod = np.prod(rho[t:])  # i = t+1..T
        expected = (
            2.0 ** (stages[-1] - stages[t - 1]) * prod * steps[t - 1] * (1 + steps[t - 1] * L)
        )
        assert a[t - 1] == pytest.approx(expected, rel=1e-11)
    assert a0 == pytest.approx(2.0 ** (stages[-1] - 1) * np.prod(rho), rel=1e-11)


def test_masg_stages_follow_eq_4_7():
    stages, steps = schedules.masg_stages(2000, L=L, mu=MU, c=0.5, p=1)
    kappa = L / MU
    n1 = math.ceil(math.sqrt(kappa) * math.log(kappa))
    unit = math.ceil(math.sqrt(kappa) * math.log(8))
    counts = np.bincount(stages)[1:]
    assert counts[0] == n1
    for k in range(2, len(counts)):  # every complete stage k ≥ 2 has 2^k ⌈√κ ln 2^{p+2}⌉ steps
        assert counts[k - 1] == 2**k * unit
    for k in range(1, len(counts) + 1):
        expected = 0.5 / L if k == 1 else 0.5 / (4**k * L)
        np.testing.assert_allclose(steps[stages == k], expected)
    assert schedules.restart_flags(stages).sum() == len(counts) - 1


def test_masg_stages_longer_than_the_run_are_cut_at_it():
    """At kappa = L/mu ~ 1e300 (regularization 1e-300, which the estimators accept) the first stage is ~1e150
    iterations: np.repeat raised OverflowError (MemoryError for 240 PiB at mu = 1e-30) before the stages were cut
    at T, so dpopt fit --method dp-masg printed a traceback.  The stages are the same, T of them."""
    for mu in (1e-300, 1e-30):
        stages, steps = schedules.masg_stages(20, L=0.25, mu=mu)
        assert stages.tolist() == [1] * 20 and np.all(steps == 1.0 / 0.25)
    stages, _ = schedules.masg_stages(20, L=1.0, mu=0.5, first_stage=3)  # stages shorter than T: as before
    assert np.bincount(stages)[1:].tolist() == [3, 12, 5]  # n1 = 3, then 2^2 * ceil(sqrt(2) ln 8) = 12, cut at 20


def test_prefix_coefficients_match_truncated_runs():
    stages, steps = schedules.masg_stages(400, L=L, mu=MU)
    log_a0, log_sum = al.prefix_log_coefficients(steps, MU, L, stages)
    for Tp in (1, 5, 90, 91, 200, 400):
        a0, a = al.coefficients(steps[:Tp], MU, L, stages[:Tp])
        assert math.exp(log_a0[Tp - 1]) == pytest.approx(a0, rel=1e-11)
        assert math.exp(log_sum[Tp - 1]) == pytest.approx(np.cbrt(a).sum(), rel=1e-11)


# ------------------------------------------------------------------- eq. (3.3) and its inverse


@pytest.mark.parametrize("rate", [1.0, 0.5, 0.01, 1e-4])
def test_amplification_round_trip(rate):
    budgets = np.array([1e-8, 1e-3, 0.1, 1.0, 25.0, 40.0, 1e3])
    inner = al.inner_epsilon(budgets, rate)
    np.testing.assert_allclose(al.amplified_epsilon(inner, rate), budgets, rtol=1e-13)
    for u, e in zip(inner[:5], budgets[:5], strict=True):  # the privacy core's formula
        assert amplify_pure(u, rate) == pytest.approx(e, rel=1e-13)


# --------------------------------------------------------------------------- the split


def nag_log_a(T=300, c=1.0):
    return al.log_coefficients(np.full(T, c / L), MU, L)[1]


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
def test_closed_form_is_eq_4_5(epsilon):
    log_a = nag_log_a()
    a = np.exp(log_a)
    budgets = al.closed_form_budgets(log_a, epsilon)
    assert math.fsum(budgets) == pytest.approx(epsilon, rel=1e-14)
    np.testing.assert_allclose(budgets, epsilon * np.cbrt(a) / np.cbrt(a).sum(), rtol=1e-12)
    scales = al.closed_form_scales(log_a, epsilon, sensitivity=S1, n=N)
    np.testing.assert_allclose(
        scales, np.cbrt(a).sum() * S1 / (np.cbrt(a) * N * epsilon), rtol=1e-12
    )
    # m = n: ε_t = S₁/(n b_t), so the two forms agree, and the general solver returns them.
    np.testing.assert_allclose(S1 / (N * scales), budgets, rtol=1e-12)
    opt = al.optimal_allocation(log_a, epsilon, sensitivity=S1, n=N, batch_size=N)
    np.testing.assert_allclose(opt.scales, scales, rtol=1e-12)


def kkt_multipliers(alloc, log_a, m, n):
    """λ_t = 2 a_t b_t / |∂ε_t/∂b_t| computed from the returned scales alone."""
    s, q = S1 / m, m / n
    b = alloc.scales
    u = s / b
    w = q * np.exp(u) / (1 - q + q * np.exp(u))  # dε/du
    return 2 * np.exp(log_a) * b / (w * s / b**2)


@pytest.mark.parametrize("m", [1000, 10_000, 50_000])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_numerical_split_satisfies_kkt(m, epsilon):
    log_a = nag_log_a()
    alloc = al.optimal_allocation(log_a, epsilon, sensitivity=S1, n=N, batch_size=m)
    # primal feasibility: the amplified costs (recomputed from b_t by eq. (3.3)) sum to ε
    costs = np.log1p(m / N * np.expm1(S1 / (m * alloc.scales)))
    assert math.fsum(costs) == pytest.approx(epsilon, rel=1e-12)
    assert alloc.epsilon == pytest.approx(epsilon, rel=1e-14)
    # stationarity: one multiplier for all t, equal to the reported one
    lam = kkt_multipliers(alloc, log_a, m, N)
    np.testing.assert_allclose(lam, alloc.multiplier, rtol=1e-9)
    assert alloc.multiplier > 0


def test_numerical_split_is_optimal_and_differs_from_eq_4_5():
    m = 1000
    log_a = nag_log_a()
    a = np.exp(log_a)
    alloc = al.optimal_allocation(log_a, 1.0, sensitivity=S1, n=N, batch_size=m)
    best = np.sum(a * alloc.scales**2)
    # The m = n formula applied to m < n (what the authors' code does) is feasible but worse.
    naive = al.allocation_from_budgets(
        al.closed_form_budgets(log_a, 1.0), sensitivity=S1, n=N, batch_size=m
    )
    assert np.sum(a * naive.scales**2) > best * (1 + 1e-3)
    assert np.max(np.abs(naive.scales / alloc.scales - 1)) > 0.01
    # Random feasible perturbations of the budget split never do better.
    rng = np.random.default_rng(0)
    for _ in range(50):
        budgets = alloc.budgets * np.exp(0.05 * rng.standard_normal(alloc.budgets.size))
        budgets *= 1.0 / budgets.sum()
        other = al.allocation_from_budgets(budgets, sensitivity=S1, n=N, batch_size=m)
        assert np.sum(a * other.scales**2) >= best * (1 - 1e-12)


def test_uniform_split_is_prop_3_1():
    T, m = 100, 1000
    alloc = al.allocation_from_budgets(
        al.uniform_budgets(1.0, T), sensitivity=S1, n=N, batch_size=m
    )
    eps0 = math.log(1 + (math.exp(1.0 / T) - 1) * N / m)  # eq. (3.5)
    np.testing.assert_allclose(alloc.scales, S1 / (m * eps0), rtol=1e-12)  # eq. (3.4)


# --------------------------------------------------------------------------- T' (Remark 4.1)


@pytest.mark.parametrize("c", [0.1, 1.0])
def test_choose_iterations_minimizes_eq_4_6(c):
    steps = np.full(1000, c / L)
    T_opt, curve = al.choose_iterations(
        steps, MU, L, initial_error=10.0, d=D, sensitivity=S1, n=N, epsilon=1.0
    )
    assert 1 <= T_opt <= 1000 and curve[T_opt - 1] == curve.min()
    for Tp in (1, T_opt // 2 + 1, T_opt, 1000):
        a0, a = al.coefficients(steps[:Tp], MU, L)
        direct = bounds.optimized_bound(
            a0, a, initial_error=10.0, d=D, sensitivity=S1, n=N, epsilon=1.0
        )
        assert curve[Tp - 1] == pytest.approx(direct, rel=1e-10)
    # More noise per iteration (smaller ε) favours fewer iterations.
    T_small_eps, _ = al.choose_iterations(
        steps, MU, L, initial_error=10.0, d=D, sensitivity=S1, n=N, epsilon=0.1
    )
    assert T_small_eps < T_opt


# --------------------------------------------------------------------------- bad input


def test_bad_input():
    steps = np.full(10, 1 / L)
    with pytest.raises(ValueError, match="steps must be <= 1/L"):
        al.coefficients(steps * 2, MU, L)
    with pytest.raises(ValueError, match="mu must be <= L"):
        al.coefficients(steps, 2 * L, L)
    with pytest.raises(ValueError, match="stages"):
        al.coefficients(steps, MU, L, stages=np.arange(10, 0, -1))
    with pytest.raises(ValueError, match="epsilon"):
        al.optimal_allocation(nag_log_a(), 0.0, sensitivity=S1, n=N, batch_size=10)
    with pytest.raises(ValueError, match="batch_size"):
        al.optimal_allocation(nag_log_a(), 1.0, sensitivity=S1, n=N, batch_size=N + 1)
    with pytest.raises(ValueError, match="sensitivity"):
        al.optimal_allocation(nag_log_a(), 1.0, sensitivity=-1.0, n=N, batch_size=10)
    with pytest.raises(ValueError, match="budgets"):
        al.allocation_from_budgets([0.5, 0.0], sensitivity=S1, n=N, batch_size=10)
    with pytest.raises(ValueError, match="log_a"):
        al.closed_form_budgets([], 1.0)
    with pytest.raises(TypeError, match="iterations"):
        al.uniform_budgets(1.0, 2.5)
    with pytest.raises(ValueError, match="mu must be <= L"):
        schedules.masg_stages(10, L=1.0, mu=2.0)


# ------------------------------------------------- eqs. (3.4)-(3.5) (moved from the privacy core)


def test_kuru2022_equations():
    epsilon, steps, n, m, s1 = 1.0, 100, 1000, 10, 4.0
    eps0 = kc.step_epsilon(epsilon, steps, n, m)
    assert eps0 == pytest.approx(math.log(1 + (math.exp(epsilon / steps) - 1) * n / m), rel=1e-14)
    b = kc.laplace_scale(s1, epsilon, steps, n, m)
    assert b == pytest.approx(s1 / (m * eps0), rel=1e-15)
    # eq. (3.3): the per-iteration loss with this b is exactly epsilon / T
    per_iter = math.log((math.exp(s1 / (b * m)) - 1) * m / n + 1)
    assert per_iter == pytest.approx(epsilon / steps, rel=1e-12)
    # m = n: no subsampling, eps0 = epsilon / T
    assert kc.step_epsilon(epsilon, steps, n, n) == epsilon / steps
    # calibrate_laplace_scale agrees with rate = m/n and sensitivity S1/m of the average
    assert cal.calibrate_laplace_scale(
        epsilon, sensitivity=s1 / m, steps=steps, rate=m / n
    ) == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: kc.step_epsilon(1.0, 10, 100, 200), "m"),
        (lambda: kc.step_epsilon(1.0, 0, 100, 10), "steps"),
        (lambda: kc.laplace_scale(0.0, 1.0, 10, 100, 10), "S1"),
    ],
)
def test_kuru2022_calibration_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
