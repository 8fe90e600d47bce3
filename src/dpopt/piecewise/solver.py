"""Exact non-private solution of han2014 problem (3) through its epigraph LP.

min_{x ∈ P} max_i (a_iᵀx + b_i)  ⇔  min_{x, t} t  s.t.  A x − t·1 ≤ −b,  G x ≤ h,
                                                      lower ≤ x ≤ upper,

solved with HiGHS (``scipy.optimize.linprog``).  Used for f_opt, for x_opt in
mechanism 2 and, once per repetition, for the perturbed problems of
mechanism 1 (only the right-hand side −b changes between them, so the
constraint matrix is built once).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from .._validation import check_finite_array
from .polytope import Polytope

__all__ = ["LPSolution", "EpigraphLP", "solve"]


@dataclass(frozen=True)
class LPSolution:
    """x (…, d) minimizing max_i(a_iᵀx + b_i) over P and the optimal values fun (…,)."""

    x: np.ndarray
    fun: np.ndarray


class EpigraphLP:
    """The epigraph LP of f over P for fixed public slopes A; solve it for any offsets b."""

    def __init__(self, A, polytope: Polytope):
        self.A = check_finite_array("A", A, ndim=2)
        if not isinstance(polytope, Polytope):
            raise TypeError(
                f"polytope must be a dpopt.piecewise.Polytope, got {type(polytope).__name__}"
            )
        m, d = self.A.shape
        if polytope.dim != d:
            raise ValueError(f"polytope has dimension {polytope.dim}, but A has d={d} columns")
        self.m, self.d = m, d
        self.cost = np.zeros(d + 1)
        self.cost[-1] = 1.0
        rows = [np.hstack([self.A, -np.ones((m, 1))])]
        self._h = np.empty(0)
        if polytope.G is not None:
            rows.append(np.hstack([polytope.G, np.zeros((polytope.G.shape[0], 1))]))
            self._h = polytope.h
        self.A_ub = np.vstack(rows)
        self.bounds = polytope.linprog_bounds() + [(None, None)]

    def solve_one(self, b) -> tuple[np.ndarray, float]:
        """(x_opt, f_opt) for one offset vector b of shape (m,)."""
        b = np.asarray(b, dtype=float)
        # The minimizer does not move when every b_i moves by the same constant: solve with
        # b − max(b) ≤ 0, so that no right-hand side −b_i falls below HiGHS's −1e20 (read as −∞,
        # "Model error"); the LP then fails on no offsets, however large (an error that
        # depended on b would tell neighbouring databases apart in mechanism 2).
        # A gap max(b) − b_i beyond the float range (offsets of both signs near it) is the largest float,
        # with no overflow warning: HiGHS reads it (≥ 1e20) as +∞, and that piece never binds.
        with np.errstate(over="ignore"):
            shifted = np.minimum(np.max(b) - b, np.finfo(float).max)
        res = linprog(
            self.cost,
            A_ub=self.A_ub,
            b_ub=np.concatenate([shifted, self._h]),
            bounds=self.bounds,
            method="highs",
        )
        if res.status != 0:
            raise RuntimeError(f"epigraph LP failed (status {res.status}): {res.message}")
        x = res.x[:-1]
        # Report f at x exactly (the LP's t equals it up to HiGHS's tolerance).
        return x, float(np.max(self.A @ x + b))

    def solve(self, b) -> LPSolution:
        """Solve for b of shape (m,) or a batch (…, m): one LP per row (they are independent)."""
        b = check_finite_array("b", b)
        if b.ndim == 0 or b.shape[-1] != self.m:
            raise ValueError(f"b must have last axis of length {self.m}, got shape {b.shape}")
        flat = b.reshape(-1, self.m)
        xs = np.empty((flat.shape[0], self.d))
        fs = np.empty(flat.shape[0])
        for r, row in enumerate(flat):  # one LP per repetition: nothing to share but A_ub
            xs[r], fs[r] = self.solve_one(row)
        return LPSolution(xs.reshape(b.shape[:-1] + (self.d,)), fs.reshape(b.shape[:-1]))


def solve(problem, b=None) -> LPSolution:
    """Exact minimizer and minimum of ``problem`` (a PiecewiseAffineProblem), non-private.

    ``b`` overrides the problem's offsets (shape (m,) or a batch (…, m)).
    """
    lp = EpigraphLP(problem.A, problem.polytope)
    return lp.solve(problem.b if b is None else b)
