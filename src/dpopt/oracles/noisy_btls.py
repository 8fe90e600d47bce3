"""NoisyBTLS: backtracking line search through the sparse vector technique (chen2020 Algorithm 1).

Algorithm 1 asks the threshold queries

    q_i = f(w) − α η_i ‖g‖² − f(w − η_i g),     η_i = η₀ β^{i−1},  i = 1..max_it   (line 7)

against the public threshold T = 0 with AboveThreshold (Lemma 5): the
threshold gets noise once (line 4), every query fresh noise (line 8), and the
first step whose noisy query clears the noisy threshold is returned (line 10),
or 0 when none does within ``max_it`` queries (line 12).  f is the clipped
objective Σ_i min{f_i, C_obj} (plus the public regularizer), so every query has
sensitivity Δ_q = C_obj (Theorem 1).  :meth:`Ray.of_model` also offers
``query="decrease"``: f(w) − f(w − ηg) as Σ_i clip(f_i(w) − f_i(w − ηg), ±C_obj)
(plus the regularizer's decrease), again with sensitivity C_obj; the two agree
while no loss exceeds C_obj (see ``LineSearchHyper.query`` for why the
algorithms default to it).

Noise (line 3), through the privacy core's AboveThreshold events:

* Laplace: ε₁ = ε_BT/2, ε₂ = ε_BT/4, i.e. ``events.AboveThreshold.laplace(ε_BT/2, ε_BT/4, Δ_q)``
  — ε_BT-DP (Theorem 1) and the RDP of eq. (4) (Theorem 2);
* Gaussian: σ₁² = 3/(2ρ_BT), σ₂² = 3/ρ_BT (multipliers of Δ_q), i.e.
  ``events.AboveThreshold.gaussian(σ₁, σ₂, Δ_q)`` — (α, αρ_BT)-RDP by eq. (5) (Theorem 3).

With an infinite budget no noise is drawn and nothing is charged: the search
is the classic Armijo backtracking (Armijo 1966; chen2020 eq. (2)), which the
tests use as the noise-free reference.

The queries and their private release are :mod:`dpopt.oracles.line_search`
(:class:`Ray`, :func:`line_search_event`,
:func:`~dpopt.oracles.above_threshold_search`); this module is the
algorithm around them: the candidate steps, picking the step and
intelligent backtracking (chen2020 §4.2).  It sits in the oracles layer
because two families run it: :mod:`dpopt.linesearch` (DP-BLSGD and friends on
convex models) and :mod:`dpopt.neural` (DP-BLSGD on networks, chen2020 §5.7).
"""

from __future__ import annotations

import functools

import numpy as np

from .._validation import check_choice, check_int, check_open_unit, check_positive
from .line_search import NOISES, Ray, above_threshold_search

__all__ = [
    "candidate_steps",
    "noisy_btls",
    "noisy_btls_step",
    "reset_initial_step",
]


def _check_budget(budget) -> float:
    return check_positive("budget", budget, allow_inf=True)


def candidate_steps(eta0, beta: float, max_it: int) -> np.ndarray:
    """η₀ β^{i−1} for i = 1..max_it (Algorithm 1, lines 5 and 11).

    ``eta0`` is a scalar (result ``(max_it,)``) or one value per repetition
    (result ``(R, max_it)``).
    """
    beta = check_open_unit("beta", beta)
    max_it = check_int("max_it", max_it)
    eta0 = np.asarray(eta0, dtype=float)
    if eta0.ndim > 1 or not np.all(np.isfinite(eta0)) or np.any(eta0 <= 0):
        raise ValueError("eta0 must be a finite value > 0 or a 1-D array of them")
    return eta0[..., None] * beta ** np.arange(max_it)


def _steps_for(ray: Ray, eta0, beta, max_it) -> np.ndarray:
    steps = candidate_steps(eta0, beta, max_it)
    shape = ray.batch_shape + (steps.shape[-1],)
    if steps.shape != shape:
        if steps.ndim == 1:
            return np.broadcast_to(steps, shape).copy()
        raise ValueError(
            f"eta0 must be a scalar or have shape {ray.batch_shape}, got {np.shape(eta0)}"
        )
    return steps


def _pick(steps: np.ndarray, index) -> np.ndarray:
    """η at ``index`` on the last axis of ``steps``, 0 where the index is −1."""
    index = np.asarray(index)
    chosen = np.take_along_axis(steps, np.maximum(index, 0)[..., None], axis=-1)[..., 0]
    return np.where(index >= 0, chosen, 0.0)


def _out(v):
    return float(v) if np.ndim(v) == 0 else v


def noisy_btls(
    ray: Ray,
    *,
    eta0,
    budget: float,
    ledger=None,
    rng=None,
    noise: str = "laplace",
    alpha: float = 0.5,
    beta: float = 0.8,
    max_it: int = 10,
    sampler=None,
    lazy: bool = False,
):
    """Noisy backtracking line search, chen2020 Algorithm 1 (Laplace or Gaussian version).

    Parameters
    ----------
    ray:
        The line to search (:class:`Ray`, e.g. :meth:`Ray.of_model`); its
        ``sensitivity`` is Δ_q.  A ray with a batch shape ``(R,)`` runs R
        independent searches with one charge (each makes the same release).
    eta0:
        Initial step η₀ (> 0), scalar or one per repetition.
    budget:
        ε_BT (Laplace) or ρ_BT (Gaussian) of this call; ``math.inf`` disables the
        noise and returns the classic Armijo step without charging anything.
    ledger, rng:
        The run's :class:`~dpopt.privacy.Ledger` (charged before any noise is
        drawn) and ``numpy.random.Generator``; unused for an infinite budget.
    noise:
        ``"laplace"`` or ``"gaussian"`` (line 3).
    alpha:
        Armijo constant α ∈ (0, 1) of eq. (2) (§5.4: 0.5).
    beta:
        Backtracking factor β ∈ (0, 1) (§5.4: 0.8).
    max_it:
        Number of candidate steps η₀, η₀β, …, η₀β^{max_it−1} (line 6).
    sampler:
        The sampler that drew the records behind ``ray``; the charged event is
        then its amplified ``Subsampled`` event (chen2020 §4.3, Lemma 4).
    lazy:
        Evaluate the candidates one per data pass instead of 3, 6, 12, … per pass
        (same distribution; cheaper when queries are expensive).

    Returns
    -------
    The chosen step η (a float, or ``(R,)``), 0 where the search failed (line 12).
    """
    if not isinstance(ray, Ray):
        raise TypeError(f"ray must be a Ray, got {type(ray).__name__}")
    budget = _check_budget(budget)
    check_choice("noise", noise, NOISES)
    alpha = check_open_unit("alpha", alpha)
    steps = _steps_for(ray, eta0, beta, max_it)
    index = above_threshold_search(ray, steps, alpha=alpha, budget=budget, noise=noise,
                                   ledger=ledger, rng=rng, sampler=sampler, lazy=lazy)
    return _out(_pick(steps, index))


def noisy_btls_step(oracle, w, g, *, eta0: float, budget: float, alpha: float, beta: float,
                    max_it: int) -> float:
    """NoisyBTLS through a :class:`~dpopt.oracles.PrivateOracle` on a fresh minibatch: the step, 0 on failure.

    The candidates η₀ β^{i−1} (Algorithm 1, lines 5 and 11) are asked by the
    oracle's AboveThreshold query (:meth:`~dpopt.oracles.PrivateOracle.line_search`).
    """
    steps = _ladder(float(eta0), float(beta), int(max_it))
    return _chosen(steps, oracle.line_search(w, g, steps, alpha=alpha, budget=budget))


def run_step(oracle, w: np.ndarray, g: np.ndarray, eta0: float, budget: float, alpha: float, beta: float,
             max_it: int) -> float:
    """:func:`noisy_btls_step` of a run's own iterate ``w`` and released gradient ``g``
    (:meth:`~dpopt.oracles.PrivateOracle._line_search`: not checked again; the run's loop holds
    ``np.errstate(**QUIET)``); η₀, β and ``max_it`` floats and an int already."""
    steps = _ladder(eta0, beta, max_it)
    return _chosen(steps, oracle._line_search(w, g, steps, alpha, budget))


def _chosen(steps: np.ndarray, index) -> float:
    """The step at ``index``, 0 where the search failed (``index`` −1; Algorithm 1, line 12)."""
    index = int(index)
    return float(steps[index]) if index >= 0 else 0.0


@functools.lru_cache(maxsize=64)
def _ladder(eta0: float, beta: float, max_it: int) -> np.ndarray:
    """:func:`candidate_steps` of a scalar η₀, built once per (η₀, β, max_it) and read-only: a
    run's η₀ changes only at an intelligent-backtracking reset (every τ iterations)."""
    steps = candidate_steps(eta0, beta, max_it)
    steps.setflags(write=False)
    return steps


def reset_initial_step(eta0: float, chosen, varsigma: float) -> float:
    """Intelligent backtracking (chen2020 §4.2): η₀ ← min{ς·max Ω, η₀}.

    ``chosen`` is Ω, the steps selected since the last reset (every τ
    iterations); with no step selected η₀ is kept.  ς > 1 keeps the next
    search starting a little above the largest recent step, so that it does
    not backtrack redundantly from an unnecessarily large η₀.
    """
    eta0 = check_positive("eta0", eta0)
    varsigma = check_positive("varsigma", varsigma)
    if varsigma <= 1.0:
        raise ValueError(f"varsigma must be > 1, got {varsigma!r}")
    chosen = np.asarray(chosen, dtype=float).ravel()
    if chosen.size == 0:
        return eta0
    return min(varsigma * float(chosen.max()), eta0)
