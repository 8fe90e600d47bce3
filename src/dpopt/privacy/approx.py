"""(ε, δ)-DP by basic composition: pure events and stated :class:`~dpopt.privacy.events.ApproxDP` guarantees.

The ``"approx"`` accountant composes pure ε-DP events (their ε as
:func:`~dpopt.privacy.pure.pure_epsilon` gives it) and ``ApproxDP(ε, δ)``
events by adding up their ε's and their δ's: k mechanisms, the i-th
(ε_i, δ_i)-DP, are (Σε_i, Σδ_i)-DP together, also when each one is chosen
after seeing the outputs of those before it (Dwork & Roth 2014, *The
Algorithmic Foundations of Differential Privacy*, Thm 3.16; for mechanisms
chosen adaptively, the k-fold adaptive composition experiment of their §3.5.2,
under which (ε, δ)-DP mechanisms compose to (kε, kδ): Dwork, Rothblum &
Vadhan 2010).  It is the accountant of a run whose parts each
guarantee (ε_i, δ_i) whatever their internal events (a run of sub-runs, each
charged as one ``ApproxDP`` of its own budget).

Both sums are exact (integer counts of 2⁻¹⁰⁷⁴, as in
:class:`~dpopt.privacy.pure.PureDPAccountant`), so a budget check neither
rounds in favour of a charge nor against it, and the order of the events does
not change the result.  They are reported rounded *up* to a float: the stated
(ε, δ) is never below the composed one (a re-check of a saved record at its
stated δ then finds the same ε), and never above a float budget they fit in.

:func:`group_privacy` turns an (ε, δ) guarantee under add/remove-one into the
guarantee under replace-one (a replacement is a removal and an addition).
"""

from __future__ import annotations

import math
from fractions import Fraction

from .._validation import check_delta, check_int, check_nonnegative, check_positive
from . import events as ev
from .accountant import AccountantBase, register_accountant
from .pure import _units, _up, pure_epsilon

__all__ = ["ApproxDPAccountant", "approx_guarantee", "group_privacy", "holds_approx"]


def approx_guarantee(event: ev.Event) -> tuple[float, float]:
    """(ε, δ) of ``event`` by basic composition; ``ValueError`` where none is known.

    ``ApproxDP`` gives its own (ε, δ); ``Composed`` and ``SelfComposed`` add up
    their parts; every other event must be pure ε-DP (δ = 0).  An ``ApproxDP``
    under subsampling or activation is refused (its amplification is not
    implemented here).
    """
    eps, delta = _exact(event)
    return _up(eps), _up(delta)


def _exact(event: ev.Event) -> tuple[int, int]:
    """(ε, δ) of ``event`` in exact units of 2⁻¹⁰⁷⁴."""
    if isinstance(event, ev.ApproxDP):
        return _units(event.epsilon), _units(event.delta)
    if isinstance(event, ev.Composed):
        parts = [_exact(e) for e in event.events]
        return sum(p[0] for p in parts), sum(p[1] for p in parts)
    if isinstance(event, ev.SelfComposed):
        eps, delta = _exact(event.event)
        return event.count * eps, event.count * delta
    if isinstance(event, ev.Subsampled | ev.Activated) and holds_approx(event.event):
        raise ValueError(f"the approx accountant does not amplify an ApproxDP event under {type(event).__name__}")
    return _units(pure_epsilon(event)), 0  # ValueError for an event with no pure guarantee (Gaussian, ...)


def holds_approx(event: ev.Event) -> bool:
    """Whether ``event`` holds an ``ApproxDP`` event anywhere inside."""
    if isinstance(event, ev.ApproxDP):
        return True
    if isinstance(event, ev.Composed):
        return any(holds_approx(e) for e in event.events)
    if isinstance(event, ev.SelfComposed | ev.Subsampled | ev.Activated):
        return holds_approx(event.event)
    return False


def group_privacy(epsilon: float, delta: float, k: int = 2) -> tuple[float, float]:
    """(kε, δ·Σ_{i<k} e^{iε}): the guarantee for data sets k neighbouring steps apart.

    By induction over a path D₀, D₁, …, D_k of neighbours,
    P[M(D₀) ∈ S] ≤ e^ε P[M(D₁) ∈ S] + δ ≤ … ≤ e^{kε} P[M(D_k) ∈ S] + δ Σ_{i<k} e^{iε}
    (group privacy, Dwork & Roth 2014 Thm 2.2, with the δ carried along).
    With k = 2 it turns an add/remove-one guarantee into the replace-one one,
    (2ε, (1 + e^ε)δ): a replacement is one removal and one addition.  Both are
    rounded up (never understated): kε and the sum exactly, each e^{iε} two
    ulps above ``math.exp`` (whose error is below one ulp); a δ ≥ 1 says
    nothing and raises.
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta("delta", delta)
    k = check_int("k", k)
    if delta == 0.0:
        return _up(k * _units(epsilon)), 0.0
    try:
        terms = [_above(math.exp(_up(i * _units(epsilon)))) for i in range(k)]  # iε rounded up exactly
        total = _round_up(Fraction(delta) * sum(map(Fraction, terms)))
    except OverflowError:  # e^{(k−1)ε} beyond the float range: in logs (a tiny δ may still bring it below 1)
        log_total = math.log(delta) + (k - 1) * epsilon + math.log1p(math.fsum(math.exp(-j * epsilon)
                                                                                for j in range(1, k)))
        # the logs' absolute error is a few ulps of |log δ| ≤ 745 (~1e-13) where the result is below 1
        total = _above(math.exp(log_total) * (1.0 + 1e-12)) if log_total < 0.0 else math.inf
    if not total < 1.0:
        raise ValueError(f"group privacy of (epsilon={epsilon:g}, delta={delta:g}) over {k} steps has delta >= 1")
    return _up(k * _units(epsilon)), total


def _above(x: float) -> float:
    """Two floats above ``x``: above the true value of a result within one ulp of it (``math.exp``)."""
    return math.nextafter(math.nextafter(x, math.inf), math.inf)


def _round_up(x: Fraction) -> float:
    """The smallest float ≥ ``x`` (``inf`` beyond the float range)."""
    try:
        f = float(x)  # correctly rounded to nearest
    except OverflowError:
        return math.inf
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


class ApproxDPAccountant(AccountantBase):
    """Adds up ε and δ of pure and ``ApproxDP`` events by basic composition, exactly (module docstring).

    It reports the composed (ε, δ): :meth:`get_epsilon` is the ε sum at any δ
    at least the δ sum (``inf`` below it: nothing is known there), and a ledger
    with this accountant states the composed δ as the δ spent.

    >>> from dpopt.privacy import events as ev
    >>> acc = ApproxDPAccountant().compose(ev.ApproxDP(0.5, 1e-6)).compose(ev.PureDP(0.25))
    >>> acc.get_epsilon(1e-6), acc.composed_delta
    (0.75, 1e-06)
    """

    notion = "approx"

    def __init__(self):
        self._eps = 0
        self._delta = 0

    def _guarantee(self, event: ev.Event) -> tuple[int, int]:
        return _exact(event)

    def compose(self, event: ev.Event, count: int = 1) -> ApproxDPAccountant:
        if not isinstance(event, ev.Event):
            raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
        count = check_int("count", count)
        eps, delta = _exact(event)
        self._eps += count * eps
        self._delta += count * delta
        return self

    def fits(self, event: ev.Event, epsilon: float, delta: float) -> bool:
        """Whether both exact sums after ``event`` are within (``epsilon``, ``delta``) (composes nothing)."""
        eps, d = _exact(event)
        return self._eps + eps <= _units(epsilon) and self._delta + d <= _units(check_nonnegative("delta", delta))

    def epsilon_after(self, event: ev.Event, delta: float) -> float:
        return self.copy().compose(event).get_epsilon(delta)

    @property
    def composed_epsilon(self) -> float:
        """The ε sum, rounded up to a float."""
        return _up(self._eps)

    @property
    def composed_delta(self) -> float:
        """The δ sum, rounded up to a float."""
        return _up(self._delta)

    def get_epsilon(self, delta: float) -> float:
        """The ε sum if ``delta`` is at least the δ sum (exactly), else ``inf``."""
        return self.composed_epsilon if self._delta <= _units(check_nonnegative("delta", delta)) else math.inf

    def get_delta(self, epsilon: float) -> float:
        """The δ sum if ``epsilon`` is at least the ε sum (exactly), else 1 (nothing is known below it)."""
        return self.composed_delta if self._eps <= _units(check_nonnegative("epsilon", epsilon)) else 1.0

    def describe(self) -> str:
        return (
            "(epsilon, delta)-DP by basic composition: epsilons and deltas add up (pure events with delta 0, "
            "ApproxDP events as stated)"
        )

    def copy(self) -> ApproxDPAccountant:
        other = ApproxDPAccountant()
        other._eps, other._delta = self._eps, self._delta
        return other

    def __repr__(self) -> str:
        return f"ApproxDPAccountant(epsilon={self.composed_epsilon:.6g}, delta={self.composed_delta:.6g})"


register_accountant("approx", ApproxDPAccountant)
