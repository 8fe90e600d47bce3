"""``dpopt.accelerated.minimize``: one entry point for the six methods of kuru2022."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_generator, check_finite_array, check_int, check_positive
from ..objectives import Objective
from ..oracles import run_ledger
from ..privacy import BudgetExceededError, Ledger
from ..privacy import events as ev
from ..result import DPResult
from . import algorithms
from .datapass import DataPass
from .oracle import NonPrivateGradientOracle, PrivateGradientOracle, l1_sensitivity
from .plan import Plan, canonical_method, laplace_events, make_plan

__all__ = ["minimize", "evaluate"]

# Largest number of (point × record) entries one objective evaluation holds in memory.
_EVAL_ENTRIES = 1 << 22


def _check_trajectory(trajectory):
    """None, a stride k ≥ 1, or a sorted array of iteration numbers ≥ 0."""
    if trajectory is False or trajectory is None:
        return None
    if trajectory is True:
        return 1
    if isinstance(trajectory, numbers.Integral) and not isinstance(trajectory, bool):
        return check_int("trajectory", trajectory)
    if isinstance(trajectory, list | tuple | np.ndarray):
        t = np.asarray(trajectory)
        if t.ndim != 1 or t.size == 0 or not np.issubdtype(t.dtype, np.integer) or np.any(t < 0):
            raise ValueError("trajectory as a sequence must list iteration numbers t >= 0")
        return np.unique(t)
    raise TypeError(
        "trajectory must be a bool, a positive int (every k-th iterate) or a sequence of "
        f"iteration numbers, got {type(trajectory).__name__}"
    )


def _start(x0, d: int, repetitions) -> tuple[np.ndarray, bool]:
    x0 = check_finite_array("x0", x0, ndim=(1, 2))
    if x0.shape[-1] != d:
        raise ValueError(
            f"x0 must have last dimension d={d} (the number of features), got shape {x0.shape}"
        )
    if repetitions is None:
        return np.atleast_2d(x0).copy(), x0.ndim == 1
    R = check_int("repetitions", repetitions)
    if x0.ndim == 2 and x0.shape[0] != R:
        raise ValueError(f"x0 has {x0.shape[0]} rows but repetitions={R}")
    return np.broadcast_to(x0, (R, d)).copy(), False


def evaluate(data: DataPass, points: np.ndarray) -> np.ndarray:
    """F at every point of ``points`` (..., d), in chunks that bound the memory: shape (...)."""
    flat = points.reshape(-1, points.shape[-1])
    rows = max(1, _EVAL_ENTRIES // data.n)
    out = np.concatenate([data.value(flat[i : i + rows]) for i in range(0, len(flat), rows)])
    return out.reshape(points.shape[:-1])


def _diagnostic(objective: Objective, oracle, points: np.ndarray) -> np.ndarray:
    """F at ``points`` on the objective's own rows, for the non-private ``fun`` and trajectory.

    It comes after the run has spent its budget, so it never raises or warns: F is NaN where a row
    the oracle projected makes it overflow (or exceed float32), instead of an error or warning on
    the one neighbour that holds such a record.
    """
    with np.errstate(all="ignore"):
        try:
            evaluator = oracle.data if oracle.rows_projected == 0 else DataPass(objective, oracle.data.precision)
            return evaluate(evaluator, points)
        except (ValueError, FloatingPointError):
            return np.full(points.shape[:-1], np.nan)


def _run(plan: Plan, oracle, X0: np.ndarray, record):
    if plan.method == "dp-gd":
        return algorithms.gradient_descent(oracle, X0, plan.steps, plan.scales, record=record)
    if plan.method == "dp-hb":
        return algorithms.heavy_ball(
            oracle, X0, plan.steps[0], plan.momenta[0], plan.scales, record=record
        )
    return algorithms.nesterov(
        oracle, X0, plan.steps, plan.momenta, plan.scales, restarts=plan.restarts, record=record
    )


def minimize(
    objective: Objective,
    x0,
    epsilon: float = 1.0,
    method: str = "nag-opt",
    *,
    feature_bound: float,
    iterations: int = 100,
    batch_size: int | None = None,
    step: float | None = None,
    momentum: float | None = None,
    repetitions: int | None = None,
    trajectory=False,
    rng=None,
    L: float | None = None,
    mu: float | None = None,
    initial_error: float = 10.0,
    adjust_iterations: bool = True,
    masg_p: int = 1,
    masg_first_stage: int | None = None,
    precision: str | None = None,
    private: bool = True,
    ledger: Ledger | None = None,
    secure_noise: bool = False,
) -> DPResult:
    """Minimize ``objective`` with an ε-DP accelerated method of kuru2022.

    Parameters
    ----------
    objective:
        :class:`dpopt.objectives.Objective` — a linear loss with bounded
        derivative (e.g. logistic) plus a regularizer (e.g. ``L2(λ)``, μ = 2λ).
    x0:
        Starting point (d,) (or (R, d)).
    epsilon:
        The pure-DP budget under the replace-one relation; the run spends
        exactly this much.
    method:
        ``"gd"``, ``"hb"``, ``"nag"``, ``"nag-opt"``, ``"masg"``, ``"masg-opt"``
        (or the paper's names ``"dp-gd"``, …); see :mod:`dpopt.accelerated.plan`.
    feature_bound:
        Public bound on ‖u‖₁ of every feature row (kuru2022 §5: 20).  Rows are
        projected onto it; the sensitivity is S₁ = 2·feature_bound (eq. (5.2)).
    iterations:
        T (the -opt methods may stop at T' ≤ T, Remark 4.1).
    batch_size:
        m, drawn without replacement per iteration (default n: full batch).
    step, momentum:
        α (default 1/L) and β (default (1 − √(μα))/(1 + √(μα))).
    repetitions:
        R independent runs in one batch (x of shape (R, d)); each has its
        own minibatches and noise, and they share every data pass.  The
        privacy record describes one run (for experiments); releasing all
        R runs of the same data spends R·ε, stated in ``privacy_all``.
    trajectory:
        ``True`` records F(x_t) for t = 0..T; an int k every k-th iterate;
        a sequence of ints those iterations (the last is always included).
        ``info["trajectory_t"]`` holds the t's.
    rng:
        Seed, ``numpy.random.Generator`` or None (OS entropy).
    L, mu:
        Smoothness and strong convexity.  ``mu`` defaults to the
        regularizer's (2λ, public).  ``L`` defaults to kuru2022's
        λ_max(UᵀU/n) + 2λ computed *from the data*, as the paper does; that
        computation is not covered by the privacy guarantee, so the result's
        guarantee is then "conditional".  Pass a public ``L`` for "exact".
    initial_error:
        The guess E₀ of Remark 4.1 for choosing T' (§5 uses 10).
    adjust_iterations:
        Whether the -opt methods shorten T to T'.
    masg_p, masg_first_stage:
        p and n₁ of eq. (4.7) (n₁ defaults to ⌈√κ ln κ⌉).
    precision:
        ``"float64"``, or ``"float32"`` for the fast data passes (relative error ~1e-7);
        default: the objective's own ``precision``.
    private:
        ``False`` runs the same recursion with exact minibatch gradients and
        no ledger charges (for tests and non-private references): the result
        has guarantee "none".
    ledger:
        A pure-DP :class:`~dpopt.privacy.Ledger` under the replace-one relation
        to spend ``epsilon`` from (a sub-budget ``ledger.child(epsilon)`` where
        the ledger offers one; :func:`dpopt.oracles.run_ledger`); it refuses a
        release that would overspend it before the noise is drawn.  Default: a
        new ledger of ``epsilon``.

    Returns
    -------
    DPResult
        ``x`` (d,) or (R, d); ``fun`` = F(x_T) (not a private release);
        ``privacy`` = (ε, 0) pure; ``events`` = one amplified Laplace event per
        iteration; ``trajectory`` (K,) or (K, R); ``info`` = the plan
        (budgets ε_t, scales b_t, steps, momenta, stages, T, T'), S₁, m, L, μ.
    """
    if not isinstance(objective, Objective):
        raise TypeError(
            f"objective must be a dpopt.objectives.Objective, got {type(objective).__name__}"
        )
    name = canonical_method(method)
    epsilon = check_positive("epsilon", epsilon)
    if not isinstance(private, bool):
        raise TypeError("private must be a bool")
    record = _check_trajectory(trajectory)
    X0, single = _start(x0, objective.dim, repetitions)
    generator = as_generator(rng)

    if L is not None:
        L_source = "given"
    elif step is None or name in ("dp-nag-opt", "dp-masg", "dp-masg-opt"):
        L = objective.constants("kuru2022").L
        L_source = "data"
    else:
        L_source = "unused"
    if mu is None:
        reg_mu = float(getattr(objective.regularizer, "strong_convexity", 0.0))
        mu = reg_mu if reg_mu > 0 else None
    S1 = l1_sensitivity(objective.loss, feature_bound)
    plan = make_plan(
        name,
        epsilon=epsilon,
        iterations=iterations,
        n=objective.n,
        batch_size=batch_size,
        d=objective.dim,
        sensitivity=S1,
        L=L,
        mu=mu,
        step=step,
        momentum=momentum,
        initial_error=initial_error,
        adjust_iterations=adjust_iterations,
        masg_p=masg_p,
        masg_first_stage=masg_first_stage,
        secure_size=X0.size if private and secure_noise else 0,  # one release: the (R, d) noisy gradients
    )

    if private:
        ledger, _, _ = run_ledger(ledger, epsilon, 0.0 if ledger is None else None, accountant="pure",
                                  relation="replace_one")
    else:  # a reference run charges nothing, to no one
        ledger = Ledger(epsilon, relation="replace_one")
    common = dict(
        feature_bound=feature_bound, batch_size=plan.batch_size, rng=generator, precision=precision
    )
    if private:
        oracle = PrivateGradientOracle(objective, ledger=ledger, secure_noise=bool(secure_noise), **common)
        planned = ev.Composed(laplace_events(plan.scales[: plan.iterations], sensitivity=oracle.sensitivity, n=plan.n,
                                             batch_size=plan.batch_size,
                                             secure_size=X0.size if secure_noise else 0))  # as the oracle charges
        if not ledger.can_afford(planned):  # the whole plan is known: refuse before any release
            raise BudgetExceededError(
                f"the planned {plan.iterations} releases would overspend the ledger "
                f"(remaining epsilon {ledger.remaining().epsilon:.6g}); nothing was released"
            )
    else:
        oracle = NonPrivateGradientOracle(objective, **common)
    with np.errstate(over="ignore", invalid="ignore"):  # iterates past the float range: inf/NaN (post-processing),
        X, t_rec, x_rec = _run(plan, oracle, X0, record)  # never a warning on one neighbour only

    fun = _diagnostic(objective, oracle, X)
    traj = _diagnostic(objective, oracle, x_rec) if record is not None else None
    if single:
        X, fun = X[0], float(fun[0])
        traj = None if traj is None else traj[:, 0]

    if not private:
        guarantee, notes = "none", "non-private reference run (exact minibatch gradients, no noise)"
    elif L_source != "data":
        guarantee, notes = "exact", ""
    else:
        guarantee = "conditional"
        notes = (
            "ε-DP of the released iterates holds given the step size and momentum; L was computed "
            "from the data (kuru2022 §5) and that computation is not privatized. Pass a public L "
            "for an unconditional guarantee."
        )
    info = plan.info()
    info.update(
        L=L,
        mu=mu,
        L_source=L_source,
        feature_bound=oracle.feature_bound,
        rows_projected=oracle.rows_projected,
        precision=oracle.data.precision,
        repetitions=None if single else X.shape[0],
        trajectory_t=t_rec.tolist(),
        private=private,
    )
    return DPResult.from_ledger(
        ledger,
        repetitions=1 if single else X.shape[0],
        x=X,
        fun=fun,
        method=plan.method,
        nit=plan.iterations,
        trajectory=traj,
        info=info,
        guarantee=guarantee,
        notes=notes,
    )
