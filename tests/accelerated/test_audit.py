"""Statistical audit of a short DP-NAG run on tiny worst-case data (dpopt.privacy.audit).

The audit's lower confidence bound ε_lo exceeds the claimed ε with
probability at most 1 − confidence = 5 % for a correct mechanism; the seeds are
fixed, so the outcome is deterministic.  The statistic is the exact privacy
loss, so a correct run gets ε_lo close to (but below) ε = 1, and a run whose
noise is calibrated to half the true sensitivity (true ε = 2, claimed 1) is
caught.
"""

from __future__ import annotations

import numpy as np

import dpopt.accelerated.audit as nag_audit
import dpopt.accelerated.oracle as oracle_module
from dpopt.experiments import audits
from dpopt.privacy.audit import audit


def test_dp_nag_audit_passes():
    result = audit(nag_audit.nag_audit_target(), seed=2024, confidence=0.95)
    assert result.epsilon == 1.0 and result.delta == 0.0 and result.relation == "replace_one"
    assert result.passes, str(result)
    assert result.epsilon_lower_bound > 0.6  # the audit is sharp: it nearly reaches ε


def test_audit_catches_noise_for_half_the_sensitivity(monkeypatch):
    true_sensitivity = oracle_module.l1_sensitivity

    def half(loss, bound):
        return true_sensitivity(loss, bound) / 2

    monkeypatch.setattr(oracle_module, "l1_sensitivity", half)
    monkeypatch.setattr(nag_audit, "l1_sensitivity", half)
    result = audit(nag_audit.nag_audit_target(), seed=2024, confidence=0.95)
    assert result.epsilon == 1.0  # what the (wrong) ledger claims
    assert not result.passes, str(result)


def test_run_function_is_batched():
    (data, neighbour) = nag_audit.nag_audit_data()
    outputs, ledger = nag_audit.nag_audit_run(data, 7, np.random.default_rng(0))
    T = nag_audit.NAG_AUDIT_SETTING["iterations"]
    assert outputs.shape == (7, T, 2)
    assert ledger.spent().epsilon == 1.0 and len(ledger.events) == T
    stat = nag_audit.privacy_loss_statistic(data, neighbour)(outputs)
    assert stat.shape == (7,) and np.all(np.abs(stat) <= 1.0 + 1e-9)  # |privacy loss| ≤ ε


def test_registered_in_the_audit_registry():
    target = audits.get_target("dp-nag")
    assert target.name == "dp-nag" and target.run is nag_audit.nag_audit_run
