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

The queries can be evaluated all at once (one product ``X [w − η_j g]`` for
every candidate, :meth:`Ray.at`) and handed to
:func:`dpopt.privacy.mechanisms.above_threshold`, or one at a time through an
:class:`~dpopt.privacy.mechanisms.AboveThresholdSession` (``lazy=True``), which
only evaluates the queries that are actually asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import check_choice, check_int, check_open_unit, check_positive
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from .model import PrivateModel

__all__ = [
    "NOISES",
    "QUERIES",
    "Ray",
    "line_search_event",
    "candidate_steps",
    "armijo_queries",
    "noisy_btls",
    "reset_initial_step",
]

#: The noise distributions of Algorithm 1.
NOISES = ("laplace", "gaussian")
#: What the line-search queries measure (see :meth:`Ray.of_model`).
QUERIES = ("objective", "decrease")


def _check_budget(budget) -> float:
    return check_positive("budget", budget, allow_inf=True)


def line_search_event(budget: float, sensitivity: float,
                      noise: str = "laplace") -> ev.AboveThreshold:
    """The AboveThreshold event of one NoisyBTLS call (chen2020 Algorithm 1, line 3).

    ``budget`` is ε_BT for ``noise="laplace"`` (ε₁ = ε_BT/2, ε₂ = ε_BT/4) and
    ρ_BT for ``noise="gaussian"`` (σ₁² = 3/(2ρ_BT), σ₂² = 3/ρ_BT, which makes
    eq. (5) equal to α·ρ_BT).  ``sensitivity`` is Δ_q = C_obj.
    """
    budget = check_positive("budget", budget)
    sensitivity = check_positive("sensitivity", sensitivity)
    check_choice("noise", noise, NOISES)
    if noise == "laplace":
        return ev.AboveThreshold.laplace(budget / 2.0, budget / 4.0, sensitivity)
    return ev.AboveThreshold.gaussian(math.sqrt(1.5 / budget), math.sqrt(3.0 / budget), sensitivity)


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


class Ray:
    """The line w − η g seen by NoisyBTLS: f(w), the Armijo slope and f along the line.

    Parameters
    ----------
    fn:
        ``fn(steps) -> values``: the (clipped) objective at ``w − η g`` for every
        η on the last axis of ``steps``; same shape as ``steps``.
    origin:
        f(w): a float, or ``(R,)`` for R repetitions; ``None`` evaluates ``fn`` at
        step 0 when first needed.
    slope:
        The factor of α·η in the Armijo condition, ‖g‖² on the scale of f
        (``weight·‖g‖²`` when f is a sum over ``weight`` expected records).
    sensitivity:
        Δ_q, the most one record can change any query (C_obj for clipped sums).
    """

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], origin, slope, sensitivity: float):
        if not callable(fn):
            raise TypeError("fn must be callable as fn(steps) -> values")
        self.fn = fn
        self.slope = np.asarray(slope, dtype=float)
        if self.slope.ndim > 1:
            raise ValueError(f"slope must be a scalar or (R,), got shape {self.slope.shape}")
        self._origin = None
        if origin is not None:  # None: f(w) = fn(0), evaluated on first use (NoisyMax never needs it)
            self._origin = np.asarray(origin, dtype=float)
            if self._origin.shape != self.slope.shape:
                raise ValueError(
                    f"origin and slope must both be scalars or both (R,), got {self._origin.shape} "
                    f"and {self.slope.shape}"
                )
        self.sensitivity = check_positive("sensitivity", sensitivity)

    @property
    def origin(self) -> np.ndarray:
        """f(w): a float array of shape ``()`` or ``(R,)``."""
        if self._origin is None:
            self._origin = self.at(np.zeros(self.slope.shape + (1,)))[..., 0]
        return self._origin

    @property
    def batch_shape(self) -> tuple:
        return self.slope.shape

    def at(self, steps) -> np.ndarray:
        """f(w − η g) for every η on the last axis of ``steps``."""
        steps = np.asarray(steps, dtype=float)
        out = np.asarray(self.fn(steps), dtype=float)
        if out.shape != steps.shape:
            raise ValueError(
                f"ray function returned shape {out.shape} for steps of shape {steps.shape}"
            )
        return out

    @classmethod
    def of_model(cls, model: PrivateModel, w, g, *, cap: float, indices=None, weight=None,
                 query: str = "objective") -> Ray:
        """The clipped objective of ``model`` on ``indices`` along ``w − η g``.

        ``query="objective"`` (chen2020 Theorem 1): f(v) = Σ_{i∈indices} min{f_i(v), C_obj}
        + weight·r(v), the clipped sum plus the public regularizer r(v) = (μ/2)‖v‖²
        counted ``weight`` times.  ``query="decrease"``: f is measured relative
        to w, f(w − ηg) − f(w) = −Σ_i clip(f_i(w) − f_i(w − ηg), −C_obj, C_obj)
        + weight·(r(w − ηg) − r(w)) with origin 0
        (:meth:`~dpopt.linesearch.model.PrivateModel.clipped_decrease_along`).
        Either way one record moves every query by at most Δ_q = ``cap``.
        ``weight`` is the public number of records the sum stands for: the
        expected minibatch size q·n (required with ``indices``), or n for the
        full data.  The Armijo slope is weight·‖g‖², so q ≥ 0 is the Armijo
        condition (2) on the mean objective.
        """
        if not isinstance(model, PrivateModel):
            raise TypeError(f"model must be a PrivateModel, got {type(model).__name__}")
        check_choice("query", query, QUERIES)
        w = np.asarray(w, dtype=float)
        g = np.asarray(g, dtype=float)
        cap = check_positive("cap", cap)
        if weight is None:
            if indices is not None:
                raise ValueError(
                    "weight is required with indices: pass the expected minibatch size q·n "
                    "(the realized size is data-dependent under Poisson sampling)"
                )
            weight = model.n
        weight = check_positive("weight", weight)
        mu = model.l2
        ww = np.einsum("...i,...i->...", w, w)
        wg = np.einsum("...i,...i->...", w, g)
        gg = np.einsum("...i,...i->...", g, g)
        relative = query == "decrease"
        if relative:
            decrease = model.clipped_decrease_along(w, g, indices, cap)
        else:
            along = model.clipped_loss_along(w, g, indices, cap)

        def fn(steps):
            values = -decrease(steps) if relative else along(steps)
            if mu:  # (μ/2)‖w − η g‖² = (μ/2)(‖w‖² − 2η w·g + η²‖g‖²), counted weight times
                base = 0.0 if relative else ww[..., None]
                values = values + weight * 0.5 * mu * (
                    base - 2.0 * steps * wg[..., None] + steps**2 * gg[..., None]
                )
            return values

        origin = np.zeros(np.shape(ww)) if relative else None
        return cls(fn, origin, weight * gg, cap)


def armijo_queries(ray: Ray, steps, alpha: float) -> np.ndarray:
    """q_i = f(w) − α η_i ‖g‖² − f(w − η_i g) for every η_i on the last axis (Alg. 1, line 7)."""
    return _queries(ray, np.asarray(steps, dtype=float), check_open_unit("alpha", alpha))


def _queries(ray: Ray, steps: np.ndarray, alpha: float) -> np.ndarray:
    return ray.origin[..., None] - alpha * steps * ray.slope[..., None] - ray.at(steps)


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
        Evaluate queries one at a time through an AboveThresholdSession instead
        of all at once (same distribution; cheaper when queries are expensive).

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
    if math.isinf(budget):
        queries = _queries(ray, steps, alpha)
        above = queries >= 0.0
        index = np.where(above.any(axis=-1), np.argmax(above, axis=-1), -1)
        return _out(_pick(steps, index))
    event = line_search_event(budget, ray.sensitivity, noise)
    if not lazy:
        queries = _queries(ray, steps, alpha)
        index = mech.above_threshold(queries, event=event, ledger=ledger, rng=rng, sampler=sampler)
        return _out(_pick(steps, index))
    session = mech.AboveThresholdSession(
        event, ledger=ledger, rng=rng, batch_shape=ray.batch_shape, sampler=sampler
    )
    index = np.full(ray.batch_shape, -1)
    for i in range(steps.shape[-1]):
        fired = session.ask(_queries(ray, steps[..., i : i + 1], alpha)[..., 0])
        index = np.where(fired, i, index)
        if not session.active.any():
            break
    return _out(_pick(steps, index))



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
