"""Statistical privacy auditing: a lower confidence bound on ε from samples of M(D) and M(D′).

A mechanism M is (ε, δ)-DP only if, for the neighbouring inputs D, D′ and every
output event S, P[M(D) ∈ S] ≤ e^ε·P[M(D′) ∈ S] + δ (and the same with D and D′
swapped).  Any event whose two probabilities violate this inequality is
evidence against the claim; testing DP this way is the approach of Ding et al.
2018 ("Detecting violations of differential privacy", cited in chen2020),
DP-Sniper (Bichsel et al. 2021) and Jagielski et al. 2020.

The engine (:func:`audit`, :func:`audit_statistics`):

1. runs the batched randomized function M(data, R, rng) → (outputs (R, ...),
   ledger) N times on D and N times on D′ (in chunks of ``batch_size``
   repetitions), reduces each output to a scalar statistic s(o) (a function
   the target gives, or the score of a classifier fitted below);
2. splits both samples in halves.  On the *selection* half it scans candidate
   events — threshold sets {s ≥ t}, {s ≤ t} over a grid of thresholds that
   reaches into both tails, and singletons {s = v} when s takes few values —
   and both directions (D over D′, D′ over D), and keeps the (event,
   direction) whose lower bound below is largest on that half;
3. on the *estimation* half it computes, for that single event and direction,
   one-sided Clopper–Pearson bounds p_lo ≤ P[M(A) ∈ S] and p′_hi ≥ P[M(B) ∈ S]
   at level α/2 each (Bonferroni, α = 1 − confidence), and reports

       ε_lo = max(0, ln((p_lo − δ)/p′_hi)).

Why this is a valid bound: the event and direction are functions of the
selection half only, which is independent of the estimation half, so with
probability ≥ 1 − α both Clopper–Pearson bounds hold, and then any (ε, δ)-DP
mechanism has ε ≥ ln((P − δ)/P′) ≥ ε_lo.  Hence a *correct* mechanism gets
ε_lo > ε_claimed (a failed audit) with probability at most α.  Choosing the
event on the same samples that estimate it would bias ε_lo upward; the split
is what keeps it honest.

The claimed (ε, δ) is read from the ledger(s) the runs of M charged (the
largest ε any chunk's ledger spent), never typed in by hand.

The classifiers for vector outputs (``classifier="linear"``: Fisher's linear
discriminant, which for equal covariances is the nearest-mean rule in the
Mahalanobis metric; ``"logistic"``: ridge-regularized logistic regression by
Newton's method) are fitted on the selection half only, and their score is the
scalar statistic whose threshold sets are scanned — the classifier's own
decision {score ≥ 0} is one of them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from .._validation import MEMORY_LIMIT, check_delta, check_int, check_nonnegative, check_open_unit
from .ledger import Ledger

__all__ = [
    "AuditTarget",
    "AuditEvent",
    "AuditResult",
    "audit",
    "audit_statistics",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_from_bounds",
    "CLASSIFIERS",
    "MAX_SAMPLES",
    "check_samples",
]

#: The most runs an audit may make on each input: every run's statistic is kept in memory (float64 on D and
#: on D', copied once by the concatenation and once more by the scan: 32 bytes a run at least), so 2**30 runs
#: fill :data:`dpopt._validation.MEMORY_LIMIT`; ``dpopt audit --samples 100000000000`` ran silently until killed.
MAX_SAMPLES = MEMORY_LIMIT // 32


def check_samples(name: str, value) -> int:
    """A number of runs per input in [4, :data:`MAX_SAMPLES`] (the reason is in the message)."""
    return check_int(name, value, minimum=4, maximum=MAX_SAMPLES,
                     why="every run's statistic is kept in memory, 32 bytes a run: more do not fit in 32 GiB")


#: Classifiers that turn vector outputs into a scalar score (fitted on the selection half).
CLASSIFIERS = ("linear", "logistic")

# Thresholds scanned on the selection half: this many evenly spaced order
# statistics plus the same number geometrically spaced into each tail.
_GRID = 1024
# Statistics with at most this many distinct values also get singleton events {s = v}.
_MAX_SINGLETONS = 256


# --------------------------------------------------------------------------- Clopper–Pearson


def clopper_pearson_lower(k, n: int, alpha: float) -> np.ndarray:
    """One-sided lower Clopper–Pearson bound: P ≥ result with probability ≥ 1 − ``alpha``.

    ``k`` successes out of ``n`` trials (array); the bound is the ``alpha``
    quantile of Beta(k, n − k + 1), and 0 when k = 0.
    """
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        q = stats.beta.ppf(alpha, k, n - k + 1.0)
    return np.where(k > 0, q, 0.0)


def clopper_pearson_upper(k, n: int, alpha: float) -> np.ndarray:
    """One-sided upper Clopper–Pearson bound: P ≤ result with probability ≥ 1 − ``alpha``.

    The 1 − ``alpha`` quantile of Beta(k + 1, n − k) (computed with ``isf`` so
    tiny bounds keep their relative precision), and 1 when k = n.
    """
    k = np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        q = stats.beta.isf(alpha, k + 1.0, n - k)
    return np.where(k < n, q, 1.0)


def epsilon_from_bounds(p_lower, p_upper, delta: float) -> np.ndarray:
    """ln((p_lower − δ)/p_upper), −inf where p_lower ≤ δ (no evidence).

    If P[M(A) ∈ S] ≥ p_lower and P[M(B) ∈ S] ≤ p_upper, every (ε, δ)-DP
    mechanism has ε ≥ this value (the DP inequality solved for ε).
    """
    p_lower = np.asarray(p_lower, dtype=float)
    p_upper = np.asarray(p_upper, dtype=float)
    num = p_lower - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(np.where(num > 0, num, 1.0)) - np.log(p_upper)
    return np.where(num > 0, out, -np.inf)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class AuditEvent:
    """The output event S the audit chose, and its probabilities on the estimation half.

    ``direction`` names the numerator first: ``"D over D'"`` means the bound is
    ln((P[M(D) ∈ S] − δ)/P[M(D′) ∈ S]).  ``p`` and ``p_prime`` are the
    empirical P[M(D) ∈ S] and P[M(D′) ∈ S] on the estimation half;
    ``p_lower``/``p_upper`` the Clopper–Pearson bounds actually used (numerator
    lower, denominator upper); ``selection_bound`` the bound the event reached
    on the selection half.
    """

    description: str
    statistic: str
    kind: str
    threshold: float
    direction: str
    p: float
    p_prime: float
    p_lower: float
    p_upper: float
    selection_bound: float


@dataclass(frozen=True)
class AuditResult:
    """Outcome of one audit: ε_lo with its confidence, the claim it is compared with, the event.

    ``passes`` is ``epsilon_lower_bound <= epsilon``: the samples are
    consistent with the claimed (ε, δ).  ``samples`` runs were made on each of
    D and D′, split into ``selection_samples`` + ``estimation_samples``.
    ``seed`` reproduces the audit exactly (it is drawn from OS entropy and
    recorded when none is given).
    """

    target: str
    epsilon_lower_bound: float
    epsilon: float
    delta: float
    notion: str
    relation: str
    confidence: float
    samples: int
    selection_samples: int
    estimation_samples: int
    event: AuditEvent
    seed: int | None
    passes: bool

    @property
    def claimed(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    def to_dict(self) -> dict:
        out = asdict(self)
        return out

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def __str__(self) -> str:
        verdict = "passes" if self.passes else "FAILS"
        return (
            f"audit {self.target}: epsilon >= {self.epsilon_lower_bound:.4g} with confidence "
            f"{self.confidence:g} (claimed epsilon={self.epsilon:.4g}, delta={self.delta:g}; "
            f"{verdict}); event {self.event.description}, {self.event.direction}"
        )


@dataclass(frozen=True)
class AuditTarget:
    """Everything the engine needs to audit one randomized function.

    Attributes
    ----------
    name, description:
        How reports and ``dpopt audit --list`` call it.
    run:
        ``run(data, repetitions, rng) -> (outputs, ledger)``: ``repetitions``
        independent runs in one batched call (outputs with a leading axis of
        that length), charging ``ledger`` — whose spent (ε, δ) is the claim.
    data, neighbour:
        The two neighbouring inputs D and D′ (worst case for the mechanism).
    statistic:
        ``statistic(outputs) -> (R,)`` scalar statistic; ``None`` uses the
        output itself when it is scalar per run and a ``classifier`` score
        otherwise.
    statistic_name:
        Name of the statistic in reports.
    classifier:
        ``None``, ``"linear"`` or ``"logistic"``: fitted on the selection half
        to the (flattened) outputs, or to ``statistic``'s output when that is a
        matrix of features (R, k).
    samples, batch_size:
        Default number of runs per input, and largest batch per call of ``run``.
    """

    name: str
    run: Callable[[Any, int, np.random.Generator], tuple[Any, Ledger]]
    data: Any
    neighbour: Any
    description: str = ""
    statistic: Callable[[np.ndarray], np.ndarray] | None = None
    statistic_name: str = "output"
    classifier: str | None = None
    samples: int = 200_000
    batch_size: int = 100_000

    def __post_init__(self):
        if not callable(self.run):
            raise TypeError("run must be callable as run(data, repetitions, rng)")
        if self.statistic is not None and not callable(self.statistic):
            raise TypeError("statistic must be callable or None")
        if self.classifier is not None and self.classifier not in CLASSIFIERS:
            raise ValueError(
                f"classifier must be None or one of {CLASSIFIERS}, got {self.classifier!r}"
            )
        check_int("samples", self.samples, minimum=4)
        check_int("batch_size", self.batch_size)


# --------------------------------------------------------------------------- classifiers


def _standardize(features: np.ndarray, ref: np.ndarray) -> np.ndarray:
    mean = ref.mean(axis=0)
    std = ref.std(axis=0)
    return (features - mean) / np.where(std > 0, std, 1.0)


def _fit_linear(x0: np.ndarray, x1: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Fisher's discriminant w = (Σ + λI)⁻¹(μ₁ − μ₀), offset at the midpoint of the means."""
    ref = np.concatenate([x0, x1])
    z0, z1 = _standardize(x0, ref), _standardize(x1, ref)
    mu0, mu1 = z0.mean(axis=0), z1.mean(axis=0)
    centred = np.concatenate([z0 - mu0, z1 - mu1])
    cov = centred.T @ centred / max(len(centred) - 2, 1)
    w = np.linalg.solve(cov + 1e-9 * np.eye(cov.shape[0]), mu1 - mu0)
    b = -0.5 * float(w @ (mu0 + mu1))
    return lambda x: _standardize(x, ref) @ w + b


def _fit_logistic(x0: np.ndarray, x1: np.ndarray, iterations: int = 50) -> Callable:
    """Ridge logistic regression (label 1 for D′) by Newton's method on standardized features."""
    ref = np.concatenate([x0, x1])
    z = np.hstack([_standardize(ref, ref), np.ones((len(ref), 1))])
    y = np.concatenate([np.zeros(len(x0)), np.ones(len(x1))])
    ridge = 1e-6 * len(z) * np.eye(z.shape[1])
    ridge[-1, -1] = 0.0
    w = np.zeros(z.shape[1])
    for _ in range(iterations):
        p = 0.5 * (1.0 + np.tanh(0.5 * (z @ w)))  # stable sigmoid
        grad = z.T @ (p - y) + ridge @ w
        hess = (z * (p * (1.0 - p))[:, None]).T @ z + ridge
        step = np.linalg.solve(hess + 1e-12 * np.eye(len(w)), grad)
        w -= step
        if np.max(np.abs(step)) < 1e-10:
            break
    return lambda x: np.hstack([_standardize(x, ref), np.ones((len(x), 1))]) @ w


_FITTERS = {"linear": _fit_linear, "logistic": _fit_logistic}


# --------------------------------------------------------------------------- event search


@dataclass(frozen=True)
class _Choice:
    kind: str  # ">=", "<=", "=="
    threshold: float
    forward: bool  # True: numerator from D (first sample), denominator from D′
    bound: float


def _thresholds(pooled_sorted: np.ndarray) -> np.ndarray:
    """Candidate thresholds: order statistics at evenly and geometrically spaced ranks."""
    n = len(pooled_sorted)
    even = np.linspace(0.0, 1.0, _GRID + 1)
    tail = np.geomspace(1.0 / n, 0.5, _GRID)
    levels = np.concatenate([even, tail, 1.0 - tail])
    ranks = np.unique(np.clip(np.round(levels * (n - 1)).astype(np.int64), 0, n - 1))
    return np.unique(pooled_sorted[ranks])


def _counts(sorted_s: np.ndarray, kind: str, t: np.ndarray) -> np.ndarray:
    if kind == ">=":
        return len(sorted_s) - np.searchsorted(sorted_s, t, side="left")
    if kind == "<=":
        return np.searchsorted(sorted_s, t, side="right")
    return np.searchsorted(sorted_s, t, side="right") - np.searchsorted(sorted_s, t, side="left")


def _in_event(s: np.ndarray, kind: str, t: float) -> np.ndarray:
    if kind == ">=":
        return s >= t
    if kind == "<=":
        return s <= t
    return s == t


def _select(s: np.ndarray, s_prime: np.ndarray, delta: float, alpha: float) -> _Choice:
    """The (event, direction) with the largest Clopper–Pearson ε bound on the selection half."""
    a, b = np.sort(s), np.sort(s_prime)
    na, nb = len(a), len(b)
    pooled = np.sort(np.concatenate([a, b]))
    grid = _thresholds(pooled)
    events = [(">=", grid), ("<=", grid)]
    values = np.unique(pooled)
    if len(values) <= _MAX_SINGLETONS:
        events.append(("==", values))
    best = _Choice(">=", float(pooled[0]), True, -np.inf)
    for kind, t in events:
        ka, kb = _counts(a, kind, t), _counts(b, kind, t)
        forward = epsilon_from_bounds(
            clopper_pearson_lower(ka, na, alpha), clopper_pearson_upper(kb, nb, alpha), delta
        )
        backward = epsilon_from_bounds(
            clopper_pearson_lower(kb, nb, alpha), clopper_pearson_upper(ka, na, alpha), delta
        )
        for is_forward, bounds in ((True, forward), (False, backward)):
            i = int(np.argmax(bounds))
            if bounds[i] > best.bound:
                best = _Choice(kind, float(t[i]), is_forward, float(bounds[i]))
    return best


# --------------------------------------------------------------------------- the engine


def _check_confidence(confidence) -> float:
    return check_open_unit("confidence", confidence)


def audit_statistics(
    s,
    s_prime,
    *,
    epsilon: float,
    delta: float = 0.0,
    confidence: float = 0.95,
    target: str = "statistics",
    statistic_name: str = "statistic",
    notion: str = "unspecified",
    relation: str = "unspecified",
    seed: int | None = None,
) -> AuditResult:
    """Audit two i.i.d. samples of a scalar statistic, s = s(M(D)) and s′ = s(M(D′)).

    Each sample is split into halves (first half: event selection; second
    half: the Clopper–Pearson bound at level (1 − ``confidence``)/2 per
    proportion); see the module docstring.  ``epsilon``/``delta`` is the claim
    the lower bound is compared with.
    """
    s = np.asarray(s, dtype=float).reshape(-1)
    s_prime = np.asarray(s_prime, dtype=float).reshape(-1)
    for name, arr in (("s", s), ("s_prime", s_prime)):
        if len(arr) < 4:
            raise ValueError(f"{name} needs at least 4 samples, got {len(arr)}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} contains NaN or infinite values")
    if len(s) != len(s_prime):
        raise ValueError(
            f"s and s_prime must have the same length, got {len(s)} and {len(s_prime)}"
        )
    epsilon = check_nonnegative("epsilon", epsilon)
    delta = check_delta("delta", delta)
    confidence = _check_confidence(confidence)
    alpha = (1.0 - confidence) / 2.0  # Bonferroni over the two proportions

    n = len(s)
    half = n // 2
    choice = _select(s[:half], s_prime[:half], delta, alpha)

    est_a, est_b = s[half:], s_prime[half:]
    m = n - half
    ka = int(np.count_nonzero(_in_event(est_a, choice.kind, choice.threshold)))
    kb = int(np.count_nonzero(_in_event(est_b, choice.kind, choice.threshold)))
    k_num, k_den = (ka, kb) if choice.forward else (kb, ka)
    p_lower = float(clopper_pearson_lower(k_num, m, alpha))
    p_upper = float(clopper_pearson_upper(k_den, m, alpha))
    bound = float(epsilon_from_bounds(p_lower, p_upper, delta))
    lower = max(bound, 0.0)

    direction = "D over D'" if choice.forward else "D' over D"
    event = AuditEvent(
        description=f"{statistic_name} {choice.kind} {choice.threshold:.6g}",
        statistic=statistic_name,
        kind=choice.kind,
        threshold=choice.threshold,
        direction=direction,
        p=ka / m,
        p_prime=kb / m,
        p_lower=p_lower,
        p_upper=p_upper,
        selection_bound=max(choice.bound, 0.0),
    )
    return AuditResult(
        target=target,
        epsilon_lower_bound=lower,
        epsilon=epsilon,
        delta=delta,
        notion=notion,
        relation=relation,
        confidence=confidence,
        samples=n,
        selection_samples=half,
        estimation_samples=m,
        event=event,
        seed=seed,
        passes=bool(lower <= epsilon),
    )


def _reduce(target: AuditTarget, outputs) -> np.ndarray:
    """Outputs of one chunk → (R,) statistic or (R, k) features."""
    outputs = np.asarray(outputs)
    if outputs.ndim == 0:
        raise ValueError(
            f"target {target.name!r}: run must return outputs with a leading batch axis"
        )
    reduced = np.asarray(target.statistic(outputs) if target.statistic is not None else outputs)
    reduced = reduced.astype(float, copy=False)
    if reduced.shape[:1] != outputs.shape[:1]:
        raise ValueError(
            f"target {target.name!r}: statistic must keep the batch axis of length "
            f"{outputs.shape[0]}, got shape {reduced.shape}"
        )
    return reduced.reshape(len(reduced), -1) if reduced.ndim > 1 else reduced


def _sample(target: AuditTarget, data, samples: int, batch: int, rng: np.random.Generator):
    """Run the target ``samples`` times on ``data`` in chunks; return statistics and ledgers."""
    chunks, ledgers = [], []
    done = 0
    while done < samples:
        size = min(batch, samples - done)
        result = target.run(data, size, rng)
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Ledger)):
            raise TypeError(f"target {target.name!r}: run must return (outputs, ledger)")
        outputs, ledger = result
        reduced = _reduce(target, outputs)
        if len(reduced) != size:
            raise ValueError(
                f"target {target.name!r}: run returned {len(reduced)} outputs "
                f"for {size} repetitions"
            )
        chunks.append(reduced)
        ledgers.append(ledger)
        done += size
    return np.concatenate(chunks), ledgers


def _claim(target: AuditTarget, ledgers: list[Ledger]) -> tuple[float, float, str, str]:
    """The claimed (ε, δ): the largest ε any run spent, at the common δ they spent (the ledgers' δ; under
    basic composition, ``"approx"``, the composed δ, which is below the budget's)."""
    spent = [ledger.spent() for ledger in ledgers]
    deltas = {p.delta for p in spent}
    notions = {p.notion for p in spent}
    relations = {ledger.relation for ledger in ledgers}
    if len(deltas) != 1 or len(notions) != 1 or len(relations) != 1:
        raise ValueError(
            f"target {target.name!r}: its runs charged ledgers with different delta, notion or "
            f"relation ({sorted(deltas)}, {sorted(notions)}, {sorted(relations)})"
        )
    epsilon = max(p.epsilon for p in spent)
    if epsilon <= 0.0:
        raise ValueError(f"target {target.name!r}: its runs charged nothing to their ledgers")
    return epsilon, deltas.pop(), notions.pop(), relations.pop()


def audit(
    target: AuditTarget,
    *,
    samples: int | None = None,
    confidence: float = 0.95,
    seed: int | None = None,
    batch_size: int | None = None,
) -> AuditResult:
    """Audit ``target``: run it ``samples`` times on each of D and D′ and bound ε from below.

    ``seed`` (an int) makes the audit reproducible; with ``None`` a seed is
    drawn from OS entropy and recorded in the result.  The runs on D and on D′
    use independent streams spawned from the seed.  See the module docstring
    for the method and why the bound holds with probability ≥ ``confidence``.
    """
    if not isinstance(target, AuditTarget):
        raise TypeError(f"target must be an AuditTarget, got {type(target).__name__}")
    samples = check_samples("samples", target.samples if samples is None else samples)
    batch = check_int("batch_size", target.batch_size if batch_size is None else batch_size)
    confidence = _check_confidence(confidence)
    # Without a seed, draw one from OS entropy and record it, so the audit can be replayed.
    seed = secrets.randbits(63) if seed is None else check_int("seed", seed, minimum=0)
    root = np.random.SeedSequence(seed)
    rng_d, rng_dp = (np.random.default_rng(child) for child in root.spawn(2))

    s, ledgers = _sample(target, target.data, samples, batch, rng_d)
    s_prime, ledgers_prime = _sample(target, target.neighbour, samples, batch, rng_dp)
    epsilon, delta, notion, relation = _claim(target, ledgers + ledgers_prime)

    statistic_name = target.statistic_name
    classifier = target.classifier
    if classifier is None and s.ndim == 2:
        classifier = "linear" if s.shape[1] > 1 else None
        if classifier is None:
            s, s_prime = s[:, 0], s_prime[:, 0]
    if classifier is not None:
        features = s if s.ndim == 2 else s[:, None]
        features_prime = s_prime if s_prime.ndim == 2 else s_prime[:, None]
        half = samples // 2
        score = _FITTERS[classifier](features[:half], features_prime[:half])
        s, s_prime = score(features), score(features_prime)
        statistic_name = f"{classifier} score of {statistic_name}"

    return audit_statistics(
        s,
        s_prime,
        epsilon=epsilon,
        delta=delta,
        confidence=confidence,
        target=target.name,
        statistic_name=statistic_name,
        notion=notion,
        relation=relation,
        seed=seed,
    )
