"""``dpopt fit``: a private linear classifier on your own CSV file, saved as a JSON model.

Reads FILE.csv, encodes it (numeric columns min-max scaled over their ranges,
text columns one-hot), fits DPLogisticRegression or DPHuberSVC with the given
privacy budget and saves the model with its privacy record; ``dpopt predict``
applies it to new rows.

Privacy of the preprocessing: nothing about the data's structure is read from
the data without a warning and a record in the model.

* Column types and category sets are DECLARED, never inferred: each feature
  column is numeric with a range (``--bounds age=17:90 hours=1:99`` or a JSON
  file ``{"age": [17, 90]}``; values are clipped into it), numeric without one
  (``--numeric hours``: its min and max are read from the data, which leaks
  privacy outside the guarantee — warned and recorded under ``disclosed``), or
  categorical with its categories (``--categories city=Paris,Rome,Oslo`` or a
  JSON file; another value encodes as all zeros).  An undeclared column is
  refused.
* The label set is declared with ``--classes yes,no``; a label outside it is
  refused.  Without it the labels are read from the data (warned, disclosed).
* Missing values are handled per record, without changing the number of rows:
  ``--missing impute`` (default: the middle of a numeric column's declared
  range, an all-zero block for a category) or ``--missing indicator`` (zeros
  plus one 0/1 feature per column).  ``--missing drop`` drops incomplete rows:
  the number of rows left is then read from the data — warned, disclosed, and
  the guarantee holds between data sets with the same number of complete rows.
  ``--missing error`` refuses a file with missing values.
* The row bound used for clipping is the public schema constant
  √(number of columns) unless ``--data-norm`` declares a smaller one.

Privacy warnings go to standard error and are never silenced by ``--quiet``.
The model file holds the coefficients, the schema, the privacy record and
what was disclosed; no statistic computed from the data outside the guarantee
(objective values, iteration counts, counts of rows with missing values).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

from . import FIRST_PROGRESS, UserError, check_out

#: ``--model`` choices and the estimator class each one names.
MODELS = {"logistic": "DPLogisticRegression", "huber-svc": "DPHuberSVC"}


def register(sub) -> None:
    p = sub.add_parser(
        "fit",
        help="fit a private classifier on a CSV file and save it as a JSON model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_data_arguments(p)
    p.add_argument("--epsilon", required=True, type=float, metavar="E", help="privacy budget epsilon > 0")
    p.add_argument(
        "--delta", type=float, default=0.0, metavar="D", help="privacy budget delta in [0, 1) (default 0: pure ε-DP)"
    )
    p.add_argument(
        "--method",
        default="auto",
        metavar="M",
        help="optimizer: auto (the default; the measured table: objpert or the private majority when delta = 0; "
        "dp-sgd, dp-blsgd or the private majority by a released record count when delta > 0) or one of "
        "dp-gd dp-hb dp-nag dp-nag-opt dp-masg dp-masg-opt (pure ε-DP), dp-blsgd dp-blgd dp-blsgd-ac dp-sgd "
        "dp-agd (need --delta > 0), objpert outpert majority",
    )
    p.add_argument("--model", default="logistic", metavar="KIND", help="logistic (default) or huber-svc")
    p.add_argument(
        "--regularization", type=float, default=None, metavar="LAMBDA",
        help="L2 penalty mu (default for objpert: about 0.12*d/(n*epsilon), more where its Jacobian term takes a "
        "large share of epsilon, in [1e-5, 0.1], falling faster above n*epsilon/d = 300; for outpert "
        "0.3*d/(n*epsilon), 0.1*d/(n*epsilon) with --delta > 0, in [0.001, 0.3]; 0.01*d/(N*epsilon) in "
        "[1e-5, 1e-3] for dp-sgd with N a released count, 0.001 otherwise)",
    )
    p.add_argument("--seed", type=int, help="seed of the privacy noise (default: OS entropy, for real releases)")
    p.add_argument(
        "--secure-noise", action="store_true",
        help="floating-point-safe noise: exact discrete noise on a grid from the OS CSPRNG (every method but "
        "objpert, outpert with --delta 0, and auto with --delta 0, which refuse it)",
    )
    p.add_argument(
        "--out", type=Path, metavar="MODEL.json", help="where to save the model (default ./<data name>.model.json)"
    )
    p.add_argument("--quiet", action="store_true", help="print nothing but warnings and errors")
    p.set_defaults(func=run, requires=("sklearn",))


def add_data_arguments(p) -> None:
    """The options that say how to read and encode a CSV (shared by ``dpopt fit`` and ``dpopt tune``)."""
    p.add_argument("--data", required=True, type=Path, metavar="FILE.csv", help="training data (CSV with a header)")
    p.add_argument("--target", required=True, metavar="COLUMN", help="the label column")
    p.add_argument(
        "--bounds",
        nargs="+",
        default=(),
        metavar="COL=LO:HI",
        help='declared numeric ranges, e.g. age=17:90 hours=1:99, or one JSON file {"age": [17, 90]}',
    )
    p.add_argument(
        "--categories",
        nargs="+",
        default=(),
        metavar="COL=A,B,...",
        help='declared category sets, e.g. city=Paris,Rome,Oslo, or one JSON file {"city": [...]}',
    )
    p.add_argument(
        "--numeric",
        nargs="+",
        default=(),
        metavar="COL",
        help="numeric columns without a declared range (min/max read from the data: warned and disclosed)",
    )
    p.add_argument(
        "--classes",
        metavar="A,B,...",
        help="the declared label set (a label outside it is refused; default: read from the data, disclosed)",
    )
    p.add_argument(
        "--missing",
        default="impute",
        choices=("impute", "indicator", "drop", "error"),
        help="missing values: impute a public value per record (default), add a missing-indicator feature per "
        "column, drop incomplete rows (n read from the data: disclosed), or refuse",
    )
    p.add_argument(
        "--data-norm",
        type=float,
        metavar="B",
        help="declared L2 bound on an encoded row (default: sqrt(number of feature columns), which always holds)",
    )
    add_csv_arguments(p)


def add_csv_arguments(p) -> None:
    """How to read a CSV's text (``dpopt fit``, ``tune`` and ``predict``)."""
    p.add_argument("--delimiter", default=",", help="CSV field delimiter (default ',')")
    p.add_argument(
        "--encoding", default="utf-8-sig", metavar="NAME",
        help="text encoding of the CSV, e.g. latin-1 (default UTF-8, with or without a byte-order mark)",
    )  # fmt: skip


def warn(command: str, message: str, kind: str = "warning") -> None:
    """A one-line warning on stderr, shown even with ``--quiet``: ``kind`` is "warning" for privacy
    warnings and "utility warning" for a budget too small to learn at this size."""
    print(f"dpopt {command}: {kind}: {' '.join(message.split())}", file=sys.stderr)


def read_table(path: Path, delimiter: str, encoding: str) -> tuple[dict[str, np.ndarray], int]:
    """Read a CSV into columns; user-fixable problems become :class:`UserError`."""
    import codecs

    from ..datasets.csvfile import CSVEncodingError, read_csv_columns

    try:
        codecs.lookup(encoding)
    except LookupError:
        raise UserError(f"unknown --encoding {encoding!r} (e.g. utf-8, latin-1, cp1252)") from None
    try:
        columns, first_line = read_csv_columns(path, delimiter=delimiter, encoding=encoding)
    except FileNotFoundError:
        raise UserError(f"no such file: {path}") from None
    except CSVEncodingError as exc:  # where the bad byte is, never the byte (the file's bytes are its data)
        raise UserError(
            f"{path} {exc.problem}; re-save it as UTF-8 or give --encoding (e.g. --encoding latin-1)"
        ) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(str(exc)) from None
    (name,) = columns if len(columns) == 1 else ("",)
    other = next((d for d in (";", "\t", "|") if d != delimiter and d in name), None)
    if other is not None:  # a ;-separated file read with ',' is one column named 'age;visits;outcome'
        option = "$'\\t' (a tab)" if other == "\t" else repr(other)
        raise UserError(f"{path} has one column, {name!r}: is its delimiter {other!r}? give --delimiter {option}")
    return columns, first_line


def _json_file(spec: list[str], option: str):
    """The object in a JSON file when ``spec`` is one existing ``*.json`` path, else None."""
    if len(spec) != 1 or "=" in spec[0]:
        return None
    path = Path(spec[0])
    if not path.is_file():
        raise UserError(f"{option} expects COL=... items or a JSON file; {spec[0]!r} is neither")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{option} file {path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{option} file {path} must hold a JSON object {{column: ...}}")
    return data


def parse_bounds(spec) -> dict[str, tuple[float, float]]:
    """``["age=17:90", ...]`` or ``["bounds.json"]`` → ``{"age": (17.0, 90.0)}``."""
    spec = list(spec)
    data = _json_file(spec, "--bounds")
    items = data.items() if data is not None else (_split_item(s, "--bounds", "COL=LO:HI") for s in spec)
    out = {}
    for name, value in items:
        try:
            lo, hi = value.split(":") if isinstance(value, str) else value
            lo, hi = float(lo), float(hi)
        except (TypeError, ValueError):
            raise UserError(f"--bounds for {name!r} must be LO:HI (two numbers), got {value!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise UserError(f"--bounds for {name!r} must be finite with LO < HI, got {lo:g}:{hi:g}")
        out[name] = (lo, hi)
    return out


def parse_categories(spec) -> dict[str, list[str]]:
    """``["city=Paris,Rome"]`` or ``["categories.json"]`` → ``{"city": ["Paris", "Rome"]}``."""
    spec = list(spec)
    data = _json_file(spec, "--categories")
    items = data.items() if data is not None else (_split_item(s, "--categories", "COL=A,B,...") for s in spec)
    out = {}
    for name, value in items:
        cats = [c.strip() for c in value.split(",")] if isinstance(value, str) else value
        if not isinstance(cats, list) or not cats or not all(isinstance(c, str) and c for c in cats):
            raise UserError(f"--categories for {name!r} must be a non-empty list of names, got {value!r}")
        out[name] = cats
    return out


def parse_classes(spec: str | None) -> list[str] | None:
    """``"yes,no"`` → ``["no", "yes"]`` (labels are compared as the CSV's strings)."""
    if spec is None:
        return None
    labels = [c.strip() for c in spec.split(",")]
    if len(labels) < 2 or not all(labels) or len(set(labels)) != len(labels):
        raise UserError(f"--classes must list at least 2 distinct non-empty labels A,B,..., got {spec!r}")
    return sorted(labels)


def _split_item(item: str, option: str, form: str) -> tuple[str, str]:
    name, sep, value = item.rpartition("=")
    if not sep or not name.strip():
        raise UserError(f"{option} items look like {form}, got {item!r}")
    return name.strip(), value


def _check_budget(args) -> tuple[str, float, float]:
    from .._validation import check_delta, check_nonnegative, check_positive
    from ..estimators import METHODS
    from ..estimators._dispatch import check_epsilon, check_secure_noise, needs_delta

    try:
        epsilon = check_epsilon("--epsilon", args.epsilon)
        delta = check_delta("--delta", args.delta)
        if args.regularization is not None:
            check_nonnegative("--regularization", args.regularization)
        if args.data_norm is not None:
            check_positive("--data-norm", args.data_norm)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if args.model not in MODELS:
        raise UserError(f"--model must be one of {', '.join(MODELS)}, got {args.model!r}")
    method = args.method
    if method != "auto" and method not in METHODS:
        raise UserError(f"unknown --method {method!r}; choose auto or one of {', '.join(METHODS)}")
    if method != "auto" and needs_delta(method) and delta == 0.0:
        raise UserError(f"--method {method} gives (epsilon, delta)-DP: give --delta > 0 (e.g. --delta 1e-6)")
    if args.secure_noise and method != "auto":
        try:
            check_secure_noise(method)
        except ValueError as exc:
            raise UserError(f"--secure-noise: {exc}") from None
    return method, epsilon, delta


def disclosures(schema, n_rows: int, dropped: bool) -> list[str]:
    """What the preprocessing releases outside the privacy guarantee (stored in the model's privacy record)."""
    out = []
    derived = schema.data_derived_bounds
    if derived:
        out.append(
            "numeric ranges (min, max) of " + ", ".join(derived) + " were computed from the data and are "
            "stored in the model: not covered by the guarantee (declare them with --bounds)"
        )
    if dropped:
        out.append(
            f"--missing drop: the number of complete rows ({n_rows}) was read from the data and is stored in the "
            "model; the guarantee holds between data sets with the same number of complete rows"
        )
    return out


def load_encoded(args, pending: list) -> tuple:
    """Read and encode ``--data`` as the data options say: (schema, X, y, rows read).

    Shared by ``dpopt fit`` and ``dpopt tune``.  Refuses undeclared columns and
    labels outside ``--classes``; appends its warnings (numeric ranges read from
    the data, ``--missing drop``) to ``pending`` as ``(message, "warning")``, for
    the caller to print, whatever ``--quiet``, once something is released (a
    refused run releases nothing, and prints one line).
    """
    def say(message: str) -> None:
        pending.append((message, "warning"))

    from ..datasets.preprocess import learn_schema

    bounds = parse_bounds(args.bounds)
    categories = parse_categories(args.categories)
    classes = parse_classes(args.classes)
    columns, first_line = read_table(args.data, args.delimiter, args.encoding)
    if args.target not in columns:
        raise UserError(f"target column {args.target!r} not found in {args.data}; columns are {list(columns)}")
    features = [c for c in columns if c != args.target]
    for option, given in (("--bounds", bounds), ("--categories", categories), ("--numeric", args.numeric)):
        unknown = [c for c in given if c not in features]
        if unknown:
            raise UserError(f"{option} names unknown feature column(s) {unknown}; feature columns are {features}")
    undeclared = [c for c in features if c not in bounds and c not in categories and c not in args.numeric]
    if undeclared:  # (the data layer's message names no option)
        raise UserError(f"{args.data}: column(s) {undeclared} have no declared type: give each numeric one "
                        "--bounds COL=LO:HI (or --numeric COL) and each categorical one --categories COL=A,B,...; "
                        "types and category sets are never read from private data")
    try:
        schema, kept = learn_schema(
            columns,
            args.target,
            numeric=list(args.numeric) or None,
            numeric_bounds=bounds,
            categories=categories,
            missing=args.missing,
            norm_bound=None,
            row_offset=first_line,
            infer=False,
        )
        X = schema.encode({c: columns[c][kept] for c in schema.names}, row_numbers=kept + first_line).X
    except ValueError as exc:
        raise UserError(f"{args.data}: {exc}") from None
    y = columns[args.target][kept]
    if classes is not None and not np.all(np.isin(y, classes)):
        raise UserError(f"{args.target!r} has a label outside the declared classes {classes}; declare every label")
    if classes is None and np.unique(y).size < 2:
        raise UserError(f"target column {args.target!r} has fewer than 2 classes: nothing to classify")
    if schema.data_derived_bounds:
        names = schema.data_derived_bounds
        say(
            "no --bounds declared for numeric column(s) "
            + ", ".join(names)
            + ": their min/max were computed from the data, which leaks privacy outside the guarantee; "
            "declare ranges from domain knowledge, e.g. --bounds " + " ".join(f"{c}=LO:HI" for c in names),
        )
    if args.missing == "drop":
        say(
            "--missing drop: the number of rows left depends on which records have missing values; it is "
            "disclosed in the model, outside the guarantee (--missing impute keeps every row)",
        )
    return schema, X, y, int(len(columns[args.target]))


def run(args) -> int:
    from ..estimators import DPHuberSVC, DPLogisticRegression, UtilityWarning
    from ..privacy import BudgetExceededError
    from ..progress import Progress

    method, epsilon, delta = _check_budget(args)
    out = args.out if args.out is not None else Path(f"{args.data.stem}.model.json")
    check_out("--out", out)

    pending: list[tuple[str, str]] = []
    progress = Progress("dpopt fit", quiet=args.quiet, first=FIRST_PROGRESS)
    # never silent for more than a few seconds (a large CSV, a slow method): the reading step is shown only
    # when slow, so that a refused file still prints one line, the error
    with progress.keepalive():
        progress.note(0, 1, f"reading {args.data.name}")
        schema, X, y, _ = load_encoded(args, pending)
        dropped = args.missing == "drop"

        estimator_class = DPLogisticRegression if args.model == "logistic" else DPHuberSVC
        estimator = estimator_class(
            epsilon=epsilon,
            delta=delta,
            method=method,
            data_norm=args.data_norm if args.data_norm is not None else schema.row_bound,
            regularization=args.regularization,
            random_state=args.seed,
            classes=parse_classes(args.classes),
            secure_noise=args.secure_noise,
        )
        resolved = estimator._resolved_method()
        # no row count here: under add/remove n is private (the summary prints it only where it is public)
        progress(0, 1, f"fitting {estimator_class.__name__} ({resolved}) on {X.shape[1]} features")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                estimator.fit(X, y)
            except (ValueError, BudgetExceededError, RuntimeError) as exc:
                raise UserError(" ".join(str(exc).split())) from None
        pending += [
            (
                str(w.message).replace("classes= (every", "--classes A,B,... (every"),
                "utility warning" if issubclass(w.category, UtilityWarning) else "warning",
            )
            for w in caught
        ]
        progress(1, 1, "fitted")
        progress.note(1, 1, f"saving {out}")

        record = estimator.privacy_record()
        disclosed = disclosures(schema, X.shape[0], dropped)
        data = save_fitted(args, out, estimator, schema, X, record, disclosed)
    for message, kind in pending:
        warn("fit", message, kind)
    if not args.quiet:
        _summary(estimator, record, data, [*record["disclosed"], *disclosed], out)
    return 0


def save_fitted(args, out: Path, estimator, schema, X, record: dict, disclosed: list[str]) -> dict:
    """Save a fitted private estimator as ``dpopt fit`` does (schema, feature names, data summary,
    ``record`` as its privacy record, ``disclosed``); return the data summary.  Shared by ``dpopt tune``."""
    from ..estimators.persist import save_model

    # n is public under replace-one (and disclosed under --missing drop); under add/remove it is not
    # covered by the guarantee, so it is not stored.
    n_public = record["relation"] == "replace_one" or args.missing == "drop"
    data = {
        "file": args.data.name,
        "target": args.target,
        **({"rows": int(X.shape[0])} if n_public else {}),
        "columns": len(schema.columns),
        "features": int(X.shape[1]),
        "classes": int(len(estimator.classes_)),
        "missing": args.missing,
    }
    try:
        save_model(
            out,
            estimator,
            preprocessing=schema.to_dict(),
            feature_names=schema.feature_names,
            data=data,
            disclosed=disclosed,
            privacy=record,
        )
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot write the model to {out}: {exc}") from None
    return data


def _summary(estimator, record: dict, data: dict, disclosed: list[str], out: Path) -> None:
    from ..result import format_bound

    classes = ", ".join(map(str, estimator.classes_))
    print(f"model      {type(estimator).__name__}, method {estimator.method_}, classes: {classes}")
    # the row count only where it is public (``data`` holds it then), else the released count if any
    count = getattr(estimator, "count_", None)
    if "rows" in data:
        rows = f"{data['rows']} rows"
    elif count is not None and count["source"] == "laplace":
        rows = f"about {count['count']:.1f} rows (count released with Laplace noise; n is private under add/remove)"
    else:
        rows = "rows not shown (n is private under add/remove)"
    print(
        f"data       {rows}, {data['columns']} columns -> {data['features']} features "
        f"(missing values: {data['missing']})"
    )
    print(
        f"privacy    epsilon = {format_bound(record['epsilon'], 6)}, delta = {format_bound(record['delta'], 3)} "
        f"({record['notion']} "
        f"accounting, {record['relation']} relation, {record['guarantee']} guarantee, "
        f"{len(record['events'])} events)"
    )
    for item in disclosed:
        print(f"disclosed  {item}")
    print(f"saved      {out}")
