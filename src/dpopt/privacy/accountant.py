"""The accountant interface, the registry of accountants by name, and neighbouring relations.

An *accountant* interprets privacy events (DESIGN.md invariant 3): it composes
them and converts the composition into an (ε, δ) guarantee.  Every accountant
of dpopt — :class:`~dpopt.privacy.pure.PureDPAccountant`,
:class:`~dpopt.privacy.approx.ApproxDPAccountant` (basic composition of
stated (ε, δ) guarantees), :class:`~dpopt.privacy.rdp.RDPAccountant`,
:class:`~dpopt.privacy.zcdp.ZCDPAccountant` and the PLD accountant — has the
:class:`Accountant` interface, so a :class:`~dpopt.privacy.Ledger` works with
any of them and picks its fast budget check by the accountant's *type*.

A name (``"pure"``, ``"rdp"``, ``"zcdp"``, …) maps to an accountant class
through :func:`register_accountant` / :func:`make_accountant`; a module that
adds an accountant registers it once at import.

The neighbouring relation (DESIGN.md invariant 4) is a :class:`Relation`:
:data:`Relation.ADD_REMOVE`, :data:`Relation.REPLACE_ONE`, or a paper's own
adjacency in words (:meth:`Relation.paper`).  Subsampling amplification
theorems hold for one relation each (:func:`required_relation`), and a ledger
refuses an event whose sampling scheme does not match its relation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ClassVar, Protocol, runtime_checkable

from . import events as ev

__all__ = [
    "Accountant",
    "AccountantBase",
    "register_accountant",
    "make_accountant",
    "accountant_names",
    "Relation",
    "required_relation",
]


@runtime_checkable
class Accountant(Protocol):
    """What every accountant offers (the dp-accounting style).

    * ``notion`` — the accountant's registered name (``"pure"``, ``"rdp"``, …);
    * ``compose(event)`` — add one event, return ``self`` so calls chain;
    * ``get_epsilon(delta=...)`` — smallest ε with everything composed (ε, δ)-DP;
    * ``get_delta(epsilon=...)`` — smallest δ with everything composed (ε, δ)-DP;
    * ``supports(event)`` — whether ``compose(event)`` has a guarantee to add
      (``False`` where it would raise ``ValueError``/``TypeError``);
    * ``describe()`` — one line saying what is composed and how it is converted;
    * ``copy()`` — an independent accountant in the same state.
    """

    notion: str

    def compose(self, event: ev.Event) -> Accountant: ...

    def get_epsilon(self, delta: float) -> float: ...

    def get_delta(self, epsilon: float) -> float: ...

    def supports(self, event: ev.Event) -> bool: ...

    def describe(self) -> str: ...

    def copy(self) -> Accountant: ...


class AccountantBase:
    """Shared defaults for dpopt's accountants.

    :meth:`epsilon_after` is what a :class:`~dpopt.privacy.Ledger` asks before
    every charge; the default copies the accountant and composes, subclasses
    override it with a check that neither copies nor allocates much.
    """

    notion: ClassVar[str] = ""

    def supports(self, event: ev.Event) -> bool:
        """Whether :meth:`compose` accepts ``event`` (it has a guarantee under this notion)."""
        if not isinstance(event, ev.Event):
            return False
        try:
            self._guarantee(event)
        except (ValueError, TypeError):
            return False
        return True

    def _guarantee(self, event: ev.Event):
        """This notion's guarantee of ``event``; raises ValueError or TypeError where it has none.

        The default composes on a copy; subclasses name the cheaper computation they compose with.
        """
        return self.copy().compose(event)

    def epsilon_after(self, event: ev.Event, delta: float) -> float:
        """The ε :meth:`get_epsilon` would report after composing ``event`` (composes nothing)."""
        return float(self.copy().compose(event).get_epsilon(delta))

    def fits(self, event: ev.Event, epsilon: float, delta: float) -> bool:
        """Whether :meth:`get_epsilon` after composing ``event`` would be ≤ ``epsilon`` (a ledger's check)."""
        return self.epsilon_after(event, delta) <= epsilon


# --------------------------------------------------------------------------- registry

_FACTORIES: dict[str, Callable[..., Accountant]] = {}


def register_accountant(name: str, factory: Callable[..., Accountant]) -> None:
    """Make ``make_accountant(name, **options)`` call ``factory(**options)``.

    Registering a name twice with a different factory is an error (two
    modules would disagree about what the name means).
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    if _FACTORIES.get(name, factory) is not factory:
        raise ValueError(f"an accountant named {name!r} is already registered")
    _FACTORIES[name] = factory


def accountant_names() -> tuple[str, ...]:
    """The registered accountant names, sorted."""
    return tuple(sorted(_FACTORIES))


def make_accountant(spec, **options) -> Accountant:
    """An accountant from a registered name (with ``options`` for its constructor) or an instance.

    An instance is returned as is (``options`` must be empty); anything else
    that is not a registered name raises ``ValueError``/``TypeError``.
    """
    if isinstance(spec, str):
        if spec not in _FACTORIES:
            raise ValueError(f"accountant must be one of {list(accountant_names())}, got {spec!r}")
        return _FACTORIES[spec](**options)
    if isinstance(spec, Accountant):
        if options:
            raise TypeError(
                f"options {sorted(options)} apply to an accountant given by name, not to an instance"
            )
        return spec
    raise TypeError(
        f"accountant must be a name in {list(accountant_names())} or an Accountant instance, "
        f"got {type(spec).__name__}"
    )


# --------------------------------------------------------------------------- relations


class Relation(str):
    """A neighbouring relation: which data sets count as neighbours (DESIGN.md invariant 4).

    A ``str`` (so it compares equal to, and serializes as, its name):
    ``Relation.ADD_REMOVE`` (``"add_remove"``: one record added or removed),
    ``Relation.REPLACE_ONE`` (``"replace_one"``: equal size, one record
    replaced), or any other non-empty text, a paper's own adjacency such as
    ``Relation.paper("||b - b'||_inf <= b_max")``.
    """

    ADD_REMOVE: ClassVar[Relation]
    REPLACE_ONE: ClassVar[Relation]
    #: The relations with a fixed meaning, and that meaning.
    STANDARD: ClassVar[dict[str, str]] = {
        "add_remove": "datasets differ by adding or removing one record",
        "replace_one": "datasets of equal size differ in one record",
    }

    def __new__(cls, value) -> Relation:
        if isinstance(value, Relation):
            return value
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"relation must be a non-empty string, got {value!r}")
        return super().__new__(cls, value)

    @classmethod
    def paper(cls, text: str) -> Relation:
        """A paper's own adjacency, in words (must not reuse a standard name)."""
        if isinstance(text, str) and text in cls.STANDARD:
            raise ValueError(f"relation text {text!r} is a standard relation; use Relation({text!r})")
        return cls(text)

    @property
    def kind(self) -> str:
        """``"add_remove"``, ``"replace_one"`` or ``"paper"``."""
        return str(self) if str(self) in self.STANDARD else "paper"

    @property
    def description(self) -> str:
        return self.STANDARD.get(str(self), str(self))


Relation.ADD_REMOVE = Relation("add_remove")
Relation.REPLACE_ONE = Relation("replace_one")

#: The relation under which each subsampling scheme's amplification is proven.
#: Poisson sampling: add/remove-one (Li, Qardaji & Su 2012; Zhu & Wang 2019,
#: chen2020 Lemma 4; Mironov, Talwar & Zhang 2019).  Fixed-size sampling without
#: replacement: replace-one (Balle, Barthe & Gaboardi 2018, Table 1;
#: kuru2022 Thm A.3).
_SCHEME_RELATION = {ev.POISSON: Relation.ADD_REMOVE, ev.WITHOUT_REPLACEMENT: Relation.REPLACE_ONE}


@functools.lru_cache(maxsize=4096)
def required_relation(event: ev.Event) -> Relation | None:
    """The one relation ``event``'s amplification holds under, or ``None`` if it needs none.

    Raises ``ValueError`` if ``event`` mixes subsampling schemes that need
    different relations (no single relation covers it).  A ``Subsampled``
    event with ``rate == 1`` is no subsampling and needs no relation.
    Cached per event (events are immutable values).
    """
    found: set[Relation] = set()
    stack = [event]
    while stack:
        e = stack.pop()
        if isinstance(e, ev.Subsampled):
            if e.rate < 1.0:
                found.add(_SCHEME_RELATION[e.scheme])
            stack.append(e.event)
        elif isinstance(e, ev.SelfComposed | ev.Activated):  # an activation hides no sampling scheme
            stack.append(e.event)
        elif isinstance(e, ev.Composed):
            stack.extend(e.events)
    if len(found) > 1:
        raise ValueError(
            "the event mixes Poisson (add/remove) and fixed-size (replace-one) subsampling; "
            "no single neighbouring relation covers both"
        )
    return found.pop() if found else None
