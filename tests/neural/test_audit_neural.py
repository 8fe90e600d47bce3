"""Audit of one DP-SGD iteration on a tiny network, and of a twin with half the noise."""

from dpopt.experiments import audits
from dpopt.neural.audit import dp_sgd_audit_target
from dpopt.privacy.audit import audit

STRICT = 1 - 1e-6


def test_neural_dp_sgd_keeps_its_claim():
    result = audit(audits.get_target("neural-dp-sgd"), confidence=STRICT, seed=1)
    assert result.passes and result.epsilon_lower_bound <= result.epsilon, str(result)
    assert result.epsilon_lower_bound > 0.5, str(result)  # the audit is not vacuous


def test_half_noise_twin_is_caught():
    """σ/2 with the claim of σ: the twin's true ε at δ = 1e-5 is about twice the claim of 2."""
    result = audit(dp_sgd_audit_target(sigma_factor=0.5), confidence=STRICT, seed=2)
    assert not result.passes and result.epsilon_lower_bound > result.epsilon, str(result)
