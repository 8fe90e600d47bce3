"""Mechanisms: draw privacy noise and charge the ledger in one call.

DESIGN.md invariant 1: every data-dependent release goes through one of these
functions, and each one charges its event to the ledger *before* it draws or
returns anything (so a refused charge releases nothing).

Batching: the value (or scores, or queries) may carry leading axes for R
independent repetitions; noise is drawn independently for every entry in one
vectorized call, and the event is charged once because it describes each
repetition (see :mod:`dpopt.privacy.ledger`).

Subsampling: pass the sampler that drew the data (``sampler=...``); the
charged event is then the amplified ``Subsampled`` event of that sampler's
scheme (invariant 6).

Floating-point safety: ``secure_noise=True`` on :func:`release`,
:func:`laplace` and :func:`gaussian` releases on a power-of-two grid with
exact discrete Laplace / discrete Gaussian noise from the operating system's
CSPRNG (:mod:`dpopt.privacy.secure`), so the low-order bits of the result
carry nothing about the data (Mironov 2012).  The charged event is then the
discrete one, with the grid's integer sensitivity and the same ε (Laplace) or
noise multiplier (Gaussian) as asked; the generator ``rng`` is not used.
``secure_noise=True`` on :func:`exponential` draws the index exactly (integer
scores on a grid, rational acceptance probabilities; the same ε).
On :func:`above_threshold`, :func:`above_threshold_first` and :class:`AboveThresholdSession` it compares
integer-rounded queries on such a grid with exact discrete noise (the
threshold's and every query's), charging a ``DiscreteAboveThreshold``.
:func:`snapping` is the continuous alternative: Mironov's snapping mechanism.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import numpy as np

from .._validation import check_finite_array, check_positive
from . import events as ev
from . import secure
from .ledger import Ledger

__all__ = [
    "laplace",
    "gaussian",
    "vector_laplace",
    "snapping",
    "exponential",
    "exponential_probabilities",
    "secure_exponential_scores",
    "above_threshold",
    "above_threshold_first",
    "AboveThresholdSession",
    "PrepaidGaussianRounds",
    "release",
    "release_charged",
    "secure_event",
    "secure_scale",
    "SECURE_MAX_SCALE",
    "check_ledger",
    "check_rng",
]


def check_ledger(ledger, relation: str | None = None, *, why: str = "") -> Ledger:
    """``ledger`` itself if it is a :class:`Ledger` (``TypeError`` otherwise) whose neighbouring
    relation is ``relation`` when one is given (``ValueError`` otherwise, ``why`` appended)."""
    if not isinstance(ledger, Ledger):
        raise TypeError(f"ledger must be a dpopt.privacy.Ledger, got {type(ledger).__name__}")
    if relation is not None and ledger.relation != relation:
        raise ValueError(
            f"ledger.relation must be {relation!r}{why}: the sensitivities are computed for it; "
            f"got {ledger.relation!r}"
        )
    return ledger


def check_rng(rng) -> np.random.Generator:
    """``rng`` itself if it is a ``numpy.random.Generator`` (``TypeError`` otherwise).

    Mechanisms take a Generator, never a seed: seeding is the caller's decision
    (DESIGN.md invariant 7; ``dpopt._validation.as_generator`` converts seeds).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def _charge(event: ev.Event, ledger, sampler) -> ev.Event:
    charged = sampler.wrap(event) if sampler is not None else event
    check_ledger(ledger).charge(charged)
    return charged


def _scale_from(scale, epsilon, sensitivity: float) -> float:
    if (scale is None) == (epsilon is None):
        raise ValueError("give exactly one of scale and epsilon")
    if scale is not None:
        return check_positive("scale", scale)
    return ev.scale_for_epsilon(sensitivity, check_positive("epsilon", epsilon))


def _draw_vector_laplace(rng: np.random.Generator, scale: float, shape: tuple) -> np.ndarray:
    """Noise with density ∝ exp(−‖w‖₂/scale) over the last axis (han2014 §5.1).

    The radius ‖w‖ has density ∝ r^{d−1} e^{−r/scale}, i.e. Gamma(d, scale),
    and the direction is uniform on the sphere.
    """
    d = shape[-1]
    direction = rng.standard_normal(shape)
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    radius = rng.gamma(shape=d, scale=scale, size=shape[:-1] + (1,))
    return radius * direction


def secure_event(event: ev.Event, size: int) -> tuple[ev.Event, float]:
    """(the discrete event, the grid g) that ``secure_noise=True`` charges for ``event`` on ``size`` values.

    A calibration that will release through the secure samplers calibrates this event.  An
    ``Activated`` or ``Subsampled`` wrapping is kept around the discrete event of the noise it
    wraps: the rounded query of the sample has that integer sensitivity, so the same
    amplification argument applies to it.  For an
    :class:`~dpopt.privacy.events.AboveThreshold` (``size`` unused: every query is a scalar) it is
    the :class:`~dpopt.privacy.events.DiscreteAboveThreshold` of :func:`above_threshold` and
    :class:`AboveThresholdSession` with ``secure_noise=True``.
    """
    if isinstance(event, ev.Activated | ev.Subsampled):
        inner, grid = secure_event(event.event, size)
        return dataclasses.replace(event, event=inner), grid
    d = max(int(size), 1)
    if isinstance(event, ev.AboveThreshold):  # scalar queries: the same ε₁, ε₂ or σ₁, σ₂ in grid units
        grid = secure.grid_for(event.sensitivity, 1.0)
        sensitivity = secure.l1_grid_sensitivity(event.sensitivity, grid, 1)  # ⌊Δ_q/g⌋ + 1
        units = sensitivity / event.sensitivity
        return ev.DiscreteAboveThreshold(event.noise, event.threshold_scale * units, event.query_scale * units,
                                         sensitivity), grid
    if isinstance(event, ev.Laplace):
        grid = secure.grid_for(event.sensitivity, d)
        sensitivity = secure.l1_grid_sensitivity(event.sensitivity, grid, d)
        # same ε = Δ/b as asked: scale in grid units Δ_int·b/Δ (≥ b/g)
        return ev.DiscreteLaplace(event.scale / event.sensitivity * sensitivity, sensitivity), grid
    grid = secure.grid_for(event.sensitivity, math.sqrt(d))
    sensitivity = secure.l2_grid_sensitivity(event.sensitivity, grid, d)
    return ev.DiscreteGaussian(event.noise_multiplier * sensitivity, sensitivity), grid


#: The largest noise scale, in grid steps, a secure release draws (discrete Laplace scale, discrete
#: Gaussian σ, or either scale of a ``DiscreteAboveThreshold``): its noisy integers then stay far
#: below 2⁵³, where doubles hold every integer exactly (and int64 draws cannot overflow).
SECURE_MAX_SCALE = 2.0**46


def secure_scale(discrete: ev.Event) -> float:
    """The largest noise scale, in grid steps, of a discrete event of :func:`secure_event` (wrappers looked through)."""
    while isinstance(discrete, ev.Activated | ev.Subsampled):
        discrete = discrete.event
    names = ("scale", "sigma", "threshold_scale", "query_scale")
    return max(float(getattr(discrete, name)) for name in names if hasattr(discrete, name))


def _check_secure_scale(discrete: ev.Event) -> None:
    scale = secure_scale(discrete)
    if scale > SECURE_MAX_SCALE:
        raise ValueError(
            f"the noise is too large for an exact secure release ({scale:.3g} grid steps, at most 2^46): "
            "the budget of this release is too small to be useful"
        )


def _secure_release(value: np.ndarray, event: ev.Event, ledger, sampler) -> np.ndarray:
    """g·(round(value/g) + exact discrete noise), charging the discrete event first (module docstring)."""
    discrete, grid = secure_event(event, value.size)
    _check_secure_scale(discrete)
    snapped = secure.snap_to_grid(value, grid)  # clamps, never refuses (an error would depend on the data)
    _charge(discrete, ledger, sampler)
    if isinstance(discrete, ev.DiscreteLaplace):
        noise = secure.discrete_laplace_array(discrete.scale, value.shape)
    else:
        noise = secure.discrete_gaussian_array(discrete.sigma, value.shape)
    return (snapped + noise) * grid


def release(
    value, event: ev.Event, *, ledger: Ledger, rng: np.random.Generator, sampler=None, secure_noise: bool = False
):
    """Add the noise an additive-noise ``event`` describes to ``value``, after charging it.

    ``event`` is a :class:`~dpopt.privacy.events.Laplace` (i.i.d. per
    coordinate), :class:`~dpopt.privacy.events.Gaussian` (i.i.d. per
    coordinate) or :class:`~dpopt.privacy.events.VectorLaplace` (over the last
    axis).  The keyword forms :func:`laplace`, :func:`gaussian` and
    :func:`vector_laplace` build the event for you.  ``secure_noise=True``
    (Laplace and Gaussian) releases on a grid with exact discrete noise (module docstring).
    """
    value = check_finite_array("value", value)
    check_rng(rng)
    if isinstance(event, ev.VectorLaplace) and value.ndim == 0:
        raise ValueError("vector_laplace needs a value with at least one axis (the vector)")
    if not isinstance(event, ev.Laplace | ev.Gaussian | ev.VectorLaplace):
        raise TypeError(f"release adds Laplace, Gaussian or VectorLaplace noise, got {type(event).__name__}")
    if secure_noise:
        if isinstance(event, ev.VectorLaplace):
            raise ValueError("secure_noise is available for Laplace and Gaussian noise, not VectorLaplace")
        return _secure_release(value, event, ledger, sampler)
    _charge(event, ledger, sampler)
    return _noised(value, event, rng)


def release_charged(value: np.ndarray, event: ev.Event, charged: ev.Event, *, ledger: Ledger,
                    rng: np.random.Generator) -> np.ndarray:
    """:func:`release` for a caller that checked everything but the value once, for many releases
    (:class:`~dpopt.oracles.PrivateOracle`'s gradients): ``event`` a Laplace, Gaussian or
    VectorLaplace event (not secure), ``charged`` that event as the caller's sampler amplifies it
    (``sampler.wrap(event)``, or ``event`` itself without sampling), ``ledger`` a
    :class:`Ledger`, ``rng`` a Generator.  ``value`` (a float array) must be finite (``ValueError``
    before anything is charged); ``charged`` is charged, then the noise is drawn: the numbers of
    :func:`release` with the same arguments.  A ``charged`` that is neither ``event`` nor a
    :class:`~dpopt.privacy.events.Subsampled` of it is refused (``ValueError``, nothing charged or drawn).
    """
    if charged != event and not (type(charged) is ev.Subsampled and charged.event == event):
        raise ValueError("charged must be the released event or its sampler's wrapping of it (Subsampled)")
    if not np.logical_and.reduce(np.isfinite(value), axis=None):
        raise ValueError("value contains NaN or infinite value(s)")
    ledger.charge(charged)
    return _noised(value, event, rng)


def _noised(value: np.ndarray, event: ev.Event, rng: np.random.Generator) -> np.ndarray:
    """``value`` plus the noise of an additive-noise ``event``, drawn now (after its charge)."""
    if isinstance(event, ev.Laplace):
        return value + rng.laplace(0.0, event.scale, size=value.shape)
    if isinstance(event, ev.Gaussian):
        return value + rng.normal(0.0, event.sigma, size=value.shape)
    return value + _draw_vector_laplace(rng, event.scale, value.shape)


def laplace(
    value, *, sensitivity: float, ledger: Ledger, rng, scale=None, epsilon=None, sampler=None, secure_noise=False
):
    """``value`` + i.i.d. Laplace(scale) per coordinate; ε = sensitivity/scale for L1 ``sensitivity``.

    Give either ``scale`` or ``epsilon`` (then scale = sensitivity/ε).
    ``secure_noise=True``: exact discrete Laplace on a grid instead (module docstring).
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    event = ev.Laplace(_scale_from(scale, epsilon, sensitivity), sensitivity)
    return release(value, event, ledger=ledger, rng=rng, sampler=sampler, secure_noise=secure_noise)


def snapping(value, *, sensitivity: float, bound: float, ledger: Ledger, scale=None, epsilon=None, sampler=None):
    """A scalar query released by the snapping mechanism (Mironov 2012; :mod:`dpopt.privacy.snapping`).

    Floating-point-safe Laplace-like noise for a continuous output: ``value`` (a scalar, or an
    array of R independent repetitions of one) is clamped to [−``bound``, ``bound``], noised
    with scale λ and rounded to a power-of-two grid Λ ≥ λ, drawn from the OS CSPRNG.  The charged
    event is :class:`~dpopt.privacy.events.Snapping` with the sensitivity rounded up to a power
    of two Δ₂ and ε = (Δ₂ + 2⁻⁴⁹·bound)/λ (Mironov 2012, Thm 1); give ``scale`` λ or ``epsilon``
    (then the smallest λ with that ε).
    """
    from .snapping import power_of_two_at_least, snap

    exact = power_of_two_at_least(check_positive("sensitivity", sensitivity))
    bound = check_positive("bound", bound)
    if (scale is None) == (epsilon is None):
        raise ValueError("give exactly one of scale and epsilon")
    if scale is None:
        scale = ev.scale_for_epsilon(exact + 2.0**-49 * bound, check_positive("epsilon", epsilon))
        while ev.Snapping(scale, bound, exact).epsilon > epsilon:
            scale = math.nextafter(scale, math.inf)
    value = check_finite_array("value", value)
    event = ev.Snapping(check_positive("scale", scale), bound, exact)  # validates λ < B < 2⁴⁶λ
    _charge(event, ledger, sampler)
    return snap(value, scale=event.scale, bound=bound, sensitivity=exact)


def gaussian(
    value,
    *,
    sensitivity: float,
    ledger: Ledger,
    rng,
    sigma=None,
    noise_multiplier=None,
    sampler=None,
    secure_noise=False,
):
    """``value`` + i.i.d. N(0, σ²) per coordinate for a query of L2 ``sensitivity``.

    Give either the absolute ``sigma`` or ``noise_multiplier`` (σ = multiplier·sensitivity).
    ``secure_noise=True``: exact discrete Gaussian on a grid instead (module docstring).
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    if (sigma is None) == (noise_multiplier is None):
        raise ValueError("give exactly one of sigma and noise_multiplier")
    if sigma is None:
        sigma = check_positive("noise_multiplier", noise_multiplier) * sensitivity
    event = ev.Gaussian(check_positive("sigma", sigma), sensitivity)
    return release(value, event, ledger=ledger, rng=rng, sampler=sampler, secure_noise=secure_noise)


def vector_laplace(value, *, sensitivity: float, ledger: Ledger, rng, scale=None, epsilon=None, sampler=None):
    """``value`` + noise with density ∝ exp(−‖w‖₂/scale) over the last axis (han2014 Thm 9).

    ε = sensitivity/scale for a query of L2 ``sensitivity``.
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    event = ev.VectorLaplace(_scale_from(scale, epsilon, sensitivity), sensitivity)
    return release(value, event, ledger=ledger, rng=rng, sampler=sampler)


def exponential_probabilities(scores, *, epsilon: float, sensitivity: float) -> np.ndarray:
    """P(i) ∝ exp(ε·u_i/(2Δu)) over the last axis, computed stably (max-shifted softmax)."""
    scores = check_finite_array("scores", scores)
    logits = check_positive("epsilon", epsilon) * scores / (2.0 * check_positive("sensitivity", sensitivity))
    logits = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def exponential(
    scores, *, epsilon: float, sensitivity: float, ledger: Ledger, rng, sampler=None, secure_noise: bool = False
) -> np.ndarray:
    """Index drawn with P(i) ∝ exp(ε·u_i/(2Δu)) over the last axis of ``scores`` (ε-DP).

    ``sensitivity`` is Δu, the most one record can change any score.  Drawn by
    the Gumbel-max trick, argmax(ε·u/(2Δu) + Gumbel), which never
    exponentiates, so it neither overflows nor underflows.  It is not exact in
    floating point: once |ε·u/(2Δu)| nears 2⁵³ the Gumbel noise is lost in the
    rounding and the choice is a function of the rounded scores (equal scores
    of 2⁶⁰ always give index 0); ``secure_noise=True`` is exact.  Returns an
    integer array of shape ``scores.shape[:-1]``.

    ``secure_noise=True`` draws it exactly instead (:func:`secure_exponential_scores`
    gives the integer scores and sensitivity): P(i) ∝ exp(−ε·(max_j ũ_j − ũ_i)/(2Δ̃)) for
    ũ = round(u/g) on a power-of-two grid g ≤ Δu/2²⁰ and Δ̃ = ⌊Δu/g⌋ + 1, the integer
    sensitivity of the rounded scores, by :func:`~dpopt.privacy.secure.exponential_index`
    (uniform proposals from the OS CSPRNG accepted with exact Bernoulli(exp(−γ)), γ
    rational).  The charged event is the same ``Exponential(ε)``: the mechanism is exactly
    ε-DP for the rounded scores, whose sensitivity Δ̃ it uses; the rounding costs a relative
    ≤ 2⁻²⁰ of sharpness, no privacy.  Expected cost: n/Σ_j exp(−γ_j) ≤ n proposals per draw.
    """
    scores = check_finite_array("scores", scores)
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise ValueError("scores must have a non-empty last axis of candidates")
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    check_rng(rng)
    if secure_noise:
        gaps, integer_sensitivity = secure_exponential_scores(scores, sensitivity)  # validates before the charge
        _charge(ev.Exponential(epsilon), ledger, sampler)
        exact = Fraction(epsilon)
        rows = gaps.reshape(-1, gaps.shape[-1]).tolist()
        chosen = [secure.exponential_index(row, exact, integer_sensitivity) for row in rows]
        return np.array(chosen, dtype=np.int64).reshape(scores.shape[:-1])
    _charge(ev.Exponential(epsilon), ledger, sampler)
    logits = epsilon * scores / (2.0 * sensitivity)
    return np.argmax(logits + rng.gumbel(size=scores.shape), axis=-1)


#: |score|/g of the exact exponential mechanism is clamped here (gaps stay below 2⁶¹, in int64)
_SCORE_UNITS = 2.0**60


def secure_exponential_scores(scores, sensitivity: float) -> tuple[np.ndarray, int]:
    """(gaps, Δ̃) of the exact exponential mechanism: max − round(u/g) per row as int64, and ⌊Δu/g⌋ + 1.

    g = :func:`~dpopt.privacy.secure.grid_for` (Δu, 1), a power of two, so u/g is exact;
    rounding moves each score by ≤ ½, so the integer scores have sensitivity
    ⌊Δu/g⌋ + 1 (:func:`~dpopt.privacy.secure.l1_grid_sensitivity` of one coordinate).  Scores
    beyond 2⁶⁰ grid steps are clamped (1-Lipschitz: the sensitivity holds), never refused: an
    error that depends on the scores would tell neighbours apart.
    """
    grid = secure.grid_for(sensitivity, 1)
    scaled = np.clip(np.asarray(scores, dtype=float) / grid, -_SCORE_UNITS, _SCORE_UNITS)
    integer = np.rint(scaled).astype(np.int64)
    return integer.max(axis=-1, keepdims=True) - integer, secure.l1_grid_sensitivity(sensitivity, grid, 1)


def _threshold_noise(rng: np.random.Generator, event, scale: float, shape) -> np.ndarray:
    if isinstance(event, ev.DiscreteAboveThreshold):  # exact, from the OS CSPRNG (rng unused)
        if event.noise == "laplace":
            return secure.discrete_laplace_array(scale, shape)
        return secure.discrete_gaussian_array(scale, shape)
    if event.noise == "laplace":
        return rng.laplace(0.0, scale, size=shape)
    return rng.normal(0.0, scale, size=shape)


def _check_above_threshold(event) -> ev.AboveThreshold:
    if not isinstance(event, ev.AboveThreshold):
        raise TypeError(f"event must be an events.AboveThreshold, got {type(event).__name__}")
    return event


def _check_query_count(queries) -> None:
    """``ValueError`` unless ``queries`` (how many queries a search may ask) is an integer ≥ 1."""
    if isinstance(queries, bool) or not isinstance(queries, int | np.integer) or queries < 1:
        raise ValueError(f"queries must be an integer >= 1, got {queries!r}")


class _Comparisons:
    """The noisy threshold and the noisy query answers of one AboveThreshold run.

    Plain: q_i + ν_i against T + λ with the event's continuous noise.  Secure
    (``secure_noise=True``): on the grid g of :func:`secure_event`, the integer
    query round(clamp(q_i/g)) + ν_i against round(T/g) + λ, with ν_i and λ exact
    discrete Laplace or discrete Gaussian draws from the OS CSPRNG; the queries'
    integer sensitivity is ⌊Δ_q/g⌋ + 1 and the charged event is the
    :class:`~dpopt.privacy.events.DiscreteAboveThreshold` (its RDP:
    :func:`dpopt.privacy.rdp.above_threshold_rdp`).  The event (the discrete one when
    secure) is charged before anything is drawn.
    """

    def __init__(self, event, ledger, rng, sampler, secure_noise: bool):
        self.event = _check_above_threshold(event)
        self.rng = check_rng(rng)
        self.grid = None
        if secure_noise:
            self.event, self.grid = secure_event(event, 1)
            _check_secure_scale(self.event)
        _charge(self.event, ledger, sampler)

    def _units(self, values) -> np.ndarray:
        if self.grid is None:
            return values
        return secure.snap_to_grid(values, self.grid)  # clamped to ±2⁵⁰ grid steps: 1-Lipschitz, exact sums

    def threshold(self, threshold, shape) -> np.ndarray:
        return self._units(np.asarray(threshold, dtype=float)) + _threshold_noise(
            self.rng, self.event, self.event.threshold_scale, shape)

    def units(self, values) -> np.ndarray:
        """The query answers as compared (grid units when secure)."""
        return self._units(values)

    def noise(self, shape) -> np.ndarray:
        """Noise of queries of ``shape`` (drawn now)."""
        return _threshold_noise(self.rng, self.event, self.event.query_scale, shape)

    def queries(self, values) -> np.ndarray:
        return self._units(values) + self.noise(values.shape)

    def first_draws(self, threshold: float, k: int):
        """(T̂, ν) of one search: the noisy threshold and the noise of k queries, the numbers of
        :meth:`threshold` ``(threshold, ())`` then :meth:`noise` ``((k,))``.  Plain noise is drawn
        in one generator call at scale 1 and scaled: Generator.laplace and Generator.normal compute
        loc + scale·(one unit draw), so b·(unit draw) is the same float, from the same stream."""
        if self.grid is not None:
            return self.threshold(threshold, ()), self.noise((k,))
        event = self.event
        unit = (self.rng.laplace(0.0, 1.0, size=k + 1) if event.noise == "laplace"
                else self.rng.normal(0.0, 1.0, size=k + 1))
        return threshold + event.threshold_scale * float(unit[0]), event.query_scale * unit[1:]


def above_threshold(queries, *, event: ev.AboveThreshold, ledger: Ledger, rng, threshold=0.0, sampler=None,
                    secure_noise: bool = False):
    """AboveThreshold (chen2020 Algorithm 1, lines 4–12) over precomputed query answers.

    ``queries[..., i]`` are the answers q_1, q_2, … in the order they are
    asked, each of sensitivity ``event.sensitivity``.  One noisy threshold
    T̂ = threshold + λ is drawn per repetition and re-used for every query; the
    result is the index of the first i with q_i + ν_i ≥ T̂, or −1 when none is.
    Use :class:`AboveThresholdSession` when each query is expensive and should
    only be computed if the previous ones were below the threshold.
    ``secure_noise=True`` compares integer queries on a grid with exact discrete
    noise and charges the discrete event (:class:`_Comparisons`).
    """
    queries = check_finite_array("queries", queries)
    if queries.ndim == 0 or queries.shape[-1] == 0:
        raise ValueError("queries must have a non-empty last axis")
    run = _Comparisons(event, ledger, rng, sampler, secure_noise)
    noisy_threshold = run.threshold(threshold, queries.shape[:-1])
    above = run.queries(queries) >= noisy_threshold[..., None]
    return np.where(above.any(axis=-1), np.argmax(above, axis=-1), -1)


class AboveThresholdSession:
    """Interactive AboveThreshold: ask queries one at a time, stop at the first above threshold.

    The event is charged when the session opens (before any answer exists) and
    one noisy threshold per repetition is drawn then and re-used for every
    query.  :meth:`ask` takes the answers of the next query for all
    repetitions (shape ``batch_shape``) and returns which repetitions fire
    now; a repetition that has fired is finished and ignores later queries.
    :meth:`ask_block` takes the answers of the next few queries at once.
    ``secure_noise=True``: integer queries on a grid with exact discrete noise, the
    discrete event charged (see :func:`above_threshold`); ``event`` is then the charged one.

    ``queries`` (optional, public): the most queries the session will be asked.  Their noise
    is then drawn when the session opens, right after the threshold's, in one call — the
    random stream of :func:`above_threshold` over that many queries, so a caller that
    evaluates the queries lazily (only as far as the first one above the threshold) gets
    exactly :func:`above_threshold`'s answer and leaves the generator where it would.  The
    noise of a query never asked is discarded unseen: the output distribution is unchanged.
    Without ``queries`` each :meth:`ask` draws its own noise.
    """

    def __init__(self, event: ev.AboveThreshold, *, ledger: Ledger, rng, threshold=0.0, batch_shape=(), sampler=None,
                 secure_noise: bool = False, queries: int | None = None):
        if queries is not None:
            _check_query_count(queries)
        self._run = _Comparisons(event, ledger, rng, sampler, secure_noise)
        self.event = self._run.event
        self.batch_shape = (batch_shape,) if isinstance(batch_shape, int) else tuple(batch_shape)
        self._threshold = self._run.threshold(threshold, self.batch_shape)
        self._noise = None if queries is None else self._run.noise(self.batch_shape + (int(queries),))
        self.active = np.ones(self.batch_shape, dtype=bool) if self.batch_shape else np.array(True)
        self.asked = 0

    def _noisy(self, values: np.ndarray) -> np.ndarray:
        """The next queries (last axis) with their noise, pre-drawn or drawn now."""
        if self._noise is None:
            return self._run.queries(values)
        k = values.shape[-1]
        if self.asked + k > self._noise.shape[-1]:
            raise RuntimeError(f"this session was opened for {self._noise.shape[-1]} queries")
        return self._run.units(values) + self._noise[..., self.asked : self.asked + k]

    def ask(self, query) -> np.ndarray:
        """Answers of the next query → boolean array: True where this query is the first above."""
        query = check_finite_array("query", query)
        if query.shape != self.batch_shape:
            raise ValueError(f"query must have shape {self.batch_shape}, got {query.shape}")
        if not self.active.any():
            raise RuntimeError("every repetition has already halted; open a new session")
        noisy = self._run.queries(query) if self._noise is None else self._noisy(query[..., None])[..., 0]
        fired = self.active & (noisy >= self._threshold)
        self.active = self.active & ~fired
        self.asked += 1
        return fired

    def ask_block(self, queries) -> np.ndarray:
        """Answers of the next k queries (last axis k, leading axes ``batch_shape``) → per
        repetition the position in the block of the first query above the threshold, −1 where
        none is (or where the repetition had already fired).  The same noise, comparisons and
        stream as k calls of :meth:`ask`, or as :func:`above_threshold` when ``queries`` was given."""
        queries = np.asarray(queries, dtype=float)
        if queries.ndim == 0 or queries.shape[:-1] != self.batch_shape or queries.shape[-1] == 0:
            raise ValueError(f"queries must have shape {self.batch_shape} + (k,) with k >= 1, got {queries.shape}")
        if not np.isfinite(queries).all():
            raise ValueError("queries contains NaN or infinite value(s)")
        if not self.active.any():
            raise RuntimeError("every repetition has already halted; open a new session")
        k = queries.shape[-1]
        if self._noise is None:  # one query at a time, as ask() draws them
            index = np.full(self.batch_shape, -1)
            for j in range(k):
                index = np.where(self.ask(queries[..., j]), j, index)
                if not self.active.any():
                    break
            return index
        above = self._noisy(queries) >= self._threshold[..., None]
        self.asked += k
        index = np.where(above.any(axis=-1), np.argmax(above, axis=-1), -1)
        index = np.where(self.active, index, -1)
        self.active = self.active & (index < 0)
        return index


def above_threshold_first(answers, queries: int, *, event: ev.AboveThreshold, ledger: Ledger, rng,
                          sampler=None, secure_noise: bool = False, threshold: float = 0.0,
                          first_chunk: int = 1, growth: int = 1) -> int:
    """AboveThreshold over one search's ``queries`` answers, each computed only if it is asked: the
    index of the first answer above the noisy threshold, −1 if none is (chen2020 Algorithm 1,
    lines 4–12).

    ``answers(start, stop)`` returns the answers q_start … q_{stop−1} as a float array of shape
    ``(stop − start,)``; they are asked in chunks of ``first_chunk``, then ``growth`` times as
    many each time, up to the first above the threshold.  The event is charged, then the
    threshold's noise and the noise of all ``queries`` queries are drawn, in that order: the random
    stream of :func:`above_threshold` over ``queries`` answers, so the index is the one
    :func:`above_threshold` gives on all the answers from a generator in the same state, whatever
    the chunks, and the generator is left where it leaves it.  The noise of a query never asked
    is discarded unseen (the output distribution is unchanged).  ``secure_noise=True``: integer
    answers on a grid with exact discrete noise, the discrete event charged (:class:`_Comparisons`).
    This is the one-search case of :class:`AboveThresholdSession` opened for ``queries`` queries
    without its per-call bookkeeping: the line-search oracle's path.
    """
    _check_query_count(queries)
    run = _Comparisons(event, ledger, rng, sampler, secure_noise)
    noisy_threshold, noise = run.first_draws(float(threshold), int(queries))
    grid, start, chunk = run.grid, 0, first_chunk
    while start < queries:
        stop = min(start + chunk, queries)
        values = answers(start, stop)
        if values.shape != (stop - start,):
            raise ValueError(f"answers({start}, {stop}) must have shape ({stop - start},), got {values.shape}")
        if not np.logical_and.reduce(np.isfinite(values)):
            raise ValueError("queries contains NaN or infinite value(s)")
        above = (values if grid is None else run.units(values)) + noise[start:stop] >= noisy_threshold
        found = int(above.argmax())
        if above[found]:
            return start + found
        start, chunk = stop, chunk * growth
    return -1


def _inner_gaussian(event: ev.Event, kind=ev.Gaussian):
    """The ``kind`` (Gaussian) event an ``Activated``/``Subsampled`` wrapping describes (``TypeError`` otherwise)."""
    while isinstance(event, ev.Activated | ev.Subsampled):
        event = event.event
    if not isinstance(event, kind):
        raise TypeError(f"round_event must wrap a Gaussian event, got {type(event).__name__}")
    return event


class PrepaidGaussianRounds:
    """Gaussian releases of one record holder over a block of rounds, charged when the block opens.

    ``round_event`` describes one round of the holder (e.g.
    ``Activated(Subsampled(Gaussian(σ, Δ), 1/q, "without_replacement"), ι)``:
    active with probability ι, then one of its q records).  Opening the block
    charges ``SelfComposed(round_event, rounds)`` to ``ledger`` before any
    noise exists (a refused charge opens nothing).  :meth:`release` then adds
    N(0, σ²) noise, drawn from ``rng``, to the value of round ``t`` of the block;
    each round releases at most once, and a round outside the block raises.
    Prepaying a block keeps the ledger off the per-round path when thousands
    of holders release every round.

    ``secure_noise=True`` (with ``size``, the number of values one release
    holds): each release is g·(round(value/g) + Z) with Z exact discrete
    Gaussian from the OS CSPRNG, and the block charges the discrete round event
    :func:`secure_event` gives for ``round_event`` (same wrapping, same noise
    multiplier, the grid's integer sensitivity); ``rng`` is then not used and
    ``sigma`` is in grid units (``grid`` is g).
    """

    def __init__(self, round_event: ev.Event, *, rounds: int, first_round: int, ledger: Ledger, rng,
                 secure_noise: bool = False, size: int | None = None):
        from .._validation import check_int

        self.sigma = _inner_gaussian(round_event).sigma
        self.rounds = check_int("rounds", rounds)
        self.first_round = check_int("first_round", first_round, minimum=0)
        self._rng = check_rng(rng)
        self.grid, self.size = None, None
        if secure_noise:
            if size is None:
                raise ValueError("secure_noise=True needs size, the number of values one release holds")
            self.size = check_int("size", size)
            round_event, self.grid = secure_event(round_event, self.size)
            _check_secure_scale(round_event)  # public numbers only; before the block is charged
            self.sigma = _inner_gaussian(round_event, ev.DiscreteGaussian).sigma
        self.event = round_event if self.rounds == 1 else ev.SelfComposed(round_event, self.rounds)
        check_ledger(ledger).charge(self.event)
        self._last = self.first_round - 1

    def release(self, value: np.ndarray, round_index: int) -> np.ndarray:
        """``value`` + N(0, σ²) per entry for round ``round_index`` (increasing, within the block)."""
        self._check_round(round_index)
        if self.grid is not None:
            return PrepaidGaussianRounds.release_rows([self], [1], np.asarray(value, dtype=float)[None], round_index)[0]
        self._last = round_index
        return value + self.sigma * self._rng.standard_normal(np.shape(value))

    def _check_round(self, round_index: int) -> None:
        """Refuse a round outside the block or one not after the last released round."""
        if not self._last < round_index < self.first_round + self.rounds:
            raise RuntimeError(
                f"round {round_index} is not an unreleased round of this prepaid block "
                f"[{self.first_round}, {self.first_round + self.rounds})"
            )

    def _secure_rows(self, rows: np.ndarray) -> np.ndarray:
        """g·(round(rows/g) + Z) per entry, Z exact discrete Gaussian of σ grid units (:mod:`.secure`)."""
        if rows.ndim < 2 or rows.shape[-1] != self.size:
            raise ValueError(f"a secure release holds size={self.size} values on the last axis, got {rows.shape[1:]}")
        snapped = secure.snap_to_grid(rows, self.grid)
        return (snapped + secure.discrete_gaussian_array(self.sigma, rows.shape)) * self.grid

    @staticmethod
    def release_rows(sessions, counts, value: np.ndarray, round_index: int) -> np.ndarray:
        """Round ``round_index`` of many holders in one call: ``value`` + N(0, σ²) per entry.

        The first ``counts[0]`` rows of ``value`` are ``sessions[0]``'s, the
        next ``counts[1]`` rows ``sessions[1]``'s, and so on; each holder's
        noise comes from its own generator, exactly the numbers (and the sum)
        that ``sessions[j].release(rows_j, round_index)`` gives, but drawn
        straight into one block (no per-holder temporaries).  Every session is
        checked before any noise is drawn.  Secure sessions (all or none)
        release each holder's rows on its grid (class docstring).
        """
        value = np.asarray(value, dtype=float)
        counts = [int(c) for c in counts]
        if not sessions and len(value) == 0:
            return value.copy()
        if len(counts) != len(sessions) or sum(counts) != len(value) or min(counts, default=1) < 1:
            raise ValueError(f"counts must give each of the {len(sessions)} sessions >= 1 of the {len(value)} rows")
        secure_sessions = sum(s.grid is not None for s in sessions)
        if 0 < secure_sessions < len(sessions):
            raise ValueError("release_rows needs sessions that are all secure_noise or all not")
        for s in sessions:
            s._check_round(round_index)
        if secure_sessions and len({(s.grid, s.sigma, s.size) for s in sessions}) == 1:
            for s in sessions:  # one grid and law: the whole block in one vectorized draw
                s._last = round_index
            return sessions[0]._secure_rows(value)
        noise = np.empty(value.shape)
        lo = 0
        for s, c in zip(sessions, counts, strict=True):
            s._last = round_index
            if secure_sessions:
                noise[lo : lo + c] = s._secure_rows(value[lo : lo + c])
            else:
                s._rng.standard_normal(out=noise[lo : lo + c])
            lo += c
        if secure_sessions:
            return noise
        sigmas = [s.sigma for s in sessions]
        if sigmas.count(sigmas[0]) == len(sigmas):
            noise *= sigmas[0]
        else:
            noise *= np.repeat(sigmas, counts).reshape((-1,) + (1,) * (value.ndim - 1))
        noise += value
        return noise
