"""``dpopt account``: a privacy calculator over the shared accountants.

Describe a mechanism on the command line (``--mechanism gaussian
--rate 0.01 --sigma 1.1 --steps 1000 --delta 1e-5``) or pass a saved event log
(``--events FILE.json``: a ledger, a model's privacy record, a single event or
a list of events), and it prints ε (and δ) under every accountant that applies.
The PLD accountant's ε (a proven upper bound, with its optimistic lower bound
beside it) is the tightest for (ε, δ) logs; where part of a log has no exact
PLD, the line below the table says which part the RDP accountant produced.

A file that states its guarantee (a model, a privacy record, a ledger) is
re-checked: its event log is re-accounted with the stated notion at the stated
δ, and a log that gives a larger ε than the file states is an error (the file
was edited, or its guarantee does not hold); under ``approx`` accounting
(basic composition of stated (ε, δ) guarantees, e.g. a tuning run's fits) the
log's δ sum must also be within the stated δ.  Parameters outside the range
where the accountants' arithmetic is exact (e.g. a noise multiplier of 1e-300)
are refused with one line naming the parameter and the usable range.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np

from ..privacy import ApproxDPAccountant, PLDAccountant, PureDPAccountant, RDPAccountant, ZCDPAccountant
from ..privacy import events as ev
from ..privacy.accountant import required_relation
from ..privacy.approx import holds_approx
from ..result import format_bound
from . import UserError

MECHANISMS = ("laplace", "gaussian", "vector-laplace", "exponential", "svt-laplace", "svt-gaussian")


def register(sub) -> None:
    p = sub.add_parser(
        "account",
        help="privacy calculator: epsilon/delta of a mechanism or a saved event log",
        description=__doc__,
    )
    p.add_argument("--events", type=Path, help="JSON file: ledger, privacy record, event or list of events")
    p.add_argument("--mechanism", choices=MECHANISMS, help="describe one mechanism instead of --events")
    p.add_argument(
        "--sigma", type=float, help="Gaussian noise std (or SVT threshold/query multipliers: --sigma1/--sigma2)"
    )
    p.add_argument("--scale", type=float, help="Laplace / vector-Laplace noise scale")
    p.add_argument("--sensitivity", type=float, default=1.0, help="query sensitivity (default 1)")
    p.add_argument("--epsilon", type=float, help="epsilon of an exponential mechanism")
    p.add_argument("--epsilon1", type=float, help="SVT-Laplace threshold budget")
    p.add_argument("--epsilon2", type=float, help="SVT-Laplace per-query budget")
    p.add_argument("--sigma1", type=float, help="SVT-Gaussian threshold noise multiplier")
    p.add_argument("--sigma2", type=float, help="SVT-Gaussian query noise multiplier")
    p.add_argument("--rate", type=float, default=1.0, help="sampling rate in (0, 1] (default 1: no sampling)")
    p.add_argument("--scheme", choices=(ev.POISSON, ev.WITHOUT_REPLACEMENT), default=ev.POISSON,
                   help="sampling scheme (default %(default)s)")
    p.add_argument("--steps", type=int, default=1, help="number of compositions (default 1)")
    p.add_argument("--delta", type=float, default=1e-5,
                   help="delta for the (epsilon, delta) conversion (default %(default)s)")
    p.add_argument("--target-epsilon", type=float, help="also print the delta at this epsilon")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=run)


def _mechanism_event(args) -> ev.Event:
    def need(name):
        value = getattr(args, name)
        if value is None:
            raise UserError(f"--mechanism {args.mechanism} needs --{name.replace('_', '-')}")
        return value

    m = args.mechanism
    if m == "laplace":
        base = ev.Laplace(need("scale"), args.sensitivity)
    elif m == "vector-laplace":
        base = ev.VectorLaplace(need("scale"), args.sensitivity)
    elif m == "gaussian":
        base = ev.Gaussian(need("sigma"), args.sensitivity)
    elif m == "exponential":
        base = ev.Exponential(need("epsilon"))
    elif m == "svt-laplace":
        base = ev.AboveThreshold.laplace(need("epsilon1"), need("epsilon2"), args.sensitivity)
    else:
        base = ev.AboveThreshold.gaussian(need("sigma1"), need("sigma2"), args.sensitivity)
    step = base if args.rate == 1.0 else ev.Subsampled(base, args.rate, args.scheme)
    return step if args.steps == 1 else ev.SelfComposed(step, args.steps)


#: Usable range of a mechanism's ε-like ratio (sensitivity/scale, ε) and of a Gaussian noise multiplier
#: (σ/sensitivity): outside it some accountant's arithmetic over- or underflows.
USABLE = (1e-8, 1e8)


def _check_ranges(args) -> None:
    """One-line errors for values outside :data:`USABLE` (or not finite and positive)."""
    lo, hi = USABLE

    def within(label: str, value: float) -> None:
        if not (math.isfinite(value) and lo <= value <= hi):
            raise UserError(f"{label} must be in [{lo:g}, {hi:g}] (the usable range), got {value:g}")

    for name in ("sigma", "scale", "sensitivity", "epsilon", "epsilon1", "epsilon2", "sigma1", "sigma2"):
        value = getattr(args, name, None)
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UserError(f"--{name} must be a finite number > 0, got {value:g}")
    for name in ("epsilon", "epsilon1", "epsilon2", "target_epsilon"):
        if getattr(args, name, None) is not None:
            within(f"--{name.replace('_', '-')}", getattr(args, name))
    if args.mechanism in ("laplace", "vector-laplace") and args.scale is not None:
        within("--sensitivity/--scale (the mechanism's epsilon)", args.sensitivity / args.scale)
    if args.mechanism == "gaussian" and args.sigma is not None:
        within("--sigma/--sensitivity (the noise multiplier)", args.sigma / args.sensitivity)
    for name in ("sigma1", "sigma2"):
        if args.mechanism == "svt-gaussian" and getattr(args, name) is not None:
            within(f"--{name}", getattr(args, name))


def _read(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise UserError(f"no such file: {path}") from exc
    except IsADirectoryError as exc:
        raise UserError(f"--events expects a JSON file, got the directory {str(path)!r}") from exc
    except json.JSONDecodeError as exc:
        raise UserError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"{path} is not UTF-8 text, not a JSON event log ({exc.reason} at byte {exc.start})") from exc


#: The accountant options a ledger file saves, by notion (:meth:`dpopt.privacy.Ledger.to_dict`).
_OPTIONS = {"rdp": ("orders",), "pld": ("discretization", "tail_mass")}


def stated_guarantee(data) -> dict | None:
    """``{"epsilon", "delta", "notion"}`` a model, privacy record or ledger file states, else None; with its
    ``"relation"``, an RDP ledger's ``"orders"`` and a PLD ledger's ``"discretization"`` and ``"tail_mass"``
    where the file names them."""
    if isinstance(data, dict) and isinstance(data.get("privacy"), dict):
        data = data["privacy"]  # a saved model file
    relation = data.get("relation") if isinstance(data, dict) else None
    # an RDP ledger's orders, a PLD ledger's grid: its ε is re-derived on them (others can state a smaller ε)
    grid = {k: data[k] for keys in _OPTIONS.values() for k in keys if k in data} if isinstance(data, dict) else {}
    if isinstance(data, dict) and isinstance(data.get("spent"), dict):
        data = data["spent"]  # a ledger (its relation and grid are beside its spent guarantee)
    if isinstance(data, dict) and {"epsilon", "delta", "notion"} <= set(data):
        stated = {k: data[k] for k in ("epsilon", "delta", "notion")}
        return {**stated, **({"relation": relation} if relation is not None else {}), **grid}
    return None


def check_stated(event: ev.Event, stated: dict, path) -> str:
    """Re-account ``event`` with the stated notion at the stated δ; refuse a log that gives more ε."""
    notion, epsilon, delta = stated["notion"], stated["epsilon"], stated["delta"]
    accountants = {"pure": PureDPAccountant, "approx": ApproxDPAccountant, "rdp": RDPAccountant,
                   "zcdp": ZCDPAccountant, "pld": PLDAccountant}
    if notion not in accountants or not all(isinstance(x, int | float) and not isinstance(x, bool)
                                            and not math.isnan(x) for x in (epsilon, delta)):
        raise UserError(f"{path} states a guarantee this dpopt cannot check: {stated}")
    relation = stated.get("relation")
    try:
        needed = required_relation(event)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    if relation is not None and needed is not None and relation != needed:
        raise UserError(
            f"{path} states its guarantee under the {relation!r} relation, but its event log's subsampling is "
            f"amplified under {str(needed)!r} only: the stated guarantee does not hold (edited or wrong file)"
        )
    try:
        grid = {k: stated[k] for k in _OPTIONS.get(notion, ()) if k in stated}
        acc = _quietly(lambda: accountants[notion](**grid).compose(event))
        derived = _quietly(lambda: float(acc.get_epsilon() if notion == "pure" else acc.get_epsilon(delta)))
    except (ValueError, TypeError, ArithmeticError, MemoryError) as exc:
        raise UserError(f"{path}: its event log cannot be accounted as {notion} ({exc})") from None
    if notion == "approx" and acc.composed_delta > delta:  # its δ's add up: the stated δ must cover them
        raise UserError(
            f"{path} states delta={delta:.10g} but its event log gives delta={acc.composed_delta:.10g} under approx "
            "accounting: the stated guarantee does not hold (edited or wrong file)"
        )
    if derived > epsilon * (1.0 if notion == "approx" else 1.0 + 1e-9):  # approx: exact sums, rounded up alike
        raise UserError(
            f"{path} states epsilon={epsilon:.10g} but its event log gives epsilon={derived:.10g} under {notion} "
            f"accounting at delta={delta:g}: the stated guarantee does not hold (edited or wrong file)"
        )
    return f"stated     epsilon = {epsilon:.6g} ({notion}, delta = {delta:g}): the event log gives {derived:.6g}"


def load_events(path: Path) -> ev.Event:
    """Read a ledger, a privacy record, one event or a list of events as one composed event."""
    data = _read(path)
    if isinstance(data, dict) and "privacy" in data and isinstance(data["privacy"], dict):
        data = data["privacy"]  # a saved model file
    if isinstance(data, dict) and "events" in data:
        data = data["events"]
    items = data if isinstance(data, list) else [data]
    if not items:
        raise UserError(f"{path} holds no events")
    try:
        events = [ev.from_dict(item) for item in items]
    except (ValueError, TypeError, KeyError) as exc:
        raise UserError(f"{path}: not a privacy event log ({exc})") from exc
    return events[0] if len(events) == 1 else ev.Composed(events)


def _quietly(compute):
    """``compute()`` with floating-point warnings silenced: a NaN or an over-range input is reported by the
    caller as "outside this accountant's numeric range" instead of a traceback or a warning on stderr."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return compute()


def evaluate(event: ev.Event, delta: float, target_epsilon: float | None = None) -> list[dict]:
    """ε (and δ at ``target_epsilon``) of ``event`` under every accountant that applies."""
    rows = []
    accountants = (("pure", PureDPAccountant), ("approx", ApproxDPAccountant), ("rdp", RDPAccountant),
                   ("zcdp", ZCDPAccountant), ("pld", PLDAccountant))
    if not holds_approx(event):  # its row would repeat the pure one
        accountants = tuple(a for a in accountants if a[0] != "approx")
    for name, accountant in accountants:

        def compute(name=name, accountant=accountant):
            acc = accountant().compose(event)
            if name == "approx":  # basic composition: its own (ε, δ), the sums, whatever --delta
                epsilon, at = acc.composed_epsilon, acc.composed_delta
                if not at < 1.0:
                    raise ValueError(f"the deltas add up to {at:g} >= 1: basic composition states no guarantee")
            else:
                epsilon, at = acc.get_epsilon() if name == "pure" else acc.get_epsilon(delta), delta
            row = {
                "accountant": name,
                "applies": True,
                "epsilon": float(epsilon),
                "delta": 0.0 if name == "pure" else at,
            }
            if target_epsilon is not None:
                row["delta_at_target"] = float(acc.get_delta(target_epsilon))
            if name == "pld":
                row["epsilon_optimistic"] = float(acc.get_epsilon_bounds(delta)[0])
                row["produced_by"] = acc.describe()
            return row

        try:
            row = _quietly(compute)
        except (ValueError, TypeError) as exc:
            row = {"accountant": name, "applies": False, "reason": str(exc)}
        except (ArithmeticError, MemoryError):
            row = None
        if row is None or any(isinstance(v, float) and math.isnan(v) for v in row.values()):
            row = {"accountant": name, "applies": False, "reason": "outside this accountant's numeric range"}
        rows.append(row)
    return rows


def run(args) -> int:
    if (args.events is None) == (args.mechanism is None):
        raise UserError("give exactly one of --events FILE and --mechanism NAME")
    if not 0.0 < args.delta < 1.0:
        raise UserError(f"--delta must be in (0, 1), got {args.delta}")
    _check_ranges(args)
    try:
        stated = stated_guarantee(_read(args.events)) if args.events else None
        event = load_events(args.events) if args.events else _mechanism_event(args)
        verdict = check_stated(event, stated, args.events) if stated else None
        rows = evaluate(event, args.delta, args.target_epsilon)
    except (ValueError, TypeError) as exc:
        raise UserError(str(exc)) from exc
    except RecursionError:  # JSON or events nested hundreds deep: an edited or generated file, not a run's log
        raise UserError(f"{args.events} nests its JSON or its events too deeply to be read or accounted") from None
    if args.json:
        print(json.dumps({"event": event.to_dict(), "results": rows, "stated": stated}, indent=2))
        return 0
    if verdict:
        print(verdict)
    print(f"{'accountant':<11} {'epsilon':>12} {'delta':>10}" + ("  delta@target" if args.target_epsilon else ""))
    for row in rows:
        if not row["applies"]:
            print(f"{row['accountant']:<11} {'n/a':>12}  ({row['reason']})")
            continue
        eps = row["epsilon"]
        line = f"{row['accountant']:<11} {format_bound(eps, 6):>12} {format_bound(row['delta'], 3):>10}"
        if args.target_epsilon is not None:
            line += f"  {format_bound(row['delta_at_target'], 3)}"
        print(line if math.isfinite(eps) else line.replace("inf", "unbounded"))
    pld = next((row for row in rows if row["accountant"] == "pld" and row["applies"]), None)
    if pld is not None:
        lower = pld["epsilon_optimistic"]
        print(f"pld: {pld['produced_by']}" + (f"; optimistic epsilon {lower:.6g}" if lower > 0 else ""))
    return 0
