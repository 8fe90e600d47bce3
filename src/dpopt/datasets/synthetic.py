"""Seeded synthetic data of the papers (a Generator or an int seed; nothing here is privacy noise).

* :func:`kuru2022_logistic` — kuru2022 §5: ``n = 10⁵``, ``d = 20``, covariates uniform
  on ``[0, 1]^20`` (so ``‖u‖₁ ≤ 20`` and ``S₁ = 2 × 20``), labels ``sign(uᵀw)`` ∈ {−1, +1}
  for ``w ~ N(0, I)``.
* :func:`han2014_problem` — han2014 §5.1: ``{(a_i, b_i)}`` i.i.d. Gaussian, polytope the
  hypercube ``−c ≤ x ≤ c``.
* :func:`svm_data` — a linearly separable (margin γ) or label-noisy classification
  set for the SVM / dual-averaging experiments (liu2024 §5 uses epsilon and rcv1,
  which are not available offline).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import (
    as_generator,
    check_int,
    check_nonnegative,
    check_open_unit,
    check_positive,
)
from ..objectives import bounds
from ..objectives.piecewise import MaxAffine
from ..objectives.regularizers import Box
from .base import Dataset

__all__ = ["kuru2022_logistic", "Han2014Problem", "han2014_problem", "svm_data"]


def kuru2022_logistic(n: int = 100_000, d: int = 20, rng=None) -> Dataset:
    """kuru2022 §5 data: ``U ~ Uniform[0,1]^{n×d}``, ``z = sign(U w)``, ``w ~ N(0, I)``.

    Rows satisfy the declared L1 bound ``‖u‖₁ ≤ d`` (kuru2022 takes 𝒰 as the L1
    ball of radius 20 for d = 20), which is enforced by projection (never active).
    A zero inner product (probability 0) is labelled +1.  ``info["w_true"]`` holds w.
    This is also what the authors' code does (``X = rand(n, d)``, ``y = sign(X*w)``,
    ``S1 = 2*C`` with ``C = 20``).  Because U ≥ 0, the classes are typically
    unbalanced (the sign of ``Σ_j w_j`` dominates).
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d)
    gen = as_generator(rng)
    U = gen.random((n, d))
    w = gen.standard_normal(d)
    y = np.where(U @ w >= 0, 1.0, -1.0)
    U, changed = bounds.project_rows(U, float(d), "l1")
    return Dataset(
        X=U,
        y=y,
        feature_names=tuple(f"u{j}" for j in range(d)),
        name="synthetic:kuru2022",
        source="synthetic, kuru2022 §5",
        notes=f"U uniform on [0,1]^{d}, w ~ N(0, I), labels sign(Uw); L1 row bound {d}",
        norm="l1",
        norm_bound=float(d),
        rows_changed=changed,
        info={"w_true": w},
    )


@dataclass(frozen=True, eq=False)
class Han2014Problem:
    """``min_{−c ≤ x ≤ c} max_i (a_iᵀx + b_i)`` (han2014 eq. (3) with the §5.1 hypercube).

    ``b`` is the private data (adjacency ‖b − b'‖∞ ≤ b_max); ``A`` and ``c`` are public.
    """

    A: np.ndarray
    b: np.ndarray
    c: float

    @property
    def objective(self) -> MaxAffine:
        """The function ``max_i (a_iᵀx + b_i)``."""
        return MaxAffine(self.A, self.b)

    @property
    def box(self) -> Box:
        """The constraint set as a regularizer (its prox is the projection)."""
        return Box(-self.c, self.c)

    @property
    def diameter(self) -> float:
        """``diam(𝒫) = 2√d·c`` (han2014 §5.1)."""
        return 2.0 * np.sqrt(self.A.shape[1]) * self.c

    def first(self, m: int) -> Han2014Problem:
        """The problem made of the first ``m`` pieces (han2014 Fig. 3 nests the sets over m)."""
        m = check_int("m", m)
        if m > self.A.shape[0]:
            raise ValueError(f"m must be <= {self.A.shape[0]}, got {m}")
        return Han2014Problem(self.A[:m], self.b[:m], self.c)

    def optimum(self) -> tuple[np.ndarray, float]:
        """Exact non-private solution and optimal value (linear program)."""
        return self.objective.minimize(-self.c, self.c)


def han2014_problem(
    m: int = 50,
    d: int = 10,
    c: float = 1.0,
    rng=None,
    *,
    sigma_a: float = 1.0,
    sigma_b: float = 1.0,
) -> Han2014Problem:
    """han2014 §5.1 data: ``a_i ~ N(0, σ_a² I_d)``, ``b_i ~ N(0, σ_b²)`` i.i.d., box ``[−c, c]^d``.

    The paper states only "i.i.d. Gaussian" and sweeps ``c`` and ``m``; it gives no
    means, variances, ``d`` or default ``m`` — standard normal and the defaults here
    are dpopt's choices, recorded by the experiments.  Row ``i`` of ``[A | b]`` is
    drawn as one Gaussian vector in order, so for one seed the problem with ``m``
    pieces is the first ``m`` pieces of any larger one (the nesting of han2014 Fig. 3).
    """
    m = check_int("m", m)
    d = check_int("d", d)
    c = check_positive("c", c)
    gen = as_generator(rng)
    Z = gen.standard_normal((m, d + 1))
    A = check_positive("sigma_a", sigma_a) * Z[:, :d]
    b = check_positive("sigma_b", sigma_b) * Z[:, d]
    return Han2014Problem(A=np.ascontiguousarray(A), b=np.ascontiguousarray(b), c=c)


def svm_data(
    n: int = 10_000,
    d: int = 20,
    rng=None,
    *,
    margin: float = 0.1,
    label_noise: float = 0.0,
    norm_bound: float = 1.0,
) -> Dataset:
    """Binary data separable by a unit vector ``w*`` with geometric margin ``margin·norm_bound``.

    Each row is ``x = norm_bound·(y·a·w* + √(1 − a²)·ρ·v)`` with ``a ~ U[margin, 1]``,
    ``ρ ~ U[0, 1]`` and ``v`` a uniform unit vector orthogonal to ``w*``, so
    ``‖x‖₂ ≤ norm_bound`` and ``y⟨w*, x⟩ ≥ margin·norm_bound``.  Then a fraction
    ``label_noise`` of labels (chosen at random) is flipped.  ``info`` holds ``w_true``
    and the flipped indices.
    """
    n = check_int("n", n, minimum=2)
    d = check_int("d", d, minimum=2)
    margin = check_nonnegative("margin", margin)
    if margin >= 1:
        raise ValueError(f"margin must be in [0, 1), got {margin}")
    if label_noise != 0:
        label_noise = check_open_unit("label_noise", label_noise)
    norm_bound = check_positive("norm_bound", norm_bound)
    gen = as_generator(rng)
    w = gen.standard_normal(d)
    w /= np.linalg.norm(w)
    y = np.where(gen.random(n) < 0.5, -1.0, 1.0)
    y[:2] = (-1.0, 1.0)  # both classes present
    a = gen.uniform(margin, 1.0, n)
    v = gen.standard_normal((n, d))
    v -= np.outer(v @ w, w)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-300)
    rho = gen.random(n)
    X = norm_bound * ((y * a)[:, None] * w + (np.sqrt(1.0 - a**2) * rho)[:, None] * v)
    X, changed = bounds.project_rows(X, norm_bound, "l2")
    flipped = np.sort(gen.choice(n, size=int(round(label_noise * n)), replace=False))
    y[flipped] *= -1.0
    return Dataset(
        X=X,
        y=y,
        feature_names=tuple(f"x{j}" for j in range(d)),
        name="synthetic:svm",
        source="synthetic, separable with margin then label noise",
        notes=(f"margin {margin * norm_bound:g}, {len(flipped)} labels flipped, L2 row bound {norm_bound:g}"),
        norm="l2",
        norm_bound=norm_bound,
        rows_changed=changed,
        info={"w_true": w, "flipped": flipped},
    )
