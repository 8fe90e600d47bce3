"""The one model contract of dpopt: what private oracles may ask of a model (DESIGN.md "Layers").

Every private optimizer touches the data only through a :mod:`dpopt.oracles`
oracle, and an oracle touches the data only through this contract: per-record
quantities, each *bounded before it is summed*, over a batch of records:

* the per-example gradient clipped to L2 norm ``C`` (chen2020 eq. (6);
  Abadi et al. 2016): :meth:`PrivateModel.per_example_clipped_grad_sum`, whose
  sum over any set of records has L2 sensitivity ``C`` under add/remove-one;
* the per-example loss clipped to ``[0, C_obj]`` (chen2020 Theorem 1 and the
  objective clipping after it): :meth:`PrivateModel.clipped_loss_sum` and, along
  a direction, :meth:`PrivateModel.clipped_loss_along`; or the per-example loss
  *decrease* along a direction clipped to ``[−C_obj, C_obj]``
  (:meth:`PrivateModel.clipped_decrease_along`); both sums have sensitivity ``C_obj``.

Parameters are a flat vector ``w`` of shape ``(d,)`` or a batch ``(R, d)``
(one result per row).  ``indices`` selects the records of one query (an
integer array drawn by the oracle's sampler); ``None`` means all records of
this model.  Who implements it:

* :class:`~dpopt.models.LinearModel` — linear models φ(xᵀw, y) on arrays
  (logistic regression, SVMs), built on :mod:`dpopt.objectives`;
* a PyTorch module (:class:`dpopt.neural.TorchModel`): per-sample gradient
  norms without materializing the gradients where a layer allows (ghost norms),
  then the clip-weighted sum in one product per layer (book-keeping), over a
  flattened parameter vector, and the per-sample losses of the same batch;
* a network node's local shard (``dpopt.dualavg``): a model over that node's
  records only; the oracle that owns the node's ledger and sampler is
  constructed per node, unchanged.

Record counts.  ``n`` (the number of records this model holds) is what a
sampler draws indices from; it is *private* under add/remove-one and an
oracle never divides by it.  A released mean is normalized by a public
constant instead (:class:`dpopt.oracles.Normalizer`): the declared
``n_public`` of the model or of the algorithm, or a noisy count.

Regularization.  The objective is F(w) = (1/n) Σ_i f(w; d_i) + r(w) with a
data-independent r, which the contract exposes as
:meth:`PrivateModel.regularizer_value` and :meth:`PrivateModel.regularizer_grad`
(one convention for every family): ``l2`` is the strong-convexity modulus μ
of r, and the default r is (μ/2)‖w‖², so ``LinearModel(..., l2=μ)`` means
r(w) = (μ/2)‖w‖² (chen2020 §5.1, μ = 0.001).  A model built on a
:class:`dpopt.objectives.Objective` whose :class:`~dpopt.objectives.Regularizer`
writes λ‖w‖² (kuru2022 eq. (5.1)) overrides the two methods with it and
reports μ = 2λ (``dpopt.accelerated.ProjectedData``).  r stays *outside* the
clipped sums: oracles add ``regularizer_grad(w)`` after the noise and the
regularizer's value with a public weight, at no privacy cost.

Declared bounds.  A model may declare a public bound on its data (for
:class:`LinearModel`, ``data_norm`` R ≥ ‖x_i‖₂, enforced by projection); it
then exposes :attr:`PrivateModel.gradient_bound` and
:attr:`PrivateModel.smoothness_bound`, from which algorithms default their
clipping thresholds and steps.  Nothing is ever computed from the data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from .._validation import check_finite_array, check_positive
from ..objectives._arrays import as_params

__all__ = ["PrivateModel", "check_model", "start_point", "steps_for", "check_direction", "check_indices"]


def _scalar(v):
    return float(v) if np.ndim(v) == 0 else v


def steps_for(steps, w: np.ndarray) -> np.ndarray:
    """Candidate steps: ``(k,)`` for ``w`` of shape ``(d,)``, ``(R, k)`` for ``(R, d)`` (shape check only)."""
    steps = np.asarray(steps, dtype=float)
    if steps.ndim != w.ndim or (w.ndim == 2 and steps.shape[0] != w.shape[0]):
        raise ValueError(
            "steps must have shape (k,) for w of shape (d,) and (R, k) for (R, d); "
            f"got {steps.shape} for w {w.shape}"
        )
    return steps


def check_direction(w, direction, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(w, direction)`` as parameter arrays of the same shape."""
    w = as_params(w, dim)
    direction = as_params(direction, dim, "direction")
    if w.shape != direction.shape:
        raise ValueError(f"direction must have the shape of w {w.shape}, got {direction.shape}")
    return w, direction


def check_indices(indices):
    """``indices`` as a 1-D integer array of record indices (or None: every record); one-line
    ``ValueError`` otherwise."""
    if indices is None:
        return None
    indices = np.asarray(indices)
    if indices.ndim != 1 or indices.dtype.kind not in "iu":  # (dtype.kind: cheaper than issubdtype)
        raise ValueError(
            "indices must be a 1-D integer array of record indices, "
            f"got shape {indices.shape} and dtype {indices.dtype}"
        )
    return indices


def check_model(model) -> PrivateModel:
    """``model`` itself if it implements the contract (``TypeError`` otherwise)."""
    if not isinstance(model, PrivateModel):
        raise TypeError(
            "model must be a dpopt.models.PrivateModel (e.g. LinearModel), "
            f"got {type(model).__name__}"
        )
    return model


def start_point(model: PrivateModel, w0) -> np.ndarray:
    """The public starting point: ``w0`` if given (shape (d,)), else the model's (zeros)."""
    if w0 is None:
        return model.initial_params()
    w0 = check_finite_array("w0", w0, ndim=1)
    if w0.shape != (model.dim,):
        raise ValueError(f"w0 must have shape ({model.dim},), got {w0.shape}")
    return w0.copy()


#: (query, its unchecked twin that :class:`~dpopt.oracles.PrivateOracle` calls).
_ORACLE_TWINS = (("per_example_clipped_grad_sum", "_clipped_grad_sum"),
                 ("clipped_loss_along", "_clipped_loss_along"),
                 ("clipped_decrease_along", "_clipped_decrease_along"))


def _calling(public: str):
    """A twin that calls the query ``public`` of the model it is called on."""
    def twin(self, *args):
        return getattr(self, public)(*args)

    twin.__name__ = f"_{public}_twin"
    return twin


class PrivateModel(ABC):
    """The model contract every private oracle programs against (see the module notes).

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
    #: Declared public number of records (the normalizer of released means), or None.
    n_public: int | None = None

    # -- shape ---------------------------------------------------------------------------
    @property
    @abstractmethod
    def n(self) -> int:
        """Number of records this model holds (private under add/remove-one: never a normalizer)."""

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
        w, direction = check_direction(w, direction, self.dim)
        cap = check_positive("cap", cap)

        def values(steps):
            steps = steps_for(steps, w)
            points = w[..., None, :] - steps[..., :, None] * direction[..., None, :]
            flat = points.reshape(-1, self.dim)  # one candidate point per row (few of them)
            out = [self.clipped_loss_sum(point, indices, cap) for point in flat]
            return np.asarray(out, dtype=float).reshape(points.shape[:-1])

        return values

    def __init_subclass__(cls, **kwargs):
        """A subclass that overrides a query but not its unchecked twin (the oracle's path, below)
        gets a twin that calls its override, so the oracle never bypasses it."""
        super().__init_subclass__(**kwargs)
        for public, twin in _ORACLE_TWINS:
            if public in cls.__dict__ and twin not in cls.__dict__:
                setattr(cls, twin, _calling(public))

    # -- the oracle's path: the same queries on arguments it has checked ---------------------
    def _clipped_grad_sum(self, w, indices, clip):
        """:meth:`per_example_clipped_grad_sum` on checked arguments: ``w`` a finite float array
        of width :attr:`dim`, ``indices`` an integer array a sampler drew (or None), ``clip`` > 0.
        A :class:`~dpopt.oracles.PrivateOracle` calls this; a model may skip its own checks here
        (:class:`~dpopt.models.LinearModel` does)."""
        return self.per_example_clipped_grad_sum(w, indices, clip)

    def _clipped_loss_along(self, w, direction, indices, cap):
        """:meth:`clipped_loss_along` on checked arguments (see :meth:`_clipped_grad_sum`)."""
        return self.clipped_loss_along(w, direction, indices, cap)

    def _clipped_decrease_along(self, w, direction, indices, cap):
        """:meth:`clipped_decrease_along` on checked arguments (see :meth:`_clipped_grad_sum`)."""
        return self.clipped_decrease_along(w, direction, indices, cap)

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
        (see ``LineSearchHyper.query`` in :mod:`dpopt.linesearch.algorithms`).
        Models that can evaluate per-record losses implement it.
        """
        raise NotImplementedError(
            f"{type(self).__name__} does not implement clipped_decrease_along; "
            "use the clipped-objective line search (query='objective')"
        )
