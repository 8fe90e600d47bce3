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

More than two classes are fitted one-vs-rest: K binary problems on the same
rows, each with (ε/K, δ/K), so that by sequential composition the whole fit
is (ε, δ)-DP (the record reports the tighter of that and the accountant's
composition of all K event logs).

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
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import as_generator, check_delta, check_nonnegative, check_positive
from ..privacy import RDPAccountant, ZCDPAccountant
from ._dispatch import METHODS, fit_linear, needs_delta

__all__ = [
    "DPLogisticRegression",
    "DPHuberSVC",
    "PrivacyLeakWarning",
    "PrivacyBudgetWarning",
    "SKLEARN_DP_EXCEPTIONS",
]

#: scikit-learn estimator checks (``sklearn.utils.estimator_checks``) whose literal demand
#: contradicts differential privacy, with the reason and how the estimators declare it.  Every
#: other check of ``check_estimator`` passes (tests/estimators/test_sklearn_contract.py).
SKLEARN_DP_EXCEPTIONS = {
    "check_classifiers_train": (
        "asserts training accuracy > 0.83 on about 100 rows; the privacy noise at epsilon ~ 1 is of the "
        "order of the signal at that size. Declared by tags.classifier_tags.poor_score = True, which skips "
        "only that assertion (every shape and consistency assertion of the check still runs); at "
        "epsilon = 1e5 the accuracy assertion passes too."
    ),
    "check_pipeline_consistency": (
        "with random_state=None every fit draws fresh noise from OS entropy, as a real release must (a "
        "known seed makes the noise predictable and voids the guarantee), so two fits differ. Declared by "
        "tags.non_deterministic = True when random_state is None; with a seed the check runs and passes."
    ),
    "check_methods_sample_order_invariance": (
        "skipped by scikit-learn for non-deterministic estimators (random_state=None, see "
        "check_pipeline_consistency); with a seed it runs and passes."
    ),
    "check_methods_subset_invariance": (
        "skipped by scikit-learn for non-deterministic estimators (random_state=None, see "
        "check_pipeline_consistency); with a seed it runs and passes."
    ),
    "check_sample_weight_equivalence_on_dense_data": (
        "not run: fit takes no sample_weight. A weight w multiplies one record's influence by w, so the "
        "sensitivity, hence the noise, would have to grow with the largest weight; private weighted fits "
        "need declared weight bounds, which these estimators do not offer."
    ),
}


class PrivacyLeakWarning(UserWarning):
    """A quantity was computed from the private data outside the privacy guarantee."""


class PrivacyBudgetWarning(UserWarning):
    """The same data were used by several private fits: their budgets add up."""


# Fingerprints of data sets fitted in this process, with the ε spent on each.
_FIT_HISTORY: dict[str, list[float]] = {}


def _fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """A hash of (X, y); labels of any dtype (strings, objects) are hashed through their class codes."""
    classes, codes = np.unique(y, return_inverse=True)
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(X).view(np.uint8))
    h.update(np.ascontiguousarray(codes, dtype=np.int64).view(np.uint8))
    h.update(repr(classes.tolist()).encode())
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
            # Pure ε-DP: dp-nag-opt has an exact guarantee (objpert's holds for the exact
            # minimizer only) and the best mean test accuracy on Adult over 30k/1k rows,
            # ε = 0.1/1 and both losses (0.76 against objpert 0.69 and outpert 0.57, which
            # falls below the majority class at 1k rows); at ε = 3-10 on 30k rows all three
            # reach 0.81-0.83.
            return "dp-blsgd" if self.delta > 0 else "dp-nag-opt"
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
        """Fit privately; spends (``epsilon``, ``delta``) on (X, y) in total, whatever the number of classes."""
        method, epsilon, delta = self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 classes in y, got one class {self.classes_.tolist()}"
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
        # Binary: one problem, classes_[1] positive.  K > 2: one-vs-rest, each with (ε/K, δ/K).
        positives = self.classes_[1:] if len(self.classes_) == 2 else self.classes_
        share = len(positives)
        Z = self._design(X)
        rng = as_generator(self.random_state)
        results = [
            fit_linear(
                method,
                self._loss,
                Z,
                np.where(y == positive, 1.0, -1.0),
                epsilon=epsilon / share,
                delta=delta / share,
                regularization=float(self.regularization),
                rng=rng,
                params=dict(self.method_params or {}),
            )
            for positive in positives
        ]
        W = np.stack([np.asarray(r.x, dtype=float) for r in results])
        if self.fit_intercept:
            self.coef_ = W[:, :-1] / (math.sqrt(2.0) * self.row_bound_)
            self.intercept_ = W[:, -1] / math.sqrt(2.0)
        else:
            self.coef_ = W / self.row_bound_
            self.intercept_ = np.zeros(len(results))
        self.method_ = method
        self.results_ = results
        self.result_ = results[0] if share == 1 else None
        self.privacy_spent_, self.privacy_events_ = _compose_records(results)
        self.n_iter_ = max(int(r.nit) for r in results)
        return self

    def privacy_record(self) -> dict:
        """JSON-ready privacy record of the fit: ``privacy_spent_`` plus the method and the event log."""
        check_is_fitted(self)
        return {
            "method": self.method_,
            **self.privacy_spent_,
            "events": [e.to_dict() for e in self.privacy_events_],
        }

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
        """xᵀw + b on rows clipped to the fitted bounds: shape (n,) for two classes (positive:
        ``classes_[1]``), (n, K) one-vs-rest scores for K > 2."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        scores = self._clip(X) @ self.coef_.T + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X):
        scores = self.decision_function(X)
        index = (scores > 0).astype(int) if scores.ndim == 1 else np.argmax(scores, axis=1)
        return self.classes_[index]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        # Privacy noise costs accuracy on the small data sets of scikit-learn's checks.
        tags.classifier_tags.poor_score = True
        return tags


def _compose_records(results) -> tuple[dict, list]:
    """The privacy record of one fit made of the runs ``results`` on the same data.

    One run: its own record.  K one-vs-rest runs (each calibrated to (ε/K, δ/K)):
    basic sequential composition gives (Σε_k, Σδ_k); for RDP/zCDP runs the
    accountant's composition of all event logs at δ = Σδ_k is usually tighter
    and is reported when it is (``composition`` says which one holds).
    """
    events = [e for r in results for e in r.events]
    first = results[0]
    record = {
        "epsilon": float(first.privacy.epsilon),
        "delta": float(first.privacy.delta),
        "notion": first.privacy.notion,
        "relation": first.relation,
        "guarantee": first.guarantee,
    }
    if len(results) == 1:
        return record, events
    notions = {r.privacy.notion for r in results}
    relations = {r.relation for r in results}
    if len(notions) != 1 or len(relations) != 1:  # pragma: no cover - one method gives one notion
        raise RuntimeError(f"one-vs-rest runs disagree on notion {notions} or relation {relations}")
    eps_sum = float(sum(r.privacy.epsilon for r in results))
    delta_sum = float(sum(r.privacy.delta for r in results))
    record.update(epsilon=eps_sum, delta=delta_sum, composition="basic")
    if first.privacy.notion in ("rdp", "zcdp") and delta_sum > 0:
        accountant = RDPAccountant() if first.privacy.notion == "rdp" else ZCDPAccountant()
        for e in events:
            accountant.compose(e)
        replayed = float(accountant.get_epsilon(delta_sum))
        if replayed < eps_sum:
            record.update(epsilon=replayed, composition=first.privacy.notion)
    guarantees = {r.guarantee for r in results}
    if len(guarantees) > 1:  # the weakest kind holds for the whole fit
        record["guarantee"] = next(g for g in ("none", "approximate", "conditional", "exact") if g in guarantees)
    return record, events


class DPLogisticRegression(_DPLinearClassifier):
    """Differentially private logistic regression.

    Parameters
    ----------
    epsilon, delta:
        The privacy budget of one fit (of all K one-vs-rest problems together
        when there are K > 2 classes).  ``delta=0`` asks for pure ε-DP (methods
        of the accelerated family, ``"objpert"`` and ``"outpert"``); the
        line-search family and DP-SGD/DP-AGD need ``delta > 0``.
    method:
        ``"auto"`` (``"dp-blsgd"`` when ``delta > 0``, else ``"dp-nag-opt"``) or one
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
        As in scikit-learn: ``coef_`` is (1, d) for two classes, (K, d) one-vs-rest for K > 2.
    privacy_spent_:
        ``{"epsilon", "delta", "notion", "relation", "guarantee"}`` of the fit (K > 2:
        plus ``"composition"``, ``"basic"`` or the accountant that composed the K runs).
    privacy_events_:
        The event log; the accountant of ``notion`` re-run over it gives ``privacy_spent_``
        (except where ``composition == "basic"``, whose ε is the sum over the K runs).
    result_, results_:
        The optimizer's :class:`~dpopt.result.DPResult` (``result_`` is None for K > 2), and
        the list of one result per one-vs-rest problem.

    Methods :meth:`privacy_record` (JSON-ready record with the event log) and the
    scikit-learn ones; :mod:`dpopt.estimators.persist` saves a fitted estimator as JSON.
    """

    _loss = "logistic"

    def predict_proba(self, X):
        """P(y = k) per class: σ(z) and 1 − σ(z) for two classes; for K > 2 the one-vs-rest
        probabilities σ(z_k) normalized to sum to one (as scikit-learn's one-vs-rest)."""
        z = self.decision_function(X)
        if z.ndim == 1:
            return np.column_stack([expit(-z), expit(z)])
        p = expit(z)
        total = p.sum(axis=1, keepdims=True)
        return np.divide(p, total, out=np.full_like(p, 1.0 / p.shape[1]), where=total > 0)

    def predict_log_proba(self, X):
        z = self.decision_function(X)
        if z.ndim == 1:
            return np.column_stack([-np.logaddexp(0.0, z), -np.logaddexp(0.0, -z)])
        return np.log(self.predict_proba(X))


class DPHuberSVC(_DPLinearClassifier):
    """Differentially private linear SVM with the Huberized hinge loss (h = 0.5, chen2020 §5.3).

    Same parameters and attributes as :class:`DPLogisticRegression`; it has no
    ``predict_proba`` (the hinge loss does not model probabilities).
    """

    _loss = "huberized_hinge"
