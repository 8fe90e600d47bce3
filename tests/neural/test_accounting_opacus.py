"""DP-SGD's ε from dpopt against Opacus's RDP accountant on the same order grid."""

import numpy as np
import pytest
from opacus.accountants import RDPAccountant as OpacusRDP
from opacus.accountants.analysis import rdp as opacus_rdp

from dpopt.privacy import RDPAccountant
from dpopt.privacy import events as ev
from dpopt.privacy.rdp import DENSE_ORDERS, rdp_to_epsilon


@pytest.mark.parametrize(("q", "z", "steps", "delta"),
                         [(1 / 200, 1.1, 2000, 1e-8), (0.01, 0.8, 500, 1e-5), (0.1, 2.0, 100, 1e-6),
                          (256 / 60000, 1.0, 14000, 1e-5)])
def test_dp_sgd_epsilon_equals_opacus(q, z, steps, delta):
    orders = np.asarray(OpacusRDP.DEFAULT_ALPHAS, dtype=float)
    step = ev.Subsampled(ev.Gaussian(sigma=z * 3.0, sensitivity=3.0), rate=q, scheme="poisson")
    ours = RDPAccountant(orders).compose(ev.SelfComposed(step, steps))
    theirs = opacus_rdp.compute_rdp(q=q, noise_multiplier=z, steps=steps, orders=orders)
    assert np.allclose(ours.rdp, theirs, rtol=1e-6, atol=0)
    eps_theirs, _ = opacus_rdp.get_privacy_spent(orders=orders, rdp=theirs, delta=delta)
    # Opacus converts with Balle et al. 2020 Thm 21, which is dpopt's "cks" conversion
    assert rdp_to_epsilon(orders, ours.rdp, delta, method="cks")[0] == pytest.approx(eps_theirs, rel=1e-6)
    # dpopt.neural's default (DENSE_ORDERS and the best conversion) is never looser
    assert RDPAccountant(DENSE_ORDERS).compose(ev.SelfComposed(step, steps)).get_epsilon(delta) \
        <= eps_theirs * (1 + 1e-9)
    assert ours.get_epsilon(delta) <= eps_theirs * (1 + 1e-9)


@pytest.mark.parametrize("accountant", ["rdp", None])
def test_train_ledger_matches_opacus_rdp_and_dp_accounting_pld_for_dp_sgd(accountant):
    import dp_accounting as dpa
    import torch
    from torch import nn

    from dpopt.neural import train

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(100, 3)).astype(np.float32), rng.integers(0, 2, 100)
    torch.manual_seed(0)
    out = train(nn.Linear(3, 2), (X, y), method="dp-sgd", n_public=100, epsilon=50.0, delta=1e-5, steps=20,
                batch_rate=0.05, noise_multiplier=0.9, seed=0, accountant=accountant)
    theirs = opacus_rdp.compute_rdp(q=0.05, noise_multiplier=0.9, steps=20, orders=OpacusRDP.DEFAULT_ALPHAS)
    eps_theirs, _ = opacus_rdp.get_privacy_spent(orders=OpacusRDP.DEFAULT_ALPHAS, rdp=theirs, delta=1e-5)
    assert out.result.epsilon <= eps_theirs * (1 + 1e-9)
    if accountant == "rdp":
        assert out.result.privacy.notion == "rdp"
        assert out.result.epsilon == pytest.approx(eps_theirs, rel=1e-3)
        return
    # the default is the PLD accountant: dp-accounting's PLD value, well below RDP's
    assert out.result.privacy.notion == "pld"
    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(0.9)), 20)
    eps_pld = dpa.pld.PLDAccountant(value_discretization_interval=1e-4).compose(event).get_epsilon(1e-5)
    assert out.result.epsilon == pytest.approx(eps_pld, rel=5e-3)
    assert out.result.epsilon < 0.9 * eps_theirs
