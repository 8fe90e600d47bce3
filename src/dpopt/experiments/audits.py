"""Named audit targets: core mechanisms and whole algorithms, with worst-case neighbours.

Each target is an :class:`~dpopt.privacy.audit.AuditTarget`: a batched
randomized function ``run(data, R, rng) -> (outputs (R, ...), ledger)``, two
neighbouring inputs D and D′ chosen to be worst case for it, and a statistic of
the output.  The claimed (ε, δ) is whatever the run's ledger spent, so an audit
checks the accounting that a user would actually be shown.

Mechanism targets audit the mechanism on *query answers*: D and D′ are two
answers of a query whose sensitivity is exactly the declared one (e.g. a
counting query that one added record moves by Δ = 1), which is the worst case
the mechanism's proof must cover.  Algorithm targets audit a whole run on a
tiny data set in which D′ adds one record whose per-example gradient sits at
the clipping bound.

Registering a target is one line: decorate a factory returning an
:class:`AuditTarget` (``@register("dp-nag-opt")``) or call
``register("dp-nag-opt", factory)``.  Later algorithm families add theirs
here the same way.  Factories are called lazily, so listing targets is free.

>>> from dpopt.experiments import audits
>>> result = audits.run("laplace", samples=20_000, seed=1)
>>> result.passes
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import numpy as np

from ..objectives import LogisticLoss, bounds
from ..privacy import FixedSizeSampler, Ledger, PoissonSampler, calibration
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from ..privacy.audit import AuditResult, AuditTarget, audit

__all__ = [
    "register",
    "get_target",
    "available",
    "describe",
    "run",
    "TARGETS",
]

#: name -> (factory, one-line description).  Use :func:`register` to add to it.
TARGETS: dict[str, tuple[Callable[[], AuditTarget], str]] = {}


def register(name: str, factory: Callable[[], AuditTarget] | None = None, *, description: str = ""):
    """Register an audit-target factory under ``name`` (usable as a decorator).

    ``description`` defaults to the first line of the factory's docstring.
    Registering a name twice is an error (it would silently replace a target).
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")

    def add(f: Callable[[], AuditTarget]) -> Callable[[], AuditTarget]:
        if not callable(f):
            raise TypeError("factory must be callable and return an AuditTarget")
        if name in TARGETS:
            raise ValueError(f"an audit target named {name!r} is already registered")
        TARGETS[name] = (f, description or _first_line(f.__doc__))
        return f

    return add if factory is None else add(factory)


def get_target(name: str) -> AuditTarget:
    """Build the registered target ``name``.

    Its ``name`` and ``description`` are set from the registry, so that the
    listing of ``dpopt audit --list`` and the audit report always agree.
    """
    if name not in TARGETS:
        raise KeyError(f"unknown audit target {name!r}; known: {', '.join(sorted(TARGETS))}")
    target = TARGETS[name][0]()
    if not isinstance(target, AuditTarget):
        raise TypeError(
            f"the factory of {name!r} returned {type(target).__name__}, not an AuditTarget"
        )
    return replace(target, name=name, description=describe(name))


def available() -> list[str]:
    """Registered target names, in registration order."""
    return list(TARGETS)


def describe(name: str) -> str:
    """The one-line description of a registered target."""
    if name not in TARGETS:
        raise KeyError(f"unknown audit target {name!r}; known: {', '.join(sorted(TARGETS))}")
    return TARGETS[name][1]


def run(
    name: str,
    *,
    samples: int | None = None,
    confidence: float = 0.95,
    seed: int | None = None,
    batch_size: int | None = None,
) -> AuditResult:
    """Audit the registered target ``name`` (see :func:`dpopt.privacy.audit.audit`)."""
    return audit(
        get_target(name), samples=samples, confidence=confidence, seed=seed, batch_size=batch_size
    )


# --------------------------------------------------------------------------- shared pieces

#: Budget of ledgers whose spent ε an accountant computes (RDP claims, amplified
#: claims): generous, because the audit reads what was *spent*, not the budget.
RECORDING_BUDGET = 10.0


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else ""


def _answer_target(name: str, mechanism, ledger, answer, answer_prime, **fields) -> AuditTarget:
    """Audit ``mechanism(values, ledger=..., rng=...)`` on two query answers f(D), f(D′).

    ``mechanism`` is a mechanism of :mod:`dpopt.privacy.mechanisms` with its
    parameters bound (``functools.partial``); ``ledger()`` opens the ledger of
    one run.  The answer is repeated along a leading batch axis, so one call
    draws the noise of every repetition.
    """

    def run(value, repetitions, rng):
        book = ledger()
        value = np.asarray(value, dtype=float)
        batch = np.broadcast_to(value, (repetitions,) + value.shape)
        return mechanism(batch, ledger=book, rng=rng), book

    return AuditTarget(name, run, answer, answer_prime, **fields)


# --------------------------------------------------------------------------- mechanisms

#: Laplace target: ε and the sensitivity Δ by which the counting query moves.
LAPLACE_SETTING = (1.0, 1.0)


@register("laplace")
def laplace_target() -> AuditTarget:
    """Laplace mechanism, ε = 1, on a counting query moved by Δ = 1 (pure ledger)."""
    epsilon, sensitivity = LAPLACE_SETTING
    release = partial(mech.laplace, sensitivity=sensitivity, epsilon=epsilon)
    return _answer_target(
        "laplace", release, lambda: Ledger(epsilon), 0.0, sensitivity,
        statistic_name="noisy count", samples=500_000,
    )  # fmt: skip


#: (ε, δ) at which the Gaussian target's σ is calibrated by the analytic Gaussian mechanism.
GAUSSIAN_CALIBRATION = (2.0, 1e-5)


@register("gaussian")
def gaussian_target() -> AuditTarget:
    """Gaussian mechanism, σ of the analytic Gaussian mechanism at (2, 1e-5); RDP ledger's claim.

    The ledger reports what its RDP accountant proves for this σ (≈ 2.18),
    a little more than the analytic ε = 2, which no accountant of the ledger
    reproduces; tests check the audit against both.
    """
    epsilon, delta = GAUSSIAN_CALIBRATION
    sigma = calibration.analytic_gaussian_sigma(epsilon, delta, 1.0)
    release = partial(mech.gaussian, sensitivity=1.0, sigma=sigma)
    return _answer_target(
        "gaussian", release, lambda: Ledger(RECORDING_BUDGET, delta, "rdp"), 0.0, 1.0,
        statistic_name="noisy sum", samples=1_000_000, batch_size=250_000,
    )  # fmt: skip


@register("vector-laplace")
def vector_laplace_target() -> AuditTarget:
    """Vector (ℓ2) Laplace mechanism, ε = 1, d = 2, query moved by an ℓ2 distance Δ = 1.

    The statistic is the privacy loss (‖o − f(D)‖ − ‖o − f(D′)‖)·ε/Δ, the
    Neyman–Pearson statistic of the pair (han2014 Thm 9 bounds it by ε).
    """
    epsilon, sensitivity = 1.0, 1.0
    answer, answer_prime = np.zeros(2), np.array([sensitivity, 0.0])
    release = partial(mech.vector_laplace, sensitivity=sensitivity, epsilon=epsilon)

    def privacy_loss(out):
        far = np.linalg.norm(out - answer, axis=-1) - np.linalg.norm(out - answer_prime, axis=-1)
        return far * (epsilon / sensitivity)

    return _answer_target(
        "vector-laplace", release, lambda: Ledger(epsilon), answer, answer_prime,
        statistic=privacy_loss, statistic_name="privacy loss", samples=500_000,
    )  # fmt: skip


#: Exponential-mechanism target: ε, Δu and the score gap c (in units of Δu).
EXPONENTIAL_SETTING = (1.0, 1.0, 6.0)


@register("exponential")
def exponential_target() -> AuditTarget:
    """Exponential mechanism, ε = 1, two candidates whose scores move by Δu in opposite directions.

    D has scores (Δu, (c−1)Δu), D′ has (0, cΔu): candidate 0 gains Δu while
    the dominant candidate loses Δu, so the numerator and the normalizer of
    P(0) move against each other, and P_D(0)/P_D′(0) =
    (1 + e^{εc/2})/(1 + e^{ε(c−2)/2}) → e^ε as c grows (c = 6: ln ratio 0.92).
    """
    epsilon, sensitivity, c = EXPONENTIAL_SETTING
    release = partial(mech.exponential, epsilon=epsilon, sensitivity=sensitivity)
    relation = "scores differ by at most the sensitivity in every entry"
    return _answer_target(
        "exponential", release, lambda: Ledger(epsilon, relation=relation),
        np.array([1.0, c - 1.0]) * sensitivity, np.array([0.0, c]) * sensitivity,
        statistic_name="selected index", samples=500_000,
    )  # fmt: skip


#: AboveThreshold (Laplace) target: ε₁, ε₂, number of queries k, D's queries at −m·Δ.
ABOVE_THRESHOLD_LAPLACE = (1.0, 0.5, 20, 2.0)
#: AboveThreshold (Gaussian) target: σ₁, σ₂ (multipliers), k, m, and the ledger's δ.
ABOVE_THRESHOLD_GAUSSIAN = (2.0, 4.0, 40, 4.0, 1e-5)


def _above_threshold_target(name: str, event: ev.AboveThreshold, queries: int, depth, ledger):
    """k queries all m·Δ below the threshold 0 in D, all one Δ higher in D′ (chen2020 Alg. 1).

    Shifting every query by Δ is the case the shared threshold noise must
    absorb; a mechanism that does not re-use one noisy threshold pays for every
    query it answers "below" instead of once.  The statistic is the index of
    the first query above, with "none" (−1) placed after the last query.
    """
    answers = np.full(queries, -depth * event.sensitivity)
    release = partial(mech.above_threshold, event=event, threshold=0.0)

    def first_above(out: np.ndarray) -> np.ndarray:
        return np.where(out < 0, queries, out)

    return _answer_target(
        name, release, ledger, answers, answers + event.sensitivity,
        statistic=first_above, statistic_name="first query above", samples=500_000,
        batch_size=max(1, 4_000_000 // queries),
    )  # fmt: skip


@register("above-threshold-laplace")
def above_threshold_laplace_target() -> AuditTarget:
    """AboveThreshold with Laplace noise, ε₁ = 1, ε₂ = 0.5 (pure ε₁ + 2ε₂ = 2), 20 queries."""
    eps1, eps2, queries, depth = ABOVE_THRESHOLD_LAPLACE
    event = ev.AboveThreshold.laplace(eps1, eps2, 1.0)
    ledger = partial(Ledger, eps1 + 2.0 * eps2)
    return _above_threshold_target("above-threshold-laplace", event, queries, depth, ledger)


@register("above-threshold-gaussian")
def above_threshold_gaussian_target() -> AuditTarget:
    """AboveThreshold with Gaussian noise, σ₁ = 2, σ₂ = 4, 40 queries; RDP ledger at δ = 1e-5."""
    sigma1, sigma2, queries, depth, delta = ABOVE_THRESHOLD_GAUSSIAN
    event = ev.AboveThreshold.gaussian(sigma1, sigma2, 1.0)
    ledger = partial(Ledger, RECORDING_BUDGET, delta, "rdp")
    return _above_threshold_target("above-threshold-gaussian", event, queries, depth, ledger)


#: Subsampled Laplace targets: ε₀ of the Laplace mechanism on the subsample, n, m (rate m/n).
SUBSAMPLED_SETTING = (2.0, 8, 2)


@register("subsampled-laplace-poisson")
def subsampled_poisson_target() -> AuditTarget:
    """Laplace (ε₀ = 2) on a Poisson subsample at rate 1/4: amplified ε = ln(1 + (e^ε₀ − 1)/4).

    The query is the sum of the sampled records clipped to [−1, 1] (L1
    sensitivity 1 under add/remove).  D = 8 records at 0, D′ adds one record
    at the bound 1: it enters the noisy sum with probability q = 1/4, and for
    outputs above 1 the likelihood ratio is exactly 1 − q + q·e^ε₀, the
    amplified bound (Li, Qardaji & Su 2012).
    """
    epsilon0, n, m = SUBSAMPLED_SETTING
    sampler = PoissonSampler(m / n)
    release = partial(mech.laplace, sensitivity=1.0, epsilon=epsilon0, sampler=sampler)

    def run_poisson(records, repetitions, rng):
        ledger = Ledger(RECORDING_BUDGET)
        mask = sampler.mask(len(records), rng, repetitions)
        return release(
            (mask * np.clip(records, -1.0, 1.0)).sum(axis=-1), ledger=ledger, rng=rng
        ), ledger

    records = np.zeros(n)
    return AuditTarget(
        "subsampled-laplace-poisson", run_poisson, records, np.append(records, 1.0),
        statistic_name="noisy subsample sum", samples=500_000,
    )  # fmt: skip


@register("subsampled-laplace-fixed")
def subsampled_fixed_target() -> AuditTarget:
    """Laplace (ε₀ = 2) on 2 of 8 records drawn without replacement: ε = ln(1 + (e^ε₀ − 1)/4).

    Replace-one relation (kuru2022 Thm A.3, eq. (3.3)): records clipped to
    [0, 1], D = 8 records at 0, D′ replaces one by 1.  The subsets of all
    repetitions come from one vectorized :meth:`FixedSizeSampler.indices` call.
    """
    epsilon0, n, m = SUBSAMPLED_SETTING
    sampler = FixedSizeSampler(m, n)
    release = partial(mech.laplace, sensitivity=1.0, epsilon=epsilon0, sampler=sampler)

    def run_fixed(records, repetitions, rng):
        ledger = Ledger(RECORDING_BUDGET, relation="replace_one")
        picked = np.clip(records, 0.0, 1.0)[sampler.indices(rng, repetitions)]
        return release(picked.sum(axis=-1), ledger=ledger, rng=rng), ledger

    records = np.zeros(n)
    return AuditTarget(
        "subsampled-laplace-fixed", run_fixed, records, np.where(np.arange(n) == 0, 1.0, records),
        statistic_name="noisy subsample sum", samples=500_000,
    )  # fmt: skip


# --------------------------------------------------------------------------- whole algorithms


def worst_case_logistic_data(n: int = 4, scale: float = 20.0):
    """Tiny logistic-regression data D and D′ = D + one worst-case record.

    D: n records on the second axis, x = (0, ±1), labels ±1.  The added record
    x* = (``scale``, 0) with label +1 has a per-example gradient far beyond any
    clipping bound ≤ scale/2 near w = 0, so after clipping it contributes
    exactly the bound, and only to the first coordinate, which no other record
    touches (the first coordinate of the iterate then differs between D and D′
    by the clipped contributions alone).
    """
    X = np.zeros((n, 2))
    X[:, 1] = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    y = np.where(np.arange(n) % 4 < 2, 1.0, -1.0)
    return (X, y), (np.vstack([X, [scale, 0.0]]), np.append(y, 1.0))


def clipped_gradient_sum(w, X, y, clip: float, norm: str, mask=None) -> np.ndarray:
    """Σ_i clip(∇f_i(w), C) of the logistic loss in the given norm (chen2020 eq. (6)), (R, d).

    For a linear model ∇f_i = s_i x_i, so clipping the gradient to norm C is
    clipping the coefficient s_i to ±C/‖x_i‖.  ``mask`` (R, n) selects each
    repetition's minibatch.
    """
    coefs = LogisticLoss().per_example_grad_coefs(w, X, y)
    limit = bounds.clip_thresholds(bounds.row_norms(X, norm), clip)
    coefs = np.clip(coefs, -limit, limit)
    if mask is not None:
        coefs = coefs * mask
    return coefs @ X


#: DP-GD target: steps T, per-step ε, L1 clipping bound C, learning rate.
DP_GD_SETTING = (3, 1.0, 1.0, 0.01)


@register("dp-gd-laplace")
def dp_gd_target() -> AuditTarget:
    """DP-GD, 3 full-batch steps, gradients L1-clipped to C = 1, Laplace noise, ε = 3 (pure).

    Each step releases Σ_i clip₁(∇f_i) + Laplace(C/ε_step) per coordinate
    (L1 sensitivity C under add/remove) and steps w ← w − η·(noisy sum).
    The released output is the last iterate.
    """
    steps, step_epsilon, clip, lr = DP_GD_SETTING

    def release(w, X, y, ledger, rng, repetitions):
        gradient = clipped_gradient_sum(w, X, y, clip, "l1")
        return mech.laplace(gradient, sensitivity=clip, ledger=ledger, rng=rng, epsilon=step_epsilon)

    return _descent_target("dp-gd-laplace", steps, lr, lambda: Ledger(steps * step_epsilon), release)


#: DP-SGD target: steps T, Poisson rate q, L2 clipping bound C, learning rate, (ε, δ).
DP_SGD_SETTING = (3, 0.5, 1.0, 0.01, (2.0, 1e-5))


@register("dp-sgd")
def dp_sgd_target() -> AuditTarget:
    """DP-SGD, 3 steps, Poisson rate 1/2, L2 clipping C = 1, σ calibrated to (2, 1e-5) by RDP.

    Each step draws a Poisson minibatch, releases Σ_{i∈B} clip₂(∇f_i) + N(0, σ²)
    (the mechanism charges the Poisson-subsampled Gaussian event) and steps
    w ← w − η·(noisy sum).  The released output is the last iterate.
    """
    steps, rate, clip, lr, (epsilon, delta) = DP_SGD_SETTING
    sampler = PoissonSampler(rate)
    sigma = calibration.calibrate_gaussian_sigma(
        epsilon, delta, steps=steps, rate=rate, sensitivity=clip
    )

    def release(w, X, y, ledger, rng, repetitions):
        mask = sampler.mask(X.shape[0], rng, repetitions)
        gradient = clipped_gradient_sum(w, X, y, clip, "l2", mask)
        return mech.gaussian(gradient, sensitivity=clip, ledger=ledger, rng=rng, sigma=sigma, sampler=sampler)

    return _descent_target("dp-sgd", steps, lr, lambda: Ledger(epsilon, delta, "rdp"), release)


def _descent_target(name: str, steps: int, lr: float, new_ledger, release) -> AuditTarget:
    """``steps`` steps w ← w − η·release(w, X, y, ledger, rng, R) from w = 0 on the worst-case logistic data.

    ``release`` is one private gradient release (it charges ``ledger``); the last iterate is the output.
    """

    def run(data, repetitions, rng):
        X, y = data
        ledger = new_ledger()
        w = np.zeros((repetitions, X.shape[1]))
        for _ in range(steps):
            w = w - lr * release(w, X, y, ledger, rng, repetitions)
        return w, ledger

    data, neighbour = worst_case_logistic_data()
    return AuditTarget(name, run, data, neighbour, classifier="linear", statistic_name="last iterate",
                       samples=200_000)  # fmt: skip


def _family_target(path: str, *args, **kwargs) -> Callable[[], AuditTarget]:
    """A factory that imports a family's own audit-target builder (``"module:function"``) only when called."""
    module, function = path.split(":")

    def factory() -> AuditTarget:
        return getattr(importlib.import_module(module, __package__), function)(*args, **kwargs)

    return factory


#: Runs per input of the DP-BLSGD target: its runs are sequential (data-dependent control
#: flow), ≈ 2.5 ms each; ask ``dpopt audit dp-blsgd --samples N`` for a sharper bound.
DP_BLSGD_SAMPLES = 2_000

# name → (builder, its arguments, description); the families hold the targets, this table names them.
for _name, _path, _args, _kwargs, _description in (
    ("dp-nag", "..accelerated.audit:nag_audit_target", (), {},
     "DP-NAG (kuru2022 eq. (4.1)), T = 2, ε = 1, full batch, worst-case replace-one neighbour."),
    # linesearch (chen2020)
    ("noisy-btls-laplace", "..linesearch.audit:noisy_btls_audit_target", ("laplace",), {},
     "NoisyBTLS (chen2020 Alg. 1), Laplace SVT, ε_BT = 1, 4 steps; one record shifts every query by C_obj."),
    ("noisy-btls-gaussian", "..linesearch.audit:noisy_btls_audit_target", ("gaussian",), {},
     "NoisyBTLS (chen2020 Alg. 1), Gaussian SVT, ρ_BT = 0.05, 4 steps; RDP ledger's claim at δ = 1e-5."),
    # dualavg (liu2024)
    ("dda-node", "..dualavg.audit:node_messages_target", (), {},
     "liu2024 Algorithm 1: the message one node sends, ε = 2 by the RDP accountant (replace-one)."),
    ("dp-blsgd", "..linesearch.audit:dp_blsgd_audit_target", (), {"samples": DP_BLSGD_SAMPLES},
     "DP-BLSGD (chen2020 Alg. 2), 2 iterations, Poisson q = 1/2, (2, 1e-5) by RDP; record beyond both clips."),
    # neural
    ("neural-dp-sgd", "..neural.audit:dp_sgd_audit_target", (), {},
     "DP-SGD on a 2-2-1 tanh network (dpopt.neural), one iteration, Poisson q = 1/2, C = 1, (2, 1e-5) by RDP."),
    # piecewise (han2014)
    ("piecewise-laplace-data", "..piecewise.audit:piecewise_audit_target", ("laplace-data",), {},
     "han2014 mechanism 1 (Thm 16: vector Laplace on b, then the LP), ε = 1; centre of |x − y| moved by b_max."),
    ("piecewise-laplace-solution", "..piecewise.audit:piecewise_audit_target", ("laplace-solution",), {},
     "han2014 mechanism 2 (Thm 9: Laplace on x_opt, projected), ε = 1; x_opt moves by diam(P)."),
    ("piecewise-subgradient", "..piecewise.audit:piecewise_audit_target", ("subgradient",), {},
     "han2014 mechanism 4 (Alg. 1–2), 3 exponential-mechanism steps at ε/3, ε = 1, last iterate."),
    # bayesopt (kusner2015)
    ("bayesopt-alg3-score", "..bayesopt.audit:alg3_score_target", (), {},
     "kusner2015 Algorithm 3's released score, ε = 1, tables whose maxima differ by Theorem 7's Δ_f."),
    ("bayesopt-alg3-lambda", "..bayesopt.audit:alg3_lambda_target", (), {},
     "kusner2015 Algorithm 3's released λ, ε = 1, two candidates moved by the per-record bound."),
):  # fmt: skip
    register(_name, _family_target(_path, *_args, **_kwargs), description=_description)
