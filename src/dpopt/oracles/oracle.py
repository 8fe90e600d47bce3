"""The private oracles: the only code that reads private data (DESIGN.md "Layers").

:class:`PrivateOracle` gives an optimizer four releases over a model that
implements :class:`~dpopt.models.PrivateModel`, each charged to the run's
ledger before anything is drawn:

* :meth:`~PrivateOracle.gaussian_gradient` — (Σ_B clip(∇f_i, C) + N(0, σ²I))/(q·N) + ∇r(w):
  chen2020 Algorithm 2 lines 4–6, DP-SGD (Abadi et al. 2016), DP-AGD (Lee & Kifer 2018);
* :meth:`~PrivateOracle.laplace_gradient` — the same sum with Laplace noise per
  coordinate, for pure ε-DP (L1 sensitivity √d·C of L2-clipped terms);
* :meth:`~PrivateOracle.line_search` — AboveThreshold over the Armijo queries of
  the clipped loss along a line (chen2020 Algorithm 1; :mod:`.line_search`);
* :meth:`~PrivateOracle.select_step` — the exponential mechanism over the clipped
  loss at a grid of steps (DP-AGD's NoisyMax).

Both gradients go through one step, :meth:`PrivateOracle.noisy_sum` (draw the
batch → clipped sum → mechanism); there is no other.  The oracle owns:

* the sampler: Poisson at rate q (chen2020 §4.3, Lemma 4; Abadi et al.), a
  fixed-size m-subset per repetition (kuru2022 Thm A.3, replace-one) or the
  full data; every release draws its *own* minibatch, which makes the
  separate amplification of every sub-routine (chen2020 §4.3) exact;
* the clipping thresholds C_grad (eq. (6)) and C_obj (Theorem 1), which
  DP-BLSGD-AC may shrink (eq. (9));
* the public normalizer N (:class:`~dpopt.oracles.Normalizer`): sums are
  divided by the expected batch size q·N, never by the realized |B| (data-
  dependent under Poisson sampling) nor by the data's own n (private under
  add/remove-one; issue 14, finding 3).

A family builds one oracle per run (or per network node, over that node's
shard); a PyTorch model plugs in through the same contract.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_choice, check_int, check_positive, check_rate
from ..models import PrivateModel, check_model
from ..models.base import check_direction
from ..objectives._arrays import as_params
from ..privacy import FixedSizeSampler, Ledger, PoissonSampler
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from .line_search import NOISES, QUERIES, Ray, above_threshold_search, line_search_event
from .normalizer import Normalizer

__all__ = ["PrivateOracle", "gaussian_sigma", "release_events", "step_event", "EAGER_ENTRIES"]

#: A lazy oracle's line search evaluates one candidate per data pass unless q·N × (number of
#: candidates) is at most this many loss entries; then the candidates are evaluated in passes of
#: 3, 6, 12, … (:data:`~dpopt.oracles.line_search.EAGER_FIRST_CHUNK`).  Either way the noise of
#: the whole ladder is drawn when the search opens (the stream of one
#: :func:`~dpopt.privacy.mechanisms.above_threshold` call) and the candidates are evaluated only up
#: to the first above the threshold: on small minibatches the per-pass work costs more than a
#: few extra candidates (DP-BLSGD, 200-row minibatches, 15 candidates: see
#: ``benchmarks/bench_linesearch.py --sections floor``).  The choice depends on public
#: quantities only; the event and the output distribution are the same either way.
EAGER_ENTRIES = 4096

#: Floating-point warnings switched off in the data passes of every release.  A finite record so
#: large that x·w overflows (possible without a declared data bound) makes inf or NaN terms, which
#: the model clips into their range (NaN to the range's end), so the release is bounded as charged;
#: a RuntimeWarning on the neighbour holding that record only (an exception under
#: ``warnings.simplefilter("error")``, after part of the budget was spent) would depend on it.
QUIET = {"over": "ignore", "invalid": "ignore", "divide": "ignore"}


def gaussian_sigma(rho: float, clip: float) -> float:
    """σ of chen2020 Algorithm 2, line 6: variance C²/(2ρ), i.e. (α, αρ)-RDP (Lemma 1)."""
    return check_positive("clip", clip) / math.sqrt(2.0 * check_positive("rho", rho))


def release_events(kind: str, budget: float, clip: float, *, noise: str = "laplace", dim: int = 1,
                   secure_noise: bool = False) -> tuple[ev.Event, ev.Event]:
    """(mechanism event, event its release charges before amplification) of one release.

    ``kind="gradient"``: a Gaussian gradient of ``dim`` coordinates with budget ρ_grad and
    clipping threshold C_grad (chen2020 Algorithm 2, line 6); ``"line_search"``: one NoisyBTLS
    with ε_BT or ρ_BT and C_obj (:func:`~dpopt.oracles.line_search.line_search_event`).  With
    ``secure_noise`` the charged event is the discrete one of the secure release
    (:func:`~dpopt.privacy.mechanisms.secure_event`: a subsampled ``DiscreteGaussian`` or a
    ``DiscreteAboveThreshold``); calibrations of secure runs plan with it.
    """
    if kind == "gradient":
        inner, size = ev.Gaussian(gaussian_sigma(budget, clip), clip), dim
    else:
        inner, size = line_search_event(budget, clip, noise), 1
    return inner, (mech.secure_event(inner, size)[0] if secure_noise else inner)


def step_event(rho: float, budget: float, *, c_grad: float, c_obj: float, noise: str, rate: float,
               dim: int = 1, secure_noise: bool = False) -> ev.Event:
    """One gradient (ρ) and one line search (ε_BT or ρ_BT) composed, each Poisson-amplified at
    ``rate``, as a :class:`PrivateOracle` with these settings charges them (see :func:`release_events`)."""
    wrap = PoissonSampler(rate).wrap
    options = {"noise": noise, "dim": dim, "secure_noise": secure_noise}
    return ev.Composed((wrap(release_events("gradient", rho, c_grad, **options)[1]),
                        wrap(release_events("line_search", budget, c_obj, **options)[1])))


def _as_normalizer(normalizer) -> Normalizer:
    if isinstance(normalizer, Normalizer):
        return normalizer
    return Normalizer(float(check_int("normalizer", normalizer)), "declared")


class PrivateOracle:
    """Noisy gradients, noisy line searches and noisy selections of one run, charged to one ledger.

    Parameters
    ----------
    model:
        A :class:`~dpopt.models.PrivateModel`.
    ledger:
        The run's :class:`~dpopt.privacy.Ledger`: add/remove-one for the oracle's own releases
        (another relation only with the caller's own events, :meth:`noisy_sum`, :meth:`gradient`).
    rng:
        ``numpy.random.Generator`` for sampling and noise.
    normalizer:
        The public record count N (a :class:`~dpopt.oracles.Normalizer`, or an
        int: a declared count); see :func:`~dpopt.oracles.public_normalizer`.
    rate:
        Poisson sampling rate q ∈ (0, 1]; 1 means the full data (no sampling).
    sampler, sampling_rng:
        Instead of ``rate``: a :class:`~dpopt.privacy.PoissonSampler` or a
        :class:`~dpopt.privacy.FixedSizeSampler` (sums then divide by its m),
        and an optional separate generator for the minibatches (default ``rng``).
    c_grad, c_obj:
        Clipping thresholds C_grad (gradients, eq. (6)) and C_obj (losses, Theorem 1).
    noise, query, lazy:
        The line search's noise (``"laplace"``/``"gaussian"``), what its queries
        measure (``"objective"``/``"decrease"``, :meth:`~dpopt.oracles.Ray.of_model`)
        and whether they are evaluated one per data pass (a lazy oracle evaluates a few per
        pass when q·N × candidates ≤ :data:`EAGER_ENTRIES`).
    secure_noise:
        Release the gradient sums and compare the line searches' queries on a power-of-two
        grid with exact discrete Gaussian (gradients) and discrete Laplace/Gaussian (line
        searches) noise from the OS CSPRNG, charging the discrete events
        (:func:`release_events`); :meth:`select_step` draws by the exact exponential mechanism.
    """

    def __init__(self, model: PrivateModel, *, ledger: Ledger, rng: np.random.Generator,
                 normalizer, rate: float = 1.0, sampler=None, sampling_rng=None, c_grad: float,
                 c_obj: float = 1.0, noise: str = "laplace", query: str = "objective",
                 lazy: bool = False, secure_noise: bool = False):
        self.model = check_model(model)
        self._dim = model.dim  # (a property of the model: read once)
        self._plain_regularizer = type(model).regularizer_grad is PrivateModel.regularizer_grad
        self.secure_noise = bool(secure_noise)  # gradients and line searches by exact discrete noise on a grid
        self.ledger = mech.check_ledger(ledger)
        self.rng = mech.check_rng(rng)
        self._sampling_rng = self.rng if sampling_rng is None else mech.check_rng(sampling_rng)
        self.normalizer = _as_normalizer(normalizer)
        if sampler is None:
            self.rate = check_rate("rate", rate)
            self.sampler = PoissonSampler(self.rate) if self.rate < 1.0 else None
        elif isinstance(sampler, PoissonSampler | FixedSizeSampler):
            self.sampler, self.rate = sampler, sampler.rate
        else:
            raise TypeError(f"sampler must be a PoissonSampler or FixedSizeSampler, got {type(sampler).__name__}")
        self._fixed = isinstance(self.sampler, FixedSizeSampler)
        self._stream = None  # the Poisson sample stream, opened at the first batch
        self.c_grad = check_positive("c_grad", c_grad)
        self.c_obj = check_positive("c_obj", c_obj)
        self.noise = check_choice("noise", noise, NOISES)
        self.query = check_choice("query", query, QUERIES)
        self.lazy = bool(lazy)
        #: Expected number of records per release, q·N (m for fixed-size batches): the public
        #: divisor of every sum.
        self.weight = float(self.sampler.batch_size) if self._fixed else self.rate * self.normalizer.count
        self._events: dict = {}  # (mechanism event, charged event) by (kind, budget, threshold)
        #: Armijo queries asked by the lazy line searches so far (public: each search's outcome).
        self.queries = 0

    # -- events -----------------------------------------------------------------------------
    def wrap(self, event: ev.Event) -> ev.Event:
        """``event`` as this oracle charges it: amplified by its sampler when q < 1."""
        return self.sampler.wrap(event) if self.sampler is not None else event

    def _event(self, kind: str, budget: float) -> tuple[ev.Event, ev.Event]:
        """(mechanism event, charged event) of one gradient or line search, built once per budget.

        With ``secure_noise`` a gradient of the model's ``dim`` coordinates, and a line search
        (scalar queries), charge the discrete event their release does
        (:func:`~dpopt.privacy.mechanisms.secure_event`).
        """
        key = (kind, budget, self.c_grad if kind == "gradient" else self.c_obj)
        pair = self._events.get(key)
        if pair is None:
            self._check_add_remove()
            inner, charged = release_events(kind, budget, key[2], noise=self.noise, dim=self.model.dim,
                                            secure_noise=self.secure_noise)
            pair = self._events[key] = (inner, self.wrap(charged))
        return pair

    def _check_add_remove(self) -> None:
        """The oracle's own events are add/remove-one: ``ValueError`` for a ledger of another relation.

        A clipped gradient sum moves by C_grad when one record is added or removed, by 2·C_grad
        when one is replaced; an Armijo query f(w) − f(w − ηg) − … (a difference of two clipped
        sums) by C_obj, or 2·C_obj.  Releases with the caller's own event (:meth:`noisy_sum`,
        :meth:`gradient`) are open to any relation: their event states its sensitivity.
        """
        if self.ledger.relation != "add_remove":
            raise ValueError(
                "ledger.relation must be 'add_remove' for the oracle's own releases (sensitivities C_grad, "
                f"C_obj); got {str(self.ledger.relation)!r}: pass the event of that relation to noisy_sum"
            )

    def gradient_event(self, rho: float) -> ev.Event:
        """The event one Gaussian gradient with budget ρ charges (amplified when q < 1)."""
        return self._event("gradient", rho)[1]

    def line_search_event(self, budget: float) -> ev.Event:
        """The event one line search with budget ε_BT (or ρ_BT) charges."""
        return self._event("line_search", budget)[1]

    def step_event(self, rho: float, budget: float) -> ev.Event:
        """One gradient (ρ) and one line search (ε_BT or ρ_BT) composed, as charged; built once
        per (ρ, budget, C_grad, C_obj)."""
        key = ("step", rho, budget, self.c_grad, self.c_obj)
        event = self._events.get(key)
        if event is None:
            event = self._events[key] = ev.Composed((self.gradient_event(rho),
                                                     self.line_search_event(budget)))
        return event

    def releases_exactly(self, *events: ev.Event) -> bool:
        """Whether the secure samplers can draw the noise of every charged event (at most
        :data:`~dpopt.privacy.mechanisms.SECURE_MAX_SCALE` grid steps); True without ``secure_noise``."""
        return not self.secure_noise or all(mech.secure_scale(e) <= mech.SECURE_MAX_SCALE for e in events)

    def can_afford(self, *events: ev.Event) -> bool:
        """Whether the ledger can still pay for all ``events`` together."""
        event = events[0] if len(events) == 1 else ev.Composed(events)
        return self.ledger.can_afford(event)

    # -- releases ---------------------------------------------------------------------------
    def batch(self, w=None):
        """Indices of a fresh minibatch, or None for the full data.

        Poisson: one sample shared by every row of ``w``, the next of this oracle's
        :meth:`~dpopt.privacy.PoissonSampler.stream` (independent samples, drawn a block at a
        time from the sampling generator).  Fixed size (m < n):
        ``(R, m)``, an independent m-subset per row of a batch ``w`` of shape
        ``(R, d)`` (one ``(m,)`` subset for ``w`` of shape ``(d,)``).
        """
        if self.sampler is None:
            return None
        if not self._fixed:  # one stream per oracle: samples drawn a block at a time (PoissonSampler.stream)
            if self._stream is None:
                self._stream = self.sampler.stream(self.model.n, self._sampling_rng)
            return self._stream.next()
        if self.sampler.batch_size == self.sampler.n:
            return None
        repetitions = np.shape(w)[0] if np.ndim(w) == 2 else None
        return self.sampler.indices(self._sampling_rng, repetitions=repetitions)

    def noisy_sum(self, w, event: ev.Event, *, mean: bool = False) -> np.ndarray:
        """Σ_B clip(∇f_i(w), C_grad) + noise of ``event`` on a fresh batch: the private gradient step.

        ``event`` is an additive-noise event (Gaussian, Laplace) whose
        sensitivity refers to the released value: the sum (C_grad under
        add/remove-one), or with ``mean=True`` the sum divided by the public
        q·N (or m) *before* the noise (kuru2022 eq. (2.8)).  It is charged,
        amplified by the sampler, before the noise is drawn.
        """
        return self._noisy_sum(as_params(w, self._dim), event, mean)

    def _noisy_sum(self, w: np.ndarray, event: ev.Event, mean: bool, charged: ev.Event | None = None) -> np.ndarray:
        """:meth:`noisy_sum` of a checked ``w``.  ``charged``: ``event`` as this oracle charges it, from its
        event cache (:meth:`_event`), whose release skips the per-release checks of
        :func:`~dpopt.privacy.mechanisms.release` (:func:`~dpopt.privacy.mechanisms.release_charged`);
        None for any other event (a caller's)."""
        with np.errstate(**QUIET):
            total, _ = self.model._clipped_grad_sum(w, self.batch(w), self.c_grad)
        value = total / self.weight if mean else total
        if charged is not None and not self.secure_noise:
            return mech.release_charged(value, event, charged, ledger=self.ledger, rng=self.rng)
        return mech.release(value, event, ledger=self.ledger, rng=self.rng, sampler=self.sampler,
                            secure_noise=self.secure_noise)

    def _regularized(self, mean_gradient: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``mean_gradient`` + ∇r(w): μ·w (PrivateModel.regularizer_grad, unless the model overrides it)."""
        return mean_gradient + (self.model.l2 * w if self._plain_regularizer else self.model.regularizer_grad(w))

    def noisy_gradient_sum(self, w, rho: float) -> np.ndarray:
        """:meth:`noisy_sum` of the Gaussian gradient with budget ρ (σ = C_grad/√(2ρ)); charged as
        :meth:`gradient_event` says (the discrete event with ``secure_noise``)."""
        return self.noisy_sum(w, self._event("gradient", rho)[0])

    def gradient(self, w, event: ev.Event, *, mean: bool = False) -> np.ndarray:
        """The noisy mean gradient plus ∇r(w): :meth:`noisy_sum` normalized by q·N (or m)."""
        w = as_params(w, self._dim)
        noisy = self._noisy_sum(w, event, mean)
        return self._regularized(noisy if mean else noisy / self.weight, w)

    def gaussian_gradient(self, w, sigma: float) -> np.ndarray:
        """g̃ = (Σ_B clip(∇f_i, C) + N(0, σ²I))/(q·N) + ∇r(w) (chen2020 Alg. 2, lines 4–6)."""
        self._check_add_remove()
        return self.gradient(w, ev.Gaussian(check_positive("sigma", sigma), self.c_grad))

    def noisy_gradient(self, w, rho: float) -> np.ndarray:
        """:meth:`gaussian_gradient` with σ = C_grad/√(2ρ): (α, αρ)-RDP before amplification."""
        return self._noisy_gradient(as_params(w, self._dim), rho)

    def _noisy_gradient(self, w: np.ndarray, rho: float) -> np.ndarray:
        """:meth:`noisy_gradient` at a run's own iterate: ``w`` a finite float array of width ``dim``
        (not checked again).  The same event, charge and numbers; the per-release checks of
        :func:`~dpopt.privacy.mechanisms.release` that the oracle's constructor and its event cache made
        once are not repeated (:meth:`_noisy_sum` with the cached charged event)."""
        event, charged = self._event("gradient", rho)
        return self._regularized(self._noisy_sum(w, event, False, charged) / self.weight, w)

    def laplace_gradient(self, w, scale: float) -> np.ndarray:
        """(Σ_B clip(∇f_i, C) + Laplace(scale)ᵈ)/(q·N) + ∇r(w): ε = √d·C/scale (‖v‖₁ ≤ √d‖v‖₂)."""
        self._check_add_remove()
        sensitivity = math.sqrt(self.model.dim) * self.c_grad
        return self.gradient(w, ev.Laplace(check_positive("scale", scale), sensitivity))

    def ray(self, w, g, indices=None) -> Ray:
        """The clipped loss of ``indices`` along w − η g, weighted by the public q·N (not released)."""
        return Ray.of_model(self.model, w, g, cap=self.c_obj, indices=indices, weight=self.weight,
                            query=self.query)

    def _ray(self, w, g, indices) -> Ray:
        """:meth:`ray` over a minibatch this oracle drew (``indices``), ``w`` and ``g`` checked here."""
        w, g = check_direction(w, g, self._dim)
        return Ray._along(self.model, w, g, self.c_obj, indices, self.weight, self.query)

    def line_search(self, w, g, steps, *, alpha: float, budget: float):
        """AboveThreshold over the Armijo queries at ``steps`` along w − η g on a fresh batch.

        Returns the index of the chosen step (−1: none); see
        :func:`~dpopt.oracles.line_search.above_threshold_search`.
        """
        with np.errstate(**QUIET):  # (the ray's data passes run inside the search)
            w, g = check_direction(w, g, self._dim)
            return self._line_search(w, g, steps, alpha, budget)

    def _line_search(self, w: np.ndarray, g: np.ndarray, steps: np.ndarray, alpha: float, budget: float):
        """:meth:`line_search` of a run's own iterate and released gradient: ``w`` and ``g`` finite float
        arrays of one shape and width ``dim`` (not checked again), called inside
        ``np.errstate(**QUIET)`` (the run's loop holds it once)."""
        ray = Ray._along(self.model, w, g, self.c_obj, self.batch(w), self.weight, self.query)
        event = None if math.isinf(budget) else self._event("line_search", budget)[0]
        # A lazy oracle asks one candidate per pass unless a few per pass are cheaper than the
        # per-pass round trips (public q·N and k only; same event, same output distribution).
        lazy = self.lazy and self.weight * steps.shape[-1] > EAGER_ENTRIES
        index = above_threshold_search(ray, steps, alpha=alpha, budget=budget, noise=self.noise,
                                       ledger=self.ledger, rng=self.rng, sampler=self.sampler,
                                       lazy=lazy, event=event, secure_noise=self.secure_noise)
        if np.ndim(index) == 0:  # one search: Python arithmetic
            index = int(index)
            self.queries += index + 1 if index >= 0 else steps.shape[-1]
        else:
            self.queries += int(np.sum(np.where(index >= 0, index + 1, steps.shape[-1])))
        return index

    def select_step(self, w, direction, steps, *, epsilon: float) -> int:
        """NoisyMax: the index of a step in ``steps``, P ∝ exp(−ε·f(w − η d)/(2 C_obj)) (ε-DP).

        f is the clipped loss on a fresh batch (:meth:`ray`), sensitivity C_obj;
        Lee & Kifer 2018's NoisyMin through the exponential mechanism (the exact one with
        ``secure_noise``: same ε, scores rounded to a grid).
        """
        self._check_add_remove()
        with np.errstate(**QUIET):
            scores = self._ray(w, direction, self.batch(w)).at(steps)
        return int(mech.exponential(-scores, epsilon=epsilon, sensitivity=self.c_obj, ledger=self.ledger,
                                    rng=self.rng, sampler=self.sampler, secure_noise=self.secure_noise))

    def shrink_clipping(self, zeta: float) -> None:
        """C_grad ← (1 − ζ)C_grad and C_obj ← (1 − ζ)C_obj (eq. (9), DP-BLSGD-AC)."""
        factor = 1.0 - zeta
        self.c_grad *= factor
        self.c_obj *= factor

    def describe(self) -> dict:
        """Public facts of the oracle for a result's ``info``: rate, q·N, the normalizer."""
        return {"rate": self.rate, "expected_batch_size": self.weight,
                "normalizer": self.normalizer.describe(), "line_search_queries": self.queries}
