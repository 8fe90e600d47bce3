"""A run's full schedule (steps, momenta, stages, budgets, noise scales), before touching data.

:func:`make_plan` turns a method name and the public constants (ε, T, n, m,
d, S₁, L, μ) into a :class:`Plan`.  Nothing here reads data, so a user can
compare plans (and their bounds, :mod:`dpopt.accelerated.bounds`) before
spending budget.

Methods (kuru2022 §5):

======================  =====================================================
``dp-gd``               constant α, β = 0, ε/T per iteration (Prop. 3.1)
``dp-hb``               constant α, β, ε/T per iteration (eq. (3.1), Prop. 3.1)
``dp-nag``              constant α, β, ε/T per iteration (eq. (4.1))
``dp-nag-opt``          as dp-nag; split (4.4)/(4.5) with a_{T,t} of Thm 4.1; T' by (4.6)
``dp-masg``             stages and steps of eq. (4.7), β per stage, ε/T per iteration
``dp-masg-opt``         as dp-masg; split (4.4)/(4.5) with a_{T,t} of Thm 4.3; T' by (4.6)
======================  =====================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_int, check_iterations, check_nonnegative, check_positive
from ..privacy import FixedSizeSampler, Ledger
from ..privacy import events as ev
from ..privacy.calibration import fit_scales_to_budget
from ..privacy.mechanisms import secure_event
from . import allocation, schedules
from .bounds import optimized_bound
from .coefficients import coefficients, log_coefficients

__all__ = ["Plan", "make_plan", "METHODS", "canonical_method"]

#: Accepted method names → the paper's names (used in results and summary.csv).
METHODS = {
    "gd": "dp-gd",
    "hb": "dp-hb",
    "nag": "dp-nag",
    "nag-opt": "dp-nag-opt",
    "masg": "dp-masg",
    "masg-opt": "dp-masg-opt",
}


def canonical_method(method: str) -> str:
    """``"nag-opt"``, ``"dp-nag-opt"``, ``"DP-NAG-opt"`` … → ``"dp-nag-opt"``."""
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {type(method).__name__}")
    key = method.strip().lower().replace("_", "-")
    key = key[3:] if key.startswith("dp-") else key
    if key not in METHODS:
        names = sorted(set(METHODS) | set(METHODS.values()))
        raise ValueError(f"method must be one of {names}, got {method!r}")
    return METHODS[key]


def laplace_events(scales, *, sensitivity: float, n: int, batch_size: int, secure_size: int = 0) -> list:
    """One Laplace(b_t, S₁/m) event per scale, amplified by fixed-size sampling of m of n (eq. (3.3)).

    ``secure_size`` > 0: the discrete event a ``secure_noise`` release of that many values charges instead
    (:func:`~dpopt.privacy.mechanisms.secure_event`; its ε is the same up to rounding, which a plan fitted to
    the continuous events would exceed by an ulp at the last release).
    """
    sampler, unit = FixedSizeSampler(batch_size, n), sensitivity / batch_size
    events = [ev.Laplace(b, unit) for b in np.asarray(scales, dtype=float).tolist()]
    if secure_size:
        events = [secure_event(e, secure_size)[0] for e in events]
    return [sampler.wrap(e) for e in events]


@dataclass(frozen=True)
class Plan:
    """Everything a run does, iteration by iteration (arrays of length T = ``iterations``).

    ``budgets`` are the amplified per-iteration costs ε_t (they sum to
    ``epsilon``), ``scales`` the Laplace scales b_t on the minibatch mean
    gradient, ``restarts`` marks the first iteration of each MASG stage.
    ``bound`` is (4.6) for the -opt methods (the T' criterion), else ``nan``.
    """

    method: str
    epsilon: float
    iterations: int
    requested_iterations: int
    steps: np.ndarray
    momenta: np.ndarray
    stages: np.ndarray
    restarts: np.ndarray
    budgets: np.ndarray
    scales: np.ndarray
    sensitivity: float
    n: int
    batch_size: int
    multiplier: float = float("nan")
    bound: float = float("nan")
    extra: dict = field(default_factory=dict)

    def info(self) -> dict:
        """JSON-friendly description (lists), for ``DPResult.info``."""
        return {
            "method": self.method,
            "epsilon": self.epsilon,
            "iterations": self.iterations,
            "requested_iterations": self.requested_iterations,
            "steps": self.steps.tolist(),
            "momenta": self.momenta.tolist(),
            "stages": self.stages.tolist(),
            "budgets": self.budgets.tolist(),
            "scales": self.scales.tolist(),
            "sensitivity": self.sensitivity,
            "n": self.n,
            "batch_size": self.batch_size,
            "multiplier": self.multiplier,
            "bound": self.bound,
            **self.extra,
        }


def make_plan(
    method: str,
    *,
    epsilon: float,
    iterations: int,
    n: int,
    batch_size: int | None = None,
    d: int,
    sensitivity: float,
    L: float | None = None,
    mu: float | None = None,
    step: float | None = None,
    momentum: float | None = None,
    initial_error: float = 10.0,
    adjust_iterations: bool = True,
    masg_p: int = 1,
    masg_first_stage: int | None = None,
    secure_size: int = 0,
) -> Plan:
    """The schedule and budget split of one run of ``method`` (see the module docstring).

    ``step`` is α (default 1/L; for MASG the first-stage step, later stages
    use step/4^k); ``momentum`` is β for dp-hb/dp-nag(-opt) (default
    (1 − √(μα))/(1 + √(μα))); MASG sets β per stage.  ``initial_error`` is
    the guess E₀ of Remark 4.1 and ``adjust_iterations`` whether the -opt
    methods shorten T to the T' minimizing (4.6).  ``secure_size`` > 0: the
    scales are fitted to the budget with the discrete events a ``secure_noise``
    run of that many values per release charges (:func:`laplace_events`).
    """
    name = canonical_method(method)
    epsilon = check_positive("epsilon", epsilon)
    T = check_iterations("iterations", iterations)
    n = check_int("n", n)
    m = n if batch_size is None else check_int("batch_size", batch_size)
    if m > n:
        raise ValueError(f"batch_size must be <= n={n}, got {m}")
    d = check_int("d", d)
    S1 = check_positive("sensitivity", sensitivity)
    E0 = check_nonnegative("initial_error", initial_error)
    if not isinstance(adjust_iterations, bool):
        raise TypeError("adjust_iterations must be a bool")
    L = None if L is None else check_positive("L", L)
    mu = None if mu is None else check_positive("mu", mu)
    if L is not None and mu is not None and mu > L:
        raise ValueError(f"mu must be <= L, got mu={mu}, L={L}")
    uses_bounds = name in ("dp-nag-opt", "dp-masg", "dp-masg-opt")
    missing = []
    if L is None and (step is None or uses_bounds):
        missing.append("L")
    if mu is None and (uses_bounds or (name in ("dp-hb", "dp-nag") and momentum is None)):
        missing.append("mu")
    if missing:
        raise ValueError(f"method {name!r} with these arguments needs {' and '.join(missing)}")

    alpha0 = (1.0 / L) if step is None else check_positive("step", step)
    if name in ("dp-masg", "dp-masg-opt"):
        if momentum is not None:
            raise ValueError(
                "momentum cannot be set for MASG: eq. (4.7) sets it per stage from the step"
            )
        stages, steps = schedules.masg_stages(
            T, L=L, mu=mu, c=alpha0 * L, p=masg_p, first_stage=masg_first_stage
        )
        momenta = schedules.nesterov_momentum(steps, mu)
    else:
        stages = np.ones(T, dtype=int)
        steps = np.full(T, alpha0)
        if name == "dp-gd":
            if momentum not in (None, 0, 0.0):
                raise ValueError("dp-gd has no momentum; use method='hb' or 'nag'")
            beta = 0.0
        elif momentum is None:
            beta = schedules.nesterov_momentum(alpha0, mu)
        else:
            beta = check_nonnegative("momentum", momentum)
            if beta >= 1.0:
                raise ValueError(f"momentum must be in [0, 1), got {beta}")
        momenta = np.full(T, beta)

    extra: dict = {"initial_error": E0}
    bound = multiplier = float("nan")
    if name.endswith("-opt"):
        if adjust_iterations:  # Remark 4.1: T' ≤ T minimizing (4.6)
            T_run, _ = allocation.choose_iterations(
                steps, mu, L, stages, initial_error=E0, d=d, sensitivity=S1, n=n, epsilon=epsilon
            )
            stages, steps, momenta = stages[:T_run], steps[:T_run], momenta[:T_run]
        log_a0, log_a = log_coefficients(steps, mu, L, stages)
        a0, a = coefficients(steps, mu, L, stages)
        bound = optimized_bound(a0, a, initial_error=E0, d=d, sensitivity=S1, n=n, epsilon=epsilon)
        alloc = allocation.optimal_allocation(log_a, epsilon, sensitivity=S1, n=n, batch_size=m)
        multiplier = alloc.multiplier
        extra["log_a0"] = log_a0
    else:
        alloc = allocation.allocation_from_budgets(
            allocation.uniform_budgets(epsilon, T), sensitivity=S1, n=n, batch_size=m
        )
    T_run = alloc.iterations
    scales = fit_scales_to_budget(
        alloc.scales,
        lambda b: laplace_events(b, sensitivity=S1, n=n, batch_size=m,
                                 secure_size=check_int("secure_size", secure_size, minimum=0)),
        lambda: Ledger(epsilon, relation="replace_one"),
    )
    return Plan(
        method=name,
        epsilon=epsilon,
        iterations=T_run,
        requested_iterations=T,
        steps=np.asarray(steps, dtype=float),
        momenta=np.asarray(momenta, dtype=float),
        stages=np.asarray(stages, dtype=int),
        restarts=schedules.restart_flags(stages),
        budgets=alloc.budgets,
        scales=scales,
        sensitivity=S1,
        n=n,
        batch_size=m,
        multiplier=multiplier,
        bound=bound,
        extra=extra,
    )
