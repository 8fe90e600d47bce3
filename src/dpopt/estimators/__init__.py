"""scikit-learn compatible private estimators (needs the ``sklearn`` extra)."""

from .._validation import install_hint

try:  # one line naming the pip command, rather than the first module's own import error
    import sklearn  # noqa: F401
except ModuleNotFoundError as exc:
    raise ModuleNotFoundError(f"dpopt.estimators {install_hint(['sklearn'])}", name="sklearn") from exc

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
