"""The ledger a family entry point spends from: the caller's, or one made at the top (issue 15 §1)."""

from __future__ import annotations

from .._validation import check_delta, check_positive
from ..privacy import Ledger, make_accountant
from ..privacy.mechanisms import check_ledger

__all__ = ["run_ledger", "smallest_affordable_scale"]


def run_ledger(ledger, epsilon, delta, *, accountant, relation: str = "add_remove",
               orders=None) -> tuple[Ledger, float, float]:
    """``(ledger, ε, δ)`` for one run.

    ``accountant`` is a registered name or a fresh accountant instance (e.g.
    the one :func:`~dpopt.privacy.calibration.run_accountant` chose and the
    run calibrated its noise with).  Without ``ledger`` a new one of
    ``accountant`` is made from (``epsilon``, ``delta``).  With a ledger and
    no ``epsilon`` the run plans with and spends the ledger's own budget.  With both, the run plans with (``epsilon``,
    ``delta``) and spends from ``ledger.child(epsilon, delta)``, a child
    whose own check uses ``accountant`` (δ = 0 for ``"pure"``) while the
    ledger refuses anything beyond its own total.  A given ledger's relation must be
    ``relation``: the oracles' sensitivities are computed for it.
    """
    if ledger is None:
        if epsilon is None:
            raise TypeError("give epsilon (and delta) or a ledger")
        epsilon = check_positive("epsilon", epsilon)
        delta = check_delta("delta", 0.0 if delta is None else delta)
        orders = orders if isinstance(accountant, str) else None  # an instance carries its own
        return Ledger(epsilon, delta, accountant, relation=relation, orders=orders), epsilon, delta
    check_ledger(ledger, relation, why=" for this method")
    if epsilon is None:
        return ledger, ledger.epsilon, ledger.delta
    epsilon = check_positive("epsilon", epsilon)
    if accountant == "pure":
        delta = 0.0
    delta = check_delta("delta", ledger.delta if delta is None else delta)
    # The run checks its own (ε, δ) with its own notion (a pure run inside an RDP session is a
    # pure-DP child); the ledger above checks the composition with its own.
    options = {"orders": orders} if orders is not None and accountant == "rdp" else {}
    template = make_accountant(accountant, **options).copy() if options or isinstance(accountant, str) else accountant
    return ledger.child(epsilon, delta, accountant=template), epsilon, delta


def smallest_affordable_scale(ledger: Ledger, event_of, *, start: float, rel_tol: float = 1e-9) -> float:
    """The smallest noise scale s ≥ ``start`` with ``ledger.can_afford(event_of(s))``, to ``rel_tol``.

    ``event_of(s)`` must cost less the larger s is (a noise scale).  Used when
    part of a run's budget is already spent (a noisy count, a shared ledger)
    and a fixed number of releases must fit what is left.  Bisection in log s.
    """
    lo = hi = check_positive("start", start)
    if ledger.can_afford(event_of(hi)):
        return hi
    while not ledger.can_afford(event_of(hi)):
        lo, hi = hi, hi * 2.0
        if hi > start * 2.0**60:
            raise ValueError("no noise scale fits the ledger's remaining budget")
    while hi / lo > 1.0 + rel_tol:
        mid = (lo * hi) ** 0.5
        lo, hi = (lo, mid) if ledger.can_afford(event_of(mid)) else (mid, hi)
    return hi
