"""The preprocessing pipeline of chen2020 §5.2, shared by every tabular loader.

1. Missing values, per record and without changing the number of rows:
   ``missing="impute"`` encodes a missing number as the middle of its column's
   range and a missing category as an all-zero block (public values, not read
   from the data); ``missing="indicator"`` encodes a missing entry as zeros
   plus a 0/1 feature ``"column:missing"`` per column (one per column whatever
   the data).  Or, changing n: rows with a missing entry are dropped and
   counted (``missing="drop"``; the number of rows left is then read from the
   data), or a missing categorical entry becomes its own category
   (``missing="category"``; rows with a missing *numeric* entry are still
   dropped).  ``missing="error"`` refuses.  A missing label is refused except
   under ``"drop"`` and ``"category"``.
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
   (:func:`dpopt.objectives.bounds.project_rows`), which only takes off
   rounding; its count of changed rows is not reported (``rows_changed`` is 0).
5. Labels become ±1 (:func:`to_pm1`).

Steps 1–3 are captured in a :class:`TableSchema` (:func:`learn_schema`): per
column its kind, numeric range (declared or read from the data), one-hot
categories (declared or read from the data) and the column order.  The schema
is JSON-serializable and encodes new rows with the same layout
(:meth:`TableSchema.encode`), which is how a saved model is applied to new
data.  Everything the schema read from the data (ranges, category sets) is
named by :attr:`TableSchema.data_derived_bounds` and
:attr:`TableSchema.data_derived_categories`: it is released with the model and
is not covered by the privacy guarantee of the fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import numpy as np

from .._validation import check_choice, check_positive
from ..objectives import bounds

__all__ = [
    "MISSING_TOKENS",
    "MISSING_POLICIES",
    "DECLARED",
    "FROM_DATA",
    "ColumnSpec",
    "EncodedRows",
    "TableSchema",
    "learn_schema",
    "to_pm1",
    "encode_table",
    "parse_numeric",
]

#: Strings treated as a missing value (after stripping whitespace).
MISSING_TOKENS = ("", "?", "NA", "N/A", "NaN", "nan", "null", "None")

#: Missing-value policies (module docstring, step 1); the first two keep every row.
MISSING_POLICIES = ("impute", "indicator", "drop", "category", "error")
#: Policies that keep every row (n does not depend on where values are missing).
PER_RECORD = ("impute", "indicator")


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


# -- the schema: everything needed to encode new rows exactly like the training rows ------------

#: Where a numeric range or a category set came from.
DECLARED, FROM_DATA = "declared", "data"


@dataclass(frozen=True)
class ColumnSpec:
    """How one feature column is encoded.

    ``kind`` is ``"numeric"`` (min-max scaled over ``[lower, upper]`` after
    clipping into it) or ``"categorical"`` (one-hot over ``categories``; any
    other value encodes as all zeros).  ``source`` says whether the range or
    the category set was declared by the user (:data:`DECLARED`) or read from
    the data (:data:`FROM_DATA`, outside any privacy guarantee).
    """

    name: str
    kind: str
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] = ()
    source: str = DECLARED

    def __post_init__(self):
        check_choice("kind", self.kind, ("numeric", "categorical"))
        check_choice("source", self.source, (DECLARED, FROM_DATA))
        if self.kind == "numeric":
            lo, hi = self.lower, self.upper
            if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise ValueError(f"numeric column {self.name!r} needs finite bounds lower <= upper, got ({lo}, {hi})")
            object.__setattr__(self, "lower", float(lo))
            object.__setattr__(self, "upper", float(hi))
        else:
            cats = tuple(str(k) for k in self.categories)
            if len(set(cats)) != len(cats):
                raise ValueError(f"categorical column {self.name!r} lists a category twice: {list(cats)}")
            object.__setattr__(self, "categories", cats)

    @property
    def feature_names(self) -> tuple[str, ...]:
        return (self.name,) if self.kind == "numeric" else tuple(f"{self.name}={k}" for k in self.categories)

    def to_dict(self) -> dict:
        out = {"name": self.name, "kind": self.kind, "source": self.source}
        if self.kind == "numeric":
            out["bounds"] = [self.lower, self.upper]
        else:
            out["categories"] = list(self.categories)
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> ColumnSpec:
        lower, upper = data.get("bounds", (None, None))
        return cls(
            name=str(data["name"]),
            kind=data["kind"],
            lower=lower,
            upper=upper,
            categories=tuple(data.get("categories", ())),
            source=data.get("source", DECLARED),
        )


class EncodedRows(NamedTuple):
    """Output of :meth:`TableSchema.encode`."""

    X: np.ndarray
    #: Always 0: every column contributes at most 1 (step 4 of the module docstring), so the projection
    #: only takes off rounding, and which rows it touches is not reported (it depends on the records).
    rows_changed: int
    #: Rows in which a missing value was imputed (policies "impute"/"indicator", or ``impute_missing=True``).
    rows_imputed: int
    #: Rows with a categorical value outside the schema's categories (encoded as all zeros).
    rows_unknown: int


@dataclass(frozen=True)
class TableSchema:
    """The learned-or-declared layout of a table: column kinds, ranges, categories, order.

    A schema is JSON-serializable (:meth:`to_dict`/:meth:`from_dict`) and
    encodes new rows (:meth:`encode`) with exactly the layout of the rows it
    was learned on — unknown categories as all-zero one-hot blocks, numbers
    clipped into the stored ranges — so that a saved model can be applied to
    new data.  ``target`` names the label column (not encoded).
    """

    columns: tuple[ColumnSpec, ...]
    target: str | None = None
    missing: str = "drop"
    missing_tokens: tuple[str, ...] = MISSING_TOKENS
    norm: str = "l2"
    norm_bound: float | None = 1.0

    FORMAT: ClassVar[str] = "dpopt-table-schema"
    VERSION: ClassVar[int] = 1

    def __post_init__(self):
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "missing_tokens", tuple(str(t) for t in self.missing_tokens))
        if not self.columns:
            raise ValueError("a table schema needs at least one feature column")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names) or self.target in names:
            raise ValueError(f"schema column names must be distinct and differ from the target: {names}")
        check_choice("missing", self.missing, MISSING_POLICIES)
        check_choice("norm", self.norm, ("l1", "l2"))
        if self.norm_bound is not None:
            object.__setattr__(self, "norm_bound", check_positive("norm_bound", self.norm_bound))

    # -- description --------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """Feature column names, in encoding order."""
        return tuple(c.name for c in self.columns)

    @property
    def feature_names(self) -> tuple[str, ...]:
        indicator = self.missing == "indicator"
        return tuple(f for c in self.columns for f in (*c.feature_names, *((f"{c.name}:missing",) * indicator)))

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def schema_bound(self) -> float:
        """Bound on ‖x‖ of an unscaled encoded row: √k (L2) or k (L1) for k columns (step 4).

        Each column contributes at most 1: a number in [0, 1], one 1 in a one-hot block, or
        (``missing="indicator"``) zeros and the indicator's 1 when the entry is missing.
        """
        k = len(self.columns)
        return math.sqrt(k) if self.norm == "l2" else float(k)

    @property
    def row_bound(self) -> float:
        """Bound on ‖x‖ (``norm``) of every row :meth:`encode` returns; it never looks at the data."""
        return self.norm_bound if self.norm_bound is not None else self.schema_bound

    @property
    def data_derived_bounds(self) -> tuple[str, ...]:
        """Numeric columns whose range was read from the data (not covered by a guarantee)."""
        return tuple(c.name for c in self.columns if c.kind == "numeric" and c.source == FROM_DATA)

    @property
    def data_derived_categories(self) -> tuple[str, ...]:
        """Categorical columns whose category set was read from the data."""
        return tuple(c.name for c in self.columns if c.kind == "categorical" and c.source == FROM_DATA)

    # -- encoding -----------------------------------------------------------------------------------
    def missing_masks(self, columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """``{column: bool mask of missing entries}`` for the feature columns present in ``columns``."""
        tokens = list(self.missing_tokens)
        return {c: np.isin(columns[c], tokens) for c in self.names if c in columns}

    def encode(
        self,
        columns: Mapping[str, np.ndarray],
        *,
        row_offset: int = 0,
        row_numbers: np.ndarray | None = None,
        impute_missing: bool = False,
    ) -> EncodedRows:
        """Encode every row of ``columns`` (``{name: strings}``, extra columns ignored).

        Numbers are parsed (errors name the column, row and value), clipped into
        the column's range and scaled to [0, 1]; categories become one-hot
        blocks (unknown values: all zeros; a missing value is the category
        ``"?"`` when the schema was learned with ``missing="category"``); rows
        are then scaled to ``norm_bound`` by the schema constant and projected.
        Missing entries follow the schema's policy (``"impute"``: the middle of
        a numeric column's range, an all-zero one-hot block; ``"indicator"``:
        zeros and the column's indicator set to 1).  Under the other policies a
        missing *numeric* value is an error unless ``impute_missing``, which
        uses the middle of the column's range — a public, data-independent value.
        Error messages number rows ``row_numbers`` (default 0, 1, ...) plus ``row_offset``.
        """
        absent = [c for c in self.names if c not in columns]
        if absent:
            raise ValueError(
                f"the data lack the feature column(s) {absent} the schema needs; columns are {list(columns)}"
            )
        lengths = {len(columns[c]) for c in self.names}
        if len(lengths) != 1:
            raise ValueError(f"feature columns have different lengths {sorted(lengths)}")
        n_rows = lengths.pop()
        rows = (np.arange(n_rows) if row_numbers is None else np.asarray(row_numbers)) + row_offset
        is_missing = self.missing_masks(columns)
        imputed = np.zeros(n_rows, dtype=bool)
        unknown = np.zeros(n_rows, dtype=bool)
        blocks = []
        per_record = self.missing in PER_RECORD
        for spec in self.columns:
            values = np.asarray(columns[spec.name], dtype=str)
            gap = is_missing[spec.name]
            if spec.kind == "numeric":
                if gap.any() and not (impute_missing or per_record):
                    row = int(rows[np.flatnonzero(gap)[0]])
                    raise ValueError(f"column {spec.name!r} has a missing value in row {row}")
                # in halves, exact below the overflow threshold: a declared range such as -1e308 to 1e308
                # has hi - lo = inf, and (v - lo)/(hi - lo) was NaN (with a RuntimeWarning) for a record near
                # hi alone, so one in-range record made a run refuse; (lo + hi)/2 was inf for 1e308 to 1.5e308
                lo, hi = 0.5 * spec.lower, 0.5 * spec.upper
                v = parse_numeric(spec.name, np.where(gap, repr(lo + hi), values), rows=rows)
                imputed |= gap
                v = np.clip(v, spec.lower, spec.upper)
                v = (0.5 * v - lo) / (hi - lo) if hi > lo else np.zeros_like(v)
                block = np.where(gap, 0.0, v)[:, None] if self.missing == "indicator" else v[:, None]
            else:
                if self.missing == "category":
                    values = np.where(gap, "?", values)
                block = _one_hot(values, spec.categories)
                if per_record:
                    block[gap] = 0.0
                    imputed |= gap
                unknown |= ~block.any(axis=1) & ~(gap & per_record)
            blocks.append(block)
            if self.missing == "indicator":
                blocks.append(gap.astype(float)[:, None])
        X = np.hstack(blocks)
        if self.norm_bound is not None:
            # the scaled rows are within the bound up to rounding, and the projection takes that off; its
            # count of changed rows was the number of rows whose norm rounded up (with 23 one-hot columns
            # every row with known categories: n, private under add/remove), so it is not reported
            X = X * (self.norm_bound / self.schema_bound)
            X, _ = bounds.project_rows(X, self.norm_bound, self.norm)
        return EncodedRows(X, 0, int(imputed.sum()), int(unknown.sum()))

    # -- JSON -------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "format": self.FORMAT,
            "version": self.VERSION,
            "target": self.target,
            "columns": [c.to_dict() for c in self.columns],
            "feature_names": list(self.feature_names),
            "missing": self.missing,
            "missing_tokens": list(self.missing_tokens),
            "norm": self.norm,
            "norm_bound": self.norm_bound,
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> TableSchema:
        if not isinstance(data, Mapping) or data.get("format") != cls.FORMAT:
            raise ValueError(f"not a {cls.FORMAT} object")
        if data.get("version") != cls.VERSION:
            raise ValueError(
                f"unsupported {cls.FORMAT} version {data.get('version')!r} (this dpopt reads {cls.VERSION})"
            )
        return cls(
            columns=tuple(ColumnSpec.from_dict(c) for c in data["columns"]),
            target=data.get("target"),
            missing=data.get("missing", "drop"),
            missing_tokens=tuple(data.get("missing_tokens", MISSING_TOKENS)),
            norm=data.get("norm", "l2"),
            norm_bound=data.get("norm_bound"),
        )


def learn_schema(
    columns: Mapping[str, np.ndarray],
    target: str,
    *,
    categorical: Sequence[str] | None = None,
    numeric: Sequence[str] | None = None,
    numeric_bounds: Mapping[str, tuple[float, float]] | None = None,
    categories: Mapping[str, Sequence[str]] | None = None,
    missing: str = "drop",
    missing_tokens: Sequence[str] = MISSING_TOKENS,
    norm_bound: float | None = 1.0,
    norm: str = "l2",
    row_offset: int = 0,
    infer: bool = True,
) -> tuple[TableSchema, np.ndarray]:
    """Steps 1–3 of the module docstring: the :class:`TableSchema` of a table and the rows it keeps.

    Column kinds are inferred (numeric when every non-missing value parses as a
    float) unless given: ``categorical``/``categories`` make a column
    categorical, ``numeric``/``numeric_bounds`` numeric.  Ranges and category
    sets not declared are read from the kept rows and marked :data:`FROM_DATA`.
    ``infer=False`` (private data) reads neither a kind nor a category set from
    the data: every column must be declared, a categorical one with its
    ``categories``, or the call is refused; only a numeric range may still be
    read from the data (marked :data:`FROM_DATA`).  Returns the schema and the
    indices of the kept rows (all rows under ``"impute"``/``"indicator"``; no
    missing target; no missing feature under ``missing="drop"``; no missing
    numeric value under ``"category"``).
    """
    check_choice("missing", missing, MISSING_POLICIES)
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
    as_categorical = set(categorical or ()) | set(categories)
    as_numeric = set(numeric or ()) | set(numeric_bounds)
    for label, given in (
        ("categorical", categorical),
        ("numeric", numeric),
        ("numeric_bounds", numeric_bounds),
        ("categories", categories),
    ):
        unknown = sorted(set(given or ()) - set(names))
        if unknown:
            raise ValueError(f"{label} names unknown column(s) {unknown}; columns are {names}")
    both = sorted(as_categorical & as_numeric)
    if both:
        raise ValueError(f"column(s) {both} are declared both numeric and categorical")

    tokens = list(missing_tokens)
    is_missing = {c: np.isin(columns[c], tokens) for c in [*names, target]}
    if not infer:
        undeclared = [c for c in names if c not in as_categorical | as_numeric]
        if undeclared:
            raise ValueError(
                f"column(s) {undeclared} have no declared type: declare each numeric column with its range "
                "(or as numeric) and each categorical one with its categories; types and category sets are "
                "never read from private data"
            )
        open_sets = sorted(as_categorical - set(categories))
        if open_sets:
            raise ValueError(
                f"categorical column(s) {open_sets} need their declared categories; category sets are never "
                "read from private data"
            )
    kinds: dict[str, str] = {}
    for c in names:
        if c in as_categorical:
            kinds[c] = "categorical"
        elif c in as_numeric:
            kinds[c] = "numeric"
        else:
            present = columns[c][~is_missing[c]]
            kinds[c] = "numeric" if present.size and _is_numeric(present) else "categorical"

    kept_rows = _kept_rows(missing, kinds, {c: is_missing[c] for c in names}, is_missing[target], target)

    specs = []
    for c in names:
        values = columns[c][kept_rows]
        if kinds[c] == "numeric":
            present = ~is_missing[c][kept_rows]
            v = parse_numeric(c, values[present], rows=kept_rows[present] + row_offset)
            if c in numeric_bounds:
                try:
                    lo, hi = (float(b) for b in numeric_bounds[c])
                except (TypeError, ValueError):
                    raise ValueError(f"numeric_bounds[{c!r}] must be a pair (lo, hi) of numbers") from None
                if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                    raise ValueError(f"numeric_bounds[{c!r}] must be finite (lo, hi) with lo <= hi")
                specs.append(ColumnSpec(c, "numeric", lo, hi, source=DECLARED))
            elif not v.size:
                raise ValueError(f"numeric column {c!r} has no values to read a range from; declare its range")
            else:
                # a span beyond the float range is encoded in halves (TableSchema.encode), as a declared one
                lo, hi = float(v.min()), float(v.max())
                specs.append(ColumnSpec(c, "numeric", lo, hi, source=FROM_DATA))
        elif c in categories:
            specs.append(ColumnSpec(c, "categorical", categories=tuple(categories[c]), source=DECLARED))
        else:
            if missing == "category":
                values = np.where(is_missing[c][kept_rows], "?", values)
            specs.append(ColumnSpec(c, "categorical", categories=tuple(np.unique(values).tolist()), source=FROM_DATA))
    schema = TableSchema(
        tuple(specs), target=target, missing=missing, missing_tokens=tuple(tokens), norm=norm, norm_bound=norm_bound
    )
    return schema, kept_rows


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
    schema: TableSchema | Mapping | None = None,
) -> dict:
    """Encode string columns into ``X``, ``y`` and metadata (module docstring, steps 1–5).

    ``columns`` maps column names to arrays of stripped strings (one per row);
    ``target`` names the label column.  The layout is learned by
    :func:`learn_schema` from the declarations, or taken from ``schema`` (a
    :class:`TableSchema` or its dict), in which case the declaration arguments
    must be left unset.  ``row_offset`` is added to row numbers in error
    messages.  Returns a dict with ``X, y, feature_names, classes,
    rows_dropped, rows_changed, data_derived_bounds, notes, norm, norm_bound``
    and ``info={"schema": TableSchema}`` (the keyword arguments of
    :class:`~dpopt.datasets.Dataset` besides name and source), plus
    ``kept_rows`` (indices of the input rows kept).
    """
    if target not in columns:
        raise ValueError(f"target column {target!r} not found; columns are {list(columns)}")
    if schema is None:
        schema, kept_rows = learn_schema(
            columns,
            target,
            categorical=categorical,
            numeric=numeric,
            numeric_bounds=numeric_bounds,
            categories=categories,
            missing=missing,
            missing_tokens=missing_tokens,
            norm_bound=norm_bound,
            norm=norm,
            row_offset=row_offset,
        )
    else:
        declared = [
            k
            for k, v in (
                ("categorical", categorical),
                ("numeric", numeric),
                ("numeric_bounds", numeric_bounds),
                ("categories", categories),
            )
            if v
        ]
        if declared:
            raise ValueError(f"give either schema or the declarations {declared}, not both")
        schema = schema if isinstance(schema, TableSchema) else TableSchema.from_dict(schema)
        kept_rows = _rows_kept_by(schema, columns, target)
    n_rows = len(columns[target])
    rows_dropped = n_rows - kept_rows.size
    kept = {c: columns[c][kept_rows] for c in schema.names}
    X, rows_changed, _, _ = schema.encode(kept, row_numbers=kept_rows + row_offset)
    y, classes = to_pm1(columns[target][kept_rows], positive_class)

    notes = []
    if schema.norm_bound is not None:
        n_numeric = sum(c.kind == "numeric" for c in schema.columns)
        n_categorical = len(schema.columns) - n_numeric
        notes.append(
            f"rows scaled by {schema.norm_bound:g}/{schema.schema_bound:.6g} (schema bound of {n_numeric} numeric "
            f"and {n_categorical} one-hot groups), then projected onto the {schema.norm} ball of radius "
            f"{schema.norm_bound:g} (which takes off rounding only)"
        )
    if rows_dropped:
        notes.append(f"{rows_dropped} of {n_rows} rows dropped for missing values")
    derived = schema.data_derived_bounds
    if derived:
        notes.append(
            "min-max scaling used the data's own min/max for "
            + ", ".join(derived)
            + " (data-dependent: not covered by a privacy guarantee; declare numeric_bounds)"
        )
    return {
        "X": X,
        "y": y,
        "feature_names": schema.feature_names,
        "classes": classes,
        "rows_dropped": rows_dropped,
        "rows_changed": rows_changed,
        "data_derived_bounds": derived,
        "notes": "; ".join(notes),
        "norm": schema.norm,
        "norm_bound": schema.norm_bound,
        "info": {"schema": schema},
        "kept_rows": kept_rows,
    }


def _rows_kept_by(schema: TableSchema, columns: Mapping[str, np.ndarray], target: str) -> np.ndarray:
    """Rows a learned ``schema`` would keep: step 1 with the schema's missing-value policy."""
    masks = schema.missing_masks(columns)
    absent = [c for c in schema.names if c not in masks]
    if absent:
        raise ValueError(f"the data lack the feature column(s) {absent} the schema needs")
    target_missing = np.isin(columns[target], list(schema.missing_tokens))
    kinds = {spec.name: spec.kind for spec in schema.columns}
    return _kept_rows(schema.missing, kinds, masks, target_missing, target)


def _kept_rows(missing: str, kinds: Mapping[str, str], masks: Mapping[str, np.ndarray], target_missing, target):
    """Step 1: the rows kept under the policy ``missing`` (refusals as one-line errors)."""
    if missing == "error":
        bad = {c: int(m.sum()) for c, m in masks.items() if m.any()}
        if target_missing.any():
            bad[target] = int(target_missing.sum())
        if bad:
            raise ValueError(f"missing values (counts per column): {bad}; choose another missing-value policy")
    if missing in PER_RECORD:
        if target_missing.any():
            raise ValueError(
                f"the label column {target!r} has a missing value in row {int(np.flatnonzero(target_missing)[0])}; "
                "a record needs its label (fix it, or drop such rows with missing='drop', which is disclosed)"
            )
        return np.arange(target_missing.size)
    drop = np.asarray(target_missing).copy()
    for c, mask in masks.items():
        if missing == "drop" or kinds[c] == "numeric":
            drop |= mask
    kept_rows = np.flatnonzero(~drop)
    if kept_rows.size == 0:
        raise ValueError("no rows left after dropping rows with missing values")
    return kept_rows


def _one_hot(values: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """One column per category, in the given order; a value outside ``categories`` → all zeros."""
    out = np.zeros((values.shape[0], len(categories)))
    if not len(categories):
        return out
    cats = np.asarray(categories, dtype=str)
    order = np.argsort(cats, kind="stable")
    ranked = cats[order]
    pos = np.minimum(np.searchsorted(ranked, values), len(cats) - 1)
    known = ranked[pos] == values
    out[np.flatnonzero(known), order[pos[known]]] = 1.0
    return out


def _parses(s) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True
