"""The preprocessing pipeline of chen2020 §5.2, shared by every tabular loader.

1. Missing values: rows with a missing entry are dropped and counted
   (``missing="drop"``), or a missing categorical entry becomes its own category
   (``missing="category"``; rows with a missing *numeric* entry are still
   dropped), or the loader refuses (``missing="error"``).
2. Categorical columns are one-hot encoded (feature ``"column=value"``, categories
   sorted).  Declared ``categories`` fix the encoding in advance; a value outside
   them encodes as all zeros.
3. Numeric columns are min-max scaled to ``[0, 1]``.  With declared bounds
   ``(lo, hi)`` values are clipped into ``[lo, hi]`` first.  Without them the
   data's own min and max are used — as the papers do — and the column is listed
   in ``Dataset.data_derived_bounds``: that scaling depends on every record and
   is outside any privacy guarantee.
4. Rows are scaled to a declared norm bound ``B`` (default L2, ``B = 1``):
   after steps 2–3 every row has ``‖x‖₂ ≤ √(#numeric + #categorical)``
   (each one-hot group contributes exactly one 1), so dividing *every* row by
   that schema constant over ``B`` guarantees the bound without looking at the
   data.  The bound is then enforced by projection
   (:func:`dpopt.objectives.bounds.project_rows`), whose count of changed rows
   is reported (0 unless declared bounds were violated).
5. Labels become ±1 (:func:`to_pm1`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .._validation import check_choice, check_positive
from ..objectives import bounds

__all__ = ["MISSING_TOKENS", "to_pm1", "encode_table", "parse_numeric"]

#: Strings treated as a missing value (after stripping whitespace).
MISSING_TOKENS = ("", "?", "NA", "N/A", "NaN", "nan", "null", "None")


def to_pm1(labels, positive=None) -> tuple[np.ndarray, tuple]:
    """Map two distinct label values to −1/+1; return ``(y, (negative, positive))``.

    ``positive`` names the value mapped to +1.  By default: the value ``1`` (or
    ``"1"``, ``"positive"``) when present, otherwise the last value in sorted order.
    More than two classes need ``positive`` (one-vs-rest).
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {labels.shape}")
    classes = np.unique(labels)
    if positive is None:
        if len(classes) != 2:
            shown = classes[:20].tolist()
            raise ValueError(
                f"the target has {len(classes)} classes {shown}; binary classification needs two, "
                "or name the positive class (positive_class=...) for one-vs-rest"
            )
        for candidate in (1, "1", "1.0", "positive", True):
            if any(c == candidate for c in classes.tolist()):
                positive = next(c for c in classes.tolist() if c == candidate)
                break
        else:
            positive = classes[-1].item() if hasattr(classes[-1], "item") else classes[-1]
    if not np.any(labels == positive):
        raise ValueError(f"positive class {positive!r} does not occur; classes are {classes[:20].tolist()}")
    y = np.where(labels == positive, 1.0, -1.0)
    if not np.any(y == -1.0):
        raise ValueError(f"every label equals the positive class {positive!r}: one class only")
    rest = [c for c in classes.tolist() if c != positive]
    negative = rest[0] if len(rest) == 1 else f"not {positive}"
    return y, (negative, positive)


def parse_numeric(name: str, values: np.ndarray, rows=None) -> np.ndarray:
    """Parse strings to float, naming the column, row and value that fail; refuse inf.

    ``rows`` gives the row number to report for each value (default 0, 1, ...).
    """
    try:
        out = values.astype(float)
    except ValueError:
        for i, v in enumerate(values.tolist()):
            if not _parses(v):
                where = i if rows is None else int(rows[i])
                raise ValueError(
                    f"column {name!r} is numeric but row {where} has the non-numeric value {v!r} "
                    "(declare the column categorical, or fix the value)"
                ) from None
        raise  # pragma: no cover - astype failed although every value parses
    if not np.all(np.isfinite(out)):
        i = int(np.flatnonzero(~np.isfinite(out))[0])
        where = i if rows is None else int(rows[i])
        raise ValueError(f"column {name!r} has the non-finite value {str(values[i])!r} in row {where}")
    return out


def _is_numeric(values: np.ndarray) -> bool:
    try:
        values.astype(float)
    except ValueError:
        return False
    return True


def encode_table(
    columns: Mapping[str, np.ndarray],
    target: str,
    *,
    categorical: Sequence[str] | None = None,
    numeric: Sequence[str] | None = None,
    numeric_bounds: Mapping[str, tuple[float, float]] | None = None,
    categories: Mapping[str, Sequence[str]] | None = None,
    positive_class=None,
    missing: str = "drop",
    missing_tokens: Sequence[str] = MISSING_TOKENS,
    norm_bound: float | None = 1.0,
    norm: str = "l2",
    row_offset: int = 0,
) -> dict:
    """Encode string columns into ``X``, ``y`` and metadata (module docstring, steps 1–5).

    ``columns`` maps column names to arrays of stripped strings (one per row);
    ``target`` names the label column.  Column types are inferred (numeric when
    every non-missing value parses as a float) unless given by ``categorical`` /
    ``numeric``.  ``row_offset`` is added to row numbers in error messages.
    Returns a dict with ``X, y, feature_names, classes, rows_dropped,
    rows_changed, data_derived_bounds, notes`` (the keyword arguments of
    :class:`~dpopt.datasets.Dataset` besides name and source).
    """
    check_choice("missing", missing, ("drop", "category", "error"))
    check_choice("norm", norm, ("l1", "l2"))
    if norm_bound is not None:
        norm_bound = check_positive("norm_bound", norm_bound)
    if target not in columns:
        raise ValueError(f"target column {target!r} not found; columns are {list(columns)}")
    names = [c for c in columns if c != target]
    if not names:
        raise ValueError("the table has no feature columns besides the target")
    numeric_bounds = dict(numeric_bounds or {})
    categories = dict(categories or {})
    for label, given in (("categorical", categorical), ("numeric", numeric)):
        unknown = sorted(set(given or ()) - set(names))
        if unknown:
            raise ValueError(f"{label} names unknown column(s) {unknown}; columns are {names}")
    unknown = sorted(set(numeric_bounds) - set(names))
    if unknown:
        raise ValueError(f"numeric_bounds names unknown column(s) {unknown}; columns are {names}")

    n_rows = len(columns[target])
    tokens = set(missing_tokens)
    is_missing = {c: np.isin(columns[c], list(tokens)) for c in [*names, target]}

    # -- column types -------------------------------------------------------------------
    kinds: dict[str, str] = {}
    for c in names:
        if categorical is not None and c in categorical:
            kinds[c] = "categorical"
        elif (numeric is not None and c in numeric) or c in numeric_bounds:
            kinds[c] = "numeric"
        else:
            present = columns[c][~is_missing[c]]
            kinds[c] = "numeric" if present.size and _is_numeric(present) else "categorical"

    # -- missing values ------------------------------------------------------------------
    if missing == "error":
        bad = {c: int(m.sum()) for c, m in is_missing.items() if m.any()}
        if bad:
            raise ValueError(f"missing values (counts per column): {bad}; use missing='drop' or 'category'")
    drop = is_missing[target].copy()
    for c in names:
        if missing == "drop" or kinds[c] == "numeric":
            drop |= is_missing[c]
    keep = ~drop
    rows_dropped = int(drop.sum())
    if not keep.any():
        raise ValueError("no rows left after dropping rows with missing values")
    kept_rows = np.flatnonzero(keep)

    # -- features -------------------------------------------------------------------------
    blocks, feature_names, derived = [], [], []
    n_numeric = n_categorical = 0
    for c in names:
        values = columns[c][keep]
        if kinds[c] == "numeric":
            n_numeric += 1
            v = parse_numeric(c, values, rows=kept_rows + row_offset)
            if c in numeric_bounds:
                lo, hi = (float(b) for b in numeric_bounds[c])
                if not (np.isfinite(lo) and np.isfinite(hi) and lo <= hi):
                    raise ValueError(f"numeric_bounds[{c!r}] must be finite (lo, hi) with lo <= hi")
                v = np.clip(v, lo, hi)
            else:
                lo, hi = float(v.min()), float(v.max())
                derived.append(c)
            scaled = (v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
            blocks.append(scaled[:, None])
            feature_names.append(c)
        else:
            n_categorical += 1
            values = np.where(is_missing[c][keep], "?", values) if missing == "category" else values
            blocks.append(_one_hot(values, categories.get(c)))
            cats = categories[c] if c in categories else np.unique(values).tolist()
            feature_names.extend(f"{c}={k}" for k in cats)
    X = np.hstack(blocks)

    # -- labels ---------------------------------------------------------------------------------
    y, classes = to_pm1(columns[target][keep], positive_class)

    # -- row bound --------------------------------------------------------------------------------
    rows_changed = 0
    notes = []
    if norm_bound is not None:
        k = n_numeric + n_categorical
        schema = float(np.sqrt(k)) if norm == "l2" else float(k)
        X = X * (norm_bound / schema)
        X, rows_changed = bounds.project_rows(X, norm_bound, norm)
        notes.append(
            f"rows scaled by {norm_bound:g}/{schema:.6g} (schema bound of {n_numeric} numeric and "
            f"{n_categorical} one-hot groups), then projected onto the {norm} ball of radius "
            f"{norm_bound:g} ({rows_changed} rows changed)"
        )
    if rows_dropped:
        notes.append(f"{rows_dropped} of {n_rows} rows dropped for missing values")
    if derived:
        notes.append(
            "min-max scaling used the data's own min/max for "
            + ", ".join(derived)
            + " (data-dependent: not covered by a privacy guarantee; declare numeric_bounds)"
        )
    return {
        "X": X,
        "y": y,
        "feature_names": tuple(feature_names),
        "classes": classes,
        "rows_dropped": rows_dropped,
        "rows_changed": rows_changed,
        "data_derived_bounds": tuple(derived),
        "notes": "; ".join(notes),
        "norm": norm,
        "norm_bound": norm_bound,
        "kept_rows": kept_rows,
    }


def _one_hot(values: np.ndarray, declared=None) -> np.ndarray:
    """One column per category (sorted unique values, or the declared list); unknown → all zero."""
    if declared is None:
        cats, codes = np.unique(values, return_inverse=True)
        known = np.ones(values.shape, dtype=bool)
    else:
        index = {str(k): j for j, k in enumerate(declared)}
        cats = list(declared)
        codes = np.asarray([index.get(v, -1) for v in values.tolist()], dtype=np.intp)
        known = codes >= 0
    out = np.zeros((values.shape[0], len(cats)))
    rows = np.flatnonzero(known)
    out[rows, codes[known]] = 1.0
    return out


def _parses(s) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True
