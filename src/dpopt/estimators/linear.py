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

The label set is never learned silently either.  Declare ``classes=`` (the
labels that can occur; a label outside them is refused): the shapes of
``coef_`` and ``classes_`` and the budget split then do not depend on the
data.  Without it the set is read from the data, with a
:class:`PrivacyLeakWarning`, and listed in ``disclosed_``: one record with a
new label would change the number of one-vs-rest problems and the shape of
the model, which no noise covers.

More than two classes are fitted one-vs-rest: K binary problems on the same
rows, each on a child budget of (ε/K, δ/K) of the fit's ledger, so that the
ledger's event log is the composed record of the whole fit.

Budgets outlive a fit when asked: pass ``ledger=`` (a
:class:`~dpopt.privacy.Ledger`, shared by as many fits and estimators as you
like, also by the clones scikit-learn's model selection makes) and every fit
spends from it, is refused before any noise is drawn when it would overspend
it, and spends nothing when it raises (:mod:`._budget`).  Without a ledger
each fit spends its own (ε, δ).

What a fit releases: ``coef_``, ``intercept_``, ``classes_`` and the privacy
record (``privacy_spent_``, ``privacy_events_``, ``disclosed_``).  The
optimizer's exact objective values, trajectories and solver statistics are in
``diagnostics_``, labelled non-private (:class:`~dpopt.result.Diagnostics`),
and never saved with the model (neither in a JSON model file nor in a pickle).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    as_generator,
    check_bool,
    check_choice,
    check_delta,
    check_iterations,
    check_nonnegative,
    check_positive,
)
from ..datasets.base import PrivacyLeakWarning
from ..objectives import get_loss
from ..oracles import smallest_affordable_scale
from ..privacy import equal_share
from ..privacy import events as ev
from ..privacy.calibration import RUN_ACCOUNTANTS
from ..result import Diagnostics
from ._auto import (
    COUNT_SHARE,
    OBJPERT_INTERCEPT,
    dpsgd_plan,
    dpsgd_regularization,
    objpert_regularization,
    outpert_regularization,
)
from ._auto import choose as choose_auto
from ._budget import open_fit
from ._dispatch import (
    ACCELERATED,
    METHODS,
    REGULARIZATION_MAX,
    ROW_BOUND_RANGE,
    SECURE,
    auto_params,
    check_epsilon,
    check_filter_budget,
    check_in,
    check_method_params,
    check_run_ledger,
    check_secure_noise,
    fit_linear,
    needs_delta,
    notion_of,
    relation_of,
)

__all__ = [
    "DPLogisticRegression",
    "DPHuberSVC",
    "PrivacyLeakWarning",
    "UtilityWarning",
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


#: The methods' run lengths in ``method_params`` (the accelerated methods' iterations, DP-SGD's steps, the
#: line searches' planned iterations), each at most :data:`dpopt._validation.MAX_ITERATIONS`: 10**9 ran silently
#: until killed (its event log alone would need ~1 TB).
_RUN_LENGTHS = ("iterations", "steps", "planned_iterations")

#: Options of a family's entry point that are not hyper-parameters of one private fit, refused in ``method_params``:
#: ``repetitions=R`` (accelerated) runs R independent fits on the data and returns all of them, charged as one (its
#: ledger describes each repetition, for experiments); ``private=False`` fits without noise.
_NOT_HYPERPARAMETERS = ("repetitions", "private")

#: The name the row-bound range check gives (``ROW_BOUND_RANGE``).
_ROW_BOUND = "the row bound (data_norm, or that of bounds or the data)"


class UtilityWarning(UserWarning):
    """The budget is too small for the fit to learn much at this data size (the numbers say how small)."""


def _row_norms(X: np.ndarray) -> np.ndarray:
    """‖x‖₂ of every row without overflow for entries up to the largest float (max|x|·‖x/max|x|‖); a norm
    beyond the float range is inf (above any bound) without a warning, which one record would raise alone."""
    peak = np.max(np.abs(X), axis=-1)
    safe = np.where(peak > 0, peak, 1.0)
    with np.errstate(over="ignore"):
        return peak * np.linalg.norm(X / safe[..., None], axis=-1)


def _row_bound_of_box(lower: np.ndarray, upper: np.ndarray) -> float:
    bound = float(_row_norms(np.maximum(np.abs(lower), np.abs(upper))))
    if not math.isfinite(bound):
        raise ValueError("bounds are too large: the box's largest row norm overflows; use smaller units")
    return bound


def _without_seed(state: dict, fitted: str) -> dict:
    """A copy of a private estimator's pickled ``state`` (``object.__getstate__`` returns the live ``__dict__``)
    whose ``random_state`` is None once the attribute ``fitted`` is set: a fitted estimator's seed lets anyone
    holding D and D' refit both and match the released model exactly.  Unfitted, it keeps its seed (joblib
    ships seeded clones to its workers)."""
    state = dict(state)
    if fitted in state:
        state["random_state"] = None
    return state


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
        regularization=None,
        fit_intercept=True,
        method_params=None,
        random_state=None,
        classes=None,
        ledger=None,
        accountant=None,
        secure_noise=False,
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
        self.classes = classes
        self.ledger = ledger
        self.accountant = accountant
        self.secure_noise = secure_noise

    def __sklearn_clone__(self):
        """A clone shares the ``ledger`` (a budget, not a parameter to copy); other parameters are cloned."""
        params = self.get_params(deep=False)
        return type(self)(**{k: v if k == "ledger" else clone(v, safe=False) for k, v in params.items()})

    # -- parameters -----------------------------------------------------------
    def _resolved_method(self) -> str:
        if self.method == "auto":
            return "auto"  # chosen in fit from the measured table (see _auto)
        if self.method not in METHODS:
            raise ValueError(f"method must be 'auto' or one of {list(METHODS)}, got {self.method!r}")
        return self.method

    def _check_params(self) -> tuple[str, float, float]:
        epsilon = check_epsilon("epsilon", self.epsilon)
        delta = check_delta("delta", self.delta)
        if self.regularization is not None:
            mu = check_nonnegative("regularization", self.regularization)
            check_in("regularization", mu, 0.0, REGULARIZATION_MAX)
        if self.data_norm is not None:  # as fit checks the row bound, but with no data (DPBayesSearchCV's candidates)
            check_in(_ROW_BOUND, check_positive("data_norm", self.data_norm), *ROW_BOUND_RANGE)
        check_choice("accountant", "auto" if self.accountant is None else self.accountant, RUN_ACCOUNTANTS)
        check_bool("fit_intercept", self.fit_intercept)
        check_bool("secure_noise", self.secure_noise)
        if self.method_params is not None and not isinstance(self.method_params, Mapping):
            raise TypeError(f"method_params must be a dict of the method's hyper-parameters or None, got "
                            f"{type(self.method_params).__name__}")  # fmt: skip
        for key in _NOT_HYPERPARAMETERS:
            if key in (self.method_params or {}):
                raise ValueError(f"method_params[{key!r}] is not a hyper-parameter of one private fit (it would "
                                 "release more than the fit's record covers); leave it out")
        for key in _RUN_LENGTHS:  # before anything is spent (an (ε, δ) fit releases a count first)
            if key in (self.method_params or {}):
                check_iterations(f"method_params[{key!r}]", self.method_params[key])
        method = self._resolved_method()
        if _add_remove(method, delta):  # before the record count is released (fit)
            check_method_params(method, self.method_params or {})
        mu = (self.method_params or {}).get("mu", self.regularization)
        if method in ACCELERATED and mu is not None and mu == 0.0:  # fit would refuse it, after a search had spent
            raise ValueError(f"method {method!r} needs regularization > 0 (its strong convexity mu, kuru2022), got 0")
        if method != "auto" and needs_delta(method) and delta == 0.0:
            raise ValueError(f"method {method!r} gives (epsilon, delta)-DP: set delta > 0 (e.g. 1e-6)")
        if self.secure_noise:
            if method == "auto" and delta == 0.0:
                raise ValueError(
                    "secure_noise=True with method='auto' needs delta > 0: at delta = 0 auto fits objective "
                    "perturbation, whose proof needs a continuous noise density; set delta > 0 or name a method "
                    f"of {list(SECURE)}"
                )
            if method != "auto":
                check_secure_noise(method)
        return method, epsilon, delta

    def _guarantee_relation(self) -> str:
        """The neighbouring relation of every fit's guarantee, from the parameters alone (as :meth:`fit` picks
        it: add/remove where the fit releases its record count, else the method's; ``"auto"`` at δ = 0 fits
        one of the pure replace-one methods)."""
        method, _, delta = self._check_params()
        if _add_remove(method, delta):
            return "add_remove"
        return "replace_one" if method == "auto" else relation_of(method)

    def _box(self, d: int):
        if self.bounds is None:
            return None
        try:
            lower, upper = self.bounds
        except (TypeError, ValueError) as exc:
            raise ValueError("bounds must be a pair (lower, upper) of scalars or per-feature arrays") from exc
        try:
            lower = np.broadcast_to(np.asarray(lower, dtype=float), (d,))
            upper = np.broadcast_to(np.asarray(upper, dtype=float), (d,))
        except ValueError:
            raise ValueError(f"bounds must be scalars or arrays of length {d} (the number of features)") from None
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper)) and np.all(lower < upper)):
            raise ValueError("bounds must be finite with lower < upper for every feature")
        return lower, upper

    # -- preprocessing (a per-record map: no privacy cost) -------------------------------
    def _clip(self, X: np.ndarray) -> np.ndarray:
        if self._box_ is not None:
            X = np.clip(X, *self._box_)
        norms = _row_norms(X)
        over = norms > self.row_bound_
        scale = np.ones_like(norms)
        scale[over] = self.row_bound_ / norms[over]
        return X * scale[:, None]

    def _design(self, X: np.ndarray, intercept: float = 1.0) -> np.ndarray:
        """Rows of ‖·‖₂ ≤ 1: [x/B, a]/√(1 + a²) with an intercept column of value a, x/B without."""
        Z = self._clip(X) / self.row_bound_
        if self.fit_intercept:
            Z = np.hstack([Z, np.full((Z.shape[0], 1), intercept)]) / math.hypot(1.0, intercept)
        return Z

    def _label_set(self, y: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """``classes_`` and the disclosures it makes: declared (labels outside refused) or read from ``y``."""
        if self.classes is None:
            classes = np.unique(y)
            if len(classes) < 2:
                raise ValueError(
                    f"{type(self).__name__} needs at least 2 classes in y, got one class {classes.tolist()}"
                )
            warnings.warn(
                "classes was not given, so the label set was read from the data; one record with a new label "
                "changes the model's shape, which no noise covers. Declare classes= (every label that can occur).",
                PrivacyLeakWarning,
                stacklevel=3,
            )
            return classes, [f"the label set {classes.tolist()} was read from the data (classes= not declared)"]
        try:
            declared = np.asarray(self.classes)
        except (TypeError, ValueError):
            declared = None
        if declared is None or declared.ndim != 1 or len(np.unique(declared)) != declared.size or declared.size < 2:
            raise ValueError("classes must be a list of at least 2 distinct labels (every label that can occur)")
        classes = np.unique(declared)
        try:
            outside = not np.all(np.isin(y, classes))
        except TypeError:
            outside = True
        if outside:
            raise ValueError(f"y has a label outside the declared classes {classes.tolist()}; declare every label")
        return classes, []

    def _check_data(self, X, y) -> int:
        """What :meth:`fit` refuses from the data's labels and feature count alone (targets that are not class
        labels, a label outside the declared classes, ``bounds`` of another length or too large), without
        fitting, changing this estimator or warning; returns the number of classes.
        :class:`~dpopt.estimators.DPBayesSearchCV` checks it before anything is spent (refused in the first
        fit, it came after the search had charged that fit)."""
        check_classification_targets(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a label set read from y is warned by the fit itself
            classes, _ = self._label_set(np.asarray(y))
        box = self._box(np.shape(X)[1])
        if self.data_norm is None and box is not None:
            check_in(_ROW_BOUND, _row_bound_of_box(*box), *ROW_BOUND_RANGE)
        return len(classes)

    def _row_bound(self, X: np.ndarray) -> list[str]:
        """Set ``row_bound_`` (declared, or the data's largest row norm with a warning); return disclosures."""
        if self.data_norm is not None:
            self.row_bound_ = check_positive("data_norm", self.data_norm)
            return []
        if self._box_ is not None:
            self.row_bound_ = _row_bound_of_box(*self._box_)
            return []
        self.row_bound_ = float(_row_norms(X).max()) or 1.0
        if not math.isfinite(self.row_bound_):
            raise ValueError("X has a row whose norm overflows; declare data_norm= or bounds= to clip it")
        warnings.warn(
            "data_norm and bounds were not given, so the largest row norm was computed from the "
            "data; this leaks privacy outside the guarantee. Declare data_norm= or bounds= "
            "from domain knowledge.",
            PrivacyLeakWarning,
            stacklevel=3,
        )
        return [f"the largest row norm ({self.row_bound_:.6g}) was read from the data (data_norm= not declared)"]

    # -- fit / predict -------------------------------------------------------------
    def fit(self, X, y):
        """Fit privately; spends (``epsilon``, ``delta``) on (X, y) in total, whatever the number of classes.

        With ``ledger=``, the fit is refused (``BudgetExceededError``) before any noise is drawn when
        it would overspend the ledger, and a fit that raises spends nothing.
        """
        method, epsilon, delta = self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, disclosed = self._label_set(y)
        self._box_ = self._box(X.shape[1])
        disclosed += self._row_bound(X)
        check_in(_ROW_BOUND, self.row_bound_, *ROW_BOUND_RANGE)
        # Binary: one problem, classes[1] positive.  K > 2: one-vs-rest, each on a child budget (ε/K, δ/K).
        positives = classes[1:] if len(classes) == 2 else classes
        parts = len(positives)
        Z = self._design(X)
        rng = as_generator(self.random_state, "random_state")
        params = dict(self.method_params or {})
        if _add_remove(method, delta):
            # n is private under add/remove: every size-dependent choice reads a released count.
            # (the count's ledger is the named method's, or RDP's when auto has not chosen yet)
            named = self.method if self.method != "auto" else "dp-blsgd"
            check_method_params(method, params, dim=Z.shape[1])  # w0 against the design, before the count
            counted_share = 1.0 if params.get("n_public") is not None else 1.0 - COUNT_SHARE
            check_filter_budget(method, epsilon, delta, epsilon * counted_share / parts, delta / parts,
                                params.get("orders"))
            budget = open_fit(self.ledger, epsilon, delta, notion=notion_of(named, delta, self.accountant),
                              relation="add_remove")
            check_run_ledger(method, self.ledger, params)  # (after the ledger's own checks, before the count)
            count = self._public_count(budget, Z.shape[0], params, rng)
            size = count["count"]
            method, regularization, warning = self._plan(method, (size, Z.shape[1]), budget.epsilon / parts,
                                                         delta / parts)
            if self.method == "auto":  # the entries the chosen method takes (checked for each before the count)
                params = auto_params(method, params)
            if needs_delta(method):  # the released count is the method's public normalizer too
                params.setdefault("n_public", max(1, round(size)))
            if method == "dp-sgd":  # its measured plan (rate, steps) follows the count and ε
                params = {**dpsgd_plan(size, Z.shape[1], budget.epsilon / parts, regularization), **params}
        else:  # replace-one: n is public
            method, regularization, warning = self._plan(method, Z.shape, epsilon / parts, delta / parts)
            # the ledger's checks first: a ledger of another relation (add/remove, where n is private) or
            # too small a budget is refused before the warning, which states n, says anything
            budget = open_fit(self.ledger, epsilon, delta, notion=notion_of(method, delta, self.accountant),
                              relation=relation_of(method))
            count = None
        # Under replace-one the warning states n (public) and comes before anything is spent; under add/remove
        # it states the released count N̂, so it comes after the commit that charges N̂: a warning raised as an
        # error before it would have shown N̂ with nothing charged
        counted = count is not None and count["source"] == "laplace"
        if warning and not counted:
            warnings.warn(warning, UtilityWarning, stacklevel=2)
        intercept = OBJPERT_INTERCEPT if method == "objpert" else 1.0
        if intercept != 1.0:
            Z = self._design(X, intercept)
        if method == "majority" and self.method == "auto":  # method_params are the learned method's
            params = {}
        results = []
        for positive in positives:
            share = budget.share(parts)
            results.append(fit_linear(
                method,
                self._loss,
                Z,
                np.where(y == positive, 1.0, -1.0),
                epsilon=_pure_share(method, share),
                delta=equal_share(budget.delta, parts),
                regularization=regularization,
                rng=rng,
                params=params,
                ledger=share,
                accountant=self.accountant,
                secure_noise=bool(self.secure_noise),
            ))
        if any(r.info.get("L_source") == "data" for r in results):  # method_params={"L": None}, the paper's way
            warnings.warn(
                "method_params L=None: the smoothness constant L that sets the step sizes was computed from the "
                "data (kuru2022 §5), outside the guarantee (a conditional one); leave L unset for the public bound.",
                PrivacyLeakWarning,
                stacklevel=2,
            )  # (before commit: under warnings-as-errors the fit raises and spends nothing)
            disclosed.append("the smoothness constant L of the step sizes was computed from the data (method_params "
                             "L=None)")
        budget.commit()
        if warning and counted:
            warnings.warn(warning, UtilityWarning, stacklevel=2)
        W = np.stack([np.asarray(r.x, dtype=float) for r in results])
        self.classes_ = classes
        if self.fit_intercept:
            self.coef_ = W[:, :-1] / (math.hypot(1.0, intercept) * self.row_bound_)
            self.intercept_ = W[:, -1] * intercept / math.hypot(1.0, intercept)
        else:
            self.coef_ = W / self.row_bound_
            self.intercept_ = np.zeros(len(results))
        if method == "majority":  # a constant predictor: the privately chosen label's sign
            self.intercept_ = np.array([float(r.info["constant_label"]) for r in results])
        self.method_ = method
        self.count_ = count  # (set once the fit is charged: a fit that raises leaves no released count behind)
        spent = budget.ledger.spent()
        self.privacy_spent_ = {
            "epsilon": float(spent.epsilon),
            "delta": float(spent.delta),
            "notion": spent.notion,
            "relation": budget.ledger.relation,
            "guarantee": _weakest({r.guarantee for r in results}),
        }
        self.privacy_events_ = budget.ledger.events
        self.disclosed_ = disclosed
        self.diagnostics_ = Diagnostics(
            problems=[{"positive": p, **r.diagnostics} for p, r in zip(positives, results, strict=True)]
        )
        return self

    def _public_count(self, budget, n_records: int, params: dict, rng) -> dict:
        """The record count an add/remove fit may read (``count_`` once the fit succeeds): the declared
        ``n_public`` of ``method_params``, else N̂ released from the fit's budget (:data:`._auto.COUNT_SHARE`
        of ε, Laplace)."""
        if params.get("n_public") is not None:
            return {"count": float(params["n_public"]), "source": "declared", "epsilon": 0.0}
        share = budget.epsilon * COUNT_SHARE
        released = budget.release_count(n_records, COUNT_SHARE, rng, secure_noise=bool(self.secure_noise))
        return {"count": released.count, "source": "laplace", "epsilon": share}

    def _plan(self, method: str, shape: tuple[float, int], epsilon: float, delta: float):
        """(method, regularization, warning) of one binary problem on the (n, d) design.

        ``method="auto"`` follows the measured table of :mod:`._auto` (``warning``: the
        :class:`UtilityWarning` text when the budget is too small to learn at this n — for a method the user
        named too, by :meth:`._auto.AutoChoice.warning_for` —, else None;
        fit issues it once the ledger has accepted the fit); an unset ``regularization`` is the table's
        rule (:func:`_default_regularization`).  n is the data's own count under the
        replace-one relation of the pure methods (public there), the released or declared
        count (``count_``) under add/remove; DP-AGD's (add/remove, no count released) decides nothing
        shown: no warning, its μ is 1e-3.
        """
        n, d = shape
        regularization, warning = self.regularization, None
        curvature = get_loss(self._loss).curvature_bound  # ℓ'' ≤ c: objective perturbation's Jacobian term
        choice = choose_auto(n, d, epsilon, delta, curvature)
        if method == "auto":
            method, warning = choice.method, choice.warning
            if regularization is None:
                regularization = choice.regularization
        elif relation_of(method) == "replace_one" or _add_remove(method, delta):
            # a method the user named: the same numbers when the table would not have tried to learn, where
            # n is public or the released count (DP-AGD's n is private under add/remove: it releases its own)
            warning = choice.warning_for(method)
        if regularization is None:
            noise = (self.method_params or {}).get("noise", "auto")
            gaussian = noise == "gaussian" or (noise == "auto" and delta > 0)
            regularization = _default_regularization(method, n, d, epsilon, gaussian=gaussian, curvature=curvature)
        return method, float(regularization), warning

    def privacy_record(self) -> dict:
        """JSON-ready privacy record of the fit: ``privacy_spent_``, the method, the event log and ``disclosed``."""
        check_is_fitted(self)
        return {
            "method": self.method_,
            **self.privacy_spent_,
            "events": [e.to_dict() for e in self.privacy_events_],
            "disclosed": list(self.disclosed_),
            **({"count": dict(self.count_)} if getattr(self, "count_", None) else {}),
        }

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

    def __getstate__(self):
        """The pickled state (``pickle``, ``joblib.dump``, ``copy``) leaves ``diagnostics_`` empty: a pickle
        is how scikit-learn models are saved and shared, and the diagnostics are exact statistics of the
        training data outside the guarantee (the objective value, the solver's iterations and gradient
        norm), left out of a JSON model file alike (:mod:`.persist`).  A fitted estimator's ``random_state``
        (the seed or generator of its privacy noise) is None there too, as in a JSON model file: with it,
        anyone holding D and D' refits both and matches the released coefficients exactly.  An unfitted
        estimator keeps it (joblib ships seeded clones to its workers)."""
        state = _without_seed(super().__getstate__(), "coef_")
        if "diagnostics_" in state:
            state["diagnostics_"] = Diagnostics()
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        # Privacy noise costs accuracy on the small data sets of scikit-learn's checks.
        tags.classifier_tags.poor_score = True
        return tags


def _add_remove(method: str, delta: float) -> bool:
    """Whether the fit runs under add/remove-one with RDP or PLD accounting, where n is private and
    the estimator releases a count first (a pure ε_c release composes with an (ε − ε_c, δ) run into
    (ε, δ) under both).  DP-AGD (zCDP) keeps its own normalizer: under zCDP a pure count does not
    split off an (ε, δ) budget by basic composition."""
    if method == "auto":
        return delta > 0
    return needs_delta(method) and method != "dp-agd"


def _pure_share(method: str, share) -> float:
    """The ε one sub-problem plans with: its share's ε; for the private majority inside an (ε, δ)
    fit (auto below the table's threshold), the largest ε of the exponential mechanism that the
    share and the fit's ledger (which already holds the count) accept — their RDP bound of a pure
    event is slightly lossy, so a pure ε equal to the share would be refused."""
    if method != "majority" or share.notion == "pure":
        return share.epsilon
    return 1.0 / smallest_affordable_scale(share, lambda s: ev.Exponential(1.0 / s), start=1.0 / share.epsilon)


def _default_regularization(method: str, n: float, d: int, epsilon: float, *, gaussian: bool = False,
                            curvature: float) -> float:
    """μ when ``regularization=None``: the measured rules of :mod:`._auto` for n rows (the
    public or released count), d coefficients and budget ε (r = n·ε/d), 1e-3 (chen2020 §5.1) where
    no rule was measured.  ``gaussian``: output perturbation releases Gaussian noise (δ > 0), whose
    rule differs from the Laplace one; ``curvature``: the loss's bound on ℓ'' (objective perturbation)."""
    r = n * epsilon / d
    if method == "objpert":
        return objpert_regularization(n, d, epsilon, curvature)
    if method == "outpert":
        return outpert_regularization(r, gaussian=gaussian)
    if method == "dp-sgd":
        return dpsgd_regularization(r)
    return 1e-3


def _weakest(guarantees: set[str]) -> str:
    """The weakest kind of guarantee among the sub-problems' holds for the whole fit."""
    return next(g for g in ("none", "approximate", "conditional", "exact") if g in guarantees)


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
        ``"auto"`` (the measured table of :mod:`dpopt.estimators._auto`: when ``delta > 0``,
        with r = N̂·ε/d for the count N̂ released first with 2 % of ε, ``"dp-sgd"`` (its
        measured plan) where r ≥ 20, ``"dp-blsgd"`` where 10 ≤ r < 20, else the private
        majority class with a :class:`UtilityWarning`; when ``delta = 0``,
        ``"objpert"`` with regularization following n·ε/d, or the private majority class with
        a :class:`UtilityWarning` when n·ε/d² < 0.3) or one
        of ``dp-gd, dp-hb, dp-nag, dp-nag-opt, dp-masg, dp-masg-opt`` (kuru2022,
        pure ε-DP, replace-one), ``dp-blsgd, dp-blgd, dp-blsgd-ac`` (chen2020),
        ``dp-sgd, dp-agd, objpert, outpert`` (baselines).
    data_norm:
        Declared bound on the L2 norm of a feature row; rows are clipped to it.
    bounds:
        Declared ``(lower, upper)`` per feature (scalars broadcast); values are
        clipped into the box.  Used for the row bound when ``data_norm`` is None.
    regularization:
        μ of the (μ/2)‖w‖² penalty.  ``None`` (default): the measured rules of
        :mod:`dpopt.estimators._auto` — about 0.12·d/(n·ε), more where the Jacobian term of
        Chaudhuri et al.'s Algorithm 2 takes a large share of ε
        (:func:`~dpopt.estimators._auto.objpert_regularization`; times (300/r)^0.6 above
        r = n·ε/d = 300), clipped to [1e-5, 0.1] for objective perturbation,
        0.3·d/(n·ε) (Laplace noise, δ = 0) or 0.1·d/(n·ε) (Gaussian, δ > 0) clipped
        to [1e-3, 0.3] for output perturbation,
        0.01·d/(N̂·ε) clipped to [1e-5, 1e-3] for DP-SGD (N̂ the released
        count) — and 0.001 (chen2020 §5.1) for the other methods.
    fit_intercept:
        Learn an intercept (an extra constant feature inside the norm bound).
    method_params:
        Extra keyword arguments for the optimizer (e.g. ``{"iterations": 200}``
        for the accelerated methods); see the method's documentation.  ``repetitions`` and
        ``private`` (a family's switches for experiments) are refused.  Under add/remove
        (``delta > 0``: ``"auto"``, DP-SGD and the line searches) every entry is checked by the
        method before anything is spent (the count comes first); ``"auto"`` hands each entry to
        the method it chooses if that method takes it (DP-SGD's ``steps``, DP-BLSGD's
        ``planned_iterations``) and refuses one that none of them takes.
    random_state:
        Seed or ``numpy.random.Generator`` for the privacy noise; ``None`` draws
        from OS entropy (recommended for a real release).
    classes:
        The declared label set (every label that can occur).  A label outside it
        is refused.  ``None`` reads the set from the data, warns with
        :class:`PrivacyLeakWarning` and records it in ``disclosed_``.
    ledger:
        A :class:`~dpopt.privacy.Ledger` to spend from, shared across fits and
        estimators (and by scikit-learn clones); ``None`` gives each fit a fresh
        ledger of exactly (``epsilon``, ``delta``).  Its relation must be the
        method's (``"replace_one"`` for the accelerated methods, objpert and
        outpert; ``"add_remove"`` otherwise), and for ``"auto"`` at δ > 0, DP-SGD
        and the line searches its accountant (and its parents') ``"rdp"`` or
        ``"pld"`` (``"zcdp"`` takes DP-SGD at ``rate=1`` only), checked before
        the record count is released.
    accountant:
        How the methods that calibrate noise for (ε, δ) (``dp-sgd``, Gaussian
        ``outpert``) account: ``"rdp"``, ``"pld"`` or ``None``/``"auto"``, the
        tightest that applies (PLD, unless ``ledger`` checks by Rényi DP;
        :func:`~dpopt.privacy.calibration.run_accountant`).  The other methods
        keep their paper's notion.
    secure_noise:
        ``True`` releases the noisy gradients (``dp-sgd``, ``dp-blsgd``,
        ``dp-blgd``, ``dp-blsgd-ac``) or the noisy solution (Gaussian
        ``outpert``) on a power-of-two grid with exact discrete Gaussian noise
        from the OS CSPRNG, the line searches of ``dp-blsgd``/``dp-blgd``/
        ``dp-blsgd-ac`` on grid-rounded queries with exact discrete noise, and
        the accelerated methods' gradients with exact discrete Laplace noise
        at the same ε, so their low-order bits say nothing about the data
        (Mironov 2012); ``dp-agd`` releases discrete Gaussian gradients and exact
        NoisyMin choices, the private majority the exact exponential mechanism.
        ``objpert`` refuses it (its proof needs a continuous noise density), and so
        does ``method="auto"`` at ``delta=0``, where auto fits ``objpert``.

    Attributes
    ----------
    coef_, intercept_, classes_:
        As in scikit-learn: ``coef_`` is (1, d) for two classes, (K, d) one-vs-rest for K > 2.
    privacy_spent_:
        ``{"epsilon", "delta", "notion", "relation", "guarantee"}`` of the fit.
    privacy_events_:
        The fit's event log; the accountant of ``notion`` re-run over it gives ``privacy_spent_``.
    disclosed_:
        What the fit read from the data outside the guarantee (undeclared label set or row bound, or the
        smoothness constant L when ``method_params`` sets it to None).
    count_:
        Under add/remove-one (``delta > 0`` with ``"auto"`` and the RDP methods): the record count
        every size-dependent choice read, ``{"count", "source", "epsilon"}`` — released first by
        the Laplace mechanism with 2 % of ε (source ``"laplace"``, charged to the event log), or
        ``method_params["n_public"]`` (``"declared"``); it is the method's ``n_public`` too.
        ``None`` under replace-one, where n is public.
    diagnostics_:
        Per one-vs-rest problem, the optimizer's exact objective value, trajectory, iteration
        count and solver statistics: :class:`~dpopt.result.Diagnostics`, labelled non-private and
        never saved with the model (a JSON model file or a pickle: it is left empty there).

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
