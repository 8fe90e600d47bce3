"""The privacy core: events, accountants, the ledger, mechanisms, sampling, calibration.

This layer knows nothing about optimization (DESIGN.md "Layers").  Every
data-dependent release elsewhere in dpopt goes through :mod:`.mechanisms`
(or :mod:`.mcmc`, the exponential mechanism over a continuous set sampled by
Metropolis MCMC), which charges a :class:`Ledger` before it returns anything.
"""

from . import accountant, approx, calibration, events, mcmc, mechanisms, pld, pure, rdp, sampling, snapping, zcdp
from .accountant import Accountant, Relation, make_accountant, register_accountant
from .approx import ApproxDPAccountant
from .ledger import RELATIONS, BudgetExceededError, Ledger, PrivacySpent, budget_for, equal_share, remainder
from .pld import PLDAccountant
from .pure import PureDPAccountant
from .rdp import DEFAULT_ORDERS, RDPAccountant
from .sampling import FixedSizeSampler, PoissonSampler
from .zcdp import ZCDPAccountant

__all__ = [
    "events",
    "accountant",
    "Accountant",
    "Relation",
    "make_accountant",
    "register_accountant",
    "mechanisms",
    "mcmc",
    "calibration",
    "pure",
    "approx",
    "rdp",
    "pld",
    "zcdp",
    "sampling",
    "snapping",
    "Ledger",
    "equal_share",
    "budget_for",
    "remainder",
    "BudgetExceededError",
    "PrivacySpent",
    "RELATIONS",
    "PureDPAccountant",
    "ApproxDPAccountant",
    "RDPAccountant",
    "ZCDPAccountant",
    "PLDAccountant",
    "DEFAULT_ORDERS",
    "PoissonSampler",
    "FixedSizeSampler",
]
