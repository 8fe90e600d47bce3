"""Private Bayesian optimization for hyper-parameter tuning (Kusner et al. 2015).

- :mod:`.space`: the finite candidate set Λ (Sobol points in a box, log axes, or a grid);
- :mod:`.gp`: the GP over Λ (squared-exponential and Matérn-5/2 kernels), β_t, γ_T;
- :mod:`.bounds`: the sensitivities of Theorems 1, 3, 5 and 7;
- :mod:`.algorithms`: GP-UCB and Algorithms 1–3 (:func:`optimize`).

Algorithms 1–2 carry a *conditional* guarantee (it holds only under the
multi-task GP assumption with the stated k₁(V, V′)); Algorithm 3's is *exact*.
"""

from .algorithms import ALGORITHMS, MAX_STEPS, RELEASES, check_steps, optimize, run_ucb
from .gp import KERNELS, FiniteGP, beta, information_gain, kernel_matrix, max_information_gain
from .space import CandidateSet

__all__ = [
    "optimize",
    "run_ucb",
    "ALGORITHMS",
    "RELEASES",
    "MAX_STEPS",
    "check_steps",
    "CandidateSet",
    "FiniteGP",
    "KERNELS",
    "kernel_matrix",
    "beta",
    "information_gain",
    "max_information_gain",
]
