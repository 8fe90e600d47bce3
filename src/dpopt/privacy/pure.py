"""Pure ε-DP accounting: sequential composition and amplification by subsampling."""

from __future__ import annotations

import math

from .._validation import check_int, check_nonnegative, check_rate
from . import events as ev

__all__ = ["PureDPAccountant", "pure_epsilon", "amplify_pure"]


def amplify_pure(epsilon: float, rate: float) -> float:
    """ε' = ln(1 + rate·(e^ε − 1)) for an ε-DP mechanism run on a subsample.

    For sampling m of n records without replacement (rate = m/n) under the
    replace-one relation this is kuru2022 Thm A.3 / eq. (3.3); for Poisson
    sampling at ``rate`` under add/remove-one it is the same expression
    (Li, Qardaji & Su 2012).  Computed with ``expm1``/``log1p`` so that tiny
    rates and budgets keep full precision.
    """
    epsilon = check_nonnegative("epsilon", epsilon)
    if check_rate("rate", rate) == 1.0:
        return epsilon
    return math.log1p(rate * math.expm1(epsilon))


def pure_epsilon(event: ev.Event) -> float:
    """The pure-DP ε of ``event``; ``ValueError`` if it has no pure-DP guarantee."""
    if isinstance(event, ev.Laplace | ev.VectorLaplace):
        return event.epsilon
    if isinstance(event, ev.Exponential | ev.PureDP):
        return event.epsilon
    if isinstance(event, ev.AboveThreshold):
        if event.noise != "laplace":
            raise ValueError(
                "AboveThreshold with Gaussian noise has no pure-DP guarantee; use RDPAccountant"
            )
        # chen2020 Thm 1 / Lemma 5: ε₁ for the threshold plus 2ε₂ for the halting query.
        return event.epsilon1 + 2.0 * event.epsilon2
    if isinstance(event, ev.Subsampled):
        return amplify_pure(pure_epsilon(event.event), event.rate)
    if isinstance(event, ev.Composed):
        return math.fsum(pure_epsilon(e) for e in event.events)
    if isinstance(event, ev.SelfComposed):
        return event.count * pure_epsilon(event.event)
    if isinstance(event, ev.Gaussian):
        raise ValueError("the Gaussian mechanism has no pure-DP guarantee; use RDPAccountant")
    raise ValueError(f"no pure-DP guarantee is known for event {type(event).__name__}")


class PureDPAccountant:
    """Adds up pure-DP costs by sequential composition.

    The running total uses compensated (Neumaier) summation, so splitting ε
    into T equal parts and charging them back adds up to ε to the last bits.

    >>> from dpopt.privacy import events as ev
    >>> PureDPAccountant().compose(ev.Laplace(scale=2.0)).compose(ev.PureDP(0.5)).get_epsilon()
    1.0
    """

    notion = "pure"

    def __init__(self):
        self._total = 0.0
        self._carry = 0.0

    def cost(self, event: ev.Event) -> float:
        """The ε this event would add (raises ``ValueError`` for non-pure events)."""
        return pure_epsilon(event)

    def compose(self, event: ev.Event, count: int = 1) -> PureDPAccountant:
        count = check_int("count", count)
        self._add(count * pure_epsilon(event))
        return self

    def _add(self, term: float) -> None:
        total = self._total + term
        if abs(self._total) >= abs(term):
            self._carry += (self._total - total) + term
        else:
            self._carry += (term - total) + self._total
        self._total = total

    def copy(self) -> PureDPAccountant:
        other = PureDPAccountant()
        other._total, other._carry = self._total, self._carry
        return other

    def get_epsilon(self, delta: float = 0.0) -> float:
        """Total ε (``delta`` is accepted for interface symmetry and ignored)."""
        return self._total + self._carry

    def get_delta(self, epsilon: float) -> float:
        """0 if the composed ε is within ``epsilon``, else 1 (pure DP gives no partial δ)."""
        return 0.0 if self.get_epsilon() <= epsilon else 1.0
