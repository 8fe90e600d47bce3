"""Linear models f(w; x, y) = φ(xᵀw, y) on arrays: the array implementation of the model contract.

Both private queries of :class:`~dpopt.models.PrivateModel` cost one product
with the selected rows: clipped per-example gradients are ``X_Bᵀ r`` with
``r_i = clip(φ'(z_i), ±C/‖x_i‖)`` (chen2020 eq. (6), row norms computed once),
and the losses at every candidate step of a line search are ``φ(z − η u)``
with ``z = X_B w`` and ``u = X_B g`` computed once per search.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_int, check_nonnegative, check_positive
from ..objectives import L2, MarginLoss, Objective, Zero
from ..objectives._arrays import as_params, ensure_finite_result
from ..objectives.bounds import clip_thresholds, project_rows
from .base import PrivateModel, _scalar, check_direction, check_indices, steps_for

__all__ = ["LinearModel"]

#: Rows of a minibatch gathered at a time (1024 × 100 float64 = 800 KiB, cache-resident).  Larger
#: single products let a multi-threaded BLAS wake its threads, 5–20× slower on a busy 2-core
#: machine; 1024 beat 512 and 2048 by 10–20 % per query there.
_BLOCK_ROWS = 1024
#: Loss evaluations per block of a line search's candidate steps (rows × steps): the
#: temporaries of one block (2**15 float64 = 256 KiB each) stay in cache.
_EVAL_ENTRIES = 2**15


def _clip_terms(c: np.ndarray, base, lo: float, cap: float) -> np.ndarray:
    """``c`` (losses; ``base − c`` when ``base`` is given) clipped to [lo, cap], in place.

    ``np.fmax``/``np.fmin`` instead of ``np.clip``: no Python-level dispatch, and a NaN term (inf −
    inf, from a record so large that X w overflows, possible without a declared ``data_norm``)
    lands at ``lo``: still within the range, so the sensitivity holds and no error or NaN depends
    on one record.
    """
    if base is not None:
        np.subtract(base, c, out=c)
    np.fmax(c, lo, out=c)
    return np.fmin(c, cap, out=c)


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
    n_public:
        Optional declared public number of records: the constant that released
        sums are divided by (:class:`dpopt.oracles.Normalizer`).  Under
        add/remove-one the data's own n is private and differs between
        neighbours, so it is never used for that; without a declaration the
        oracles release a noisy count.

    Both private queries cost one product with the selected rows ``X_B``:
    per-example gradient norms are ``|φ'(z_i)|·‖x_i‖`` with the row norms
    computed once (:class:`~dpopt.objectives.Objective`), and the loss at every
    candidate step of a line search is ``φ(z − η u)`` with ``z = X_B w`` and
    ``u = X_B g`` computed once per search.
    """

    def __init__(self, loss, X, y, l2: float = 0.0, *, data_norm: float | None = None,
                 n_public: int | None = None):
        self.l2 = check_nonnegative("l2", l2)
        self.n_public = None if n_public is None else check_int("n_public", n_public)
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
        self._threshold_cache = None  # (C, C/‖x_i‖ of every record), see _thresholds

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

    def _row_blocks(self, indices, per_row=None):
        """``(X_b, y_b, v_b)`` over the selected records, in cache-sized blocks, with
        ``v`` a per-record array (``per_row``; None: none gathered).

        A minibatch is gathered block by block (``take``) and every pass a
        query needs is made while the block is in cache, so each selected row
        is read from memory once per query instead of once per pass.  With
        ``indices=None`` the full data is one block (sequential passes; the
        loss blocks them itself).  ``indices`` were checked (:func:`~dpopt.models.base.check_indices`).
        """
        obj = self.objective
        if indices is None:
            return [(obj.X, obj.y, per_row)]
        X, y, v = obj.X, obj.y, per_row
        if len(indices) <= _BLOCK_ROWS:  # one block (a minibatch of a few hundred rows)
            return [(X.take(indices, axis=0), y.take(indices), None if v is None else v.take(indices))]
        return self._blocks(indices, v)

    def _blocks(self, indices, v):
        """:meth:`_row_blocks` of more than one block, gathered one at a time (a generator), so
        each block's passes run while it is in cache."""
        X, y = self.objective.X, self.objective.y
        for start in range(0, len(indices), _BLOCK_ROWS):
            idx = indices[start : start + _BLOCK_ROWS]
            yield X.take(idx, axis=0), y.take(idx), None if v is None else v.take(idx)

    def _thresholds(self, clip: float) -> np.ndarray:
        """``C/‖x_i‖`` of every record (:func:`~dpopt.objectives.bounds.clip_thresholds`, per
        record, so a minibatch gathers the same floats it would compute), kept for the last C."""
        cached = self._threshold_cache
        if cached is None or cached[0] != clip:
            cached = self._threshold_cache = (clip, clip_thresholds(self.objective.row_norms, clip))
        return cached[1]

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
        if not full and w.ndim == 1 and len(indices) <= _BLOCK_ROWS:  # a minibatch of one block
            X = self.objective.X.take(indices, axis=0)
            return X @ w, (None if direction is None else X @ direction), self.objective.y.take(indices)
        zs, us, labels = [], [], []
        for X, y, _ in self._row_blocks(indices):
            zs.append(self._margins(w, X, full))
            if direction is not None:
                us.append(self.loss.linear_predictions(direction, X))
            labels.append(y)
        if len(labels) == 1:  # the full data, or a minibatch of one block: nothing to join
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
        return LinearModel._clipped_grad_sum(self, as_params(w, self.dim), check_indices(indices),
                                             check_positive("clip", clip))

    def _clipped_grad_sum(self, w, indices, clip):
        """:meth:`per_example_clipped_grad_sum` on checked arguments (the oracle's path; the public
        methods call these three by name, so a subclass's twins, which call its overrides, are not
        re-entered: :meth:`PrivateModel.__init_subclass__`)."""
        full = indices is None
        if not full and w.ndim == 1 and len(indices) <= _BLOCK_ROWS:  # a minibatch of one block
            obj = self.objective
            X = obj.X.take(indices, axis=0)
            r = self.loss._clipped_coefs(X @ w, obj.y.take(indices), self._thresholds(clip).take(indices))
            total = X.T @ r
            ensure_finite_result(total, w=w)
            return total, X.shape[0]
        total, count = np.zeros(w.shape), 0
        for X, y, thr in self._row_blocks(indices, self._thresholds(clip)):
            z = self._margins(w, X, full)
            # clip(φ'(z), ±thr) by the loss's in-place kernel (the same floats; z is overwritten,
            # so the full data's cached, read-only margins are copied first)
            r = self.loss._clipped_coefs(z.copy() if full else z, y, thr)
            total += X.T @ r if r.ndim == 1 else r @ X
            count += X.shape[0]
        ensure_finite_result(total, w=w)
        return total, count

    def clipped_loss_sum(self, w, indices, cap):
        w = as_params(w, self.dim)
        cap = check_positive("cap", cap)
        z, _, y = self._predictions(w, None, check_indices(indices))
        return _scalar(_clip_terms(self.loss.phi(z, y), None, 0.0, cap).sum(axis=-1))

    def clipped_loss_along(self, w, direction, indices, cap):
        """Σ_B min{max{φ(z_i − η u_i), 0}, C}: ``z = X_B w`` and ``u = X_B d`` are computed once,
        then each call evaluates the loss only, in row blocks of :data:`_EVAL_ENTRIES` entries."""
        w, direction = check_direction(w, direction, self.dim)
        values = LinearModel._clipped_loss_along(self, w, direction, check_indices(indices), check_positive("cap", cap))
        return lambda steps: values(steps_for(steps, w))

    def _clipped_loss_along(self, w, direction, indices, cap):
        """:meth:`clipped_loss_along` on checked arguments (the oracle's path)."""
        return self._sum_along(w, *self._predictions(w, direction, indices), cap, decrease=False)

    def clipped_decrease_along(self, w, direction, indices, cap):
        """Σ_B clip(φ(z_i) − φ(z_i − η u_i), −C, C) with ``z``, ``u`` and φ(z) computed once."""
        w, direction = check_direction(w, direction, self.dim)
        values = LinearModel._clipped_decrease_along(self, w, direction, check_indices(indices),
                                                    check_positive("cap", cap))
        return lambda steps: values(steps_for(steps, w))

    def _clipped_decrease_along(self, w, direction, indices, cap):
        """:meth:`clipped_decrease_along` on checked arguments (the oracle's path)."""
        return self._sum_along(w, *self._predictions(w, direction, indices), cap, decrease=True)

    def _sum_along(self, w, z, u, y, cap, *, decrease: bool):
        """``values(steps)`` = Σ_i c_i(η) for every candidate step η, with
        c_i = clip(φ(z_i) − φ(z_i − η u_i), −cap, cap) (``decrease``) or clip(φ(z_i − η u_i), 0, cap).

        The losses are evaluated in blocks of :data:`_EVAL_ENTRIES` entries (they stay in
        cache).  For one parameter vector and a margin loss ℓ(y z) (the line search's case) the
        margins are a − η b with a = y z and b = y u (the same floats as y(z − η u): y = ±1), laid
        out one candidate per row, so that each candidate's sum runs along contiguous memory.
        The terms are clipped by :func:`_clip_terms` (a NaN term lands at the range's lower end).
        """
        lo = -cap if decrease else 0.0
        if w.ndim == 1 and isinstance(self.loss, MarginLoss):
            a, b, along = y * z, y * u, self.loss.loss_along
            base = self.loss.loss(a) if decrease else None

            def clipped_sum(c, base_rows):  # (k, rows) losses -> (k,) sums of the clipped terms
                return np.add.reduce(_clip_terms(c, base_rows, lo, cap), axis=1)

            def values(steps):
                n, k = y.shape[0], steps.shape[-1]
                if n <= 256 or n * k <= _EVAL_ENTRIES:  # one block (a minibatch)
                    return clipped_sum(along(a, b, steps), base)
                rows = max(256, _EVAL_ENTRIES // max(k, 1))
                out = np.zeros(steps.shape)
                for start in range(0, n, rows):
                    sl = slice(start, start + rows)
                    out += clipped_sum(along(a[sl], b[sl], steps), None if base is None else base[sl])
                return out

            return values

        base = self.loss.phi(z, y) if decrease else None

        def values(steps):
            k = steps.shape[-1]
            out = np.zeros(steps.shape)
            rows = max(256, _EVAL_ENTRIES // max(k * math.prod(w.shape[:-1]), 1))
            for start in range(0, y.shape[0], rows):
                sl = slice(start, start + rows)
                margins = z[..., sl, None] - u[..., sl, None] * steps[..., None, :]  # (..., b, k)
                c = _clip_terms(self.loss.phi(margins, y[sl, None]), None if base is None else base[..., sl, None],
                                lo, cap)
                out += c.sum(axis=-2)
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
        if self.n_public is not None:
            bound += f", n_public={self.n_public!r}"
        return f"LinearModel({self.loss!r}, n={self.n}, d={self.dim}, l2={self.l2!r}{bound})"
