"""scikit-learn compatible private estimators (needs the ``sklearn`` extra)."""

from ._dispatch import ACCELERATED, LINESEARCH, METHODS
from .bayes_search import DPBayesSearchCV
from .linear import DPHuberSVC, DPLogisticRegression, PrivacyLeakWarning, UtilityWarning
from .neural import DPMLPClassifier
from .persist import load_model, save_model

__all__ = [
    "DPLogisticRegression",
    "DPHuberSVC",
    "DPBayesSearchCV",
    "DPMLPClassifier",
    "PrivacyLeakWarning",
    "UtilityWarning",
    "METHODS",
    "ACCELERATED",
    "LINESEARCH",
    "save_model",
    "load_model",
]
