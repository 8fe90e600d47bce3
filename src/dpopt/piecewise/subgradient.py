"""The projected subgradient iteration shared by han2014 Algorithm 2 and its non-private twin.

x(i+1) = Π_P(x(i) − α_i a_{j_i}),  i = 1, …, k,

where j_i is the selected piece at x(i): the argmax of u_sub(j; x(i)) =
a_jᵀx(i) + b_j (eq. (12), a true subgradient) for the non-private method, or
an exponential-mechanism draw (Algorithm 1) for the private one.  Algorithm 2
as printed has no projection; projecting onto P keeps the iterates feasible
and, being non-expansive, leaves the proof of Thm 24 (Appendix A.2) intact.

Output: the step-weighted average Σα_i x(i)/Σα_i (default) or the last
iterate x(k+1) (Algorithm 2, step 3).  The proof of Thm 24 bounds
Σα_i(E f(x(i)) − f_opt), so by convexity the average enjoys the bound (14)
directly; for the last iterate the paper proves nothing.  The best iterate
by f — what (14) literally bounds — is never offered: choosing it reads the
private b, which Algorithm 2's accounting does not pay for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_finite_array, check_int, check_positive

__all__ = [
    "STEP_RULES",
    "OUTPUTS",
    "SubgradientRun",
    "step_sizes",
    "projected_subgradient",
    "subgradient_method",
]

#: Named step-size rules (see :func:`step_sizes`).
STEP_RULES = ("constant", "diminishing")
#: Which iterate is released.
OUTPUTS = ("last", "average")


@dataclass(frozen=True)
class SubgradientRun:
    """Released point x (R, d) and, when asked, the iterates x(1..k+1) as (R, k+1, d)."""

    x: np.ndarray
    iterates: np.ndarray | None
    step_sizes: np.ndarray


def step_sizes(problem, iterations: int, rule="constant") -> np.ndarray:
    """Step sizes α_1..α_k for the (private) subgradient method on ``problem``.

    han2014 leaves the α_i open (Algorithm 2, step 1).  Named rules, with
    R = diam(P) and G = max_i ‖a_i‖₂ as in Thm 24:

    - ``"constant"``: α_i = R/(G√k), the constant step minimizing the first
      term (R² + G²Σα_i²)/(2Σα_i) of bound (14) (its value is then RG/√k);
    - ``"diminishing"``: α_i = R/(G√i).

    A positive float gives a constant step; a length-k array is used as is.
    """
    k = check_int("iterations", iterations)
    if isinstance(rule, str):
        check_choice("step_size", rule, STEP_RULES)
        G = problem.lipschitz
        if G == 0.0:  # every piece is flat: f is constant on P and any step is optimal
            return np.zeros(k)
        scale = problem.polytope.diameter / G
        if rule == "constant":
            return np.full(k, scale / np.sqrt(k))
        return scale / np.sqrt(np.arange(1, k + 1))
    if np.ndim(rule) == 0:
        return np.full(k, check_positive("step_size", rule))
    steps = check_finite_array("step_size", rule, ndim=1)
    if steps.shape != (k,) or np.any(steps < 0):
        raise ValueError(
            f"step_size as an array must have shape ({k},) and be >= 0, got {steps.shape}"
        )
    return steps


def _start(problem, x1, repetitions: int) -> np.ndarray:
    if x1 is None:
        x1 = problem.polytope.center
    x1 = check_finite_array("x1", x1)
    if x1.shape[-1:] != (problem.d,):
        raise ValueError(f"x1 must have last axis of length {problem.d}, got shape {x1.shape}")
    if not np.all(problem.polytope.contains(x1)):
        raise ValueError("x1 must lie in P (Algorithm 2, step 1)")
    return np.array(np.broadcast_to(x1, (repetitions, problem.d)))


def projected_subgradient(
    problem,
    select: Callable[[np.ndarray], np.ndarray],
    *,
    iterations: int,
    repetitions: int,
    step_size="constant",
    x1=None,
    output: str = "average",
    trajectory: bool = False,
) -> SubgradientRun:
    """Run k = ``iterations`` projected subgradient steps for R = ``repetitions`` chains at once.

    ``select(scores)`` receives u_sub = A x + b of shape (R, m) for the
    current iterates and returns the chosen piece per repetition, shape (R,).
    """
    k = check_int("iterations", iterations)
    R = check_int("repetitions", repetitions)
    check_choice("output", output, OUTPUTS)
    alphas = step_sizes(problem, k, step_size)
    x = _start(problem, x1, R)
    weighted = np.zeros_like(x)
    iterates = np.empty((R, k + 1, problem.d)) if trajectory else None
    for i in range(k):
        if trajectory:
            iterates[:, i] = x
        chosen = np.asarray(select(problem.scores(x)))
        weighted += alphas[i] * x
        x = problem.polytope.project(x - alphas[i] * problem.A[chosen])
    if trajectory:
        iterates[:, k] = x
    if output == "average" and alphas.sum() > 0:
        x = problem.polytope.project(weighted / alphas.sum())
    return SubgradientRun(x, iterates, alphas)


def subgradient_method(
    problem,
    iterations: int,
    *,
    repetitions: int = 1,
    step_size="constant",
    x1=None,
    output="average",
    trajectory: bool = False,
) -> SubgradientRun:
    """The non-private projected subgradient method (true subgradients, eq. (12)); no privacy."""
    return projected_subgradient(
        problem,
        lambda scores: np.argmax(scores, axis=-1),
        iterations=iterations,
        repetitions=repetitions,
        step_size=step_size,
        x1=x1,
        output=output,
        trajectory=trajectory,
    )
