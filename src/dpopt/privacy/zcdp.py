"""Zero-concentrated differential privacy (zCDP; Bun & Steinke 2016).

A mechanism is ρ-zCDP if D_α(M(D) ‖ M(D')) ≤ ρα for every order α > 1, i.e. its
RDP curve lies below a line through the origin.  zCDP composes by adding ρ
and converts to (ε, δ)-DP with ε = ρ + 2√(ρ log(1/δ)) (Bun & Steinke 2016,
Prop. 1.3), the conversion DP-AGD (Lee & Kifer 2018) and chen2020's DP-AGD
baseline use to split an (ε, δ) budget.

zCDP has no amplification by subsampling, so :class:`ZCDPAccountant` refuses
subsampled events with ``rate < 1``; use :class:`~dpopt.privacy.rdp.RDPAccountant`
for them (its curves are never larger than the zCDP line).
"""

from __future__ import annotations

import math

from .. import _validation as val
from . import events as ev
from .accountant import AccountantBase, register_accountant
from .pure import pure_epsilon

__all__ = [
    "ZCDPAccountant",
    "rho_from_epsilon_delta",
    "epsilon_from_rho",
    "delta_from_rho",
    "zcdp_rho",
]


def _check_delta(delta) -> float:
    return val.check_conversion_delta(delta, "zCDP")


def epsilon_from_rho(rho: float, delta: float) -> float:
    """ε = ρ + 2√(ρ log(1/δ)): ρ-zCDP implies (ε, δ)-DP (Bun & Steinke 2016, Prop. 1.3)."""
    rho = val.check_nonnegative("rho", rho)
    delta = _check_delta(delta)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def rho_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """The ρ with ρ + 2√(ρ log(1/δ)) = ε (DP-AGD, Lee & Kifer 2018), in closed form.

    With L = log(1/δ) and s = √ρ, s² + 2s√L − ε = 0 gives s = √(L+ε) − √L,
    written as ε/(√(L+ε) + √L) to avoid cancellation: ρ = ε²/(√(L+ε) + √L)².
    """
    epsilon = val.check_positive("epsilon", epsilon)
    log_inv_delta = math.log(1.0 / _check_delta(delta))
    return (epsilon / (math.sqrt(log_inv_delta + epsilon) + math.sqrt(log_inv_delta))) ** 2


def delta_from_rho(rho: float, epsilon: float) -> float:
    """The δ at which ρ-zCDP gives ε by :func:`epsilon_from_rho`.

    δ = exp(−(ε − ρ)²/(4ρ)) for ε > ρ, else 1 (and 0 when ρ = 0).
    """
    rho = val.check_nonnegative("rho", rho)
    epsilon = val.check_positive("epsilon", epsilon)
    if rho == 0.0:
        return 0.0
    if epsilon <= rho:
        return 1.0
    return math.exp(-((epsilon - rho) ** 2) / (4.0 * rho))


def zcdp_rho(event: ev.Event) -> float:
    """The ρ of one event.

    * ``Gaussian``: ρ = Δ²/(2σ²) = 1/(2z²) (Bun & Steinke 2016, Prop. 1.6);
    * ``AboveThreshold`` (or ``DiscreteAboveThreshold``) with Gaussian noise: its RDP α/2·(1/σ₁² + 4/σ₂²)
      (chen2020 eq. (5)) is linear in α, so ρ = (1/σ₁² + 4/σ₂²)/2;
    * pure ε-DP events (``Laplace``, ``VectorLaplace``, ``Exponential``,
      ``PureDP``, Laplace ``AboveThreshold``): ρ = ε²/2 (Bun & Steinke 2016, Prop. 1.4);
    * ``Composed``: sum; ``SelfComposed``: count × ρ;
    * ``Subsampled`` with rate 1: the inner event; rate < 1: ``ValueError``.
    """
    if isinstance(event, ev.Gaussian | ev.DiscreteGaussian):
        return 0.5 / event.noise_multiplier**2
    if isinstance(event, ev.AboveThreshold | ev.DiscreteAboveThreshold) and event.noise == "gaussian":
        return 0.5 * (1.0 / event.sigma1**2 + 4.0 / event.sigma2**2)
    if isinstance(event, ev.Subsampled):
        if event.rate == 1.0:
            return zcdp_rho(event.event)
        raise ValueError(
            "zCDP has no amplification by subsampling; account subsampled events "
            "with RDPAccountant (accountant='rdp')"
        )
    if isinstance(event, ev.Composed):
        return math.fsum(zcdp_rho(e) for e in event.events)
    if isinstance(event, ev.SelfComposed):
        return event.count * zcdp_rho(event.event)
    if isinstance(event, ev.ApproxDP):
        raise ev.ApproxDP.refusal("zCDP")
    if isinstance(event, ev.Event):
        return 0.5 * pure_epsilon(event) ** 2
    raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")


class ZCDPAccountant(AccountantBase):
    """Adds up ρ over composed events and converts to (ε, δ) (Bun & Steinke 2016).

    >>> from dpopt.privacy import events as ev
    >>> acc = ZCDPAccountant().compose(ev.Gaussian(sigma=2.0), count=4)
    >>> acc.rho
    0.5
    """

    notion = "zcdp"

    def __init__(self):
        self._rho = 0.0

    @property
    def rho(self) -> float:
        """The composed ρ."""
        return self._rho

    def cost(self, event: ev.Event) -> float:
        """The ρ ``event`` would add, without composing it."""
        return zcdp_rho(event)

    def compose(self, event: ev.Event, count: int = 1) -> ZCDPAccountant:
        """Add ``count`` repetitions of ``event``; returns ``self`` so calls chain."""
        count = val.check_int("count", count, minimum=1)
        self._rho += count * zcdp_rho(event)
        return self

    def copy(self) -> ZCDPAccountant:
        other = ZCDPAccountant()
        other._rho = self._rho
        return other

    def get_epsilon(self, delta: float) -> float:
        """ε = ρ + 2√(ρ log(1/δ)) (Bun & Steinke 2016, Prop. 1.3)."""
        return epsilon_from_rho(self._rho, delta)

    def get_delta(self, epsilon: float) -> float:
        """The inverse of :meth:`get_epsilon` in δ (see :func:`delta_from_rho`)."""
        return delta_from_rho(self._rho, epsilon)

    def epsilon_after(self, event: ev.Event, delta: float) -> float:
        """The ε after composing ``event``, by the arithmetic of :meth:`compose` (composes nothing)."""
        return epsilon_from_rho(self._rho + zcdp_rho(event), delta)

    def _guarantee(self, event: ev.Event) -> float:
        """The event's ρ (raises where it has no zCDP guarantee here: subsampled events with rate < 1)."""
        return zcdp_rho(event)

    def describe(self) -> str:
        return "zCDP: rho adds up, converted by eps = rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016)"

    def __repr__(self) -> str:
        return f"ZCDPAccountant(rho={self._rho:.6g})"


register_accountant("zcdp", ZCDPAccountant)
