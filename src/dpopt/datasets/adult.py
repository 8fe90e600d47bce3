"""UCI Adult (Census Income), embedded in the package: works offline with no extra package.

All 48,842 rows (``adult.data``: 32,561 training rows; ``adult.test``: 16,281 test
rows) are shipped xz-compressed under ``dpopt/datasets/data/`` with their
attribution (Becker & Kohavi 1996, CC BY 4.0, https://doi.org/10.24432/C5XW20).

Preprocessing follows chen2020 §5.2 (Table 1 lists Adult with 48,842 rows): the 8
categorical attributes are one-hot encoded, the 6 numeric ones min-max scaled to
[0, 1], labels ``>50K`` → +1 and ``<=50K`` → −1 (the test file's trailing ``.`` is
removed).  By default a missing value (``?``, only in workclass, occupation and
native-country) is kept as its own category so that all 48,842 rows remain, as in
chen2020's table; ``missing="drop"`` gives the 45,222 complete rows instead.
Rows are then scaled to the declared L2 bound (see :mod:`.preprocess`).  With
default settings ``d = 108``.  (chen2020 reports dimension 124, which matches the
LIBSVM ``a9a`` encoding with binned numeric attributes; dpopt follows the
paper's stated pipeline instead.)
"""

from __future__ import annotations

import hashlib
import lzma
from functools import lru_cache
from importlib import resources

import numpy as np

from .._validation import check_choice
from .base import Dataset
from .preprocess import encode_table

__all__ = ["load_adult", "ADULT_COLUMNS", "ADULT_NUMERIC", "ADULT_SOURCE", "read_adult_raw"]

ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")

ADULT_SOURCE = (
    "UCI Adult (Census Income), Becker & Kohavi 1996, CC BY 4.0, https://doi.org/10.24432/C5XW20; "
    "embedded copy of adult.data and adult.test"
)

_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}


def _read_file(name: str) -> np.ndarray:
    """One embedded file as a ``(rows, 15)`` array of strings (digest checked)."""
    path = resources.files("dpopt.datasets").joinpath("data", f"{name}.xz")
    raw = lzma.decompress(path.read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != _SHA256[name]:
        raise OSError(f"the embedded {name} is corrupt (SHA-256 {digest}); reinstall dpopt")
    # Fields are separated by ", " and never contain it; skip blank and "|" comment lines.
    lines = [ln for ln in raw.decode("ascii").splitlines() if ln and not ln.startswith("|")]
    fields = ", ".join(lines).split(", ")
    if len(fields) != len(lines) * len(ADULT_COLUMNS):  # pragma: no cover - digest checked
        raise OSError(f"unexpected layout of {name}")
    return np.asarray(fields).reshape(len(lines), len(ADULT_COLUMNS))


@lru_cache(maxsize=1)
def _raw_table() -> tuple[dict[str, np.ndarray], np.ndarray]:
    train = _read_file("adult.data")
    test = _read_file("adult.test")
    table = np.concatenate([train, test])
    columns = {c: np.ascontiguousarray(table[:, j]) for j, c in enumerate(ADULT_COLUMNS)}
    columns["income"] = np.char.rstrip(columns["income"], ".")
    groups = np.asarray(["train"] * len(train) + ["test"] * len(test))
    for arr in (*columns.values(), groups):
        arr.setflags(write=False)
    return columns, groups


def read_adult_raw() -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The raw Adult table as string columns (train then test) and a ``"train"/"test"`` marker.

    Parsed once per process (read-only arrays; the dict is a fresh copy).
    """
    columns, groups = _raw_table()
    return dict(columns), groups


def load_adult(
    split: str = "all",
    *,
    missing: str = "category",
    norm_bound: float | None = 1.0,
    numeric_bounds=None,
    drop_columns=(),
) -> Dataset:
    """Load UCI Adult from the embedded copy, preprocessed as chen2020 §5.2.

    Parameters
    ----------
    split:
        ``"all"`` (48,842 rows, ``groups`` marks train/test), ``"train"`` (32,561)
        or ``"test"`` (16,281).  Scaling is computed on all rows before the split
        is selected, so the two parts share one encoding.
    missing:
        ``"category"`` (default: ``?`` is a category; all rows kept) or ``"drop"``.
    norm_bound:
        Declared L2 row bound (default 1); ``None`` leaves rows unscaled.
    numeric_bounds:
        Declared ``{column: (lo, hi)}`` for numeric columns; columns without one
        use the data's min/max (listed in ``data_derived_bounds``).
    drop_columns:
        Attributes to leave out (e.g. ``("fnlwgt",)``, the census sampling weight).
    """
    check_choice("split", split, ("all", "train", "test"))
    columns, groups = read_adult_raw()
    unknown = sorted(set(drop_columns) - set(ADULT_COLUMNS[:-1]))
    if unknown:
        raise ValueError(f"drop_columns names unknown column(s) {unknown}; columns are {ADULT_COLUMNS[:-1]}")
    for c in drop_columns:
        del columns[c]
    enc = encode_table(
        columns,
        "income",
        numeric=[c for c in ADULT_NUMERIC if c in columns],
        categorical=[c for c in ADULT_COLUMNS[:-1] if c in columns and c not in ADULT_NUMERIC],
        numeric_bounds=numeric_bounds,
        positive_class=">50K",
        missing=missing,
        norm_bound=norm_bound,
    )
    kept = enc.pop("kept_rows")
    ds = Dataset(
        name="adult" if split == "all" else f"adult:{split}",
        source=ADULT_SOURCE,
        groups=groups[kept],
        **enc,
    )
    return ds if split == "all" else ds.group(split)
