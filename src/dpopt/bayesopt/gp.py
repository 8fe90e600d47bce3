"""A Gaussian process over the finite candidate set Λ (kusner2015 eq. (2), (3)).

The kernel k₂ is normalized (k₂(λ, λ) = 1) with a fixed length scale ℓ in the
unit-cube coordinates of :class:`~dpopt.bayesopt.space.CandidateSet`:

- squared exponential  k₂ = exp(−r²/(2ℓ²))
- Matérn ν = 5/2       k₂ = (1 + √5 r/ℓ + 5r²/(3ℓ²)) exp(−√5 r/ℓ)

The posterior after observations v at candidate indices A (repeats allowed)
with noise variance σ² is the exact eq. (2), solved by a Cholesky factor of
K_AA + (σ² + jitter) I.  :func:`beta` is Algorithm 1's β_t and
:func:`max_information_gain` bounds γ_T (Srinivas et al. 2010) for the actual
Λ and kernel.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular

from .._validation import check_choice, check_int, check_nonnegative, check_open_unit, check_positive

__all__ = [
    "KERNELS",
    "kernel_matrix",
    "FiniteGP",
    "beta",
    "information_gain",
    "max_information_gain",
]


def _squared_exponential(r: np.ndarray, length_scale: float) -> np.ndarray:
    return np.exp(-0.5 * (r / length_scale) ** 2)


def _matern52(r: np.ndarray, length_scale: float) -> np.ndarray:
    s = math.sqrt(5.0) * r / length_scale
    return (1.0 + s + s * s / 3.0) * np.exp(-s)


#: Normalized stationary kernels k₂(r) of kusner2015 §2 ("Setting").
KERNELS = {"se": _squared_exponential, "matern52": _matern52}


def kernel_matrix(a: np.ndarray, b: np.ndarray, *, kernel: str = "se", length_scale: float = 0.2) -> np.ndarray:
    """k₂(a_i, b_j) for rows of ``a`` (n, d) and ``b`` (m, d) in unit coordinates."""
    check_choice("kernel", kernel, KERNELS)
    length_scale = check_positive("length_scale", length_scale)
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return KERNELS[kernel](np.sqrt(np.maximum(sq, 0.0)), length_scale)


def beta(t, n_candidates: int, delta: float) -> np.ndarray:
    """β_t = 2 log(|Λ| t² π² / (3δ)) (Algorithm 1, line 3; Srinivas et al. 2010 Thm 1)."""
    t = np.asarray(t, dtype=float)
    return 2.0 * np.log(n_candidates * t**2 * math.pi**2 / (3.0 * check_open_unit("delta", delta)))


class FiniteGP:
    """GP(0, k₂) on Λ with observation-noise variance ``noise`` (σ²; 0 for exact observations).

    ``jitter`` is added to the diagonal of K_AA before the Cholesky factorization
    (it keeps repeated or near-identical candidates factorizable when σ² = 0).
    """

    def __init__(self, unit: np.ndarray, *, kernel: str = "se", length_scale: float = 0.2,
                 noise: float = 1e-2, jitter: float = 1e-10):
        self.kernel = check_choice("kernel", kernel, KERNELS)
        self.length_scale = check_positive("length_scale", length_scale)
        self.noise = check_nonnegative("noise", noise)
        self.jitter = check_nonnegative("jitter", jitter)
        self.unit = np.asarray(unit, dtype=float)
        self.K = kernel_matrix(self.unit, self.unit, kernel=kernel, length_scale=length_scale)

    def __len__(self) -> int:
        return len(self.K)

    def posterior(self, index, values) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean μ_T and variance σ_T² at every candidate after observing ``values`` at ``index``.

        eq. (2): μ_T = k(·, A)(K_AA + σ²I)⁻¹v, σ_T² = 1 − k(·, A)(K_AA + σ²I)⁻¹k(A, ·).
        """
        index = np.asarray(index, dtype=np.int64)
        values = np.asarray(values, dtype=float)
        if len(index) == 0:
            return np.zeros(len(self)), np.ones(len(self))
        k_aa = self.K[np.ix_(index, index)] + (self.noise + self.jitter) * np.eye(len(index))
        factor = cholesky(k_aa, lower=True)
        k_a = self.K[index]  # (T, N)
        mean = k_a.T @ cho_solve((factor, True), values)
        v = solve_triangular(factor, k_a, lower=True)
        var = np.clip(1.0 - np.einsum("tn,tn->n", v, v), 0.0, 1.0)
        return mean, var


def information_gain(K_sub: np.ndarray, noise: float) -> float:
    """I(y_A; f) = ½ log det(I + σ⁻² K_AA) for the kernel block ``K_sub`` of a multiset A."""
    noise = check_positive("noise", noise)
    sign, logdet = np.linalg.slogdet(np.eye(len(K_sub)) + K_sub / noise)
    return 0.5 * float(logdet)


def max_information_gain(K: np.ndarray, T: int, noise: float) -> tuple[float, float, np.ndarray]:
    """γ_T for the kernel matrix ``K`` of Λ and noise variance σ²: (greedy value, upper bound, picks).

    γ_T = max over multisets A ⊂ Λ with |A| = T of ½ log det(I + σ⁻² K_AA).
    This set function is monotone submodular (Srinivas et al. 2010 §5.2), so the
    greedy multiset — add the candidate of largest posterior variance, a gain
    of ½ log(1 + σ⁻² σ²_{t−1}(x)) — reaches at least (1 − 1/e)·γ_T
    (Nemhauser et al. 1978).  Hence γ_T ≤ greedy/(1 − 1/e), the bound returned
    second; the greedy value itself is a lower bound.  The posterior covariance
    is kept in factored form, cov_t = K − Σ_{s≤t} v_s v_sᵀ with
    v_t = cov_{t−1}(·, x_t)/√(σ²_{t−1}(x_t) + σ²), so a step costs O(t·|Λ|).
    """
    T = check_int("T", T)
    noise = check_positive("noise", noise)
    K = np.asarray(K, dtype=float)
    var = np.clip(np.diag(K).copy(), 0.0, None)
    factors = np.empty((T, len(K)))
    picks = np.empty(T, dtype=np.int64)
    gain = 0.0
    for t in range(T):
        i = int(np.argmax(var))
        picks[t] = i
        gain += 0.5 * math.log1p(var[i] / noise)
        column = K[:, i] - factors[:t].T @ factors[:t, i]
        factors[t] = column / math.sqrt(var[i] + noise)
        var = np.clip(var - factors[t] ** 2, 0.0, None)
    return gain, gain / (1.0 - math.exp(-1.0)), picks
