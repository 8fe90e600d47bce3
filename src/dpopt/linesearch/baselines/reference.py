"""The reference points of chen2020 §5.3: NON-PRIVATE (L-BFGS) and MAJORITY.

* :func:`non_private` — the exact regularized ERM solution by L-BFGS; no
  privacy guarantee (``guarantee="none"``, ε = ∞).
* :func:`majority` — predict one class for every record.  Which class is the
  majority depends on the data, so it is chosen *privately*: the exponential
  mechanism over the two labels with utility = the label's count
  (sensitivity 1 under add/remove-one) and the whole ε (it is the only
  release).  With thousands of records the private choice is the true
  majority with overwhelming probability, so this costs nothing in accuracy
  and makes the baseline a legitimate ε-DP method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._validation import as_generator, check_positive
from ...privacy import Ledger, PrivacySpent
from ...privacy import mechanisms as mech
from ...result import DPResult
from ..model import LinearModel
from ._common import Hyper, check_budget, check_private_model, solve_erm

__all__ = ["NonPrivateHyper", "non_private", "majority", "LABELS"]

#: The two labels the majority predictor chooses between, in score order.
LABELS = (-1.0, 1.0)


@dataclass(frozen=True)
class NonPrivateHyper(Hyper):
    """Hyper-parameters of :func:`non_private`: the L-BFGS tolerance on ‖∇F‖₂ and iteration cap."""

    tol: float = 1e-8
    max_iter: int = 10_000

    def __post_init__(self):
        check_positive("tol", self.tol)


def non_private(model, *, epsilon: float | None = None, delta: float | None = None, rng=None,
                **hyper) -> DPResult:
    """NON-PRIVATE: argmin of the model's regularized objective by L-BFGS (chen2020 §5.3).

    ``epsilon``, ``delta`` and ``rng`` are accepted for the common calling
    convention and ignored.  ``guarantee="none"``; ``privacy`` is (∞, 0) with
    notion ``"none"`` and an empty event log.
    """
    model = check_private_model(model)
    h = NonPrivateHyper.from_kwargs(**hyper)
    sol = solve_erm(model, tol=h.tol, max_iter=h.max_iter)
    return DPResult(
        x=sol.x, fun=sol.fun, method="non-private", privacy=PrivacySpent(math.inf, 0.0, "none"),
        events=[], relation="add_remove", guarantee="none", nit=sol.nit,
        info={"grad_norm": sol.grad_norm}, notes="non-private reference (L-BFGS); no privacy guarantee",
    )


def majority(model, *, epsilon: float, delta: float = 0.0, rng=None, **hyper) -> DPResult:
    """MAJORITY: one label for every record, chosen by the ε-DP exponential mechanism on the counts.

    ``model`` is a :class:`~dpopt.linesearch.model.LinearModel` with ±1
    labels.  Pure ε-DP under add/remove-one (δ unused).  The result's ``x`` is
    the zero vector (a constant predictor is not a linear one) and
    ``info["constant_label"]`` the chosen label, which
    :func:`dpopt.linesearch.registry.predict` uses; ``fun`` is NaN.
    """
    if not isinstance(model, LinearModel):
        raise TypeError(f"majority needs a dpopt.linesearch.LinearModel, got {type(model).__name__}")
    if hyper:
        raise TypeError(f"majority takes no hyper-parameters, got {sorted(hyper)}")
    epsilon, _ = check_budget(epsilon, delta, need_delta=False)
    rng = as_generator(rng)
    counts = np.array([np.count_nonzero(model.y == label) for label in LABELS], dtype=float)
    if counts.sum() != model.n:
        raise ValueError("majority needs labels in {-1, +1}")
    ledger = Ledger(epsilon, 0.0, "pure", relation="add_remove")
    index = int(mech.exponential(counts, epsilon=epsilon, sensitivity=1.0, ledger=ledger, rng=rng))
    label = LABELS[index]
    return DPResult.from_ledger(
        ledger, x=np.zeros(model.dim), fun=math.nan, method="majority", nit=0,
        info={"constant_label": label}, guarantee="exact",
        notes="the majority label is chosen by the exponential mechanism on the class counts",
    )
