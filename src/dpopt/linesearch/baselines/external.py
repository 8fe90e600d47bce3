"""IBM diffprivlib's ``LogisticRegression`` as an external baseline (what many users would pick).

diffprivlib (Holohan et al. 2019) is an optional dependency, imported only
when this baseline runs.  Its logistic regression is objective perturbation
(Chaudhuri et al. 2011, its ``Vector`` mechanism) solved by L-BFGS; it draws
its own noise and does its own accounting, so dpopt cannot route that noise
through :mod:`dpopt.privacy.mechanisms`.  The ledger records diffprivlib's
*claimed* guarantee as one ``PureDP(ε)`` event (replace-one, δ = 0), and the
result says so in its notes.  Like :func:`~.objpert.objective_perturbation`
the claim holds for the exact minimizer, so the guarantee kind is
``"approximate"``.

``data_norm`` is declared (rows are projected onto that ball first), so
diffprivlib never derives the bound from the data, and no intercept is
fitted (a bias column, if wanted, belongs in X).  The regularization matches
the model: diffprivlib minimizes (1/n) Σ ℓ + ‖w‖²/(2Cn), so C = 1/(nμ).

Compatibility: diffprivlib 0.6.6 fails to import with scikit-learn ≥ 1.6
(its tree models use removed sklearn internals, and its ``LogisticRegression``
constructor passes the removed ``multi_class``).  When the public class is
unusable for that reason, :func:`diffprivlib_lr` loads only diffprivlib's
logistic-regression module and calls its ``_logistic_regression_path`` with
the arguments ``LogisticRegression.fit`` passes for a binary problem — the
same noise and solver — and records ``info["entry_point"]``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
import warnings
from dataclasses import dataclass

import numpy as np

from ..._validation import as_generator, check_int, check_positive
from ...oracles import run_ledger
from ...privacy import events as ev
from ...result import DPResult
from ._common import Hyper, check_budget, check_margin_model, diagnostic_value, unit_ball_model

__all__ = ["DiffprivlibHyper", "diffprivlib_lr", "diffprivlib_available"]

_MISSING = (
    "the 'diffprivlib' baseline needs IBM diffprivlib (pip install diffprivlib); "
    "it is an optional dependency of dpopt"
)


@dataclass(frozen=True)
class DiffprivlibHyper(Hyper):
    """Hyper-parameters of :func:`diffprivlib_lr`.

    Attributes
    ----------
    data_norm:
        Declared ‖x_i‖₂ bound passed to diffprivlib (rows are projected onto it first).
    tol, max_iter:
        diffprivlib's L-BFGS tolerance and iteration cap (its defaults).
    """

    data_norm: float = 1.0
    tol: float = 1e-4
    max_iter: int = 100

    def __post_init__(self):
        check_positive("data_norm", self.data_norm)
        check_positive("tol", self.tol)
        check_int("max_iter", self.max_iter)


_LOADED: list = []  # [(module, entry point)] once loaded


def _logistic_module():
    """diffprivlib's logistic-regression module and the entry point to use (loaded once)."""
    if _LOADED:
        return _LOADED[0]
    _LOADED.append(_load_logistic_module())
    return _LOADED[0]


def _load_logistic_module():
    """Import it normally, or bypass the package ``__init__`` that fails with new scikit-learn."""
    spec = importlib.util.find_spec("diffprivlib")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(_MISSING)
    try:
        return importlib.import_module("diffprivlib.models.logistic_regression"), "LogisticRegression"
    except ImportError:
        pass
    # The package __init__ imports every model; stand-in package objects let the
    # logistic-regression module and its own imports load without the tree models.
    root = list(spec.submodule_search_locations)[0]
    for name in [k for k in sys.modules if k == "diffprivlib" or k.startswith("diffprivlib.")]:
        del sys.modules[name]
    for name, path in (("diffprivlib", root), ("diffprivlib.models", os.path.join(root, "models"))):
        stub = types.ModuleType(name)
        stub.__path__ = [path]
        sys.modules[name] = stub
    return importlib.import_module("diffprivlib.models.logistic_regression"), "_logistic_regression_path"


def diffprivlib_available() -> bool:
    """Whether diffprivlib is installed (it may still need the compatibility path)."""
    if _LOADED:
        return True
    try:
        return importlib.util.find_spec("diffprivlib") is not None
    except ValueError:  # a stand-in package object without a spec
        return "diffprivlib" in sys.modules


def _fit_public(module, X, y, epsilon, C, h, seed):
    clf = module.LogisticRegression(epsilon=epsilon, data_norm=h.data_norm, C=C, fit_intercept=False,
                                    tol=h.tol, max_iter=h.max_iter, random_state=seed)
    clf.fit(X, y)
    return np.asarray(clf.coef_[0], dtype=float)


def _fit_path(module, X, y, epsilon, C, h, seed):
    coefs, _, _ = module._logistic_regression_path(
        X, y, epsilon=epsilon, data_norm=h.data_norm, pos_class=1.0, Cs=[C], fit_intercept=False,
        max_iter=h.max_iter, tol=h.tol, random_state=np.random.RandomState(seed), check_input=False,
    )
    return np.asarray(coefs[0], dtype=float)


def diffprivlib_lr(model, *, epsilon: float | None = None, delta: float = 0.0, rng=None, ledger=None,
                   **hyper) -> DPResult:
    """IBM diffprivlib's ε-DP logistic regression at the same ε (δ = 0 for it).

    ``model`` is a :class:`~dpopt.linesearch.model.LinearModel` with the
    logistic loss and ``l2`` = μ > 0; ``rng`` seeds diffprivlib's own
    generator.  Raises ``ImportError`` with an installation hint when
    diffprivlib is missing.  ε is spent from ``ledger`` when given (pure, replace-one).
    """
    model = check_margin_model(model, "diffprivlib", logistic=True)
    if ledger is None:
        check_budget(epsilon, delta, need_delta=False)
    ledger, epsilon, _ = run_ledger(ledger, epsilon, 0.0 if ledger is None else None,
                                    accountant="pure", relation="replace_one")
    h = DiffprivlibHyper.from_kwargs(**hyper)
    rng = as_generator(rng)
    module, entry = _logistic_module()
    projected, moved = unit_ball_model(model, h.data_norm)
    C = 1.0 / (model.n * model.l2)
    seed = int(rng.integers(2**31 - 1))
    ledger.charge(ev.PureDP(epsilon))
    fit = _fit_public if entry == "LogisticRegression" else _fit_path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diffprivlib's convergence warnings at its default tol
        try:
            w = fit(module, projected.X, projected.y, epsilon, C, h, seed)
        except TypeError:
            if entry != "LogisticRegression":
                raise
            entry = "_logistic_regression_path"  # constructor incompatible with this scikit-learn
            w = _fit_path(module, projected.X, projected.y, epsilon, C, h, seed)
    return DPResult.from_ledger(
        ledger, x=w, fun=diagnostic_value(model, w), method="diffprivlib", nit=0,
        info={"entry_point": entry, "C": C, "rows_projected": moved, "data_norm": h.data_norm},
        guarantee="approximate",
        notes="epsilon-DP as claimed by diffprivlib (objective perturbation, replace-one); its noise "
              "is drawn by diffprivlib, not by dpopt's mechanisms.",
    )
