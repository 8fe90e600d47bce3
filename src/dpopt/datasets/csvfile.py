"""Load a user's CSV file through the chen2020 §5.2 pipeline (:mod:`.preprocess`).

Everything the encoding reads from the file's records rather than from the
declarations — the label values, a column's range or category set when not
declared (and then its type), which rows are kept under ``missing="drop"`` or
``"category"`` — is outside any privacy guarantee: :func:`load_csv` warns
(:class:`~dpopt.datasets.PrivacyLeakWarning`, one warning naming the columns and
steps, whose text depends on the arguments only) and repeats it in
``Dataset.notes``.  For private data declare every column (``numeric_bounds``,
``categories``) and use ``missing="impute"``; the label values are read whatever
is declared (the warning names only them then).

Missing values (empty fields and the tokens of
:data:`~dpopt.datasets.preprocess.MISSING_TOKENS`, e.g. ``?``, ``NA``, ``NaN``) are
handled by ``missing``: ``"drop"`` (default) removes every row that has one and
reports how many in ``Dataset.rows_dropped`` and ``Dataset.notes``;
``"category"`` keeps a missing categorical value as its own category (rows with a
missing numeric value are still dropped); ``"error"`` refuses.  Infinite numbers
are refused with the column and line named.  Row numbers in error messages are
line numbers of the file (the header is line 1).
"""

from __future__ import annotations

import codecs
import csv
import os
import warnings
from pathlib import Path

import numpy as np

from .base import Dataset, PrivacyLeakWarning
from .preprocess import FROM_DATA, MISSING_TOKENS, encode_table

__all__ = ["load_csv", "read_csv_columns", "CSVEncodingError"]

#: The default text encoding: UTF-8, with or without a byte-order mark.
UTF8 = "utf-8-sig"


class CSVEncodingError(ValueError):
    """A CSV file that is not text in the encoding it was read with.  The message names the file, the
    encoding and where the first undecodable byte is (offset and line), never the byte itself: the
    file's bytes are its data."""

    def __init__(self, path: Path, encoding: str, offset: int, line: int):
        self.path, self.encoding, self.offset, self.line = path, encoding, offset, line
        super().__init__(
            f"CSV file {str(path)!r} {self.problem}; re-save it as UTF-8 or give its encoding (encoding='latin-1', say)"
        )

    @property
    def problem(self) -> str:
        """``is not UTF-8 text (undecodable byte at offset 1234, line 5)``."""
        name = "UTF-8" if codecs.lookup(self.encoding).name in ("utf-8", "utf-8-sig") else self.encoding
        return f"is not {name} text (undecodable byte at offset {self.offset}, line {self.line})"


def _encoding_error(path: Path, encoding: str) -> CSVEncodingError:
    """The error for ``path``, which did not decode as ``encoding``: where its first undecodable byte is."""
    raw = path.read_bytes()
    marked = codecs.lookup(encoding).name == "utf-8-sig" and raw.startswith(codecs.BOM_UTF8)
    skip = len(codecs.BOM_UTF8) if marked else 0
    try:  # (utf-8-sig counts offsets after its mark: decode the rest as plain UTF-8 instead)
        raw[skip:].decode("utf-8" if skip else encoding)
        offset = len(raw)  # (unreachable: the file did not decode)
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
    return CSVEncodingError(path, encoding, offset, raw.count(b"\n", 0, offset) + 1)


def read_csv_columns(
    path, *, delimiter: str = ",", header: bool = True, encoding: str = UTF8
) -> tuple[dict[str, np.ndarray], int]:
    """Read a CSV into ``{column: stripped strings}``; return it and the first data line number.

    ``encoding``: the file's text encoding (default UTF-8, a byte-order mark allowed); a file that does not
    decode raises :class:`CSVEncodingError`, naming the file and where, never what, the bad byte is.
    """
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"CSV file not found: {str(path)!r}")
    if path.is_dir():
        raise IsADirectoryError(f"expected a CSV file, got the directory {str(path)!r}")
    try:
        with open(path, newline="", encoding=encoding) as fh:
            rows = [r for r in csv.reader(fh, delimiter=delimiter) if any(f.strip() for f in r)]
    except UnicodeDecodeError:
        raise _encoding_error(path, encoding) from None
    if not rows:
        raise ValueError(f"CSV file {str(path)!r} is empty")
    if header:
        names = [h.strip() for h in rows[0]]
        rows = rows[1:]
        first_line = 2
        if len(set(names)) != len(names) or any(not h for h in names):
            raise ValueError(f"CSV header of {str(path)!r} has empty or repeated column names: {names}")
    else:
        names = [f"x{j}" for j in range(len(rows[0]))]
        first_line = 1
    if not rows:
        raise ValueError(f"CSV file {str(path)!r} has a header but no data rows")
    width = len(names)
    for i, r in enumerate(rows):
        if len(r) != width:
            raise ValueError(
                f"line {i + first_line} of {str(path)!r} has {len(r)} fields, expected {width} "
                f"(check the delimiter {delimiter!r})"
            )
    cols = list(zip(*rows, strict=True))
    return {c: np.char.strip(np.asarray(cols[j], dtype=str)) for j, c in enumerate(names)}, first_line


def load_csv(
    path,
    target: str,
    *,
    positive_class=None,
    categorical=None,
    numeric=None,
    numeric_bounds=None,
    categories=None,
    missing: str = "drop",
    missing_tokens=MISSING_TOKENS,
    norm_bound: float | None = 1.0,
    norm: str = "l2",
    delimiter: str = ",",
    header: bool = True,
    name: str | None = None,
    schema=None,
    encoding: str = UTF8,
) -> Dataset:
    """Load ``path`` with the label column ``target`` (by name; ``x<j>`` without a header).

    Column types are inferred (numeric when every non-missing value parses) unless
    listed in ``categorical``/``numeric``.  ``numeric_bounds={col: (lo, hi)}``
    declares the scaling range of a numeric column; columns without one use the
    data's min/max, which is data-dependent (listed in
    ``Dataset.data_derived_bounds``).  ``positive_class`` picks the label mapped
    to +1 (required when the target has more than two values).  Rows are scaled
    to ``‖x‖ ≤ norm_bound`` (``None``: no scaling).  See the module docstring for
    missing values.  ``schema`` (a :class:`~dpopt.datasets.preprocess.TableSchema`
    or its dict, e.g. from ``Dataset.info["schema"]`` of an earlier load) encodes
    the file with a fixed layout instead of learning one; the learned or given
    schema is returned in ``Dataset.info["schema"]``.  ``encoding`` is the file's
    text encoding (default UTF-8; see :func:`read_csv_columns`).
    """
    columns, first_line = read_csv_columns(path, delimiter=delimiter, header=header, encoding=encoding)
    if target not in columns:
        raise ValueError(f"target column {target!r} not found in {str(path)!r}; columns are {list(columns)}")
    enc = encode_table(
        columns,
        target,
        categorical=categorical,
        numeric=numeric,
        numeric_bounds=numeric_bounds,
        categories=categories,
        positive_class=positive_class,
        missing=missing,
        missing_tokens=missing_tokens,
        norm_bound=norm_bound,
        norm=norm,
        row_offset=first_line,
        schema=schema,
    )
    enc.pop("kept_rows")
    read = _read_from_data(enc["info"]["schema"])
    warnings.warn(f"load_csv: {read}", PrivacyLeakWarning, stacklevel=2)
    enc["notes"] = f"{enc['notes']}; {read}" if enc["notes"] else read
    return Dataset(
        name=name or f"csv:{Path(os.fspath(path)).name}",
        source=f"user CSV file {os.fspath(path)}",
        **enc,
    )


def _read_from_data(schema) -> str:
    """What the encoding read from the records (DESIGN.md invariant 7), in words that depend on the
    declarations only, so that neighbouring files get the same warning."""
    items = ["the label values (classes)"]
    derived = [c.name for c in schema.columns if c.source == FROM_DATA]
    if derived:
        items.append("the range or category set (and type, where not declared) of " + ", ".join(derived))
    if schema.missing in ("drop", "category"):
        lost = "value" if schema.missing == "drop" else "number"
        items.append(f"which rows are kept (missing={schema.missing!r} drops the rows with a missing {lost})")
    advice = ["declare numeric_bounds= and categories= for every column"] if derived else []
    if schema.missing in ("drop", "category"):
        advice.append("use missing='impute'")
    # the label values are read whatever is declared: advise only what would take a read away
    return (
        "read from the data, outside any privacy guarantee: " + "; ".join(items) + ". "
        + (f"For private data {' and '.join(advice)}; " if advice else "")
        + "load_csv reads the label values whatever is declared"
    )
