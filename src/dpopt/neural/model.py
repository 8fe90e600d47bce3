"""A ``torch.nn.Module`` and its data behind the private-model contract of the line search.

:class:`TorchModel` implements :class:`dpopt.linesearch.model.PrivateModel`
(flat NumPy parameter vectors, clipped per-example gradient sums, clipped
per-record loss decreases along a direction), so that NoisyBTLS runs on a
network with the *same* code as on a linear model (chen2020 §5.7).  The
training loops of :mod:`dpopt.neural.methods` use its tensor-native twins
(:meth:`TorchModel.clipped_grad_sum_tensor`, :meth:`TorchModel.decrease_along_tensor`)
and keep parameters on the device.

Objective (chen2020 §5.1): F(w) = (1/n) Σ_i f(w; d_i) + (μ/2)‖w‖², f the
per-example loss (cross-entropy by default) and μ = ``l2``; the regularizer is
public and stays outside the clipped sums (see :mod:`dpopt.linesearch.model`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from .._validation import check_int, check_nonnegative, check_positive
from ..models import PrivateModel
from .persample import PerSampleGradients

__all__ = ["TorchModel", "LOSSES", "as_tensors"]


def _clip_terms(terms: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    """Per-record terms clipped to [lo, hi], a NaN term (a record so large that the network
    overflows: inf − inf) at ``lo``, as :func:`dpopt.models.linear._clip_terms` does: every term
    stays within the range, so whether such a record is in the batch changes no error and no NaN
    of the output (``torch.clamp`` alone passes NaN through)."""
    return torch.nan_to_num(terms, nan=lo).clamp(lo, hi)


def _cross_entropy(out, y):
    return F.cross_entropy(out, y, reduction="none")


def _squared(out, y):
    return 0.5 * (out.reshape(out.shape[0], -1) - y.reshape(y.shape[0], -1)).square().sum(1)


#: Per-example losses by name: ``loss(output, target) -> (batch,)``.
LOSSES = {"cross_entropy": _cross_entropy, "squared": _squared}


def as_tensors(data, device=None, dtype=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(X, y)`` from a pair of arrays/tensors or a ``TensorDataset``, validated and on ``device``.

    ``X`` must be finite as given; a narrowing cast to ``dtype`` saturates at its largest finite
    value (float64 1e39 becomes float32's 3.4e38, not inf), so a finite record too large for the
    module's dtype is trained on (its gradient clipped, or taken as 0 if the network overflows)
    rather than refused on the one neighbour that holds it."""
    if isinstance(data, torch.utils.data.TensorDataset):
        data = data.tensors
    if not isinstance(data, tuple | list) or len(data) != 2:
        raise TypeError("data must be a pair (X, y) of arrays or tensors, or a TensorDataset of two tensors")
    X, y = (torch.as_tensor(np.asarray(v) if not isinstance(v, torch.Tensor) else v) for v in data)
    if X.shape[0] != y.shape[0] or X.shape[0] == 0:
        raise ValueError(f"X and y must have the same number (> 0) of rows, got {X.shape[0]} and {y.shape[0]}")
    if not X.is_floating_point():
        X = X.to(torch.get_default_dtype())
    if not bool(torch.isfinite(X).all()):
        raise ValueError("X must be finite (no NaN or infinity)")
    if dtype is not None and torch.finfo(dtype).max < torch.finfo(X.dtype).max:
        limit = torch.finfo(dtype).max
        low, high = torch.aminmax(X)  # one pass; the clamped copy only when a value needs it
        if bool(high > limit) or bool(low < -limit):
            X = X.clamp(-limit, limit)
    if dtype is not None:
        X = X.to(dtype)
    return X.to(device), y.to(device)


def _check_class_targets(module, X: torch.Tensor, y: torch.Tensor) -> None:
    """Integer cross-entropy targets must be class indices 0 … K−1 of the module's K outputs (a
    one-line ``ValueError`` otherwise).  Checked once, when the model is built, before anything is
    charged: an index out of range would otherwise raise inside a release, and only on the data set
    that holds that record.  K is read from one forward pass on the first row, the random state
    restored (a dropout layer draws nothing from the caller's stream).  Float targets (class
    probabilities) are not checked here: any finite value gives a finite loss."""
    if y.is_floating_point():
        return
    devices = [X.device] if X.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices), torch.no_grad():
        out = module(X[:1])
    classes = int(out.shape[1]) if out.ndim >= 2 else 0
    if y.dtype == torch.bool or y.ndim != out.ndim - 1 or not bool(((y >= 0) & (y < classes)).all()):
        raise ValueError(f"y must hold integer class indices 0 … {classes - 1} (the module has {classes} "
                         f"outputs) for the cross-entropy loss")


class TorchModel(PrivateModel):
    """A network ``module`` with its training data ``(X, y)`` as a private model.

    Parameters
    ----------
    module:
        A ``torch.nn.Module`` (no BatchNorm; see :mod:`dpopt.neural.persample`).
    X, y:
        Training inputs and targets (tensors or arrays), moved to the module's device.
    loss:
        ``"cross_entropy"``, ``"squared"`` or ``loss(output, target) -> (batch,)``.
    l2:
        μ ≥ 0 of r(w) = (μ/2)‖w‖² (chen2020 §5.1: 0.001).
    chunk_size:
        Examples per forward/backward pass: bounds memory for any batch size.
    """

    def __init__(self, module, X, y, *, loss="cross_entropy", l2: float = 0.0, chunk_size: int = 256):
        self.l2 = check_nonnegative("l2", l2)
        loss_fn = LOSSES.get(loss) if isinstance(loss, str) else loss
        if not callable(loss_fn):
            raise ValueError(f"loss must be one of {sorted(LOSSES)} or a callable, got {loss!r}")
        self.loss_fn = loss_fn
        self.engine = PerSampleGradients(module, loss_fn, chunk_size=check_int("chunk_size", chunk_size))
        self.module = module
        self.params = self.engine.params
        first = self.params[0]
        self.device, self.dtype = first.device, first.dtype
        self.X, self.y = as_tensors((X, y), self.device, self.dtype)
        if loss_fn is _cross_entropy:
            _check_class_targets(module, self.X, self.y)
        self._n = int(self.X.shape[0])
        self._dim = int(sum(p.numel() for p in self.params))

    # -- shape --------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self._n

    @property
    def dim(self) -> int:
        return self._dim

    # -- parameters ------------------------------------------------------------------------------
    def get_tensor(self) -> torch.Tensor:
        """The flat parameter vector (a copy, on the device)."""
        return parameters_to_vector(self.params).detach().clone()

    @torch.no_grad()
    def set_tensor(self, w: torch.Tensor) -> None:
        vector_to_parameters(w.to(self.device, self.dtype), self.params)

    def _set(self, w) -> None:
        if w is not None:
            w = np.asarray(w, dtype=float)
            if w.shape != (self.dim,):
                raise ValueError(f"w must have shape ({self.dim},), got {w.shape}")
            self.set_tensor(torch.from_numpy(w))

    def initial_params(self) -> np.ndarray:
        """The module's own (data-independent) initialization, as a flat vector."""
        return self.get_tensor().cpu().double().numpy()

    def _index(self, indices) -> slice | torch.Tensor:
        if indices is None:
            return slice(None)
        indices = np.asarray(indices)
        if indices.ndim != 1 or not (indices.size == 0 or np.issubdtype(indices.dtype, np.integer)):
            raise ValueError(f"indices must be a 1-D integer array, got shape {indices.shape}")
        return torch.as_tensor(indices, dtype=torch.long, device=self.device)

    # -- tensor-native private queries (parameters as set on the module) -------------------------
    def clipped_grad_sum_tensor(self, indices, clip: float) -> torch.Tensor:
        """Σ_{i∈indices} clip(∇f_i, C) (chen2020 eq. (6)) at the module's parameters, a flat tensor."""
        index = self._index(indices)
        x, y = self.X[index], self.y[index]
        if x.shape[0] == 0:
            return torch.zeros(self.dim, dtype=self.dtype, device=self.device)
        return self.engine.clipped_sum(x, y, clip)[0]

    @torch.no_grad()
    def losses_tensor(self, indices=None) -> torch.Tensor:
        """Per-example losses f_i at the module's parameters (chunked forward passes)."""
        index = self._index(indices)
        x, y = self.X[index], self.y[index]
        step = self.engine.chunk_size * 4
        parts = [self.loss_fn(self.module(x[s:s + step]), y[s:s + step]) for s in range(0, x.shape[0], step)]
        return torch.cat(parts) if parts else torch.zeros(0, dtype=self.dtype, device=self.device)

    def decrease_along_tensor(self, w: torch.Tensor, direction: torch.Tensor, indices, cap: float):
        """``values(steps)``: Σ_i clip(f_i(w) − f_i(w − η·direction), −cap, cap) per η (sensitivity cap).

        The records are fixed now; f_i(w) is computed once, and every call costs one forward
        pass per step.  When the module is a ``Sequential`` whose first parametrized layer is a
        Linear or Conv2d (affine in its parameters), that layer's output along the line is
        z(η) = z(w) − η·layer(x; direction), computed once, so a step only runs the layers after
        it (the first layer of an MLP on images is most of its cost).  The module is left at ``w``.
        """
        cap = check_positive("cap", cap)
        self.set_tensor(w)
        index = self._index(indices)
        x, y = self.X[index], self.y[index]
        split = self._first_affine()
        step = self.engine.chunk_size * 4
        chunks = []  # per chunk of records: (input of the tail at w, its change per unit step, targets, f_i(w))
        with torch.no_grad():
            for s in range(0, x.shape[0], step):
                xs, ys = x[s:s + step], y[s:s + step]
                if split is None:
                    tail, start, along = self.module, xs, None
                else:
                    prefix, layer, tail = split
                    hidden = prefix(xs)
                    start = layer(hidden)
                    along = torch.func.functional_call(layer, self._pieces(layer, direction), (hidden,))
                chunks.append((start, along, ys, self.loss_fn(tail(start), ys)))

        @torch.no_grad()
        def values(steps):
            steps = np.asarray(steps, dtype=float)
            out = np.zeros(steps.shape)
            for pos, eta in np.ndenumerate(steps):
                self.set_tensor(w - float(eta) * direction)
                for start, along, ys, base in chunks:
                    z = start if along is None else start - float(eta) * along
                    out[pos] += float(_clip_terms(base - self.loss_fn(tail(z), ys), -cap, cap).sum())
            self.set_tensor(w)
            return out

        return values

    @staticmethod
    def _pieces(layer, direction: torch.Tensor) -> dict:
        """The part of a flat ``direction`` that belongs to ``layer`` (the first layer: its leading entries)."""
        pieces, offset = {}, 0
        for name, p in layer.named_parameters():
            pieces[name] = direction[offset:offset + p.numel()].reshape(p.shape)
            offset += p.numel()
        return pieces

    def _first_affine(self):
        """``(prefix, layer, rest)`` when the module is a Sequential whose first parametrized layer is a
        Linear or Conv2d with every parameter trainable, after parameter-free layers only; else None."""
        module = self.module
        if not isinstance(module, nn.Sequential):
            return None
        for i, layer in enumerate(module):
            params = list(layer.parameters())
            if params:
                if isinstance(layer, nn.Linear | nn.Conv2d) and all(p.requires_grad for p in params):
                    return module[:i], layer, module[i + 1:]
                return None
        return None

    # -- the PrivateModel contract (flat NumPy vectors) ------------------------------------------
    def per_example_clipped_grad_sum(self, w, indices, clip) -> tuple[np.ndarray, int]:
        self._set(w)
        count = self.n if indices is None else len(indices)
        return self.clipped_grad_sum_tensor(indices, check_positive("clip", clip)).cpu().double().numpy(), count

    def clipped_loss_sum(self, w, indices, cap):
        self._set(w)
        return float(_clip_terms(self.losses_tensor(indices), 0.0, check_positive("cap", cap)).sum())

    def clipped_decrease_along(self, w, direction, indices, cap):
        w = torch.as_tensor(np.asarray(w, dtype=float), device=self.device, dtype=self.dtype)
        d = torch.as_tensor(np.asarray(direction, dtype=float), device=self.device, dtype=self.dtype)
        if w.shape != (self.dim,) or d.shape != (self.dim,):
            raise ValueError(f"w and direction must have shape ({self.dim},)")
        return self.decrease_along_tensor(w, d, indices, cap)

    def loss_value(self, w):
        """Mean loss over all records (non-private; for reporting)."""
        self._set(w)
        return float(self.losses_tensor().mean())

    def loss_grad(self, w) -> np.ndarray:
        """Mean loss gradient over all records (non-private)."""
        self._set(w)
        total = torch.zeros(self.dim, dtype=self.dtype, device=self.device)
        step = self.engine.chunk_size
        for s in range(0, self.n, step):
            loss = self.loss_fn(self.module(self.X[s:s + step]), self.y[s:s + step]).sum()
            total += torch.cat([g.reshape(-1) for g in torch.autograd.grad(loss, self.params)])
        return (total / self.n).cpu().double().numpy()

    def __repr__(self) -> str:
        return f"TorchModel({type(self.module).__name__}, n={self.n}, d={self.dim}, l2={self.l2!r})"
