"""Objectives: losses, regularizers, per-example gradients, enforced bounds and constants.

One interface for every algorithm family (DESIGN.md "Layers"):

* :class:`Loss` — per-example values/gradients over data ``X (n, d)``, ``y (n,)``
  for parameters ``(d,)`` or a batch ``(R, d)``, their means, the clipped
  gradient sum of chen2020 eq. (6) and the clipped loss values; linear models
  (:class:`LinearLoss`) do all of it in one pass ``X w`` and one pass ``Xᵀ r``.
* :class:`Function` — a deterministic ``F(x)`` with ``value``/``grad``:
  :class:`Objective` (mean loss + :class:`Regularizer`), :class:`Quadratic`
  (kuru2022 eq. (3.16)), :class:`MaxAffine` (han2014 eq. (2)).
* :mod:`.bounds` — clipping, L1/L2 projection, label checks and the
  sensitivities they imply (kuru2022 eq. (5.2), chen2020 eq. (6)).
* :mod:`.smoothness` — ``(L, μ)`` exactly or in kuru2022's convention.

This layer imports only numpy, scipy and :mod:`dpopt._validation`; it draws no
random numbers.
"""

from . import bounds, smoothness
from ._arrays import PRECISIONS, as_params, to_precision
from .base import Function, Loss
from .bounds import (
    RELATIONS,
    check_binary_labels,
    clip_by_l2_norm,
    clip_values,
    clipped_grad_sum_sensitivity,
    clipped_loss_sum_sensitivity,
    kuru_l1_sensitivity,
    project_l1_ball,
    project_l2_ball,
    project_rows,
    row_norms,
)
from .losses import (
    LOSSES,
    HingeLoss,
    HuberizedHingeLoss,
    LinearLoss,
    LogisticLoss,
    MarginLoss,
    SquaredLoss,
    get_loss,
)
from .objective import Objective
from .piecewise import MaxAffine
from .quadratic import Quadratic
from .regularizers import L1, L2, Box, L1Ball, L2Ball, Regularizer, Zero, prox_dual_averaging
from .smoothness import Constants, kuru2022_constants, lipschitz_bound, smoothness_constants

__all__ = [
    "bounds",
    "smoothness",
    "as_params",
    "PRECISIONS",
    "to_precision",
    "Function",
    "Loss",
    "LinearLoss",
    "MarginLoss",
    "LogisticLoss",
    "HingeLoss",
    "HuberizedHingeLoss",
    "SquaredLoss",
    "LOSSES",
    "get_loss",
    "Objective",
    "Quadratic",
    "MaxAffine",
    "Regularizer",
    "Zero",
    "L2",
    "L1",
    "Box",
    "L2Ball",
    "L1Ball",
    "prox_dual_averaging",
    "Constants",
    "smoothness_constants",
    "kuru2022_constants",
    "lipschitz_bound",
    "RELATIONS",
    "row_norms",
    "clip_by_l2_norm",
    "clip_values",
    "project_rows",
    "project_l1_ball",
    "project_l2_ball",
    "check_binary_labels",
    "clipped_grad_sum_sensitivity",
    "kuru_l1_sensitivity",
    "clipped_loss_sum_sensitivity",
]
