"""Privacy of Algorithm 1 exactly as it runs: Theorem 1's σ and the RDP accountant's σ.

Neighbouring relation: **replace one record** of one node (node shard sizes
q_i are public and fixed).  A record lives on exactly one node, so the
guarantee of a record is that of its node's releases alone (parallel
composition over nodes); the run's record is the worst node's.

One round of node i, as the accountant sees it (:func:`round_event`):

* the node is active with probability p — ⌈nι⌉/n under fixed-size activation
  (its marginal; rounds are independent), ι under Poisson activation —
  independently of the data, and whether it is active may be public (an
  eavesdropper sees who sends): ``Activated(·, p)``, RDP
  (1/(α−1))·log(1 − p + p·e^{(α−1)ε(α)}) exactly;
* an active node draws b of its q_i records without replacement (b = 1 in the
  paper) and releases the mean of their gradients clipped to L plus
  N(0, σ²I): ``Subsampled(Gaussian(σ, 2L/b), b/q_i, "without_replacement")``,
  RDP by Wang, Balle & Kasiviswanathan 2019, Thm 9 (replace-one, integer
  orders; :func:`dpopt.privacy.rdp.without_replacement_rdp`).  The
  replace-one sensitivity of the clipped mean is 2L/b (liu2024 proof of
  Thm 1 uses Δ ≤ 2L for b = 1).  That bound keeps a floor
  Σ_{j≥3} 2 (b/q)^j C(α, j) as σ → ∞, so for few records per node and a
  small ε no σ may reach the target (calibration then raises ``ValueError``).

With ``secure_noise`` the Gaussian is replaced by the discrete Gaussian of the
same noise multiplier on the message's grid (integer sensitivity ⌈Δ/g + √d⌉,
:func:`dpopt.privacy.mechanisms.secure_event`), under the same activation and
subsampling: its RDP curve is the Gaussian's (Canonne–Kamath–Steinke 2020), so
the RDP bound and σ are unchanged, and its exact PLD moves the hidden-activation
σ by a relative ~1e-9 (either way: the calibration tolerance).

T rounds compose in RDP and convert to (ε, δ) (Canonne–Kamath–Steinke).
Theorem 1's σ (:func:`theorem1_sigma`) is the paper's sufficient condition; its
δ is left open by the paper (DESIGN.md), so we report the ε the accountant
gives it at the user's δ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import _validation as val
from ..privacy import RDPAccountant, calibration
from ..privacy import events as ev
from ..privacy import mechanisms as mech

__all__ = [
    "theorem1_sigma",
    "theorem1_delta",
    "round_event",
    "run_event",
    "accountant_sigma",
    "epsilon_of",
    "NoiseReport",
]


def theorem1_sigma(
    epsilon: float,
    delta0: float,
    *,
    lipschitz: float,
    local_samples: int,
    steps: int,
    activation: float = 1.0,
    check_steps: bool = True,
) -> float:
    """Noise std σ of liu2024 Theorem 1 (private distributed dual averaging).

    σ = √(32 ι² L² T log(2/δ₀) / (q² ε²)), the equality case of
    σ² ≥ 32 ι² L² T log(2/δ₀)/(q² ε²), with the paper's symbols:

    * ε = ``epsilon`` ∈ (0, 1] — the target ε;
    * δ₀ = ``delta0`` ∈ (0, 1] — the δ of each per-step Gaussian mechanism
      (Lemma 4.1); the theorem's final δ is left unspecified;
    * L = ``lipschitz`` — Lipschitz constant of each local loss (Assumption 3);
      the per-step query sensitivity is 2L;
    * q = ``local_samples`` — number of samples in each node's local dataset
      (each active node draws one uniformly, Algorithm 1 step 6);
    * T = ``steps`` — number of iterations;
    * ι = ``activation`` ∈ (0, 1] — fraction of nodes active per step.

    The theorem also requires T ≥ 5q²ε²/(4ι²); with ``check_steps`` (default)
    a ``ValueError`` is raised when it fails.
    """
    epsilon = val.check_positive("epsilon", epsilon)
    if epsilon > 1.0:
        raise ValueError(f"epsilon must be in (0, 1] for liu2024 Theorem 1, got {epsilon!r}")
    delta0 = val._as_real("delta0", delta0)
    if not 0.0 < delta0 <= 1.0:
        raise ValueError(f"delta0 must be in (0, 1], got {delta0!r}")
    L = val.check_positive("lipschitz", lipschitz)
    q = val.check_int("local_samples", local_samples, minimum=1)
    T = val.check_int("steps", steps, minimum=1)
    iota = val.check_rate("activation", activation)
    if check_steps and T < 5.0 * q * q * epsilon * epsilon / (4.0 * iota * iota):
        raise ValueError(
            f"steps must be >= 5 q^2 epsilon^2 / (4 iota^2) = "
            f"{5.0 * q * q * epsilon * epsilon / (4.0 * iota * iota):.6g} for liu2024 Theorem 1, "
            f"got {T} (pass check_steps=False to compute the noise level anyway)"
        )
    # the same σ, with no square of q·ε to underflow (ε = 1e-300 divided by zero)
    return math.sqrt(32.0 * T * math.log(2.0 / delta0)) * iota * L / (q * epsilon)


def theorem1_delta(epsilon: float, delta0: float, *, local_samples: int, steps: int, activation: float) -> float:
    """The δ that the proof of Theorem 1 yields: δ̃ = 1 − (1 − δ′)(1 − ιδ₀/q)^T with δ′ = ε.

    The proof fixes δ′ = √(Σ ε′_t²) = ε, so δ̃ ≥ ε: as a guarantee it is
    vacuous for every ε of interest, which is why the accountant's ε at the
    user's δ is reported next to it.
    """
    per_step = activation * delta0 / local_samples
    return 1.0 - (1.0 - min(epsilon, 1.0)) * (1.0 - per_step) ** steps


def round_event(
    sigma: float,
    *,
    lipschitz: float,
    local_samples: int,
    activation_rate: float,
    batch: int = 1,
    activation_visible: bool = True,
    secure_size: int = 0,
) -> ev.Event:
    """One round of one node (see the module docstring), as it is charged.

    ``activation_visible=False`` is the paper's model (Lemma 4.2): the
    adversary cannot tell whether a node was active, so a record is used with
    probability p·b/q and, given that, the rest of the round has the same law
    under both neighbours — ``Subsampled(Gaussian, p·b/q, "without_replacement")``
    by the same theorem.  It holds only if inactive rounds are indistinguishable
    from active ones on the wire, which Algorithm 1 (inactive nodes send
    nothing) does not provide: a *conditional* guarantee.

    ``secure_size`` = d > 0 (``secure_noise``): the node's message ζ_i of
    eq. (5) is released on a grid, g·(round(ĝ_i/g) + Z) with Z exact discrete
    Gaussian, so the noise is the discrete event
    :func:`~dpopt.privacy.mechanisms.secure_event` gives for d values —
    ``DiscreteGaussian`` of the same noise multiplier σ/Δ with the grid's
    integer sensitivity ⌈Δ/g + √d⌉ — under the same amplification.
    """
    L = val.check_positive("lipschitz", lipschitz)
    q = val.check_int("local_samples", local_samples)
    b = val.check_int("batch", batch)
    if b > q:
        raise ValueError(f"batch must be <= local_samples={q}, got {b}")
    event: ev.Event = ev.Gaussian(val.check_positive("sigma", sigma), 2.0 * L / b)
    if val.check_int("secure_size", secure_size, minimum=0):
        event = mech.secure_event(event, secure_size)[0]
    rate = val.check_rate("activation_rate", activation_rate)
    if not activation_visible:
        joint = rate * b / q
        return event if joint == 1.0 else ev.Subsampled(event, joint, ev.WITHOUT_REPLACEMENT)
    if b < q:
        event = ev.Subsampled(event, b / q, ev.WITHOUT_REPLACEMENT)
    return event if rate == 1.0 else ev.Activated(event, rate)


def run_event(sigma: float, *, steps: int, **kw) -> ev.Event:
    """``steps`` rounds of one node."""
    e = round_event(sigma, **kw)
    steps = val.check_int("steps", steps)
    return e if steps == 1 else ev.SelfComposed(e, steps)


def accountant_sigma(epsilon: float, delta: float, *, steps: int, accountant=None, **kw) -> float:
    """Smallest σ for which ``steps`` rounds of a node are (ε, δ)-DP under ``accountant`` (default RDP).

    ``accountant``: an accountant instance (the run's,
    :func:`~dpopt.privacy.calibration.run_accountant`) or None for the RDP accountant.
    """
    acc = RDPAccountant() if accountant is None else accountant
    return calibration.calibrate_run(lambda s: run_event(s, steps=steps, **kw), epsilon, delta, acc)


def epsilon_of(sigma: float, delta: float, *, steps: int, accountant=None, **kw) -> float:
    """The ε (at ``delta``) that ``accountant`` (default RDP) gives ``steps`` rounds at noise σ."""
    acc = RDPAccountant() if accountant is None else accountant.copy()
    return float(acc.compose(run_event(sigma, steps=steps, **kw)).get_epsilon(delta))


@dataclass(frozen=True)
class NoiseReport:
    """Both noise levels for one setting and what each actually guarantees at ``delta``."""

    sigma_theorem1: float | None
    sigma_accountant: float
    epsilon_theorem1_sigma: float | None
    epsilon_accountant_sigma: float
    delta: float
    delta0: float
    theorem1_delta: float | None
    note: str

    def to_dict(self) -> dict:
        return dict(self.__dict__)
