"""Step-size, momentum and stage schedules of the accelerated family (kuru2022 §2–§5).

Every method runs the iterations t = 1, …, T with a step α_t, a momentum β_t
and a stage s_t (1 for the single-stage methods); the noise of iteration t is
Laplace(b_t).  These helpers build the α_t, β_t, s_t arrays; the noise scales
come from :mod:`dpopt.accelerated.allocation`.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int, check_positive

__all__ = ["nesterov_momentum", "masg_stages", "restart_flags"]


def nesterov_momentum(step, mu: float) -> np.ndarray | float:
    """β = (1 − √(μα))/(1 + √(μα)) (kuru2022 Thm 4.1 and §5; per stage for MASG).

    ``step`` may be a scalar or an array of per-iteration steps α_t.
    """
    mu = check_positive("mu", mu)
    root = np.sqrt(mu * np.asarray(step, dtype=float))
    if np.any(root >= 1.0):
        raise ValueError("step must satisfy mu*step < 1 (step <= 1/L <= 1/mu)")
    beta = (1.0 - root) / (1.0 + root)
    return float(beta) if np.ndim(beta) == 0 else beta


def default_first_stage(L: float, mu: float) -> int:
    """n₁ = ⌈2√κ ln √κ⌉ = ⌈√κ ln κ⌉, the first-stage length of the authors' code (at least 1).

    Eq. (4.7) only asks n₁ ≥ 1; Aybat et al. (2019) take n₁ of order √κ log(…),
    and the published experiment uses this value.
    """
    kappa = check_positive("L", L) / check_positive("mu", mu)
    return max(1, math.ceil(math.sqrt(kappa) * math.log(kappa))) if kappa > 1.0 else 1


def masg_stages(
    iterations: int,
    *,
    L: float,
    mu: float,
    c: float = 1.0,
    p: int = 1,
    first_stage: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Stages s_t and steps α_t of (DP-)MASG for t = 1, …, T (kuru2022 eq. (4.7)).

    Stage 1 has n₁ iterations with α⁽¹⁾ = c/L; stage k ≥ 2 has
    n_k = 2^k ⌈√κ ln(2^{p+2})⌉ iterations with α⁽ᵏ⁾ = c/(2^{2k} L); the last
    stage is cut at T.  ``c`` scales every step as in §5 ("the stepsizes are
    scaled by c").  Returns ``(stages, steps)``, integer and float arrays of
    length T.
    """
    T = check_int("iterations", iterations)
    L = check_positive("L", L)
    mu = check_positive("mu", mu)
    c = check_positive("c", c)
    p = check_int("p", p)
    if mu > L:
        raise ValueError(f"mu must be <= L, got mu={mu}, L={L}")
    n1 = (
        default_first_stage(L, mu) if first_stage is None else check_int("first_stage", first_stage)
    )
    unit = math.ceil(math.sqrt(L / mu) * math.log(2.0 ** (p + 2)))
    lengths = [min(n1, T)]  # (stages are cut at T: a longer stage, e.g. n1 ~ 1e150 at kappa = 1e300, is T long)
    while sum(lengths) < T:
        k = len(lengths) + 1
        lengths.append(min(2**k * unit, T))
    stages = np.repeat(np.arange(1, len(lengths) + 1), lengths)[:T]
    steps = np.where(stages == 1, c / L, c / (4.0**stages * L))
    return stages, steps


def restart_flags(stages) -> np.ndarray:
    """True at the first iteration of every stage after the first: MASG restarts its momentum there.

    Aybat et al. (2019) start each stage from x₋₁ = x₀ = the last iterate of
    the previous stage ("momentum per stage"), as the authors' code does.
    """
    stages = np.asarray(stages)
    flags = np.zeros(stages.shape, dtype=bool)
    flags[1:] = stages[1:] != stages[:-1]
    return flags
