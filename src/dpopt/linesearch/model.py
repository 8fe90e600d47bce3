"""The model interface the private line-search algorithms program against (chen2020 §4).

DP-BLSGD (chen2020 Algorithm 2) touches the data through exactly two
per-record quantities, both bounded before they are summed:

* the per-example gradient clipped to L2 norm ``C_grad`` (eq. (6)), whose sum
  over a minibatch has L2 sensitivity ``C_grad`` under add/remove-one;
* the per-example loss clipped to ``[0, C_obj]`` (the objective clipping of
  chen2020 §4.1, after Theorem 1), whose sum has sensitivity ``C_obj`` — or,
  for the default line search, the per-example loss *decrease* along a
  direction clipped to ``[−C_obj, C_obj]`` (:meth:`PrivateModel.clipped_decrease_along`),
  with the same sensitivity.

Declared bounds.  A model may declare a public bound on its data (for
:class:`LinearModel`, ``data_norm`` R ≥ ‖x_i‖₂, enforced by projection); it
then exposes :attr:`PrivateModel.gradient_bound` and
:attr:`PrivateModel.smoothness_bound`, from which the algorithms default
C_grad, η₀ and DP-SGD's step.  Nothing is ever computed from the data.

:class:`PrivateModel` is that contract.  Convex linear models implement it
with :class:`LinearModel` (built on :mod:`dpopt.objectives`); a neural
network can implement it later (issue "neural networks") by providing the two
clipped sums for a flat parameter vector.

Regularization.  The objective is

    F(w) = (1/n) Σ_i f(w; d_i) + r(w),     r(w) = (μ/2)‖w‖²  (chen2020 §5.1, μ = 0.001),

i.e. ``l2=μ`` is the strong-convexity modulus the regularizer adds
(``dpopt.objectives.L2(μ/2)``, whose own convention is λ‖w‖² with λ = μ/2).
The paper only says "L2 regularization with a coefficient μ"; μ/2 is the
convention under which μ is the strong convexity.  The regularizer is
data-independent, so it stays *outside* the clipped sums: algorithms add
``regularizer_grad(w)`` to the noisy data gradient and ``weight·r(w)`` to the
clipped loss sum, at no privacy cost.

The number of records ``n`` is treated as public, as in DP-SGD (Abadi et al.
2016) and DP-AGD (Lee & Kifer 2018): it only normalizes sums.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from .._validation import check_nonnegative, check_positive
from ..objectives import L2, Objective, Zero
from ..objectives._arrays import as_params, ensure_finite_result
from ..objectives.bounds import clip_thresholds, project_rows

__all__ = ["PrivateModel", "LinearModel", "PAPER_C_GRAD", "default_gradient_clip"]

#: chen2020 §5.4: "C_grad = 3 for all gradient perturbation algorithms" (convex models).
PAPER_C_GRAD = 3.0

#: Rows of a minibatch gathered at a time (1024 × 100 float64 = 800 KiB, cache-resident).  Larger
#: single products let a multi-threaded BLAS wake its threads, 5–20× slower on a busy 2-core
#: machine; 1024 beat 512 and 2048 by 10–20 % per query there.
_BLOCK_ROWS = 1024
#: Loss evaluations per block of a line search's candidate steps (rows × steps): the
#: temporaries of one block (2**15 float64 = 256 KiB each) stay in cache.
_EVAL_ENTRIES = 2**15


def _scalar(v):
    return float(v) if np.ndim(v) == 0 else v


def _steps_for(steps, w: np.ndarray) -> np.ndarray:
    """Candidate steps: ``(k,)`` for ``w`` of shape ``(d,)``, ``(R, k)`` for ``(R, d)`` (shape check only)."""
    steps = np.asarray(steps, dtype=float)
    if steps.ndim != w.ndim or (w.ndim == 2 and steps.shape[0] != w.shape[0]):
        raise ValueError(
            "steps must have shape (k,) for w of shape (d,) and (R, k) for (R, d); "
            f"got {steps.shape} for w {w.shape}"
        )
    return steps


def _check_direction(w, direction, dim: int) -> tuple[np.ndarray, np.ndarray]:
    w = as_params(w, dim)
    direction = as_params(direction, dim, "direction")
    if w.shape != direction.shape:
        raise ValueError(f"direction must have the shape of w {w.shape}, got {direction.shape}")
    return w, direction


class PrivateModel(ABC):
    """What the private line-search algorithms need from a model (chen2020 Algorithm 2).

    Parameters are a flat vector ``w`` of shape ``(d,)``; implementations may
    also accept a batch ``(R, d)`` where that is cheap (every method then
    returns one result per row).  ``indices`` selects records (an integer
    array, typically drawn by a :class:`~dpopt.privacy.PoissonSampler`);
    ``None`` means all ``n`` records.

    Subclasses implement :attr:`n`, :attr:`dim`,
    :meth:`per_example_clipped_grad_sum`, :meth:`clipped_loss_sum`,
    :meth:`loss_value` and :meth:`loss_grad`; :meth:`clipped_loss_along` has
    a generic implementation that a model can override with a cheaper one.
    ``l2`` is μ of r(w) = (μ/2)‖w‖².
    """

    l2: float = 0.0
    #: Declared public bound R on the data rows (‖x_i‖₂ ≤ R), or None; see :class:`LinearModel`.
    data_norm: float | None = None

    # -- shape ---------------------------------------------------------------------------
    @property
    @abstractmethod
    def n(self) -> int:
        """Number of records (public)."""

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length ``d`` of the flat parameter vector."""

    # -- the two private queries ---------------------------------------------------------
    @abstractmethod
    def per_example_clipped_grad_sum(self, w, indices, clip) -> tuple[np.ndarray, int]:
        """``(Σ_{i∈indices} clip(∇f_i(w), C), |indices|)`` with chen2020 eq. (6).

        Every term has L2 norm ≤ ``clip``, so the sum has L2 sensitivity
        ``clip`` under add/remove-one.  The count is for diagnostics only (it is
        data-dependent under Poisson sampling and must not be released).
        """

    @abstractmethod
    def clipped_loss_sum(self, w, indices, cap):
        """``Σ_{i∈indices} min{max{f_i(w), 0}, C_obj}``: sensitivity ``cap`` (chen2020 Thm 1).

        Every term lies in ``[0, cap]`` (enforced, not assumed), which is what
        the proof of Theorem 1 needs.  A float for ``w`` ``(d,)``; ``(R,)`` for ``(R, d)``.
        """

    def clipped_loss_along(self, w, direction, indices, cap) -> Callable[[np.ndarray], np.ndarray]:
        """``values(steps)``: :meth:`clipped_loss_sum` at ``w − η·direction`` for η in ``steps``.

        These are the values NoisyBTLS compares (chen2020 Algorithm 1, line 7).
        ``steps`` has a last axis of k candidates (shape ``(k,)``, or ``(R, k)``
        for batched ``w``); the result has the same shape.  The records are
        fixed when this is called, so every query of one line search sees the
        same minibatch.  This generic version calls :meth:`clipped_loss_sum`
        once per candidate point (it needs no batch support); :class:`LinearModel`
        computes ``X w`` and ``X·direction`` once and then only evaluates the
        loss per candidate.
        """
        w, direction = _check_direction(w, direction, self.dim)
        cap = check_positive("cap", cap)

        def values(steps):
            steps = _steps_for(steps, w)
            points = w[..., None, :] - steps[..., :, None] * direction[..., None, :]
            flat = points.reshape(-1, self.dim)  # one candidate point per row (few of them)
            out = [self.clipped_loss_sum(point, indices, cap) for point in flat]
            return np.asarray(out, dtype=float).reshape(points.shape[:-1])

        return values

    # -- non-private reporting -----------------------------------------------------------
    @abstractmethod
    def loss_value(self, w):
        """Mean loss over all records, no regularizer (non-private; for reporting)."""

    @abstractmethod
    def loss_grad(self, w) -> np.ndarray:
        """Mean loss gradient over all records, no regularizer (non-private)."""

    def regularizer_value(self, w):
        """r(w) = (μ/2)‖w‖² (data-independent)."""
        w = as_params(w, self.dim)
        return _scalar(0.5 * self.l2 * np.einsum("...i,...i->...", w, w))

    def regularizer_grad(self, w) -> np.ndarray:
        """∇r(w) = μ·w (data-independent)."""
        return self.l2 * as_params(w, self.dim)

    def value(self, w):
        """F(w) = mean loss + r(w) over all records (non-private)."""
        return self.loss_value(w) + self.regularizer_value(w)

    def grad(self, w) -> np.ndarray:
        """∇F(w) over all records (non-private)."""
        return self.loss_grad(w) + self.regularizer_grad(w)

    def initial_params(self) -> np.ndarray:
        """The data-independent starting point w₀ = 0."""
        return np.zeros(self.dim)

    # -- public constants from declared bounds (for hyper-parameter defaults) -------------
    @property
    def gradient_bound(self) -> float | None:
        """A public bound G ≥ ‖∇f_i(w)‖₂ for every record and every w, or None if unknown.

        It comes from declared data bounds only (never from the data), e.g.
        ``sup|φ'|·R`` for a linear model with rows ‖x_i‖₂ ≤ R.  Algorithms use it to
        default the clipping threshold: clipping above G adds noise and removes nothing.
        """
        return None

    @property
    def smoothness_bound(self) -> float | None:
        """A public bound L on the smoothness of F (for default step sizes), or None."""
        return None

    def clipped_decrease_along(self, w, direction, indices, cap) -> Callable[[np.ndarray], np.ndarray]:
        """``values(steps)``: Σ_{i∈indices} clip(f_i(w) − f_i(w − η·direction), −cap, cap) per η.

        The per-record *decrease* clipped to ``[−C_obj, C_obj]``: like the clipped
        objective of :meth:`clipped_loss_along` its sum has sensitivity ``cap``
        under add/remove-one (one record adds one term of absolute value ≤ cap),
        but it equals the exact decrease whenever no record's loss changes by
        more than ``cap`` — it has no flat region where losses exceed C_obj
        (see :class:`~dpopt.linesearch.algorithms.LineSearchHyper`, ``query``).
        Models that can evaluate per-record losses implement it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement clipped_decrease_along; "
            "use the clipped-objective line search (query='objective')"
        )


class LinearModel(PrivateModel):
    """A linear model ``f(w; x, y) = φ(xᵀw, y)`` on data ``X (n, d)``, ``y (n,)``.

    Parameters
    ----------
    loss:
        A :class:`~dpopt.objectives.LinearLoss` or its name (``"logistic"``,
        ``"huberized_hinge"``, ``"hinge"``, ``"squared"``).  Theorem 1's bound
        needs losses ≥ 0; the clipped-loss query clips to ``[0, C_obj]`` anyway.
    X, y:
        Data and labels (±1 for classification losses); validated once.
    l2:
        μ ≥ 0 of the regularizer r(w) = (μ/2)‖w‖² (chen2020 §5.1 uses μ = 0.001).
    data_norm:
        Optional declared public bound R on the rows, ‖x_i‖₂ ≤ R.  It is
        enforced (rows outside the ball are projected onto it, DESIGN.md
        invariant 5; ``projected_rows`` counts them) and gives the public
        constants :attr:`gradient_bound` = sup|φ'|·R and :attr:`smoothness_bound`
        = sup φ''·R² + μ that the algorithms' defaults use.  Without it those
        constants are unknown (None) and the defaults are the paper's constants.

    Both private queries cost one product with the selected rows ``X_B``:
    per-example gradient norms are ``|φ'(z_i)|·‖x_i‖`` with the row norms
    computed once (:class:`~dpopt.objectives.Objective`), and the loss at every
    candidate step of a line search is ``φ(z − η u)`` with ``z = X_B w`` and
    ``u = X_B g`` computed once per search.
    """

    def __init__(self, loss, X, y, l2: float = 0.0, *, data_norm: float | None = None):
        self.l2 = check_nonnegative("l2", l2)
        regularizer = L2(self.l2 / 2.0) if self.l2 > 0 else Zero()
        self.data_norm = None if data_norm is None else check_positive("data_norm", data_norm)
        self.projected_rows = 0
        if self.data_norm is not None:
            X, self.projected_rows = project_rows(X, self.data_norm, "l2")
        self.objective = Objective(loss, X, y, regularizer)
        self.loss = self.objective.loss
        if not hasattr(self.loss, "phi"):
            raise TypeError(f"LinearModel needs a LinearLoss, got {type(self.loss).__name__}")
        self._margin_cache = None  # (w, X w) of the last full-data query at a single w

    @property
    def n(self) -> int:
        return self.objective.n

    @property
    def dim(self) -> int:
        return self.objective.dim

    @property
    def X(self) -> np.ndarray:
        return self.objective.X

    @property
    def gradient_bound(self) -> float | None:
        """sup|φ'|·R with R = ``data_norm`` (None without a declared bound or for unbounded φ')."""
        if self.data_norm is None or not np.isfinite(self.loss.derivative_bound):
            return None
        return float(self.loss.derivative_bound) * self.data_norm

    @property
    def smoothness_bound(self) -> float | None:
        """sup φ''·R² + μ (None without a declared bound or for a non-smooth loss)."""
        if self.data_norm is None or not np.isfinite(self.loss.curvature_bound):
            return None
        return float(self.loss.curvature_bound) * self.data_norm**2 + self.l2

    @property
    def y(self) -> np.ndarray:
        return self.objective.y

    def _row_blocks(self, indices):
        """``(X_b, y_b, ‖x‖_b)`` over the selected records, in cache-sized blocks.

        A minibatch is gathered block by block (``np.take``) and every pass a
        query needs is made while the block is in cache, so each selected row
        is read from memory once per query instead of once per pass.  With
        ``indices=None`` the full data is yielded as one block (sequential
        passes; the loss blocks them itself).
        """
        obj = self.objective
        if indices is None:
            yield obj.X, obj.y, obj.row_norms
            return
        indices = np.asarray(indices)
        if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
            raise ValueError(
                "indices must be a 1-D integer array of record indices, "
                f"got shape {indices.shape} and dtype {indices.dtype}"
            )
        for start in range(0, len(indices), _BLOCK_ROWS):
            idx = indices[start : start + _BLOCK_ROWS]
            yield (np.take(obj.X, idx, axis=0), np.take(obj.y, idx),
                   np.take(obj.row_norms, idx))

    def _margins(self, w, X, full: bool) -> np.ndarray:
        """``z = X w`` (read-only).  On the full data the last ``(w, z)`` pair is kept, so a
        gradient and a line search (or a NoisyMax) at the same point share one pass over X."""
        if not full or w.ndim != 1:
            return self.loss.linear_predictions(w, X)
        cached = self._margin_cache
        if cached is not None and np.array_equal(cached[0], w):
            return cached[1]
        z = self.loss.linear_predictions(w, X)
        z.setflags(write=False)
        self._margin_cache = (w.copy(), z)
        return z

    def _predictions(self, w, direction, indices):
        """``(X_B w, X_B d or None, y_B)``, one block of rows at a time (two GEMVs per block)."""
        full = indices is None
        zs, us, labels = [], [], []
        for X, y, _ in self._row_blocks(indices):
            zs.append(self._margins(w, X, full))
            if direction is not None:
                us.append(self.loss.linear_predictions(direction, X))
            labels.append(y)
        if full:
            return zs[0], (us[0] if us else None), labels[0]
        if not labels:  # an empty minibatch
            shape = w.shape[:-1] + (0,)
            return np.zeros(shape), (None if direction is None else np.zeros(shape)), np.zeros(0)
        u = None if direction is None else np.concatenate(us, axis=-1)
        return np.concatenate(zs, axis=-1), u, np.concatenate(labels)

    def per_example_clipped_grad_sum(self, w, indices, clip):
        """Σ_B clip(∇f_i, C) = X_Bᵀ r with r_i = clip(φ'(z_i), ±C/‖x_i‖) (chen2020 eq. (6)).

        Per block of rows: one pass ``z = X_b w`` and one pass ``X_bᵀ r``; on the full
        data ``z`` is shared with a line search or NoisyMax at the same point.
        """
        w = as_params(w, self.dim)
        clip = check_positive("clip", clip)
        full = indices is None
        total, count = np.zeros(w.shape), 0
        for X, y, norms in self._row_blocks(indices):
            r = self.loss.dphi(self._margins(w, X, full), y)
            thr = clip_thresholds(norms, clip)
            np.clip(r, -thr, thr, out=r)
            total += X.T @ r if r.ndim == 1 else r @ X
            count += X.shape[0]
        ensure_finite_result(total, w=w)
        return total, count

    def clipped_loss_sum(self, w, indices, cap):
        w = as_params(w, self.dim)
        cap = check_positive("cap", cap)
        z, _, y = self._predictions(w, None, indices)
        return _scalar(np.clip(self.loss.phi(z, y), 0.0, cap).sum(axis=-1))

    def clipped_loss_along(self, w, direction, indices, cap):
        """Σ_B min{max{φ(z_i − η u_i), 0}, C}: ``z = X_B w`` and ``u = X_B d`` are computed once,
        then each call evaluates the loss only, in row blocks of :data:`_EVAL_ENTRIES` entries."""
        w, direction = _check_direction(w, direction, self.dim)
        cap = check_positive("cap", cap)
        z, u, y = self._predictions(w, direction, indices)  # (m,) or (R, m) each
        return self._sum_along(w, z, u, y, lambda phi, sl: np.clip(phi, 0.0, cap, out=phi))

    def clipped_decrease_along(self, w, direction, indices, cap):
        """Σ_B clip(φ(z_i) − φ(z_i − η u_i), −C, C) with ``z``, ``u`` and φ(z) computed once."""
        w, direction = _check_direction(w, direction, self.dim)
        cap = check_positive("cap", cap)
        z, u, y = self._predictions(w, direction, indices)  # (m,) or (R, m) each
        base = self.loss.phi(z, y)

        def clipped_decrease(phi, sl):
            np.subtract(base[..., sl, None], phi, out=phi)
            return np.clip(phi, -cap, cap, out=phi)

        return self._sum_along(w, z, u, y, clipped_decrease)

    def _sum_along(self, w, z, u, y, clipped):
        """``values(steps)`` = Σ_i clipped(φ(z_i − η u_i)) for every candidate step η.

        ``clipped(phi, rows)`` maps one block of losses ``(..., b, k)`` (rows
        ``rows``, k steps; it may overwrite it) to the clipped per-record
        quantity; blocks hold :data:`_EVAL_ENTRIES` entries, so they stay in cache.
        """

        def values(steps):
            steps = _steps_for(steps, w)
            k = steps.shape[-1]
            out = np.zeros(steps.shape)
            rows = max(256, _EVAL_ENTRIES // max(k * int(np.prod(w.shape[:-1])), 1))
            for start in range(0, y.shape[0], rows):
                sl = slice(start, start + rows)
                margins = z[..., sl, None] - u[..., sl, None] * steps[..., None, :]  # (..., b, k)
                out += clipped(self.loss.phi(margins, y[sl, None]), sl).sum(axis=-2)
            return out

        return values

    def loss_value(self, w):
        return self.objective.loss_value(as_params(w, self.dim))

    def loss_grad(self, w) -> np.ndarray:
        return self.objective.loss_grad(as_params(w, self.dim))

    def value(self, w):
        return self.objective.value(as_params(w, self.dim))

    def grad(self, w) -> np.ndarray:
        return self.objective.grad(as_params(w, self.dim))

    def accuracy(self, w, X=None, y=None):
        """Fraction of ``sign(x_iᵀw) == y_i`` (±1 labels; the training data by default)."""
        X = self.X if X is None else np.asarray(X, dtype=float)
        y = self.y if y is None else np.asarray(y, dtype=float)
        z = self.loss.linear_predictions(as_params(w, self.dim), X)
        return _scalar(np.mean(np.where(z >= 0, 1.0, -1.0) == y, axis=-1))

    def __repr__(self) -> str:
        bound = "" if self.data_norm is None else f", data_norm={self.data_norm!r}"
        return f"LinearModel({self.loss!r}, n={self.n}, d={self.dim}, l2={self.l2!r}{bound})"


def default_gradient_clip(model: PrivateModel, paper: float = PAPER_C_GRAD) -> float:
    """The default C_grad: min{``paper``, G} with G = ``model.gradient_bound``.

    chen2020 §5.4 sets C_grad = 3 for its features (one-hot and [0, 1] columns,
    unnormalized: ‖x‖₂ ≈ 3.7 on Adult), where it clips a little.  When the
    model declares a public bound G on every per-example gradient (e.g. rows
    scaled to ‖x‖₂ ≤ 1, so G = 1 for the logistic loss), a threshold above G
    clips nothing and only multiplies the noise by C_grad/G; the default is then G.
    """
    bound = model.gradient_bound
    paper = check_positive("paper", paper)
    return paper if bound is None else min(paper, float(bound))
