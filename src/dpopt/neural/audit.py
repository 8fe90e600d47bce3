"""Audit target for one DP-SGD iteration of a tiny network (:mod:`dpopt.privacy.audit`).

D is four records of a 2-2-1 tanh network under the squared loss; D′ adds one
record whose input is so large that its per-example gradient lies far beyond
the clip C, so after clipping it contributes exactly C.  One DP-SGD iteration
at Poisson rate q: each record's clipped gradient is the production
:meth:`~dpopt.neural.persample.PerSampleGradients.clipped_sum` of that record
alone, a repetition's minibatch sum is the sum over its Poisson mask (sums are
linear, so this is the clipped sum of the minibatch), the noise is drawn by
:func:`dpopt.privacy.torch_noise.gaussian_tensor` (one charge of the amplified
event for all R repetitions), and the output is the released iterate
w₁ = w₀ − η·(noisy sum)/(q·n_public) with a fixed public n_public on D and D′.
σ is calibrated to (ε, δ) by :func:`~dpopt.privacy.calibration.calibrate_noise_multiplier`
on the neural ledger's orders, as :func:`dpopt.neural.train` does.  The broken twin
(``sigma_factor`` < 1) charges the real event to the run's ledger but draws its noise
through the same mechanism at σ·``sigma_factor``, charged to a throwaway ledger.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..privacy import Ledger, PoissonSampler
from ..privacy import events as ev
from ..privacy.audit import AuditTarget
from ..privacy.calibration import calibrate_noise_multiplier
from ..privacy.rdp import DENSE_ORDERS
from ..privacy.torch_noise import gaussian_tensor
from .model import TorchModel

__all__ = ["dp_sgd_audit_target", "DP_SGD_SETTING"]

#: Poisson rate q, clip C, step η, public record count, (ε, δ).
DP_SGD_SETTING = (0.5, 1.0, 0.5, 4, (2.0, 1e-5))


def _network() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1)).double()


def worst_case_network_data():
    """(D, D′): four small records, and the same plus one far outside the clip."""
    X = np.array([[0.5, -0.2], [-0.3, 0.4], [0.1, 0.1], [-0.4, -0.5]])
    y = np.array([[0.2], [-0.1], [0.0], [0.3]])
    return (X, y), (np.vstack([X, [[40.0, -40.0]]]), np.vstack([y, [[30.0]]]))


def dp_sgd_audit_target(sigma_factor: float = 1.0, samples: int = 200_000) -> AuditTarget:
    """The target; ``sigma_factor`` < 1 makes a twin with too little noise (same claim), for tests."""
    rate, clip, lr, n_public, (epsilon, delta) = DP_SGD_SETTING
    sampler = PoissonSampler(rate)

    def step_event(z):
        return sampler.wrap(ev.Gaussian(z * clip, clip))

    sigma = calibrate_noise_multiplier(step_event, epsilon, delta, steps=1, orders=DENSE_ORDERS) * clip

    def run(data, repetitions, rng):
        model = TorchModel(_network(), *data, loss="squared")
        w0 = model.get_tensor()
        per_record = torch.stack([model.clipped_grad_sum_tensor(np.array([i]), clip) for i in range(model.n)])
        mask = torch.from_numpy(sampler.mask(model.n, rng, repetitions).astype(np.float64))
        ledger = Ledger(epsilon, delta, "rdp", orders=DENSE_ORDERS)
        generator = torch.Generator().manual_seed(int(rng.integers(2**63 - 1)))
        if sigma_factor == 1.0:
            noisy = gaussian_tensor(mask @ per_record, sensitivity=clip, sigma=sigma, ledger=ledger,
                                    generator=generator, sampler=sampler)
        else:  # the broken twin: charges the real event, draws too little noise (charged to a throwaway)
            ledger.charge(step_event(sigma / clip))
            noisy = gaussian_tensor(mask @ per_record, sensitivity=clip, sigma=sigma_factor * sigma,
                                    ledger=Ledger(1e9, delta, "rdp", orders=DENSE_ORDERS), generator=generator)
        return (w0 - lr * noisy / (rate * n_public)).numpy(), ledger

    data, neighbour = worst_case_network_data()
    name = "neural-dp-sgd" if sigma_factor == 1.0 else f"neural-dp-sgd-noise-x{sigma_factor:g}"
    return AuditTarget(name, run, data, neighbour, classifier="linear", statistic_name="released iterate",
                       samples=samples, description="DP-SGD, one iteration of a 2-2-1 tanh network, Poisson "
                       "q = 1/2, C = 1, (2, 1e-5) by RDP; added record far beyond the clip")
