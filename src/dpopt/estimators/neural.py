"""``DPMLPClassifier``: a private multi-layer perceptron as a scikit-learn estimator (extra ``dpopt[torch]``).

Training is :func:`dpopt.neural.train` (DP-SGD, DP-Adam or DP-BLSGD, chen2020 §5.7):
per-example gradients are clipped to ``clip``, so no bound on the features is
needed for the guarantee.  The conventions of the linear estimators hold:

* Bounds are declared, never learned: ``data_norm`` (rows clipped to that L2
  norm and scaled by it) or ``bounds=(lower, upper)`` per feature (values
  clipped into the box and mapped to [−1, 1]); with neither, rows are used as
  they are (nothing is computed from the data).
* The label set is declared with ``classes=``; without it, it is read from the
  data, which the guarantee does not cover (warned with :class:`PrivacyLeakWarning`).
* ``n_public`` declares the record count that normalizes gradient sums; without
  it a noisy count is released first with 2 % of the fit's zCDP budget
  (:func:`dpopt.neural.train`), recorded in ``count_``: the data's own n is never
  used (it is private under add/remove-one).
* The scikit-learn estimator contract holds (``check_estimator``) except for the
  checks that contradict differential privacy, the same ones as the linear
  estimators' and declared the same way through tags
  (:data:`dpopt.estimators.linear.SKLEARN_DP_EXCEPTIONS`).
* ``ledger=`` charges a given ledger (e.g. a parent's ``child``); otherwise
  each fit spends its own (``epsilon``, ``delta``), recorded in
  ``privacy_spent_`` and ``privacy_events_``.

torch is imported only when a network is built or used, so importing
:mod:`dpopt.estimators` never needs it.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._validation import (
    MEMORY_LIMIT,
    as_generator,
    check_bool,
    check_choice,
    check_delta,
    check_int,
    check_iterations,
    check_nonnegative,
    check_positive,
    check_rate,
)
from ._budget import open_fit
from .linear import _DPLinearClassifier, _row_norms, _without_seed

__all__ = ["DPMLPClassifier"]

_ACTIVATIONS = ("relu", "tanh", "logistic")

#: Memory of training an MLP, measured (dp-adam on the CPU, peak RSS less the interpreter's 0.33 GB): about
#: 45 bytes per parameter (float32 weights, gradients, noise, Adam's moments) and 6.2 KB per hidden unit (the
#: activations and backprops of the per-example engine's chunk of up to 256 rows), at widths 3e5 and 1e6 on
#: 5 features.  A network whose estimate exceeds :data:`dpopt._validation.MEMORY_LIMIT` is refused before the
#: network is built or anything is spent: hidden_layer_sizes=(10**7,) ran silently until killed (~66 GB).
BYTES_PER_PARAMETER = 48
BYTES_PER_UNIT = 6 * 1024


def _check_memory(d: int, hidden: tuple, k: int) -> None:
    """Refuse (one line) a network on ``d`` features with ``hidden`` layers and ``k`` outputs that cannot fit."""
    widths = [d, *map(int, hidden), k]
    parameters = sum((a + 1) * b for a, b in zip(widths, widths[1:], strict=False))
    need = BYTES_PER_PARAMETER * parameters + BYTES_PER_UNIT * sum(widths[1:-1])
    if need > MEMORY_LIMIT:
        # the widest single hidden layer that fits: 48·((d + 1)·w + (w + 1)·k) + 6144·w <= limit
        widest = (MEMORY_LIMIT - BYTES_PER_PARAMETER * k) // (BYTES_PER_PARAMETER * (d + 1 + k) + BYTES_PER_UNIT)
        raise ValueError(
            f"hidden_layer_sizes {tuple(widths[1:-1])} would need about {need / 2**30:.3g} GiB to train on {d} "
            f"features and {k} classes ({parameters:,} parameters at {BYTES_PER_PARAMETER} bytes, "
            f"{BYTES_PER_UNIT // 1024} KiB per hidden unit); the usable range is up to {MEMORY_LIMIT / 2**30:g} GiB, "
            f"e.g. one hidden layer of at most {widest:,} units"
        )


def _mlp(d: int, hidden, k: int, activation: str, seed: int):
    import torch
    from torch import nn

    act = {"relu": nn.ReLU, "tanh": nn.Tanh, "logistic": nn.Sigmoid}[activation]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # data-independent initialization, reproducible from random_state
        layers, width = [], d
        for size in hidden:
            layers += [nn.Linear(width, int(size)), act()]
            width = int(size)
        layers.append(nn.Linear(width, k))
        return nn.Sequential(*layers)


class DPMLPClassifier(ClassifierMixin, BaseEstimator):
    """Differentially private MLP classifier (softmax cross-entropy + (μ/2)‖w‖²).

    Parameters
    ----------
    hidden_layer_sizes:
        Widths of the hidden layers (as in scikit-learn's ``MLPClassifier``; one int is one hidden layer).
    epsilon, delta:
        The (ε, δ) budget of one fit (add/remove-one; see ``accountant``); δ > 0.
    method:
        ``"dp-adam"`` (default), ``"dp-sgd"`` or ``"dp-blsgd"``.
    epochs, batch_rate:
        Length of training (⌈epochs/q⌉ iterations) and the Poisson sampling rate q.
    clip:
        Per-example gradient clipping threshold C_grad.
    learning_rate:
        Step of DP-SGD / DP-Adam (defaults 0.2 / 0.001); DP-BLSGD searches its own.
    regularization:
        μ (chen2020 §5.1: 0.001).
    activation:
        ``"relu"``, ``"tanh"`` or ``"logistic"``.
    classes, data_norm, bounds, n_public, ledger:
        Declarations as described in the module docstring.
    random_state:
        Seed or ``numpy.random.Generator`` (initialization, sampling and noise); None: OS entropy.
    device:
        ``"cpu"`` (default) or a torch device.
    accountant:
        ``"rdp"``, ``"pld"`` or ``None``/``"auto"``: the tightest that applies (PLD unless ``ledger``
        checks by Rényi DP); calibrates the noise and checks the budget (:func:`dpopt.neural.train`).
    secure_noise:
        ``True``: every noisy gradient is released by the exact discrete Gaussian sampler (floating-point
        safe; :func:`dpopt.neural.train`), at about 1.5-2.5 µs per parameter per iteration.

    Attributes
    ----------
    classes_, disclosed_, n_features_in_, module_ (the trained ``torch.nn.Sequential``), result_ (its
    :class:`~dpopt.result.DPResult`), history_, privacy_spent_, privacy_events_, n_iter_, count_ (the
    record count that normalized the sums: ``{"count", "source"}``, source ``"declared"`` or
    ``"noisy_count"``).
    """

    def __init__(self, hidden_layer_sizes=(100,), *, epsilon=1.0, delta=1e-5, method="dp-adam", epochs=5.0,
                 batch_rate=0.01, clip=1.0, learning_rate=None, regularization=1e-3, activation="relu",
                 classes=None, data_norm=None, bounds=None, n_public=None, ledger=None, random_state=None,
                 device=None, accountant=None, secure_noise=False):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.epochs = epochs
        self.batch_rate = batch_rate
        self.clip = clip
        self.learning_rate = learning_rate
        self.regularization = regularization
        self.activation = activation
        self.classes = classes
        self.data_norm = data_norm
        self.bounds = bounds
        self.n_public = n_public
        self.ledger = ledger
        self.random_state = random_state
        self.device = device
        self.accountant = accountant
        self.secure_noise = secure_noise

    # -- preprocessing (per record, no privacy cost) -------------------------------------
    def _prepare(self, X: np.ndarray) -> np.ndarray:
        if self.bounds is not None:
            lower, upper = self._box(X.shape[1])
            # in halves: 2(x - lo)/(hi - lo) overflowed for a record near hi once hi - lo > 9e307 (a warning,
            # then inf, refused in float32) on the neighbour holding it only
            lo, hi = 0.5 * lower, 0.5 * upper
            X = (0.5 * np.clip(X, lower, upper) - lo) / np.where(hi > lo, hi - lo, 1.0) * 2.0 - 1.0
        if self.data_norm is not None:
            bound = check_positive("data_norm", self.data_norm)
            norms = _row_norms(X)  # np.linalg.norm overflowed (a warning) for a row of 1e200s
            X = X * (np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny)) / bound)[:, None]
        return X

    # the linear estimators' conventions, shared: a clone shares the ledger; the label set is declared
    # (labels outside it refused) or read from y with a PrivacyLeakWarning and listed in ``disclosed_``
    __sklearn_clone__ = _DPLinearClassifier.__sklearn_clone__
    _label_set = _DPLinearClassifier._label_set
    _box = _DPLinearClassifier._box  # validated (lower, upper) broadcast to the d features, or None

    @staticmethod
    def _guarantee_relation() -> str:
        """The neighbouring relation of every fit's guarantee: add/remove one record (Poisson-sampled DP-SGD)."""
        return "add_remove"

    def _check_params(self) -> tuple[float, float, tuple]:
        """(ε, δ, hidden sizes) after checking every parameter that needs no data, so that a fit is refused
        before anything is charged (and :class:`~dpopt.estimators.DPBayesSearchCV` refuses an invalid
        candidate before its search spends anything)."""
        from ..neural.methods import METHODS, steps_from_epochs
        from ..privacy.calibration import RUN_ACCOUNTANTS

        epsilon = check_positive("epsilon", self.epsilon)
        delta = check_delta("delta", self.delta)
        if delta == 0.0:
            raise ValueError("delta must be in (0, 1): DPMLPClassifier's Gaussian noise has no pure-DP guarantee")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        check_nonnegative("regularization", self.regularization)
        if self.learning_rate is not None:  # (train names it lr)
            check_positive("learning_rate", self.learning_rate)
        # as train checks it (the message is train's), here with no data: an epochs candidate of a search too
        check_iterations("the iterations ceil(epochs/batch_rate)",
                         steps_from_epochs(self.epochs, check_rate("batch_rate", self.batch_rate)))
        check_positive("clip", self.clip)
        if self.data_norm is not None:
            check_positive("data_norm", self.data_norm)
        if self.n_public is not None:
            check_int("n_public", self.n_public)
        check_choice("accountant", "auto" if self.accountant is None else self.accountant, RUN_ACCOUNTANTS)
        check_bool("secure_noise", self.secure_noise)
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {list(_ACTIVATIONS)}, got {self.activation!r}")
        sizes = self.hidden_layer_sizes
        # one int is one hidden layer, as in scikit-learn's MLPClassifier; a string is no list of sizes
        hidden = (sizes,) if isinstance(sizes, int | np.integer) else sizes
        hidden = tuple(hidden) if isinstance(hidden, list | tuple | np.ndarray) else None
        if hidden is None or not all(isinstance(h, int | np.integer) and h >= 1 for h in hidden):
            raise ValueError(f"hidden_layer_sizes must be integers >= 1, got {self.hidden_layer_sizes!r}")
        return epsilon, delta, hidden

    def _check_data(self, X, y) -> int:
        """What :meth:`fit` refuses from the data's labels and feature count alone (as the linear estimators'
        ``_check_data``: a label outside the declared classes, ``bounds`` of another length, a network too large),
        without fitting or warning; returns the number of classes (:class:`~dpopt.estimators.DPBayesSearchCV`
        checks it before anything is spent)."""
        check_classification_targets(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a label set read from y is warned by the fit itself
            classes, _ = self._label_set(np.asarray(y))
        self._box(np.shape(X)[1])
        self._check_sizes(np.shape(X)[1], len(classes))
        return len(classes)

    def _check_sizes(self, n_features: int, n_classes: int) -> None:
        """Refuse (one line) a network that cannot be trained on ``n_features`` features and ``n_classes``
        classes: :class:`~dpopt.estimators.DPBayesSearchCV` checks every candidate up front (a
        ``hidden_layer_sizes`` candidate too large raised only when GP-UCB visited it, after fits had spent)."""
        _check_memory(int(n_features), self._check_params()[2], int(n_classes))

    def fit(self, X, y):
        """Train privately on (X, y); spends (``epsilon``, ``delta``) in total."""
        import torch

        from ..neural import train

        epsilon, delta, hidden = self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, disclosed = self._label_set(y)
        self._box(X.shape[1])  # bounds of another length: one line, before anything is charged
        _check_memory(X.shape[1], hidden, len(classes))  # (_check_sizes, with the label set read once)
        rng = as_generator(self.random_state, "random_state")
        net = _mlp(X.shape[1], hidden, len(classes), self.activation, int(rng.integers(2**31 - 1)))
        codes = torch.as_tensor(np.searchsorted(classes, y), dtype=torch.long)
        inputs = torch.as_tensor(self._prepare(X))  # float64; the model casts it to the network's float32, saturating
        # with a given ledger: refused before any noise if (ε, δ) does not fit, and all or nothing
        budget = None if self.ledger is None else open_fit(self.ledger, epsilon, delta, notion="rdp",
                                                           relation="add_remove")
        out = train(net, (inputs, codes), method=self.method, epsilon=epsilon, delta=delta, epochs=self.epochs,
                    batch_rate=self.batch_rate, clip=self.clip, lr=self.learning_rate, l2=float(self.regularization),
                    ledger=None if budget is None else budget.share(1), device=self.device, seed=rng,
                    n_public=self.n_public, accountant=self.accountant, secure_noise=bool(self.secure_noise))
        if budget is not None:
            budget.commit()
        self.classes_ = classes
        self.disclosed_ = disclosed
        self.module_ = out.module.eval()
        self.result_ = out.result
        self.history_ = out.history
        self.privacy_spent_ = {"epsilon": out.result.epsilon, "delta": out.result.delta,
                               "notion": out.result.privacy.notion, "relation": out.result.relation,
                               "guarantee": out.result.guarantee}
        self.privacy_events_ = out.result.events
        self.n_iter_ = out.result.nit
        self.count_ = dict(out.result.info["normalizer"])
        return self

    def privacy_record(self) -> dict:
        """JSON-ready privacy record of the fit."""
        check_is_fitted(self)
        return {"method": self.method, **self.privacy_spent_, "events": [e.to_dict() for e in self.privacy_events_],
                "disclosed": list(self.disclosed_), "count": dict(self.count_)}

    def predict_proba(self, X):
        """Softmax class probabilities, columns in the order of ``classes_``."""
        import torch

        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        device = next(self.module_.parameters()).device
        # in float64: a float32 forward pass rounds differently with the batch's size, so a row's
        # probabilities would depend (at 1e-7) on which other rows are predicted with it
        weights = {name: p.detach().double() for name, p in self.module_.named_parameters()}
        with torch.no_grad():
            logits = torch.func.functional_call(
                self.module_, weights, (torch.as_tensor(self._prepare(X), dtype=torch.float64, device=device),))
            return torch.softmax(logits, dim=1).cpu().numpy()

    def predict(self, X):
        """The most probable declared class of every row."""
        proba = self.predict_proba(X)  # raises NotFittedError before fit
        return self.classes_[np.argmax(proba, axis=1)]

    def __getstate__(self):
        """The pickled state (``pickle``, ``joblib.dump``, ``copy``): a fitted classifier's ``random_state`` (the seed
        of its initialization, sampling and noise) is None, as the linear estimators': with it, anyone holding D
        and D' refits both and matches the released network exactly."""
        return _without_seed(super().__getstate__(), "module_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None
        tags.classifier_tags.poor_score = True
        return tags
