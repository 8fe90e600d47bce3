"""The result every dpopt optimizer returns, whatever its family.

Like :class:`scipy.optimize.OptimizeResult` it carries the solution and its
objective value; unlike it, it also carries the privacy record: the
guarantee spent, the notion and neighbouring relation it holds under, the
event log that reproduces it, and what kind of guarantee it is.

A result holds two kinds of things (DESIGN.md invariant 7).  What the
guarantee covers — the solution ``x`` and the privacy record — is
:meth:`DPResult.release`.  Everything else a method computes from the private
data for its own bookkeeping — the exact objective value ``fun``, the
``trajectory``, ``info`` (e.g. MCMC acceptance rates, ``rows_projected``, a
solver's gradient norm) and the iteration count — is :attr:`DPResult.diagnostics`,
a :class:`Diagnostics` mapping labelled non-private: it is outside the
guarantee and must not be published, saved with a model or written into a
report unless the user asks for it.
"""

from __future__ import annotations

import decimal
import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .privacy import Ledger, PrivacySpent
from .privacy import events as ev

__all__ = ["DPResult", "Diagnostics", "GUARANTEES", "NON_PRIVATE", "format_bound"]

#: The label every non-private diagnostic carries wherever it appears.
NON_PRIVATE = (
    "NON-PRIVATE: computed from the private data outside the privacy guarantee; "
    "do not publish, save with a model or put in a report unless you mean to"
)

def format_bound(value, digits: int = 4) -> str:
    """An ε or δ a guarantee states, as text to ``digits`` significant digits rounded *up*: 4.22401 is
    "4.225", never "4.224", which would state more privacy than the ledger holds.  A text within 4 ulps
    below the value keeps it (below the accountants' own float precision): 1e-05 stays "1e-05", and 0.5
    for the 0.5000000000000001 that basic composition rounds five charges of 0.1 up to.  Anything but a
    finite real number is ``str(value)``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    text = f"{value:.{digits}g}"
    if not math.isfinite(value) or float(text) >= value - 4.0 * math.ulp(value):
        return text
    up = decimal.Context(prec=digits, rounding=decimal.ROUND_CEILING).plus(decimal.Decimal(repr(float(value))))
    return f"{float(up):.{digits}g}"  # (the float nearest the rounded-up decimal prints as it)


#: The kinds of guarantee a result can carry (DESIGN.md "Paper details").
GUARANTEES = {
    "exact": "the stated guarantee holds for every input satisfying the declared bounds",
    "approximate": "the guarantee holds only in a limit the run approximates (e.g. MCMC sampling)",
    "conditional": "the guarantee holds under a modelling assumption stated in `notes`",
    "none": "non-private reference: no privacy guarantee",
}


class Diagnostics(dict):
    """A dict of quantities computed from the private data outside the guarantee.

    It behaves as a plain ``dict``; :attr:`label` (:data:`NON_PRIVATE`) and its
    ``repr`` say that its content is not covered by any privacy guarantee.
    """

    label = NON_PRIVATE
    private = False

    def __repr__(self) -> str:
        return f"Diagnostics[{NON_PRIVATE.split(':')[0]}]({dict.__repr__(self)})"


@dataclass
class DPResult:
    """Outcome of one private optimization run (or of R repetitions in one batch).

    Attributes
    ----------
    x:
        The released solution, shape (d,), or (R, d) for R repetitions.
    fun:
        Objective value at ``x`` (scalar or (R,)), computed exactly from the
        private data: a non-private diagnostic (see :attr:`diagnostics`).
    method:
        The method's name as the papers write it, lower case (e.g. ``"dp-nag-opt"``).
    privacy:
        The (ε, δ) spent and the accounting notion.
    events:
        The ledger's event log; re-running an accountant over it gives ``privacy``.
    relation:
        The neighbouring relation the guarantee refers to.
    guarantee:
        A key of :data:`GUARANTEES`.
    nit:
        Iterations performed.
    trajectory:
        Optional iterates or objective values per iteration (see ``info``):
        a non-private diagnostic.
    info:
        Method-specific diagnostics (acceptance rates, budget split, ...):
        non-private unless the method documents an entry as released.
    notes:
        Human-readable caveats about the guarantee.
    repetitions:
        R, the independent runs on the same data in ``x`` (experiments).  ``privacy`` and
        ``events`` describe one run; ``privacy_all`` is the guarantee of all R released together
        (the events composed R times: :meth:`~dpopt.privacy.Ledger.spent_by_copies`), None for one run.
    """

    x: np.ndarray
    fun: Any
    method: str
    privacy: PrivacySpent
    events: list = field(default_factory=list)
    relation: str = "add_remove"
    guarantee: str = "exact"
    nit: int = 0
    trajectory: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    notes: str = ""
    repetitions: int = 1
    privacy_all: PrivacySpent | None = None

    def __post_init__(self):
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"guarantee must be one of {sorted(GUARANTEES)}, got {self.guarantee!r}")

    @classmethod
    def from_ledger(cls, ledger: Ledger, *, repetitions: int = 1, **kwargs) -> DPResult:
        """Build a result whose privacy record is ``ledger``'s: one run's, with the guarantee of all
        ``repetitions`` runs (each charged as ``ledger``'s events) in ``privacy_all`` when there are several;
        None for a Renyi filter's ledger (``filter_order``), whose events :meth:`~dpopt.privacy.Ledger.spent_by_copies`
        refuses to compose: the runs are charged and released by then, and raising here lost the result."""
        several = repetitions > 1 and ledger.filter_order is None
        every = ledger.spent_by_copies(repetitions) if several else None
        return cls(privacy=ledger.spent(), events=ledger.events, relation=ledger.relation,
                   repetitions=repetitions, privacy_all=every, **kwargs)

    @property
    def epsilon(self) -> float:
        return self.privacy.epsilon

    @property
    def delta(self) -> float:
        return self.privacy.delta

    @property
    def diagnostics(self) -> Diagnostics:
        """``fun``, ``trajectory``, ``info`` and ``nit``: computed from the private data outside the
        guarantee, labelled :data:`NON_PRIVATE`."""
        return Diagnostics(fun=self.fun, trajectory=self.trajectory, info=dict(self.info), nit=self.nit)

    def release(self) -> dict:
        """What the guarantee covers: the solution ``x`` and the privacy record (no diagnostics)."""
        return {"x": np.asarray(self.x), "privacy": self.privacy_record()}

    def privacy_record(self) -> dict:
        """JSON-ready description of the guarantee and the event log (of one run; with R repetitions
        also ``"repetitions"`` and ``"all_repetitions"``, the (ε, δ) of all R released together)."""
        record = {
            "method": self.method,
            "epsilon": self.privacy.epsilon,
            "delta": self.privacy.delta,
            "notion": self.privacy.notion,
            "relation": self.relation,
            "guarantee": self.guarantee,
            "notes": self.notes,
            "events": [e.to_dict() for e in self.events],
        }
        if self.repetitions > 1:
            every = self.privacy_all
            record["repetitions"] = self.repetitions
            record["all_repetitions"] = None if every is None else {"epsilon": every.epsilon, "delta": every.delta}
        return record

    def privacy_json(self, **kwargs) -> str:
        return json.dumps(self.privacy_record(), **kwargs)

    @staticmethod
    def events_from_record(record: dict) -> list:
        return [ev.from_dict(item) for item in record.get("events", [])]

    def __repr__(self) -> str:
        shape = getattr(self.x, "shape", None)
        # what release() covers only: nit, like fun, can depend on the data (a solver's iterations)
        every = ""
        if self.repetitions > 1:
            total = self.privacy_all
            every = f" per run; {self.repetitions} runs" + ("" if total is None else (
                f": epsilon={format_bound(total.epsilon, 6)}, delta={format_bound(total.delta, 6)} together"))
        # (the guarantee rounded up, as the reports state it: never more privacy than the ledger holds)
        return (
            f"DPResult(method={self.method!r}, x.shape={shape}, epsilon={format_bound(self.privacy.epsilon, 6)}, "
            f"delta={format_bound(self.privacy.delta, 6)}{every}, notion={self.privacy.notion!r}, "
            f"guarantee={self.guarantee!r})"
        )
