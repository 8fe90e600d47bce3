"""The bounds of Thm 3.5, (3.12)/(3.13), (4.3) and (4.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpopt.accelerated import algorithms, allocation, bounds
from dpopt.privacy import Ledger
from dpopt.privacy import mechanisms as mech

MU, L = 0.5, 1.0


def test_hb_rate_special_cases():
    alpha = 0.8
    # β = 0 is gradient descent: ρ = max |1 − αλ| over λ ∈ {μ, L}
    assert bounds.hb_rate(alpha, 0.0, MU, L) == pytest.approx(
        max(abs(1 - alpha * MU), abs(1 - alpha * L))
    )
    # Polyak's parameters give ρ = √β = (√κ − 1)/(√κ + 1)
    kappa = L / MU
    a_hb = 4 / (math.sqrt(MU) + math.sqrt(L)) ** 2
    b_hb = ((math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)) ** 2
    assert bounds.hb_rate(a_hb, b_hb, MU, L) == pytest.approx(math.sqrt(b_hb), rel=1e-6)
    # ρ is the spectral radius of M(α, β) of App. B.3 for a diagonal Q
    beta = 0.3
    M = np.zeros((4, 4))
    for i, lam in enumerate((MU, L)):
        M[np.ix_([i, i + 2], [i, i + 2])] = [[1 + beta - alpha * lam, -beta], [1, 0]]
    assert bounds.hb_rate(alpha, beta, MU, L) == pytest.approx(max(abs(np.linalg.eigvals(M))))


def test_hb_noise_floor_is_the_stationary_error_of_noisy_hb():
    """m(α, β) = Σ_i E[(x_i − x*_i)²] at stationarity of HB on a diagonal quadratic.

    Simulated with 20000 independent chains run 400 steps past any transient
    (ρ^400 < 1e-30); the sample mean of Σ x_i² has relative standard error
    about 1 %, and the test allows 5 % (5 standard errors).
    """
    lam = np.array([MU, L])
    alpha, beta, sigma2 = 0.6, 0.4, 0.01
    rng = np.random.default_rng(1)
    R = 20_000
    x = np.zeros((R, 2))
    x_prev = x.copy()
    for _ in range(400):
        w = rng.standard_normal((R, 2)) * math.sqrt(sigma2)
        x, x_prev = x - alpha * (lam * x + w) + beta * (x - x_prev), x
    empirical = np.mean(np.sum(x**2, axis=1))
    assert empirical == pytest.approx(bounds.hb_noise_floor(alpha, beta, lam, sigma2), rel=0.05)
    # The bound (3.17) tends to L·m(α, β) and lies above the stationary E[F] − F*.
    tail = bounds.hb_quadratic_bound(np.array([400.0]), alpha, beta, lam, sigma2, 0.0)[0]
    assert tail == pytest.approx(L * bounds.hb_noise_floor(alpha, beta, lam, sigma2), rel=1e-6)
    assert tail >= np.mean(0.5 * np.sum(lam * x**2, axis=1))


def test_subsampling_variance_is_eq_3_13_and_bounds_the_minibatch_variance():
    S1, n, m = 2.0, 50, 10
    assert bounds.subsampling_variance(S1, m, n) == pytest.approx(S1**2 / 4 / m * (n - m) / (n - 1))
    assert bounds.subsampling_variance(S1, n, n) == 0.0
    # Values at ±S₁/2 (range S₁) attain the bound: the exact variance of a mean of m of n
    # without replacement is σ²_pop (n − m)/(m (n − 1)).
    values = np.where(np.arange(n) % 2 == 0, S1 / 2, -S1 / 2)
    exact = values.var() * (n - m) / (m * (n - 1))
    assert exact == pytest.approx(bounds.subsampling_variance(S1, m, n))


def test_gradient_noise_bound_is_eq_3_12():
    eps0 = math.log(1 + (math.exp(1.0 / 100) - 1) * 1000 / 10)
    expected = bounds.subsampling_variance(4.0, 10, 1000) + 2 * 3 * 16 / (100 * eps0**2)
    got = bounds.gradient_noise_bound(1.0, 100, sensitivity=4.0, batch_size=10, n=1000, d=3)
    assert got == pytest.approx(expected)


def test_optimized_bound_is_the_minimum_of_eq_4_3_over_splits():
    """(4.6) = (4.3) at the split (4.5), and below (4.3) at the uniform split."""
    S1, n, d, eps, E0 = 40.0, 100_000, 20, 1.0, 10.0
    steps = np.full(150, 1 / 5.0)
    a0, a = allocation.coefficients(steps, 0.02, 5.0)
    log_a = np.log(a)
    opt = allocation.closed_form_scales(log_a, eps, sensitivity=S1, n=n)
    at_opt = bounds.nag_bound(a0, a, opt, initial_error=E0, d=d)
    assert at_opt == pytest.approx(
        bounds.optimized_bound(a0, a, initial_error=E0, d=d, sensitivity=S1, n=n, epsilon=eps),
        rel=1e-12,
    )
    uniform = np.full(a.size, S1 * a.size / (n * eps))
    assert bounds.nag_bound(a0, a, uniform, initial_error=E0, d=d) > at_opt


def test_nag_bound_holds_for_dp_nag_on_a_quadratic():
    """Thm 4.1: E[F(x_T)] − F* ≤ (4.3) for NAG with Laplace(b_t) gradient noise.

    F(x) = ½ Σ λ_i x_i², 4000 chains (the sample mean is within a few % of
    E[F(x_T)]); E₀ is the Lyapunov initial value F(x₀) − F* + (μ/2)‖x₀ − x*‖²
    of Aybat et al.  The noise term dominates (a_{T,0}E₀ ≈ 1e-9).
    """
    lam = np.array([0.05, 1.0])
    mu, Lq, d, T = float(lam.min()), float(lam.max()), 2, 80
    alpha = 1.0 / Lq
    beta = (1 - math.sqrt(mu * alpha)) / (1 + math.sqrt(mu * alpha))
    scales = np.full(T, 0.05)
    x0 = np.array([2.0, -1.0])
    ledger = Ledger(1e9, relation="replace_one")
    rng = np.random.default_rng(2)

    class QuadraticOracle:
        def gradient(self, x, b):
            return mech.laplace(lam * x, sensitivity=1.0, ledger=ledger, rng=rng, scale=b)

    R = 4000
    xT, _, _ = algorithms.nesterov(QuadraticOracle(), np.tile(x0, (R, 1)), alpha, beta, scales)
    empirical = np.mean(0.5 * np.sum(lam * xT**2, axis=1))
    a0, a = allocation.coefficients(np.full(T, alpha), mu, Lq)
    E0 = 0.5 * np.sum(lam * x0**2) + mu / 2 * np.sum(x0**2)
    bound = bounds.nag_bound(a0, a, scales, initial_error=E0, d=d)
    assert empirical <= bound <= 20 * empirical  # the bound is about 8× the mean error here


def test_bad_input():
    with pytest.raises(ValueError, match="momentum"):
        bounds.hb_noise_floor(0.1, 1.0, [1.0], 1.0)
    with pytest.raises(ValueError, match="eigenvalues"):
        bounds.hb_noise_floor(0.1, 0.5, [-1.0], 1.0)
    with pytest.raises(ValueError, match="step is too large"):
        bounds.hb_noise_floor(10.0, 0.1, [1.0], 1.0)
    with pytest.raises(ValueError, match="step is too large"):  # unstable: ρ ≥ 1
        bounds.hb_quadratic_bound([1.0], 3.0, 0.0, [0.5, 1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="t must be"):
        bounds.hb_quadratic_bound([-1.0], 0.5, 0.0, [0.5, 1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="batch_size"):
        bounds.subsampling_variance(1.0, 11, 10)
    with pytest.raises(ValueError, match="scales"):
        bounds.nag_bound(1.0, [1.0, 2.0], [1.0], initial_error=1.0, d=1)
    with pytest.raises(ValueError, match="epsilon"):
        bounds.optimized_bound(
            1.0, [1.0], initial_error=1.0, d=1, sensitivity=1.0, n=1, epsilon=0.0
        )
    with pytest.raises(ValueError, match="mu must be <= L"):
        bounds.hb_rate(0.1, 0.1, 2.0, 1.0)
