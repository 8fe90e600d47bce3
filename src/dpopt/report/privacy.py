"""Privacy records in a report: the guarantee of each method in words, and its event log on disk."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from .markup import Section, format_value, list_html, table_html

__all__ = [
    "NOTIONS",
    "RELATIONS",
    "describe_notion",
    "describe_relation",
    "privacy_html",
    "privacy_table_html",
    "privacy_section",
    "write_privacy_records",
]

#: Ledger notion → (the guarantee's name, the accountant that produced it and how).
NOTIONS = {
    "pure": (
        "pure ε-DP",
        "PureDPAccountant: sequential composition of pure ε-DP events, with amplification by "
        "subsampling where the method samples",
    ),
    "approx": (
        "(ε, δ)-DP by basic composition",
        "ApproxDPAccountant: the ε's and δ's of pure events and of stated (ε, δ) guarantees add up "
        "(sequential composition, also under adaptive choice)",
    ),
    "rdp": (
        "(ε, δ)-DP via Rényi DP",
        "RDPAccountant: Rényi DP composed over a grid of orders (with Poisson-subsampling amplification "
        "where the method samples), converted to (ε, δ) at the stated δ",
    ),
    "zcdp": (
        "(ε, δ)-DP via zero-concentrated DP",
        "ZCDPAccountant: ρ-zCDP composed additively, converted to (ε, δ) at the stated δ",
    ),
    "pld": (
        "(ε, δ)-DP via privacy loss distributions",
        "PLDAccountant: the events' privacy loss distributions, discretized pessimistically and composed by "
        "convolution, read at the stated δ",
    ),
}
#: Ledger relation → what a neighbouring data set is.
RELATIONS = {
    "add_remove": "add/remove one record (data sets differing by one record's presence)",
    "replace_one": "replace one record (data sets of the same size differing in one record)",
}


def describe_notion(notion: str) -> str:
    """The accountant behind a ledger notion, in words."""
    if not notion or notion == "none":
        return "none (non-private reference)"
    name, how = NOTIONS.get(notion, (notion, ""))
    return f"{name} — {how}" if how else name


def describe_relation(relation: str) -> str:
    """A neighbouring relation in words (free-text relations such as a paper's adjacency pass through)."""
    return RELATIONS.get(relation, relation) if relation else "—"


def _guarantee_line(record: dict) -> str:
    if record.get("guarantee") == "none":
        return "none: a non-private reference"
    eps, delta = record.get("epsilon"), record.get("delta", 0.0)
    if record.get("notion") == "pure" or delta in (0, 0.0):
        return f"ε = {_bound(eps)}-differential privacy (pure, δ = 0)"
    return f"(ε = {_bound(eps)}, δ = {_bound(delta)})-differential privacy"


def _bound(value) -> str:
    """A stated ε or δ rounded up (:func:`dpopt.result.format_bound`); text (e.g. "the cell's ε") as is."""
    from ..result import format_bound

    if isinstance(value, bool) or not isinstance(value, float | int) or value != value:
        return format_value(value)  # text, a boolean, NaN (as —)
    return format_bound(value)


def privacy_html(record: dict) -> str:
    """One guarantee: (ε, δ), the accountant and notion, neighbouring relation, kind and caveats."""
    from ..result import GUARANTEES

    kind = record.get("guarantee", "")
    items = [
        ("Guarantee", _guarantee_line(record)),
        ("Accountant / notion", describe_notion(record.get("notion", ""))),
        ("Neighbouring relation", describe_relation(record.get("relation", ""))),
        ("Kind of guarantee", f"{kind}: {GUARANTEES[kind]}" if kind in GUARANTEES else kind),
    ]
    events = record.get("events")
    if events is not None:
        items.append(("Privacy events charged", len(events) if isinstance(events, list | tuple) else events))
    if record.get("notes"):
        items.append(("Notes", record["notes"]))
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in items)
    return f'<table class="kv">{rows}</table>'


def privacy_table_html(records: Mapping[str, dict]) -> str:
    """Every method's guarantee in one table, then each method's caveats and what the terms mean.

    ``records`` maps a method name to a privacy record (:meth:`dpopt.result.DPResult.privacy_record`
    or a dict with the same keys; ``epsilon``/``delta`` may be text such as "the cell's ε").
    """
    from ..result import GUARANTEES

    rows, notes = [], []
    for method, rec in records.items():
        events = rec.get("events")
        rows.append({
            "method": method,
            "ε": _bound(rec.get("epsilon", "")),
            "δ": _bound(rec.get("delta", 0.0)),
            "accountant": NOTIONS.get(rec.get("notion", ""), (rec.get("notion") or "none",))[0],
            "neighbouring relation": rec.get("relation", "") or "—",
            "kind": rec.get("guarantee", ""),
            "events": len(events) if isinstance(events, list | tuple) else ("" if events is None else events),
        })  # fmt: skip
        if rec.get("notes"):
            notes.append(f"{method}: {rec['notes']}")
    notions = dict.fromkeys(rec.get("notion", "") for rec in records.values())
    relations = dict.fromkeys(rec.get("relation", "") for rec in records.values() if rec.get("relation"))
    kinds = dict.fromkeys(rec.get("guarantee", "") for rec in records.values() if rec.get("guarantee"))
    legend = (
        [f"Accountant {NOTIONS[n][0]}: {NOTIONS[n][1]}." for n in notions if n in NOTIONS]
        + [f"Relation {r}: {RELATIONS[r]}." for r in relations if r in RELATIONS]
        + [f"Kind {k}: {GUARANTEES[k]}." for k in kinds if k in GUARANTEES]
    )
    body = table_html(rows)
    if notes:
        body += "<h3>Caveats recorded by the methods</h3>" + list_html(notes)
    return body + "<h3>What the columns mean</h3>" + list_html(legend)


def privacy_section(records: Mapping[str, dict], paragraphs: Iterable[str] = ()) -> Section:
    return Section("Privacy guarantee", privacy_table_html(records), paragraphs=tuple(paragraphs))


def write_privacy_records(folder: str | os.PathLike, records: Mapping[str, dict]) -> list[Path]:
    """One JSON file per method (``folder/<method>.json``): its privacy record with the event log.

    Each file is what ``dpopt account --events FILE`` reads, so a reader can re-derive ε from the events.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for method, record in records.items():
        path = folder / f"{method}.json"
        path.write_text(json.dumps(record, indent=1), encoding="utf-8")
        paths.append(path)
    return paths
