"""NoisyBTLS, chen2020 Algorithm 1: the family's names for the oracles layer's search.

The algorithm (candidate steps η₀ β^{i−1}, the AboveThreshold search over the
Armijo queries, intelligent backtracking) lives in
:mod:`dpopt.oracles.noisy_btls`, shared with :mod:`dpopt.neural`; the queries
and their private release in :mod:`dpopt.oracles.line_search`.  This module
re-exports them under the family's earlier names.
"""

from __future__ import annotations

from ..oracles.line_search import NOISES, QUERIES, Ray, armijo_queries, line_search_event
from ..oracles.noisy_btls import candidate_steps, noisy_btls, noisy_btls_step, reset_initial_step

__all__ = [
    "NOISES",
    "QUERIES",
    "Ray",
    "line_search_event",
    "candidate_steps",
    "armijo_queries",
    "noisy_btls",
    "noisy_btls_step",
    "reset_initial_step",
]
