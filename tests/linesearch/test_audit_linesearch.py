"""Statistical audits (dpopt.privacy.audit) of NoisyBTLS and of a short DP-BLSGD run.

Every audit uses a fixed seed and confidence 0.999: a correct mechanism's
lower bound exceeds its claim with probability ≤ 0.001.  One test shows the
audit has power at these sizes: the same NoisyBTLS searches claimed at a
quarter of their true budget fail it.
"""

import numpy as np
import pytest

from dpopt.linesearch.audit import (
    NOISY_BTLS_SETTING,
    dp_blsgd_audit_target,
    noisy_btls_audit_data,
    noisy_btls_audit_run,
    noisy_btls_audit_target,
)
from dpopt.linesearch.noisy_btls import line_search_event
from dpopt.privacy import Ledger
from dpopt.privacy.audit import AuditTarget, audit

CONFIDENCE = 0.999


def test_worst_case_record_shifts_every_query_by_the_sensitivity():
    from dpopt.linesearch.model import LinearModel
    from dpopt.linesearch.noisy_btls import Ray, armijo_queries, candidate_steps

    s = NOISY_BTLS_SETTING
    (X, y), (Xp, yp) = noisy_btls_audit_data()
    steps = candidate_steps(s["eta0"], s["beta"], s["max_it"])
    q = [armijo_queries(Ray.of_model(LinearModel("logistic", A, b), [1.0, 0.0], [0.0, -1.0],
                                     cap=s["cap"], weight=s["weight"]), steps, s["alpha"])
         for A, b in ((X, y), (Xp, yp))]
    np.testing.assert_allclose(q[1] - q[0], s["cap"], rtol=1e-12)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_noisy_btls_audit_passes(noise):
    result = audit(noisy_btls_audit_target(noise), confidence=CONFIDENCE, seed=2020)
    assert result.passes, str(result)
    assert result.notion == ("pure" if noise == "laplace" else "rdp")
    if noise == "laplace":  # Theorem 1: one search is eps_BT-DP
        assert result.epsilon == pytest.approx(NOISY_BTLS_SETTING["budget"]["laplace"])


def test_audit_catches_a_search_claimed_at_a_quarter_of_its_budget():
    """Same searches (ε_BT = 1), but the ledger is told ε_BT/4: the audit must reject the claim."""
    s = NOISY_BTLS_SETTING

    def misclaimed(data, repetitions, rng):
        steps, _ = noisy_btls_audit_run(data, repetitions, rng, noise="laplace")
        claim = Ledger(10.0)
        claim.charge(line_search_event(s["budget"]["laplace"] / 4, s["cap"], "laplace"))
        return steps, claim

    data, neighbour = noisy_btls_audit_data()
    target = AuditTarget("misclaimed", misclaimed, data, neighbour, samples=400_000,
                         batch_size=400_000)
    result = audit(target, confidence=CONFIDENCE, seed=2020)
    assert result.epsilon == pytest.approx(0.25)
    assert not result.passes, str(result)


@pytest.mark.slow
def test_short_dp_blsgd_run_audit_passes():
    result = audit(dp_blsgd_audit_target(), samples=2000, confidence=CONFIDENCE, seed=2020)
    assert result.passes, str(result)
    assert result.notion == "rdp" and result.delta == 1e-5
    assert 0 < result.epsilon <= 2.0
