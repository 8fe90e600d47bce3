"""Output perturbation (Chaudhuri, Monteleoni & Sarwate 2011, JMLR, Algorithm 1; chen2020 ref. [16]).

Release w* + b where w* = argmin J(w), J(w) = (1/n) Σ ℓ(y_i wᵀx_i) + (Λ/2)‖w‖².
For |ℓ'| ≤ 1 and rows ‖x_i‖₂ ≤ R (enforced by projection) the minimizer has
L2 sensitivity 2R/(nΛ) under replace-one (Corollary 8 with R = 1: 2/(nΛ)).

The solver returns a point x̂ with ‖∇J(x̂)‖₂ ≤ tol, so ‖x̂ − w*‖ ≤ tol/Λ on
*both* neighbours (strong convexity); the released point therefore has
sensitivity at most Δ₂ = 2R/(nΛ) + 2·tol/Λ, which is what is charged (with
tol = 1e-7 it adds 0.4 % for n = 44,000, Λ = 0.001).  Where L-BFGS stops short of ``tol`` (it
did on one of two neighbouring data sets at Λ = 1e-6), the solver goes on by accelerated gradient
with the public smoothness bound of a smooth loss, which reaches ``tol`` on every data set, so
whether a release happens does not depend on the data; if ``tol`` still cannot be certified
(a ``tol`` below floating-point precision) nothing is released (``RuntimeError``).  Non-smooth
losses are refused before anything is computed: with the hinge loss L-BFGS certified ``tol`` on
some data sets and not on a replace-one neighbour.

Noise, through :mod:`dpopt.privacy.mechanisms`:

* ``noise="laplace"`` — density ∝ exp(−ε‖b‖/Δ₂) (Algorithm 1, vector
  Laplace): pure ε-DP, charged as ``VectorLaplace(Δ₂/ε, Δ₂)`` on a pure ledger;
* ``noise="gaussian"`` — N(0, σ²I) with the smallest σ that the run's
  accountant (``accountant=``, PLD by default) certifies as (ε, δ)-DP for one
  release (:func:`~dpopt.privacy.calibration.calibrate_run`), charged as
  ``Gaussian(σ, Δ₂)`` on a ledger of that accountant.

The default is Gaussian when δ > 0 (its noise norm grows like √d instead of d).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..._validation import as_generator, check_choice, check_positive
from ...models import diagnostic_value
from ...oracles import run_ledger
from ...privacy import events as ev
from ...privacy import mechanisms as mech
from ...privacy.calibration import calibrate_run, run_accountant
from ...result import DPResult
from ._common import Hyper, check_budget, check_margin_model, smoothness_bound, solve_erm, unit_ball_model

__all__ = ["OutPertHyper", "outpert_sensitivity", "output_perturbation"]

NOISES = ("auto", "laplace", "gaussian")


@dataclass(frozen=True)
class OutPertHyper(Hyper):
    """Hyper-parameters of :func:`output_perturbation`.

    Attributes
    ----------
    noise:
        ``"auto"`` (Gaussian if δ > 0, else Laplace), ``"laplace"`` or ``"gaussian"``.
    data_norm:
        R, the declared bound ‖x_i‖₂ ≤ R; rows beyond it are projected onto the ball.
    tol:
        Certified solver tolerance on ‖∇J‖₂ (adds 2·tol/Λ to the sensitivity).
    x0:
        Starting point of the solver (default zeros).  Any point may be used,
        even a data-dependent one such as the non-private solution: the
        released point is certified to be within tol/Λ of the exact minimizer
        whatever the start, which is all the privacy argument uses.
    """

    noise: str = "auto"
    data_norm: float = 1.0
    tol: float = 1e-7
    x0: np.ndarray | None = None

    def __post_init__(self):
        check_choice("noise", self.noise, NOISES)
        check_positive("data_norm", self.data_norm)
        check_positive("tol", self.tol)


def outpert_sensitivity(*, n: int, reg: float, data_norm: float = 1.0, lipschitz: float = 1.0,
                        tol: float = 0.0) -> float:
    """Δ₂ = 2·L·R/(nΛ) + 2·tol/Λ: Chaudhuri et al. 2011 Corollary 8 plus the solver's certificate.

    ``lipschitz`` is L ≥ sup|ℓ'| (1 for logistic and hinge-type losses), ``reg`` Λ.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    reg = check_positive("reg", reg)
    data_norm = check_positive("data_norm", data_norm)
    lipschitz = check_positive("lipschitz", lipschitz)
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    return 2.0 * lipschitz * data_norm / (n * reg) + 2.0 * tol / reg


def output_perturbation(model, *, epsilon: float | None = None, delta: float = 0.0, rng=None,
                        ledger=None, accountant=None, secure_noise: bool = False, **hyper) -> DPResult:
    """OUTPERT: the regularized ERM minimizer plus noise scaled to its sensitivity (Chaudhuri et al. 2011).

    ``model`` is a :class:`~dpopt.linesearch.model.LinearModel` with a smooth
    margin loss (|ℓ'| ≤ 1, bounded ℓ'': logistic, Huberized hinge; the solver's certificate
    is then reached on every data set) and ``l2`` = Λ > 0.  Replace-one relation.  Laplace
    noise gives ε-DP (δ unused); Gaussian noise needs δ > 0.  Hyper-parameters:
    the fields of :class:`OutPertHyper`; ``info`` holds Δ₂, the noise scale and
    the solver's certificate.  Spent from ``ledger`` when given (replace-one;
    :func:`dpopt.oracles.run_ledger`).  Gaussian σ is calibrated by
    ``accountant`` (``"rdp"``, ``"pld"``, ``"auto"``/None: the tightest,
    :func:`~dpopt.privacy.calibration.run_accountant`); for one release the
    PLD accountant's ε is the exact Gaussian curve up to its grid.
    ``secure_noise=True`` releases Gaussian noise as an exact discrete
    Gaussian on a power-of-two grid from the OS CSPRNG
    (:func:`dpopt.privacy.mechanisms.gaussian`; not for ``noise="laplace"``,
    whose vector Laplace has no floating-point-safe sampler here).
    """
    # smooth: a hinge-loss J has kinks where L-BFGS stalls on some data sets and not on their neighbours
    model = check_margin_model(model, "outpert", smooth=True)
    h = OutPertHyper.from_kwargs(**hyper)
    if ledger is not None and epsilon is None:
        epsilon, delta = ledger.epsilon, ledger.delta
    epsilon, delta = check_budget(epsilon, delta, need_delta=False)
    noise = h.noise if h.noise != "auto" else ("gaussian" if delta > 0 else "laplace")
    if noise == "gaussian" and delta == 0.0:
        raise ValueError("delta must be in (0, 1) for noise='gaussian'; use noise='laplace' for delta = 0")
    if secure_noise and noise == "laplace":
        raise ValueError("secure_noise=True needs noise='gaussian' (no floating-point-safe vector Laplace sampler)")
    rng = as_generator(rng)
    projected, moved = unit_ball_model(model, h.data_norm)
    sol = solve_erm(projected, tol=h.tol, x0=h.x0, smoothness=smoothness_bound(model, h.data_norm))
    if sol.grad_norm > h.tol:
        raise RuntimeError(  # (not the norm it reached: a value computed from the data)
            f"the solver could not certify ||grad|| <= tol = {h.tol:g}; nothing was released "
            "(raise tol: the sensitivity grows by 2 tol/l2)"
        )
    sensitivity = outpert_sensitivity(n=model.n, reg=model.l2, data_norm=h.data_norm,
                                      lipschitz=model.loss.derivative_bound, tol=h.tol)
    acc = "pure" if noise == "laplace" else run_accountant(accountant, ledger)
    ledger, _, _ = run_ledger(ledger, epsilon, 0.0 if noise == "laplace" else delta,
                              accountant=acc, relation="replace_one")
    if noise == "laplace":
        x = mech.vector_laplace(sol.x, sensitivity=sensitivity, epsilon=epsilon, ledger=ledger, rng=rng)
        scale = sensitivity / epsilon
    else:
        def charged(s: float) -> ev.Event:  # the event the release charges: calibrate that one
            gaussian = ev.Gaussian(s, sensitivity)
            return mech.secure_event(gaussian, sol.x.size)[0] if secure_noise else gaussian

        scale = calibrate_run(charged, epsilon, delta, acc, start=sensitivity)
        x = mech.gaussian(sol.x, sensitivity=sensitivity, sigma=scale, ledger=ledger, rng=rng,
                          secure_noise=secure_noise)
    info = {"noise": noise, "sensitivity": sensitivity, "noise_scale": scale, "rows_projected": moved,
            "grad_norm": sol.grad_norm, "solver_iterations": sol.nit}
    return DPResult.from_ledger(
        ledger, x=x, fun=diagnostic_value(model, x), method="outpert", nit=sol.nit, info=info, guarantee="exact",
        notes="replace-one relation (Chaudhuri et al. 2011, Cor. 8); the sensitivity includes the "
              "solver's certified distance to the exact minimizer.",
    )
