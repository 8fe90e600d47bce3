"""Privacy events: immutable values that describe one data-dependent release.

Events say *what* was released (which noise, at which scale, for which
sensitivity, on which subsample); accountants (:mod:`dpopt.privacy.pure`,
:mod:`dpopt.privacy.rdp`, :mod:`dpopt.privacy.zcdp`) say *what it costs*.
This is the separation of DESIGN.md invariant 3, in the style of Google's
dp-accounting library.

Every event has ``to_dict``/``to_json`` and :func:`from_json` rebuilds it
exactly (floats are written with ``repr`` precision, so the round trip is
bit-for-bit).

Sensitivities are always absolute: ``Gaussian(sigma=2.0, sensitivity=0.5)``
adds N(0, 2²) noise to a query whose L2 sensitivity is 0.5, i.e. a noise
multiplier of 4.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields
from typing import ClassVar

from .._validation import check_choice, check_int, check_open_unit, check_positive, check_rate

__all__ = [
    "Event",
    "Laplace",
    "Gaussian",
    "VectorLaplace",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "Exponential",
    "PureDP",
    "ApproxDP",
    "AboveThreshold",
    "DiscreteAboveThreshold",
    "Subsampled",
    "Activated",
    "Composed",
    "SelfComposed",
    "RenyiBound",
    "from_dict",
    "from_json",
    "POISSON",
    "WITHOUT_REPLACEMENT",
    "scale_for_epsilon",
]

POISSON = "poisson"
WITHOUT_REPLACEMENT = "without_replacement"
_SCHEMES = (POISSON, WITHOUT_REPLACEMENT)

_REGISTRY: dict[str, type[Event]] = {}


class Event:
    """Base class of all privacy events (frozen dataclasses)."""

    kind: ClassVar[str] = "event"
    #: field name -> check(name, value) returning the stored value, applied after __init__
    _checks: ClassVar[dict] = {}

    def __post_init__(self):
        for name, check in self._checks.items():
            object.__setattr__(self, name, check(name, getattr(self, name)))

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):  # shared bases are not event kinds
            _REGISTRY[cls.kind] = cls

    def to_dict(self) -> dict:
        out = {"type": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Event):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = [v.to_dict() for v in value]
            out[f.name] = value
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def _unnamed(check):
    """A check(value) as a check(name, value) for :attr:`Event._checks`."""
    return lambda name, value: check(value)


def from_dict(data: dict) -> Event:
    """Rebuild an event from :meth:`Event.to_dict` output."""
    if not isinstance(data, dict) or "type" not in data:
        raise ValueError("an event dict needs a 'type' key")
    kind = data["type"]
    if kind not in _REGISTRY:
        raise ValueError(f"unknown event type {kind!r}; known: {sorted(_REGISTRY)}")
    cls = _REGISTRY[kind]
    kwargs = {}
    for key, value in data.items():
        if key == "type":
            continue
        if isinstance(value, dict) and "type" in value:
            value = from_dict(value)
        elif isinstance(value, list):
            value = tuple(from_dict(v) for v in value)
        kwargs[key] = value
    return cls(**kwargs)


def from_json(text: str) -> Event:
    """Rebuild an event from :meth:`Event.to_json` output."""
    return from_dict(json.loads(text))


class IdentityCache:
    """Values computed from event objects, found again by the object's identity (no hashing of
    the event): a loop that charges the same event objects every iteration looks each up in
    O(1).  Each entry holds its object, so no other object can take its id while the entry
    lives; the cache is emptied when it reaches ``size`` entries.  Events are immutable, so a
    value computed from an object stays right for it.
    """

    __slots__ = ("_size", "_items")

    def __init__(self, size: int):
        self._size = size
        self._items: dict = {}

    def get(self, obj):
        """The value stored for this very ``obj``, else None."""
        hit = self._items.get(id(obj))
        return hit[1] if hit is not None and hit[0] is obj else None

    def put(self, obj, value):
        """Store ``value`` for ``obj`` and return it."""
        if len(self._items) >= self._size:
            self._items.clear()
        self._items[id(obj)] = (obj, value)
        return value


def scale_for_epsilon(sensitivity: float, epsilon: float) -> float:
    """The smallest noise scale b with ``sensitivity / b <= epsilon`` in floating point.

    b = Δ/ε rounded can give Δ/b = ε·(1 + 2⁻⁵²); the ledger compares exactly,
    so scales computed from a budget are rounded *up* here until the cost an
    accountant recomputes from them is within the budget.
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    epsilon = check_positive("epsilon", epsilon)
    scale = sensitivity / epsilon
    while sensitivity / scale > epsilon:
        scale = math.nextafter(scale, math.inf)
    return scale


@dataclass(frozen=True)
class _ScaledPureQuery(Event):
    """Noise of ``scale`` on a query of ``sensitivity`` whose pure guarantee is ε = sensitivity/scale."""

    scale: float
    sensitivity: float = 1.0

    _checks: ClassVar[dict] = {"scale": check_positive, "sensitivity": check_positive}

    @property
    def epsilon(self) -> float:
        return self.sensitivity / self.scale


@dataclass(frozen=True)
class Laplace(_ScaledPureQuery):
    """Laplace noise of ``scale`` b added to a query of L1 ``sensitivity`` Δ₁: ε = Δ₁/b."""

    kind: ClassVar[str] = "laplace"


@dataclass(frozen=True)
class Gaussian(Event):
    """Gaussian noise N(0, sigma²) added to a query of L2 ``sensitivity`` Δ₂.

    ``noise_multiplier`` = sigma/Δ₂ is what RDP accounting depends on.
    """

    kind: ClassVar[str] = "gaussian"
    sigma: float
    sensitivity: float = 1.0

    _checks: ClassVar[dict] = {"sigma": check_positive, "sensitivity": check_positive}

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity


@dataclass(frozen=True)
class VectorLaplace(_ScaledPureQuery):
    """Vector Laplace noise with density ∝ exp(−‖w‖₂/scale) on a query of L2 ``sensitivity``.

    ε = sensitivity/scale (han2014 Thm 9: no extra √d factor is needed).
    """

    kind: ClassVar[str] = "vector_laplace"


def _check_integer_sensitivity(value) -> int:
    """An integer sensitivity ≥ 1 (integers, or floats with an integer value, as JSON writes them)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return check_int("sensitivity", value, minimum=1)


@dataclass(frozen=True)
class DiscreteLaplace(Event):
    """Discrete Laplace noise P(x) ∝ exp(−|x|/scale) on the integers, for an integer-valued query.

    ``sensitivity`` is the integer L1 sensitivity Δ; ε = Δ/scale (Canonne,
    Kamath & Steinke 2020, §2; Ghosh, Roughgarden & Sundararajan 2012 for the
    geometric mechanism).  :mod:`dpopt.privacy.secure` releases it on a grid.
    """

    kind: ClassVar[str] = "discrete_laplace"
    scale: float
    sensitivity: int = 1

    _checks: ClassVar[dict] = {"scale": check_positive, "sensitivity": _unnamed(_check_integer_sensitivity)}

    @property
    def epsilon(self) -> float:
        return self.sensitivity / self.scale


#: τ of :meth:`DiscreteGaussian.dominating_gaussian`: the periodic factor of the rounding kernel is
#: within 1 ± η, η = 2Σ_{k≥1} e^{−2π²τ²k²} ≈ 1.3e-137, of a constant
DOMINATING_TAU = 4.0


@dataclass(frozen=True)
class DiscreteGaussian(Event):
    """Discrete Gaussian noise P(x) ∝ exp(−x²/(2 sigma²)) on ℤ^d, for an integer-valued query.

    ``sensitivity`` is the integer L2 sensitivity Δ (‖v‖₂ ≤ Δ for the integer
    vector v by which neighbours move the query).  It is Δ²/(2σ²)-zCDP like
    the continuous Gaussian (Canonne, Kamath & Steinke 2020, Prop. 5: at an
    integer shift the Rényi divergences are exactly the continuous ones, and
    they add over coordinates).  For subsampled and (ε, δ) accounting see
    :meth:`dominating_gaussian`.
    """

    kind: ClassVar[str] = "discrete_gaussian"
    sigma: float
    sensitivity: int = 1

    _checks: ClassVar[dict] = {"sigma": check_positive, "sensitivity": _unnamed(_check_integer_sensitivity)}

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity

    def dominating_gaussian(self) -> Gaussian | None:
        """A continuous ``Gaussian(σ', Δ)``, σ' = √(σ² − τ²), τ = 4, whose accounting covers this event in
        any dimension, subsampled or not; None when σ ≤ τ.

        Proof.  Let K(y, ·) = N_ℤ(y, τ²) for real y: P(z) ∝ e^{−(z−y)²/(2τ²)} on ℤ, with normalizer
        Z_τ(y) = Σ_k e^{−(k−y)²/(2τ²)}, which is 1-periodic and, by Poisson summation, within
        √(2π)τ·[1 − η, 1 + η], η = 2Σ_{k≥1} e^{−2π²τ²k²}.  Apply K to every coordinate of the
        continuous release y = f + N(0, σ'²I) of an integer query f.  Since Z_τ(f + u) = Z_τ(u), the
        output has the law ∝ ∫ φ_{σ'}(u) e^{−(w−u)²/(2τ²)}/Z_τ(u) du at w = z − f, and without the
        factor 1/Z_τ that integral is ∝ e^{−w²/(2(σ'² + τ²))}: the discrete Gaussian of variance σ².
        So the discrete release's probability of every outcome is within a factor e^{±dξ},
        ξ = log((1 + η)/(1 − η)), of a post-processing of the continuous Gaussian mechanism with σ'
        and the same sensitivity; mixtures over Poisson subsamples keep the factor.  Every bound of
        the continuous mechanism (the exact subsampled-Gaussian RDP, its PLD) therefore holds for the
        discrete one up to ξ·d: with τ = 4, ξ < 3e-137, below 1e-120 for any d < 2⁵³, far under
        double precision, so nothing is added.  The cover loses noise (σ' = 0.6σ at σ = 5, 0.99992σ
        at 10³; the secure releases' σ is z·2²⁰ grid units or more for a noise multiplier z), so the
        RDP accountant keeps the exact (unsubsampled) curve and the smaller of the two subsampled
        bounds.  The one-coordinate lattice pair (N_ℤ(0), N_ℤ(Δ)) is *not* used: ℤ^d is not
        rotation invariant, and a shift such as (1, 1, 1, 1) of L2 norm 2 has a larger δ(ε) than
        (2, 0, 0, 0).  (Without the cover a Poisson-subsampled discrete Gaussian falls to the
        generic Zhu & Wang bound, which asked σ 21× larger for DP-SGD at q = 0.05 and 5,268 steps.)
        """
        if self.sigma <= DOMINATING_TAU:
            return None
        return Gaussian(math.sqrt(self.sigma**2 - DOMINATING_TAU**2), float(self.sensitivity))


@dataclass(frozen=True)
class Exponential(Event):
    """One draw of the exponential mechanism, P(i) ∝ exp(ε·u_i/(2Δu)): ε-DP."""

    kind: ClassVar[str] = "exponential"
    epsilon: float

    _checks: ClassVar[dict] = {"epsilon": check_positive}


@dataclass(frozen=True)
class PureDP(Event):
    """Any release proven ε-DP by other means."""

    kind: ClassVar[str] = "pure_dp"
    epsilon: float

    _checks: ClassVar[dict] = {"epsilon": check_positive}


@dataclass(frozen=True)
class ApproxDP(Event):
    """Any release proven (ε, δ)-DP by other means, δ in (0, 1) (for δ = 0 use :class:`PureDP`).

    It states a guarantee and nothing more: only the ``"approx"`` accountant
    (:mod:`dpopt.privacy.approx`) composes it, by basic sequential composition
    (ε's and δ's add up, Dwork & Roth 2014 Thm 3.16, also when each
    mechanism is chosen adaptively, their §3.5.2).  Rényi DP, zCDP and a PLD cannot
    represent an (ε, δ) guarantee alone, so their accountants refuse it
    (:meth:`refusal`).
    """

    kind: ClassVar[str] = "approx_dp"
    epsilon: float
    delta: float

    _checks: ClassVar[dict] = {"epsilon": check_positive, "delta": check_open_unit}

    @staticmethod
    def refusal(notion: str) -> ValueError:
        """The one-line error of an accountant of ``notion`` that cannot represent an ApproxDP event."""
        return ValueError(
            f"ApproxDP states an (epsilon, delta) guarantee only, which {notion} accounting cannot represent; "
            "compose it with accountant='approx'"
        )


@dataclass(frozen=True)
class RandomizedResponse(Event):
    """k-ary randomized response: the true one of ``k`` values with probability e^ε/(e^ε + k − 1),
    each other value with probability 1/(e^ε + k − 1) (Warner 1965; Kairouz, Oh & Viswanath 2016).

    ε-DP for one record's value; its privacy loss between two values x ≠ x′ is
    +ε (output x), −ε (output x′) or 0 (any of the k − 2 others), which the
    PLD and RDP accountants use exactly.
    """

    kind: ClassVar[str] = "randomized_response"
    epsilon: float
    k: int = 2

    _checks: ClassVar[dict] = {"epsilon": check_positive, "k": _unnamed(lambda v: check_int("k", v, minimum=2))}


@dataclass(frozen=True)
class Snapping(Event):
    """The snapping mechanism (Mironov 2012, §5): a Laplace-like release safe in floating point.

    clamp_B(Λ·round(clamp_B(f)/Λ + S·λ·ln U/Λ)) with λ = ``scale``/``sensitivity`` in units of
    the query's sensitivity, B = ``bound``/``sensitivity`` and Λ the smallest power of two ≥ λ.
    Mironov 2012, Theorem 1: for λ < B < 2⁴⁶λ it is (1/λ + 2⁻⁴⁹B/λ)-DP, slightly more than the
    Laplace mechanism's 1/λ (the rounding to Λ and the clamp to B cost the 2⁻⁴⁹B/λ).
    """

    kind: ClassVar[str] = "snapping"
    scale: float
    bound: float
    sensitivity: float = 1.0

    _checks: ClassVar[dict] = {"scale": check_positive, "bound": check_positive, "sensitivity": check_positive}

    def __post_init__(self):
        super().__post_init__()
        lam, b = self.scale / self.sensitivity, self.bound / self.sensitivity
        if not lam < b < 2.0**46 * lam:
            raise ValueError(
                f"bound/sensitivity must be in (scale/sensitivity, 2^46 scale/sensitivity) = "
                f"({lam:g}, {2.0**46 * lam:g}) for the snapping mechanism's guarantee, got {b:g}"
            )

    @property
    def epsilon(self) -> float:
        lam = self.scale / self.sensitivity
        return (1.0 + 2.0**-49 * (self.bound / self.sensitivity)) / lam


@dataclass(frozen=True)
class _SparseVector(Event):
    """Fields and ε/σ views shared by :class:`AboveThreshold` and :class:`DiscreteAboveThreshold`."""

    noise: str
    threshold_scale: float
    query_scale: float
    sensitivity: float = 1.0

    def __post_init__(self):
        check_choice("noise", self.noise, ("laplace", "gaussian"))
        for name in ("threshold_scale", "query_scale", "sensitivity"):
            object.__setattr__(self, name, check_positive(name, getattr(self, name)))

    def _require(self, noise: str, name: str) -> None:
        if self.noise != noise:
            raise ValueError(f"{name} is defined for the {noise} variant, this event is {self.noise}")

    @property
    def epsilon1(self) -> float:
        self._require("laplace", "epsilon1")
        return self.sensitivity / self.threshold_scale

    @property
    def epsilon2(self) -> float:
        self._require("laplace", "epsilon2")
        return self.sensitivity / self.query_scale

    @property
    def sigma1(self) -> float:
        self._require("gaussian", "sigma1")
        return self.threshold_scale / self.sensitivity

    @property
    def sigma2(self) -> float:
        self._require("gaussian", "sigma2")
        return self.query_scale / self.sensitivity


@dataclass(frozen=True)
class AboveThreshold(_SparseVector):
    """One run of AboveThreshold (sparse vector) that halts at the first query above a noisy threshold.

    chen2020 Algorithm 1: the threshold gets noise of ``threshold_scale`` once,
    each query gets fresh noise of ``query_scale``; every query has sensitivity
    ``sensitivity`` (Δ_q).  ``noise`` is ``"laplace"`` (scales are Laplace
    scales; ε₁ = Δ_q/threshold_scale, ε₂ = Δ_q/query_scale, pure ε₁ + 2ε₂,
    RDP eq. (4)) or ``"gaussian"`` (scales are standard deviations;
    σ₁ = threshold_scale/Δ_q, σ₂ = query_scale/Δ_q, RDP eq. (5)).

    Use :meth:`laplace` and :meth:`gaussian` to build one from the paper's
    parameters.
    """

    kind: ClassVar[str] = "above_threshold"

    @classmethod
    def laplace(cls, epsilon1: float, epsilon2: float, sensitivity: float = 1.0) -> AboveThreshold:
        """Laplace variant with threshold budget ε₁ and per-query budget ε₂."""
        epsilon1 = check_positive("epsilon1", epsilon1)
        epsilon2 = check_positive("epsilon2", epsilon2)
        sensitivity = check_positive("sensitivity", sensitivity)
        return cls("laplace", scale_for_epsilon(sensitivity, epsilon1),
                   scale_for_epsilon(sensitivity, epsilon2), sensitivity)

    @classmethod
    def gaussian(cls, sigma1: float, sigma2: float, sensitivity: float = 1.0) -> AboveThreshold:
        """Gaussian variant with noise multipliers σ₁ (threshold) and σ₂ (queries)."""
        sigma1 = check_positive("sigma1", sigma1)
        sigma2 = check_positive("sigma2", sigma2)
        sensitivity = check_positive("sensitivity", sensitivity)
        return cls("gaussian", sigma1 * sensitivity, sigma2 * sensitivity, sensitivity)


@dataclass(frozen=True)
class DiscreteAboveThreshold(_SparseVector):
    """AboveThreshold on integer-valued queries with exact discrete noise (the secure line search).

    The queries are rounded to a grid g·ℤ (their integer sensitivity Δ =
    ``sensitivity`` is ⌊Δ_q/g⌋ + 1); the threshold gets discrete Laplace
    (``noise="laplace"``, P(x) ∝ exp(−|x|/scale)) or discrete Gaussian
    (``"gaussian"``, P(x) ∝ exp(−x²/(2 scale²))) noise of ``threshold_scale``
    on ℤ, every query fresh noise of ``query_scale``.  ε₁, ε₂, σ₁, σ₂ are read
    as for :class:`AboveThreshold` (in grid units).  Its RDP is chen2020
    eq. (5) for the Gaussian variant and eq. (4) with the discrete Laplace's
    Rényi moment for the Laplace one (:func:`dpopt.privacy.rdp.above_threshold_rdp`);
    :func:`dpopt.privacy.mechanisms.secure_event` builds it from an :class:`AboveThreshold`.
    """

    kind: ClassVar[str] = "discrete_above_threshold"
    sensitivity: int = 1

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "sensitivity", _check_integer_sensitivity(self.sensitivity))


@dataclass(frozen=True)
class Subsampled(Event):
    """``event`` run on a random subsample of the data.

    ``scheme="poisson"``: each record kept independently with probability
    ``rate`` (add/remove-one neighbours).  ``scheme="without_replacement"``: a
    uniformly random subset of fixed size m = rate·n (replace-one neighbours,
    kuru2022 Thm A.3).  The sampling code must match the scheme
    (DESIGN.md invariant 6).
    """

    kind: ClassVar[str] = "subsampled"
    event: Event
    rate: float
    scheme: str = POISSON

    def __post_init__(self):
        if not isinstance(self.event, Event):
            raise TypeError(f"event must be a privacy Event, got {type(self.event).__name__}")
        object.__setattr__(self, "rate", check_rate("rate", self.rate))
        check_choice("scheme", self.scheme, _SCHEMES)


@dataclass(frozen=True)
class Activated(Event):
    """``event`` released with probability ``rate`` by a holder activated at random, the activation public.

    A record holder (for example one node of a network, liu2024 Definition 2)
    is active in a round with probability ``rate``, independently of the data
    and of other rounds, and releases ``event`` only when active; whether it
    was active may be seen by the adversary (an eavesdropper sees who sends).
    The cost is that of the pair (activation bit, output): RDP
    (1/(α−1))·log(1 − p + p·e^{(α−1)ε(α)}) exactly; pure ε-DP unchanged.
    It is never smaller than ``event`` with no release, and it is valid
    whether the activation is seen or hidden (hiding it is post-processing).
    """

    kind: ClassVar[str] = "activated"
    event: Event
    rate: float

    def __post_init__(self):
        if not isinstance(self.event, Event):
            raise TypeError(f"event must be a privacy Event, got {type(self.event).__name__}")
        object.__setattr__(self, "rate", check_rate("rate", self.rate))


@dataclass(frozen=True)
class Composed(Event):
    """Sequential composition of several events (any list, possibly nested)."""

    kind: ClassVar[str] = "composed"
    events: tuple

    def __post_init__(self):
        events = tuple(self.events)
        for e in events:
            if not isinstance(e, Event):
                raise TypeError(f"events must hold privacy Events, got {type(e).__name__}")
        object.__setattr__(self, "events", events)


@dataclass(frozen=True)
class SelfComposed(Event):
    """``count`` sequential repetitions of the same ``event``."""

    kind: ClassVar[str] = "self_composed"
    event: Event
    count: int

    def __post_init__(self):
        if not isinstance(self.event, Event):
            raise TypeError(f"event must be a privacy Event, got {type(self.event).__name__}")
        object.__setattr__(self, "count", check_int("count", self.count, minimum=1))


@dataclass(frozen=True)
class RenyiBound(Event):
    """A release proven (``order``, ``rdp``)-RDP by other means.

    A Rényi filter's whole run is one (α, B(α))-RDP release however its
    adaptive events turn out (Feldman & Zrnic 2021, Thm 3.1); a parent ledger
    composes a filter child through this event.  Its RDP curve is ``rdp`` at
    every order ≤ α (the Rényi divergence is non-decreasing in the order) and
    unbounded above α; it has no pure-DP or zCDP guarantee.
    """

    kind: ClassVar[str] = "renyi_bound"
    order: float
    rdp: float

    def __post_init__(self):
        order = check_positive("order", self.order)
        if order <= 1.0:
            raise ValueError(f"order must be in (1, inf), got {order!r}")
        object.__setattr__(self, "order", order)
        object.__setattr__(self, "rdp", check_positive("rdp", self.rdp))
