"""Private distributed dual averaging over a gossip network (liu2024).

Algorithm 1 with random node activation, Gaussian-perturbed local
subgradients, Metropolis gossip and the prox step (6); an in-process
vectorized simulator and an MPI back end (extra ``dpopt[mpi]``) run the same
code.  See :func:`minimize` and :mod:`.accounting` for the privacy record.
"""

from . import accounting, graphs, prox, schedules
from .accounting import accountant_sigma, epsilon_of, theorem1_sigma
from .api import minimize
from .graphs import gossip_matrix, supergraph
from .prox import Regularizer
from .schedules import Schedule

__all__ = [
    "minimize",
    "accounting",
    "graphs",
    "prox",
    "schedules",
    "theorem1_sigma",
    "accountant_sigma",
    "epsilon_of",
    "supergraph",
    "gossip_matrix",
    "Regularizer",
    "Schedule",
]
