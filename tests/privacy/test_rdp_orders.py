"""The default RDP order grid is never looser than Opacus's or dp-accounting's on their reference cases.

The grids are the peers' defaults (Opacus 1.x ``RDPAccountant.DEFAULT_ALPHAS``:
1.1, 1.2, …, 10.9 and 12..63; dp-accounting 0.6 ``RdpAccountant``: the same
fractional grid, 11..63, 128, 256, 512).  ε is computed from the same exact
sampled-Gaussian curve on each grid, and against dp-accounting's own accountant.
"""

from __future__ import annotations

import logging

import dp_accounting as dpa
import numpy as np
import pytest

from dpopt.privacy import events as ev
from dpopt.privacy import rdp

logging.getLogger("absl").setLevel(logging.ERROR)

OPACUS_ALPHAS = np.array([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)), dtype=float)
DPA_ORDERS = np.array([1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512], dtype=float)

# (rate, noise multiplier, steps, delta): Opacus's reference (q = 0.04, σ = 1.5, 2250 steps),
# the MNIST-style DP-SGD settings of both projects' examples, full-batch and tiny-ε cases.
CASES = [
    (0.04, 1.5, 2250, 1e-5),
    (0.01, 1.1, 1000, 1e-5),
    (0.001, 0.8, 10000, 1e-6),
    (256 / 60000, 1.1, 60 * 60000 // 256, 1e-5),
    (1.0, 5.0, 50, 1e-5),
    (0.02, 4.0, 10, 1e-3),
]


def test_default_grid_contains_both_peer_grids():
    for grid in (OPACUS_ALPHAS, DPA_ORDERS):
        assert np.all(np.isin(grid, rdp.DEFAULT_ORDERS))


@pytest.mark.parametrize(("rate", "z", "steps", "delta"), CASES)
def test_default_grid_never_looser(rate, z, steps, delta):
    ours = rdp.RDPAccountant().compose(ev.SelfComposed(ev.Subsampled(ev.Gaussian(z), rate), steps)).get_epsilon(delta)
    for grid in (OPACUS_ALPHAS, DPA_ORDERS):
        theirs = rdp.rdp_to_epsilon(grid, steps * rdp.subsampled_gaussian_rdp(rate, z, grid), delta)[0]
        assert ours <= theirs * (1 + 1e-12)
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(rate, dpa.GaussianDpEvent(z)), steps)
    assert ours <= dpa.rdp.RdpAccountant().compose(event).get_epsilon(delta) * (1 + 1e-9)


@pytest.mark.parametrize("order", [2.0**53, 1e300])
def test_an_order_beyond_the_largest_is_refused_in_one_line(order):
    """RDPAccountant([2**53]) accepted the order and raised MemoryError at its first subsampled charge (numpy's
    'array is too big' at 1e300): the exact curve sums about one term per unit of order."""
    from dpopt.privacy import Ledger
    from dpopt.privacy.rdp import MAX_ORDER, RDPAccountant

    with pytest.raises(ValueError, match=r"orders must be in \(1, 1048576\]"):
        RDPAccountant([8.0, order])
    with pytest.raises(ValueError, match="orders must be in"):
        Ledger(1.0, 1e-5, "rdp", orders=[order])
    RDPAccountant([MAX_ORDER]).compose(ev.Subsampled(ev.Gaussian(1.0), 0.01))  # the largest still runs
