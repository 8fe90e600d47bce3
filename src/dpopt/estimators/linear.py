"""scikit-learn estimators for private linear classification.

:class:`DPLogisticRegression` and :class:`DPHuberSVC` (Huberized hinge,
h = 0.5, chen2020 §5.3) fit F(w) = mean loss + (μ/2)‖w‖² with any optimizer
of the accelerated (kuru2022) or linesearch (chen2020) families.

Bounds are never learned silently.  Declare ``data_norm`` (every row is
clipped to that L2 norm) or ``bounds=(lower, upper)`` per feature (values are
clipped into the box, and the row bound is the box's largest norm).  With
neither, the estimator computes the largest row norm *from the data* and
warns with :class:`PrivacyLeakWarning`: that number is not covered by the
guarantee.  Internally rows are scaled to ‖x‖₂ ≤ 1 together with the
intercept column, [x/B, 1]/√2, and the coefficients are mapped back.

Every fit spends its own budget.  Fitting again on the same data, e.g. in
:class:`~sklearn.model_selection.GridSearchCV`, composes: the estimator warns
with :class:`PrivacyBudgetWarning`.  To tune hyper-parameters privately, use
a private selection method (the bayesopt family, Kusner et al. 2015) instead
of cross-validated grid search.
"""

from __future__ import annotations

import hashlib
import math
import sys
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import as_generator, check_delta, check_nonnegative, check_positive
from ._dispatch import METHODS, fit_linear, needs_delta

__all__ = ["DPLogisticRegression", "DPHuberSVC", "PrivacyLeakWarning", "PrivacyBudgetWarning"]


class PrivacyLeakWarning(UserWarning):
    """A quantity was computed from the private data outside the privacy guarantee."""


class PrivacyBudgetWarning(UserWarning):
    """The same data were used by several private fits: their budgets add up."""


# Fingerprints of data sets fitted in this process, with the ε spent on each.
_FIT_HISTORY: dict[str, list[float]] = {}


def _fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(X).view(np.uint8))
    h.update(np.ascontiguousarray(y).view(np.uint8))
    return h.hexdigest()


def _called_from_model_selection() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection"):
            return True
        frame = frame.f_back
    return False


def _row_bound_of_box(lower: np.ndarray, upper: np.ndarray) -> float:
    return float(np.linalg.norm(np.maximum(np.abs(lower), np.abs(upper))))


class _DPLinearClassifier(ClassifierMixin, BaseEstimator):
    """Shared fit/predict of the private linear classifiers (binary)."""

    _loss = "logistic"

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        method="auto",
        data_norm=None,
        bounds=None,
        regularization=1e-3,
        fit_intercept=True,
        method_params=None,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.data_norm = data_norm
        self.bounds = bounds
        self.regularization = regularization
        self.fit_intercept = fit_intercept
        self.method_params = method_params
        self.random_state = random_state

    # -- parameters -----------------------------------------------------------
    def _resolved_method(self) -> str:
        if self.method == "auto":
            return "dp-blsgd" if self.delta > 0 else "outpert"
        if self.method not in METHODS:
            raise ValueError(f"method must be 'auto' or one of {list(METHODS)}, got {self.method!r}")
        return self.method

    def _check_params(self) -> tuple[str, float, float]:
        epsilon = check_positive("epsilon", self.epsilon)
        delta = check_delta("delta", self.delta)
        check_nonnegative("regularization", self.regularization)
        method = self._resolved_method()
        if needs_delta(method) and delta == 0.0:
            raise ValueError(f"method {method!r} gives (epsilon, delta)-DP: set delta > 0 (e.g. 1e-6)")
        return method, epsilon, delta

    def _box(self, d: int):
        if self.bounds is None:
            return None
        try:
            lower, upper = self.bounds
        except (TypeError, ValueError) as exc:
            raise ValueError("bounds must be a pair (lower, upper) of scalars or per-feature arrays") from exc
        lower = np.broadcast_to(np.asarray(lower, dtype=float), (d,))
        upper = np.broadcast_to(np.asarray(upper, dtype=float), (d,))
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper)) and np.all(lower < upper)):
            raise ValueError("bounds must be finite with lower < upper for every feature")
        return lower, upper

    # -- preprocessing (a per-record map: no privacy cost) -------------------------------
    def _clip(self, X: np.ndarray) -> np.ndarray:
        if self._box_ is not None:
            X = np.clip(X, *self._box_)
        norms = np.linalg.norm(X, axis=1)
        scale = np.minimum(1.0, self.row_bound_ / np.maximum(norms, np.finfo(float).tiny))
        return X * scale[:, None]

    def _design(self, X: np.ndarray) -> np.ndarray:
        """Rows of ‖·‖₂ ≤ 1: [x/B, 1]/√2 with an intercept, x/B without."""
        Z = self._clip(X) / self.row_bound_
        if self.fit_intercept:
            Z = np.hstack([Z, np.ones((Z.shape[0], 1))]) / math.sqrt(2.0)
        return Z

    # -- fit / predict -------------------------------------------------------------
    def fit(self, X, y):
        """Fit privately; spends (``epsilon``, ``delta``) on (X, y)."""
        method, epsilon, delta = self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError(
                f"{type(self).__name__} is a binary classifier: y must have exactly 2 classes, got {len(self.classes_)}"
            )
        d = X.shape[1]
        self._box_ = self._box(d)
        if self.data_norm is not None:
            self.row_bound_ = check_positive("data_norm", self.data_norm)
        elif self._box_ is not None:
            self.row_bound_ = _row_bound_of_box(*self._box_)
        else:
            self.row_bound_ = float(np.linalg.norm(X, axis=1).max()) or 1.0
            warnings.warn(
                "data_norm and bounds were not given, so the largest row norm was computed from the "
                "data; this leaks privacy outside the guarantee. Declare data_norm= or bounds= "
                "from domain knowledge.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
        self._warn_repeated_fit(X, y, epsilon)
        labels = np.where(y == self.classes_[1], 1.0, -1.0)
        result = fit_linear(
            method,
            self._loss,
            self._design(X),
            labels,
            epsilon=epsilon,
            delta=delta,
            regularization=float(self.regularization),
            rng=as_generator(self.random_state),
            params=dict(self.method_params or {}),
        )
        w = np.asarray(result.x, dtype=float)
        if self.fit_intercept:
            self.coef_ = (w[:-1] / (math.sqrt(2.0) * self.row_bound_))[None, :]
            self.intercept_ = np.array([w[-1] / math.sqrt(2.0)])
        else:
            self.coef_ = (w / self.row_bound_)[None, :]
            self.intercept_ = np.zeros(1)
        self.method_ = method
        self.result_ = result
        self.privacy_spent_ = {
            "epsilon": float(result.privacy.epsilon),
            "delta": float(result.privacy.delta),
            "notion": result.privacy.notion,
            "relation": result.relation,
            "guarantee": result.guarantee,
        }
        self.privacy_events_ = list(result.events)
        self.n_iter_ = int(result.nit)
        return self

    def _warn_repeated_fit(self, X, y, epsilon) -> None:
        key = _fingerprint(X, y)
        history = _FIT_HISTORY.setdefault(key, [])
        history.append(epsilon)
        if _called_from_model_selection():
            warnings.warn(
                "this private estimator is being fitted by scikit-learn model selection: every fit "
                "spends its own budget on overlapping data, so the total privacy cost grows with the "
                "number of fits. Use a private hyper-parameter selection method instead.",
                PrivacyBudgetWarning,
                stacklevel=3,
            )
        elif len(history) > 1:
            warnings.warn(
                f"these data have now been used by {len(history)} private fits in this process; by "
                f"sequential composition the total cost is up to epsilon={sum(history):.4g}.",
                PrivacyBudgetWarning,
                stacklevel=3,
            )

    def decision_function(self, X):
        """Signed distance xᵀw + b, on rows clipped to the fitted bounds (positive: ``classes_[1]``)."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self._clip(X) @ self.coef_[0] + self.intercept_[0]

    def predict(self, X):
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        return tags


class DPLogisticRegression(_DPLinearClassifier):
    """Differentially private logistic regression.

    Parameters
    ----------
    epsilon, delta:
        The privacy budget of one fit.  ``delta=0`` asks for pure ε-DP (methods
        of the accelerated family and ``"outpert"``); the line-search family
        and DP-SGD/DP-AGD/objective perturbation need ``delta > 0``.
    method:
        ``"auto"`` (``"dp-blsgd"`` when ``delta > 0``, else ``"outpert"``) or one
        of ``dp-gd, dp-hb, dp-nag, dp-nag-opt, dp-masg, dp-masg-opt`` (kuru2022,
        pure ε-DP, replace-one), ``dp-blsgd, dp-blgd, dp-blsgd-ac`` (chen2020),
        ``dp-sgd, dp-agd, objpert, outpert`` (baselines).
    data_norm:
        Declared bound on the L2 norm of a feature row; rows are clipped to it.
    bounds:
        Declared ``(lower, upper)`` per feature (scalars broadcast); values are
        clipped into the box.  Used for the row bound when ``data_norm`` is None.
    regularization:
        μ of the (μ/2)‖w‖² penalty (chen2020 §5.1 uses 0.001).
    fit_intercept:
        Learn an intercept (an extra constant feature inside the norm bound).
    method_params:
        Extra keyword arguments for the optimizer (e.g. ``{"iterations": 200}``
        for the accelerated methods); see the method's documentation.
    random_state:
        Seed or ``numpy.random.Generator`` for the privacy noise; ``None`` draws
        from OS entropy (recommended for a real release).

    Attributes
    ----------
    coef_, intercept_, classes_:
        As in scikit-learn.
    privacy_spent_:
        ``{"epsilon", "delta", "notion", "relation", "guarantee"}`` of the fit.
    privacy_events_:
        The event log; any dpopt accountant re-run over it gives ``privacy_spent_``.
    result_:
        The optimizer's :class:`~dpopt.result.DPResult`.
    """

    _loss = "logistic"

    def predict_proba(self, X):
        """Estimated P(y = classes_[0]), P(y = classes_[1]) from the logistic model."""
        z = self.decision_function(X)
        p1 = 0.5 * (1.0 + np.tanh(0.5 * z))
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X):
        z = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])


class DPHuberSVC(_DPLinearClassifier):
    """Differentially private linear SVM with the Huberized hinge loss (h = 0.5, chen2020 §5.3).

    Same parameters and attributes as :class:`DPLogisticRegression`; it has no
    ``predict_proba`` (the hinge loss does not model probabilities).
    """

    _loss = "huberized_hinge"
