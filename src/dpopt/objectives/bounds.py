"""Enforced data bounds: clipping, projection, label checks and the sensitivities they imply.

DESIGN.md invariant 5: where a sensitivity assumes a bound (‖u‖₁ ≤ R, per-example
gradient norm ≤ C, loss ≤ Δ_f) the code clips or projects to that bound instead
of trusting the data.  Everything here is deterministic; no privacy noise is
drawn in this layer.

Neighbouring relations use the names of the privacy core's ledger:
``"add_remove"`` (one record added or removed) and ``"replace_one"`` (one record
replaced).  A sensitivity helper states which relation its formula is for.

Floating point: every bound is applied with the relative margin
:data:`~dpopt.objectives._arrays.SAFETY` (1 − 2⁻⁴⁰), so the computed norm of a
clipped or projected row is ≤ the bound exactly, not merely up to rounding.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_choice, check_finite_array
from ._arrays import SAFETY, as_bound

__all__ = [
    "RELATIONS",
    "row_norms",
    "clip_factors",
    "clip_thresholds",
    "clip_by_l2_norm",
    "clip_values",
    "project_l2_ball",
    "project_l1_ball",
    "project_linf_ball",
    "project_rows",
    "scale_rows",
    "check_binary_labels",
    "clipped_grad_sum_sensitivity",
    "kuru_l1_sensitivity",
    "clipped_loss_sum_sensitivity",
]

#: Neighbouring relations understood by the sensitivity helpers.
RELATIONS = ("add_remove", "replace_one")

_NORMS = ("l1", "l2", "linf")


def row_norms(X, norm: str = "l2") -> np.ndarray:
    """Norm of every row of ``X`` (``(..., d)`` → ``(...)``): ``"l1"``, ``"l2"`` or ``"linf"``."""
    check_choice("norm", norm, _NORMS)
    X = np.asarray(X, dtype=float)
    with np.errstate(over="ignore"):  # beyond the largest float a norm is inf (above any bound), not a warning
        if norm == "l2":
            return np.sqrt(np.einsum("...i,...i->...", X, X))
        if norm == "l1":
            return np.abs(X).sum(axis=-1)
    return np.abs(X).max(axis=-1, initial=0.0)


def clip_factors(norms, clip) -> np.ndarray:
    """The factor ``min(1, C/‖g‖)`` of chen2020 eq. (6), safe for ‖g‖ = 0 (factor 1)."""
    c = as_bound("clip", clip) * SAFETY
    norms = np.asarray(norms, dtype=float)
    return c / np.maximum(norms, c)


def clip_thresholds(norms, clip, dtype=np.float64) -> np.ndarray:
    """``C/‖x_i‖`` per row (``inf`` for a zero row), in ``dtype`` (float64 or float32).

    For a linear model the per-example gradient is ``s_i x_i``; clipping it to L2
    norm ``C`` (chen2020 eq. (6)) gives ``sign(s_i)·min(|s_i|, C/‖x_i‖)·x_i``, so
    the clipped coefficients need only these thresholds and no extra pass over X.

    In float32 the thresholds carry a further margin of 2⁻²² relative, more than
    the 2⁻²⁴ by which rounding to float32 can raise them, so ``t_i·‖x_i‖ < C``
    still holds exactly.  A threshold beyond the float32 range becomes ``inf``;
    that is safe because every finite float32 coefficient ``|s_i| ≤ t_i·‖x_i‖``
    then, too (``‖x_i‖ < C/float32 max``).
    """
    c = as_bound("clip", clip) * SAFETY
    if np.dtype(dtype) == np.float32:
        c *= 1.0 - 2.0**-22
    with np.errstate(divide="ignore", over="ignore"):
        # c/0 = inf: a zero row is never clipped
        return (c / np.asarray(norms, dtype=float)).astype(dtype, copy=False)


def clip_by_l2_norm(G, clip) -> np.ndarray:
    """Clip every vector along the last axis of ``G`` to L2 norm ≤ ``clip`` (chen2020 eq. (6)).

    ``clip(g, C) = g / max(1, ‖g‖₂/C)``; works on ``(d,)``, ``(n, d)`` or ``(R, n, d)``.
    """
    G = np.asarray(G, dtype=float)
    return G * clip_factors(row_norms(G, "l2"), clip)[..., None]


def clip_values(values, cap) -> np.ndarray:
    """Loss clipping ``min{f, C_obj}`` (chen2020 §4, objective clipping of [6]).

    For losses that are ≥ 0 (all losses of :mod:`dpopt.objectives.losses`) the
    clipped value lies in ``[0, C_obj]``, which is what
    :func:`clipped_loss_sum_sensitivity` assumes.
    """
    cap = as_bound("cap", cap)
    return np.minimum(np.asarray(values, dtype=float), cap)


def project_l2_ball(V, radius) -> np.ndarray:
    """Euclidean projection of every row of ``V`` onto ``{x : ‖x‖₂ ≤ radius}`` (a rescaling)."""
    V = np.asarray(V, dtype=float)
    return V * clip_factors(row_norms(V, "l2"), radius)[..., None]


def project_linf_ball(V, radius) -> np.ndarray:
    """Euclidean projection onto the box ``[-radius, radius]^d`` (coordinate-wise clipping)."""
    r = as_bound("radius", radius)
    return np.clip(np.asarray(V, dtype=float), -r, r)


def project_l1_ball(V, radius) -> np.ndarray:
    """Euclidean projection of every row of ``V`` onto ``{x : ‖x‖₁ ≤ radius}``.

    The sort-based algorithm of Duchi, Shalev-Shwartz, Singer & Chandra (ICML
    2008, Fig. 1), vectorized across rows: for a row ``v`` with ‖v‖₁ > z, sort
    ``u = |v|`` decreasingly, ``ρ = max{j : u_j − (Σ_{r≤j} u_r − z)/j > 0}``,
    ``θ = (Σ_{r≤ρ} u_r − z)/ρ`` and ``w = sign(v)·max(|v| − θ, 0)``.  Rows already
    inside the ball are returned unchanged.  O(d log d) per row.

    Note that scaling ``v·z/‖v‖₁`` also lands in the ball but is *not* the
    projection (it is not the nearest point); see :func:`scale_rows`.
    """
    z = as_bound("radius", radius) * SAFETY
    V = np.asarray(V, dtype=float)
    shape = V.shape
    flat = V.reshape(-1, shape[-1]) if V.ndim > 1 else V.reshape(1, -1)
    out = flat.copy()
    absv = np.abs(flat)
    with np.errstate(over="ignore"):  # a row summing beyond the largest float is outside (inf > z)
        outside = absv.sum(axis=1) > z
    if np.any(outside):
        a = absv[outside]
        u = -np.sort(-a, axis=1)
        with np.errstate(over="ignore"):
            css = np.cumsum(u, axis=1)
        j = np.arange(1, a.shape[1] + 1)
        cond = u - (css - z) / j > 0
        # cond is true exactly for j ≤ ρ, and j = 1 always (u₁ − (u₁ − z) = z > 0), which rounding loses
        # once u₁ ≳ z/2⁻⁵³: ρ = 0 divided by zero and gave an infinite θ (and a warning) on one huge record
        rho = np.maximum(np.count_nonzero(cond, axis=1), 1)
        theta = (css[np.arange(a.shape[0]), rho - 1] - z) / rho
        proj = np.maximum(a - theta[:, None], 0.0)
        # Guard the last ulp: shrink any row whose computed L1 norm still exceeds z.
        s = proj.sum(axis=1)
        over = s > z
        if np.any(over):
            proj[over] *= (z / s[over] * SAFETY)[:, None]
        out[outside] = np.sign(flat[outside]) * proj
    return out.reshape(shape)


def project_rows(X, bound, norm: str = "l2", *, method: str = "project") -> tuple[np.ndarray, int]:
    """Enforce ``‖x_i‖ ≤ bound`` on every row; return the new matrix and the number of rows changed.

    ``method="project"`` (default) is the Euclidean projection onto the ball of
    the given norm (L1: Duchi et al. 2008; L2: scaling, which *is* the
    projection; linf: clipping).  ``method="scale"`` instead rescales offending
    rows to the boundary (``x·bound/‖x‖``): it also enforces the bound and keeps
    the direction, but for the L1 and linf norms it is not the nearest point.
    Rows inside the ball are never modified.  NaN/inf rows are refused.
    """
    X = check_finite_array("X", X, ndim=2)
    bound = as_bound("bound", bound)
    check_choice("norm", norm, _NORMS)
    check_choice("method", method, ("project", "scale"))
    norms = row_norms(X, norm)
    changed = norms > bound
    count = int(np.count_nonzero(changed))
    if count == 0:
        return X.copy(), 0
    out = X.copy()
    rows = X[changed]
    if method == "scale" or norm == "l2":
        out[changed] = scale_rows(rows, bound, norm)
    elif norm == "l1":
        out[changed] = project_l1_ball(rows, bound)
    else:
        out[changed] = project_linf_ball(rows, bound * SAFETY)
    return out, count


def scale_rows(X, bound, norm: str = "l2") -> np.ndarray:
    """Rescale rows whose ``norm`` exceeds ``bound`` onto the sphere of radius ``bound``.

    For ``norm="l2"`` this equals the Euclidean projection; for ``"l1"``/``"linf"``
    it is a (direction-preserving) alternative to it.
    """
    X = np.asarray(X, dtype=float)
    return X * clip_factors(row_norms(X, norm), bound)[..., None]


def check_binary_labels(y, name: str = "y", *, require_both: bool = True) -> np.ndarray:
    """Return labels as a float array after checking every entry is −1 or +1.

    With ``require_both`` both classes must be present (a data set, not a
    minibatch).  Labels in {0, 1} or strings must be mapped first (see
    :func:`dpopt.datasets.preprocess.to_pm1`).
    """
    y = check_finite_array(name, y, ndim=1)
    bad = (y != 1.0) & (y != -1.0)
    if np.any(bad):
        values = np.unique(y[bad])[:5]
        raise ValueError(f"{name} must contain only the labels -1 and +1; found {values.tolist()}")
    if require_both and not (np.any(y == 1.0) and np.any(y == -1.0)):
        raise ValueError(f"{name} must contain both classes -1 and +1")
    return y


def _relation(relation: str) -> str:
    return check_choice("relation", relation, RELATIONS)


def clipped_grad_sum_sensitivity(clip, relation: str = "add_remove") -> float:
    """L2 sensitivity of a sum of per-example gradients each clipped to norm ≤ C (chen2020 eq. (6)).

    Add/remove one record changes the sum by one clipped gradient: ``C``.
    Replace one record changes it by the difference of two: ``2C``.
    """
    c = as_bound("clip", clip)
    return c if _relation(relation) == "add_remove" else 2.0 * c


def kuru_l1_sensitivity(l1_bound, relation: str = "replace_one") -> float:
    """L1 sensitivity ``S₁`` of one per-example logistic-loss gradient, kuru2022 eq. (5.2).

    For ``f(x; u, z) = log(1 + e^{-z uᵀx})`` the gradient is ``−z u σ(−z uᵀx)``, whose
    L1 norm is ≤ ‖u‖₁.  Replacing one record (kuru2022's relation) changes the
    gradient by at most ``‖u‖₁ + ‖u'‖₁ ≤ 2·sup‖u‖₁`` — eq. (5.2) and the value
    ``S₁ = 2 × 20`` of §5; adding/removing one record changes the gradient sum by
    one gradient, ``sup‖u‖₁``.  The regularizer ``λ‖x‖²`` cancels in the difference.
    The bound is only valid for rows projected onto the L1 ball (:func:`project_rows`).
    """
    b = as_bound("l1_bound", l1_bound)
    return 2.0 * b if _relation(relation) == "replace_one" else b


def clipped_loss_sum_sensitivity(cap, relation: str = "add_remove") -> float:
    """Sensitivity of ``Σ_i min{f_i, C_obj}`` for losses ``f_i ≥ 0`` (chen2020 Thm 1, Δ_f = C_obj).

    Every term lies in ``[0, C_obj]``, so adding/removing one record or replacing
    it changes the sum by at most ``C_obj`` in both relations.
    """
    c = as_bound("cap", cap)
    _relation(relation)
    return c
