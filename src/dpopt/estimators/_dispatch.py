"""Fit a private linear classifier with any optimizer of the accelerated or linesearch families.

The estimators hand over data that already satisfy ‖x_i‖₂ ≤ 1 (rows clipped
and scaled by the estimator, intercept column included) and labels ±1; this
module turns the method name into the family's call with public constants
derived from that bound only, never from the data (for the line-search
family: ``LinearModel(..., data_norm=1)``, from which the clipping threshold,
the initial step and DP-SGD's step size default).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields

import numpy as np

from ..objectives import L2, Objective, get_loss
from ..result import DPResult

__all__ = [
    "ACCELERATED",
    "CALIBRATED",
    "LINESEARCH",
    "METHODS",
    "EPSILON_RANGE",
    "AUTO_APPROX",
    "auto_params",
    "check_epsilon",
    "check_filter_budget",
    "check_method_params",
    "check_run_ledger",
    "check_secure_noise",
    "fit_linear",
    "needs_delta",
    "notion_of",
    "relation_of",
]

#: kuru2022 methods: pure ε-DP (δ = 0), replace-one relation.
ACCELERATED = ("dp-gd", "dp-hb", "dp-nag", "dp-nag-opt", "dp-masg", "dp-masg-opt")
#: chen2020 methods and their baselines: (ε, δ)-DP with δ > 0 except the pure ones below.
LINESEARCH = ("dp-blsgd", "dp-blgd", "dp-blsgd-ac", "dp-sgd", "dp-agd", "objpert", "outpert")
#: a constant predictor: the majority label chosen by the exponential mechanism (pure ε-DP).
CONSTANT = ("majority",)
METHODS = ACCELERATED + LINESEARCH + CONSTANT

# Line-search-family methods that are pure ε-DP and run with delta = 0.
_PURE_LINESEARCH = ("objpert", "outpert")


#: The ε every method is tested to fit with (tests/cli/test_extremes.py); outside it the noise
#: scales over- or underflow in some method, so a fit is refused with a one-line error.
EPSILON_RANGE = (1e-8, 1e8)


def check_epsilon(name: str, value) -> float:
    """``value`` as a float in :data:`EPSILON_RANGE`, else a one-line ``ValueError`` naming ``name``."""
    from .._validation import check_positive

    return check_in(name, check_positive(name, value), *EPSILON_RANGE)


#: The row bounds (declared or read) and regularization the coefficients stay finite with.
ROW_BOUND_RANGE = (1e-100, 1e100)
REGULARIZATION_MAX = 1e8


def check_in(name: str, value: float, lo: float, hi: float) -> float:
    """``value`` if in [``lo``, ``hi``], else a one-line ``ValueError`` naming ``name`` and the range."""
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in [{lo:g}, {hi:g}] (the usable range), got {value:g}")
    return value


# Methods whose guarantee refers to the replace-one relation (the rest: add/remove one record).
# The private majority (exponential mechanism on the class counts) has sensitivity 1 under both
# relations; it is listed here so that it shares the relation of the pure methods auto chooses from.
_REPLACE_ONE = ACCELERATED + ("objpert", "outpert") + CONSTANT


def needs_delta(method: str) -> bool:
    """Whether ``method`` gives (ε, δ)-DP with δ > 0 (and so needs ``delta > 0``)."""
    return method in LINESEARCH and method not in _PURE_LINESEARCH


def relation_of(method: str) -> str:
    """The neighbouring relation of ``method``'s guarantee (what its sensitivities assume)."""
    return "replace_one" if method in _REPLACE_ONE else "add_remove"


#: Methods that calibrate their noise for a target (ε, δ) and take ``accountant=`` (RDP or PLD).
CALIBRATED = ("dp-sgd", "outpert")

#: chen2020's line-search methods (DP-BLSGD, DP-BLGD, DP-BLSGD-AC).
BACKTRACKING = ("dp-blsgd", "dp-blgd", "dp-blsgd-ac")

#: Methods whose noisy releases can go through the exact discrete samplers (``secure_noise=True``):
#: the calibrated ones, kuru2022's pure Laplace methods (a discrete Laplace at the same ε),
#: chen2020's line-search methods (discrete Gaussian gradients, discrete sparse-vector line searches),
#: DP-AGD (discrete Gaussian gradients, exact NoisyMin) and the private majority (exact exponential
#: mechanism).  Objective perturbation's proof needs a continuous noise density, so it refuses.
SECURE = CALIBRATED + ACCELERATED + BACKTRACKING + ("dp-agd",) + CONSTANT


def check_secure_noise(method: str) -> bool:
    """True if ``method`` takes ``secure_noise=True`` (:data:`SECURE`), else a one-line ``ValueError``."""
    if method not in SECURE:
        raise ValueError(f"secure_noise=True is available for the methods {list(SECURE)}, not {method!r}")
    return True


#: The methods ``method="auto"`` chooses at δ > 0 that take ``method_params`` (the private majority takes none).
AUTO_APPROX = ("dp-sgd", "dp-blsgd")


def _takes(method: str):
    """(hyper-parameter class, the family's own keywords) of a method an add/remove fit runs after releasing
    its record count (chen2020's line searches, DP-SGD); None for the others, which check their
    hyper-parameters before they release anything."""
    if method in BACKTRACKING:
        from ..linesearch.algorithms import LineSearchHyper

        return LineSearchHyper, ()
    if method == "dp-sgd":
        from ..linesearch.baselines import DPSGDHyper

        return DPSGDHyper, ("accountant", "secure_noise")
    return None


def _keys(spec) -> set:
    return {f.name for f in fields(spec[0])} | set(spec[1])


def check_method_params(method: str, params: Mapping, dim: int | None = None) -> None:
    """Refuse ``params`` that ``method`` (``"auto"``: every method of :data:`AUTO_APPROX` that takes an entry)
    would refuse when it runs, with its own one-line error, for an add/remove fit before anything is spent:
    such a fit releases its record count first, and a refusal after that left the noisy count in ``count_``
    with nothing charged (``{"foo": 1}`` on a given ledger, repeated, gave n exactly), and under ``"auto"``
    raised or not by the method the count chose (the private majority takes no entry).  Besides the
    hyper-parameter classes' own checks: DP-SGD's ``accountant`` and ``secure_noise``, and with ``dim`` (the
    design's columns, intercept included) the starting point ``w0``, which the runs checked only once started."""
    from .._validation import check_bool, check_choice, check_finite_array
    from ..privacy.calibration import RUN_ACCOUNTANTS

    if params.get("accountant") is not None:
        check_choice("method_params['accountant']", params["accountant"], RUN_ACCOUNTANTS)
    if "secure_noise" in params:
        check_bool("method_params['secure_noise']", params["secure_noise"])
    if dim is not None and params.get("w0") is not None:
        w0 = check_finite_array("method_params['w0']", params["w0"], ndim=1)
        if w0.shape != (dim,):
            raise ValueError(f"method_params['w0'] must have shape ({dim},) (one entry per coefficient, the "
                             f"intercept's included), got {w0.shape}")
    taken = set()
    for target in AUTO_APPROX if method == "auto" else (method,):
        spec = _takes(target)
        if spec is None:
            continue
        keys = set(params) & _keys(spec) if method == "auto" else set(params)
        if target == "dp-blgd" and "rate" in keys:
            raise TypeError("dp_blgd is full batch: it takes no 'rate' (use dp_blsgd for minibatches)")
        spec[0].from_kwargs(**{k: params[k] for k in keys if k not in spec[1]})
        taken |= keys
    unknown = sorted(set(params) - taken)
    if method == "auto" and unknown:
        raise TypeError(f"method_params {unknown} are hyper-parameters of none of the methods auto chooses at "
                        f"delta > 0 ({', '.join(AUTO_APPROX)})")


def check_filter_budget(method: str, epsilon: float, delta: float, rest: float, rest_delta: float,
                        orders=None) -> None:
    """Refuse, before an add/remove fit of (``epsilon``, ``delta``) releases its record count, a line-search run
    budget (``rest``, ``rest_delta``: one problem's, after the count) at which no order of the plan (``orders``,
    default :data:`dpopt.linesearch.plan.PLAN_ORDERS`) is usable, where the fit's own budget is (below that, the
    count itself is refused before it is drawn): DP-BLSGD's filter refused it after the count, so under
    ``"auto"`` whether the fit raised (charging nothing) followed the count it chose by."""
    if method != "auto" and method not in BACKTRACKING:
        return
    from ..linesearch.plan import PLAN_ORDERS
    from ..privacy.rdp import rdp_budget_per_order

    orders = PLAN_ORDERS if orders is None else orders
    usable = [float(np.max(rdp_budget_per_order(orders, e, d))) > 0.0
              for e, d in ((epsilon, delta), (rest, rest_delta))]
    if usable == [True, False]:
        raise ValueError(f"epsilon={epsilon:g} leaves {rest:.6g} to the run after the record count, below what "
                         f"Renyi-DP accounting states at delta={rest_delta:g} ({method}'s plan); raise epsilon or "
                         "delta")


def check_run_ledger(method: str, ledger, params: Mapping) -> None:
    """Refuse, before an add/remove fit releases its record count, a ``ledger`` (or a ledger it is a child of)
    whose accountant cannot compose ``method``'s run: DP-SGD's Poisson-subsampled Gaussian steps and the line
    searches' Renyi filter need ``"rdp"`` or ``"pld"`` (``"zcdp"`` takes DP-SGD at ``rate=1`` only; DP-SGD's
    planned rate follows the count).  The run refused at its first charge, after the count, so under ``"auto"``
    (the majority fitted on any ledger) and DP-SGD's plan whether the fit raised followed N̂."""
    if ledger is None or not (method in ("auto", "dp-sgd") or method in BACKTRACKING):
        return
    allowed = ("rdp", "pld", "zcdp") if method == "dp-sgd" and params.get("rate") == 1 else ("rdp", "pld")
    node = ledger
    while node is not None:
        if node.notion not in allowed:
            whose = "the ledger" if node is ledger else "a parent of the ledger"
            raise ValueError(f"method {method!r} spends Renyi-DP events (subsampled Gaussian steps, a Renyi "
                             f"filter) that {whose}, accountant {node.notion!r}, cannot compose; give an 'rdp' or "
                             "'pld' ledger")
        node = node.parent


def auto_params(method: str, params: Mapping) -> dict:
    """The entries of an auto fit's ``method_params`` that the chosen ``method`` takes (none for the private
    majority), so that what auto chose never decides whether the fit raises."""
    if method == "majority":
        return {}
    spec = _takes(method)
    return dict(params) if spec is None else {k: v for k, v in params.items() if k in _keys(spec)}


def notion_of(method: str, delta: float, accountant=None) -> str:
    """The accountant ``method`` composes its events with at budget δ = ``delta`` ("pure": δ unused).

    ``accountant`` (``"rdp"``, ``"pld"``, ``"auto"``/None: the tightest) applies to the
    :data:`CALIBRATED` methods; the others keep their paper's notion (DP-BLSGD's Rényi
    filter, DP-AGD's zCDP, the pure methods).
    """
    if method in ACCELERATED + CONSTANT or method == "objpert" or delta == 0.0:
        return "pure"
    if method in CALIBRATED and accountant in (None, "auto", "pld"):
        return "pld"
    return "zcdp" if method == "dp-agd" else "rdp"


def _smoothness(loss: str, regularization: float) -> float:
    """Public L for rows with ‖x‖₂ ≤ 1: sup φ'' (¼ logistic, 1/(2h) Huberized hinge) plus μ."""
    return get_loss(loss).curvature_bound + regularization


def fit_linear(
    method: str,
    loss: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    regularization: float,
    rng: np.random.Generator,
    params: dict,
    ledger=None,
    accountant=None,
    secure_noise: bool = False,
) -> DPResult:
    """Run ``method`` on F(w) = mean loss(xᵀw, y) + (μ/2)‖w‖² with μ = ``regularization``.

    ``ledger`` (optional) is handed to the family, which plans with (``epsilon``,
    ``delta``) and spends from a child of it: every release is charged before
    its noise is drawn, refused (``BudgetExceededError``) when it would
    overspend, and an adaptive run charges its Rényi-filter guarantee.
    ``accountant`` is handed to the :data:`CALIBRATED` methods, ``secure_noise`` (their
    gradient, line-search or output releases by exact discrete noise on a grid) to the
    :data:`SECURE` ones; another method refuses it.
    """
    params = dict(params, ledger=ledger)
    if method in CALIBRATED and accountant is not None:
        params["accountant"] = accountant
    if secure_noise:
        params["secure_noise"] = check_secure_noise(method)
    return _run(method, loss, X, y, epsilon, delta, regularization, rng, params)


def _run(method, loss, X, y, epsilon, delta, regularization, rng, params) -> DPResult:
    if method in ACCELERATED:
        d = X.shape[1]
        objective = Objective(loss, X, y, L2(regularization / 2.0))
        options = {
            "iterations": 100,
            "L": _smoothness(loss, regularization),
            "mu": regularization,
            # ‖x‖₁ ≤ √d ‖x‖₂ ≤ √d: the public L1 bound kuru2022 eq. (5.2) needs.
            "feature_bound": math.sqrt(d),
        }
        options.update(params)
        from .. import accelerated

        return accelerated.minimize(objective, np.zeros(d), epsilon, method, rng=rng, **options)
    if method in LINESEARCH or method in CONSTANT:
        from ..linesearch import registry
        from ..linesearch.model import LinearModel

        # Declaring the bound lets the line-search family default C_grad to the true per-example
        # gradient bound (1, not §5.4's 3) and its largest step to 16 (see LineSearchHyper).
        model = LinearModel(loss, X, y, l2=regularization, data_norm=1.0)
        return registry.fit(method, model, epsilon=epsilon, delta=delta, rng=rng, **params)
    raise ValueError(f"method must be one of {list(METHODS)}, got {method!r}")
