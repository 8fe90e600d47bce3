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
from ...models import LinearModel, check_model, solve_erm
from ...oracles import LABELS, majority_label, run_ledger
from ...privacy import PrivacySpent
from ...result import DPResult
from ._common import Hyper, check_budget

__all__ = ["NonPrivateHyper", "non_private", "majority", "LABELS"]


@dataclass(frozen=True)
class NonPrivateHyper(Hyper):
    """Hyper-parameters of :func:`non_private`: the L-BFGS tolerance on ‖∇F‖₂ and iteration cap."""

    tol: float = 1e-8
    max_iter: int = 10_000

    def __post_init__(self):
        check_positive("tol", self.tol)


def non_private(model, *, epsilon: float | None = None, delta: float | None = None, rng=None,
                ledger=None, **hyper) -> DPResult:
    """NON-PRIVATE: argmin of the model's regularized objective by L-BFGS (chen2020 §5.3).

    ``epsilon``, ``delta``, ``rng`` and ``ledger`` are accepted for the common
    calling convention and ignored (nothing is charged: nothing private is
    released).  ``guarantee="none"``; ``privacy`` is (∞, 0) with notion
    ``"none"`` and an empty event log.
    """
    model = check_model(model)
    h = NonPrivateHyper.from_kwargs(**hyper)
    sol = solve_erm(model, tol=h.tol, max_iter=h.max_iter)
    return DPResult(
        x=sol.x, fun=sol.fun, method="non-private", privacy=PrivacySpent(math.inf, 0.0, "none"),
        events=[], relation="add_remove", guarantee="none", nit=sol.nit,
        info={"grad_norm": sol.grad_norm}, notes="non-private reference (L-BFGS); no privacy guarantee",
    )


def majority(model, *, epsilon: float | None = None, delta: float = 0.0, rng=None, ledger=None,
             secure_noise: bool = False, **hyper) -> DPResult:
    """MAJORITY: one label for every record, chosen by the ε-DP exponential mechanism on the counts.

    ``model`` is a :class:`~dpopt.models.LinearModel` with ±1 labels.  Pure
    ε-DP under add/remove-one and replace-one (δ unused); spent from ``ledger`` (under its relation) when given
    (:func:`dpopt.oracles.majority_label`).  The result's ``x`` is the zero
    vector (a constant predictor is not a linear one) and
    ``info["constant_label"]`` the chosen label, which
    :func:`dpopt.models.predict` uses; ``fun`` is NaN.  ``secure_noise=True``: the label is
    drawn by the exact exponential mechanism.
    """
    if not isinstance(model, LinearModel):
        raise TypeError(f"majority needs a dpopt.models.LinearModel, got {type(model).__name__}")
    if hyper:
        raise TypeError(f"majority takes no hyper-parameters, got {sorted(hyper)}")
    if ledger is None:
        epsilon, _ = check_budget(epsilon, delta, need_delta=False)
        ledger, epsilon, _ = run_ledger(None, epsilon, 0.0, accountant="pure")
    else:
        # Sensitivity 1 under add/remove-one and replace-one alike: spend under the ledger's relation.
        relation = ledger.relation if ledger.relation in ("add_remove", "replace_one") else "add_remove"
        ledger, epsilon, _ = run_ledger(ledger, epsilon, None, accountant="pure", relation=relation)
    rng = as_generator(rng)
    label = majority_label(model, epsilon=epsilon, ledger=ledger, rng=rng, labels=LABELS, secure_noise=secure_noise)
    return DPResult.from_ledger(
        ledger, x=np.zeros(model.dim), fun=math.nan, method="majority", nit=0,
        info={"constant_label": label}, guarantee="exact",
        notes="the majority label is chosen by the exponential mechanism on the class counts",
    )
