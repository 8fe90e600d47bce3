"""The model contract (:class:`PrivateModel`), its linear implementation and non-private references.

See :mod:`dpopt.models.base` for the contract: per-example losses and clipped
per-example gradients over batches of records, which the private oracles of
:mod:`dpopt.oracles` sum, noise and charge.  This package imports no optimizer
and draws no noise.
"""

from .base import PrivateModel, check_model, start_point
from .linear import LinearModel
from .reference import ErmSolution, accuracy, diagnostic_value, predict, solve_erm

__all__ = [
    "PrivateModel",
    "LinearModel",
    "check_model",
    "start_point",
    "ErmSolution",
    "solve_erm",
    "predict",
    "accuracy",
    "diagnostic_value",
]
