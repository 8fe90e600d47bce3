"""Gaussian noise onto a PyTorch tensor, on its device, from an injected ``torch.Generator``.

The tensor counterpart of :func:`dpopt.privacy.mechanisms.gaussian` for the
neural family (DESIGN.md invariant 1): the event is charged to the ledger
first (amplified by the sampler that drew the minibatch, invariant 6), then
N(0, σ²) noise is drawn per coordinate where the tensor lives.  ``torch`` is
imported only when this is called, so ``import dpopt.privacy`` never needs it.
"""

from __future__ import annotations

from . import events as ev
from .mechanisms import _charge

__all__ = ["gaussian_tensor"]


def gaussian_tensor(value, *, sensitivity: float, sigma: float, ledger, generator, sampler=None):
    """``value`` + i.i.d. N(0, σ²) per coordinate for a query of L2 ``sensitivity`` (σ absolute).

    ``generator`` is a ``torch.Generator`` on ``value``'s device (seeded by the
    caller; invariant 8).  Nothing is drawn if the charge is refused.
    """
    import torch

    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        raise TypeError(f"value must be a floating-point torch.Tensor, got {type(value).__name__}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if generator.device.type != value.device.type:
        raise ValueError(f"generator is on {generator.device}, value on {value.device}; they must match")
    if not bool(torch.isfinite(value).all()):
        raise ValueError("value must be finite (no NaN or infinity)")
    event = ev.Gaussian(sigma, sensitivity)  # validates sigma > 0 and sensitivity > 0
    _charge(event, ledger, sampler)
    noise = torch.randn(value.shape, generator=generator, dtype=value.dtype, device=value.device)
    return value + event.sigma * noise
