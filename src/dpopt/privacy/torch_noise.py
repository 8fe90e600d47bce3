"""Gaussian noise onto a PyTorch tensor, on its device, from an injected ``torch.Generator``.

The tensor counterpart of :func:`dpopt.privacy.mechanisms.gaussian` for the
neural family (DESIGN.md invariant 1): the event is charged to the ledger
first (amplified by the sampler that drew the minibatch, invariant 6), then
N(0, σ²) noise is drawn per coordinate where the tensor lives.  ``torch`` is
imported only when this is called, so ``import dpopt.privacy`` never needs it.

``secure_noise=True`` releases through the exact discrete Gaussian sampler of
:mod:`dpopt.privacy.secure` instead (on the CPU, from the OS CSPRNG; the grid
and the charged :class:`~dpopt.privacy.events.DiscreteGaussian` are those of
:func:`dpopt.privacy.mechanisms.secure_event`), so the release leaks nothing
through floating-point low-order bits (Mironov 2012).  The float64 release is
then cast to the tensor's dtype and device: post-processing of a safe release.
"""

from __future__ import annotations

from . import events as ev
from .mechanisms import _charge, _secure_release

__all__ = ["gaussian_tensor"]


def gaussian_tensor(value, *, sensitivity: float, sigma: float, ledger, generator, sampler=None,
                    secure_noise: bool = False):
    """``value`` + i.i.d. N(0, σ²) per coordinate for a query of L2 ``sensitivity`` (σ absolute).

    ``generator`` is a ``torch.Generator`` on ``value``'s device (seeded by the
    caller; invariant 8).  Nothing is drawn if the charge is refused.
    ``secure_noise=True``: exact discrete Gaussian noise on a grid (module docstring);
    ``generator`` is then not used.
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
    if secure_noise:
        released = _secure_release(value.detach().cpu().double().numpy(), event, ledger, sampler)
        return torch.as_tensor(released, dtype=value.dtype, device=value.device)
    _charge(event, ledger, sampler)
    noise = torch.randn(value.shape, generator=generator, dtype=value.dtype, device=value.device)
    return value + event.sigma * noise
