"""scikit-learn compatible private estimators (needs the ``sklearn`` extra)."""

from ._dispatch import ACCELERATED, LINESEARCH, METHODS
from .linear import DPHuberSVC, DPLogisticRegression, PrivacyBudgetWarning, PrivacyLeakWarning

__all__ = [
    "DPLogisticRegression",
    "DPHuberSVC",
    "PrivacyLeakWarning",
    "PrivacyBudgetWarning",
    "METHODS",
    "ACCELERATED",
    "LINESEARCH",
]
