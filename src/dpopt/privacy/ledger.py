"""The privacy ledger: a budget, the events charged against it, and refusal before release.

DESIGN.md invariant 2: :meth:`Ledger.charge` raises
:class:`BudgetExceededError` *before* anything is released when the charge
would overspend, and a refused charge changes nothing.  The mechanisms in
:mod:`dpopt.privacy.mechanisms` charge first and draw noise second.

A ledger is made at the top (estimator, command, experiment) and handed down;
a part of its budget is handed on as :meth:`Ledger.child`, a sub-ledger whose
every charge is also charged to its parent, so the root's event log is the
one composed record of the run.

The budget check compares *exactly*: a charge is accepted iff the ε the
accountant would then report is ≤ the budget, computed by the same
arithmetic that :meth:`Ledger.spent` later uses (no relative slack).  Budget
splits that must add up exactly are made exact where they are made (see
:func:`~dpopt.privacy.events.scale_for_epsilon` and
:func:`~dpopt.privacy.calibration.fit_scales_to_budget`).

A ledger describes the privacy of *one* run.  When an experiment runs R
independent repetitions as a batch dimension, every repetition makes the same
releases at the same noise scales, so one ledger describes each of them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._validation import check_delta, check_int, check_nonnegative, check_positive
from . import events as ev
from . import pld, zcdp  # noqa: F401  (register "pld" and "zcdp")
from .accountant import Accountant, AccountantBase, Relation, make_accountant, required_relation
from .approx import ApproxDPAccountant, _round_up
from .pure import PureDPAccountant
from .rdp import RDPAccountant, rdp_budget_per_order

__all__ = [
    "Ledger", "BudgetExceededError", "PrivacySpent", "RELATIONS", "Relation", "equal_share", "remainder", "budget_for",
]

#: Neighbouring relations with a fixed meaning; a ledger also accepts a free-text
#: relation for a paper's own adjacency (e.g. "||b - b'||_inf <= b_max").
RELATIONS = Relation.STANDARD
#: Events a ledger remembers, by identity, as checked for the relation (see ``_check_relation``).
_RELATED_BY_ID = 512


class BudgetExceededError(RuntimeError):
    """A charge would take the ledger over its budget; nothing was charged or released."""


@dataclass(frozen=True)
class PrivacySpent:
    """A privacy guarantee: (epsilon, delta) under ``notion`` ("pure", "approx", "rdp", "zcdp" or "pld" accounting)."""

    epsilon: float
    delta: float
    notion: str

    def __iter__(self):
        yield self.epsilon
        yield self.delta

    def to_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "notion": self.notion}


def equal_share(total: float, parts: int) -> float:
    """The largest float s with parts·s ≤ ``total`` in exact arithmetic: one of ``parts`` equal sub-budgets.

    ``total/parts`` rounded to nearest can make the parts add up to a hair
    more than the total, which an exact ledger then refuses; the share is
    rounded down instead, so ``parts`` children of this budget always fit.
    """
    total = check_nonnegative("total", total)
    parts = check_int("parts", parts)
    share = total / parts
    while share > 0.0 and Fraction(share) * parts > Fraction(total):
        share = math.nextafter(share, 0.0)
    return share


def budget_for(*parts: float) -> float:
    """The smallest float b with Σ ``parts`` ≤ b in exact arithmetic: a budget that affords every part.

    The parts' float sum rounded to nearest can fall a hair below their exact
    sum, which an exact ledger of that budget then refuses at its last part;
    the sum is rounded up instead.
    """
    return _round_up(sum((Fraction(check_nonnegative("part", x)) for x in parts), Fraction(0)))


def remainder(total: float, *spent: float) -> float:
    """The largest float r with Σ spent + r ≤ ``total`` in exact arithmetic (0 if nothing is left).

    The last part of a budget split, taking what the others leave: ``total −
    spent`` rounded to nearest can make the parts add up to a hair more than
    the total, which an exact ledger refuses.
    """
    total = check_nonnegative("total", total)
    used = sum((Fraction(check_nonnegative("spent", x)) for x in spent), Fraction(0))
    left = Fraction(total) - used
    if left <= 0:
        return 0.0
    r = float(left)
    while Fraction(r) > left:
        r = math.nextafter(r, 0.0)
    return r


class Ledger:
    """A privacy budget and the log of events charged against it.

    Parameters
    ----------
    epsilon, delta:
        The total budget.  A pure-DP accountant needs ``delta == 0``; the
        others (approx, RDP, zCDP, PLD) need ``delta > 0`` and report (ε, δ)-DP:
        the approx accountant the sums of the charged ε's and δ's (a charge is
        accepted when both sums fit), the others through their conversion at
        the budget's δ.
    accountant:
        An accountant instance with nothing composed yet (anything with the
        :class:`~dpopt.privacy.accountant.Accountant` interface), or a
        registered name: ``"pure"``
        (:class:`~dpopt.privacy.pure.PureDPAccountant`), ``"approx"``
        (:class:`~dpopt.privacy.approx.ApproxDPAccountant`: pure events and
        stated ``ApproxDP`` guarantees by basic composition), ``"rdp"``
        (:class:`~dpopt.privacy.rdp.RDPAccountant`), ``"zcdp"``
        (:class:`~dpopt.privacy.zcdp.ZCDPAccountant`), ``"pld"``.
    relation:
        The neighbouring relation the charged events' sensitivities refer to
        (DESIGN.md invariant 4): ``"add_remove"``, ``"replace_one"`` or a free
        text for a paper's own adjacency (a :class:`Relation`).  Subsampled
        events must use the scheme whose amplification holds under it
        (Poisson: add/remove; fixed-size without replacement: replace-one);
        under a paper's own adjacency no subsampling is accepted.
    orders:
        RDP orders for ``accountant="rdp"`` given by name (default
        :data:`dpopt.privacy.rdp.DEFAULT_ORDERS`).
    filter_order:
        For runs whose events depend on earlier releases (adaptive budgets):
        the one RDP order, fixed before the run from public quantities (see
        :func:`dpopt.privacy.rdp.best_order`), at which every charge is
        checked.  This is the Rényi filter of Feldman & Zrnic 2021, Thm 3.1,
        proven for one fixed order: if the composed RDP at α stays ≤ B(α), the
        budget converted at α, the whole run is (α, B(α))-RDP, hence (ε, δ)-DP.
        Accepting a charge that fits at *any* of several orders is not covered
        by that theorem, so without ``filter_order`` an RDP ledger must only
        see event sequences fixed in advance.  With it, :meth:`spent` reports
        the filter's guarantee — the budget (ε, δ) — once anything is charged.
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        accountant="pure",
        *,
        relation="add_remove",
        orders=None,
        filter_order=None,
    ):
        self.epsilon = check_positive("epsilon", epsilon)
        self.delta = check_delta("delta", delta)
        options = {} if orders is None else {"orders": orders}
        template = make_accountant(accountant, **options)
        self._template = template.copy()
        self.accountant_name = str(template.notion)
        if isinstance(template, PureDPAccountant) and self.delta != 0.0:
            raise ValueError("delta must be 0 for a pure-DP ledger; use accountant='rdp' for (ε, δ)")
        if not isinstance(template, PureDPAccountant) and self.delta == 0.0:
            raise ValueError(f"delta must be in (0, 1) for accountant={self.accountant_name!r}")
        self.relation = Relation(relation)
        self.filter_order = None
        if filter_order is not None:
            if not isinstance(template, RDPAccountant):
                raise ValueError("filter_order applies to an RDP ledger (accountant='rdp')")
            template.order_index(filter_order)  # ValueError naming the order if it is not a grid order
            self.filter_order = float(filter_order)
        self._accountant = self._template.copy()
        if self.filter_order is not None:
            self._accountant.focus(self.filter_order)  # every check is at that order (same values)
        self._events: list[ev.Event] = []
        self._spent_epsilon: float | None = 0.0
        self._parent: Ledger | None = None
        self._detached = False  # charged to the parent once as a RenyiBound (fix_filter_order)
        self._room = None  # (B(α), margin, index of α, (α, ε, δ)) of a filter that decides alone (_filter_room)
        self._related = ev.IdentityCache(_RELATED_BY_ID)  # events whose relation was checked (a loop's events)

    # -- children -----------------------------------------------------------
    def child(self, epsilon: float, delta: float | None = None, *, accountant=None) -> Ledger:
        """A sub-budget of (ε, δ) whose every charge is also charged to this ledger.

        The child composes its own events with a fresh accountant of this
        ledger's type (or ``accountant``, a name or fresh instance: e.g. a
        pure-DP child for pure releases inside an RDP run) and checks its own
        budget; a charge is accepted only if the child *and* every ancestor
        can afford it, and is then recorded in all of them (so this ledger's
        log is the composed record of all its children).  A refused charge
        changes none of them.  ``delta`` defaults to 0 for a pure-DP child and
        to this ledger's δ otherwise.
        """
        template = self._template.copy() if accountant is None else make_accountant(accountant)
        if delta is None:
            delta = 0.0 if isinstance(template, PureDPAccountant) else self.delta
        order = self.filter_order if isinstance(template, RDPAccountant) else None
        kid = Ledger(epsilon, delta, template, relation=self.relation, filter_order=order)
        kid._parent = self
        return kid

    def fix_filter_order(self, order: float) -> None:
        """Make this RDP ledger a Rényi filter at ``order`` (see ``filter_order``), before any charge.

        An adaptive algorithm calls this at its start with an order chosen
        from its planned, public composition (:func:`~dpopt.privacy.rdp.filter_order`).
        If every ancestor is a filter at the same order, charges keep flowing
        up the chain.  Otherwise this ledger's whole run is charged to its
        parent now, once, as the filter's guarantee
        :class:`~dpopt.privacy.events.RenyiBound` (α, B(α)) — B(α) this
        ledger's budget at α as the filter's own float test accepts it (a few
        ulps either side of the formula's, or up to the total-variation
        shortcut's room: :meth:`~dpopt.privacy.rdp.RDPAccountant.filter_room`,
        the most this filter accepts) — and later charges stay here: an ancestor that
        accepts a charge at whichever of its orders fits must not see the
        adaptive events themselves (Feldman & Zrnic 2021, Thm 3.1 covers one
        fixed order).  Raises ``BudgetExceededError`` (changing nothing) if
        the parent cannot afford that guarantee.
        """
        if self._events:
            raise ValueError("the filter order must be fixed before anything is charged")
        if self._detached:  # its parent holds this filter's guarantee already: a second would charge it again
            raise ValueError("the filter order is fixed already (its parent ledger was charged the filter's budget)")
        if not isinstance(self._accountant, RDPAccountant):
            raise ValueError("fix_filter_order applies to an RDP ledger (accountant='rdp')")
        self._accountant.order_index(order)
        order = float(order)
        node = self._parent
        while node is not None and node.filter_order == order:
            node = None if node._detached else node._parent  # a detached filter answers for its chain
        if node is not None:
            bound = float(rdp_budget_per_order([order], self.epsilon, self.delta)[0])
            if not bound > 0.0:
                raise ValueError(
                    f"the budget epsilon={self.epsilon:g}, delta={self.delta:g} is empty at order {order:g}"
                    + self._below_rdp_floor()
                )
            # all the filter accepts: what its own float test maps within (ε, δ) at α, a few ulps either side
            # of the formula's B(α), or up to the total-variation shortcut's room (ε = 0).  Not B(α) when that
            # is above it: B(α) can convert an ulp above ε, so a parent of the same budget refused it
            bound = self._accountant.filter_room(self.epsilon, self.delta, order)
            self._parent.charge(ev.RenyiBound(order, bound))
            self._detached = True
        self._accountant.focus(order)  # every check is at that order (same values)
        self.filter_order = order
        self._room = None  # (B(α) of the new order: _filter_room)

    def _below_rdp_floor(self) -> str:
        """Why an RDP budget refuses everything, when it does: its ε is below what RDP accounting can state
        at its δ (the smallest conversion term over the orders), whatever the event; else ``""``."""
        if not isinstance(self._accountant, RDPAccountant) or not self.delta:
            return ""
        orders = self._accountant.orders
        floor = self.epsilon - float(np.max(rdp_budget_per_order(orders, self.epsilon, self.delta)))
        if self.epsilon >= floor:
            return ""
        return (
            f": at delta={self.delta:g} Renyi-DP accounting states no epsilon below {floor:.3g} "
            f"(orders up to {float(np.max(orders)):g}), so raise epsilon or delta"
        )

    @property
    def parent(self) -> Ledger | None:
        """The ledger this one charges too (``None`` for a root ledger)."""
        return self._parent

    # -- charging ---------------------------------------------------------
    def _fits(self, event: ev.Event) -> bool:
        """Whether this ledger alone can afford ``event`` (exactly: no slack)."""
        acc = self._accountant
        if isinstance(acc, RDPAccountant):
            return acc.fits(event, self.epsilon, self.delta, order=self.filter_order)
        if isinstance(acc, PureDPAccountant):
            return acc.fits(event, self.epsilon)
        if isinstance(acc, AccountantBase):
            return acc.fits(event, self.epsilon, self.delta)
        trial = acc.copy().compose(event)
        return float(trial.get_epsilon(self.delta) if self.delta else trial.get_epsilon()) <= self.epsilon

    def _current_epsilon(self) -> float:
        """The ε of everything charged, converted when first asked after a charge."""
        if self._spent_epsilon is None:
            acc = self._accountant
            if isinstance(acc, RDPAccountant) and self.filter_order is not None:
                eps = acc.epsilon_at(self.delta, self.filter_order)
            else:
                eps = acc.get_epsilon(self.delta) if self.delta else acc.get_epsilon()
            self._spent_epsilon = float(eps)
        return self._spent_epsilon

    def _check_relation(self, event: ev.Event) -> None:
        if self._related.get(event):  # this very event object passed before
            return
        needed = required_relation(event)
        if needed is not None and needed != self.relation:
            scheme = "Poisson" if needed == Relation.ADD_REMOVE else "fixed-size without-replacement"
            raise ValueError(
                f"{scheme} subsampling amplification holds under the {needed} relation, "
                f"but this ledger's relation is {str(self.relation)!r}; sample with the scheme "
                "that matches the relation (DESIGN.md invariant 6)"
            )
        self._related.put(event, True)

    def _refusal(self, event: ev.Event):
        """(first ledger up the chain that cannot afford ``event`` or None, the ledgers to charge)."""
        chain, node = [], self
        while node is not None:
            if not node._fits(event):
                return node, chain
            chain.append(node)
            node = None if node._detached else node._parent
        return None, chain

    def _filter_room(self):
        """(B(α), rounding margin, index of α, (α, ε, δ)) at the filter order, when this ledger alone
        decides its charges (a filter that is a root or detached from its parent); else None.  Kept
        with the (α, ε, δ) it was computed for, and computed again when any of them changed (an
        order fixed again before the first charge, a budget set anew): a stale B(α) would accept
        overspending."""
        key = (self.filter_order, self.epsilon, self.delta)
        room = self._room
        if room is not None and room[3] == key:
            return room
        if self.filter_order is None or not (self._parent is None or self._detached):
            return None
        acc = self._accountant
        budget, margin = acc._headroom(self.epsilon, self.delta)
        i = acc.order_index(self.filter_order)
        room = self._room = (float(budget[i]), float(margin[i]), i, key)
        return room

    def _fits_with_room(self, event: ev.Event) -> bool:
        """Whether this filter, deciding alone, fits ``event`` with room to spare: the first test of
        :meth:`RDPAccountant.fits` (B(α) − value after ≥ margin, by :meth:`RDPAccountant._value_after`'s
        arithmetic), without its look-ups.  False says nothing: the full check then decides exactly
        (within the margin, over the budget, NaN)."""
        room = self._filter_room()
        return room is not None and room[0] - self._accountant._value_after(event, room[2]) >= room[1]

    def can_afford(self, event: ev.Event) -> bool:
        """Whether :meth:`charge` would accept ``event`` now (charges nothing)."""
        self._check_relation(event)
        return self._fits_with_room(event) or self._refusal(event)[0] is None

    def charge(self, event: ev.Event) -> ev.Event:
        """Record ``event`` here and in every ancestor, or raise and change nothing.

        Raises :class:`BudgetExceededError` if this ledger or an ancestor
        cannot afford it, ``ValueError`` if the accountant has no guarantee
        for it or its subsampling scheme does not match the relation.
        """
        if not isinstance(event, ev.Event):
            raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
        self._check_relation(event)
        if self._fits_with_room(event):  # a filter deciding alone, within its budget by more than the margin
            refused, chain = None, [self]
        else:
            refused, chain = self._refusal(event)
        if refused is not None:
            which = "this ledger" if refused is self else "a parent ledger"
            after = refused._accountant.copy().compose(event)
            if isinstance(after, ApproxDPAccountant):  # both sums are checked: say which one overspends
                raise BudgetExceededError(
                    f"charging {type(event).__name__} would spend epsilon={after.composed_epsilon:.6g}, "
                    f"delta={after.composed_delta:.6g} of {which}'s budget of epsilon={refused.epsilon:.6g}, "
                    f"delta={refused.delta:g}; nothing was released"
                )
            if refused.filter_order is not None:  # a filter converts at its order only, as its check does
                after = after.epsilon_at(refused.delta, refused.filter_order)
            else:
                after = after.get_epsilon(refused.delta) if refused.delta else after.get_epsilon()
            raise BudgetExceededError(
                f"charging {type(event).__name__} would spend epsilon={after:.6g} of {which}'s "
                f"budget of {refused.epsilon:.6g} (delta={refused.delta:g}); nothing was released"
                + refused._below_rdp_floor()
            )
        for node in chain:
            node._accountant.compose(event)
            node._events.append(event)
            node._spent_epsilon = None
        return event

    # -- reporting ----------------------------------------------------------
    @property
    def events(self) -> list[ev.Event]:
        """The charged events, in order (a copy)."""
        return list(self._events)

    @property
    def accountant(self) -> Accountant:
        """A copy of the accountant holding everything charged so far."""
        return self._accountant.copy()

    @property
    def notion(self) -> str:
        return self.accountant_name

    def spent(self) -> PrivacySpent:
        """The guarantee of everything charged so far, as (ε, δ).

        A filter ledger (``filter_order``) reports its budget: the Rényi
        filter's guarantee does not shrink when a run stops early.
        """
        if not self._events:
            return PrivacySpent(0.0, 0.0, self.notion)
        if self.filter_order is not None:
            return PrivacySpent(self.epsilon, self.delta, self.notion)
        if isinstance(self._accountant, ApproxDPAccountant):  # basic composition states the δ it composed
            return PrivacySpent(self._current_epsilon(), self._accountant.composed_delta, self.notion)
        return PrivacySpent(self._current_epsilon(), self.delta, self.notion)

    def spent_by_copies(self, copies: int) -> PrivacySpent:
        """The guarantee of ``copies`` independent runs on the same data that each charge this ledger's
        events, released together (the R repetitions of an experiment in one batch): the events composed
        ``copies`` times by this ledger's accountant (``copies`` = 1: :meth:`spent`).

        A Rényi filter (``filter_order``) is refused: its events adapt to earlier releases, so only its
        order's budget, not the composition of the events it happened to charge, would hold for each run.
        """
        copies = check_int("copies", copies)
        if copies == 1 or not self._events:
            return self.spent()
        if self.filter_order is not None:
            raise ValueError("spent_by_copies: a Renyi filter's runs adapt their events; compose their budgets instead")
        acc = self._accountant.copy()
        acc.compose(ev.SelfComposed(ev.Composed(tuple(self._events)), copies - 1))
        if isinstance(acc, ApproxDPAccountant):  # the sums, which R copies may take past the budget's δ
            return PrivacySpent(float(acc.composed_epsilon), acc.composed_delta, self.notion)
        epsilon = float(acc.get_epsilon(self.delta) if self.delta else acc.get_epsilon())
        return PrivacySpent(epsilon, self.delta, self.notion)

    def remaining(self) -> PrivacySpent:
        """Budget ε minus spent ε (for RDP and zCDP a headroom, not an additive quantity); for the approx
        accountant, whose δ's add up too, budget δ minus spent δ."""
        spent = self.spent()
        delta = max(self.delta - spent.delta, 0.0) if isinstance(self._accountant, ApproxDPAccountant) else self.delta
        return PrivacySpent(max(self.epsilon - spent.epsilon, 0.0), delta, self.notion)

    def filter_cost(self, event: ev.Event) -> float:
        """The RDP of ``event`` at this Rényi filter's order: the very float :meth:`can_afford` and
        :meth:`charge` add for it (cached per event object; ``ValueError`` without a filter order)."""
        if self.filter_order is None:
            raise ValueError("filter_cost needs a Renyi filter (fix_filter_order)")
        return self._accountant.focused_cost(event)

    def remaining_rdp(self) -> tuple[np.ndarray, np.ndarray]:
        """(orders, room): per RDP order, how much more RDP fits in the (ε, δ) budget.

        This is the per-order budget ε_tot(α) minus the spent RDP of chen2020
        §4.3.  For a filter ledger only the filter order is returned (the only
        order whose room counts, Feldman & Zrnic 2021, Thm 3.1); otherwise a
        further event of fixed cost fits iff its curve is ≤ room at some order.
        """
        if not isinstance(self._accountant, RDPAccountant):
            raise ValueError("remaining_rdp is defined for accountant='rdp' ledgers")
        acc = self._accountant
        orders = acc.orders
        if self.filter_order is not None:  # the entry of the per-order arithmetic below, at its order
            i = acc.order_index(self.filter_order)
            at = orders[i : i + 1].copy()
            return at, rdp_budget_per_order(at, self.epsilon, self.delta) - np.array([acc._value_at(i)])
        return orders, rdp_budget_per_order(orders, self.epsilon, self.delta) - acc.rdp

    def replay(self) -> PrivacySpent:
        """Re-charge the event log into a fresh ledger of the same kind; equals :meth:`spent` exactly."""
        fresh = Ledger(
            self.epsilon, self.delta, self._template.copy(), relation=self.relation,
            filter_order=self.filter_order,
        )  # fmt: skip
        for event in self._events:
            fresh.charge(event)
        return fresh.spent()

    # -- serialization --------------------------------------------------------
    def to_dict(self) -> dict:
        out = {
            "budget": {"epsilon": self.epsilon, "delta": self.delta},
            "accountant": self.accountant_name,
            "relation": str(self.relation),
            "spent": self.spent().to_dict(),
            "events": [e.to_dict() for e in self._events],
        }
        if isinstance(self._accountant, RDPAccountant):
            out["orders"] = [float(a) for a in self._accountant.orders]
        if self.filter_order is not None:
            out["filter_order"] = self.filter_order
        if isinstance(self._accountant, pld.PLDAccountant):  # its grid: the same ε when read back
            out["discretization"] = self._accountant.discretization
            out["tail_mass"] = self._accountant.tail_mass
        return out

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict) -> Ledger:
        """Rebuild a ledger and re-charge its events (which re-checks the budget)."""
        accountant = data["accountant"]
        grid = {key: data[key] for key in ("discretization", "tail_mass") if key in data}
        if accountant == "pld" and grid:
            accountant = make_accountant("pld", **grid)
        ledger = cls(
            data["budget"]["epsilon"],
            data["budget"]["delta"],
            accountant,
            relation=data.get("relation", "add_remove"),
            orders=data.get("orders"),
            filter_order=data.get("filter_order"),
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
