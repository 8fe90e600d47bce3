"""The four ε-DP mechanisms of han2014 §4 for min_{x∈P} max_i (a_iᵀx + b_i) with private b.

Every mechanism charges a :class:`~dpopt.privacy.Ledger` whose relation is
‖b − b′‖∞ ≤ b_max (eq. (4), :data:`~dpopt.piecewise.problem.RELATION`) through
:mod:`dpopt.privacy` before anything is released, runs R repetitions in one
call (``repetitions=R`` → ``x`` of shape (R, d); one ledger describes each
repetition) and returns a :class:`~dpopt.result.DPResult`.  ``fun`` is f at
the released points with the true b, for reporting only.

=====================  ==================  =========================================  ============
method                 paper               privacy                                     guarantee
=====================  ==================  =========================================  ============
``laplace-data``       §4.1, Thm 16        vector Laplace on b, Δ₂ = √m·b_max          exact
``laplace-solution``   §4.2, Thm 9         vector Laplace on x_opt, Δ₂ = diam(P)       exact
``exponential``        §4.3, Thm 19        exponential mechanism, Δu = b_max (Lem 18)  approximate
``subgradient``        §4.4, Alg. 1 + 2    k exponential-mechanism draws at ε/k        exact
=====================  ==================  =========================================  ============

Floating-point-safe noise (``secure_noise=True``, Mironov 2012; :mod:`dpopt.privacy.secure`)
is offered by the methods in :data:`SECURE_METHODS`, at the same ε:

- ``subgradient``: each selection is the exact exponential mechanism
  (``mechanisms.exponential(..., secure_noise=True)``: integer scores on a grid,
  rational acceptance probabilities), charged as the same ``Exponential(ε/k)``.
- ``laplace-data`` and ``laplace-solution``: the vector Laplace noise of Thm 9
  (density ∝ exp(−‖w‖₂/b)) has no exact sampler on a grid — its lattice version is not a
  product of one-dimensional laws, and rejection from an ℓ1 proposal accepts with an
  irrational probability exp(−‖z‖₂/b + …) at a rate that falls exponentially with the
  dimension (≈ 0.006 at d = 20; b has m ≤ 200 coordinates here) — so they release §3's
  alternative to Thm 9, i.i.d. Laplace noise per coordinate calibrated to the query's
  L1 sensitivity (m·b_max for b under (4); the L1 diameter of P for x_opt), as exact
  discrete Laplace on a power-of-two grid charged ``DiscreteLaplace`` at ε.  The L1
  sensitivity is √(dimension) times the L2 one on these queries, so the per-coordinate
  noise is √(2m/(m+1)) ≤ √2 times larger in standard deviation than the vector Laplace's.
- ``exponential`` refuses: its Metropolis sampler over the continuous set P draws
  floating-point Gaussian proposals and uniforms, and no exact sampler of that density
  on P is known.
"""

from __future__ import annotations

import numpy as np

from .._validation import as_generator, check_int, check_iterations, check_positive
from ..privacy import BudgetExceededError, Ledger, equal_share
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from ..privacy.calibration import fit_scales_to_budget
from ..privacy.mcmc import metropolis_exponential
from ..result import DPResult
from .problem import RELATION, PiecewiseAffineProblem
from .solver import EpigraphLP
from .subgradient import projected_subgradient

__all__ = ["laplace_data", "laplace_solution", "exponential", "subgradient", "new_ledger", "SECURE_METHODS"]

#: han2014 §5.1 defaults for the exponential mechanism's sampler.
MCMC_STEPS = 5000
MCMC_ETA = 0.1
#: §5.1: "the number of iterations is fixed at 100".
SUBGRADIENT_ITERATIONS = 100
#: The methods that accept ``secure_noise=True`` (module docstring).
SECURE_METHODS = ("laplace-data", "laplace-solution", "subgradient")


def new_ledger(epsilon: float) -> Ledger:
    """A pure ε-DP ledger for one run under han2014's adjacency (4)."""
    return Ledger(epsilon, relation=RELATION)


def _setup(problem, epsilon, repetitions, rng, ledger):
    if not isinstance(problem, PiecewiseAffineProblem):
        raise TypeError(f"problem must be a PiecewiseAffineProblem, got {type(problem).__name__}")
    epsilon = check_positive("epsilon", epsilon)
    R = 1 if repetitions is None else check_int("repetitions", repetitions)
    if ledger is None:
        ledger = new_ledger(epsilon)
    else:
        mech.check_ledger(ledger, RELATION, why=" (han2014 eq. (4))")
    return epsilon, R, as_generator(rng), ledger


def _perturb(value, *, l2: float, l1: float, epsilon: float, ledger, rng, secure_noise: bool, inflation=None):
    """(value + noise, sensitivity, scale, grid): Thm 9's vector Laplace, or with ``secure_noise`` §3's i.i.d. one.

    Without ``secure_noise`` the noise has density ∝ exp(−‖w‖₂/scale) for the L2 sensitivity
    ``l2``; with it, exact discrete Laplace per coordinate on a grid (``grid``, else None) for
    the L1 sensitivity ``l1`` (module docstring).  scale = sensitivity/ε, times ``inflation``
    when one is given (``paper_scaling``; the ledger then records the smaller ε it costs).
    """
    sensitivity = l1 if secure_noise else l2
    if inflation is None:
        scale = ev.scale_for_epsilon(sensitivity, epsilon)
    else:
        scale = sensitivity / epsilon * inflation
    # the charged event's ε is Δ/b only up to rounding (an ulp over ε refused some ε): fitted to ε as charged
    def charged(b: float) -> ev.Event:
        if secure_noise:
            return mech.secure_event(ev.Laplace(b, sensitivity), np.size(value))[0]
        return ev.VectorLaplace(b, sensitivity)

    scale = float(fit_scales_to_budget([scale], lambda s: [charged(float(s[0]))], lambda: new_ledger(epsilon))[0])
    common = dict(sensitivity=sensitivity, scale=scale, ledger=ledger, rng=rng)
    if not secure_noise:
        return mech.vector_laplace(value, **common), sensitivity, scale, None
    grid = mech.secure_event(ev.Laplace(scale, sensitivity), np.size(value))[1]
    return mech.laplace(value, secure_noise=True, **common), sensitivity, scale, grid


def _result(
    problem,
    ledger,
    X,
    repetitions,
    *,
    method,
    nit,
    guarantee="exact",
    notes="",
    info,
    trajectory=None,
):
    x = X if repetitions is not None else X[0]
    info = {
        "b_max": problem.b_max,
        "m": problem.m,
        "d": problem.d,
        "repetitions": X.shape[0],
        **info,
    }
    return DPResult.from_ledger(
        ledger,
        repetitions=X.shape[0] if repetitions is not None else 1,
        x=x,
        fun=problem.value(x),
        method=method,
        nit=nit,
        guarantee=guarantee,
        notes=notes,
        info=info,
        trajectory=trajectory,
    )


def laplace_data(problem, epsilon, *, repetitions=None, rng=None, ledger=None, secure_noise=False) -> DPResult:
    """Mechanism 1 (§4.1, Thm 16): solve the problem with privatized data b + w_P.

    w_P has density ∝ exp(−ε‖w_P‖₂/(√m·b_max)): b has L2 sensitivity √m·b_max
    under (4).  Solving the perturbed LP is post-processing (Thm 14); one LP
    per repetition.  ``secure_noise=True``: exact discrete Laplace per coordinate
    for b's L1 sensitivity m·b_max instead (module docstring).
    """
    epsilon, R, rng, ledger = _setup(problem, epsilon, repetitions, rng, ledger)
    noisy_b, sensitivity, scale, grid = _perturb(
        np.broadcast_to(problem.b, (R, problem.m)),
        l2=np.sqrt(problem.m) * problem.b_max,
        l1=problem.m * problem.b_max,
        epsilon=epsilon,
        ledger=ledger,
        rng=rng,
        secure_noise=secure_noise,
    )
    X = EpigraphLP(problem.A, problem.polytope).solve(noisy_b).x
    noise = (
        "exact discrete Laplace noise per coordinate of b (L1 sensitivity m*b_max, han2014 §3) on the grid "
        f"{grid:g}"
        if secure_noise
        else "vector Laplace noise on b (L2 sensitivity sqrt(m)*b_max)"
    )
    return _result(
        problem,
        ledger,
        X,
        repetitions,
        method="laplace-data",
        nit=1,
        info={"sensitivity": sensitivity, "noise_scale": scale, "secure_noise": bool(secure_noise), "grid": grid},
        notes=f"Thm 16: {noise}, then the perturbed LP is solved exactly (post-processing).",
    )


def laplace_solution(
    problem,
    epsilon,
    *,
    repetitions=None,
    rng=None,
    ledger=None,
    project: bool = True,
    paper_scaling: bool = False,
    secure_noise: bool = False,
) -> DPResult:
    """Mechanism 2 (§4.2, Thm 9): x_opt + w_S, projected back onto P by default.

    x_opt(D) ∈ P, so its L2 sensitivity is at most Δ = diam(P) and w_S with
    density ∝ exp(−ε‖w_S‖₂/Δ) gives ε-DP by Thm 9: no extra √d is needed.
    ``paper_scaling=True`` reproduces §4.2's exp(−ε‖w_S‖₂/(√d·Δ)), whose noise
    is √d times larger; the ledger then records what that noise really costs,
    ε/√d.  The projection onto P (``project=True``) is post-processing
    (Thm 14), free of privacy cost, and never increases the distance to x_opt.
    ``secure_noise=True``: exact discrete Laplace per coordinate for the L1 diameter
    of P instead (module docstring); unprojected outputs then lie on its grid.
    """
    epsilon, R, rng, ledger = _setup(problem, epsilon, repetitions, rng, ledger)
    x_opt = EpigraphLP(problem.A, problem.polytope).solve(problem.b).x
    X, diameter, scale, grid = _perturb(
        np.broadcast_to(x_opt, (R, problem.d)),
        l2=problem.polytope.diameter,
        l1=problem.polytope.l1_diameter,
        epsilon=epsilon,
        ledger=ledger,
        rng=rng,
        secure_noise=secure_noise,
        inflation=np.sqrt(problem.d) if paper_scaling else 1.0,
    )
    if project:
        X = problem.polytope.project(X)
    if secure_noise:
        notes = f"exact discrete Laplace noise per coordinate of x_opt (L1 diameter of P, han2014 §3), grid {grid:g}"
    else:
        notes = "Thm 9: vector Laplace noise on x_opt with L2 sensitivity diam(P)"
    notes += (
        " and the paper's extra sqrt(d) factor (spends only epsilon/sqrt(d))"
        if paper_scaling
        else ""
    )
    notes += (
        "; projected back onto P (post-processing, no privacy cost)."
        if project
        else "; not projected."
    )
    return _result(
        problem,
        ledger,
        X,
        repetitions,
        method="laplace-solution",
        nit=1,
        notes=notes,
        info={
            "sensitivity": diameter,
            "diameter_is_exact": problem.polytope.diameter_is_exact,
            "noise_scale": scale,
            "projected": project,
            "paper_scaling": paper_scaling,
            "secure_noise": bool(secure_noise),
            "grid": grid,
        },
    )


def exponential(
    problem,
    epsilon,
    *,
    repetitions=None,
    rng=None,
    ledger=None,
    steps: int = MCMC_STEPS,
    eta: float = MCMC_ETA,
    proposal_std=None,
    x0=None,
    secure_noise: bool = False,
) -> DPResult:
    """Mechanism 3 (§4.3, Thm 19): x with density ∝ exp(−ε f(x)/(2 b_max)) on P, by Metropolis MCMC.

    Utility u = −f has sensitivity b_max (Lemma 18).  Sampling follows §5.1:
    Gaussian random-walk proposals with covariance Σ = η·c·I (η = 0.1, c the
    half-width of P), i.e. per-coordinate standard deviation √(η c) (the paper
    specifies the covariance), ``steps`` = 5000 steps from the centre of P;
    every repetition is an independent chain.  The exact ε-DP guarantee holds
    only in the limit of infinitely many steps: the result says
    ``guarantee="approximate"`` and reports the acceptance rate and the
    split-R̂ of f across chains in ``info`` only: they read the private b along
    every chain, so they are non-private diagnostics and stay out of ``notes``,
    which the privacy record releases.  It refuses ``secure_noise=True`` (module docstring).
    """
    if secure_noise:
        raise ValueError(
            f"secure_noise=True is available for the piecewise methods {', '.join(SECURE_METHODS)}, not "
            "'exponential' (its Metropolis sampler over P draws floating-point noise)"
        )
    epsilon, R, rng, ledger = _setup(problem, epsilon, repetitions, rng, ledger)
    polytope = problem.polytope
    if proposal_std is None:
        proposal_std = np.sqrt(check_positive("eta", eta) * polytope.halfwidth)
    start = polytope.center if x0 is None else x0
    chains = np.array(np.broadcast_to(np.asarray(start, dtype=float), (R, problem.d)))
    run = metropolis_exponential(
        lambda X: -problem.value(X),
        chains,
        epsilon=epsilon,
        sensitivity=problem.b_max,
        proposal_std=proposal_std,
        steps=steps,
        ledger=ledger,
        rng=rng,
        contains=polytope.contains,
    )
    acceptance = float(np.mean(run.acceptance_rate))
    return _result(
        problem,
        ledger,
        run.samples,
        repetitions,
        method="exponential",
        nit=steps,
        guarantee="approximate",
        info={
            "acceptance_rate": acceptance,
            "rhat": run.rhat,
            "proposal_std": float(proposal_std),
            "steps": steps,
            "sensitivity": problem.b_max,
        },
        notes=(
            f"Thm 19 exponential mechanism sampled by Metropolis MCMC ({steps} steps per chain, "
            f"proposal std {proposal_std:.4g}); exact epsilon-DP holds only in the MCMC limit of "
            f"infinitely many steps. The mean acceptance rate and the split-Rhat of f across the {R} "
            "chain(s) read the private b along every chain: they are in info, non-private diagnostics."
        ),
    )


def subgradient(
    problem,
    epsilon,
    *,
    repetitions=None,
    rng=None,
    ledger=None,
    iterations: int = SUBGRADIENT_ITERATIONS,
    step_size="constant",
    x1=None,
    output: str = "average",
    trajectory: bool = False,
    secure_noise: bool = False,
) -> DPResult:
    """Mechanism 4 (§4.4): the private subgradient method, Algorithm 2 with Algorithm 1 inside.

    Each of the k = ``iterations`` steps draws the piece i* by the
    exponential mechanism at ε/k with scores u_sub(i; x) = a_iᵀx + b_i and
    sensitivity b_max, P(i* = i) ∝ exp(+ε u_sub(i)/(2k b_max)): the paper
    prints a minus sign, but the subgradient is the *highest* piece (eq.
    (12)), so the sign must be +.  Then x ← Π_P(x − α_i a_{i*}).  Sequential
    composition gives ε-DP (k draws at ε/k).  ``output`` is ``"average"``
    (default: the step-weighted average Σα_i x(i)/Σα_i, which satisfies the
    bound (14) of Thm 24 by convexity) or ``"last"`` (x(k+1), Algorithm 2
    step 3 verbatim, for which the paper proves nothing); never the best
    iterate by f, which would need private b.  Step sizes: see
    :func:`~dpopt.piecewise.subgradient.step_sizes`.  ``trajectory=True``
    stores the iterates x(1..k+1) in ``result.trajectory`` ((R, k+1, d);
    they are post-processing of the same private draws).  ``secure_noise=True``
    draws each selection by the exact exponential mechanism (module docstring).
    """
    epsilon, R, rng, ledger = _setup(problem, epsilon, repetitions, rng, ledger)
    k = check_iterations("iterations", iterations)
    per_step = equal_share(epsilon, k)  # k draws add up to at most epsilon exactly
    if not ledger.can_afford(ev.SelfComposed(ev.Exponential(per_step), k)):
        raise BudgetExceededError(
            f"{k} exponential-mechanism draws at epsilon/k={per_step:.6g} exceed the ledger's "
            "remaining budget; nothing was released"
        )

    def select(scores):
        return mech.exponential(
            scores, epsilon=per_step, sensitivity=problem.b_max, ledger=ledger, rng=rng,
            secure_noise=secure_noise,
        )

    run = projected_subgradient(
        problem,
        select,
        iterations=k,
        repetitions=R,
        step_size=step_size,
        x1=x1,
        output=output,
        trajectory=trajectory,
    )
    traj = None
    if trajectory:
        traj = run.iterates if repetitions is not None else run.iterates[0]
    return _result(
        problem,
        ledger,
        run.x,
        repetitions,
        method="subgradient",
        nit=k,
        trajectory=traj,
        info={
            "iterations": k,
            "epsilon_per_iteration": per_step,
            "output": output,
            "step_sizes": run.step_sizes,
            "sensitivity": problem.b_max,
            "secure_noise": bool(secure_noise),
        },
        notes=(
            f"Algorithms 1-2: {k} exponential-mechanism subgradient selections at epsilon/k each "
            f"(sign + : the highest piece is favoured{', each drawn exactly' if secure_noise else ''}), "
            f"projected steps onto P, {output} iterate released."
        ),
    )
