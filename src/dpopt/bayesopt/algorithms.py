"""Private Bayesian optimization: kusner2015 Algorithms 1–3 over a finite candidate set Λ.

:func:`optimize` runs GP-UCB (eq. (3)) for T steps on a validation-gain
``objective`` and releases, through :mod:`dpopt.privacy.mechanisms`, the
chosen hyper-parameter λ̃ and/or the best validation gain ṽ:

========== ============================================ ============================================
algorithm  λ̃ (exponential mechanism)                   score (Laplace mechanism)
========== ============================================ ============================================
1 (noisy)  u = μ_T, Δ = 2√β_{T+1} + c (Thm 1)           max_t v_t, Δ = √(C₁β_Tγ_T/T) + c + q (Thm 3)
2 (exact)  as 1 with q = 0 (§4)                          max_{2≤t≤T} f(λ_t), Δ = Ae^{−2τ/(log 2)^{d/4}} + c
3 (convex) u = f_V(w_λ) on all of Λ, per-record Δ       max_t f_V(w_{λ_t}), Δ_f of Theorem 7
========== ============================================ ============================================

Algorithms 1–2 are *conditional*: the (ε, δ) holds only if the validation
functions follow the multi-task GP(0, k₁(V, V′) ⊗ k₂) with the k₁ the user
states (Assumption 1); the result says so and records k₁.  Algorithm 3 is
*exact* (worst case) under Assumption 2, which the caller asserts by giving
the regularization λ of eq. (10) for every candidate, L and g*.  Its λ̃ is
released by the exponential mechanism over *every* candidate's validation
score (each evaluated once; the training set is public under the paper's
setting), since a release among the evaluated candidates alone would leak
which candidates Bayesian optimization visited.

The budget ``epsilon`` (and δ) covers what is released; releasing both λ̃ and
the score gives each half (Dwork et al. composition; kusner2015 §3.2 end).

``secure_noise=True`` makes both releases floating-point safe (Mironov 2012) at the
same ε: λ̃ by the exact exponential mechanism (scores rounded to a power-of-two grid,
rational acceptance probabilities; charged ``Exponential(ε)``), the score by exact
discrete Laplace noise on a grid (charged ``DiscreteLaplace`` at ε).  The score is a
continuous scalar, but Algorithms 1–2 declare no bound on the gains, which the snapping
mechanism needs (its clamp B), and snapping costs ε·(1 + 2⁻⁴⁹B/Δ) more; the discrete
Laplace keeps ε exactly, needs no bound, and its grid (≤ Δ/2²⁰) is far below the noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._validation import (
    as_generator,
    check_choice,
    check_finite_array,
    check_int,
    check_open_unit,
    check_positive,
)
from ..privacy import BudgetExceededError, Ledger
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from ..result import DPResult
from . import bounds
from .gp import FiniteGP, beta, max_information_gain
from .space import CandidateSet

__all__ = ["optimize", "run_ucb", "ALGORITHMS", "RELEASES"]

#: The most GP-UCB steps one search may take (``n_iter``).  Step t factors the t × t kernel matrix of the
#: observations, O(t³): measured on one core 0.24 s at t = 500, 1.05 s at 2,000, 3.9 s at 4,000, so T steps
#: cost about T/4 times the last one: 1e4 steps ~1 min a step at the end, ~40 CPU-hours and 2.4 GB in all;
#: 1e5 would need 80 GB a matrix and years.  (``n_iter=10**9`` ran silently until killed.)
MAX_STEPS = 10**4


def check_steps(name: str, value) -> int:
    """A number of GP-UCB steps in [1, :data:`MAX_STEPS`] (the reason is in the message)."""
    return check_int(name, value, maximum=MAX_STEPS,
                     why="each step factors a matrix of the steps before it: 1e4 steps take ~40 CPU-hours")


ALGORITHMS = (1, 2, 3)
RELEASES = ("both", "lambda", "score")
#: Neighbouring relation of kusner2015 §2.1: V and V′ differ by swapping one record.
RELATION = "replace_one"


def run_ucb(objective: Callable[[int], float], gp: FiniteGP, n_iter: int, delta: float, *,
            prior_mean: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GP-UCB (eq. (3)): λ_t = argmax μ_{t−1} + √β_t σ_{t−1}; returns (indices, gains, μ_T).

    ``objective(i)`` observes the validation gain of candidate i; the GP models
    gain − ``prior_mean`` (a fixed, data-independent offset).  Ties break to the
    lowest index, so the trajectory is a deterministic function of the gains.
    """
    index = np.empty(n_iter, dtype=np.int64)
    gains = np.empty(n_iter)
    mean, var = gp.posterior(index[:0], gains[:0])
    for t in range(1, n_iter + 1):
        ucb = mean + math.sqrt(float(beta(t, len(gp), delta))) * np.sqrt(var)
        i = int(np.argmax(ucb))
        value = float(objective(i))
        if not math.isfinite(value):
            raise ValueError(f"objective returned a non-finite gain {value!r} for candidate {i}")
        index[t - 1], gains[t - 1] = i, value
        mean, var = gp.posterior(index[:t], gains[:t] - prior_mean)
    return index, gains, mean + prior_mean


def _open_ledger(ledger, epsilon: float) -> Ledger:
    """The ledger the releases charge: a new one, a child of ``ledger``, or ``ledger`` itself.

    ``ledger`` must be of the replace-one relation that the sensitivities assume (kusner2015 §2.1); an
    add/remove ledger would have recorded the releases as add/remove guarantees.

    The whole ε of the releases is checked up front (as one pure-ε event,
    never cheaper than its parts), so that a budget too small for the second
    release refuses before the first is drawn.
    """
    if ledger is None:
        return Ledger(epsilon, relation=RELATION)
    mech.check_ledger(ledger, RELATION, why=" for kusner2015's releases (V and V' differ by swapping one record)")
    if not ledger.can_afford(ev.PureDP(epsilon)):
        raise BudgetExceededError(
            f"the releases need epsilon={epsilon:.6g} but the ledger has {ledger.remaining().epsilon:.6g} "
            "left; nothing was released"
        )
    return ledger.child(epsilon, accountant="pure")  # pure ε releases: a pure-DP sub-budget


def _batch(values: np.ndarray, repetitions: int | None) -> np.ndarray:
    return values if repetitions is None else np.broadcast_to(values, (repetitions,) + values.shape)


def optimize(
    objective: Callable[[int], float],
    candidates: CandidateSet,
    *,
    algorithm: int = 1,
    epsilon: float,
    delta: float = 1e-3,
    n_iter: int = 30,
    k1: float = 0.95,
    noise_std: float = 0.05,
    kernel: str = "se",
    length_scale: float = 0.2,
    prior_mean: float = 0.0,
    A: float | None = None,
    tau: float | None = None,
    regularization=None,
    lipschitz: float | None = None,
    g_star: float | None = None,
    validation_size: int | None = None,
    release: str = "both",
    ledger: Ledger | None = None,
    rng=None,
    repetitions: int | None = None,
    return_trace: bool = False,
    secure_noise: bool = False,
) -> DPResult:
    """Private Bayesian optimization of ``objective`` over ``candidates`` (kusner2015 Alg. 1–3).

    Parameters
    ----------
    objective:
        ``objective(i) -> float``: the validation gain of candidate ``i``
        (higher is better).  It reads the private validation set; its values
        are released only through the mechanisms.
    algorithm:
        1 (noisy observations, σ = ``noise_std`` > 0), 2 (exact observations;
        needs ``A`` and ``tau`` of de Freitas et al. 2012 for the score), 3
        (Lipschitz and convex; needs ``regularization`` (λ of eq. (10) per
        candidate), ``lipschitz`` L and ``g_star`` of the validation loss, and
        ``validation_size`` m).
    epsilon, delta:
        Budget of the releases; with ``release="both"`` each release gets half.
        δ is Algorithms 1–2's failure probability (β_t, c, q); Algorithm 3 is
        pure ε-DP and ignores it.
    k1:
        k₁(V, V′) ∈ [0, 1] of Assumption 1 (Algorithms 1–2): the assumed prior
        correlation of the validation functions of neighbouring sets.
    kernel, length_scale:
        k₂ on Λ's unit coordinates (``"se"`` or ``"matern52"``, fixed ℓ).
    release:
        ``"both"``, ``"lambda"`` or ``"score"``.
    ledger:
        Charged with every release (a ``child`` of it when it has one); a new
        pure ledger of budget ``epsilon`` when ``None``.
    repetitions:
        Draw R independent releases of the same run (outputs gain a leading
        axis of length R); the event is charged once because it describes each.
    return_trace:
        Put the evaluated candidates and their gains in ``info["nonprivate_trace"]``
        (not covered by the guarantee).
    secure_noise:
        Release λ̃ and the score with exact, floating-point-safe noise from the OS
        CSPRNG at the same ε (module docstring); ``rng`` then draws nothing.

    Returns
    -------
    DPResult with ``x`` the released candidate (its point in the user's scale),
    ``fun`` the released gain, ``guarantee`` ``"conditional"`` (Alg. 1–2) or
    ``"exact"`` (Alg. 3), and ``info`` holding the released index, the
    sensitivities and noise scales, β, γ_T and the assumption.
    """
    if not isinstance(candidates, CandidateSet):
        raise TypeError(f"candidates must be a CandidateSet, got {type(candidates).__name__}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be 1, 2 or 3, got {algorithm!r}")
    release = check_choice("release", release, RELEASES)
    epsilon = check_positive("epsilon", epsilon)
    T = check_steps("n_iter", n_iter)
    # before any objective call: a NaN or infinite offset raised in the GP's first factorization, after the first
    # gain (in DPBayesSearchCV, after the first private fit was charged)
    prior_mean = float(check_finite_array("prior_mean", prior_mean, ndim=0))
    N = len(candidates)
    rng = as_generator(rng)
    if repetitions is not None:
        repetitions = check_int("repetitions", repetitions)
    parts = 2 if release == "both" else 1
    eps_part = epsilon / parts
    secure_noise = bool(secure_noise)
    info: dict = {"algorithm": algorithm, "n_candidates": N, "n_iter": T, "release": release,
                  "epsilon_per_release": eps_part, "secure_noise": secure_noise}

    if algorithm in (1, 2):
        delta_part = check_open_unit("delta", delta) / parts
        sigma = check_positive("noise_std", noise_std) if algorithm == 1 else 0.0
        c_sel = bounds.c_term(k1, N, delta_part, union=3)
        info.update(k1=float(k1), kernel=kernel, length_scale=length_scale, noise_std=sigma,
                    delta_per_release=delta_part, prior_mean=prior_mean)
        gp = FiniteGP(candidates.unit, kernel=kernel, length_scale=length_scale,
                      noise=sigma**2, jitter=1e-10 if sigma > 0 else 1e-8)
        if algorithm == 2 and release != "lambda" and (A is None or tau is None):
            raise ValueError("algorithm 2 releases its score with de Freitas et al.'s A and tau: give A= and tau=")
        if algorithm == 2 and T < 2:
            raise ValueError("algorithm 2 needs n_iter >= 2 (its score is max over 2 <= t <= T)")
        if algorithm == 2 and release != "lambda":  # public constants, checked before any objective call
            c2 = bounds.c_term(k1, N, delta_part, union=2)
            sens2 = bounds.score_sensitivity_alg2(A, tau, candidates.dim, c2)
        book = _open_ledger(ledger, epsilon)
        index, gains, mu = run_ucb(objective, gp, T, delta_part, prior_mean=prior_mean)
        chosen = score = None
        if release in ("both", "lambda"):
            sens = bounds.selection_sensitivity_gp(T, N, delta_part, c_sel)
            info.update(selection_sensitivity=sens, beta_next=float(beta(T + 1, N, delta_part)), c=c_sel)
            chosen = mech.exponential(_batch(mu, repetitions), epsilon=eps_part, sensitivity=sens,
                                      ledger=book, rng=rng, secure_noise=secure_noise)
        if release in ("both", "score"):
            if algorithm == 1:
                greedy, gamma, _ = max_information_gain(gp.K, T, sigma**2)
                sens = bounds.score_sensitivity_alg1(T, N, delta_part, gamma_T=gamma, noise_std=sigma, c=c_sel)
                best = gains.max()
                info.update(gamma_T_greedy=greedy, gamma_T_bound=gamma, q=bounds.q_term(sigma, delta_part),
                            C1=bounds.c1_constant(sigma), beta_T=float(beta(T, N, delta_part)))
            else:
                sens = sens2
                best = gains[1:].max()
                info.update(A=A, tau=tau, c_score=c2)
            info.update(score_sensitivity=sens, score_scale=sens / eps_part)
            score = mech.laplace(_batch(np.asarray(best), repetitions), sensitivity=sens, epsilon=eps_part,
                                 ledger=book, rng=rng, secure_noise=secure_noise)
        guarantee = "conditional"
        notes = (f"(epsilon, delta)-DP for the validation set only if its validation functions follow the "
                 f"multi-task GP(0, k1(V, V') x k2) with k1(V, V') = {float(k1):g}, k2 = {kernel} "
                 f"(length scale {length_scale:g}), observation noise std {sigma:g} (kusner2015 Assumption 1); "
                 f"each release holds with failure probability delta = {delta_part:g}, so the ledger's "
                 f"epsilon comes with total delta = {delta_part * parts:g} under that assumption.")
    else:
        if regularization is None or lipschitz is None or g_star is None or validation_size is None:
            raise ValueError("algorithm 3 needs regularization=, lipschitz=, g_star= and validation_size=")
        lam = np.broadcast_to(np.asarray(regularization, dtype=float), (N,))
        if not np.all(np.isfinite(lam)) or np.any(lam <= 0):
            raise ValueError("regularization must give a finite λ > 0 for every candidate")
        lam_min, lam_max = float(lam.min()), float(lam.max())
        record = bounds.per_record_term(validation_size, lipschitz=lipschitz, g_star=g_star, lambda_min=lam_min)
        total = bounds.score_sensitivity_alg3(validation_size, lipschitz=lipschitz, g_star=g_star,
                                              lambda_min=lam_min, lambda_max=lam_max)
        info.update(lambda_min=lam_min, lambda_max=lam_max, lipschitz=lipschitz, g_star=g_star,
                    validation_size=validation_size)
        cache: dict[int, float] = {}

        def cached(i: int) -> float:
            if i not in cache:
                cache[i] = float(objective(i))
            return cache[i]

        gp = FiniteGP(candidates.unit, kernel=kernel, length_scale=length_scale,
                      noise=max(float(noise_std), 1e-3) ** 2)
        book = _open_ledger(ledger, epsilon)
        index, gains, _ = run_ucb(cached, gp, T, check_open_unit("delta", delta), prior_mean=prior_mean)
        chosen = score = None
        if release in ("both", "lambda"):
            utility = np.array([cached(i) for i in range(N)])
            info.update(selection_sensitivity=record)
            chosen = mech.exponential(_batch(utility, repetitions), epsilon=eps_part, sensitivity=record,
                                      ledger=book, rng=rng, secure_noise=secure_noise)
        if release in ("both", "score"):
            info.update(score_sensitivity=total, score_scale=total / eps_part)
            score = mech.laplace(_batch(np.asarray(gains.max()), repetitions), sensitivity=total,
                                 epsilon=eps_part, ledger=book, rng=rng, secure_noise=secure_noise)
        guarantee = "exact"
        notes = ("epsilon-DP for the validation set in the worst case under kusner2015 Assumption 2: each "
                 "candidate's model minimizes (lambda/2)||w||^2 + mean of a convex 1-Lipschitz loss on a "
                 f"public training set, lambda in [{lam_min:g}, {lam_max:g}], and the validation loss is "
                 f"{lipschitz:g}-Lipschitz in w with values in [0, {g_star:g}].")
    info["index"] = chosen
    if return_trace:
        info["nonprivate_trace"] = {"index": index, "gain": gains}
    x = None if chosen is None else candidates.points[chosen]
    return DPResult.from_ledger(book, x=x, fun=score, method=f"alg{algorithm}", guarantee=guarantee, nit=T,
                                info=info, notes=notes)
