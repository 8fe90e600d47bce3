"""DP-SGD, DP-Adam and DP-BLSGD on a network at equal per-iteration Rényi DP (chen2020 §5.7).

Every iteration t:

1. a Poisson minibatch at rate q (the accountant's assumption, chen2020 Lemma 4);
2. g̃_t = (Σ_B clip(∇f_i, C_grad) + N(0, σ²I))/(q n) + μ w_t (chen2020 Algorithm 2,
   lines 5–6; Abadi et al. 2016), the sum normalized by the *expected* batch size;
3. the update, post-processing of g̃_t:

   * ``dp-sgd``: w ← w − η g̃ (η fixed; §5.4: 0.2 for MNIST/FMNIST);
   * ``dp-adam``: Adam (Kingma & Ba 2015, Algorithm 1, default β₁, β₂, ε̂) on g̃;
   * ``dp-blsgd``: η from NoisyBTLS (chen2020 Algorithm 1, Gaussian version) on a
     fresh Poisson minibatch, through the same :class:`~dpopt.oracles.LineSearchOracle`
     and :func:`~dpopt.oracles.noisy_btls_step` as the convex case (:mod:`dpopt.linesearch`); a failed
     search returns β^{max_it}·η₀ (§5.7: "instead of 0"), never a free retry; intelligent
     backtracking every τ iterations (§4.2).  No budget increase (CHEB is off, §5.7).

Equal per-iteration budget (§5.7): one ρ_iter = 1/(2z²) per iteration.  DP-SGD and
DP-Adam spend it on the gradient, σ = z·C_grad; DP-BLSGD spends 90 % on the gradient
(ρ_grad = 0.9 ρ_iter) and 10 % on the search (ρ_BT = 0.1 ρ_iter, σ₁² = 3/(2ρ_BT),
σ₂² = 3/ρ_BT in units of Δ_q = C_obj), so every iteration is (α, α ρ_iter)-RDP before
amplification for all three.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._validation import check_choice, check_int, check_open_unit, check_positive
from ..oracles import (
    LineSearchOracle,
    gaussian_sigma,
    noisy_btls_step,
    release_events,
    reset_initial_step,
    step_event,
)
from ..privacy import BudgetExceededError, PoissonSampler
from ..privacy import events as ev
from ..privacy.torch_noise import gaussian_tensor
from .model import TorchModel

__all__ = ["METHODS", "NeuralHyper", "iteration_event", "run"]

METHODS = ("dp-sgd", "dp-adam", "dp-blsgd")


@dataclass(frozen=True)
class NeuralHyper:
    """Step parameters (defaults: chen2020 §5.4 for networks, Adam's defaults).

    ``lr`` is DP-SGD's step (§5.4: 0.2) or Adam's (default 0.001); ``None`` picks those.
    DP-BLSGD: ``eta0`` initial step, ``alpha``/``beta`` Armijo constant and backtracking
    factor (§5.4: 0.001 and 0.8), ``max_it`` candidates, ``tau``/``varsigma`` intelligent
    backtracking (§5.4: 10 and 1.2), ``c_obj`` = Δ_q (§5.4: 3), ``search_share`` the part
    of ρ_iter given to the search (§5.7: 0.1).
    """

    lr: float | None = None
    betas: tuple = (0.9, 0.999)
    adam_eps: float = 1e-8
    eta0: float = 1.0
    alpha: float = 0.001
    beta: float = 0.8
    max_it: int = 10
    tau: int = 10
    varsigma: float = 1.2
    c_obj: float = 3.0
    search_share: float = 0.1

    def __post_init__(self):
        if self.lr is not None:
            check_positive("lr", self.lr)
        for name in ("eta0", "c_obj", "adam_eps"):
            check_positive(name, getattr(self, name))
        for name in ("alpha", "beta", "search_share"):
            check_open_unit(name, getattr(self, name))
        check_int("max_it", self.max_it)
        check_int("tau", self.tau)
        if len(self.betas) != 2 or not all(0.0 <= b < 1.0 for b in self.betas):
            raise ValueError(f"betas must be two values in [0, 1), got {self.betas!r}")

    def step(self, method: str) -> float:
        if self.lr is not None:
            return self.lr
        return 0.2 if method == "dp-sgd" else 0.001


def _budgets(method: str, z: float, hyper: NeuralHyper) -> tuple[float, float]:
    """(ρ_grad, ρ_BT) of one iteration for noise multiplier z (ρ_iter = 1/(2z²))."""
    rho = 1.0 / (2.0 * z * z)
    if method == "dp-blsgd":
        return (1.0 - hyper.search_share) * rho, hyper.search_share * rho
    return rho, 0.0


def iteration_event(method: str, z: float, hyper: NeuralHyper, *, rate: float, clip: float, dim: int,
                    secure_noise: bool = False) -> ev.Event:
    """The (amplified) event of one iteration of ``method`` at noise multiplier z, as the oracle of
    :func:`make_oracle` with these settings charges it (with ``secure_noise``, the discrete Gaussian of
    its gradient release): public settings only, so a run is calibrated before its oracle exists."""
    rho_grad, rho_bt = _budgets(method, z, hyper)
    options = {"noise": "gaussian", "dim": dim, "secure_noise": secure_noise}
    if rho_bt:  # a gradient and a line search, composed as the oracles charge them
        return step_event(rho_grad, rho_bt, c_grad=clip, c_obj=hyper.c_obj, rate=rate, **options)
    return PoissonSampler(rate).wrap(release_events("gradient", rho_grad, clip, **options)[1])


def make_oracle(model: TorchModel, *, ledger, rng, rate: float, clip: float, hyper: NeuralHyper,
                normalizer, secure_noise: bool = False):
    """The oracle that owns sampling at rate q, the thresholds, the line-search events and the public
    normalizer q·N (``normalizer``: a :class:`~dpopt.oracles.Normalizer` or a declared count)."""
    return LineSearchOracle(model, ledger=ledger, rng=rng, rate=rate, c_grad=clip, c_obj=hyper.c_obj,
                            noise="gaussian", lazy=True, query="decrease", normalizer=normalizer,
                            secure_noise=secure_noise)


def run(model: TorchModel, method: str, *, oracle: LineSearchOracle, generator, steps: int, z: float,
        hyper: NeuralHyper, progress=None, callback=None) -> dict:
    """Train ``model`` in place for up to ``steps`` iterations; returns the history and stop reason.

    The run stops early, keeping the last completed iterate, when the next iteration no longer
    fits the ledger's budget or on ``KeyboardInterrupt`` (Ctrl-C): then the parameters of
    the last completed iteration are restored, and the ledger holds every event charged so far.
    """
    method = check_choice("method", method, METHODS)
    ledger, clip = oracle.ledger, oracle.c_grad
    rho_grad, rho_bt = _budgets(method, z, hyper)
    sigma = gaussian_sigma(rho_grad, clip)
    planned = iteration_event(method, z, hyper, rate=oracle.rate, clip=clip, dim=model.dim,
                              secure_noise=oracle.secure_noise)
    lr, eta0, chosen = hyper.step(method), hyper.eta0, []
    w = model.get_tensor()
    m = torch.zeros_like(w)
    v = torch.zeros_like(w)
    history = {"iteration": [], "epsilon": [], "step_size": []}
    stop = "completed"
    for t in range(steps):
        if not ledger.can_afford(planned):
            stop = "budget"
            break
        try:
            idx = None if oracle.sampler is None else oracle.sampler.indices(model.n, oracle.rng)
            total = model.clipped_grad_sum_tensor(idx, clip)
            g = gaussian_tensor(total, sensitivity=clip, sigma=sigma, ledger=ledger, generator=generator,
                                sampler=oracle.sampler, secure_noise=oracle.secure_noise) / oracle.weight
            if model.l2:
                g = g + model.l2 * w
            if method == "dp-sgd":
                eta, update = lr, g
            elif method == "dp-adam":
                b1, b2 = hyper.betas
                m.mul_(b1).add_(g, alpha=1.0 - b1)
                v.mul_(b2).addcmul_(g, g, value=1.0 - b2)
                update = (m / (1.0 - b1 ** (t + 1))) / ((v / (1.0 - b2 ** (t + 1))).sqrt() + hyper.adam_eps)
                eta = lr
            else:
                eta = noisy_btls_step(oracle, w.cpu().double().numpy(), g.cpu().double().numpy(), eta0=eta0,
                                      budget=rho_bt, alpha=hyper.alpha, beta=hyper.beta, max_it=hyper.max_it)
                if eta == 0.0:  # §5.7: the smallest step β^max_it·η₀ instead of 0
                    eta = eta0 * hyper.beta ** hyper.max_it
                chosen.append(eta)
                if (t + 1) % hyper.tau == 0:
                    eta0, chosen = reset_initial_step(eta0, chosen, hyper.varsigma), []
                update = g
            w = w - eta * update
            model.set_tensor(w)
        except KeyboardInterrupt:
            model.set_tensor(w)
            stop = "interrupted"
            break
        except BudgetExceededError:  # cannot happen after can_afford; kept as a guard
            model.set_tensor(w)
            stop = "budget"
            break
        spent = ledger.spent().epsilon
        history["iteration"].append(t + 1)
        history["epsilon"].append(spent)
        history["step_size"].append(float(eta))
        if callback is not None:
            callback(t + 1, model.module)
        if progress is not None:
            progress(t + 1, steps, f"{method} epsilon={spent:.4g}")
    return {"history": {k: np.asarray(v) for k, v in history.items()}, "stop": stop,
            "sigma": sigma, "rho_grad": rho_grad, "rho_search": rho_bt, "eta0_final": eta0}


def steps_from_epochs(epochs: float, rate: float) -> int:
    """Iterations of ``epochs`` passes at Poisson rate q: ⌈epochs/q⌉."""
    return max(1, math.ceil(check_positive("epochs", epochs) / rate))
