"""``dpopt demo``: the main job, on the embedded UCI Adult data, no arguments needed.

Fits the main private methods of dpopt at several ε on Adult's official
training split (32,561 people), scores them on its test split (16,281),
compares with the non-private optimum and the majority class, prints a
compact table and writes a self-contained report.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import FIRST_PROGRESS, UserError

#: Public value ranges of Adult's numeric columns (census codebook, not the data):
#: declaring them keeps the min-max scaling out of the privacy budget.
ADULT_NUMERIC_BOUNDS = {
    "age": (17.0, 90.0),
    "education-num": (1.0, 16.0),
    "capital-gain": (0.0, 99999.0),
    "capital-loss": (0.0, 4356.0),
    "hours-per-week": (1.0, 99.0),
}
DEFAULT_EPSILONS = (0.1, 0.4, 1.6)
DEFAULT_DELTA = 1e-8
#: μ of the non-private reference: near the unregularized optimum (0.846 on Adult's test split; μ = 1e-3,
#: chen2020's value, caps it at 0.822), so that it bounds what the private fits can reach.
REFERENCE_REGULARIZATION = 1e-5


@dataclass(frozen=True)
class DemoMethod:
    name: str
    family: str
    needs_delta: bool


# The main private methods: one per family and the strongest baselines.
DEFAULT_METHODS = (
    DemoMethod("dp-nag-opt", "accelerated (kuru2022), pure ε-DP", False),
    DemoMethod("dp-blsgd", "line search (chen2020), (ε, δ) via RDP", True),
    DemoMethod("dp-sgd", "baseline, (ε, δ) via RDP", True),
    DemoMethod("objpert", "baseline, pure ε-DP", False),
    DemoMethod("outpert", "baseline, pure ε-DP", False),
)


def register(sub) -> None:
    p = sub.add_parser(
        "demo", help="the main job: private logistic regression on embedded UCI Adult", description=__doc__
    )
    p.add_argument("--out", type=Path, default=Path("dpopt-demo"), help="report folder (default ./dpopt-demo)")
    p.add_argument(
        "--epsilons",
        type=float,
        nargs="+",
        default=list(DEFAULT_EPSILONS),
        help="privacy budgets (default 0.1 0.4 1.6)",
    )
    p.add_argument("--methods", nargs="+", default=[m.name for m in DEFAULT_METHODS],
                   help=f"methods to fit (default {' '.join(m.name for m in DEFAULT_METHODS)})")
    p.add_argument("--delta", type=float, default=DEFAULT_DELTA, help="delta for (ε, δ) methods (default 1e-8)")
    p.add_argument("--seed", type=int, default=0, help="seed of the privacy noise (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=run, requires=("sklearn", "matplotlib"))  # the estimators; the report's figure


def _methods(names) -> list[DemoMethod]:
    from ..estimators import METHODS
    from ..estimators._dispatch import needs_delta

    known = {m.name: m for m in DEFAULT_METHODS}
    out = []
    for name in names:
        if name not in METHODS:
            raise UserError(f"unknown method {name!r}; choose from {', '.join(METHODS)}")
        out.append(known.get(name, DemoMethod(name, "", needs_delta(name))))
    return out


def load_demo_data():
    """Adult train/test with declared numeric bounds and rows scaled to ‖x‖₂ ≤ 1."""
    from ..datasets.adult import load_adult

    data = load_adult("all", numeric_bounds=ADULT_NUMERIC_BOUNDS, drop_columns=("fnlwgt",))
    train = data.groups == "train"
    return data, (data.X[train], data.y[train]), (data.X[~train], data.y[~train])


def fit_all(methods, epsilons, delta, seed, train, test, progress):
    """Accuracy and objective of every (method, ε) fit plus the two references."""
    from ..estimators import DPLogisticRegression, UtilityWarning
    from ..linesearch import registry
    from ..linesearch.model import LinearModel

    (Xtr, ytr), (Xte, yte) = train, test
    rows, records = [], {}
    tasks = [(m, eps) for m in methods for eps in epsilons]
    total = len(tasks) + 2
    reference = LinearModel("logistic", Xtr, ytr, l2=REFERENCE_REGULARIZATION)
    for i, name in enumerate(("non-private", "majority")):
        start = time.perf_counter()
        result = registry.fit(name, reference, epsilon=1.0, delta=delta, rng=np.random.default_rng(seed))
        acc = float(registry.accuracy(result, Xte, yte))
        rows.append(
            {
                "method": name,
                "epsilon": float("inf") if name == "non-private" else result.privacy.epsilon,
                "delta": result.privacy.delta,
                "accuracy": acc,
                "seconds": time.perf_counter() - start,
                "notion": result.privacy.notion,
            }
        )
        progress(i + 1, total, name)
    for j, (method, eps) in enumerate(tasks):
        start = time.perf_counter()
        est = DPLogisticRegression(
            epsilon=eps,
            delta=delta if method.needs_delta else 0.0,
            method=method.name,
            data_norm=1.0,
            regularization=None,  # each method's default, which follows n and ε where it was measured
            random_state=seed,
            classes=[-1.0, 1.0],  # the data set's public label set (Dataset.y is ±1)
        )
        with warnings.catch_warnings():  # a named method below the learnable threshold (the demo compares
            warnings.simplefilter("ignore", UtilityWarning)  # them on purpose; the majority row is the baseline)
            est.fit(Xtr, ytr)
        spent = est.privacy_spent_
        rows.append(
            {
                "method": method.name,
                "epsilon": eps,
                "delta": spent["delta"],
                "accuracy": float(est.score(Xte, yte)),
                "seconds": time.perf_counter() - start,
                "notion": spent["notion"],
                "epsilon_spent": spent["epsilon"],
            }
        )
        records[(method.name, eps)] = est.privacy_record()
        progress(j + 3, total, f"{method.name} ε={eps:g}")
    return rows, records


def format_table(rows, epsilons) -> str:
    """Accuracy per method (rows) and ε (columns)."""
    head = f"{'method':<12}" + "".join(f"{'ε=' + format(e, 'g'):>9}" for e in epsilons) + f"{'seconds':>10}"
    lines = [head, "-" * len(head)]
    for name in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == name]
        by_eps = {r["epsilon"]: r["accuracy"] for r in mine}
        if name in ("non-private", "majority"):
            cells = "".join(f"{mine[0]['accuracy']:>9.4f}" for _ in epsilons)
        else:
            cells = "".join(f"{by_eps.get(e, float('nan')):>9.4f}" for e in epsilons)
        lines.append(f"{name:<12}{cells}{sum(r['seconds'] for r in mine):>10.1f}")
    return "\n".join(lines)


def run(args) -> int:
    from ..progress import Progress

    if any(e <= 0 for e in args.epsilons):
        raise UserError("--epsilons must all be > 0")
    if not 0.0 < args.delta < 1.0:
        raise UserError(f"--delta must be in (0, 1), got {args.delta}")
    methods = _methods(args.methods)
    progress = Progress("demo", quiet=args.quiet, first=FIRST_PROGRESS)
    with progress.keepalive():  # a fit can take longer than a few seconds: never silent meanwhile
        progress.note(0, 0, "loading UCI Adult")  # (shown if slow)
        data, train, test = load_demo_data()
        rows, records = fit_all(methods, args.epsilons, args.delta, args.seed, train, test, progress)
        table = format_table(rows, args.epsilons)
        from .demo_report import write_demo_report

        path = write_demo_report(args.out, data, train, test, rows, records, table, args, progress.elapsed())
    print(f"Private logistic regression on UCI Adult: test accuracy ({len(test[1])} people)")
    print(table)
    print(f"total {progress.elapsed():.1f}s; report: {path}")
    return 0
