"""kuru2022's per-iteration Laplace calibration, eqs. (3.4)–(3.5) (moved here from the privacy core).

The privacy core keeps the generic pieces (:func:`dpopt.privacy.pure.invert_amplification`,
:func:`dpopt.privacy.calibration.calibrate_laplace_scale`); these two are the
paper's own closed forms in its symbols (T iterations, m of n records).
"""

from __future__ import annotations

from .._validation import check_int, check_positive
from ..privacy.pure import invert_amplification

__all__ = ["step_epsilon", "laplace_scale"]


def _check_sizes(n, m) -> tuple[int, int]:
    n = check_int("n", n, minimum=1)
    m = check_int("m", m, minimum=1)
    if m > n:
        raise ValueError(f"m (subsample size) must be <= n (dataset size), got m={m}, n={n}")
    return n, m


def step_epsilon(epsilon: float, steps: int, n: int, m: int) -> float:
    """kuru2022 eq. (3.5): ε₀ = ln[1 + (e^{ε/T} − 1)·n/m].

    The per-iteration budget *before* amplification: a Laplace mechanism that is
    ε₀-DP on a subsample of m of n records drawn without replacement is
    ε/T-DP on the dataset (eq. (3.3), Thm A.3), so T iterations are ε-DP.
    """
    epsilon = check_positive("epsilon", epsilon)
    steps = check_int("steps", steps, minimum=1)
    n, m = _check_sizes(n, m)
    return invert_amplification(epsilon / steps, m / n)


def laplace_scale(S1: float, epsilon: float, steps: int, n: int, m: int) -> float:
    """kuru2022 eq. (3.4): b = S₁/(m ε₀) with ε₀ from :func:`step_epsilon`.

    S₁ is the L1 sensitivity of one record's gradient (eq. (3.2)); the noise is
    added to the minibatch *average*, whose sensitivity is S₁/m.
    """
    S1 = check_positive("S1", S1)
    eps0 = step_epsilon(epsilon, steps, n, m)
    return S1 / (m * eps0)
