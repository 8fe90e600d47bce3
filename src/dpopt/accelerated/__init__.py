"""Differentially private accelerated gradient methods (kuru2022).

DP-GD, DP heavy ball (eq. (3.1), smoothing form (3.6)–(3.7)), DP-NAG
(eq. (4.1)), DP-MASG (eq. (4.7)) and DP-NAG-opt / DP-MASG-opt, which split
the budget over iterations by problem (4.4) (closed form (4.5) for m = n,
exact numerical solution for m < n) and choose T' ≤ T by (4.6).

Every run is pure ε-DP under the replace-one relation: each iteration
releases a minibatch mean gradient (m of n records drawn without replacement)
plus Laplace noise through :mod:`dpopt.privacy.mechanisms`, which charges the
amplified event to a ledger whose total at the end is ε.

Modules: :mod:`.plan` (schedules and budget split of a run, no data),
:mod:`.allocation` (a_{T,t}, (4.4)/(4.5), T'), :mod:`.bounds` (Thm 3.5, (4.3),
(4.6)), :mod:`.oracle` (the private gradient oracle), :mod:`.algorithms`
(the recursions), :mod:`.audit` (a DP-NAG audit target).
"""

from . import algorithms, allocation, bounds, coefficients, schedules
from .api import evaluate, minimize
from .datapass import DataPass
from .oracle import NonPrivateGradientOracle, PrivateGradientOracle, ProjectedData, l1_sensitivity
from .plan import METHODS, Plan, canonical_method, make_plan

__all__ = [
    "minimize",
    "evaluate",
    "make_plan",
    "Plan",
    "METHODS",
    "canonical_method",
    "PrivateGradientOracle",
    "NonPrivateGradientOracle",
    "ProjectedData",
    "DataPass",
    "l1_sensitivity",
    "algorithms",
    "allocation",
    "bounds",
    "coefficients",
    "schedules",
]
