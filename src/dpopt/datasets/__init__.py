"""Data: the papers' synthetic generators and real data sets that load offline.

* :func:`load` / :func:`available` — the registry (``"adult"``, ``"keel:magic"``,
  ``"sklearn:breast_cancer"``, ``"synthetic:kuru2022"``, ``"csv:<path>"``, ...).
* :func:`load_adult` — UCI Adult, all 48,842 rows, embedded in the package
  (CC BY 4.0, Becker & Kohavi 1996); needs no extra package.
* :func:`load_csv` — a user's CSV through the same pipeline (chen2020 §5.2):
  one-hot categoricals, numeric columns min-max scaled to [0, 1] (declared
  bounds or, leaking, the data's own), rows scaled to a declared norm bound,
  labels ±1.
* :func:`kuru2022_logistic`, :func:`han2014_problem`, :func:`svm_data` — seeded generators.
* :func:`kfold_indices`, :func:`train_test_indices`, :func:`partition_indices` — seeded splits.

This layer imports only numpy, scipy, :mod:`dpopt._validation` and
:mod:`dpopt.objectives` (same layer); optional sets are read by path from their
pip packages, never imported and never downloaded.
"""

from .adult import load_adult
from .base import Dataset, PrivacyLeakWarning
from .csvfile import load_csv
from .fashion_mnist import load_fashion_mnist
from .keel import load_keel
from .preprocess import TableSchema, encode_table, learn_schema, to_pm1
from .registry import available, load
from .sklearn_data import load_sklearn
from .splits import kfold_indices, partition_indices, train_test_indices
from .synthetic import Han2014Problem, han2014_problem, kuru2022_logistic, svm_data

__all__ = [
    "TableSchema",
    "learn_schema",
    "Dataset",
    "PrivacyLeakWarning",
    "load",
    "available",
    "load_adult",
    "load_csv",
    "load_keel",
    "load_sklearn",
    "load_fashion_mnist",
    "encode_table",
    "to_pm1",
    "kuru2022_logistic",
    "han2014_problem",
    "Han2014Problem",
    "svm_data",
    "kfold_indices",
    "train_test_indices",
    "partition_indices",
]
