"""Baselines of chen2020 §5.3, each with its own accounting through :mod:`dpopt.privacy`.

Every function has the calling convention ``fn(model, *, epsilon, delta, rng, **hyper) -> DPResult``
of the line-search methods (:mod:`dpopt.linesearch.algorithms`):

* :func:`dp_sgd` — DP-SGD (Abadi et al. 2016): Poisson sampling, clipping, Gaussian noise, RDP.
* :func:`dp_agd` — DP-AGD (Lee & Kifer 2018): NoisyMin step selection, adaptive budget, zCDP.
* :func:`objective_perturbation` — OBJPERT (Chaudhuri et al. 2011, Algorithm 2): pure ε-DP.
* :func:`output_perturbation` — OUTPERT (Chaudhuri et al. 2011, Algorithm 1): vector Laplace or Gaussian.
* :func:`non_private` — L-BFGS reference, no guarantee.
* :func:`majority` — majority-class predictor, label chosen by the exponential mechanism.
* :func:`diffprivlib_lr` — IBM diffprivlib's logistic regression (optional dependency).
"""

from .dp_agd import DPAGDHyper, dp_agd
from .dp_sgd import DPSGDHyper, dp_sgd
from .external import DiffprivlibHyper, diffprivlib_available, diffprivlib_lr
from .objpert import ObjPertHyper, ObjPertParameters, objective_perturbation, objpert_parameters
from .outpert import OutPertHyper, outpert_sensitivity, output_perturbation
from .reference import NonPrivateHyper, majority, non_private

__all__ = [
    "dp_sgd",
    "dp_agd",
    "objective_perturbation",
    "output_perturbation",
    "non_private",
    "majority",
    "diffprivlib_lr",
    "diffprivlib_available",
    "objpert_parameters",
    "outpert_sensitivity",
    "DPSGDHyper",
    "DPAGDHyper",
    "ObjPertHyper",
    "ObjPertParameters",
    "OutPertHyper",
    "NonPrivateHyper",
    "DiffprivlibHyper",
]
