"""The piecewise-affine objective of han2014 eq. (2): ``f(x) = max_i (a_iᵀx + b_i)``.

The private data are the offsets ``b`` (han2014 §2.2, adjacency (4):
``‖b − b'‖∞ ≤ b_max``); ``A`` and the polytope are public.  This module is the
deterministic function only: the private mechanisms (Laplace on ``b`` or on the
solution, exponential mechanism, private subgradient method with the
exponential-mechanism choice of piece) live in the piecewise family.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from .._validation import check_finite_array
from ._arrays import as_params
from .base import Function

__all__ = ["MaxAffine"]


class MaxAffine(Function):
    """``f(x) = max_{i=1..m} (a_iᵀx + b_i)`` with ``A`` of shape ``(m, d)`` and ``b`` ``(m,)``.

    ``scores(x) = A x + b`` (``(m,)`` or ``(R, m)``) are the utilities
    ``u_sub(i)`` scored by han2014 Algorithm 1; their sensitivity under (4) is
    ``b_max``.  ``grad`` returns the subgradient ``a_{i*}`` of the active
    (highest-scoring, first on ties) piece.
    """

    smooth = False

    def __init__(self, A, b):
        self.A = check_finite_array("A", A, ndim=2)
        self.b = check_finite_array("b", b, ndim=1)
        if self.b.shape != (self.A.shape[0],):
            raise ValueError(f"b must have shape ({self.A.shape[0]},) to match A {self.A.shape}, got {self.b.shape}")

    @property
    def dim(self) -> int:
        return self.A.shape[1]

    @property
    def pieces(self) -> int:
        """The number ``m`` of affine pieces."""
        return self.A.shape[0]

    @cached_property
    def lipschitz(self) -> float:
        """``G = max_i ‖a_i‖₂`` (han2014 Theorem 24)."""
        return float(np.sqrt(np.einsum("ij,ij->i", self.A, self.A)).max())

    def with_offsets(self, b) -> MaxAffine:
        """The same pieces with new offsets (e.g. a privately perturbed ``b``)."""
        return MaxAffine(self.A, b)

    def scores(self, x) -> np.ndarray:
        """``a_iᵀx + b_i`` for every piece: ``(m,)`` or ``(R, m)``."""
        x = as_params(x, self.dim, "x")
        return x @ self.A.T + self.b

    def active_piece(self, x) -> int | np.ndarray:
        """Index of the highest-scoring piece (first on ties): an int or ``(R,)`` ints."""
        i = np.argmax(self.scores(x), axis=-1)
        return int(i) if np.ndim(i) == 0 else i

    def value(self, x):
        v = self.scores(x).max(axis=-1)
        return float(v) if np.ndim(v) == 0 else v

    def grad(self, x):
        """A subgradient: ``a_{i*}`` with ``i*`` the active piece; ``(d,)`` or ``(R, d)``."""
        return self.A[self.active_piece(x)]

    subgradient = grad

    def value_and_grad(self, x):
        s = self.scores(x)
        i = np.argmax(s, axis=-1)
        v = np.take_along_axis(s, np.asarray(i)[..., None], axis=-1)[..., 0]
        return (float(v) if np.ndim(v) == 0 else v), self.A[i]

    def minimize(self, lo, hi) -> tuple[np.ndarray, float]:
        """Exact minimum over the box ``lo ≤ x ≤ hi`` by linear programming (non-private reference).

        ``min t`` s.t. ``A x + b ≤ t``, ``lo ≤ x ≤ hi`` (HiGHS via scipy); returns
        ``(x*, f(x*))``.  Used for the ``optimum`` column of the han2014
        reproduction, never on private data in a release.
        """
        from scipy.optimize import linprog  # lazy: keeps ``import dpopt`` light

        d, m = self.dim, self.pieces
        lo = np.broadcast_to(check_finite_array("lo", lo, ndim=(0, 1)), (d,))
        hi = np.broadcast_to(check_finite_array("hi", hi, ndim=(0, 1)), (d,))
        if np.any(lo > hi):
            raise ValueError("minimize needs lo <= hi in every coordinate")
        c = np.zeros(d + 1)
        c[-1] = 1.0
        A_ub = np.hstack([self.A, -np.ones((m, 1))])
        res = linprog(
            c,
            A_ub=A_ub,
            b_ub=-self.b,
            bounds=[*zip(lo.tolist(), hi.tolist(), strict=True), (None, None)],
            method="highs",
        )
        if not res.success:  # pragma: no cover - a bounded feasible LP always solves
            raise RuntimeError(f"linear program failed: {res.message}")
        x = np.clip(res.x[:d], lo, hi)
        return x, self.value(x)

    def __repr__(self) -> str:
        return f"MaxAffine(m={self.pieces}, d={self.dim})"
