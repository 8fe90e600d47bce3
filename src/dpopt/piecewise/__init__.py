"""Private minimization of piecewise-affine convex functions (Han, Topcu & Pappas 2014).

Problem (3): minimize f(x) = max_i (a_iᵀx + b_i) over a polytope P, with the
offsets b private under ‖b − b′‖∞ ≤ b_max (eq. (4)).  Four ε-DP mechanisms
(:mod:`.mechanisms`): ``laplace-data`` (Thm 16), ``laplace-solution`` (Thm 9),
``exponential`` (Thm 19, Metropolis MCMC) and ``subgradient`` (Algorithms 1–2);
:func:`minimize` dispatches by name.  :func:`solve` is the exact non-private
LP solution.

>>> from dpopt.piecewise import PiecewiseAffineProblem, minimize, solve
>>> problem = PiecewiseAffineProblem.gaussian(20, 5, c=1.0, b_max=1.0, rng=0)
>>> result = minimize(problem, 0.1, method="subgradient", repetitions=3, rng=1)
>>> result.x.shape, result.epsilon <= 0.1 + 1e-12
((3, 5), True)
"""

from .api import METHODS, audit_target, minimize, release_function
from .mechanisms import exponential, laplace_data, laplace_solution, new_ledger, subgradient
from .polytope import Polytope, enumerate_vertices
from .problem import RELATION, PiecewiseAffineProblem, resource_allocation_pieces
from .solver import EpigraphLP, LPSolution, solve
from .subgradient import projected_subgradient, step_sizes, subgradient_method

__all__ = [
    "PiecewiseAffineProblem",
    "Polytope",
    "RELATION",
    "METHODS",
    "minimize",
    "release_function",
    "audit_target",
    "solve",
    "EpigraphLP",
    "LPSolution",
    "laplace_data",
    "laplace_solution",
    "exponential",
    "subgradient",
    "new_ledger",
    "subgradient_method",
    "projected_subgradient",
    "step_sizes",
    "enumerate_vertices",
    "resource_allocation_pieces",
]
