"""The line-search family's defaults on top of the shared model contract (chen2020 §5.4).

The model contract itself (:class:`~dpopt.models.PrivateModel`) and the
linear models (:class:`~dpopt.models.LinearModel`) live in :mod:`dpopt.models`;
they are re-exported here for the family's callers.
"""

from __future__ import annotations

from .._validation import check_positive
from ..models import LinearModel, PrivateModel

__all__ = ["PrivateModel", "LinearModel", "PAPER_C_GRAD", "default_gradient_clip"]

#: chen2020 §5.4: "C_grad = 3 for all gradient perturbation algorithms" (convex models).
PAPER_C_GRAD = 3.0


def default_gradient_clip(model: PrivateModel, paper: float = PAPER_C_GRAD) -> float:
    """The default C_grad: min{``paper``, G} with G = ``model.gradient_bound``.

    chen2020 §5.4 sets C_grad = 3 for its features (one-hot and [0, 1] columns,
    unnormalized: ‖x‖₂ ≈ 3.7 on Adult), where it clips a little.  When the
    model declares a public bound G on every per-example gradient (e.g. rows
    scaled to ‖x‖₂ ≤ 1, so G = 1 for the logistic loss), a threshold above G
    clips nothing and only multiplies the noise by C_grad/G; the default is then G.
    """
    bound = model.gradient_bound
    paper = check_positive("paper", paper)
    return paper if bound is None else min(paper, float(bound))
