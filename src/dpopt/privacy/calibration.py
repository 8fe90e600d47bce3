"""Noise calibration: from a privacy target to a noise scale.

* :func:`calibrate_gaussian_sigma` — smallest Gaussian σ for T Poisson-subsampled
  steps under the RDP accountant (the DP-SGD calibration).
* :func:`calibrate_noise_multiplier` — the same for any per-step event built from
  one noise multiplier z (e.g. a Gaussian gradient and a Gaussian AboveThreshold
  search sharing one per-step RDP budget, chen2020 §5.7).
* :func:`analytic_gaussian_sigma`, :func:`gaussian_delta` — the exact (ε, δ)
  curve of one Gaussian mechanism (Balle & Wang 2018, Thm 8).
* :func:`calibrate_laplace_scale` — pure ε-DP Laplace calibration with
  amplification by subsampling (the paper's own forms, kuru2022 eqs.
  (3.4)–(3.5), live in :mod:`dpopt.accelerated.calibration`).
* :func:`calibrate_sigma_for` — smallest σ meeting (ε, δ) for any σ-indexed
  event under the RDP accountant (e.g. a network's activated, subsampled rounds).
* :func:`run_accountant` and :func:`calibrate_run` — the one place where an
  (ε, δ) family picks its accountant (``accountant="rdp" | "pld" | "auto"``,
  default the tightest applicable) and calibrates its run's noise with it.

Every function validates its arguments and names the offending one.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from scipy import optimize, special

from .. import _validation as val
from . import events as ev
from . import rdp
from .accountant import make_accountant
from .pure import PureDPAccountant, amplify_pure, invert_amplification

__all__ = [
    "calibrate_gaussian_sigma",
    "calibrate_noise_multiplier",
    "analytic_gaussian_sigma",
    "gaussian_delta",
    "calibrate_noise",
    "NoiseCalibration",
    "calibrate_laplace_scale",
    "calibrate_sigma_for",
    "calibrate_scale",
    "fit_scales_to_budget",
    "RUN_ACCOUNTANTS",
    "RUN_DISCRETIZATION",
    "run_accountant",
    "calibrate_run",
]

# Search range for noise multipliers, and the relative tolerance of the root.
_Z_MIN, _Z_MAX = 1e-4, 1e8
_LOG_XTOL = 1e-12


def _check_target_delta(delta) -> float:
    delta = val._as_real("delta", delta)
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return delta


def _smallest_passing(passes, f, start: float, name: str) -> float:
    """Smallest z in [_Z_MIN, _Z_MAX] with ``passes(z)``, for a monotone criterion.

    ``f(log z)`` is a continuous decreasing function whose sign change marks the
    boundary (f ≤ 0 ⇔ passes).  Brackets by doubling, then brentq in log z,
    then steps up by the tolerance until the result verifiably passes.
    """
    lo = hi = min(max(start, _Z_MIN), _Z_MAX)
    if passes(hi):
        while lo > _Z_MIN and passes(lo):
            hi, lo = lo, max(lo / 2.0, _Z_MIN)
        if passes(lo):
            raise ValueError(
                f"the target is met even with {name} {_Z_MIN:g}; "
                "delta is too large for this setting"
            )
    else:
        while not passes(hi):
            if hi >= _Z_MAX:
                raise ValueError(
                    f"the target is not reachable with {name} <= {_Z_MAX:g} (for RDP calibration, "
                    "larger orders may help)"
                )
            lo, hi = hi, min(hi * 2.0, _Z_MAX)
    u = optimize.brentq(f, math.log(lo), math.log(hi), xtol=_LOG_XTOL, rtol=4 * 2.0**-52)
    z = math.exp(u)
    for _ in range(64):
        if passes(z):
            return min(z, hi)
        z *= 1.0 + 2.0 * _LOG_XTOL
    return hi


def calibrate_gaussian_sigma(
    epsilon: float,
    delta: float,
    *,
    steps: int = 1,
    rate: float = 1.0,
    sensitivity: float = 1.0,
    orders=None,
) -> float:
    """Smallest noise std σ such that ``steps`` Poisson-subsampled Gaussian releases are (ε, δ)-DP.

    The guarantee is the one :class:`~dpopt.privacy.rdp.RDPAccountant` reports
    for ``SelfComposed(Subsampled(Gaussian(σ, sensitivity), rate), steps)``
    (exact sampled-Gaussian RDP of Mironov, Talwar & Zhang 2019, converted by
    :func:`~dpopt.privacy.rdp.rdp_to_epsilon`).  ε is non-increasing in σ, so a
    bracket-then-brentq search in log σ finds the boundary to relative
    tolerance ~1e-12; the returned σ is verified to meet the target.
    """
    epsilon = val.check_positive("epsilon", epsilon)
    delta = _check_target_delta(delta)
    steps = val.check_int("steps", steps, minimum=1)
    rate = val.check_rate("rate", rate)
    sensitivity = val.check_positive("sensitivity", sensitivity)
    a = rdp._check_orders(orders)

    def eps_of(z: float) -> float:
        # The noise multiplier the released event carries, (z·Δ)/Δ, which can differ from z
        # in the last bit; with it, steps·curve is bit-for-bit what a ledger composes from
        # ``steps`` charges of that event (RDPAccountant's run-length composition).
        z_event = (z * sensitivity) / sensitivity
        curve = steps * rdp.subsampled_gaussian_rdp(rate, z_event, a)
        return rdp.rdp_to_epsilon(a, curve, delta)[0]

    z = _smallest_passing(
        lambda z: eps_of(z) <= epsilon,
        lambda u: eps_of(math.exp(u)) - epsilon,
        start=max(1.0, math.sqrt(2.0 * math.log(1.25 / delta)) * rate * math.sqrt(steps) / epsilon),
        name="noise multiplier",
    )
    return z * sensitivity


def calibrate_noise_multiplier(step_event, epsilon: float, delta: float, *, steps: int = 1, orders=None) -> float:
    """Smallest z such that ``steps`` compositions of ``step_event(z)`` are (ε, δ)-DP under RDP.

    ``step_event(z)`` returns the event of one step for noise multiplier z; its
    privacy loss must not increase with z (more noise, less loss).  The
    guarantee is the one :class:`~dpopt.privacy.rdp.RDPAccountant` reports for
    ``SelfComposed(step_event(z), steps)``; the returned z is verified to meet it.
    """
    if not callable(step_event):
        raise TypeError("step_event must be callable as step_event(z) -> Event")
    epsilon = val.check_positive("epsilon", epsilon)
    delta = _check_target_delta(delta)
    steps = val.check_int("steps", steps, minimum=1)
    a = rdp._check_orders(orders)

    def eps_of(z: float) -> float:
        curve = steps * rdp.rdp_curve(step_event(z), a)
        return rdp.rdp_to_epsilon(a, curve, delta)[0]

    return _smallest_passing(
        lambda z: eps_of(z) <= epsilon,
        lambda u: eps_of(math.exp(u)) - epsilon,
        start=1.0,
        name="noise multiplier",
    )


def _log_gaussian_delta(s: float, epsilon: float) -> float:
    """log δ(ε) of the Gaussian mechanism with noise multiplier s (Balle & Wang 2018, Thm 8).

    δ = Φ(1/(2s) − εs) − e^ε Φ(−1/(2s) − εs), computed as
    log Φ(x₁) + log(−expm1(ε + log Φ(x₂) − log Φ(x₁))) so that it neither
    overflows for large ε nor loses precision when δ is tiny.
    """
    x1 = 0.5 / s - epsilon * s
    x2 = -0.5 / s - epsilon * s
    log_phi1 = float(special.log_ndtr(x1))
    d = epsilon + float(special.log_ndtr(x2)) - log_phi1
    if d >= 0.0:
        return -math.inf
    return log_phi1 + math.log(-math.expm1(d))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact δ(ε) of one Gaussian mechanism N(0, σ²) on a query of L2 ``sensitivity`` Δ.

    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)  (Balle & Wang 2018, Thm 8):
    the mechanism is (ε, δ)-DP iff δ ≥ this value.
    """
    sigma = val.check_positive("sigma", sigma)
    epsilon = val.check_positive("epsilon", epsilon)
    sensitivity = val.check_positive("sensitivity", sensitivity)
    return math.exp(_log_gaussian_delta(sigma / sensitivity, epsilon))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest σ for which the Gaussian mechanism is (ε, δ)-DP: the analytic Gaussian mechanism.

    Solves :func:`gaussian_delta` (σ) = δ by root finding in log σ (Balle &
    Wang 2018, Algorithm 1 solves the same equation).  Valid for every ε > 0,
    unlike the classic σ = Δ√(2 log(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1),
    which needs ε < 1 and is always larger.
    """
    epsilon = val.check_positive("epsilon", epsilon)
    delta = _check_target_delta(delta)
    sensitivity = val.check_positive("sensitivity", sensitivity)
    log_delta = math.log(delta)
    z = _smallest_passing(
        lambda s: math.exp(_log_gaussian_delta(s, epsilon)) <= delta,
        lambda u: max(_log_gaussian_delta(math.exp(u), epsilon), -1e300) - log_delta,
        start=math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon,
        name="noise multiplier",
    )
    return z * sensitivity


def calibrate_laplace_scale(
    epsilon: float, *, sensitivity: float, steps: int = 1, rate: float = 1.0
) -> float:
    """Laplace scale b such that ``steps`` subsampled Laplace releases compose to exactly ε-DP.

    Each release must cost ε/T after amplification, so the per-release budget
    is ε₀ = ln(1 + (e^{ε/T} − 1)/rate), the exact inverse of
    :func:`~dpopt.privacy.pure.amplify_pure` (kuru2022 eq. (3.5) with
    rate = m/n), and b = sensitivity/ε₀ (Laplace mechanism, kuru2022 Thm A.1), rounded up by
    the few ulps that make the T steps' costs add up to at most ε exactly (as a pure ledger adds them).
    ``sensitivity`` is the L1 sensitivity of the released (subsample) query.
    """
    epsilon = val.check_positive("epsilon", epsilon)
    sensitivity = val.check_positive("sensitivity", sensitivity)
    steps = val.check_int("steps", steps, minimum=1)
    rate = val.check_rate("rate", rate)
    per_step = epsilon / steps
    eps0 = invert_amplification(per_step, rate)
    scale = sensitivity / eps0
    # rounded to nearest, a step's cost can be an ulp over ε/T; round the scale up until the T
    # steps fit ε exactly, as a pure ledger adds them (scale_for_epsilon does this for one step)
    while steps * Fraction(amplify_pure(sensitivity / scale, rate)) > Fraction(epsilon):
        scale = math.nextafter(scale, math.inf)
    return scale


def fit_scales_to_budget(scales, events_for, new_ledger, *, max_ulps: int = 1 << 20):
    """``scales`` enlarged by the fewest ulps for which a fresh ledger accepts all their events.

    A budget split into per-step noise scales is exact only up to rounding:
    the cost a ledger recomputes from each scale can exceed its share by an
    ulp, and T such ulps can take the sum just over the budget.  Rather than
    letting the ledger tolerate a relative slack, the split is made exact
    where it is made: every scale is multiplied by (1 + k·2⁻⁵²) for the
    smallest k in {0, 1, 2, 4, …} such that ``new_ledger()`` accepts
    ``events_for(scales)`` charged in order (by the ledger's own arithmetic).

    ``events_for`` maps an array of scales to the list of events a run will
    charge; ``new_ledger`` returns an empty :class:`~dpopt.privacy.Ledger`
    with the run's budget.
    """
    from .ledger import BudgetExceededError

    base = np.asarray(scales, dtype=float)
    k = 0
    while k <= max_ulps:
        trial = base * (1.0 + k * 2.0**-52) if k else base
        ledger = new_ledger()
        try:
            for event in events_for(trial):
                ledger.charge(event)
        except BudgetExceededError:
            k = 2 * k if k else 1
            continue
        return trial
    raise ValueError("the noise scales do not fit the budget even after rounding corrections")


def calibrate_scale(event_of, epsilon: float, delta: float = 0.0, *, accountant="rdp",
                    start: float = 1.0) -> float:
    """Smallest noise scale s whose run ``event_of(s)`` the accountant certifies at (ε, δ).

    Generic inversion of any accountant: ``accountant`` is a registered name
    (``"pure"``, ``"rdp"``, ``"zcdp"``, ``"pld"``), an accountant class, or a
    fresh instance (copied, never composed into); ``event_of(s)`` builds the
    whole run's event for noise scale s — a Gaussian σ, a Laplace scale, or
    anything whose ε is non-increasing in s.  For a pure-DP accountant
    ``delta`` must be 0.  Bracket by doubling/halving from ``start`` within
    [1e-4, 1e8], then brentq in log s (relative tolerance ~1e-12); the
    returned scale is verified to meet the target.
    """
    epsilon = val.check_positive("epsilon", epsilon)
    if not callable(event_of):
        raise TypeError("event_of must be a callable scale -> Event")
    if isinstance(accountant, type):
        accountant = accountant()
    template = make_accountant(accountant).copy()
    if isinstance(template, PureDPAccountant):
        if val.check_delta("delta", delta) != 0.0:
            raise ValueError("delta must be 0 for a pure-DP accountant")

        def eps_of(scale: float) -> float:
            return template.copy().compose(event_of(scale)).get_epsilon()
    else:
        delta = _check_target_delta(delta)

        def eps_of(scale: float) -> float:
            return template.copy().compose(event_of(scale)).get_epsilon(delta)

    return _smallest_passing(
        lambda z: eps_of(z) <= epsilon,
        lambda u: eps_of(math.exp(u)) - epsilon,
        start=val.check_positive("start", start),
        name="noise scale",
    )


def calibrate_sigma_for(make_event, epsilon: float, delta: float, *, start: float = 1.0, orders=None) -> float:
    """Smallest σ with ``RDPAccountant(orders).compose(make_event(σ)).get_epsilon(delta) <= epsilon``.

    ``make_event(σ)`` builds the whole run's event for noise std σ (any
    composition of subsampled / activated Gaussians); :func:`calibrate_scale`
    with the RDP accountant.
    """
    return calibrate_scale(make_event, epsilon, delta, accountant=rdp.RDPAccountant(orders), start=start)


# --------------------------------------------------------------------------- by the tightest accountant


class NoiseCalibration(NamedTuple):
    """A calibrated noise scale, the accountant that certified it and the ε it reports there."""

    scale: float
    accountant: str
    epsilon: float


_NOISES = ("gaussian", "laplace")
_CALIBRATION_ACCOUNTANTS = ("best", "pure", "rdp", "pld")


def _noise_event(noise: str, scale: float, sensitivity: float, steps: int, rate: float, scheme: str) -> ev.Event:
    base = ev.Gaussian(scale, sensitivity) if noise == "gaussian" else ev.Laplace(scale, sensitivity)
    step = base if rate == 1.0 else ev.Subsampled(base, rate, scheme)
    return step if steps == 1 else ev.SelfComposed(step, steps)


def _calibrate_with(name, epsilon, delta, noise, steps, rate, scheme, sensitivity, discretization):
    """The scale certified by one accountant, or None when that accountant does not apply."""
    from .pld import PLDAccountant  # pld imports calibration's neighbours; keep the import local

    if name == "pure":
        if noise != "laplace":
            return None
        return calibrate_laplace_scale(epsilon, sensitivity=sensitivity, steps=steps, rate=rate)
    if delta == 0.0:
        return None
    if name == "rdp" and noise == "gaussian" and (rate == 1.0 or scheme == ev.POISSON):
        return calibrate_gaussian_sigma(epsilon, delta, steps=steps, rate=rate, sensitivity=sensitivity)
    if name == "rdp" and noise == "gaussian":
        return None  # no RDP bound for Gaussian noise under sampling without replacement

    start = sensitivity * max(1.0, rate * math.sqrt(steps * 2.0 * math.log(1.25 / delta)) / epsilon)
    return calibrate_scale(
        lambda scale: _noise_event(noise, scale, sensitivity, steps, rate, scheme),
        epsilon,
        delta,
        accountant=rdp.RDPAccountant() if name == "rdp" else PLDAccountant(discretization),
        start=start,
    )


def calibrate_noise(
    epsilon: float,
    delta: float = 0.0,
    *,
    noise: str = "gaussian",
    steps: int = 1,
    rate: float = 1.0,
    scheme: str = ev.POISSON,
    sensitivity: float = 1.0,
    accountant: str = "best",
    discretization: float = 1e-3,
) -> NoiseCalibration:
    """Smallest noise scale for which ``steps`` (subsampled) releases are (ε, δ)-DP, and who says so.

    ``noise`` is ``"gaussian"`` (the scale is σ) or ``"laplace"`` (the scale
    is b); ``rate``/``scheme`` describe the subsampling of each release as in
    :class:`~dpopt.privacy.events.Subsampled`.  ``accountant``:

    * ``"pure"`` — Laplace only, exact pure-DP composition with amplification
      (:func:`calibrate_laplace_scale`; δ is not used);
    * ``"rdp"`` — the RDP accountant (:func:`calibrate_gaussian_sigma` for
      Poisson-subsampled Gaussian noise);
    * ``"pld"`` — the PLD accountant at grid ``discretization``: its
      pessimistic ε is a proven upper bound at every grid, so the scale is
      certified at any grid (a coarser grid gives a slightly larger scale);
    * ``"best"`` (default) — every accountant that applies, and the smallest scale.

    The search is :func:`calibrate_scale` (ε is non-increasing in the scale);
    the returned scale is one at which the accountant's ε is verified ≤ ``epsilon``.
    """
    epsilon = val.check_positive("epsilon", epsilon)
    delta = val.check_delta("delta", delta)
    val.check_choice("noise", noise, _NOISES)
    steps = val.check_int("steps", steps, minimum=1)
    rate = val.check_rate("rate", rate)
    val.check_choice("scheme", scheme, (ev.POISSON, ev.WITHOUT_REPLACEMENT))
    sensitivity = val.check_positive("sensitivity", sensitivity)
    val.check_choice("accountant", accountant, _CALIBRATION_ACCOUNTANTS)
    if noise == "gaussian" and delta == 0.0:
        raise ValueError("delta must be in (0, 1) for Gaussian noise")
    names = ("pure", "rdp", "pld") if accountant == "best" else (accountant,)
    found = []
    for name in names:
        scale = _calibrate_with(name, epsilon, delta, noise, steps, rate, scheme, sensitivity, discretization)
        if scale is not None:
            found.append((scale, name))
    if not found:
        raise ValueError(f"accountant={accountant!r} does not apply to {noise} noise with delta={delta:g}")
    scale, name = min(found)
    return NoiseCalibration(float(scale), name, _reported_epsilon(name, scale, delta, noise, steps, rate, scheme,
                                                                 sensitivity, discretization))


def _reported_epsilon(name, scale, delta, noise, steps, rate, scheme, sensitivity, discretization) -> float:
    from .pld import PLDAccountant

    event = _noise_event(noise, scale, sensitivity, steps, rate, scheme)
    if name == "pure":
        from .pure import pure_epsilon

        return float(pure_epsilon(event))
    acc = rdp.RDPAccountant() if name == "rdp" else PLDAccountant(discretization)
    return float(acc.compose(event).get_epsilon(delta))


# --------------------------------------------------------------------------- the accountant of an (ε, δ) run

#: The values of a family's ``accountant=`` parameter (``None`` means ``"auto"``).
RUN_ACCOUNTANTS = ("auto", "rdp", "pld")
#: Grid of the PLD accountant a family calibrates with and spends under: the
#: calibrated scale is certified at this grid, and a ledger of the same grid
#: accepts exactly that run (a finer grid is slower and tighter by ~1e-4 of σ).
RUN_DISCRETIZATION = 1e-3
#: Ledger notions that check by Rényi DP: a PLD-calibrated run could overspend them.
_RENYI_NOTIONS = ("rdp", "zcdp")


def run_accountant(accountant=None, ledger=None, *, orders=None, event=None):
    """A fresh accountant for an (ε, δ) run: what it calibrates its noise with and spends under.

    ``accountant`` is ``"rdp"`` (:class:`~dpopt.privacy.rdp.RDPAccountant`
    at ``orders``), ``"pld"`` (:class:`~dpopt.privacy.pld.PLDAccountant` at
    the grid of the nearest PLD ledger in ``ledger``'s chain, else
    :data:`RUN_DISCRETIZATION`), or ``"auto"``/``None``: the tightest that
    applies.  That is PLD — its ε is never above RDP's on any log (it reports
    the smaller of its PLD bound and RDP's) — unless ``ledger`` or one of its
    ancestors checks by Rényi DP (``"rdp"``, ``"zcdp"``): such a ledger would
    refuse the later steps of a run whose noise PLD calibrated, so the run
    calibrates by RDP — or unless ``event`` (the run's planned event) has no
    part with an exact PLD, so that PLD would only repeat RDP's answer.
    """
    from .pld import PLDAccountant

    name = "auto" if accountant is None else val.check_choice("accountant", accountant, RUN_ACCOUNTANTS)
    chain = []
    while ledger is not None:
        chain.append(ledger)
        ledger = ledger.parent
    if name == "auto":
        renyi = any(node.notion in _RENYI_NOTIONS for node in chain)
        name = "rdp" if renyi or (event is not None and not PLDAccountant().compose(event).has_exact_part()) else "pld"
    if name == "rdp":
        return rdp.RDPAccountant(orders)
    # the grid of the nearest PLD ledger above, so that the run and that ledger compute the same ε
    grids = [node.accountant.discretization for node in chain if isinstance(node.accountant, PLDAccountant)]
    return PLDAccountant(grids[0] if grids else RUN_DISCRETIZATION)


def calibrate_run(event_of, epsilon: float, delta: float, accountant, *, start: float = 1.0) -> float:
    """Smallest noise scale s with ``accountant`` certifying ``event_of(s)`` (the whole run) at (ε, δ).

    ``accountant`` is the run's (:func:`run_accountant`, or a name it takes);
    it is copied, never composed into.  :func:`calibrate_scale`.
    """
    if accountant is None or isinstance(accountant, str):
        accountant = run_accountant(accountant)
    if not isinstance(accountant, rdp.RDPAccountant):
        # The PLD accountant reports at most RDP's ε, so RDP's scale passes: start the search
        # there (one PLD composition usually brackets the answer, and huge budgets whose PLDs
        # would be too wide to build are found by RDP alone).
        try:
            start = calibrate_scale(event_of, epsilon, delta, accountant=rdp.RDPAccountant(), start=start)
        except (TypeError, ValueError):
            pass
    return calibrate_scale(event_of, epsilon, delta, accountant=accountant.copy(), start=start)
