"""The methods of the linesearch family by their result names, and helpers for linear classifiers.

:data:`METHODS` maps the names of API.md (``"dp-blsgd"``, ``"dp-blgd"``,
``"dp-blsgd-ac"``, ``"dp-sgd"``, ``"dp-agd"``, ``"objpert"``, ``"outpert"``,
``"non-private"``, ``"majority"``, ``"diffprivlib"``) to functions with the
calling convention ``fn(model, *, epsilon, delta, rng, **hyper) -> DPResult``.
The functions are imported on first use, so this module imports nothing
heavy and works whichever implementation modules are present.

* :func:`fit` — run a method by name.
* :func:`applicable` / :func:`requirement_error` — whether a method can fit a model
  (e.g. objective perturbation needs a smooth loss, diffprivlib logistic regression).
* :func:`predict` / :func:`accuracy` — re-exported from :mod:`dpopt.models`
  (sign(Xw) predictions; the majority predictor's constant label is honoured).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ..models.reference import accuracy, predict

__all__ = [
    "MethodSpec",
    "SPECS",
    "METHODS",
    "fit",
    "applicable",
    "requirement_error",
    "predict",
    "accuracy",
]

_BASELINES = "dpopt.linesearch.baselines"
_ALGORITHMS = "dpopt.linesearch.algorithms"


@dataclass(frozen=True)
class MethodSpec:
    """Where a method lives and what it needs from a model.

    ``needs`` may contain ``"linear"`` (a :class:`~dpopt.linesearch.model.LinearModel`
    with a margin loss, |ℓ'| ≤ 1, and l2 > 0), ``"smooth"`` (bounded ℓ''),
    ``"logistic"`` (the logistic loss) and ``"diffprivlib"`` (the optional package).
    """

    name: str
    module: str
    attr: str
    kind: str
    needs: tuple = ()
    description: str = ""

    def load(self) -> Callable:
        return getattr(importlib.import_module(self.module), self.attr)


SPECS: dict[str, MethodSpec] = {
    s.name: s
    for s in (
        MethodSpec("dp-blsgd", _ALGORITHMS, "dp_blsgd", "line search", (),
                   "chen2020 Algorithm 2: minibatch noisy gradients, NoisyBTLS, CHEB (RDP)"),
        MethodSpec("dp-blsgd-ac", _ALGORITHMS, "dp_blsgd_ac", "line search", (),
                   "DP-BLSGD with clipping-threshold adaptation, chen2020 eq. (9)"),
        MethodSpec("dp-blgd", _ALGORITHMS, "dp_blgd", "line search", (),
                   "full-batch DP-BLSGD with DP-AGD's budget increase (chen2020 §5.3)"),
        MethodSpec("dp-sgd", _BASELINES, "dp_sgd", "gradient", (),
                   "Abadi et al. 2016: Poisson sampling, clipping, Gaussian noise (RDP)"),
        MethodSpec("dp-agd", _BASELINES, "dp_agd", "gradient", (),
                   "Lee & Kifer 2018: NoisyMin step sizes, adaptive budget (zCDP)"),
        MethodSpec("objpert", _BASELINES, "objective_perturbation", "perturbation", ("linear", "smooth"),
                   "Chaudhuri et al. 2011 Algorithm 2: objective perturbation (pure DP)"),
        MethodSpec("outpert", _BASELINES, "output_perturbation", "perturbation", ("linear", "smooth"),
                   "Chaudhuri et al. 2011 Algorithm 1: output perturbation"),
        MethodSpec("diffprivlib", _BASELINES, "diffprivlib_lr", "external",
                   ("linear", "logistic", "diffprivlib"),
                   "IBM diffprivlib LogisticRegression (objective perturbation, pure DP)"),
        MethodSpec("non-private", _BASELINES, "non_private", "reference", (),
                   "L-BFGS solution of the regularized objective, no privacy"),
        MethodSpec("majority", _BASELINES, "majority", "reference", ("labels",),
                   "majority class, chosen by the exponential mechanism"),
    )
}


class _LazyMethods(Mapping):
    """``name -> function``, importing each implementation module on first access."""

    def __getitem__(self, name: str) -> Callable:
        try:
            spec = SPECS[name]
        except (KeyError, TypeError):
            raise KeyError(name) from None
        return spec.load()

    def __iter__(self) -> Iterator[str]:
        return iter(SPECS)

    def __len__(self) -> int:
        return len(SPECS)

    def __repr__(self) -> str:
        return f"METHODS({', '.join(SPECS)})"


#: Method name → fit function (imported lazily).
METHODS: Mapping[str, Callable] = _LazyMethods()


def _spec(method) -> MethodSpec:
    if method not in SPECS:
        raise ValueError(f"method must be one of {list(SPECS)}, got {method!r}")
    return SPECS[method]


def requirement_error(method: str, model) -> str | None:
    """Why ``method`` cannot fit ``model`` (a sentence), or None when it can."""
    spec = _spec(method)
    from ..objectives import MarginLoss
    from .baselines import diffprivlib_available
    from .model import LinearModel, PrivateModel

    if not isinstance(model, PrivateModel):
        return f"model must be a PrivateModel, got {type(model).__name__}"
    needs = set(spec.needs)
    if needs & {"linear", "labels"} and not isinstance(model, LinearModel):
        return f"{method} needs a LinearModel"
    loss = getattr(model, "loss", None)
    if "linear" in needs:
        if not isinstance(loss, MarginLoss) or loss.derivative_bound > 1.0:
            return f"{method} needs a margin loss with |l'| <= 1"
        if model.l2 <= 0.0:
            return f"{method} needs l2 > 0 (strong convexity)"
    if "smooth" in needs and not (loss.smooth and math.isfinite(loss.curvature_bound)):
        return f"{method} needs a smooth loss with bounded l''"
    if "logistic" in needs and loss.name != "logistic":
        return f"{method} fits logistic regression only"
    if "diffprivlib" in needs and not diffprivlib_available():
        return "diffprivlib is not installed (pip install diffprivlib)"
    return None


def applicable(method: str, model) -> bool:
    """Whether ``method`` can fit ``model`` (see :func:`requirement_error`)."""
    return requirement_error(method, model) is None


def fit(method: str, model, *, epsilon: float, delta: float, rng=None, **hyper):
    """Run ``method`` (a key of :data:`METHODS`) on ``model`` and return its ``DPResult``."""
    return _spec(method).load()(model, epsilon=epsilon, delta=delta, rng=rng, **hyper)
