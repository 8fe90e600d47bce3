"""DP-AGD (Lee & Kifer 2018, "Concentrated differentially private gradient descent with adaptive
per-iteration privacy budget", KDD; chen2020 ref. [6]).

Full-batch gradient descent whose step size is picked privately and whose
gradient budget grows when the picked step is 0:

1. (ε, δ) → ρ with ρ + 2√(ρ log(1/δ)) = ε (Bun & Steinke 2016, Prop. 1.3;
   :func:`dpopt.privacy.zcdp.rho_from_epsilon_delta`).
2. Each iteration releases the clipped gradient sum with Gaussian noise of
   budget ρ_ng (σ = C_grad/√(2ρ_ng)), adds the public regularizer gradient and
   normalizes: d = g̃/‖g̃‖.
3. NoisyMin over the 21 candidates Φ = {0, α_max/20, …, α_max}: the clipped
   objective Σ_i min{f_i(w − α d), C_obj} + N·r(w − α d) (sensitivity C_obj, N
   the public record count: ``n_public``, else a noisy count released first)
   is minimized by the exponential mechanism with ε_nmax = √(2ρ_nmax), which
   is ε_nmax²/2 = ρ_nmax-zCDP (Bun & Steinke 2016, Prop. 1.4).  By default the
   scores are the per-record decreases clipped to ±C_obj instead (same
   sensitivity; ``query``, see :class:`DPAGDHyper`): the clipped objective
   favours the majority-class predictor on imbalanced data.
4. If a step α > 0 wins, w ← w − α d.  If α = 0 wins, the gradient budget is
   raised: a fresh estimate with the extra budget γρ_ng is averaged in by
   GradAvg (:func:`dpopt.linesearch.cheb.gradient_average`), ρ_ng ← (1+γ)ρ_ng,
   and NoisyMin is asked again on the new direction.
5. Every 10 iterations α_max ← min{1.1·max(recent chosen steps), α_max⁰}.
6. The run stops when the next release no longer fits the ρ budget.

Accounting: every release is charged to a zCDP :class:`Ledger` (Gaussian: ρ =
C²/(2σ²); exponential: ε²/2) whose (ε, δ) conversion is the same Prop. 1.3,
so the ledger refuses exactly when ρ is spent.  The initial budgets follow
the authors' reference implementation: ε_nmax = ε/(2·splits) with
splits = 60, ρ_nmax = ε_nmax²/2, and ρ_ng that of the classic Gaussian
mechanism at (ε_nmax, δ), i.e. ρ_ng = ε_nmax²/(4 log(1.25/δ)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._validation import as_generator, check_choice, check_int, check_positive
from ...models import check_model, diagnostic_value, start_point
from ...oracles import QUERIES, PrivateOracle, normalizer_note, public_normalizer, run_ledger
from ...privacy import events as ev
from ...privacy.zcdp import rho_from_epsilon_delta
from ...result import DPResult
from ..cheb import gradient_average
from ..model import default_gradient_clip
from ._common import Hyper, check_budget

__all__ = ["DPAGDHyper", "dp_agd", "initial_budgets", "step_grid"]


@dataclass(frozen=True)
class DPAGDHyper(Hyper):
    """Hyper-parameters of :func:`dp_agd`.

    Attributes
    ----------
    c_grad, c_obj:
        Gradient and objective clipping thresholds (chen2020 §5.4: 3 and 1).
        ``c_grad=None`` (default) is 3 lowered to the model's public per-example
        gradient bound (:func:`~dpopt.linesearch.model.default_gradient_clip`),
        as for every gradient method of the comparison.
    gamma:
        Budget increase rate γ when step 0 wins (Lee & Kifer 2018: 0.1).
    splits:
        Sets the initial budgets: ε_nmax = ε/(2·splits) (reference code: 60).
    rho_nmax, rho_ng:
        Override the initial NoisyMin and gradient budgets (zCDP ρ).
    max_step:
        Initial largest candidate step α_max⁰ (reference code: 2.0); the step
        applies to the normalized direction, so it is a distance in w.
    n_candidates:
        Number of positive candidate steps (20, plus the step 0: 21 in all).
    reset_every, reset_factor:
        Every ``reset_every`` iterations α_max ← min{reset_factor·max(chosen), α_max⁰}
        (Lee & Kifer 2018: 10 and 1.1).
    w0:
        Public starting point (default zeros).
    n_public:
        The public record count N that the noisy gradient sum is divided by
        before the regularizer gradient is added (and that weights the
        regularizer in the NoisyMax scores).  Default: the model's declared
        ``n_public``, else a noisy count (:func:`dpopt.oracles.public_normalizer`);
        never the data's own n (issue 14, finding 3).
    max_iter:
        Safety cap on iterations (the budget normally stops the run first).
    query:
        What NoisyMax scores, both with sensitivity C_obj (the same events):
        ``"decrease"`` (default) — the per-record decreases f_i(w) − f_i(w − αd)
        clipped to ±C_obj, as DP-BLSGD's default line search; ``"objective"`` —
        Lee & Kifer's clipped objective Σ min{f_i, C_obj}.  With C_obj = 1 the
        clipped objective is lower at the majority-class predictor than at the
        minimizer on Adult, and DP-AGD then picked step 0 until its budget was
        spent (measured at ε = 1.6: 72 budget increases in 90 iterations, test
        accuracy 0.789 with ``"objective"``, 0.826 with ``"decrease"``); see
        :class:`~dpopt.linesearch.algorithms.LineSearchHyper`, ``query``.
    trajectory:
        Record F(w_t) on the full data after every iteration (non-private).
    """

    c_grad: float | None = None
    c_obj: float = 1.0
    gamma: float = 0.1
    splits: int = 60
    rho_nmax: float | None = None
    rho_ng: float | None = None
    max_step: float = 2.0
    n_candidates: int = 20
    reset_every: int = 10
    reset_factor: float = 1.1
    w0: np.ndarray | None = None
    n_public: int | None = None
    max_iter: int = 100_000
    query: str = "decrease"
    trajectory: bool = False

    def __post_init__(self):
        if self.c_grad is not None:
            check_positive("c_grad", self.c_grad)
        check_positive("c_obj", self.c_obj)
        check_positive("gamma", self.gamma)
        check_int("splits", self.splits)
        for name in ("rho_nmax", "rho_ng"):
            if getattr(self, name) is not None:
                check_positive(name, getattr(self, name))
        check_positive("max_step", self.max_step)
        check_int("n_candidates", self.n_candidates)
        check_int("reset_every", self.reset_every)
        check_positive("reset_factor", self.reset_factor)
        check_int("max_iter", self.max_iter)
        check_choice("query", self.query, QUERIES)
        if self.n_public is not None:
            check_int("n_public", self.n_public)


def initial_budgets(epsilon: float, delta: float, hyper: DPAGDHyper) -> tuple[float, float]:
    """(ρ_nmax, ρ_ng) at the start: the reference implementation's split unless overridden."""
    eps_nmax = epsilon / (2.0 * hyper.splits)
    rho_nmax = hyper.rho_nmax if hyper.rho_nmax is not None else 0.5 * eps_nmax**2
    if hyper.rho_ng is not None:
        rho_ng = hyper.rho_ng
    else:  # classic Gaussian mechanism σ = C√(2 log(1.25/δ))/ε_nmax, ρ = C²/(2σ²)
        rho_ng = eps_nmax**2 / (4.0 * math.log(1.25 / delta))
    return rho_nmax, rho_ng


def step_grid(max_step: float, n_candidates: int) -> np.ndarray:
    """Φ = {0, α_max/k, 2α_max/k, …, α_max} (k = ``n_candidates``; index 0 is the step 0)."""
    return np.linspace(0.0, check_positive("max_step", max_step), check_int("n_candidates", n_candidates) + 1)


def _direction(oracle: PrivateOracle, noisy_sum: np.ndarray, w: np.ndarray) -> np.ndarray:
    """d = g̃/‖g̃‖ with g̃ = noisy sum/N + ∇r(w), N the public count (0 if g̃ = 0)."""
    g = noisy_sum / oracle.weight + oracle.model.regularizer_grad(w)
    norm = float(np.linalg.norm(g))
    return g / norm if norm > 0.0 else g


def dp_agd(model, *, epsilon: float | None = None, delta: float | None = None, rng=None,
           ledger=None, secure_noise: bool = False, **hyper) -> DPResult:
    """DP-AGD: zCDP gradient descent with NoisyMin step selection and adaptive budget (Lee & Kifer 2018).

    ``model`` is a :class:`~dpopt.models.PrivateModel` (full batch, no
    sampling).  (``epsilon``, ``delta``) is converted to the zCDP budget ρ of
    :func:`~dpopt.privacy.zcdp.rho_from_epsilon_delta`; every release is
    charged to ``ledger`` when given (zCDP, add/remove-one), else to a new
    zCDP ledger.  Hyper-parameters: the fields of :class:`DPAGDHyper`.
    Returns the last iterate (``method="dp-agd"``); ``info`` holds ρ, the
    final budgets, the chosen steps, the number of budget increases and the
    normalizer.  ``secure_noise=True``: every gradient sum (and the record count) is released
    on a grid with exact discrete Gaussian noise, charged as the ``DiscreteGaussian`` it is (the
    same ρ = Δ²/(2σ²) under zCDP, Canonne, Kamath & Steinke 2020), and every NoisyMin by the
    exact exponential mechanism at the same ε.
    """
    model = check_model(model)
    if ledger is None:
        check_budget(epsilon, delta, need_delta=True)
    h = DPAGDHyper.from_kwargs(**hyper)
    ledger, epsilon, delta = run_ledger(ledger, epsilon, delta, accountant="zcdp")
    rng = as_generator(rng)
    normalizer = public_normalizer(model, n_public=h.n_public, ledger=ledger, rng=rng,
                                   epsilon=epsilon, delta=delta, secure_noise=secure_noise)
    rho_total = rho_from_epsilon_delta(epsilon, delta)
    rho_nmax, rho_ng = initial_budgets(epsilon, delta, h)
    rho_ng0 = rho_ng
    eps_nmax = math.sqrt(2.0 * rho_nmax)
    noisy_max_event = ev.Exponential(eps_nmax)
    c_grad = h.c_grad if h.c_grad is not None else default_gradient_clip(model)
    oracle = PrivateOracle(model, ledger=ledger, rng=rng, normalizer=normalizer, c_grad=c_grad,
                           c_obj=h.c_obj, query=h.query, secure_noise=secure_noise)

    w = start_point(model, h.w0)
    max_step, recent, chosen = h.max_step, [], []
    increases, noisy_max_calls, t, stop = 0, 0, 0, "max_iter"
    trajectory = []
    while t < h.max_iter:
        if not oracle.can_afford(oracle.gradient_event(rho_ng), noisy_max_event):
            stop = "budget"
            break
        noisy = oracle.noisy_gradient_sum(w, rho_ng)
        direction = _direction(oracle, noisy, w)
        grid = step_grid(max_step, h.n_candidates)
        while True:
            index = oracle.select_step(w, direction, grid, epsilon=eps_nmax)
            noisy_max_calls += 1
            if index > 0:
                w = w - grid[index] * direction
                recent.append(grid[index])
                chosen.append(grid[index])
                break
            extra = h.gamma * rho_ng
            if not oracle.can_afford(oracle.gradient_event(extra), noisy_max_event):
                stop = "budget"
                break
            fresh = oracle.noisy_gradient_sum(w, extra)
            noisy = gradient_average(noisy, rho_ng, fresh, extra)
            rho_ng += extra
            increases += 1
            direction = _direction(oracle, noisy, w)
        t += 1
        if h.trajectory:
            trajectory.append(diagnostic_value(model, w))
        if stop == "budget":
            break
        if t % h.reset_every == 0 and recent:
            max_step = min(h.reset_factor * max(recent), h.max_step)
            recent = []
    info = {
        "stop": stop,
        "rho": rho_total,
        "rho_nmax": rho_nmax,
        "epsilon_nmax": eps_nmax,
        "rho_ng_initial": rho_ng0,
        "rho_ng": rho_ng,
        "budget_increases": increases,
        "noisy_max_calls": noisy_max_calls,
        "steps": np.array(chosen),
        "max_step": max_step,
        "c_grad": c_grad,
        "c_obj": h.c_obj,
        "normalizer": normalizer.describe(),
    }
    return DPResult.from_ledger(
        ledger, x=w, fun=diagnostic_value(model, w), method="dp-agd", nit=t,
        trajectory=np.array(trajectory) if h.trajectory else None, info=info, guarantee="exact",
        notes="zCDP (Bun & Steinke 2016) with epsilon = rho + 2 sqrt(rho log(1/delta)); NoisyMin is "
              "the exponential mechanism (eps^2/2-zCDP); budgets adapt to released values only. "
              + normalizer_note(normalizer),
    )
