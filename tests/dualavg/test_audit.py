import pytest

from dpopt.experiments import audits
from dpopt.privacy import audit as engine
from dpopt.privacy import mechanisms


def test_node_messages_audit_passes():
    result = engine.audit(audits.get_target("dda-node"), samples=200_000, seed=11)
    assert result.passes, result
    assert result.epsilon == pytest.approx(2.0, rel=1e-6)


def test_half_noise_twin_is_caught(monkeypatch):
    original = mechanisms.PrepaidGaussianRounds.__init__

    def half_noise(self, *args, **kwargs):
        original(self, *args, **kwargs)  # charges the full-noise event ...
        self.sigma /= 2.0  # ... then releases with half of it

    monkeypatch.setattr(mechanisms.PrepaidGaussianRounds, "__init__", half_noise)
    result = engine.audit(audits.get_target("dda-node"), samples=200_000, seed=11)
    assert not result.passes, result
