"""Clipped per-example gradients of a ``torch.nn.Module``: ghost norms and book-keeping.

DP-SGD (Abadi et al. 2016) and chen2020 Algorithm 2 (line 5, eq. (6)) need
Σ_i clip(∇f_i, C) over a minibatch.  Materializing every ∇f_i costs memory and
time proportional to batch × parameters; this module avoids it where a layer
allows:

1. one forward pass records every parametrized layer's input ``a`` and output;
2. one backward pass of Σ_i f_i to the layer *outputs* gives each example's
   backprop ``b_i`` (only example i's loss depends on example i's activations,
   which is why layers that mix examples, BatchNorm, are refused);
3. per layer, ‖∇_θ f_i‖² from (a_i, b_i) without forming ∇_θ f_i — for Linear
   ``‖b_i‖²‖a_i‖²`` (one token) or ⟨a_i a_iᵀ, b_i b_iᵀ⟩ over T tokens (ghost
   norm, Li et al. 2022), whichever of that and materializing is cheaper; Conv2d
   is a Linear over its unfolded patches (Bu et al. 2023);
4. clip weights c_i = min(1, C/‖∇f_i‖), and the clipped sum per layer as one
   product Σ_i c_i b_iᵀ a_i (book-keeping, Bu et al. 2023: no second backward).

Layers without such a rule (LayerNorm, GroupNorm, anything else with
parameters) materialize their own small per-example gradients — by formula
for the norms, by ``torch.func.vmap(grad)`` of the layer alone otherwise.
Batches are processed in chunks, so memory is bounded for any batch size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["check_module", "PerSampleGradients", "SUPPORTED_LAYERS"]

#: Layers with a dedicated rule; any other layer with parameters uses the generic vmap rule.
SUPPORTED_LAYERS = (nn.Linear, nn.Conv2d, nn.LayerNorm, nn.GroupNorm)

#: How far an example's clip-weighted pieces (Σ over calls and tokens of their norms) may exceed C
#: before :meth:`PerSampleGradients.clipped_sum` adds it from its materialized gradient instead.
PIECE_SLACK = 64.0


def check_module(module) -> nn.Module:
    """``module`` itself, or a one-line ``TypeError`` for what clipping per example cannot handle."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(module).__name__}")
    for name, sub in module.named_modules():
        if isinstance(sub, nn.modules.batchnorm._BatchNorm):
            raise TypeError(
                f"model layer {name or type(sub).__name__!r} is {type(sub).__name__}, which mixes the examples "
                "of a batch (per-example gradients are undefined); use GroupNorm or LayerNorm instead"
            )
        children = list(sub.children())
        own = [p for p in sub.parameters(recurse=False) if p.requires_grad]
        if own and children:
            raise TypeError(
                f"model layer {name!r} owns parameters and also has sub-layers; "
                "put its parameters in a leaf layer (a module without children)"
            )
    if not any(p.requires_grad for p in module.parameters()):
        raise ValueError("model has no trainable parameters")
    return module


# -- per-layer rules ----------------------------------------------------------------------
# A rule turns one call's (input a, output backprop b) into a state (``prepare``), from which it
# gives (a) per-example squared norms and (b) the clip-weighted sum of per-example gradients,
# one tensor per trainable parameter in the layer's order; ``per_example`` materializes them.

class _MatmulRule:
    """Layers whose weight gradient is Σ_t b_t a_tᵀ over tokens t (Linear; Conv2d after unfold).

    Tokens are kept feature-major, a → (batch, d_in, T) and b → (batch, d_out, T), which is
    how ``unfold`` returns patches and a free view for a Linear, so no layout copy is made.
    """

    def __init__(self, layer):
        self.layer = layer
        self.has_bias = layer.bias is not None and layer.bias.requires_grad
        self.has_weight = layer.weight.requires_grad

    def tokens(self, a, b):
        return (a.reshape(a.shape[0], -1, a.shape[-1]).transpose(1, 2),
                b.reshape(b.shape[0], -1, b.shape[-1]).transpose(1, 2))

    def prepare(self, a, b) -> dict:
        a, b = self.tokens(a, b)
        state = {"a": a, "b": b, "grads": None}
        t, din, dout = a.shape[2], a.shape[1], b.shape[1]
        if self.has_weight and t > 1 and t * t > din * dout:  # materializing is cheaper than the ghost norm
            state["grads"] = self.per_example_of(a, b)
        return state

    def per_example_of(self, a, b) -> list[torch.Tensor]:
        out = []
        if self.has_weight:
            out.append(torch.bmm(b, a.transpose(1, 2)).reshape((a.shape[0],) + self.layer.weight.shape))
        if self.has_bias:
            out.append(b.sum(2))
        return out

    def per_example(self, state) -> list[torch.Tensor]:
        return state["grads"] if state["grads"] is not None else self.per_example_of(state["a"], state["b"])

    def piece_norms(self, state) -> list[torch.Tensor]:
        """Per parameter, Σ_t ‖b_t a_tᵀ‖ (weight) and Σ_t ‖b_t‖ (bias): the norms of the per-token
        pieces that :meth:`weighted` adds up (one piece per example where the gradients are formed)."""
        if state["grads"] is not None:
            return _piece_norms(state["grads"])
        a, b = state["a"], state["b"]
        nb = b.square().sum(1).sqrt()
        out = []
        if self.has_weight:
            out.append((a.square().sum(1).sqrt() * nb).sum(1))
        if self.has_bias:
            out.append(nb.sum(1))
        return out

    def sq_norms(self, state) -> torch.Tensor:
        if state["grads"] is not None:
            return _sq(state["grads"])
        a, b = state["a"], state["b"]
        total = torch.zeros(a.shape[0], dtype=a.dtype, device=a.device)
        if self.has_weight:
            if a.shape[2] == 1:  # ‖b‖²‖a‖²
                total = total + a.square().sum((1, 2)) * b.square().sum((1, 2))
            else:  # ghost norm ⟨aᵀa, bᵀb⟩ over token pairs: T²(d_in + d_out) per example
                total = total + (torch.bmm(a.transpose(1, 2), a) * torch.bmm(b.transpose(1, 2), b)).sum((1, 2))
        if self.has_bias:
            total = total + b.sum(2).square().sum(1)
        return total

    def weighted(self, state, c) -> list[torch.Tensor]:
        if state["grads"] is not None:
            return [torch.tensordot(c, g, dims=1) for g in state["grads"]]
        a, b = state["a"], state["b"]
        out = []
        cb = b * c[:, None, None]
        if self.has_weight:
            if a.shape[2] == 1:
                w = cb[:, :, 0].t() @ a[:, :, 0]
            else:
                w = torch.einsum("bot,bit->oi", cb, a)
            out.append(w.reshape(self.layer.weight.shape))
        if self.has_bias:
            out.append(cb.sum((0, 2)))
        return out


def _param_sq(grads) -> list[torch.Tensor]:
    """Per parameter, the squared norm of each example's gradient ``(batch, *shape)``."""
    return [g.reshape(g.shape[0], -1).square().sum(1) for g in grads]


def _sq(grads) -> torch.Tensor:
    return sum(_param_sq(grads))


def _piece_norms(grads) -> list[torch.Tensor]:
    return [sq.sqrt() for sq in _param_sq(grads)]


def _clip_weights(norm: torch.Tensor, clip: float) -> torch.Tensor:
    """min(1, clip/‖∇f_i‖) per example (``norm`` 0 gives 1)."""
    return (clip / norm.clamp_min(1e-30)).clamp(max=1.0)


class _Conv2dRule(_MatmulRule):
    """Conv2d as a Linear over unfolded patches: a → (batch, C_in·k_h·k_w, L), b → (batch, C_out, L).

    When materializing is the cheaper way to the norms (L² > C_in·k_h·k_w·C_out, the usual case for
    early layers), the per-example weight gradients come from one grouped convolution backward with
    the batch as groups (no unfold: about half the time of unfold + bmm on CPU); the ghost norm
    otherwise uses the unfolded patches.
    """

    def tokens(self, a, b):
        m = self.layer
        u = F.unfold(a, m.kernel_size, dilation=m.dilation, padding=m.padding, stride=m.stride)
        return u, b.reshape(b.shape[0], b.shape[1], -1)

    def prepare(self, a, b) -> dict:
        m = self.layer
        tokens = b.shape[2] * b.shape[3]
        din = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
        if not self.has_weight or tokens * tokens <= din * m.out_channels:
            return super().prepare(a, b)
        n = a.shape[0]
        weight = m.weight.detach().repeat(n, 1, 1, 1)
        grads = torch.ops.aten.convolution_backward(
            b.reshape(1, n * b.shape[1], *b.shape[2:]), a.reshape(1, n * a.shape[1], *a.shape[2:]), weight,
            None, m.stride, m.padding, m.dilation, False, (0, 0), n, (False, True, False))[1]
        out = [grads.reshape((n,) + m.weight.shape)]
        if self.has_bias:
            out.append(b.sum((2, 3)))
        return {"a": None, "b": None, "grads": out}


class _MaterializeRule:
    """Rules that form per-example gradients of a (small) layer once, then norm and weight them."""

    def prepare(self, a, b) -> dict:
        return {"grads": self.per_example_of(a, b)}

    def per_example(self, state) -> list[torch.Tensor]:
        return state["grads"]

    def sq_norms(self, state) -> torch.Tensor:
        return _sq(state["grads"])

    def piece_norms(self, state) -> list[torch.Tensor]:
        return _piece_norms(state["grads"])

    def weighted(self, state, c) -> list[torch.Tensor]:
        return [torch.tensordot(c, g, dims=1) for g in state["grads"]]


class _NormRule(_MaterializeRule):
    """LayerNorm / GroupNorm: ∇γ_i = Σ b_i ⊙ x̂_i and ∇β_i = Σ b_i over the non-parameter axes."""

    def __init__(self, layer):
        self.layer = layer
        self.use = [p is not None and p.requires_grad for p in (layer.weight, layer.bias)]

    def normalized(self, a):
        m = self.layer
        if isinstance(m, nn.LayerNorm):
            return F.layer_norm(a, m.normalized_shape, eps=m.eps)
        return F.group_norm(a, m.num_groups, eps=m.eps)

    def per_example_of(self, a, b) -> list[torch.Tensor]:
        m = self.layer
        if isinstance(m, nn.LayerNorm):
            shape = (a.shape[0], -1) + tuple(m.normalized_shape)
        else:  # GroupNorm: parameters per channel (axis 1)
            shape = (a.shape[0], a.shape[1], -1)
        axis = 1 if isinstance(m, nn.LayerNorm) else 2
        out = []
        if self.use[0]:
            out.append((b * self.normalized(a)).reshape(shape).sum(axis))
        if self.use[1]:
            out.append(b.reshape(shape).sum(axis))
        return out


class _GenericRule(_MaterializeRule):
    """Any other leaf layer: ∇_θ⟨layer(a_i; θ), b_i⟩ per example by ``torch.func.vmap(grad)``."""

    def __init__(self, layer):
        self.layer = layer
        self.names = [name for name, p in layer.named_parameters() if p.requires_grad]

    def per_example_of(self, a, b) -> list[torch.Tensor]:
        from torch.func import functional_call, grad, vmap

        params = {name: p.detach() for name, p in self.layer.named_parameters() if name in self.names}

        def inner(theta, ai, bi):
            out = functional_call(self.layer, theta, (ai.unsqueeze(0),))
            return (out * bi.unsqueeze(0)).sum()

        grads = vmap(grad(inner), in_dims=(None, 0, 0))(params, a, b)
        return [grads[name] for name in self.names]


def _rule_for(layer):
    if isinstance(layer, nn.Linear):
        return _MatmulRule(layer)
    if isinstance(layer, nn.Conv2d) and layer.groups == 1 and layer.padding_mode == "zeros" \
            and not isinstance(layer.padding, str):
        return _Conv2dRule(layer)
    if isinstance(layer, nn.LayerNorm | nn.GroupNorm):
        return _NormRule(layer)
    return _GenericRule(layer)


def _summed(rule, states) -> list[torch.Tensor]:
    """Per-example gradients of a layer summed over its calls (shared weights)."""
    return [sum(gs) for gs in zip(*(rule.per_example(state) for state in states), strict=True)]


# -- the engine ---------------------------------------------------------------------------

class PerSampleGradients:
    """Per-example gradient norms and clipped gradient sums of ``module`` under ``loss_fn``.

    Parameters
    ----------
    module:
        A ``torch.nn.Module`` whose parameters all live in leaf layers; no BatchNorm.
    loss_fn:
        ``loss_fn(output, target) -> (batch,)`` per-example losses.
    chunk_size:
        Examples per forward/backward pass (bounds memory for any batch size).
    """

    def __init__(self, module, loss_fn, *, chunk_size: int = 256):
        self.module = check_module(module)
        self.loss_fn = loss_fn
        if not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
        self.chunk_size = chunk_size
        self.layers = []
        for layer in module.modules():
            if next(layer.children(), None) is None and any(p.requires_grad for p in layer.parameters()):
                self.layers.append((layer, _rule_for(layer), [p for p in layer.parameters() if p.requires_grad]))
        #: Trainable parameters, in the order of the flat vectors this class returns.
        self.params = [p for _, _, ps in self.layers for p in ps]

    def _record(self, x, y):
        """Forward one chunk with hooks: (per-example losses, [(layer index, input, output)])."""
        calls = []
        handles = []
        for index, (layer, _, _) in enumerate(self.layers):
            def hook(mod, inputs, output, index=index):
                calls.append((index, inputs[0].detach(), output))
            handles.append(layer.register_forward_hook(hook))
        try:
            losses = self.loss_fn(self.module(x), y)
        finally:
            for h in handles:
                h.remove()
        if losses.shape != (x.shape[0],):
            raise ValueError(
                f"loss_fn must return per-example losses of shape ({x.shape[0]},), got {tuple(losses.shape)}"
            )
        return losses, calls

    def _backprops(self, x, y):
        losses, calls = self._record(x, y)
        if not calls:
            raise RuntimeError("no parametrized layer took part in the forward pass")
        outputs = [out for _, _, out in calls]
        backs = torch.autograd.grad(losses.sum(), outputs, allow_unused=True)
        per_layer: dict[int, list] = {}
        for (index, a, out), b in zip(calls, backs, strict=True):
            state = self.layers[index][1].prepare(a, torch.zeros_like(out) if b is None else b)
            per_layer.setdefault(index, []).append(state)
        return losses.detach(), per_layer

    def _chunks(self, n: int):
        for start in range(0, n, self.chunk_size):
            yield slice(start, min(start + self.chunk_size, n))

    def _layer_norms(self, per_layer) -> torch.Tensor:
        total = None
        for index, pairs in per_layer.items():
            rule = self.layers[index][1]
            if len(pairs) == 1:
                sq = rule.sq_norms(pairs[0])
            else:  # a layer called more than once (shared weights): sum per-example grads over calls
                sq = _sq(_summed(rule, pairs))
            total = sq if total is None else total + sq
        return total

    def _norms(self, per_layer) -> torch.Tensor:
        """‖∇_θ f_i‖₂ per example of one chunk's backprops: the root of :meth:`_layer_norms`' squared
        norms, clamped at 0."""
        return self._layer_norms(per_layer).clamp_min(0).sqrt()

    def _piece_scale(self, per_layer) -> torch.Tensor:
        """P_i = (Σ_params (Σ_pieces ‖piece‖)²)^½ ≥ ‖∇f_i‖: the size of the pieces (per call, per token)
        from which :meth:`clipped_sum` forms c_i ∇f_i; P_i = ‖∇f_i‖ for a layer called once on one token."""
        total = None
        for index, pairs in per_layer.items():
            rule = self.layers[index][1]
            blocks = [sum(parts) for parts in zip(*(rule.piece_norms(state) for state in pairs), strict=True)]
            sq = sum(block.square() for block in blocks)
            total = sq if total is None else total + sq
        return total.sqrt()

    def _materialized_clipped_sum(self, x, y, clip: float) -> torch.Tensor:
        """Σ_i clip(∇f_i, C) from materialized per-example gradients, each clipped by its own norm
        (a record whose gradient is not finite adds 0)."""
        g = torch.cat([p.reshape(p.shape[0], -1) for p in self.per_example(x, y)], dim=1)
        norm = g.square().sum(1).sqrt()
        finite = torch.isfinite(norm)
        weight = torch.where(finite, _clip_weights(norm, clip), torch.zeros_like(norm))
        return (weight[:, None] * torch.where(finite[:, None], g, torch.zeros_like(g))).sum(0)

    def norms(self, x, y) -> torch.Tensor:
        """‖∇_θ f_i‖₂ for every example i of ``(x, y)`` (no per-example gradient materialized
        where a layer's rule allows)."""
        out = []
        for s in self._chunks(x.shape[0]):
            _, per_layer = self._backprops(x[s], y[s])
            out.append(self._norms(per_layer))
        return torch.cat(out)

    def per_example(self, x, y) -> list[torch.Tensor]:
        """Materialized per-example gradients, one ``(batch, *p.shape)`` tensor per parameter."""
        chunks = []
        for s in self._chunks(x.shape[0]):
            _, per_layer = self._backprops(x[s], y[s])
            grads = []
            for index, (_, rule, ps) in enumerate(self.layers):
                pairs = per_layer.get(index)
                if pairs is None:
                    grads += [torch.zeros((s.stop - s.start,) + p.shape, dtype=p.dtype, device=p.device) for p in ps]
                    continue
                grads += _summed(rule, pairs)
            chunks.append(grads)
        return [torch.cat(parts) for parts in zip(*chunks, strict=True)]

    def clipped_sum(self, x, y, clip: float) -> tuple[torch.Tensor, torch.Tensor]:
        """(Σ_i clip(∇f_i, C) as a flat vector, the per-example losses) — chen2020 eq. (6).

        The clip weight is min(1, C'/‖∇f_i‖) with C' = C·(1 − 8·machine ε), so rounding in the
        norm can never make a clipped gradient longer than C.  The weighted sum is formed from
        pieces (per call of a shared layer, per token) added up with the other examples', so an
        example whose weighted pieces c_i·P_i exceed PIECE_SLACK·C (pieces that cancel: a huge
        record whose gradient is small) would move the sum by far more than C through rounding;
        such examples, and those whose gradient is not finite (one so large that the network
        overflows: they add 0, a vector within the clip), are taken out of the chunk, which is
        recomputed without them, and added from materialized per-example gradients, each clipped
        by its own norm.  Whether such a record is in the batch then changes no error, no NaN of
        the output, and the sum by at most C.
        """
        margin = 1.0 - 8.0 * torch.finfo(self.params[0].dtype).eps
        flat = torch.zeros(sum(p.numel() for p in self.params), dtype=self.params[0].dtype,
                           device=self.params[0].device)
        losses = []
        for s in self._chunks(x.shape[0]):
            loss, per_layer = self._backprops(x[s], y[s])
            losses.append(loss)
            norm = self._norms(per_layer)
            weight = _clip_weights(norm, clip * margin)
            # NaN-safe: a non-finite norm or piece scale is odd
            odd = ~(torch.isfinite(norm) & (weight * self._piece_scale(per_layer) <= PIECE_SLACK * clip))
            if bool(odd.any()):
                xs, ys = x[s], y[s]
                flat += self._materialized_clipped_sum(xs[odd], ys[odd], clip * margin)
                rest = ~odd
                if not bool(rest.any()):
                    continue
                _, per_layer = self._backprops(xs[rest], ys[rest])
                weight = _clip_weights(self._norms(per_layer), clip * margin)
            offset = 0
            for index, (_, rule, ps) in enumerate(self.layers):
                size = sum(p.numel() for p in ps)
                pairs = per_layer.get(index)
                if pairs is not None:
                    for state in pairs:
                        parts = rule.weighted(state, weight)
                        flat[offset:offset + size] += torch.cat([g.reshape(-1) for g in parts])
                offset += size
        return flat, torch.cat(losses) if losses else torch.zeros(0)
