"""The budget of one estimator fit: spent from a ledger that outlives the fit, all or nothing.

An estimator either makes a fresh :class:`~dpopt.privacy.Ledger` holding exactly
its (ε, δ), or spends from the ``ledger=`` it was given (several fits, several
estimators, a whole session: the model is diffprivlib's ``BudgetAccountant``).
Three rules hold for the given ledger:

1. **Refuse before any noise.**  :func:`open_fit` checks, before the data are
   touched, that the ledger's relation and accountant fit the method and that
   (ε, δ) fits in what is left; otherwise it raises and draws nothing.
2. **All or nothing.**  The fit charges a *staging copy* of the ledger
   (through ``child`` budgets, so every one-vs-rest problem is refused before
   it overspends its share or the whole); only when the fit has succeeded are
   the staged events charged to the real ledger (:meth:`FitBudget.commit`).
   A fit that raises spends nothing.
3. **One record.**  The ledger's event log is the composed record of every
   fit charged to it; the fit's own record is its child budget's.

For an RDP or zCDP ledger the check of rule 1 compares ε with the ledger's
ε-headroom, a necessary condition; the exact test is the ledger's own refusal
of each event on the staging copy, which still spends nothing on refusal.
"""

from __future__ import annotations

import copy

from ..oracles import Normalizer, laplace_count
from ..privacy import BudgetExceededError, Ledger, equal_share
from ..privacy.calibration import run_accountant
from ..privacy.mechanisms import check_ledger

__all__ = ["FitBudget", "open_fit"]


class FitBudget:
    """A fit's (ε, δ): one :meth:`share` per sub-problem, :meth:`commit` once the fit succeeded."""

    def __init__(self, target: Ledger, budget: Ledger, staging: Ledger, epsilon: float, delta: float):
        self._target = target
        self._staging = staging
        self.ledger = budget  # the fit's own budget (events of this fit only)
        self.epsilon = epsilon
        self.delta = delta
        self._start = len(staging.events)

    def share(self, parts: int) -> Ledger:
        """A child budget of (ε/parts, δ/parts) for one of ``parts`` sub-problems."""
        return self.ledger.child(equal_share(self.epsilon, parts), equal_share(self.delta, parts))

    def release_count(self, n_records: int, share: float, rng, secure_noise: bool = False) -> Normalizer:
        """Release the record count with ``share``·ε (Laplace, sensitivity 1) from this fit's budget.

        What :meth:`share` splits afterwards is the rest, (1 − ``share``)·ε at the same δ: the
        count is pure ε-DP, so the two compose to the fit's (ε, δ) by basic composition.
        ``secure_noise``: exact discrete Laplace on a grid at the same ε.
        """
        spent = share * self.epsilon
        count = laplace_count(n_records, epsilon=spent, ledger=self.ledger, rng=rng, secure_noise=secure_noise)
        self.epsilon -= spent
        return count

    def commit(self) -> None:
        """Charge the staged events of this fit to the real ledger (they fit: the copy accepted them)."""
        if self._target is self._staging:
            return
        for event in self._staging.events[self._start :]:
            self._target.charge(event)


def open_fit(ledger, epsilon: float, delta: float, *, notion: str, relation: str) -> FitBudget:
    """The budget of one fit of (``epsilon``, ``delta``) under ``notion`` and ``relation``.

    ``ledger=None``: a fresh ledger of exactly that budget.  Otherwise the
    checks of rule 1 of the module docstring, then a staging copy of ``ledger``.
    """
    if ledger is None:
        accountant = run_accountant("pld") if notion == "pld" else notion  # the grid the family calibrates at
        fresh = Ledger(epsilon, 0.0 if notion == "pure" else delta, accountant, relation=relation)
        return FitBudget(fresh, fresh, fresh, epsilon, 0.0 if notion == "pure" else delta)
    check_ledger(ledger, relation, why=" for this method's guarantee")
    if notion != "pure" and ledger.notion == "pure":
        raise ValueError("this method needs (epsilon, delta) accounting; the ledger is pure-DP (accountant 'pure')")
    share_delta = 0.0 if ledger.notion == "pure" else delta
    if notion != "pure" and not 0.0 < delta <= ledger.delta:
        raise ValueError(
            f"delta must be in (0, {ledger.delta:g}] (the delta of the ledger, accountant {ledger.notion!r}), "
            f"got {delta:g}"
        )
    left = ledger.remaining().epsilon
    if epsilon > left:
        raise BudgetExceededError(
            f"this fit needs epsilon={epsilon:.6g} but the ledger has epsilon={left:.6g} left; nothing was spent"
        )
    staging = copy.deepcopy(ledger)
    if notion == "pure" and ledger.notion != "pure":  # a pure fit inside an (ε, δ) session
        return FitBudget(ledger, staging.child(epsilon, accountant="pure"), staging, epsilon, 0.0)
    return FitBudget(ledger, staging.child(epsilon, share_delta), staging, epsilon, share_delta)
