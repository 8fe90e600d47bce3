"""``dpopt audit``: statistical evidence that a mechanism or algorithm keeps its privacy claim.

Runs the named target (see ``dpopt audit --list``) many times on two worst-case
neighbouring inputs D and D′, chooses an output event on one half of the runs
and bounds ε from below on the other half with Clopper–Pearson intervals
(:mod:`dpopt.privacy.audit`).  The claim it checks is what the target's ledger
spent.  Prints one table row per target; ``--json FILE`` (``-`` for stdout)
writes the full results.  Exit code 0 when every lower bound is at most the
claimed ε, 1 when some audit found a violation, 2 for a usage error.
``--confidence`` is each target's: a target that keeps its claim fails with
probability at most 1 − confidence, so k such targets audited together (e.g.
``all``) fail one with probability up to k·(1 − confidence); audit one target
at a higher confidence to confirm a failure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .._validation import EXTRAS, install_hint
from . import FIRST_PROGRESS, UserError

if TYPE_CHECKING:
    from ..privacy.audit import AuditResult

ALL = "all"


def register(sub) -> None:
    p = sub.add_parser(
        "audit",
        help="audit a mechanism or algorithm: a lower confidence bound on its epsilon",
        description=__doc__,
    )
    p.add_argument(
        "targets", nargs="*", metavar="TARGET", help=f"registered audit target(s), or '{ALL}'"
    )
    p.add_argument("--list", action="store_true", help="list the audit targets and exit")
    p.add_argument(
        "--samples", type=int, help="runs on each of D and D' (default: the target's own)"
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence level of each target's lower bound, in (0, 1) (default 0.95); "
        "k targets audited together fail one falsely with probability up to k(1 - confidence)",
    )
    p.add_argument("--seed", type=int, help="seed (default: drawn from OS entropy and reported)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON ('-' for stdout)")
    p.set_defaults(func=run)


def _list() -> int:
    from ..experiments import audits

    names = audits.available()
    width = max(len(n) for n in names)
    for name in names:
        print(f"{name:<{width}}  {audits.describe(name)}")
    return 0


def _targets(requested: list[str]) -> list[str]:
    if not requested:
        raise UserError("name a target (see 'dpopt audit --list') or use 'all'")
    from ..experiments import audits

    known = audits.available()
    names = known if ALL in requested else list(dict.fromkeys(requested))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UserError(f"unknown audit target(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def _check(args) -> None:
    from ..privacy.audit import check_samples

    if args.samples is not None:
        try:
            check_samples("--samples", args.samples)  # before any run: more than fit in memory is refused
        except ValueError as exc:
            raise UserError(str(exc)) from None
    if not 0.0 < args.confidence < 1.0:
        raise UserError(f"--confidence must be in (0, 1), got {args.confidence}")
    if args.seed is not None and args.seed < 0:
        raise UserError(f"--seed must be >= 0, got {args.seed}")


COLUMNS = (
    "target",
    "notion",
    "claimed eps",
    "delta",
    "eps lower bound",
    "confidence",
    "samples",
    "seed",
    "event",
    "verdict",
)


def _row(r: AuditResult) -> tuple[str, ...]:
    return (
        r.target,
        r.notion,
        f"{r.epsilon:.4g}",
        f"{r.delta:g}",
        f"{r.epsilon_lower_bound:.4g}",
        f"{r.confidence:g}",
        f"{r.samples}",
        f"{r.seed}",
        f"{r.event.description} ({r.event.direction})",
        "pass" if r.passes else "FAIL",
    )


def format_table(results: list[AuditResult]) -> str:
    """The results as an aligned text table, one row per audit."""
    rows = [COLUMNS] + [_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _write_json(results: list[AuditResult], destination: str) -> None:
    text = json.dumps({"audits": [r.to_dict() for r in results]}, indent=2)
    if destination == "-":
        print(text)
        return
    try:
        Path(destination).write_text(text + "\n")
    except OSError as exc:
        raise UserError(f"cannot write {destination}: {exc.strerror}") from exc


def run(args) -> int:
    if args.list:
        return _list()
    _check(args)
    names = _targets(args.targets)
    from ..experiments import audits
    from ..progress import Progress

    results = []
    progress = Progress("dpopt audit", first=FIRST_PROGRESS)
    # a target can take longer than a few seconds (dp-blsgd: 15 s), 'all' minutes: never silent meanwhile;
    # each step is shown only when slow, so a quick audit prints its table alone
    skipped = []
    with progress.keepalive():
        for i, name in enumerate(names):
            progress.note(i, len(names), f"auditing {name}")
            try:
                results.append(audits.run(name, samples=args.samples, confidence=args.confidence, seed=args.seed))
            except ModuleNotFoundError as exc:  # 'all' runs what this installation can; a named target must run
                module = (exc.name or "").split(".")[0]
                if ALL not in args.targets or module not in EXTRAS:
                    raise
                skipped.append(f"dpopt audit: note: skipped {name}, which {install_hint([module])}")
    for line in skipped:
        print(line, file=sys.stderr)
    out = sys.stderr if args.json == "-" else sys.stdout
    print(format_table(results), file=out)
    if args.json:
        _write_json(results, args.json)
    return 0 if all(r.passes for r in results) else 1
