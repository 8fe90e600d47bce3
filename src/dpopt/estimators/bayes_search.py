"""``DPBayesSearchCV``: private hyper-parameter tuning by Bayesian optimization (kusner2015).

The scikit-learn face of :func:`dpopt.bayesopt.optimize`, in the style of
:class:`~sklearn.model_selection.GridSearchCV`: the data are split once
(a seeded random split, or the ``cv=(train_index, validation_index)`` pair
given), GP-UCB fits the estimator on the training part for each candidate it
visits and scores it on the validation part, and the chosen hyper-parameters
(``best_params_``) and the best validation score (``best_score_``) are
released through the privacy mechanisms.

What is protected.
- The *validation* rows: by Algorithm 1 or 2 (a ``conditional`` guarantee:
  it holds only if the validation scores follow the multi-task GP with the
  stated ``k1``) or Algorithm 3 (``exact``, worst case; see below).
- The *training* rows only when the estimator is itself private (a dpopt
  estimator with ``epsilon``): each of its fits is charged to the same ledger,
  so the ledger's ε (and δ) composes every training run with the selection.  With a
  non-private estimator (any scikit-learn estimator) the training rows are
  not protected; ``privacy_["protects"]`` says so and a warning is issued.
- Which candidates GP-UCB visits depends on the validation rows, so nothing
  released may tell: a private estimator is fitted and charged at every one
  of the ``n_iter`` steps (a candidate visited again included), each fit
  there as one event whatever its candidate (its own events may depend on the
  hyper-parameters: DP-AGD's budget increases, the planned steps), and only
  the first step's fit (candidate 0, fixed before any score) and the refit
  may warn; the scoring never does.  A pure ε-DP estimator's fit is charged
  ``PureDP(ε)`` (a pure ledger; 2ε for an add/remove guarantee); an (ε, δ) estimator's (``delta > 0``: dp-blsgd,
  dp-sgd, dp-agd, ``DPMLPClassifier``, ...) runs on its own ledger of exactly
  (ε, δ) and is charged one ``ApproxDP`` stating its guarantee under the
  search's replace-one relation (:func:`_fit_event`: (2ε, (1 + e^ε)δ) for the
  add/remove methods, by group privacy), composed with the selection's pure
  ε by basic composition (an ``"approx"`` ledger, Dwork & Roth 2014
  Thm 3.16, which holds under adaptive choice).  A private estimator or
  Algorithm 3 refuses a NaN or infinite ``X`` before anything is spent, and a
  private estimator a candidate with invalid parameters.  The space may not
  tune a private estimator's budget (:data:`BUDGET_PARAMS`).
- The relation is replace-one (:data:`RELATION`): the seeded split is a
  function of the public row count.

``cv_results_`` lists the candidate set Λ (public: it depends on the space
and the seed only) and which candidate was released; the per-candidate
validation scores are not covered by the guarantee and are not exposed.

Algorithm 3 needs the paper's Assumption 2: each candidate's model is the
exact minimizer of (λ/2)‖w‖² + mean logistic loss on rows of norm ≤ 1, and
the validation gain is L-Lipschitz in w.  It is offered for scikit-learn's
``LogisticRegression(fit_intercept=False)`` tuned over ``C`` (λ = 1/(C·n)),
with rows clipped to ``data_norm`` and scaled to norm ≤ 1 (enforced, not
trusted), and the gain 1 − mean g with g = 1 − sigmoid(s·y·wᵀx) ∈ [0, 1],
(s/4)-Lipschitz in w and equal to ½ at w = 0 for every record.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, MetaEstimatorMixin, TransformerMixin, clone
from sklearn.metrics import get_scorer
from sklearn.pipeline import make_pipeline
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._validation import as_generator, check_bool, check_finite_array, check_int, check_positive
from ..bayesopt import CandidateSet, check_steps, optimize
from ..privacy import BudgetExceededError, Ledger, budget_for
from ..privacy import events as ev
from ..privacy.approx import group_privacy
from .linear import PrivacyLeakWarning, _without_seed

__all__ = ["DPBayesSearchCV", "RowClipper"]


class RowClipper(TransformerMixin, BaseEstimator):
    """Rows clipped to L2 norm ``data_norm`` and divided by it (so ‖x‖₂ ≤ 1); a per-record map."""

    def __init__(self, data_norm=1.0):
        self.data_norm = data_norm

    def fit(self, X, y=None):
        check_positive("data_norm", self.data_norm)
        return self

    def transform(self, X):
        X = np.asarray(X, dtype=float)
        norms = np.linalg.norm(X, axis=1)
        return X * (np.minimum(1.0, self.data_norm / np.maximum(norms, np.finfo(float).tiny)) / self.data_norm)[:, None]


#: Parameters of a private estimator that the space may not tune: its budget (each fit of the search is
#: charged one event of the estimator's own (ε, δ), :func:`_fit_event`).
BUDGET_PARAMS = ("epsilon", "delta", "ledger")


def _is_private(estimator) -> bool:
    return hasattr(estimator, "privacy_record") and "epsilon" in estimator.get_params()


def _delta(estimator) -> float:
    return float(estimator.get_params().get("delta", 0.0))


#: The neighbouring relation of the search: replace one record.  The split is a seeded function of the (public)
#: row count, so a replaced record is a replaced training record (each fit) or a replaced validation record (the
#: selection, kusner2015 §2.1); under add/remove the split itself would change.
RELATION = "replace_one"


def _fit_event(estimator) -> ev.Event:
    """The one event every fit of a private ``estimator`` is charged, whatever its candidate and the data.

    A pure ε-DP estimator (``delta=0``): ``PureDP(ε)`` (``PureDP(2ε)`` if its guarantee is an add/remove one, or
    it does not say, as for a third-party estimator).  An (ε, δ) one: ``ApproxDP`` of its guarantee under the
    search's replace-one relation: (ε, δ) where the estimator's guarantee is a replace-one one, else (its methods
    with δ > 0 are add/remove: Poisson sampling and a released count) the group-privacy bound of one removal and
    one addition, (2ε, (1 + e^ε)δ) (:func:`~dpopt.privacy.approx.group_privacy`).  Each fit is (ε, δ)-DP whatever
    its hyper-parameters (its own ledger of exactly that budget refuses anything more), so this event is a true
    statement about every fit, and basic composition, which holds when each fit is chosen adaptively from the
    releases before it (Dwork & Roth 2014 Thm 3.16, adaptive form §3.5.2), adds them up with the selection's
    pure ε.  The fit's own events (an adaptive method's budget increases, its planned steps) depend on the
    candidate: they stay in the fit's own ledger and are never charged to the search's.
    """
    params = estimator.get_params()
    epsilon, delta = float(params["epsilon"]), _delta(estimator)
    if _relation(estimator) == RELATION:
        return ev.PureDP(epsilon) if delta == 0.0 else ev.ApproxDP(epsilon, delta)
    if delta == 0.0:  # a pure add/remove guarantee: 2ε under replace-one (group privacy, k = 2)
        return ev.PureDP(group_privacy(epsilon, 0.0, 2)[0])
    return ev.ApproxDP(*group_privacy(epsilon, delta, 2))


def _relation(estimator) -> str:
    """The relation of the estimator's guarantee; add/remove (the conservative reading) when it does not say."""
    return getattr(estimator, "_guarantee_relation", lambda: "add_remove")()


def _check_approx_ledger(book: Ledger) -> None:
    """A ledger the search may charge ``ApproxDP`` events to: the approx accountant, the replace-one relation."""
    if book.notion != "approx":
        raise ValueError(
            "an (epsilon, delta) estimator's fits are charged as ApproxDP events: the ledger must have "
            f"accountant='approx' (basic composition), got {book.notion!r}; nothing was spent"
        )
    _check_relation(book)


def _check_relation(book: Ledger) -> None:
    """Every ledger the search charges is of its replace-one relation (the fits' events and the releases state
    guarantees under it): refused before anything is spent."""
    if book.relation != RELATION:
        raise ValueError(f"ledger.relation must be {RELATION!r} for the search (a seeded split of the rows), "
                         f"got {book.relation!r}; nothing was spent")


def _check_fit_spent(model) -> None:
    """An (ε, δ) fit on its own ledger spent at most the estimator's (ε, δ), under the relation its event assumed.

    Its ledger refuses anything more, so this holds by construction; it is checked because the search's charge
    states it (a failure raises before anything of the fit, or of the search after it, is released).
    """
    spent, params = model.privacy_spent_, model.get_params()
    if not (spent["epsilon"] <= float(params["epsilon"]) and spent["delta"] <= float(params["delta"])
            and spent["relation"] in (_relation(model), RELATION)):
        raise RuntimeError(
            f"a fit of the search spent epsilon={spent['epsilon']!r}, delta={spent['delta']!r} under "
            f"{spent['relation']!r}, beyond the estimator's (epsilon, delta) under {_relation(model)!r}"
        )


def _soft_accuracy(slope: float):
    """Validation gain 1 − mean g, g = 1 − sigmoid(s·y·wᵀx) (labels mapped to ±1 by classes_)."""

    def gain(model, X, y):
        clf = model[-1]
        margin = model.steps[0][1].transform(X) @ np.ravel(clf.coef_)
        sign = np.where(y == clf.classes_[1], 1.0, -1.0)
        return float(np.mean(expit(slope * sign * margin)))

    return gain


class DPBayesSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Private Bayesian-optimization search over ``space`` for ``estimator`` (kusner2015 Alg. 1–3).

    Parameters
    ----------
    estimator:
        A scikit-learn estimator (cloned for every fit).  A dpopt private
        estimator (``DPLogisticRegression``, ``DPHuberSVC``, ``DPMLPClassifier``)
        also protects the training rows, its fits charged to the same ledger:
        ``PureDP(ε)`` each for a pure ε-DP one (``delta=0``), one ``ApproxDP``
        each for an (ε, δ) one (the module docstring).
    space:
        ``{name: (low, high)}``, ``{name: (low, high, "log")}`` (Sobol points,
        ``n_candidates`` of them) or ``{name: [values, ...]}`` (the product grid);
        never a private estimator's ``epsilon``, ``delta`` or ``ledger``.
    epsilon, delta:
        Budget of the two releases (each gets half).  δ is the failure
        probability of Algorithms 1–2; Algorithm 3 is pure ε-DP.
    algorithm:
        1 (noisy observations, default), 2 (exact observations; needs ``A`` and
        ``tau``) or 3 (Lipschitz and convex; see the module docstring).
    n_iter:
        Bayesian-optimization steps T (fits of the estimator).
    validation_size, cv:
        The validation part: a fraction in (0, 1) or a row count of a seeded
        random split, or ``cv=(train_index, validation_index)``.
    scoring:
        A scikit-learn scorer name (default ``"accuracy"``); Algorithm 3 uses its
        own Lipschitz gain instead.  A score that is not finite, or that the scorer refuses
        (``ValueError``: a validation label the fits never saw), counts as ``prior_mean``.
    k1, noise_std, kernel, length_scale, prior_mean, A, tau:
        See :func:`dpopt.bayesopt.optimize`; ``prior_mean`` is the GP's fixed
        prior mean of the score (0.5 suits accuracies).
    data_norm, sigmoid_slope:
        Algorithm 3: the declared row bound (rows are clipped to it) and s.
    refit:
        Refit the released candidate on the training part (``best_estimator_``);
        for a private estimator this is one more charged fit.
    ledger:
        A :class:`~dpopt.privacy.Ledger` charged with every fit and release;
        by default a new one sized for them (pure, or ``accountant="approx"``
        with δ = the fits' δ's for an (ε, δ) estimator; relation replace-one).
        A pure or approx ledger too small for them all (a private estimator)
        refuses the search before anything is spent; an (ε, δ) estimator needs
        an approx ledger of the replace-one relation.
    random_state:
        Seed of the split, the Sobol points and the noise.  A private ``estimator`` with a
        ``random_state`` of its own gives each fit a seed drawn from it (independent noise for every
        fit, as composition needs; with ``None`` every fit draws from OS entropy).
    secure_noise:
        ``True`` releases the chosen candidate and the score with exact,
        floating-point-safe noise at the same ε (:func:`dpopt.bayesopt.optimize`);
        a private ``estimator``'s own fits follow its own ``secure_noise``.
    """

    def __init__(self, estimator, space, *, epsilon=1.0, delta=1e-3, algorithm=1, n_iter=20, n_candidates=128,
                 validation_size=0.25, cv=None, scoring="accuracy", k1=0.95, noise_std=0.05, kernel="se",
                 length_scale=0.2, prior_mean=0.5, A=None, tau=None, data_norm=None, sigmoid_slope=4.0,
                 refit=True, ledger=None, random_state=None, secure_noise=False):
        self.estimator = estimator
        self.space = space
        self.epsilon = epsilon
        self.delta = delta
        self.algorithm = algorithm
        self.n_iter = n_iter
        self.n_candidates = n_candidates
        self.validation_size = validation_size
        self.cv = cv
        self.scoring = scoring
        self.k1 = k1
        self.noise_std = noise_std
        self.kernel = kernel
        self.length_scale = length_scale
        self.prior_mean = prior_mean
        self.A = A
        self.tau = tau
        self.data_norm = data_norm
        self.sigmoid_slope = sigmoid_slope
        self.refit = refit
        self.ledger = ledger
        self.random_state = random_state
        self.secure_noise = secure_noise

    # -- the split -----------------------------------------------------------------------
    def _split(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if self.cv is not None:
            try:
                train, val = (np.asarray(part, dtype=np.int64) for part in self.cv)
            except (TypeError, ValueError) as exc:
                raise ValueError("cv must be a pair (train_index, validation_index) of integer arrays") from exc
            if len(train) == 0 or len(val) == 0 or np.intersect1d(train, val).size:
                raise ValueError("cv must give non-empty, disjoint train and validation indices")
            if min(train.min(), val.min()) < 0 or max(train.max(), val.max()) >= n:
                raise ValueError(f"cv indices must lie in [0, {n})")
            return train, val
        size = self.validation_size
        if isinstance(size, float):
            if not 0.0 < size < 1.0:
                raise ValueError(f"validation_size must be a fraction in (0, 1) or a row count, got {size!r}")
            size = int(round(size * n))
        size = check_int("validation_size", size)
        if not 1 <= size < n:
            raise ValueError(f"validation_size must leave rows on both sides of the split (n = {n}), got {size}")
        order = rng.permutation(n)
        return np.sort(order[size:]), np.sort(order[:size])

    # -- the tuned model -----------------------------------------------------------------------
    def _alg3_setup(self, candidates: CandidateSet, n_train: int):
        from sklearn.linear_model import LogisticRegression

        est = self.estimator
        # eq. (10): the L2 penalty alone (no l1_ratio, scikit-learn >= 1.8's elastic net / L1 under the default
        # penalty) and a mean loss that stays 1-Lipschitz (class weights averaging 1: None or "balanced")
        if (not isinstance(est, LogisticRegression) or est.fit_intercept or est.penalty not in ("l2", "deprecated")
                or (getattr(est, "l1_ratio", None) or 0.0) != 0.0 or est.class_weight not in (None, "balanced")):
            raise ValueError(
                "algorithm=3 needs the exact minimizer of an L2-regularized 1-Lipschitz convex loss: "
                "use sklearn LogisticRegression(fit_intercept=False) tuned over C (no l1_ratio or class weights)"
            )
        if candidates.names != ("C",):
            raise ValueError("algorithm=3 tunes exactly one parameter, 'C' (lambda = 1/(C n_train))")
        if self.data_norm is None:
            raise ValueError("algorithm=3 needs data_norm=, the declared L2 bound on a row (rows are clipped to it)")
        slope = check_positive("sigmoid_slope", self.sigmoid_slope)
        lam = 1.0 / (candidates.points[:, 0] * n_train)
        return lam, slope

    def fit(self, X, y):
        """Tune on (X, y); spends the ledger as the class docstring says."""
        X = np.asarray(X, dtype=float) if not hasattr(X, "iloc") else X
        y = np.asarray(y)
        n = len(y)
        if getattr(X, "shape", (n,))[0] != n:
            raise ValueError(f"X and y must have the same number of rows, got {X.shape[0]} and {n}")
        if self.algorithm not in (1, 2, 3):
            raise ValueError(f"algorithm must be 1, 2 or 3, got {self.algorithm!r}")
        private = _is_private(self.estimator)
        alg3 = self.algorithm == 3
        if private or alg3:  # they refuse a NaN or infinite row: refused here, before anything is spent
            check_finite_array("X", X, ndim=2)
        epsilon = check_positive("epsilon", self.epsilon)
        check_bool("refit", self.refit)  # 'no' is truthy: it refitted, one more charged fit
        check_bool("secure_noise", self.secure_noise)
        n_iter = check_steps("n_iter", self.n_iter)  # at most MAX_STEPS: 10**9 ran silently until killed
        rng = as_generator(self.random_state, "random_state")
        seed = int(rng.integers(2**31))
        candidates = CandidateSet.from_space(self.space, n_candidates=self.n_candidates, seed=seed)
        fixed = BUDGET_PARAMS if private else ()
        tuned = [name for name in fixed if name in candidates.names]
        if tuned:
            raise ValueError(f"space must not tune the private estimator's {', '.join(tuned)}: every fit of the "
                             "search is charged the same, whatever its candidate")
        summary = _fit_event(self.estimator) if private else None
        # Every fit draws its own noise: the clones of a seeded private estimator all drew the same stream, so
        # two fits' outputs combined into a noise-free function of the training rows, and composition (each fit
        # charged on its own) holds only for independent randomness.  Their seeds come from the estimator's.
        seeds = None
        if private and self.estimator.get_params().get("random_state") is not None:
            seeds = as_generator(copy.deepcopy(self.estimator.get_params()["random_state"]), "random_state")
        if private:
            # every candidate's parameters now, before anything is spent: an invalid one raised only when GP-UCB
            # visited it, which depends on the validation rows, after the fits before it had spent their budget;
            # and every candidate's fit is charged the one event (its guarantee, or its relation, may not change)
            for i in range(len(candidates)):
                model = clone(self.estimator).set_params(**candidates.params(i))
                if hasattr(model, "_check_params"):
                    model._check_params()
                if _fit_event(model) != summary:
                    raise ValueError(f"candidate {candidates.params(i)} changes the guarantee of a fit "
                                     f"({_fit_event(model)} instead of {summary}); nothing was spent")
        train, val = self._split(n, rng)
        take = (lambda idx: X.iloc[idx]) if hasattr(X, "iloc") else (lambda idx: X[idx])
        X_tr, y_tr, X_val, y_val = take(train), y[train], take(val), y[val]
        if private:
            # what a fit refuses from the training labels and the feature count (not class labels, a label outside
            # the declared classes, bounds of another length), before anything is spent: the first fit raised it
            # after the search had charged that fit; a validation label too (the scorer raised on it after that
            # charge, or counted it wrong), where the estimator declares its classes
            check_classification_targets(y)
            n_classes = self.estimator._check_data(X_tr, y_tr) if hasattr(self.estimator, "_check_data") else None
            if n_classes is not None and self.estimator.get_params().get("classes") is not None:
                self.estimator._check_data(X_val, y_val)
        if private and hasattr(self.estimator, "_check_sizes"):
            # and for every candidate, what depends on it (an MLP too large to train): raised at a visit, it told
            # which candidates GP-UCB visited
            for i in range(len(candidates)):
                clone(self.estimator).set_params(**candidates.params(i))._check_sizes(X_tr.shape[1], n_classes)

        if alg3:
            lam, slope = self._alg3_setup(candidates, len(train))
        fits = (len(candidates) if alg3 else n_iter) + (1 if self.refit else 0)
        # A private estimator's fits along the search are charged one event each (_fit_one), the same whatever the
        # candidate: PureDP(ε) for a pure ε-DP estimator, ApproxDP for an (ε, δ) one (_fit_event).  The search
        # needs every fit and the releases, their exact sums rounded up, as the ledger adds them (a float sum
        # rounded down passed, then the refit was refused after the releases).  That is the default ledger's
        # budget; a given ledger that cannot afford it refuses the whole search up front.
        approx = isinstance(summary, ev.ApproxDP)
        need = budget_for(epsilon, *[summary.epsilon] * fits) if private else epsilon
        need_delta = budget_for(*[summary.delta] * fits) if approx else 0.0
        if need_delta >= 1.0:
            raise ValueError(f"the search's {fits} fits at delta={summary.delta:g} add up to delta >= 1")
        if self.ledger is not None:
            book = self.ledger
        else:
            book = Ledger(need, need_delta, "approx" if approx else "pure", relation=RELATION)
        if approx:
            _check_approx_ledger(book)
        _check_relation(book)  # (a pure private fit was charged, then refused the add/remove ledger's copy)
        if private and book.notion in ("pure", "approx"):
            total = ev.ApproxDP(need, need_delta) if approx else ev.PureDP(need)
            if not book.can_afford(total):
                what = f"epsilon={need:.6g}, delta={need_delta:.6g}" if approx else f"epsilon={need:.6g}"
                at = f"{summary.epsilon:g}, {summary.delta:g}" if approx else f"{summary.epsilon:g}"
                left = book.remaining()
                has = f"{left.epsilon:.6g}, delta={left.delta:.6g}" if approx else f"{left.epsilon:.6g}"
                raise BudgetExceededError(
                    f"the search needs {what} ({fits} fits at {at} and the releases' {epsilon:g}) but the ledger "
                    f"has {has} left; nothing was spent"
                )
        if not private:
            warnings.warn(
                f"{type(self.estimator).__name__} is not a private estimator: only the validation rows are "
                "protected by the search; its training rows are not.",
                PrivacyLeakWarning,
                stacklevel=2,
            )
        selection = book.child(epsilon, accountant="pure")  # the pure ε releases of the selection

        base = self.estimator
        extra = {}
        if alg3:
            base = make_pipeline(RowClipper(self.data_norm), clone(self.estimator))
            gain = _soft_accuracy(slope)
            extra = dict(regularization=lam, lipschitz=slope / 4.0, g_star=1.0, validation_size=len(val))
        else:
            scorer = get_scorer(self.scoring)
            gain = scorer

        def make(i: int, summary: ev.Event | None = None):
            params = candidates.params(i)
            model = clone(base)
            if alg3:
                model.set_params(**{f"{model.steps[-1][0]}__{k}": v for k, v in params.items()})
            else:
                model.set_params(**params)
            if seeds is not None:
                model.set_params(random_state=int(seeds.integers(2**63 - 1)))
            return self._fit_one(model, X_tr, y_tr, book, private, summary)

        cache: dict[int, float] = {}
        steps = []

        def objective(i: int) -> float:
            """The validation gain of candidate i.  Which candidates GP-UCB visits depends on the validation
            rows, so nothing here may depend on it beyond the gain: a private fit runs (and is charged) at
            every step, a visit again included; warnings are shown for the first step's fit only (candidate
            0, fixed before any gain is seen), never for the scoring, which reads the validation rows.  Nor may
            it raise: a score that is not finite (roc_auc of a validation part holding one class), or a scorer's
            ``ValueError`` (neg_log_loss or roc_auc of a validation label the fits never saw), counts as
            ``prior_mean`` (validated before the first step), as no score was seen; raised, it told the
            validation rows apart after the first fit had been charged."""
            if i not in cache or private:
                with warnings.catch_warnings():
                    if steps:
                        warnings.simplefilter("ignore")
                    model = make(i, summary)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        value = float(gain(model, X_val, y_val))
                    except ValueError:  # a scorer refusing the validation part (a label the fits never saw)
                        value = np.nan
                cache[i] = value if np.isfinite(value) else float(self.prior_mean)
            steps.append(i)
            return cache[i]

        result = optimize(
            objective, candidates, algorithm=self.algorithm, epsilon=epsilon, delta=self.delta, n_iter=n_iter,
            k1=self.k1, noise_std=self.noise_std, kernel=self.kernel, length_scale=self.length_scale,
            prior_mean=self.prior_mean, A=self.A, tau=self.tau, ledger=selection, rng=rng,
            secure_noise=bool(self.secure_noise), **extra,
        )  # fmt: skip
        self.result_ = result
        self.candidates_ = candidates
        self.best_index_ = int(result.info["index"])
        self.best_params_ = candidates.params(self.best_index_)
        self.best_score_ = float(result.fun)
        self.n_splits_ = 1
        self.cv_results_ = {
            "params": [candidates.params(i) for i in range(len(candidates))],
            "released": np.arange(len(candidates)) == self.best_index_,
        }
        self.ledger_ = book
        if self.refit:  # the released candidate: its own events for a pure replace-one fit, else the search's event
            own = private and not approx and _relation(self.estimator) == RELATION  # (else its events state add/remove)
            self.best_estimator_ = make(self.best_index_, None if own else summary)
        self.privacy_ = {
            "epsilon": book.spent().epsilon,
            "delta_ledger": book.spent().delta,
            "notion": book.notion,
            "relation": book.relation,
            "selection_guarantee": result.guarantee,
            "selection": {"epsilon": epsilon, "delta": self.delta if self.algorithm != 3 else 0.0,
                          "algorithm": self.algorithm, "notes": result.notes,
                          "secure_noise": bool(self.secure_noise)},
            "protects": "training and validation rows" if private else "validation rows only",
            "events": [e.to_dict() for e in book.events],
        }
        return self

    @staticmethod
    def _fit_one(model, X, y, book: Ledger, private: bool, summary: ev.Event | None = None):
        """Fit one candidate; a private fit is charged to ``book`` (through its ``ledger=`` when it has one).

        The estimators' repeated-fit warning is silenced: here the ledger
        composes every fit.

        ``summary`` (:func:`_fit_event`, for the fits along the search and the refit of an
        (ε, δ) or add/remove estimator): ``book`` is charged that one event — the same
        whatever the candidate, where the fit's own events (objpert's,
        DP-AGD's) depend on its hyper-parameters and would tell which
        candidates were visited — *before* the fit: a fit that raises may have
        released something already (a warning turned error states the count
        an add/remove fit released first), so it is accounted either way.  A
        pure fit (``PureDP(ε)``) spends from a scratch copy of ``book`` taken
        before that charge (so it is still refused, before any noise, when ε
        does not fit or the relation differs).  An (ε, δ) fit (``ApproxDP``)
        spends from its own new ledger of exactly its (ε, δ) (``ledger=None``:
        its events are not pure, and ``book`` composes stated guarantees
        only), and what that ledger reports is checked against the
        estimator's (ε, δ) before the search goes on (a ``RuntimeError``
        otherwise: nothing more is fitted or released).
        """
        if summary is not None:
            approx = isinstance(summary, ev.ApproxDP)
            if not book.can_afford(summary):
                what = f"epsilon={summary.epsilon:.6g}" + (f", delta={summary.delta:.6g}" if approx else "")
                raise BudgetExceededError(f"a fit of the search needs {what}, more than the ledger has left "
                                          f"({book.remaining().epsilon:.6g}); nothing was spent")
            if "ledger" in model.get_params() and approx:
                model.set_params(ledger=None)
            elif "ledger" in model.get_params():
                model.set_params(ledger=copy.deepcopy(book))
            book.charge(summary)
            model.fit(X, y)
            if approx:
                _check_fit_spent(model)
            return model
        if private and "ledger" in model.get_params():
            model.set_params(ledger=book)
            return model.fit(X, y)
        model.fit(X, y)
        if private:
            for event in model.privacy_events_:
                book.charge(event)
        return model

    def privacy_record(self) -> dict:
        """The whole search's privacy record in the format of a private estimator's ``privacy_record()``.

        One ledger (kusner2015 with a private tuned estimator): ε and the event
        log compose every training fit, the refit and the selection's two
        releases; ``guarantee`` is the weaker of the refit's and the
        selection's (Algorithms 1–2: "conditional").  Saved with the refit
        model (``persist.save_model(..., privacy=search.privacy_record())``,
        as ``dpopt tune`` does) it is what ``dpopt account --events`` re-checks.
        """
        from .linear import _weakest

        best = self._best()
        if not _is_private(self.estimator):
            raise ValueError("privacy_record needs a private estimator (its training rows are not protected)")
        own = best.privacy_record()
        return {
            "method": own["method"],
            "epsilon": self.privacy_["epsilon"],
            "delta": self.privacy_["delta_ledger"],
            "notion": self.privacy_["notion"],
            "relation": self.privacy_["relation"],
            "guarantee": _weakest({own["guarantee"], self.privacy_["selection_guarantee"]}),
            "events": list(self.privacy_["events"]),
            "selection": dict(self.privacy_["selection"]),
            "protects": self.privacy_["protects"],
        }

    def __getstate__(self):
        """The pickled state (``pickle``, ``joblib.dump``, ``copy``): once fitted, no seed of the search
        (``random_state``: the split, the candidates, the selection's noise) nor of its private estimator (its
        fits' seeds come from it): with them, anyone holding D and D' reruns the search on both and matches the
        released ``best_estimator_`` and ``best_score_`` exactly."""
        state = _without_seed(super().__getstate__(), "best_index_")
        estimator = state.get("estimator")
        if "best_index_" in state and _is_private(estimator) and "random_state" in estimator.get_params():
            state["estimator"] = clone(estimator).set_params(random_state=None)
        return state

    # -- prediction through the refitted estimator ---------------------------------------------
    def _best(self):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_

    def predict(self, X):
        return self._best().predict(X)

    def decision_function(self, X):
        return self._best().decision_function(X)

    def score(self, X, y):
        return self._best().score(X, y)

    @property
    def classes_(self):
        return self._best().classes_
