"""The privacy ledger: a budget, the events charged against it, and refusal before release.

DESIGN.md invariant 2: :meth:`Ledger.charge` raises
:class:`BudgetExceededError` *before* anything is released when the charge
would overspend, and a refused charge changes nothing.  The mechanisms in
:mod:`dpopt.privacy.mechanisms` charge first and draw noise second.

A ledger describes the privacy of *one* run.  When an experiment runs R
independent repetitions as a batch dimension, every repetition makes the same
releases at the same noise scales, so one ledger describes each of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_delta, check_positive
from . import events as ev
from .pure import PureDPAccountant
from .rdp import RDPAccountant, rdp_budget_per_order
from .zcdp import ZCDPAccountant

__all__ = ["Ledger", "BudgetExceededError", "PrivacySpent", "RELATIONS"]

#: Neighbouring relations with a fixed meaning; a ledger also accepts a free-text
#: relation for a paper's own adjacency (e.g. "||b - b'||_inf <= b_max").
RELATIONS = {
    "add_remove": "datasets differ by adding or removing one record",
    "replace_one": "datasets of equal size differ in one record",
}

_ACCOUNTANTS = {"pure": PureDPAccountant, "rdp": RDPAccountant, "zcdp": ZCDPAccountant}

# Relative slack when comparing spent against budget: a budget split into T
# parts that are charged back must be accepted despite rounding.
_RELATIVE_SLACK = 1e-9


class BudgetExceededError(RuntimeError):
    """A charge would take the ledger over its budget; nothing was charged or released."""


@dataclass(frozen=True)
class PrivacySpent:
    """A privacy guarantee: (epsilon, delta) under ``notion`` ("pure", "rdp" or "zcdp" accounting)."""

    epsilon: float
    delta: float
    notion: str

    def __iter__(self):
        yield self.epsilon
        yield self.delta

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "notion": self.notion}


class Ledger:
    """A privacy budget and the log of events charged against it.

    Parameters
    ----------
    epsilon, delta:
        The total budget.  ``accountant="pure"`` needs ``delta == 0`` and
        composes pure ε-DP; ``"rdp"`` and ``"zcdp"`` need ``delta > 0`` and
        report (ε, δ)-DP through their conversion.
    accountant:
        ``"pure"``, ``"rdp"`` (:class:`~dpopt.privacy.rdp.RDPAccountant`) or
        ``"zcdp"`` (:class:`~dpopt.privacy.zcdp.ZCDPAccountant`).
    relation:
        The neighbouring relation the charged events' sensitivities refer to
        (DESIGN.md invariant 4): ``"add_remove"``, ``"replace_one"`` or a free
        text for a paper's own adjacency.
    orders:
        RDP orders for ``accountant="rdp"`` (default
        :data:`dpopt.privacy.rdp.DEFAULT_ORDERS`).
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        accountant: str = "pure",
        *,
        relation: str = "add_remove",
        orders=None,
    ):
        self.epsilon = check_positive("epsilon", epsilon)
        self.delta = check_delta("delta", delta)
        self.accountant_name = check_choice("accountant", accountant, tuple(_ACCOUNTANTS))
        if accountant == "pure" and self.delta != 0.0:
            raise ValueError("delta must be 0 for a pure-DP ledger; use accountant='rdp' for (ε, δ)")
        if accountant != "pure" and self.delta == 0.0:
            raise ValueError(f"delta must be in (0, 1) for accountant={accountant!r}")
        if not isinstance(relation, str) or not relation:
            raise ValueError("relation must be a non-empty string")
        self.relation = relation
        self._accountant = self._new_accountant(orders)
        self._events: list[ev.Event] = []

    def _new_accountant(self, orders=None):
        if self.accountant_name == "rdp":
            return RDPAccountant(orders)
        return _ACCOUNTANTS[self.accountant_name]()

    # -- charging ---------------------------------------------------------
    def _epsilon_of(self, accountant) -> float:
        return float(accountant.get_epsilon(self.delta) if self.delta else accountant.get_epsilon())

    def _trial(self, event: ev.Event):
        trial = self._accountant.copy().compose(event)
        return trial, self._epsilon_of(trial)

    def _within_budget(self, epsilon: float) -> bool:
        return epsilon <= self.epsilon * (1.0 + _RELATIVE_SLACK)

    def can_afford(self, event: ev.Event) -> bool:
        """Whether :meth:`charge` would accept ``event`` now (charges nothing)."""
        return self._within_budget(self._trial(event)[1])

    def charge(self, event: ev.Event) -> ev.Event:
        """Record ``event``, or raise :class:`BudgetExceededError` and change nothing."""
        if not isinstance(event, ev.Event):
            raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
        trial, after = self._trial(event)
        if not self._within_budget(after):
            raise BudgetExceededError(
                f"charging {type(event).__name__} would spend epsilon={after:.6g} "
                f"of a budget of {self.epsilon:.6g} (delta={self.delta:g}); nothing was released"
            )
        self._accountant = trial
        self._events.append(event)
        return event

    # -- reporting ----------------------------------------------------------
    @property
    def events(self) -> list[ev.Event]:
        """The charged events, in order (a copy)."""
        return list(self._events)

    @property
    def notion(self) -> str:
        return self.accountant_name

    def spent(self) -> PrivacySpent:
        """The guarantee of everything charged so far, as (ε, δ)."""
        if not self._events:
            return PrivacySpent(0.0, 0.0, self.notion)
        return PrivacySpent(self._epsilon_of(self._accountant), self.delta, self.notion)

    def remaining(self) -> PrivacySpent:
        """Budget ε minus spent ε (for RDP and zCDP a headroom, not an additive quantity)."""
        return PrivacySpent(max(self.epsilon - self.spent().epsilon, 0.0), self.delta, self.notion)

    def remaining_rdp(self) -> tuple[np.ndarray, np.ndarray]:
        """(orders, room): per RDP order, how much more RDP fits in the (ε, δ) budget.

        This is the per-order budget ε_tot(α) minus the spent RDP of chen2020
        §4.3; a further event fits iff its curve is ≤ room at some order.
        """
        if self.accountant_name != "rdp":
            raise ValueError("remaining_rdp is defined for accountant='rdp' ledgers")
        orders = self._accountant.orders
        budget = rdp_budget_per_order(orders, self.epsilon, self.delta)
        return orders, budget - self._accountant.rdp

    def replay(self) -> PrivacySpent:
        """Re-run a fresh accountant over the event log; equals :meth:`spent` exactly."""
        accountant = self._new_accountant(getattr(self._accountant, "orders", None))
        for event in self._events:
            accountant.compose(event)
        if not self._events:
            return PrivacySpent(0.0, 0.0, self.notion)
        return PrivacySpent(self._epsilon_of(accountant), self.delta, self.notion)

    # -- serialization --------------------------------------------------------
    def to_dict(self) -> dict:
        out = {
            "budget": {"epsilon": self.epsilon, "delta": self.delta},
            "accountant": self.accountant_name,
            "relation": self.relation,
            "spent": self.spent().to_dict(),
            "events": [e.to_dict() for e in self._events],
        }
        if self.accountant_name == "rdp":
            out["orders"] = [float(a) for a in self._accountant.orders]
        return out

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict) -> Ledger:
        """Rebuild a ledger and re-charge its events (which re-checks the budget)."""
        ledger = cls(
            data["budget"]["epsilon"],
            data["budget"]["delta"],
            data["accountant"],
            relation=data.get("relation", "add_remove"),
            orders=data.get("orders"),
        )
        for item in data.get("events", []):
            ledger.charge(ev.from_dict(item))
        return ledger

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        return cls.from_dict(json.loads(text))

    def __repr__(self) -> str:
        spent = self.spent()
        return (
            f"Ledger(epsilon={self.epsilon:g}, delta={self.delta:g}, accountant={self.accountant_name!r}, "
            f"spent_epsilon={spent.epsilon:.6g}, events={len(self._events)})"
        )
