"""Pure ε-DP accounting: sequential composition and amplification by subsampling."""

from __future__ import annotations

import functools
import math

from .._validation import check_int, check_nonnegative, check_rate
from . import events as ev
from .accountant import AccountantBase, register_accountant

__all__ = ["PureDPAccountant", "pure_epsilon", "amplify_pure", "invert_amplification"]


# Above this ε, e^ε (and expm1) overflows a double (ln(max float) ≈ 709.78).
_EXPM1_SAFE = 709.0


def amplify_pure(epsilon: float, rate: float) -> float:
    """ε' = ln(1 + q·(e^ε − 1)) for an ε-DP mechanism run on a subsample drawn at rate q.

    For sampling m of n records without replacement (q = m/n) under the
    replace-one relation this is kuru2022 Thm A.3 / eq. (3.3); for Poisson
    sampling at rate q under add/remove-one it is the same expression
    (Li, Qardaji & Su 2012).

    Evaluated without overflow or cancellation for every ε ≥ 0:
    ``log1p(q·expm1(ε))`` while e^ε is representable (full relative precision
    for tiny q and ε, and for large results), and for ε > 709 the equivalent
    ε + ln q + log1p((1 − q)·e^{−ε}/q) = L + log1p((1 − q)·e^{−L}) with
    L = ε + ln q = ln(q·e^ε), which stays finite up to ε = 1e300
    (for L ≤ 0, i.e. q ≤ e^{−ε}, it is log1p(e^L) to double precision).
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    if check_rate("rate", rate) == 1.0:
        return epsilon
    if epsilon <= _EXPM1_SAFE:
        return math.log1p(rate * math.expm1(epsilon))
    log_growth = epsilon + math.log(rate)  # L = ln(q e^ε)
    if log_growth > 0.0:
        return log_growth + math.log1p((1.0 - rate) * math.exp(-log_growth))
    # 1 − q + e^L with q ≤ e^{L−709}: the −q is below double precision relative to e^L.
    return math.log1p(math.exp(log_growth))


def invert_amplification(epsilon: float, rate: float) -> float:
    """The ε₀ whose amplification at ``rate`` is ``epsilon``: ln(1 + (e^ε − 1)/q).

    The exact inverse of :func:`amplify_pure` (kuru2022 eq. (3.5) with q = m/n):
    an ε₀-DP mechanism on a subsample drawn at rate q is ε-DP on the data set.
    Evaluated as ``log1p(expm1(ε)/q)`` for ε ≤ 1 and as the equivalent
    ε − ln q + log1p((q − 1)·e^{−ε}) above, which has no cancellation there and
    no overflow for any ε.
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    if check_rate("rate", rate) == 1.0:
        return epsilon
    if epsilon <= 1.0:
        return math.log1p(math.expm1(epsilon) / rate)
    return epsilon - math.log(rate) + math.log1p((rate - 1.0) * math.exp(-epsilon))


def pure_epsilon(event: ev.Event) -> float:
    """The pure-DP ε of ``event``; ``ValueError`` if it has no pure-DP guarantee."""
    if isinstance(event, ev.Laplace | ev.VectorLaplace | ev.DiscreteLaplace):
        return event.epsilon
    if isinstance(event, ev.Exponential | ev.PureDP | ev.RandomizedResponse | ev.Snapping):
        return event.epsilon
    if isinstance(event, ev.AboveThreshold | ev.DiscreteAboveThreshold):
        if event.noise != "laplace":
            raise ValueError(
                "AboveThreshold with Gaussian noise has no pure-DP guarantee; use RDPAccountant"
            )
        # chen2020 Thm 1 / Lemma 5: ε₁ for the threshold plus 2ε₂ for the halting query.
        return event.epsilon1 + 2.0 * event.epsilon2
    if isinstance(event, ev.Subsampled):
        return amplify_pure(pure_epsilon(event.event), event.rate)
    if isinstance(event, ev.Activated):  # the worst case is an active round: no amplification
        return pure_epsilon(event.event)
    if isinstance(event, ev.Composed | ev.SelfComposed):  # the exact sum, rounded up (never understated)
        return _up(_cached_epsilon(event))
    if isinstance(event, ev.Gaussian | ev.DiscreteGaussian):
        raise ValueError("the Gaussian mechanism has no pure-DP guarantee; use RDPAccountant")
    if isinstance(event, ev.ApproxDP):
        raise ev.ApproxDP.refusal("pure-DP")
    raise ValueError(f"no pure-DP guarantee is known for event {type(event).__name__}")


# Every finite double is an integer multiple of 2^-1074, so sums of doubles are exact
# as Python integers in these units (fast big-integer additions, no gcd as with Fraction).
_UNIT_BITS = 1074


def _units(x: float) -> int:
    """``x`` (a finite double ≥ 0) as an exact integer count of 2^-1074."""
    num, den = float(x).as_integer_ratio()
    return num << (_UNIT_BITS - den.bit_length() + 1)


def _up(units: int) -> float:
    """The smallest float ≥ ``units``·2⁻¹⁰⁷⁴."""
    x = units / (1 << _UNIT_BITS)  # correctly rounded to nearest
    return math.nextafter(x, math.inf) if _units(x) < units else x


@functools.lru_cache(maxsize=4096)
def _cached_epsilon(event: ev.Event) -> int:
    """The pure ε of ``event`` in exact units of 2^-1074, memoized per event (events are immutable values):
    a composition's is the exact sum of its parts' (as that many charges add up), not a float sum
    rounded to nearest, which can fall an ulp below it."""
    if isinstance(event, ev.Composed):
        return sum(_cached_epsilon(e) for e in event.events)
    if isinstance(event, ev.SelfComposed):
        return event.count * _cached_epsilon(event.event)
    return _units(pure_epsilon(event))


class PureDPAccountant(AccountantBase):
    """Adds up pure-DP costs by sequential composition, exactly.

    The running total is the exact sum of the events' float costs (an integer
    count of 2^-1074), so a budget check is exact (no rounding in either
    direction) and the reported ε is that sum rounded to the nearest float,
    which never exceeds a budget the sum is within.

    >>> from dpopt.privacy import events as ev
    >>> PureDPAccountant().compose(ev.Laplace(scale=2.0)).compose(ev.PureDP(0.5)).get_epsilon()
    1.0
    """

    notion = "pure"

    def __init__(self):
        self._exact = 0

    def cost(self, event: ev.Event) -> float:
        """The ε this event would add (raises ``ValueError`` for non-pure events)."""
        return pure_epsilon(event)

    def compose(self, event: ev.Event, count: int = 1) -> PureDPAccountant:
        count = check_int("count", count)
        self._exact += count * _cached_epsilon(event)
        return self

    def fits(self, event: ev.Event, epsilon: float) -> bool:
        """Whether the exact total after ``event`` is ≤ ``epsilon`` (composes nothing)."""
        return self._exact + _cached_epsilon(event) <= _units(epsilon)

    def _guarantee(self, event: ev.Event) -> float:
        """The event's pure ε (raises where it has no pure-DP guarantee)."""
        return pure_epsilon(event)

    def epsilon_after(self, event: ev.Event, delta: float = 0.0) -> float:
        """The ε after composing ``event``, by the same arithmetic as :meth:`compose` (composes nothing)."""
        return (self._exact + _cached_epsilon(event)) / (1 << _UNIT_BITS)

    def describe(self) -> str:
        return (
            "pure epsilon-DP: epsilons add up (sequential composition), subsampled events "
            "amplified by ln(1 + q(e^eps - 1))"
        )

    def copy(self) -> PureDPAccountant:
        other = PureDPAccountant()
        other._exact = self._exact
        return other

    def get_epsilon(self, delta: float = 0.0) -> float:
        """Total ε (``delta`` is accepted for interface symmetry and ignored)."""
        return self._exact / (1 << _UNIT_BITS)

    def get_delta(self, epsilon: float) -> float:
        """0 if the composed ε is within ``epsilon``, else 1 (pure DP gives no partial δ)."""
        return 0.0 if self.get_epsilon() <= epsilon else 1.0

    def __repr__(self) -> str:
        return f"PureDPAccountant(epsilon={self.get_epsilon():.6g})"


register_accountant("pure", PureDPAccountant)
