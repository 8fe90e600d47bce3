"""``dpopt.accelerated.minimize``: results, privacy accounting, plans and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpopt.accelerated import PrivateGradientOracle, algorithms, make_plan, minimize
from dpopt.objectives import Objective
from dpopt.privacy import BudgetExceededError, Ledger, PureDPAccountant
from dpopt.privacy import events as ev

METHODS = ["gd", "hb", "nag", "nag-opt", "masg", "masg-opt"]
B = 5.0  # ‖u‖₁ ≤ d for features in [0, 1]^5


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("batch_size", [None, 30])
@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_ledger_total_is_epsilon(problem, method, batch_size, epsilon):
    res = minimize(
        problem, np.full(5, 3.0), epsilon, method, feature_bound=B, iterations=150,
        batch_size=batch_size, repetitions=2, rng=1,
    )  # fmt: skip
    assert res.privacy.epsilon == pytest.approx(epsilon, rel=1e-12)
    assert res.privacy.delta == 0.0 and res.privacy.notion == "pure"
    assert res.relation == "replace_one"
    assert len(res.events) == res.nit
    # re-running an accountant over the event log reproduces the guarantee
    acc = PureDPAccountant()
    for event in res.events:
        acc.compose(ev.from_json(event.to_json()))
    assert acc.get_epsilon() == pytest.approx(epsilon, rel=1e-12)
    assert math.fsum(res.info["budgets"]) == pytest.approx(epsilon, rel=1e-12)
    if batch_size is not None:
        assert all(isinstance(e, ev.Subsampled) and e.rate == 30 / 300 for e in res.events)


def test_result_shapes_and_trajectory(problem):
    res = minimize(
        problem, np.zeros(5), 1.0, "nag", feature_bound=B, iterations=40, trajectory=True, rng=0
    )
    assert res.x.shape == (5,) and isinstance(res.fun, float)
    assert res.trajectory.shape == (41,) and res.info["trajectory_t"] == list(range(41))
    assert res.trajectory[-1] == pytest.approx(res.fun)
    assert res.trajectory[0] == pytest.approx(problem.value(np.zeros(5)))
    batch = minimize(
        problem, np.zeros(5), 1.0, "dp-MASG", feature_bound=B, iterations=40, repetitions=3,
        trajectory=7, rng=0,
    )  # fmt: skip
    assert batch.method == "dp-masg"
    assert batch.x.shape == (3, 5) and batch.fun.shape == (3,)
    assert batch.info["trajectory_t"] == [0, 7, 14, 21, 28, 35, 40]
    assert batch.trajectory.shape == (7, 3)
    np.testing.assert_allclose(batch.fun, problem.value(batch.x), rtol=1e-12)
    assert not np.allclose(batch.x[0], batch.x[1])  # independent repetitions
    grid = minimize(
        problem,
        np.zeros(5),
        1.0,
        "gd",
        feature_bound=B,
        iterations=40,
        trajectory=[0, 5, 99],
        rng=0,
    )
    assert grid.info["trajectory_t"] == [0, 5, 40]


def test_same_seed_same_result(problem):
    kwargs = dict(feature_bound=B, iterations=30, batch_size=50, repetitions=2)
    a = minimize(problem, np.zeros(5), 1.0, "nag-opt", rng=11, **kwargs)
    b = minimize(problem, np.zeros(5), 1.0, "nag-opt", rng=11, **kwargs)
    c = minimize(problem, np.zeros(5), 1.0, "nag-opt", rng=12, **kwargs)
    np.testing.assert_array_equal(a.x, b.x)
    assert not np.allclose(a.x, c.x)


def test_precision_follows_the_objective_unless_given(problem):
    kwargs = dict(feature_bound=B, iterations=30, batch_size=50, repetitions=2, rng=11)
    fast = problem.with_precision("float32")
    assert minimize(problem, np.zeros(5), 1.0, "nag-opt", **kwargs).info["precision"] == "float64"
    single = minimize(fast, np.zeros(5), 1.0, "nag-opt", **kwargs)
    assert single.info["precision"] == "float32"
    double = minimize(fast, np.zeros(5), 1.0, "nag-opt", precision="float64", **kwargs)
    assert double.info["precision"] == "float64"
    # same minibatches and noise: the two precisions differ by rounding only
    np.testing.assert_allclose(single.x, double.x, rtol=1e-4, atol=1e-4)


def test_guarantee_kinds(problem):
    L = problem.constants("kuru2022").L
    from_data = minimize(problem, np.zeros(5), 1.0, "nag", feature_bound=B, iterations=10, rng=0)
    assert from_data.guarantee == "conditional" and "not privatized" in from_data.notes
    public = minimize(problem, np.zeros(5), 1.0, "nag", feature_bound=B, iterations=10, L=L, rng=0)
    assert public.guarantee == "exact"
    gd = minimize(problem, np.zeros(5), 1.0, "gd", feature_bound=B, iterations=10, step=0.1, rng=0)
    assert gd.guarantee == "exact" and gd.info["L_source"] == "unused"
    ref = minimize(problem, np.zeros(5), 1.0, "nag", feature_bound=B, iterations=10, private=False)
    assert ref.guarantee == "none" and ref.privacy.epsilon == 0.0


def test_opt_methods_shorten_and_spend_more_at_the_end(problem):
    res = minimize(problem, np.zeros(5), 1.0, "nag-opt", feature_bound=B, iterations=2000, rng=0)
    assert res.nit < 2000 and res.info["requested_iterations"] == 2000
    assert np.all(np.diff(res.info["budgets"]) > 0)  # ε_t ∝ a_{T,t}^{1/3} grows with t
    fixed = minimize(
        problem,
        np.zeros(5),
        1.0,
        "nag-opt",
        feature_bound=B,
        iterations=200,
        adjust_iterations=False,
        rng=0,
    )
    assert fixed.nit == 200


def test_private_run_makes_progress(problem_factory):
    """With a large budget on a large data set DP-NAG-opt lands close to the optimum."""
    problem = problem_factory(n=5000, d=5, seed=3)
    ref = minimize(
        problem, np.zeros(5), 1.0, "nag", feature_bound=B, iterations=2000, private=False
    )
    res = minimize(
        problem, np.full(5, 3.0), 50.0, "nag-opt", feature_bound=B, iterations=300, rng=0
    )
    start = problem.value(np.full(5, 3.0))
    assert res.fun - ref.fun < 0.01 * (start - ref.fun)


def test_plan_matches_the_run(problem):
    L, mu = problem.constants("kuru2022").L, problem.regularizer.strong_convexity
    plan = make_plan(
        "dp-masg-opt", epsilon=1.0, iterations=500, n=problem.n, batch_size=30, d=5,
        sensitivity=2 * B, L=L, mu=mu,
    )  # fmt: skip
    res = minimize(
        problem,
        np.zeros(5),
        1.0,
        "masg-opt",
        feature_bound=B,
        iterations=500,
        batch_size=30,
        L=L,
        rng=0,
    )
    assert res.nit == plan.iterations
    np.testing.assert_allclose(res.info["scales"], plan.scales)
    charged = [e.event.scale for e in res.events]
    np.testing.assert_allclose(charged, plan.scales, rtol=1e-15)


def test_bad_input(problem):
    x0 = np.zeros(5)
    ok = dict(feature_bound=B, iterations=10)
    cases = [
        (ValueError, "epsilon", dict(epsilon=0.0)),
        (ValueError, "epsilon", dict(epsilon=-1.0)),
        (ValueError, "method", dict(method="adam")),
        (ValueError, "batch_size", dict(batch_size=301)),
        (ValueError, "batch_size", dict(batch_size=0)),
        (TypeError, "batch_size", dict(batch_size=2.5)),
        (ValueError, "iterations", dict(iterations=0)),
        (ValueError, "repetitions", dict(repetitions=0)),
        (ValueError, "feature_bound", dict(feature_bound=0.0)),
        (ValueError, "momentum cannot be set for MASG", dict(method="masg", momentum=0.5)),
        (ValueError, "momentum", dict(method="hb", momentum=1.0)),
        (ValueError, "steps must be <= 1/L", dict(method="nag-opt", step=2.0)),
        (ValueError, r"mu\*step < 1", dict(method="nag", step=20.0)),
        (ValueError, "initial_error", dict(method="nag-opt", initial_error=-1.0)),
        (ValueError, "precision", dict(precision="float16")),
        (TypeError, "trajectory", dict(trajectory="yes")),
        (ValueError, "trajectory", dict(trajectory=[-1, 2])),
        (ValueError, "mu must be <= L", dict(L=0.001)),
    ]
    for exc, match, kwargs in cases:
        args = {**ok, **kwargs}
        eps = args.pop("epsilon", 1.0)
        method = args.pop("method", "nag")
        with pytest.raises(exc, match=match):
            minimize(problem, x0, eps, method, **args)
    with pytest.raises(ValueError, match="x0"):
        minimize(problem, np.zeros(4), **ok)
    with pytest.raises(ValueError, match="x0"):
        minimize(problem, np.array([np.nan, 0, 0, 0, 0]), **ok)
    with pytest.raises(ValueError, match="repetitions"):
        minimize(problem, np.zeros((2, 5)), repetitions=3, **ok)
    with pytest.raises(TypeError, match="Objective"):
        minimize(problem.X, x0, **ok)
    with pytest.raises(TypeError, match="feature_bound"):
        minimize(problem, x0, iterations=10)
    unregularized = Objective("logistic", problem.X, problem.y)
    with pytest.raises(ValueError, match="needs mu"):
        minimize(unregularized, x0, **ok)
    with pytest.raises(ValueError, match="needs L"):
        make_plan("nag-opt", epsilon=1.0, iterations=5, n=10, d=2, sensitivity=1.0, mu=0.1)


def test_budget_cannot_be_overspent(problem):
    """A plan whose budgets exceed the ledger is refused by the privacy core."""
    plan = make_plan(
        "dp-nag", epsilon=2.0, iterations=10, n=problem.n, d=5, sensitivity=2 * B, L=1.0, mu=0.1
    )
    book = Ledger(1.0, relation="replace_one")
    oracle = PrivateGradientOracle(
        problem, feature_bound=B, ledger=book, rng=np.random.default_rng(0)
    )
    with pytest.raises(BudgetExceededError):
        algorithms.nesterov(oracle, np.zeros((1, 5)), plan.steps, plan.momenta, plan.scales)
    assert book.spent().epsilon <= 1.0 * (1 + 1e-9)
    assert len(book.events) == 5  # the sixth release was refused before drawing noise


def test_runs_spend_from_a_given_ledger_and_refuse_before_any_release(problem):
    session = Ledger(1.0, relation="replace_one")
    runs = [minimize(problem, np.full(5, 3.0), 0.5, "nag-opt", feature_bound=B, iterations=40,
                     batch_size=30, rng=k, ledger=session) for k in range(2)]
    assert session.events == runs[0].events + runs[1].events  # the session's log is the composed record
    assert all(r.privacy.epsilon == pytest.approx(0.5, rel=1e-12) for r in runs)
    assert session.spent().epsilon <= 1.0
    before = session.to_json()
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        minimize(problem, np.full(5, 3.0), 0.5, "nag-opt", feature_bound=B, iterations=40, batch_size=30,
                 rng=3, ledger=session)
    assert session.to_json() == before
    # an (epsilon, delta) session composes the pure run by its own accountant
    rdp = Ledger(2.0, 1e-6, "rdp", relation="replace_one")
    res = minimize(problem, np.full(5, 3.0), 0.5, "gd", feature_bound=B, iterations=20, rng=0, ledger=rdp)
    assert res.privacy.notion == "pure" and rdp.events == res.events and 0 < rdp.spent().epsilon < 2.0
    with pytest.raises(ValueError, match="relation"):
        minimize(problem, np.full(5, 3.0), 0.5, "gd", feature_bound=B, iterations=20, rng=0,
                 ledger=Ledger(1.0))


@pytest.mark.parametrize("value", [1e17, 1e200, 1e308])
def test_a_huge_record_neither_warns_nor_changes_the_release_structure(value, problem_factory):
    """Replace-one neighbours D, D' (record 0 replaced by a row of ``value``): projecting that row onto
    the L1 ball of radius feature_bound warned on D' only — "divide by zero" from 1e16·B on (Duchi's ρ
    rounded to 0, θ infinite), "overflow encountered in reduce" near the largest float — and the
    non-private F(x_T), evaluated on the unprojected row after the whole budget was spent, warned
    ("overflow encountered in matmul", dp-gd) or raised ("X has values beyond the range of float32")
    on D' only.  Now neither neighbour warns or raises, the row lands in the ball (at 0: rounding keeps
    nothing of it) and the records agree."""
    import warnings

    from dpopt.objectives import L2, project_rows

    D = problem_factory(n=30, d=3)
    X = D.X.copy()
    X[0] = value
    neighbour = Objective("logistic", X, D.y, L2(0.05))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        projected, count = project_rows(X, 2.0, "l1")
        for method, precision in (("gd", "float64"), ("nag-opt", "float32")):
            runs = [minimize(obj, np.zeros(3), 1.0, method, feature_bound=2.0, L=1.0, iterations=10, rng=0,
                             precision=precision, trajectory=True) for obj in (D, neighbour)]  # fmt: skip
            assert runs[0].privacy_record() == runs[1].privacy_record() and runs[0].x.shape == runs[1].x.shape
    assert count >= 1 and np.all(np.isfinite(projected)) and np.abs(projected).sum(axis=1).max() <= 2.0


@pytest.mark.parametrize("method, epsilon", [("dp-gd", 0.1), ("dp-nag-opt", float(np.geomspace(1e-5, 10, 40)[13])),
                                             ("dp-masg-opt", float(np.geomspace(1e-5, 10, 40)[13]))])
def test_a_secure_run_is_planned_with_the_events_it_charges(method, epsilon):
    """The scales were fitted to the budget with continuous Laplace events; a secure release charges the discrete
    event of the same epsilon up to rounding, one ulp over: at epsilon = 0.1 dp-gd charged 99 of its 100 releases
    and was refused at the last (BudgetExceededError, the ledger holding 0.099), dp-nag-opt and dp-masg-opt at
    epsilon = 0.001 at the first (DPLogisticRegression(epsilon=0.1, method='dp-nag-opt', secure_noise=True) could
    not fit); 7 of 40 epsilons in [1e-5, 10] failed so for every method."""
    from dpopt.objectives import L2

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (50, 3))
    X /= np.linalg.norm(X, axis=1).max()
    objective = Objective("logistic", X, np.where(X[:, 0] > 0, 1.0, -1.0), L2(5e-4))
    ledger = Ledger(100.0, relation="replace_one")
    result = minimize(objective, np.zeros(3), epsilon, method, feature_bound=math.sqrt(3), L=0.251, ledger=ledger,
                      rng=0, secure_noise=True, iterations=100)
    assert len(ledger.events) == result.nit and ledger.spent().epsilon <= epsilon
    assert all(isinstance(getattr(e, "event", e), ev.DiscreteLaplace) for e in ledger.events)


def test_repetitions_state_the_guarantee_of_all_runs_together(problem):
    """x holds R independent runs on the same data: the record is one run's, and privacy_all (also in the
    record and the repr) is the R-fold composition that releasing all of them costs (pure: R·ε)."""
    res = minimize(problem, np.full(5, 3.0), 0.5, "nag", feature_bound=B, iterations=20, repetitions=4, rng=1)
    assert res.repetitions == 4 and res.privacy.epsilon == pytest.approx(0.5, rel=1e-12)
    assert res.privacy_all.epsilon == pytest.approx(2.0, rel=1e-12) and res.privacy_all.notion == "pure"
    record = res.release()["privacy"]
    assert record["repetitions"] == 4 and record["all_repetitions"]["epsilon"] == pytest.approx(2.0, rel=1e-12)
    assert "4 runs: epsilon=2" in repr(res)
    single = minimize(problem, np.full(5, 3.0), 0.5, "nag", feature_bound=B, iterations=20, rng=1)
    assert single.repetitions == 1 and single.privacy_all is None
    assert "repetitions" not in single.privacy_record() and "runs" not in repr(single)
