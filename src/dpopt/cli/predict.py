"""``dpopt predict``: apply a model saved by ``dpopt fit`` to the rows of a CSV file.

The rows are encoded with the model's stored preprocessing (same columns,
ranges and categories as at fit time: numbers are clipped into the stored
ranges, a category outside the declared ones encodes as all zeros, a missing
value is encoded as at fit time — by default the middle of its column's range
for a number and all zeros for a category) and one prediction is written
per input row, in input order: a CSV with the target column's name as header
(and with ``--proba`` one probability column per class, logistic models only).
Columns the model does not use (the target included) are ignored.  Prediction
spends no privacy budget: the model is already private.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import tempfile
from pathlib import Path

from . import FIRST_PROGRESS, UserError, check_out
from .fit import add_csv_arguments, read_table, warn


def register(sub) -> None:
    p = sub.add_parser(
        "predict",
        help="apply a model saved by 'dpopt fit' to a CSV file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, type=Path, metavar="MODEL.json", help="model file from 'dpopt fit'")
    p.add_argument("--data", required=True, type=Path, metavar="FILE.csv", help="rows to predict (CSV with a header)")
    p.add_argument("--out", type=Path, metavar="PRED.csv", help="where to write the predictions (default: stdout)")
    p.add_argument("--proba", action="store_true", help="also write class probabilities (logistic models)")
    add_csv_arguments(p)
    p.add_argument("--quiet", action="store_true", help="no notes on stderr")
    p.set_defaults(func=run, requires=("sklearn",))


def _load(path: Path):
    from ..datasets.preprocess import TableSchema
    from ..estimators.persist import ModelFormatError, load_model

    try:
        saved = load_model(path)
    except FileNotFoundError:
        raise UserError(f"no such model file: {path}") from None
    except ModelFormatError as exc:
        raise UserError(str(exc)) from None
    if saved.preprocessing is None:
        raise UserError(f"{path} has no preprocessing schema (saved from Python without one): use the Python API")
    try:
        schema = TableSchema.from_dict(saved.preprocessing)
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{path}: damaged preprocessing schema ({exc})") from None
    if schema.n_features != saved.estimator.n_features_in_:
        raise UserError(
            f"{path} is inconsistent: its schema makes {schema.n_features} features, the estimator expects "
            f"{saved.estimator.n_features_in_}"
        )
    return saved, schema


def _write(rows: list[list], out: Path | None) -> None:
    """Write CSV rows to ``out`` atomically (temp file + rename), or to stdout."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    if out is None:
        sys.stdout.write(buffer.getvalue())
        return
    folder = out.parent if str(out.parent) else Path(".")  # (checked by run before any work: check_out)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            fh.write(buffer.getvalue())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(args) -> int:
    from ..progress import Progress

    if args.out is not None:
        check_out("--out", args.out)
    saved, schema = _load(args.model)
    estimator = saved.estimator
    if args.proba and not hasattr(estimator, "predict_proba"):
        raise UserError(f"{type(estimator).__name__} models give no probabilities: drop --proba")
    progress = Progress("dpopt predict", quiet=args.quiet, first=FIRST_PROGRESS)
    # a large file takes seconds (1e6 rows: 11 s, silent): each step is shown only when slow
    with progress.keepalive():
        progress.note(0, 2, f"reading {args.data.name}")
        columns, first_line = read_table(args.data, args.delimiter, args.encoding)
        try:
            encoded = schema.encode(columns, row_offset=first_line, impute_missing=True)
        except ValueError as exc:
            raise UserError(f"{args.data}: {exc}") from None
        progress.note(1, 2, "predicting")
        predictions = estimator.predict(encoded.X)
        header = [schema.target or "prediction"]
        body = [[str(p)] for p in predictions.tolist()]
        if args.proba:
            proba = estimator.predict_proba(encoded.X)
            header += [f"proba_{c}" for c in estimator.classes_.tolist()]
            body = [row + [f"{p:.6g}" for p in probs] for row, probs in zip(body, proba.tolist(), strict=True)]
        progress.note(2, 2, "writing the predictions")
        _write([header, *body], args.out)
    if not args.quiet:
        if encoded.rows_imputed:
            warn(
                "predict",
                f"{encoded.rows_imputed} row(s) had a missing value: a number took the middle of its range, a "
                "category none of its columns",
            )
        if encoded.rows_unknown:
            warn(
                "predict",
                f"{encoded.rows_unknown} row(s) had a category outside the model's categories: encoded as all zeros",
            )
        if args.out is not None:
            print(f"wrote {len(body)} predictions to {args.out}")
    return 0
