"""The exponential mechanism over a continuous set, sampled by random-walk Metropolis MCMC.

Target (McSherry–Talwar; han2014 Thm 19, eq. (8)): the density on a set S

    π(x) ∝ exp(ε·u(x)/(2Δu))  for x ∈ S,   0 outside,

for a utility u of sensitivity Δu.  Exact draws from π are ε-DP.  Here π is
sampled by the Metropolis algorithm with isotropic Gaussian proposals
(han2014 §5.1), many independent chains at once in one (chains, d) array;
a proposal outside S has π = 0 and is rejected.  The chain after finitely
many steps only approximates π, so **the ε-DP guarantee holds only in the
limit of infinitely many steps**: callers must report the guarantee as
approximate, together with the acceptance rate and the convergence
diagnostic returned here (split-R̂ across chains of the utility trace) —
as non-private diagnostics: both read the private utility along every
chain, beyond what the final draws release.

This module knows nothing about optimization: it sees a utility function,
a membership test and starting points that must not depend on the data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validation import check_finite_array, check_iterations, check_positive
from . import events as ev
from .ledger import Ledger
from .mechanisms import check_ledger, check_rng

__all__ = ["MCMCRun", "metropolis_exponential", "split_rhat"]


@dataclass(frozen=True)
class MCMCRun:
    """Output of :func:`metropolis_exponential`.

    ``samples``: final states, shape of ``x0`` (one draw per chain).
    ``acceptance_rate``: fraction of accepted proposals per chain, shape ``x0.shape[:-1]``.
    ``rhat``: split-R̂ of the utility over the second half of all chains (≈ 1 when mixed).
    ``utility_trace``: utility of every chain at every step of the second half, (steps//2, chains).
    """

    samples: np.ndarray
    acceptance_rate: np.ndarray
    rhat: float
    utility_trace: np.ndarray
    event: ev.Exponential


def split_rhat(trace) -> float:
    """Split-R̂ (Gelman et al., BDA3 §11.4) of a scalar trace of shape (draws, chains).

    Each chain is cut into two halves, which are treated as separate
    sequences; R̂ = sqrt(((n−1)/n·W + B/n)/W) with W the mean within-sequence
    variance and B/n the variance of the sequence means.  Values near 1 mean
    the chains agree; above ~1.01–1.1 they have not mixed.  A constant trace
    gives 1.0 when every sequence is the same constant and inf otherwise.
    """
    trace = check_finite_array("trace", trace, ndim=2)
    n = trace.shape[0] // 2
    if n < 2:
        raise ValueError(f"trace needs at least 4 draws per chain, got {trace.shape[0]}")
    peak = np.max(np.abs(trace))
    if peak > 0.0:  # R̂ is scale-free; in [−1, 1] no square overflows into a RuntimeWarning on huge utilities
        trace = trace / peak
    halves = np.concatenate([trace[:n], trace[trace.shape[0] - n :]], axis=1)
    means = halves.mean(axis=0)
    within = halves.var(axis=0, ddof=1).mean()
    between_over_n = means.var(ddof=1) if halves.shape[1] > 1 else 0.0
    if within == 0.0:
        return 1.0 if between_over_n == 0.0 else float("inf")
    pooled = (n - 1) / n * within + between_over_n
    return float(np.sqrt(pooled / within))


def metropolis_exponential(
    utility_fn: Callable[[np.ndarray], np.ndarray],
    x0,
    *,
    epsilon: float,
    sensitivity: float,
    proposal_std: float,
    steps: int,
    ledger: Ledger,
    rng: np.random.Generator,
    contains: Callable[[np.ndarray], np.ndarray] | None = None,
) -> MCMCRun:
    """Draw from π(x) ∝ exp(ε·u(x)/(2Δu)) on {contains(x)} by Metropolis MCMC, charging ε first.

    Parameters
    ----------
    utility_fn:
        u, vectorized: maps states of shape (chains, d) to utilities (chains,).
        Its sensitivity (the most one neighbouring change moves u(x), for
        every x) is ``sensitivity``.
    x0:
        Starting states, (d,) for one chain or (chains, d); they must satisfy
        ``contains`` and must not depend on the private data.
    epsilon, sensitivity:
        The mechanism's ε and Δu; ``ev.Exponential(epsilon)`` is charged to
        ``ledger`` before anything is drawn.
    proposal_std:
        Standard deviation of each coordinate of the Gaussian random-walk
        proposal (covariance proposal_std²·I).
    steps:
        Metropolis steps per chain; the final state is the chain's draw.
    contains:
        Membership test of the support S, (chains, d) → bool (chains,);
        ``None`` means S = R^d (then u must make π normalizable).
    """
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    proposal_std = check_positive("proposal_std", proposal_std)
    steps = check_iterations("steps", steps, minimum=4)
    check_rng(rng)
    x0 = check_finite_array("x0", x0)
    if x0.ndim not in (1, 2) or x0.shape[-1] == 0:
        raise ValueError(f"x0 must have shape (d,) or (chains, d), got {x0.shape}")
    x = np.atleast_2d(x0).copy()
    inside = (
        np.ones(x.shape[0], dtype=bool) if contains is None else np.asarray(contains(x), dtype=bool)
    )
    if not inside.all():
        raise ValueError("every starting state x0 must lie in the support (contains(x0) is False)")
    event = ev.Exponential(epsilon)
    check_ledger(ledger).charge(event)

    temperature = epsilon / (2.0 * sensitivity)
    utility = np.asarray(utility_fn(x), dtype=float)
    if utility.shape != x.shape[:1] or not np.all(np.isfinite(utility)):
        raise ValueError(
            "utility_fn must return finite values of shape (chains,) for states (chains, d)"
        )
    accepted = np.zeros(x.shape[0])
    burn = steps - steps // 2
    trace = np.empty((steps // 2, x.shape[0]))
    for step in range(steps):
        proposal = x + proposal_std * rng.standard_normal(x.shape)
        ok = (
            np.ones(x.shape[0], dtype=bool)
            if contains is None
            else np.asarray(contains(proposal), dtype=bool)
        )
        proposed_utility = np.where(ok, utility_fn(proposal), -np.inf)
        log_ratio = temperature * (proposed_utility - utility)
        accept = ok & (np.log(rng.random(x.shape[0])) < log_ratio)
        np.copyto(x, proposal, where=accept[:, None])
        utility = np.where(accept, proposed_utility, utility)
        accepted += accept
        if step >= burn:
            trace[step - burn] = utility
    samples = x if x0.ndim == 2 else x[0]
    rate = accepted / steps
    return MCMCRun(samples, rate if x0.ndim == 2 else rate[0], split_rhat(trace), trace, event)
