"""Algorithm 3's releases pass their audits; twins drawing half the noise are caught.

Confidence 1 − 1e-6 as in tests/experiments/test_audits.py.  The twins run the
real :func:`optimize` at twice the ε (half the noise scale) but charge the
ledger the events of the claimed ε, as a mis-calibrated release would.
"""

from dataclasses import replace

import numpy as np
import pytest

from dpopt.bayesopt.algorithms import optimize
from dpopt.bayesopt.audit import ALG3_SETTING, alg3_problem
from dpopt.experiments import audits
from dpopt.privacy import Ledger
from dpopt.privacy import events as ev
from dpopt.privacy.audit import audit

STRICT = 1 - 1e-6


def halved_twin(name, release, output):
    target = audits.get_target(name)
    candidates, kwargs = alg3_problem(len(target.data))

    def run(values, repetitions, rng):
        inner = Ledger(2 * kwargs["epsilon"], relation="replace_one")
        result = optimize(lambda i: values[i], candidates, release=release, rng=rng, ledger=inner,
                          repetitions=repetitions, **{**kwargs, "epsilon": 2 * kwargs["epsilon"]})
        claimed = Ledger(kwargs["epsilon"], relation="replace_one")
        for e in result.events:  # what the calibrated release would have charged
            claimed.charge(ev.Laplace(2 * e.scale, e.sensitivity) if isinstance(e, ev.Laplace)
                           else ev.Exponential(e.epsilon / 2))
        out = result.fun if output == "fun" else result.info["index"]
        return np.asarray(out, dtype=float), claimed

    return replace(target, run=run)


@pytest.mark.parametrize("name,floor", [("bayesopt-alg3-score", 0.85), ("bayesopt-alg3-lambda", 0.75)])
def test_alg3_releases_pass_their_audit(name, floor):
    result = audit(audits.get_target(name), confidence=STRICT, seed=11)
    assert result.passes and result.epsilon == pytest.approx(ALG3_SETTING["epsilon"]), str(result)
    assert result.epsilon_lower_bound > floor, str(result)  # not vacuous (exact loss 1 and 0.92)


@pytest.mark.parametrize("name,release,output", [
    ("bayesopt-alg3-score", "score", "fun"),    # true ε 2, audit reaches ≈ 1.9
    ("bayesopt-alg3-lambda", "lambda", "index"),  # true loss of the pair 1.98
])
def test_half_noise_twins_are_caught(name, release, output):
    result = audit(halved_twin(name, release, output), confidence=STRICT, seed=12)
    assert result.epsilon_lower_bound > result.epsilon and not result.passes, str(result)
