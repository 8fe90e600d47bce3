"""The coefficients a_{T,t} of the NAG and MASG error bounds (kuru2022 Thm 4.1 and Thm 4.3).

Both bounds have the form (4.3)

    E_T ≤ a_{T,0} E₀ + Σ_{t=1}^T a_{T,t} (b_t² d + σ_s²(m, n)/2),

with, for a step α_t and stage s_t at iteration t (eq. (4.8); a single stage
and a constant α give Thm 4.1, a_{T,t} = (1 − √(μα))^{T−t} α(1 + αL)):

    a_{T,t} = 2^{s_T − s_t} Π_{i=t+1}^T (1 − √(μ α_i)) · α_t (1 + α_t L),   t = 1, …, T,
    a_{T,0} = 2^{s_T − s_0} Π_{i=1}^T (1 − √(μ α_i)),                     s_0 = 1.

The iteration 0 belongs to stage 1, so a_{T,0} carries one factor 2 per stage
transition (Aybat et al. 2019, Lemma 3.3); the authors' code uses 2^{s_T}
instead, one factor 2 more.  The code also writes α_t/2 for α_t; we follow
the printed theorems.

Everything is computed in logarithms, because a_{T,t} spans hundreds of
orders of magnitude for long runs.  :func:`prefix_log_coefficients` gives the
coefficients of every truncated run T' ≤ T in O(T), which the choice of T'
(Remark 4.1) needs.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_finite_array, check_positive

__all__ = ["log_coefficients", "coefficients", "prefix_log_coefficients"]

_LOG2 = float(np.log(2.0))


def _check_schedule(steps, mu, L, stages):
    steps = check_finite_array("steps", steps, ndim=1)
    if steps.size == 0:
        raise ValueError("steps must contain at least one iteration")
    mu = check_positive("mu", mu)
    L = check_positive("L", L)
    if mu > L:
        raise ValueError(f"mu must be <= L, got mu={mu}, L={L}")
    if np.any(steps <= 0):
        raise ValueError("steps must be > 0")
    if np.any(steps > (1.0 + 1e-12) / L):
        raise ValueError(f"steps must be <= 1/L = {1.0 / L:.6g} (kuru2022 Thm 4.1/4.3)")
    if np.any(mu * steps >= 1.0):
        raise ValueError("steps must satisfy mu*step < 1 (with mu = L use a step below 1/L)")
    if stages is None:
        stages = np.ones(steps.shape, dtype=int)
    else:
        stages = np.asarray(stages)
        if stages.shape != steps.shape:
            raise ValueError(f"stages must have shape {steps.shape}, got {stages.shape}")
        if stages[0] < 1 or np.any(np.diff(stages) < 0):
            raise ValueError("stages must be non-decreasing integers >= 1")
    return steps, float(mu), float(L), stages.astype(float)


def _pieces(steps, mu, L, stages):
    """P_t = Σ_{i≤t} ln(1 − √(μα_i)) (t = 0..T) and c_t = ln(α_t(1 + α_t L)) (t = 1..T)."""
    steps, mu, L, stages = _check_schedule(steps, mu, L, stages)
    log_rate = np.log1p(-np.sqrt(mu * steps))
    P = np.concatenate(([0.0], np.cumsum(log_rate)))
    c = np.log(steps) + np.log1p(steps * L)
    return P, c, stages


def log_coefficients(steps, mu: float, L: float, stages=None) -> tuple[float, np.ndarray]:
    """(ln a_{T,0}, ln a_{T,t} for t = 1..T) of eq. (4.3)/(4.8) for the schedule α_t, s_t."""
    P, c, s = _pieces(steps, mu, L, stages)
    log_a = (s[-1] - s) * _LOG2 + (P[-1] - P[1:]) + c
    log_a0 = (s[-1] - 1.0) * _LOG2 + P[-1]
    return float(log_a0), log_a


def coefficients(steps, mu: float, L: float, stages=None) -> tuple[float, np.ndarray]:
    """(a_{T,0}, a_{T,t} for t = 1..T) of kuru2022 Thm 4.1 (one stage) / Thm 4.3 (stages)."""
    log_a0, log_a = log_coefficients(steps, mu, L, stages)
    return float(np.exp(log_a0)), np.exp(log_a)


def prefix_log_coefficients(steps, mu: float, L: float, stages=None):
    """For every truncation T' = 1..T: ln a_{T',0} and ln Σ_{t≤T'} a_{T',t}^{1/3}.

    Truncating the schedule after T' iterations gives
    ln a_{T',t} = (s_{T'} − s_t) ln 2 + P_{T'} − P_t + c_t, so
    Σ_{t≤T'} a_{T',t}^{1/3} = exp((s_{T'} ln 2 + P_{T'})/3) Σ_{t≤T'} exp((c_t − s_t ln 2 − P_t)/3),
    a running log-sum-exp.  Returns two arrays of length T (index T' − 1).
    """
    P, c, s = _pieces(steps, mu, L, stages)
    head = s * _LOG2 + P[1:]
    running = np.logaddexp.accumulate((c - s * _LOG2 - P[1:]) / 3.0)
    log_a0 = (s - 1.0) * _LOG2 + P[1:]
    return log_a0, head / 3.0 + running
