"""Neighbouring datasets that differ in one extreme or awkward record get results of the same
structure from the line-search family and its baselines (privacy review of the line-search layer).

A record accepted by validation (finite) but so large that x·w overflows is clipped into range by
the model's private queries; nothing else the run computes from the data may turn it into an error
or a warning on that neighbour only: not the oracle's data passes, not the non-private ``fun`` and
trajectory, not the perturbation baselines' solver, not their notes (part of the privacy record).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpopt.linesearch import baselines as B
from dpopt.linesearch.algorithms import dp_blgd, dp_blsgd
from dpopt.models import LinearModel

#: Finite, accepted by LinearModel without a declared data_norm; x·w overflows to ±inf for most w.
EXTREME = np.array([1.7e308, 1.7e308, 1.7e308])


def _neighbours(extra, *, n=300, loss="logistic"):
    """``[D, D + {extra}]``: add/remove neighbours, with the public count declared (n_public = n)."""
    gen = np.random.default_rng(0)
    X = gen.normal(size=(n, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    return [LinearModel(loss, X, y, n_public=n),
            LinearModel(loss, np.vstack([X, extra]), np.append(y, 1.0), n_public=n)]


_RUNS = {
    "dp-blsgd": lambda m: dp_blsgd(m, epsilon=1.0, delta=1e-6, rng=1, planned_iterations=10),
    "dp-blsgd-trajectory": lambda m: dp_blsgd(m, epsilon=1.0, delta=1e-6, rng=1, planned_iterations=10,
                                              trajectory=True),
    "dp-blgd": lambda m: dp_blgd(m, epsilon=1.0, delta=1e-6, rng=1, planned_iterations=10),
    "dp-sgd": lambda m: B.dp_sgd(m, epsilon=1.0, delta=1e-6, rng=1, steps=10),
    "dp-agd": lambda m: B.dp_agd(m, epsilon=1.0, delta=1e-6, rng=1, max_iter=10),
}


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("method", sorted(_RUNS))
def test_an_overflowing_record_changes_no_error_and_no_warning(method, loss):
    """With the extreme record present the run releases x like its neighbour, with no warning
    (the oracle's data passes overflowed with RuntimeWarnings, and the non-private ``fun`` =
    F(x) raised FloatingPointError after the whole budget was spent: x was never returned)."""
    if loss == "squared" and method == "dp-sgd":
        run = lambda m: B.dp_sgd(m, epsilon=1.0, delta=1e-6, rng=1, steps=10, lr=0.5)  # noqa: E731
    else:
        run = _RUNS[method]
    results = []
    for model in _neighbours(EXTREME, loss=loss):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            results.append(run(model))
    plain, extreme = results
    assert np.all(np.isfinite(extreme.x)) and extreme.x.shape == plain.x.shape
    assert {type(e) for e in extreme.events} == {type(e) for e in plain.events}  # (adaptive counts may differ)
    assert np.isfinite(plain.fun) and np.ndim(extreme.fun) == 0  # a float (NaN where F is not finite)
    if extreme.trajectory is not None:
        assert extreme.trajectory.shape == plain.trajectory.shape


def _unit_ball_pair():
    """200 records in the unit ball, ``(X, y)``, and the replace-one neighbour whose record 0 is another."""
    gen = np.random.default_rng(3)
    X = gen.normal(size=(200, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X[:, 0] + 0.3 * gen.normal(size=200) > 0, 1.0, -1.0)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [0.6, -0.8, 0.0], -y[0]  # replace one record
    return (X, y), (X2, y2)


def test_objpert_notes_hold_no_solver_output():
    """OBJPERT's notes go into the privacy record (``release()``, reports): they must be the same on
    replace-one neighbours.  They printed the solver's final gradient norm, computed from the data."""
    records = [B.objective_perturbation(LinearModel("logistic", a, b, l2=1e-3), epsilon=1.0, rng=5)
               .privacy_record() for a, b in _unit_ball_pair()]
    assert records[0]["notes"] == records[1]["notes"]
    assert records[0]["events"] == records[1]["events"]


def _replaced_pair(seed: int, draws: int):
    """Ten records in the unit ball, ``(X, y)``, and the replace-one neighbour ``(X2, y)`` whose record 0
    is the ``draws``-th random unit vector after them (as the search that found the pair drew them)."""
    gen = np.random.default_rng(seed)
    X = gen.normal(size=(10, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.where(X[:, 0] + 0.3 * gen.normal(size=10) > 0, 1.0, -1.0)
    for _ in range(draws):
        v = gen.normal(size=3)
    X2 = X.copy()
    X2[0] = v / np.linalg.norm(v)
    return (X, y), (X2, y)


def _outpert_neighbours():
    """Replace-one neighbours (10 records in the unit ball, Huberized hinge, Λ = 1e-6) on one of which
    L-BFGS stops short of the certificate ‖∇J‖ ≤ 1e-7 (found by search; both are ordinary data)."""
    return [LinearModel("huberized_hinge", a, b, l2=1e-6) for a, b in _replaced_pair(12, 7)]


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_outpert_solver_certifies_on_both_neighbours(noise):
    """OUTPERT refuses to release when the solver cannot certify ‖∇J‖ ≤ tol; that refusal depended on
    the data (L-BFGS stopped at ‖∇J‖ = 5.4e-6 on one neighbour, 1.6e-11 on the other), so it was itself
    a release of one bit outside the guarantee.  Both neighbours now release, the same events."""
    results = [B.output_perturbation(m, epsilon=1.0, delta=1e-6 if noise == "gaussian" else 0.0, rng=0,
                                     noise=noise) for m in _outpert_neighbours()]
    assert all(r.info["grad_norm"] <= 1e-7 for r in results)
    assert results[0].privacy_record()["events"] == results[1].privacy_record()["events"]


def test_the_oracles_own_sensitivities_are_add_remove_only():
    """PrivateOracle's own releases (noisy gradients: C_grad; the line search's Armijo queries and
    NoisyMax's scores: C_obj) have add/remove-one sensitivities.  Under replace-one the clipped
    gradient sums of neighbours differ by 2·C_grad (one record's +C e₁ replaced by −C e₁) and an
    Armijo query by 2·C_obj; a replace-one ledger was charged C_grad and C_obj all the same.  Such a
    ledger is refused before anything is drawn; releases with the caller's own event stay open to it."""
    from dpopt.oracles import PrivateOracle
    from dpopt.privacy import FixedSizeSampler, Ledger
    from dpopt.privacy import events as ev

    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [-1.0, 0.0]])
    neighbours = [LinearModel("logistic", X, np.array(labels), l2=1e-3)
                  for labels in ([-1.0, 1.0, 1.0, -1.0], [1.0, 1.0, 1.0, -1.0])]  # record 0 replaced
    w = np.zeros(2)  # ∇f_0 = ∓x_0/2 on the two neighbours: ‖·‖ = C = 1/2, opposite signs
    sums = [m.per_example_clipped_grad_sum(w, None, 0.5)[0] for m in neighbours]
    assert np.linalg.norm(sums[0] - sums[1]) > 0.99  # the replace-one sensitivity is 2·C_grad = 1
    for sampler in (None, FixedSizeSampler(2, 4)):
        ledger = Ledger(5.0, 1e-6, "rdp", relation="replace_one")
        oracle = PrivateOracle(neighbours[0], ledger=ledger, rng=np.random.default_rng(0), normalizer=4,
                               sampler=sampler, c_grad=0.5)
        for name, args, options in (("noisy_gradient", (w, 0.1), {}), ("gaussian_gradient", (w, 1.0), {}),
                                    ("laplace_gradient", (w, 1.0), {}),
                                    ("line_search", (w, np.ones(2), np.array([1.0, 0.5])),
                                     {"alpha": 0.5, "budget": 0.5}),
                                    ("select_step", (w, np.ones(2), np.array([0.0, 1.0])), {"epsilon": 0.5})):
            with pytest.raises(ValueError, match="add_remove"):
                getattr(oracle, name)(*args, **options)
        assert ledger.events == []
        oracle.noisy_sum(w, ev.Gaussian(20.0, 1.0))  # the caller's own (replace-one) event
        assert len(ledger.events) == 1


def test_a_ray_weighted_by_the_datas_own_count_gets_no_private_search():
    """``Ray.of_model`` without ``weight`` weights the Armijo slope and the regularizer by the data's
    own n, which one record changes under add/remove: adding a zero record (its clipped loss is the
    same at every point) moved every Armijo query by α·η·‖g‖² + r-terms, here ~50 ≫ Δ_q = C_obj = 1,
    yet ``noisy_btls`` charged Δ_q for it.  The private search now refuses such a ray, nothing charged;
    the non-private one (infinite budget) keeps it."""
    import math

    from dpopt.oracles import Ray, armijo_queries, noisy_btls
    from dpopt.privacy import Ledger

    D, D_plus = _neighbours(np.zeros(3), n=20)
    w, g, steps = np.zeros(3), np.array([10.0, 0.0, 0.0]), np.array([1.0, 0.5, 0.25])
    q = [armijo_queries(Ray.of_model(LinearModel("logistic", m.X, m.y, l2=1e-3), w, g, cap=1.0), steps, 0.5)
         for m in (D, D_plus)]
    assert np.min(np.abs(q[1] - q[0])) > 10.0  # far beyond the sensitivity C_obj = 1
    ray = Ray.of_model(D, w, g, cap=1.0)
    ledger = Ledger(1.0)
    with pytest.raises(ValueError, match="own record count"):
        noisy_btls(ray, eta0=1.0, budget=0.5, ledger=ledger, rng=np.random.default_rng(0))
    assert ledger.events == []
    assert noisy_btls(ray, eta0=1.0, budget=math.inf, max_it=3) >= 0.0
    public = Ray.of_model(D, w, g, cap=1.0, weight=20.0)  # the public count: a private search
    noisy_btls(public, eta0=1.0, budget=0.5, ledger=ledger, rng=np.random.default_rng(0))
    assert len(ledger.events) == 1


def test_outpert_refuses_the_hinge_loss_on_both_neighbours_alike():
    """With the (non-smooth) hinge loss L-BFGS certified ‖∇J‖ ≤ tol on one of these replace-one
    neighbours (10 records in the unit ball, Λ = 0.3) and not on the other, so OUTPERT released x on
    one and raised on the other.  It now needs a smooth loss: the same refusal on both, before any
    data pass."""
    messages = []
    for data, y in _replaced_pair(1, 3):
        with pytest.raises(ValueError, match="smooth") as info:
            B.output_perturbation(LinearModel("hinge", data, y, l2=0.3), epsilon=1.0, rng=0)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_the_accelerated_continuation_cap_covers_its_rate_bound():
    """solve_erm's Nesterov continuation stops at a cap that must cover the scheme's rate: with
    y_k = (1 + β)x_k − βx_{k−1}, ‖∇J(y_k)‖ ≤ L(2‖x_k − x*‖ + ‖x_{k−1} − x*‖) ≤ 3√2 κ g₀ ρ^{(k−1)/2}.
    The cap had been sized for L(‖x_k − x*‖ + ‖x_{k−1} − x*‖) (2√2), short by about 0.8√κ iterations:
    at κ = 1e6 the bound at its cap was 1.5·tol."""
    import math

    from dpopt.models.reference import _iteration_cap

    for kappa in (1.0, 4.0, 1e2, 1e4, 1e6, 1e9):
        rho = 1.0 - 1.0 / math.sqrt(kappa)
        for g0 in (1e-9, 1e-3, 1.0, 1e3):
            for tol in (1e-12, 1e-7, 1e-4):
                cap = _iteration_cap(kappa, g0, tol)
                assert 3.0 * math.sqrt(2.0) * kappa * g0 * rho ** ((cap - 1) / 2) <= tol, (kappa, g0, tol)


def test_outpert_refusal_prints_no_solver_output():
    """Where tol is below what floating point can certify, OUTPERT refuses before anything is charged; its
    message printed the gradient norm the solver reached, computed from the data (different on these
    replace-one neighbours).  It is the same message on both now."""
    messages = []
    for data, y in _unit_ball_pair():
        with pytest.raises(RuntimeError, match="could not certify") as info:
            B.output_perturbation(LinearModel("logistic", data, y, l2=0.1), epsilon=1.0, rng=0, tol=1e-300)
        messages.append(str(info.value))
    assert messages[0] == messages[1] and "\n" not in messages[0]
