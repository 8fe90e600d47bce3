"""Each method without noise follows its plain recursion, written here independently from the paper.

The runs use ``minimize(..., private=False)``: the same code path as a private
run except that the oracle returns the exact minibatch gradient and charges
nothing (the result says guarantee "none").  A private run with an enormous
budget must then agree to the size of its (negligible) noise, which checks
that the private path computes the same gradients.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpopt.accelerated import minimize
from dpopt.accelerated.oracle import _GradientOracle

D = 5
X0 = np.full(D, 3.0)
T = 60
FEATURE_BOUND = float(D)


def constants(problem):
    c = problem.constants("kuru2022")
    return c.L, c.mu


def full_gradient(problem):
    return lambda x, t: problem.grad(x)


def recorded_minibatch_gradient(problem, draws):
    """Exact minibatch gradients on the index sets the oracle drew (recorded in ``draws``)."""
    it = iter(draws)

    def grad(x, t):
        idx = next(it)
        out = np.empty_like(x)
        for r in range(x.shape[0]):  # a loop over repetitions is fine in a reference implementation
            out[r] = problem.loss_grad(x[r], idx[r]) + problem.regularizer.grad(x[r])
        return out

    return grad


# --------------------------------------------------------------------------- the plain recursions


def plain_gd(grad, x0, alpha, T):
    x = x0.copy()
    for t in range(T):
        x = x - alpha * grad(x, t)  # eq. (2.4)
    return x


def plain_hb(grad, x0, alpha, beta, T):
    x_prev, x = x0.copy(), x0.copy()
    for t in range(T):
        x, x_prev = x - alpha * grad(x, t) + beta * (x - x_prev), x  # eq. (3.1)
    return x


def plain_nag(grad, x0, alphas, betas, T, stage_starts=()):
    x_prev, x = x0.copy(), x0.copy()
    for t in range(T):
        if t in stage_starts:
            x_prev = x.copy()  # MASG: a new stage restarts the momentum
        z = (1 + betas[t]) * x - betas[t] * x_prev  # eq. (2.6)
        x_prev, x = x, z - alphas[t] * grad(z, t)
    return x


def paper_masg_schedule(L, mu, c, T, p=1):
    """Eq. (4.7) with n₁ = ⌈√κ ln κ⌉, written out stage by stage."""
    kappa = L / mu
    lengths = [math.ceil(math.sqrt(kappa) * math.log(kappa))]
    unit = math.ceil(math.sqrt(kappa) * math.log(2 ** (p + 2)))
    while sum(lengths) < T:
        lengths.append(2 ** (len(lengths) + 1) * unit)
    alphas, starts = [], []
    for k, n_k in enumerate(lengths, start=1):
        starts.append(len(alphas))
        alpha = c / L if k == 1 else c / (2 ** (2 * k) * L)
        alphas += [alpha] * n_k
    alphas = np.array(alphas[:T])
    betas = (1 - np.sqrt(mu * alphas)) / (1 + np.sqrt(mu * alphas))
    return alphas, betas, set(starts[1:])


def nag_momentum(alpha, mu):
    return (1 - math.sqrt(alpha * mu)) / (1 + math.sqrt(alpha * mu))


def reference(problem, method, grad, x0, c, T_run):
    L, mu = constants(problem)
    alpha = c / L
    if method == "gd":
        return plain_gd(grad, x0, alpha, T_run)
    if method == "hb":
        return plain_hb(grad, x0, alpha, nag_momentum(alpha, mu), T_run)
    if method in ("nag", "nag-opt"):
        return plain_nag(grad, x0, [alpha] * T_run, [nag_momentum(alpha, mu)] * T_run, T_run)
    alphas, betas, starts = paper_masg_schedule(L, mu, c, T_run)
    return plain_nag(grad, x0, alphas, betas, T_run, starts)


METHODS = ["gd", "hb", "nag", "nag-opt", "masg", "masg-opt"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("c", [0.1, 1.0])
def test_full_batch_recursion_matches(problem, method, c):
    L, _ = constants(problem)
    res = minimize(
        problem, X0, 1.0, method, feature_bound=FEATURE_BOUND, iterations=T, step=c / L,
        private=False, rng=0,
    )  # fmt: skip
    assert res.guarantee == "none" and res.events == [] and res.privacy.epsilon == 0.0
    expected = reference(problem, method, full_gradient(problem), X0, c, res.nit)
    np.testing.assert_allclose(res.x, expected, rtol=1e-11, atol=1e-12)
    if not method.endswith("opt"):
        assert res.nit == T


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("m", [5, 40])  # one draw per repetition, and the sampler's batched draw
def test_minibatch_recursion_matches(problem, method, m, monkeypatch):
    draws = []
    draw = _GradientOracle.draw_minibatches

    def spy(self, repetitions):
        idx = draw(self, repetitions)
        assert idx.shape == (repetitions, self.batch_size)
        assert all(len(set(row)) == self.batch_size for row in idx)  # without replacement
        draws.append(idx)
        return idx

    monkeypatch.setattr(_GradientOracle, "draw_minibatches", spy)
    R = 3
    res = minimize(
        problem, X0, 1.0, method, feature_bound=FEATURE_BOUND, iterations=T, batch_size=m,
        repetitions=R, private=False, rng=7,
    )  # fmt: skip
    assert len(draws) == res.nit
    expected = reference(
        problem,
        method,
        recorded_minibatch_gradient(problem, draws),
        np.tile(X0, (R, 1)),
        1.0,
        res.nit,
    )
    np.testing.assert_allclose(res.x, expected, rtol=1e-11, atol=1e-12)
    assert not np.allclose(res.x[0], res.x[1])  # each repetition has its own minibatches


@pytest.mark.parametrize("method", METHODS)
def test_private_run_with_huge_budget_follows_the_recursion(problem, method):
    """Full batch; for m < n test_oracle checks that private − exact gradients are pure noise."""
    kwargs = dict(feature_bound=FEATURE_BOUND, iterations=T, rng=3)
    exact = minimize(problem, X0, 1e9, method, private=False, **kwargs)
    noisy = minimize(problem, X0, 1e9, method, **kwargs)
    assert noisy.nit == exact.nit and len(noisy.events) == noisy.nit
    scale = max(noisy.info["scales"])
    assert scale < 1e-6
    np.testing.assert_allclose(noisy.x, exact.x, atol=1e3 * scale)
    assert not np.array_equal(noisy.x, exact.x)  # the noise was really added


def test_heavy_ball_smoothing_form_equals_momentum_form(problem):
    """Eqs. (3.6)–(3.7) (what dp-hb runs) and eq. (3.1) give the same iterates."""
    L, mu = constants(problem)
    alpha, beta = 0.5 / L, 0.8
    res = minimize(
        problem, X0, 1.0, "hb", feature_bound=FEATURE_BOUND, iterations=T, step=alpha,
        momentum=beta, private=False,
    )  # fmt: skip
    np.testing.assert_allclose(
        res.x, plain_hb(full_gradient(problem), X0, alpha, beta, T), rtol=1e-11
    )


def test_methods_converge_without_noise(problem):
    """A sanity check of the recursions themselves: NAG reaches the optimum."""
    L, _ = constants(problem)
    res = minimize(
        problem, X0, 1.0, "nag", feature_bound=FEATURE_BOUND, iterations=3000, private=False
    )
    assert np.linalg.norm(problem.grad(res.x)) < 1e-8
