"""The problem class of han2014: minimize f(x) = max_i (a_iᵀx + b_i) over a polytope P.

Eq. (2)–(3): the slopes a_i (rows of ``A``) and P are public; the offsets b
are the private database D = {b_i}.  Two databases are adjacent when
‖b − b′‖∞ ≤ b_max (eq. (4)); every sensitivity in :mod:`dpopt.piecewise`
refers to that relation (:data:`RELATION`).

Constructors for the paper's examples: :meth:`PiecewiseAffineProblem.linf_norm`
(Example 5), :meth:`~PiecewiseAffineProblem.l1_norm` (Example 6, 2^d pieces),
:meth:`~PiecewiseAffineProblem.resource_allocation` (Example 7, pieces from the
vertices of the dual polytope (6)) and
:meth:`~PiecewiseAffineProblem.gaussian` (the random instances of §5.1).
"""

from __future__ import annotations

import itertools

import numpy as np

from .._validation import as_generator, check_finite_array, check_int, check_positive
from .polytope import Polytope, enumerate_vertices

__all__ = ["PiecewiseAffineProblem", "RELATION", "resource_allocation_pieces"]

#: The neighbouring relation of han2014 eq. (4), as recorded in every ledger.
RELATION = "||b - b'||_inf <= b_max"

# Example 6 enumerates 2^d pieces; beyond this the piece table alone is too big.
_MAX_L1_DIM = 16


class PiecewiseAffineProblem:
    """f(x) = max_i (a_iᵀx + b_i) over a compact polytope P, private b (han2014 eq. (2)–(4)).

    Parameters
    ----------
    A:
        Public slopes, shape (m, d): row i is a_i.
    b:
        Private offsets, shape (m,).
    b_max:
        The adjacency radius of eq. (4): neighbouring databases satisfy
        ‖b − b′‖∞ ≤ b_max.
    polytope:
        The public constraint set P (a :class:`~dpopt.piecewise.polytope.Polytope`).
    """

    def __init__(self, A, b, *, b_max: float, polytope: Polytope):
        self.A = check_finite_array("A", A, ndim=2)
        self.b = check_finite_array("b", b, ndim=1)
        m, d = self.A.shape
        if m == 0:
            raise ValueError("A must have at least one row (one affine piece)")
        if self.b.shape != (m,):
            raise ValueError(
                f"b must have shape ({m},) to match A with {m} rows, got {self.b.shape}"
            )
        self.b_max = check_positive("b_max", b_max)
        if not isinstance(polytope, Polytope):
            raise TypeError(
                f"polytope must be a dpopt.piecewise.Polytope, got {type(polytope).__name__}"
            )
        if polytope.dim != d:
            raise ValueError(f"polytope has dimension {polytope.dim}, but A has d={d} columns")
        self.polytope = polytope
        self._slopes_t = np.ascontiguousarray(self.A.T)  # (d, m): x @ Aᵀ without a strided copy

    # -- shape and constants ------------------------------------------------------
    @property
    def m(self) -> int:
        """Number of affine pieces."""
        return self.A.shape[0]

    @property
    def d(self) -> int:
        """Dimension of x."""
        return self.A.shape[1]

    @property
    def lipschitz(self) -> float:
        """G = max_i ‖a_i‖₂, the Lipschitz constant of f (Thm 17, Thm 24)."""
        return float(np.max(np.linalg.norm(self.A, axis=1)))

    def with_b(self, b) -> PiecewiseAffineProblem:
        """The same public problem with other private offsets (a neighbouring database)."""
        return PiecewiseAffineProblem(self.A, b, b_max=self.b_max, polytope=self.polytope)

    def take(self, m: int) -> PiecewiseAffineProblem:
        """The problem made of the first ``m`` pieces (§5.2: smaller m use a subset of them)."""
        m = check_int("m", m)
        if m > self.m:
            raise ValueError(f"m must be <= {self.m} (the number of pieces), got {m}")
        return PiecewiseAffineProblem(
            self.A[:m], self.b[:m], b_max=self.b_max, polytope=self.polytope
        )

    # -- evaluation ----------------------------------------------------------------
    def scores(self, x, b=None) -> np.ndarray:
        """u_sub(i; x) = a_iᵀx + b_i for every piece: shape x.shape[:-1] + (m,).

        ``b`` may carry the same leading axes as ``x`` (one database per repetition).
        """
        x = np.asarray(x, dtype=float)
        if x.shape[-1:] != (self.d,):
            raise ValueError(f"x must have last axis of length {self.d}, got shape {x.shape}")
        out = x @ self._slopes_t
        if b is not None:
            return out + b
        out += self.b
        return out

    def value(self, x, b=None) -> np.ndarray:
        """f(x) = max_i (a_iᵀx + b_i) over the last axis of ``x`` (eq. (2))."""
        return self.scores(x, b).max(axis=-1)

    def subgradient(self, x) -> np.ndarray:
        """a_k for an active piece k of eq. (12): a subgradient of f at each x."""
        return self.A[np.argmax(self.scores(x), axis=-1)]

    # -- the paper's examples -------------------------------------------------------
    @classmethod
    def linf_norm(
        cls, center, *, center_change: float, polytope: Polytope
    ) -> PiecewiseAffineProblem:
        """f(x) = ‖x − y‖∞ = max_j max(±(x_j − y_j)) with private centre y (Example 5, 2d pieces).

        Pieces a = ±e_j, b = ∓y_j.  If one database changes y by at most
        ``center_change`` in ∞-norm, then |b_i − b′_i| = |a_iᵀ(y − y′)| ≤
        ‖a_i‖₁·‖y − y′‖∞, so b_max = ``center_change`` (‖a_i‖₁ = 1).
        """
        y = check_finite_array("center", center, ndim=1)
        eye = np.eye(len(y))
        A = np.vstack([eye, -eye])
        return cls(
            A, -A @ y, b_max=check_positive("center_change", center_change), polytope=polytope
        )

    @classmethod
    def l1_norm(cls, center, *, center_change: float, polytope: Polytope) -> PiecewiseAffineProblem:
        """f(x) = ‖x − y‖₁ = max over sign vectors s of sᵀ(x − y) (Example 6, 2^d pieces).

        Pieces a = s ∈ {±1}^d, b = −sᵀy; ‖a‖₁ = d, so b_max = d·``center_change``.
        The piece table has 2^d rows, so d is limited to 16.
        """
        y = check_finite_array("center", center, ndim=1)
        d = len(y)
        if d > _MAX_L1_DIM:
            raise ValueError(f"l1_norm enumerates 2^d pieces; d must be <= {_MAX_L1_DIM}, got {d}")
        A = np.array(list(itertools.product((1.0, -1.0), repeat=d)))
        b_max = d * check_positive("center_change", center_change)
        return cls(A, -A @ y, b_max=b_max, polytope=polytope)

    @classmethod
    def resource_allocation(
        cls, gains, max_demand, *, price: float, demand_change: float, x_max: float
    ) -> PiecewiseAffineProblem:
        """Example 7: choose the amount x ∈ [0, x_max] of resource maximizing U(x) − price·x.

        U(x) is the optimal value of the allocation LP (5) with utility gains
        c (``gains``, public) and maximum demands z̄ (``max_demand``, private,
        Remark 8).  By LP duality (6)–(7), U(x) = min_i (ν_i x + λ_iᵀz̄) over
        the vertices (ν_i, λ_i) of the dual polytope, so minimizing
        price·x − U(x) is problem (3) with pieces a_i = price − ν_i and
        b_i = −λ_iᵀz̄ (see :func:`resource_allocation_pieces`).

        Adjacency: one agent's z̄_j changes by at most ``demand_change``, so
        |b_i − b′_i| = λ_ij·|z̄_j − z̄′_j| ≤ max_ij λ_ij·``demand_change`` =: b_max.
        ``x_max`` is a public cap on the purchase (P = [0, x_max] must be
        bounded; it must not be derived from the private z̄).
        """
        gains = check_finite_array("gains", gains, ndim=1)
        zbar = check_finite_array("max_demand", max_demand, ndim=1)
        if zbar.shape != gains.shape:
            raise ValueError(
                f"max_demand must have shape {gains.shape} like gains, got {zbar.shape}"
            )
        if np.any(zbar < 0):
            raise ValueError("max_demand must be >= 0")
        price = check_positive("price", price)
        demand_change = check_positive("demand_change", demand_change)
        nu, lam = resource_allocation_pieces(gains)
        lam_max = float(lam.max())
        if lam_max == 0.0:
            raise ValueError(
                "gains has no positive entry: U(x) = 0 does not depend on the private demands"
            )
        A = (price - nu)[:, None]
        return cls(
            A,
            -lam @ zbar,
            b_max=lam_max * demand_change,
            polytope=Polytope(lower=[0.0], upper=[check_positive("x_max", x_max)]),
        )

    @classmethod
    def gaussian(
        cls, m: int, d: int, *, c: float, b_max: float, rng=None
    ) -> PiecewiseAffineProblem:
        """The random instances of §5.1: a_i, b_i i.i.d. N(0, 1), P = [−c, c]^d.

        Row i of one (m, d + 1) standard normal draw is (a_i, b_i), so with a
        fixed seed ``gaussian(M, ...).take(m)`` has the same first m pieces for
        every M ≥ m (§5.2's nested instances).
        """
        m, d = check_int("m", m), check_int("d", d)
        pieces = as_generator(rng).standard_normal((m, d + 1))
        return cls(pieces[:, :d], pieces[:, d], b_max=b_max, polytope=Polytope.cube(c, d))

    def __repr__(self) -> str:
        head = f"PiecewiseAffineProblem(m={self.m}, d={self.d}, b_max={self.b_max:g}"
        return f"{head}, {self.polytope!r})"


def resource_allocation_pieces(
    gains, *, brute_force: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (ν_i, λ_i) of the dual polytope (6): ν ≥ 0, λ ⪰ 0, λ + ν1 ⪰ c.

    Closed form (default): at a vertex every j has λ_j = 0 or λ_j = c_j − ν
    active, and feasibility forces λ_j = (c_j − ν)₊; the (n+1)-th active
    constraint makes ν a breakpoint, ν ∈ {0} ∪ {c_j : c_j > 0}.  So the
    polytope has at most n + 1 vertices and this costs O(n²) for n agents.

    ``brute_force=True`` instead enumerates all (n+1)-subsets of the 2n + 1
    constraints (:func:`~dpopt.piecewise.polytope.enumerate_vertices`):
    C(2n+1, n+1) solves, 1716 for n = 6 and 352 716 for n = 10, beyond which
    it is refused.  Tests use it to confirm the closed form.

    Returns ``nu`` (k,) and ``lam`` (k, n), vertices sorted by ν.
    """
    c = check_finite_array("gains", gains, ndim=1)
    n = len(c)
    if n == 0:
        raise ValueError("gains must name at least one agent")
    if brute_force:
        # Variables z = (ν, λ): rows −ν ≤ 0, −λ ≤ 0, −ν − λ_j ≤ −c_j.
        eye = np.eye(n)
        M = np.block(
            [
                [-np.ones((1, 1)), np.zeros((1, n))],
                [np.zeros((n, 1)), -eye],
                [-np.ones((n, 1)), -eye],
            ]
        )
        q = np.concatenate([[0.0], np.zeros(n), -c])
        V = enumerate_vertices(M, q)
        V = V[np.lexsort(V.T[::-1])]
        return V[:, 0] + 0.0, V[:, 1:] + 0.0
    nu = np.unique(np.concatenate([[0.0], c[c > 0]]))
    lam = np.maximum(c[None, :] - nu[:, None], 0.0)
    return nu, lam
