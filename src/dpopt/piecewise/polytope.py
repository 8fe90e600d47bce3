"""The public constraint set P of han2014 problem (3): a bounded polytope with a box fast path.

P = {x : lower ≤ x ≤ upper, G x ≤ h}.  When only the box is given (the
paper's §5 choice P = [−c, c]^d) membership is a comparison, projection is
``np.clip`` and the diameter is exact; a general polytope uses LPs for its
bounding box and centre, Dykstra's alternating projections for the Euclidean
projection, and vertex enumeration for the exact diameter when that is small
enough (otherwise the bounding-box diagonal, a valid upper bound).

Every mechanism of :mod:`dpopt.piecewise` needs P compact with a non-empty
interior: mechanism 2 (Laplace on the solution) uses diam(P) as the
sensitivity of x_opt, mechanism 3 (exponential) needs a normalizable density
with volume to sample, mechanism 4 (subgradient) uses diam(P) in its step
sizes.  The constructor therefore refuses unbounded or flat sets.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.optimize import linprog

from .._validation import check_finite_array, check_int

__all__ = ["Polytope", "enumerate_vertices"]

# Tolerance for membership tests and vertex feasibility.
_TOL = 1e-9

#: P must lie in [-BOX_LIMIT, BOX_LIMIT]^d: HiGHS (scipy's linprog) reads |values| >= 1e20 as infinite, so beyond
#: it an epigraph LP turned unbounded on some offsets b and not on their neighbours (and diam(P) overflowed).
BOX_LIMIT = 1e19


def _as_bound(name: str, value, dim: int | None, fill: float) -> np.ndarray:
    if value is None:
        if dim is None:
            raise ValueError(f"{name} needs a dimension: give dim, G or the other box bound")
        return np.full(dim, fill)
    arr = np.asarray(value, dtype=float)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    if arr.ndim == 0:
        if dim is None:
            raise ValueError(f"{name} is a scalar: give dim (or G) so the box has a dimension")
        arr = np.full(dim, float(arr))
    if arr.ndim != 1 or (dim is not None and arr.shape[0] != dim):
        raise ValueError(
            f"{name} must have shape ({dim if dim is not None else 'd'},), got {arr.shape}"
        )
    return arr


def enumerate_vertices(M: np.ndarray, q: np.ndarray, *, max_subsets: int = 200_000) -> np.ndarray:
    """All vertices of the polyhedron {z : M z ≤ q} by brute force over active sets.

    A vertex is a feasible point where n linearly independent constraints are
    active (n = M.shape[1]); every n-subset of the rows is solved as a square
    system (batched) and the feasible, distinct solutions are kept.  The work
    is C(rows, n) solves, so this is for small instances only: it raises
    ``ValueError`` when that count exceeds ``max_subsets`` (for example 21
    rows in 11 unknowns already give 352 716 subsets).
    """
    M = check_finite_array("M", M, ndim=2)
    q = check_finite_array("q", q, ndim=1)
    rows, n = M.shape
    if q.shape != (rows,):
        raise ValueError(f"q must have shape ({rows},), got {q.shape}")
    count = math.comb(rows, n)
    if count > check_int("max_subsets", max_subsets):
        raise ValueError(
            f"vertex enumeration needs C({rows}, {n}) = {count} linear solves, more than "
            f"max_subsets={max_subsets}; this brute force is for small instances only"
        )
    if count == 0:
        return np.empty((0, n))
    subsets = np.array(list(itertools.combinations(range(rows), n)), dtype=np.intp)
    systems = M[subsets]  # (count, n, n)
    rhs = q[subsets]  # (count, n)
    scale = np.abs(systems).max(axis=(1, 2)) + 1.0
    regular = np.abs(np.linalg.det(systems / scale[:, None, None])) > 1e-12
    if not regular.any():
        return np.empty((0, n))
    points = np.linalg.solve(systems[regular], rhs[regular][..., None])[..., 0]
    slack = points @ M.T - q
    feasible = np.all(slack <= _TOL * (1.0 + np.abs(q)), axis=1)
    points = points[feasible]
    if points.shape[0] == 0:
        return points
    # Distinct vertices: several active sets can meet at one degenerate vertex.
    rounded = np.round(points, 9) + 0.0
    _, first = np.unique(rounded, axis=0, return_index=True)
    return points[np.sort(first)]


class Polytope:
    """A bounded polytope P = {x : lower ≤ x ≤ upper, G x ≤ h} in R^d.

    Parameters
    ----------
    G, h:
        Optional general inequalities, ``G`` of shape (k, d), ``h`` of shape (k,).
    lower, upper:
        Optional box bounds (scalars or (d,) arrays; ±inf allowed when ``G``
        bounds that direction).  With no ``G`` this is the box fast path.
    dim:
        The dimension d when it cannot be read from ``G`` or array bounds.
    """

    def __init__(self, G=None, h=None, *, lower=None, upper=None, dim: int | None = None):
        if (G is None) != (h is None):
            raise ValueError("give G and h together (or neither for a box)")
        if G is not None:
            G = check_finite_array("G", G, ndim=2)
            h = check_finite_array("h", h, ndim=1)
            if h.shape != (G.shape[0],):
                raise ValueError(f"h must have shape ({G.shape[0]},) to match G, got {h.shape}")
            if dim is not None and check_int("dim", dim) != G.shape[1]:
                raise ValueError(f"dim={dim} does not match G with {G.shape[1]} columns")
            dim = G.shape[1]
            if G.shape[0] == 0:
                G = h = None
        elif lower is None and upper is None:
            raise ValueError("a polytope needs box bounds (lower, upper) or inequalities (G, h)")
        if dim is None:
            for bound in (lower, upper):
                if bound is not None and np.ndim(bound) == 1:
                    dim = len(bound)
        if dim is not None:
            dim = check_int("dim", dim)
        self.lower = _as_bound("lower", lower, dim, -np.inf)
        self.upper = _as_bound("upper", upper, len(self.lower), np.inf)
        self.dim = len(self.lower)
        if np.any(self.lower >= self.upper):
            raise ValueError("lower must be < upper in every coordinate (P needs an interior)")
        self.G, self.h = G, h
        if self.is_box:
            if not (np.all(np.isfinite(self.lower)) and np.all(np.isfinite(self.upper))):
                raise ValueError(
                    "a box polytope needs finite lower and upper bounds (P must be bounded)"
                )
            self.box_lower, self.box_upper = self.lower.copy(), self.upper.copy()
            self.center = 0.5 * (self.lower + self.upper)
            self.inradius = float(0.5 * np.min(self.upper - self.lower))
        else:
            self.box_lower, self.box_upper = self._bounding_box()
            self.center, self.inradius = self._chebyshev_center()
        if max(np.max(np.abs(self.box_lower)), np.max(np.abs(self.box_upper))) > BOX_LIMIT:
            raise ValueError(
                f"P must lie within [-{BOX_LIMIT:g}, {BOX_LIMIT:g}] in every coordinate (the LP solver reads "
                "|values| >= 1e20 as infinite); rescale x"
            )
        self._diameter: tuple[float, float, bool] | None = None

    # -- constructors -----------------------------------------------------------
    @classmethod
    def cube(cls, c: float, d: int) -> Polytope:
        """The hypercube {x : −c ≤ x ≤ c} of han2014 §5.1 (diameter 2√d·c)."""
        c = float(c)
        if not c > 0 or not math.isfinite(c):
            raise ValueError(f"c must be in (0, inf), got {c!r}")
        d = check_int("d", d)
        return cls(lower=np.full(d, -c), upper=np.full(d, c))

    # -- structure --------------------------------------------------------------
    @property
    def is_box(self) -> bool:
        """True when P is a plain box (no general inequalities): the fast path."""
        return self.G is None

    def halfspaces(self) -> tuple[np.ndarray, np.ndarray]:
        """(M, q) with P = {x : M x ≤ q}, the finite box bounds written as rows."""
        eye = np.eye(self.dim)
        lo, up = np.isfinite(self.lower), np.isfinite(self.upper)
        parts_M = [eye[up], -eye[lo]]
        parts_q = [self.upper[up], -self.lower[lo]]
        if self.G is not None:
            parts_M.insert(0, self.G)
            parts_q.insert(0, self.h)
        return np.vstack(parts_M), np.concatenate(parts_q)

    def linprog_bounds(self) -> list[tuple[float | None, float | None]]:
        """The box as ``scipy.optimize.linprog`` bounds (None for infinite)."""
        return [
            (None if math.isinf(lo) else float(lo), None if math.isinf(up) else float(up))
            for lo, up in zip(self.lower, self.upper, strict=True)
        ]

    def _bounding_box(self) -> tuple[np.ndarray, np.ndarray]:
        """Exact coordinate-wise range of P by 2d LPs; raises if P is empty or unbounded."""
        lo, up = np.empty(self.dim), np.empty(self.dim)
        bounds = self.linprog_bounds()
        for j in range(self.dim):
            for sign, out in ((1.0, lo), (-1.0, up)):
                cost = np.zeros(self.dim)
                cost[j] = sign
                res = linprog(cost, A_ub=self.G, b_ub=self.h, bounds=bounds, method="highs")
                if res.status == 2:
                    raise ValueError("the polytope {x : G x <= h, lower <= x <= upper} is empty")
                if res.status == 3:
                    raise ValueError(
                        "the polytope is unbounded; han2014's mechanisms need P compact"
                    )
                if res.status != 0:
                    raise RuntimeError(f"bounding-box LP failed: {res.message}")
                out[j] = sign * res.fun
        return lo, up

    def _chebyshev_center(self) -> tuple[np.ndarray, float]:
        """Centre and radius of the largest ball in P (an LP); raises if P has no interior."""
        M, q = self.halfspaces()
        norms = np.linalg.norm(M, axis=1)
        cost = np.zeros(self.dim + 1)
        cost[-1] = -1.0
        A_ub = np.hstack([M, norms[:, None]])
        res = linprog(
            cost, A_ub=A_ub, b_ub=q, bounds=[(None, None)] * self.dim + [(0, None)], method="highs"
        )
        if res.status != 0:
            raise RuntimeError(f"Chebyshev-centre LP failed: {res.message}")
        radius = float(res.x[-1])
        if radius <= 1e-12 * (1.0 + float(np.max(self.box_upper - self.box_lower))):
            raise ValueError("the polytope has an empty interior; the mechanisms need volume in P")
        return res.x[:-1], radius

    # -- geometry ---------------------------------------------------------------
    @property
    def halfwidth(self) -> float:
        """Largest half side of the bounding box (the paper's c for P = [−c, c]^d)."""
        return float(0.5 * np.max(self.box_upper - self.box_lower))

    @property
    def diameter(self) -> float:
        """diam(P) = max ‖x − y‖₂ over P, or an upper bound (see :attr:`diameter_is_exact`)."""
        return self._diameters()[0]

    @property
    def l1_diameter(self) -> float:
        """max ‖x − y‖₁ over P (the L1 sensitivity of a point of P), or an upper bound like :attr:`diameter`.

        The bounding box's L1 diagonal Σ_j (upper_j − lower_j) when that is the bound used.
        """
        return self._diameters()[1]

    @property
    def diameter_is_exact(self) -> bool:
        """False when :attr:`diameter` is the bounding-box diagonal bound (many constraints)."""
        return self._diameters()[2]

    def _diameters(self) -> tuple[float, float, bool]:
        """(L2 diameter, L1 diameter, exact): a norm of x − y peaks at a pair of vertices, or the box bounds it."""
        if self._diameter is None:
            widths = self.box_upper - self.box_lower
            box = (float(np.linalg.norm(widths)), float(np.sum(widths)))
            if self.is_box:
                self._diameter = (*box, True)
            else:
                try:
                    V = self.vertices()
                except ValueError:  # too many active sets: keep the valid upper bounds
                    self._diameter = (*box, False)
                else:
                    gaps = np.abs(V[:, None, :] - V[None, :, :])
                    l2 = float(np.sqrt(np.max(np.sum(gaps**2, axis=-1))))
                    self._diameter = (l2, float(np.max(np.sum(gaps, axis=-1))), True)
        return self._diameter

    def vertices(self, *, max_subsets: int = 200_000) -> np.ndarray:
        """The vertices of P, (n_vertices, d), by :func:`enumerate_vertices` (small P only)."""
        if self.is_box:
            if self.dim > 16:
                raise ValueError(
                    f"a {self.dim}-dimensional box has 2^{self.dim} vertices; too many"
                )
            corners = np.array(list(itertools.product((0, 1), repeat=self.dim)), dtype=bool)
            return np.where(corners, self.upper, self.lower)
        M, q = self.halfspaces()
        return enumerate_vertices(M, q, max_subsets=max_subsets)

    # -- membership and projection ------------------------------------------------
    def contains(self, x, tol: float = _TOL) -> np.ndarray:
        """Whether each point (last axis) lies in P, up to ``tol``; shape ``x.shape[:-1]``."""
        x = np.asarray(x, dtype=float)
        inside = np.all((x >= self.lower - tol) & (x <= self.upper + tol), axis=-1)
        if self.G is not None:
            inside &= np.all(x @ self.G.T <= self.h + tol, axis=-1)
        return inside

    def project(self, x, *, tol: float = 1e-10, max_sweeps: int = 10_000) -> np.ndarray:
        """Euclidean projection onto P over the last axis (vectorized over leading axes).

        Box: ``np.clip``, exact.  General P: Dykstra's alternating projections
        over the box and each halfspace, which converge to the exact
        projection; stops when a sweep moves no point by more than ``tol``.
        """
        x = np.asarray(x, dtype=float)
        if x.shape[-1:] != (self.dim,):
            raise ValueError(f"x must have last axis of length {self.dim}, got shape {x.shape}")
        if self.is_box:
            return np.clip(x, self.lower, self.upper)
        flat = x.reshape(-1, self.dim)
        out = self._dykstra(flat, tol, max_sweeps)
        return out.reshape(x.shape)

    def _dykstra(self, y: np.ndarray, tol: float, max_sweeps: int) -> np.ndarray:
        G, h = self.G, self.h
        sq = np.sum(G**2, axis=1)
        x = y.copy()
        box_inc = np.zeros_like(x)
        inc = np.zeros((G.shape[0],) + x.shape)
        for _ in range(max_sweeps):
            before = x
            z = x + box_inc
            x = np.clip(z, self.lower, self.upper)
            box_inc = z - x
            for j in range(G.shape[0]):
                z = x + inc[j]
                excess = np.maximum(z @ G[j] - h[j], 0.0) / sq[j]
                x = z - excess[:, None] * G[j]
                inc[j] = z - x
            if np.max(np.abs(x - before)) <= tol:
                break
        return x

    def __repr__(self) -> str:
        kind = "box" if self.is_box else f"{self.G.shape[0]} inequalities"
        return f"Polytope(dim={self.dim}, {kind})"
