"""The small real data sets bundled inside scikit-learn, read by path (no download, no import).

``breast_cancer`` (569 × 30, Wisconsin diagnostic), ``iris`` (150 × 4, 3 classes),
``wine`` (178 × 13, 3 classes) and ``digits`` (1,797 × 64, 10 classes) are files in
``sklearn/datasets/data/``; dpopt reads them directly (scikit-learn must be
installed: ``pip install scikit-learn``, dpopt's ``sklearn`` extra) and runs the
usual pipeline (:mod:`.preprocess`).  Multi-class sets need ``positive_class``
(one-vs-rest).  For breast_cancer the default positive class is ``benign``
(scikit-learn's target 1).
"""

from __future__ import annotations

import gzip
import importlib.util
import io
from pathlib import Path

import numpy as np

from .base import Dataset
from .preprocess import encode_table

__all__ = ["SKLEARN_SETS", "SKLEARN_REQUIREMENT", "sklearn_data_dir", "load_sklearn"]

SKLEARN_REQUIREMENT = "pip install scikit-learn"

_BC = [
    f"mean {f}"
    for f in (
        "radius",
        "texture",
        "perimeter",
        "area",
        "smoothness",
        "compactness",
        "concavity",
        "concave points",
        "symmetry",
        "fractal dimension",
    )
]
_BC_FEATURES = _BC + [f.replace("mean ", "") + " error" for f in _BC] + [f.replace("mean ", "worst ") for f in _BC]

#: name → (file, feature names or None, class names or None, default positive class)
SKLEARN_SETS = {
    "breast_cancer": ("breast_cancer.csv", _BC_FEATURES, None, "benign"),
    "iris": (
        "iris.csv",
        ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)"],
        None,
        None,
    ),
    "wine": (
        "wine_data.csv",
        [
            "alcohol",
            "malic_acid",
            "ash",
            "alcalinity_of_ash",
            "magnesium",
            "total_phenols",
            "flavanoids",
            "nonflavanoid_phenols",
            "proanthocyanins",
            "color_intensity",
            "hue",
            "od280/od315_of_diluted_wines",
            "proline",
        ],
        None,
        None,
    ),
    "digits": (
        "digits.csv.gz",
        [f"pixel_{r}_{c}" for r in range(8) for c in range(8)],
        [str(k) for k in range(10)],
        None,
    ),
}


def sklearn_data_dir() -> Path | None:
    """``sklearn/datasets/data`` of the installed scikit-learn, or None (found without import)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data"
    return path if path.is_dir() else None


def _read(path: Path) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
    """Features, integer targets and the class names of a scikit-learn data file.

    The CSV files start with a header ``n_samples,n_features,class_0,class_1,...``;
    digits.csv.gz has no header.
    """
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    lines = raw.decode("utf-8").strip().splitlines()
    first = lines[0].split(",")
    class_names = None
    if not all(_is_float(v) for v in first):
        class_names = first[2:]
        lines = lines[1:]
    table = np.loadtxt(io.StringIO("\n".join(lines)), delimiter=",")
    return table[:, :-1], table[:, -1].astype(int), class_names


def _is_float(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def load_sklearn(name: str, *, positive_class=None, norm_bound: float | None = 1.0, numeric_bounds=None) -> Dataset:
    """Load one of :data:`SKLEARN_SETS` by path, preprocessed as chen2020 §5.2, labels ±1."""
    if name not in SKLEARN_SETS:
        raise ValueError(f"unknown scikit-learn data set {name!r}; available: {sorted(SKLEARN_SETS)}")
    root = sklearn_data_dir()
    if root is None:
        raise ModuleNotFoundError(
            f"scikit-learn data set {name!r} needs scikit-learn, which is not installed: {SKLEARN_REQUIREMENT}"
        )
    fname, features, classes, default_pos = SKLEARN_SETS[name]
    X, target, header_classes = _read(root / fname)
    class_names = header_classes or classes or [str(k) for k in range(int(target.max()) + 1)]
    labels = np.asarray(class_names, dtype=str)[target]
    columns = {f: X[:, j].astype(str) for j, f in enumerate(features)}
    columns["target"] = labels
    enc = encode_table(
        columns,
        "target",
        numeric=list(features),
        numeric_bounds=numeric_bounds,
        positive_class=positive_class if positive_class is not None else default_pos,
        norm_bound=norm_bound,
    )
    enc.pop("kept_rows")
    return Dataset(
        name=f"sklearn:{name}",
        source=f"scikit-learn bundled data set {name} (sklearn/datasets/data/{fname})",
        **enc,
    )
