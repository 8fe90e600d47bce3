"""The clipped-loss / line-search query: AboveThreshold over Armijo tests (chen2020 Algorithm 1).

:class:`Ray` is what the data says along a line w − η g: the clipped
objective Σ_i min{f_i, C_obj} (chen2020 Theorem 1) or the clipped per-record
decreases, plus the public regularizer, each query of sensitivity Δ_q = C_obj.
:func:`above_threshold_search` asks the Armijo queries

    q_i = f(w) − α η_i ‖g‖² − f(w − η_i g)        (Algorithm 1, line 7)

through the privacy core's AboveThreshold (Lemma 5): charged before anything
is drawn, one noisy threshold, fresh noise per query, the index of the first
query above it.  Noise (line 3): Laplace ε₁ = ε_BT/2, ε₂ = ε_BT/4
(Theorems 1–2, eq. (4)), or Gaussian σ₁² = 3/(2ρ_BT), σ₂² = 3/ρ_BT (Theorem 3,
eq. (5)).  An infinite budget is the classic, non-private Armijo search
(Armijo 1966), charged nothing: a reference for tests.

Either way the queries are evaluated only up to the first above the threshold.
One search draws the noise of its whole ladder when it opens — the random
stream, and so the answer, of one :func:`dpopt.privacy.mechanisms.above_threshold`
call over all candidates; the noise of a query never asked is discarded unseen —
and evaluates the candidates in passes
(:func:`~dpopt.privacy.mechanisms.above_threshold_first`): ``lazy=True`` one
pass per :data:`LAZY_CHUNK` candidates, ``lazy=False`` passes of
:data:`EAGER_FIRST_CHUNK`, twice, four times … as many.  R searches (a ray with a
batch shape) go through one :class:`~dpopt.privacy.mechanisms.AboveThresholdSession`:
``lazy=True`` asks the queries a chunk at a time, each query's noise drawn when
asked; ``lazy=False`` opens it for the whole ladder.  The public terms of the
queries (f(w) − α η ‖g‖², the regularizer) are computed for the whole ladder at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import check_choice, check_open_unit, check_positive
from ..models import PrivateModel, check_model
from ..models.base import check_direction, check_indices
from ..privacy import events as ev
from ..privacy import mechanisms as mech

__all__ = ["NOISES", "QUERIES", "Ray", "line_search_event", "armijo_queries", "above_threshold_search"]

#: f(w) of a "decrease" ray of one search (read-only; every such ray measures from 0).
_ZERO = np.zeros(())
_ZERO.setflags(write=False)

#: The noise distributions of Algorithm 1.
NOISES = ("laplace", "gaussian")
#: What the line-search queries measure (see :meth:`Ray.of_model`).
QUERIES = ("objective", "decrease")
#: Candidates a lazy search evaluates per data pass (the same noise draws, the same charge, the
#: same answer for any chunk size); a chunk saves per-pass overhead but evaluates candidates
#: that may never be asked.  Measured on DP-BLSGD (30k × 100, ε = 0.4, two seeds, raw and unit
#: rows): chunks of 1, 2 and 4 cost the same CPU within 5 % (4 was not faster: intelligent
#: backtracking makes most searches stop at the first or second candidate), so the default
#: evaluates one at a time.
LAZY_CHUNK = 1
#: Candidates a search that is not lazy evaluates in its first pass (then 2×, 4×, … as many).
#: Its noise is drawn for the whole ladder anyway.  On 200-row minibatches (DP-BLSGD, n = 1e5,
#: d = 100, ``benchmarks/bench_linesearch.py --sections floor``) a pass cost ~20 µs of per-call
#: work plus ~7 µs per candidate, and of 414 searches 210 stopped within the first three
#: candidates, 154 within the next six: 3, 6, 12 expected ~79 µs per search, 1, 2, 4, 8 ~92 and
#: 2, 4, 8 ~84 (the whole ladder at once: ~125).
EAGER_FIRST_CHUNK = 3


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

    #: ``(sign, clipped_sum, coefs)`` for a ray of :meth:`of_model`: fn(η) = sign·clipped_sum(η)
    #: + c₀ + c₁η + c₂η² with ``coefs = (c₀, c₁, c₂)`` the public regularizer (None without one),
    #: so a search computes the public part of all its candidates at once; None for a ray from any ``fn``.
    _parts = None
    #: Whether the ray's weight is the data's own record count (:meth:`of_model` without ``weight``):
    #: then only the non-private search (an infinite budget) may use it.
    own_count = False

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
        steps = _check_steps(np.asarray(steps, dtype=float), self.batch_shape)
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
        expected minibatch size q·N, or N for the full data, with N a public
        count (:class:`~dpopt.oracles.Normalizer`; never the data's own n, which
        differs between add/remove neighbours).  The Armijo slope is
        weight·‖g‖², so q ≥ 0 is the Armijo condition (2) on the mean
        objective; the Armijo and regularizer terms are public given the
        released g, so they add no sensitivity.  ``weight=None`` (full data
        only) is the model's record count: for non-private references; the
        private oracles always pass their public weight (a private search
        refuses a ray without one: :attr:`own_count`).
        """
        check_model(model)
        check_choice("query", query, QUERIES)
        w, g = check_direction(w, g, model.dim)
        cap = check_positive("cap", cap)
        indices = check_indices(indices)
        if weight is None:
            if indices is not None:
                raise ValueError(
                    "weight is required with indices: pass the expected minibatch size q·N "
                    "(the realized size is data-dependent under Poisson sampling)"
                )
            ray = cls._along(model, w, g, cap, indices, check_positive("weight", model.n), query)
            ray.own_count = True  # n differs between add/remove neighbours: not for a private search
            return ray
        return cls._along(model, w, g, cap, indices, check_positive("weight", weight), query)

    @classmethod
    def _along(cls, model: PrivateModel, w: np.ndarray, g: np.ndarray, cap: float, indices,
               weight: float, query: str) -> Ray:
        """:meth:`of_model` on arguments already validated (finite float arrays ``w`` and ``g`` of the
        model's width and one shape, sampled ``indices``, cap and weight > 0, a known query): the
        path of :class:`~dpopt.oracles.PrivateOracle`, whose constructor checked the constants once."""
        mu = model.l2
        relative = query == "decrease"
        if w.ndim == 1:  # one search: np.float64 scalars (ndarray.dot, the floats of np.dot without its dispatch)
            ww, wg, gg = (0.0 if relative else w.dot(w)), w.dot(g), g.dot(g)
        else:
            ww = np.einsum("...i,...i->...", w, w)
            wg = np.einsum("...i,...i->...", w, g)
            gg = np.einsum("...i,...i->...", g, g)
        if relative:
            decrease = model._clipped_decrease_along(w, g, indices, cap)
        else:
            along = model._clipped_loss_along(w, g, indices, cap)

        def data(steps):  # the private part: the clipped sum
            return -decrease(steps) if relative else along(steps)

        # the public part, weight·(μ/2)‖w − η g‖² = c₀ + c₁η + c₂η² (relative: less weight·(μ/2)‖w‖²)
        half = weight * 0.5 * mu
        coefs = (half * ww if not relative else 0.0, -2.0 * half * wg, half * gg)

        def public(steps):
            c0, c1, c2 = (np.asarray(c)[..., None] for c in coefs)
            return c0 + steps * (c1 + c2 * steps)

        def fn(steps):
            return data(steps) + public(steps) if mu else data(steps)

        ray = cls.__new__(cls)  # the checks of __init__ hold by construction here
        ray.fn, ray.slope, ray.sensitivity = fn, np.asarray(weight * gg, dtype=float), cap
        ray._origin = (_ZERO if w.ndim == 1 else np.zeros(np.shape(ww))) if relative else None
        # (the clipped sum's sign in f, the clipped sum, (c₀, c₁, c₂) or None): f = sign·sum + public
        ray._parts = (-1.0 if relative else 1.0, decrease if relative else along, coefs if mu else None)
        return ray


def _check_steps(steps: np.ndarray, batch_shape: tuple) -> np.ndarray:
    """``steps`` if its shape is the ray's batch shape + (k,), else a one-line ``ValueError``.  Checked
    here, at the search (the model's closures on the oracle's path check no shapes): a ladder of
    another shape would otherwise fail inside the clipped sum, in an error that names the
    minibatch's size, which one record changes."""
    if steps.ndim == 0 or steps.shape[:-1] != batch_shape:
        raise ValueError(f"steps must have shape {batch_shape} + (k,) (the ray's batch shape), got {steps.shape}")
    return steps


def armijo_queries(ray: Ray, steps, alpha: float) -> np.ndarray:
    """q_i = f(w) − α η_i ‖g‖² − f(w − η_i g) for every η_i on the last axis (Alg. 1, line 7)."""
    return _queries(ray, np.asarray(steps, dtype=float), check_open_unit("alpha", alpha))


def _queries(ray: Ray, steps: np.ndarray, alpha: float) -> np.ndarray:
    return ray.origin[..., None] - alpha * steps * ray.slope[..., None] - ray.at(steps)


def above_threshold_search(ray: Ray, steps: np.ndarray, *, alpha: float, budget: float,
                           noise: str = "laplace", ledger=None, rng=None, sampler=None,
                           lazy: bool = False, event: ev.AboveThreshold | None = None,
                           secure_noise: bool = False) -> np.ndarray:
    """Index of the first candidate in ``steps`` (last axis) whose noisy Armijo query clears the
    noisy threshold, −1 where none does (Algorithm 1, lines 4–12).

    ``budget`` is ε_BT (Laplace) or ρ_BT (Gaussian); ``math.inf`` runs the
    non-private Armijo test and charges nothing.  Otherwise the event of
    :func:`line_search_event` (amplified by ``sampler``, the sampler that drew
    the ray's records) is charged to ``ledger`` before any noise is drawn.
    ``ray`` with batch shape ``(R,)`` runs R searches under one charge.  ``event``, when
    given, is that event already built (``line_search_event(budget, ray.sensitivity, noise)``,
    as :class:`~dpopt.oracles.PrivateOracle` caches it).  ``secure_noise=True`` compares the
    queries rounded to a grid with exact discrete noise and charges the discrete event
    (:func:`dpopt.privacy.mechanisms.above_threshold`).
    """
    _check_steps(steps, ray.batch_shape)  # before anything is charged or computed
    if ray.own_count and not math.isinf(budget):
        # weight·‖g‖² and weight·r move by ‖g‖² and r when n does: not covered by Δ_q
        raise ValueError(
            "the ray is weighted by the data's own record count (Ray.of_model without weight), which "
            "differs between add/remove neighbours: pass the public weight q*N for a private search"
        )
    if math.isinf(budget):
        above = _queries(ray, steps, alpha) >= 0.0
        return np.where(above.any(axis=-1), np.argmax(above, axis=-1), -1)
    if event is None:
        event = line_search_event(budget, ray.sensitivity, noise)
    k = steps.shape[-1]
    # One search (the line-search oracle's case): the noise of all k queries drawn when it opens
    # (mech.above_threshold's stream; for secure noise one call of the exact sampler instead of one
    # per query), the queries evaluated only up to the first above the threshold, LAZY_CHUNK per
    # pass (lazy) or 3, 6, 12, … (EAGER_FIRST_CHUNK; most searches on small minibatches stop within
    # the first three).  Drawing k + 1 values at once costs less than a session's per-query draws and
    # bookkeeping: DP-BLSGD at n = 1e5, d = 100 (both codes in one process, median of 4 seeds) took
    # 15 %, 22 % and 9 % less CPU per iteration on 650-, 1,000- and 2,000-row minibatches.
    queries = _chunked_queries(ray, steps, alpha)
    options = {"ledger": ledger, "rng": rng, "sampler": sampler, "secure_noise": secure_noise}
    if not ray.batch_shape:
        first_chunk, growth = (LAZY_CHUNK, 1) if lazy else (EAGER_FIRST_CHUNK, 2)
        return np.array(mech.above_threshold_first(queries, k, event=event, first_chunk=first_chunk,
                                                   growth=growth, **options))
    session = mech.AboveThresholdSession(event, batch_shape=ray.batch_shape,
                                         queries=None if lazy and not secure_noise else k, **options)
    start, chunk = 0, LAZY_CHUNK if lazy else EAGER_FIRST_CHUNK
    index = np.full(ray.batch_shape, -1)
    while start < k:
        stop = min(start + chunk, k)
        found = session.ask_block(queries(start, stop))
        index = np.where(found >= 0, start + found, index)
        if not session.active.any():
            break
        start, chunk = stop, chunk if lazy else 2 * chunk
    return index


def _chunked_queries(ray: Ray, steps: np.ndarray, alpha: float):
    """``queries(start, stop)``: :func:`_queries` at ``steps[..., start:stop]``.

    For a ray of :meth:`Ray.of_model` the public terms — f(w) − α η ‖g‖² less the regularizer's
    c₀ + c₁η + c₂η² — are one quadratic in η, evaluated for all candidates at once, and each
    chunk evaluates only the clipped sum: q = (K₀ + η(K₁ + K₂η)) − sign·sum(η).
    """
    if ray._parts is None:
        return lambda start, stop: _queries(ray, steps[..., start:stop], alpha)
    sign, clipped_sum, coefs = ray._parts
    c0, c1, c2 = (0.0, 0.0, 0.0) if coefs is None else coefs
    if not ray.batch_shape:  # one search: Python floats
        k1, c2 = float(-alpha * ray.slope - c1), float(c2)
        armijo = steps * (k1 - c2 * steps) if c2 else steps * k1
        if sign > 0.0:  # "objective": f(w) − c₀
            armijo += float(ray.origin - c0)
    else:
        k1 = np.asarray(-alpha * ray.slope - c1)[..., None]
        armijo = steps * (k1 - np.asarray(c2)[..., None] * steps)
        if sign > 0.0:
            armijo = armijo + np.asarray(ray.origin - c0)[..., None]
    if sign < 0.0:  # "decrease": f(w − ηg) − f(w) = −sum + public
        return lambda start, stop: armijo[..., start:stop] + clipped_sum(steps[..., start:stop])
    return lambda start, stop: armijo[..., start:stop] - clipped_sum(steps[..., start:stop])
