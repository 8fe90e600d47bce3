"""Privacy loss distributions (PLD): tight (ε, δ) accounting by numerical composition.

A pair of output distributions (A, B) of a mechanism on neighbouring data
sets has the privacy loss L = log(dA/dB)(X), X ~ A, and hockey-stick curve

    δ(ε) = E_A[(1 − e^{ε−L})₊] + A(L = +∞)                         (1)

(Meiser & Mohammadi 2018; Sommer, Meiser & Mohammadi 2019).
Composition of independent mechanisms adds losses, so its PLD is the
convolution of the PLDs; it is computed here by FFT on a grid of spacing h
(Koskela, Jälkö & Honkela 2020), for the two neighbouring directions
separately, and the reported δ(ε) is the larger of the two.

Discretization, both ways:

* **pessimistic** — each mechanism's PLD is the "connect the dots" PLD of
  Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022 (Algorithm 1): atoms
  on the grid whose δ(ε) is the interpolation, linear in e^ε, of the exact
  δ(ε) at the grid points.  δ is convex in e^ε, so the interpolation lies
  above the exact curve at every ε ∈ ℝ, i.e. the discrete pair dominates the
  mechanism and so does the composition of the discrete pairs (Zhu, Dong &
  Wang 2022, dominating pairs compose).  Mass cut off in the upper tail goes to +∞ (into δ),
  mass cut off in the lower tail moves up to the lowest kept atom.  The
  reported ε is an upper bound, up to floating-point rounding of the FFT
  (~1e-15 of the total mass per convolution).
* **optimistic** — the pair binned by loss intervals (ih, (i+1)h] (a
  post-processing), its atoms merged onto the grid by further
  post-processing where they can be and rounded down where not, and the
  lower tail dropped: a pair dominated by the mechanism, so its δ(ε) is a
  lower bound (rounding losses down couples to a pointwise smaller loss, and
  (1) is monotone in L); see :func:`_merge_onto_grid`.

The gap between the two is the discretization error the user sees
(:meth:`PLDAccountant.get_epsilon_bounds`).

Mechanisms with an exact PLD here (``Gaussian``, ``Laplace``,
``DiscreteLaplace``, ``DiscreteGaussian`` — through the continuous Gaussian that covers it in any
dimension, :meth:`~dpopt.privacy.events.DiscreteGaussian.dominating_gaussian` (σ > 4; at σ ≤ 4
it goes to the RDP accountant) —, k-ary ``RandomizedResponse``, and
pure ε-DP events ``PureDP``, ``Exponential``, ``VectorLaplace``, ``Snapping``
through the randomized-response pair that dominates every ε-DP mechanism,
Kairouz, Oh & Viswanath 2015) and their ``Subsampled`` versions:

* Poisson sampling at rate q, add/remove-one: the "remove" pair is
  ((1−q)P₀ + qP₁, P₀) and the "add" pair is (P₀, (1−q)P₀ + qP₁), with P₀
  the mechanism's output without the record and P₁ with it (Zhu, Dong &
  Wang 2022, subsampling section; the pairs dp-accounting uses);
* fixed-size sampling without replacement at rate m/n, replace-one: the
  same two pairs with (P₀, P₁) the base mechanism's replace-one pair
  (Zhu, Dong & Wang 2022, subsampling without replacement; its pure-DP
  case is Balle, Barthe & Gaboardi 2018's log(1 + q(e^ε − 1))).  Each pair
  is composed over all steps and the worse of the two is reported, which
  covers a pair that dominates only for ε ≥ 0 and its mirror for ε < 0.

Everything else (``AboveThreshold``, subsampled compositions) is accounted by the RDP accountant and
combined with the PLD part by basic composition at the best split of δ;
:meth:`PLDAccountant.describe` and :meth:`PLDAccountant.parts` say which
accountant produced which part.  The reported ε is never above what the RDP
accountant alone gives for the whole log (both are valid bounds; the smaller
is reported), and a ledger's check before a charge uses that, and states
already certified to fit, before it composes PLDs (:meth:`PLDAccountant.fits`).
"""

from __future__ import annotations

import functools
import heapq
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import special

from .. import _validation as val
from . import events as ev
from .accountant import AccountantBase, register_accountant
from .rdp import RDPAccountant

__all__ = [
    "PLDAccountant",
    "DiscretePLD",
    "pld_pair",
    "DEFAULT_DISCRETIZATION",
    "DEFAULT_TAIL_MASS",
]

#: Default grid spacing h of privacy losses (dp-accounting's default too).
DEFAULT_DISCRETIZATION = 1e-4
#: Mass cut from each tail after every convolution (and when a PLD is built).
DEFAULT_TAIL_MASS = 1e-15

#: The most grid points one PLD may have; a composition that needs more (privacy losses of
#: hundreds of nats, e.g. noise multipliers near 0 during a calibration search) is accounted
#: by the RDP accountant over the whole log instead (:meth:`PLDAccountant.describe` says so).
MAX_GRID_POINTS = 1 << 20

REMOVE, ADD = "remove", "add"


class GridTooWide(ValueError):
    """A PLD would need more than :data:`MAX_GRID_POINTS` grid points."""


def _check_width(points: float) -> None:
    if not points <= MAX_GRID_POINTS:
        raise GridTooWide(f"the privacy loss distribution needs {points:.3g} grid points (> {MAX_GRID_POINTS})")
_DIRECTIONS = (REMOVE, ADD)


# --------------------------------------------------------------------------- mechanism families
#
# A family describes the base pair (P₀, P₁) of one additive-noise or pure-DP
# mechanism through R = log(dP₁/dP₀), which is non-decreasing in the output:
# ``tails(u)`` returns (P₀(R > u), P₁(R > u)) and ``support(tail)`` an
# interval of R holding all but ``tail`` of the mass of P₀ (below) and P₁ (above).


@dataclass(frozen=True)
class _Gaussian:
    """N(0, σ²) vs N(Δ, σ²), s = Δ/σ: R ~ N(∓s²/2, s²) under P₀ / P₁."""

    s: float

    def tails(self, u):
        s = self.s
        return special.ndtr(-(u + s * s / 2) / s), special.ndtr(-(u - s * s / 2) / s)

    def support(self, tail):
        z = -special.ndtri(tail)
        return -self.s * self.s / 2 - z * self.s, self.s * self.s / 2 + z * self.s


@dataclass(frozen=True)
class _Laplace:
    """Lap(b) vs Lap(b) + Δ, s = Δ/b: R = (|x| − |x − Δ|)/b ∈ [−s, s] (atoms at both ends)."""

    s: float

    def tails(self, u):
        s = self.s
        inner = (u >= -s) & (u < s)
        uc = np.clip(u, -s, s)
        t0 = np.where(u < -s, 1.0, np.where(inner, 0.5 * np.exp(-(uc + s) / 2), 0.0))
        t1 = np.where(u < -s, 1.0, np.where(inner, -0.5 * np.expm1((uc - s) / 2) + 0.5, 0.0))
        return t0, t1

    def support(self, tail):
        return -self.s, self.s


@dataclass(frozen=True)
class _DiscreteLaplace:
    """P(x) ∝ e^{−|x|/t} on ℤ vs its shift by the integer Δ: R = (|x| − |x − Δ|)/t.

    For −Δ/t ≤ u < Δ/t, R > u ⇔ x ≥ k = ⌊(tu + Δ)/2⌋ + 1 ∈ [1, Δ], and with
    r = e^{−1/t}: P₀(X ≥ k) = r^k/(1 + r), P₁ = P₀(X ≥ k − Δ) = 1 − r^{Δ−k+1}/(1 + r).
    """

    t: float
    delta: int

    def tails(self, u):
        t, d = self.t, self.delta
        lo, hi = -d / t, d / t
        inner = (u >= lo) & (u < hi)
        k = np.clip(np.floor((t * np.clip(u, lo, hi) + d) / 2) + 1, 1, d)
        log_r, log1p_r = -1.0 / t, math.log1p(math.exp(-1.0 / t))
        t0 = np.where(u < lo, 1.0, np.where(inner, np.exp(k * log_r - log1p_r), 0.0))
        t1 = np.where(u < lo, 1.0, np.where(inner, -np.expm1((d - k + 1) * log_r - log1p_r), 0.0))
        return t0, t1

    def support(self, tail):
        return -self.delta / self.t, self.delta / self.t


@dataclass(frozen=True)
class _RandomizedResponse:
    """The pair dominating every ε-DP mechanism: R = ±ε with P₁(R = ε) = e^ε/(1 + e^ε) = P₀(R = −ε)."""

    epsilon: float

    def tails(self, u):
        e = self.epsilon
        p_hi = special.expit(e)  # e^ε/(1+e^ε)
        mid = (u >= -e) & (u < e)
        return (
            np.where(u < -e, 1.0, np.where(mid, 1.0 - p_hi, 0.0)),
            np.where(u < -e, 1.0, np.where(mid, p_hi, 0.0)),
        )

    def support(self, tail):
        return -self.epsilon, self.epsilon


@dataclass(frozen=True)
class _KaryRandomizedResponse:
    """k-ary randomized response between true values x′ (P₀) and x (P₁), Z = e^ε + k − 1:

    R = −ε on output x′ (masses e^ε/Z, 1/Z), 0 on the k − 2 others ((k − 2)/Z each side),
    +ε on output x (1/Z, e^ε/Z).  For k = 2 this is :class:`_RandomizedResponse`.
    """

    epsilon: float
    k: int

    def tails(self, u):
        e, k = self.epsilon, self.k
        z = math.expm1(e) + k  # e^ε + k − 1
        t0 = np.where(u < -e, 1.0, np.where(u < 0.0, (k - 1) / z, np.where(u < e, 1.0 / z, 0.0)))
        t1 = np.where(u < -e, 1.0, np.where(u < 0.0, (k - 2 + math.exp(e)) / z,
                                            np.where(u < e, math.exp(e) / z, 0.0)))  # fmt: skip
        return t0, t1

    def support(self, tail):
        return -self.epsilon, self.epsilon


def _family(event: ev.Event):
    """The family of a base event, or None when no exact PLD is implemented for it."""
    if isinstance(event, ev.Gaussian):
        return _Gaussian(event.sensitivity / event.sigma)
    if isinstance(event, ev.Laplace):
        return _Laplace(event.sensitivity / event.scale)
    if isinstance(event, ev.DiscreteLaplace):
        return _DiscreteLaplace(event.scale, event.sensitivity)
    if isinstance(event, ev.DiscreteGaussian):  # any dimension: its covering Gaussian (σ ≤ 4: RDP)
        cover = event.dominating_gaussian()
        return None if cover is None else _family(cover)
    if isinstance(event, ev.PureDP | ev.Exponential | ev.VectorLaplace | ev.Snapping):
        return _RandomizedResponse(event.epsilon)
    if isinstance(event, ev.RandomizedResponse):
        return _RandomizedResponse(event.epsilon) if event.k == 2 else _KaryRandomizedResponse(event.epsilon, event.k)
    return None


def pld_pair(event: ev.Event):
    """(family, rate) when ``event`` is a base mechanism or a ``Subsampled`` one with an exact PLD, else None."""
    if isinstance(event, ev.Subsampled):
        family = _family(event.event)
        return None if family is None else (family, event.rate)
    family = _family(event)
    return None if family is None else (family, 1.0)


# --------------------------------------------------------------------------- hockey-stick curves of the pairs


def _pair_tails(family, rate: float, direction: str, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(A(L > ε), B(L > ε)) of the subsampled pair in ``direction`` (module docstring).

    remove: L = log(1 − q + q e^R) > ε ⇔ R > log((e^ε − 1 + q)/q)  (all R when e^ε ≤ 1 − q);
    add:    L = −log(1 − q + q e^R) > ε ⇔ R < log((e^{−ε} − 1 + q)/q) (no R when e^{−ε} ≤ 1 − q).
    For the add pair the tails use P(R ≥ u) = 1 − P(R < u) through P(R > u); the two differ
    only on atoms of L at exactly ε, which add nothing to δ(ε) (A = e^ε B there).
    """
    q = rate
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if direction == REMOVE:
            arg = (np.expm1(eps) + q) / q
            u = np.where(arg > 0, np.log(np.where(arg > 0, arg, 1.0)), -np.inf)
            s0, s1 = family.tails(u)
            s0 = np.where(arg > 0, s0, 1.0)
            s1 = np.where(arg > 0, s1, 1.0)
            return (1.0 - q) * s0 + q * s1, s0
        arg = (np.expm1(-eps) + q) / q
        u = np.where(arg > 0, np.log(np.where(arg > 0, arg, 1.0)), -np.inf)
        s0, s1 = family.tails(u)
        below0 = np.where(arg > 0, 1.0 - s0, 0.0)
        below1 = np.where(arg > 0, 1.0 - s1, 0.0)
        return below0, (1.0 - q) * below0 + q * below1


def _loss_range(family, rate: float, direction: str, tail: float) -> tuple[float, float]:
    """An interval of the privacy loss holding all but ~``tail`` of A's mass."""
    u_lo, u_hi = family.support(tail)
    q = rate

    def grow(u):  # log(1 − q + q e^u), stable for u of any size
        return float(np.logaddexp(math.log1p(-q), math.log(q) + u)) if q < 1.0 else float(u)

    if direction == REMOVE:
        return grow(u_lo), grow(u_hi)
    return -grow(u_hi), -grow(u_lo)


def _hockey_stick(a_tail: np.ndarray, b_tail: np.ndarray, eps: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        delta = a_tail - np.exp(eps) * b_tail
    return np.clip(np.where(b_tail == 0.0, a_tail, delta), 0.0, 1.0)


# --------------------------------------------------------------------------- discrete PLD


class DiscretePLD:
    """A privacy loss distribution on the grid h·ℤ: ``pmf[i]`` at loss (offset + i)·h, plus mass at +∞.

    ``pessimistic`` says which way its tails are truncated when it is composed.
    Immutable by convention (arrays are read-only).
    """

    __slots__ = ("h", "offset", "pmf", "infinity_mass", "pessimistic", "_log_mgf")

    def __init__(self, h: float, offset: int, pmf: np.ndarray, infinity_mass: float, pessimistic: bool):
        pmf = np.asarray(pmf, dtype=float)
        pmf.setflags(write=False)
        self.h, self.offset, self.pmf = float(h), int(offset), pmf
        self.infinity_mass = float(min(max(infinity_mass, 0.0), 1.0))
        self.pessimistic = bool(pessimistic)
        self._log_mgf = None

    @classmethod
    def identity(cls, h: float, pessimistic: bool) -> DiscretePLD:
        return cls(h, 0, np.ones(1), 0.0, pessimistic)

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.pmf.size)) * self.h

    # -- construction ---------------------------------------------------------
    @classmethod
    def from_pair(cls, family, rate: float, direction: str, h: float, tail: float, pessimistic: bool):
        """Discretize one (subsampled) pair: connect-the-dots (pessimistic) or rounding down (optimistic)."""
        lo, hi = _loss_range(family, rate, direction, tail)
        _check_width((hi - lo) / h)
        i_lo, i_hi = math.floor(lo / h), math.ceil(hi / h)
        if i_hi <= i_lo:
            i_hi = i_lo + 1
        eps = np.arange(i_lo, i_hi + 1) * h
        a_tail, b_tail = _pair_tails(family, rate, direction, eps)
        if not pessimistic:
            # the pair binned by loss intervals (ε_i, ε_{i+1}] (the last bin open above), the
            # lower tail dropped, then merged onto the grid (:func:`_merge_onto_grid`)
            a = np.clip(np.append(a_tail[:-1] - a_tail[1:], a_tail[-1]), 0.0, None)
            b = np.clip(np.append(b_tail[:-1] - b_tail[1:], b_tail[-1]), 0.0, None)
            return cls(h, i_lo, _merge_onto_grid(a, b, i_lo, h), 0.0, False)
        delta = _hockey_stick(a_tail, b_tail, eps)
        delta = np.minimum.accumulate(delta)  # δ is non-increasing; remove rounding wiggles
        # Doroshenko et al. 2022, Algorithm 1 with equal gaps: the atom at ε_i is e^{ε_i} times
        # the change of slope (in e^ε) of the interpolated curve; the first atom also takes the
        # segment from (0, 1), the last one the segment to the flat tail at δ(ε_top) = mass at +∞.
        em1 = math.expm1(h)
        diff = np.diff(delta)  # δ_{i+1} − δ_i ≤ 0
        pmf = np.empty(eps.size)
        pmf[1:-1] = (diff[1:] - (em1 + 1.0) * diff[:-1]) / em1
        pmf[0] = (1.0 - delta[0]) + diff[0] / em1
        pmf[-1] = -diff[-1] / (-math.expm1(-h))
        return cls(h, i_lo, np.clip(pmf, 0.0, None), float(delta[-1]), True)

    # -- composition ------------------------------------------------------------
    def _truncate(self, pmf: np.ndarray, offset: int, infinity: float, tail: float) -> DiscretePLD:
        """Cut up to ~``tail`` mass from each end (pessimistic: up into the first atom / +∞).

        The masses moved are summed again from the cut entries, so what moved
        is accounted exactly.
        """
        pmf = np.maximum(pmf, 0.0, out=pmf)  # FFT round-off can leave tiny negatives
        cum = np.cumsum(pmf)
        total = cum[-1]
        lo = int(np.searchsorted(cum, tail, side="right"))  # pmf[:lo] sums to ≤ tail
        # the upper tail from a reverse sum over a region safely wider than it (cum's own
        # rounding, ~n·2⁻⁵³, is far above the tail mass)
        start = int(np.searchsorted(cum, total - 1e-6 - tail, side="left"))
        rcum = np.cumsum(pmf[start:][::-1])
        hi = pmf.size - int(np.searchsorted(rcum, tail, side="right"))  # pmf[hi:] sums to ≤ tail
        lo = min(lo, pmf.size - 1)
        hi = min(max(hi, lo + 1), pmf.size)
        low_mass = float(np.sum(pmf[:lo]))
        high_mass = float(np.sum(pmf[hi:]))
        kept = np.array(pmf[lo:hi])
        if self.pessimistic:
            kept[0] += low_mass
            infinity += high_mass
        else:
            kept[-1] += high_mass
        return DiscretePLD(self.h, offset + lo, kept, infinity, self.pessimistic)

    def compose(self, other: DiscretePLD, tail: float = DEFAULT_TAIL_MASS) -> DiscretePLD:
        """The PLD of running both mechanisms: the FFT convolution of the pmfs, tails truncated."""
        if other.h != self.h or other.pessimistic != self.pessimistic:
            raise ValueError("only PLDs with the same grid and the same rounding direction compose")
        if self.pmf.size == 1 and self.offset == 0 and self.infinity_mass == 0.0 and self.pmf[0] == 1.0:
            return other
        n = self.pmf.size + other.pmf.size - 1
        _check_width(n)
        if min(self.pmf.size, other.pmf.size) <= 32:
            pmf = np.convolve(self.pmf, other.pmf)
        else:
            size = _fast_length(n)
            spectrum = np.fft.rfft(self.pmf, size)
            spectrum *= spectrum if other is self else np.fft.rfft(other.pmf, size)
            pmf = np.fft.irfft(spectrum, size)[:n]
        infinity = 1.0 - (1.0 - self.infinity_mass) * (1.0 - other.infinity_mass)
        return self._truncate(pmf, self.offset + other.offset, infinity, tail)

    def self_compose(self, count: int, tail: float = DEFAULT_TAIL_MASS) -> DiscretePLD:
        """``count``-fold composition by repeated squaring: O(log count) convolutions."""
        count = val.check_int("count", count, minimum=1)
        result, power = None, self
        while True:
            if count & 1:
                result = power if result is None else result.compose(power, tail)
            count >>= 1
            if not count:
                return result
            power = power.compose(power, tail)

    # -- conversion -------------------------------------------------------------------
    def get_delta(self, epsilon: float) -> float:
        """δ(ε) by (1): Σ_{l > ε} p_l (1 − e^{ε−l}) + mass at +∞."""
        losses = self.losses
        above = losses > epsilon
        terms = self.pmf[above] * -np.expm1(epsilon - losses[above])
        return float(min(1.0, self.infinity_mass + math.fsum(terms)))

    def get_epsilon(self, delta: float) -> float:
        """The smallest ε ≥ 0 with δ(ε) ≤ ``delta`` (inf when the mass at +∞ exceeds it).

        Between consecutive atoms l_{k−1} ≤ ε < l_k, δ(ε) = P_k − e^ε Q_k with
        P_k = ∞-mass + Σ_{i≥k} p_i and Q_k = Σ_{i≥k} p_i e^{−l_i}, solved for ε.
        """
        if self.infinity_mass > delta:
            return math.inf
        losses, pmf = self.losses, self.pmf
        top = losses[-1]
        p_suffix = np.cumsum(pmf[::-1])[::-1] + self.infinity_mass
        p_next = np.append(p_suffix[1:], self.infinity_mass)
        # log Q suffix sums, scaled by e^{top} while e^{top − l} stays finite, else in log space
        with np.errstate(divide="ignore"):
            if top - losses[0] < 700.0:
                log_q = np.log(np.cumsum((pmf * np.exp(top - losses))[::-1])[::-1]) - top
            else:
                log_q = np.logaddexp.accumulate((np.log(pmf) - losses)[::-1])[::-1]
        log_q_next = np.append(log_q[1:], -np.inf)
        # δ at each atom l_j counts the atoms above it: P_{j+1} − e^{l_j} Q_{j+1} (e^{l_j} Q_{j+1} ≤ 1)
        delta_at = p_next - np.exp(losses + log_q_next)
        ok = np.flatnonzero(delta_at <= delta)
        j = int(ok[0])  # delta_at[-1] = ∞-mass ≤ delta, so ok is non-empty
        p_j, log_q_j = float(p_suffix[j]), float(log_q[j])
        if log_q_j == -math.inf or p_j <= delta:
            eps = losses[j - 1] if j > 0 else -math.inf
        else:
            eps = math.log(p_j - delta) - log_q_j
        return max(0.0, float(eps))


def _merge_onto_grid(a: np.ndarray, b: np.ndarray, i_lo: int, h: float) -> np.ndarray:
    """A-masses on the grid of a pair *dominated* by the binned pair (a_i, b_i): a lower bound.

    Bin i holds the losses in (ε_i, ε_{i+1}], so its atom's loss log(a_i/b_i)
    lies there.  Merging outputs and splitting an atom into proportional parts
    are post-processing, so the pair they produce is dominated by the
    mechanism.  Atoms are taken in increasing loss; a carried remainder is
    merged with the fraction α of the next atom that brings the merged loss
    exactly onto the largest grid point g below that atom's loss:
    (c_A + α a)/(c_B + α b) = e^g.  What cannot reach a grid point this way
    is rounded down (a further lower bound).  Unlike rounding every bin down
    (a bias of ~h/2 per composed mechanism), the loss moves by O(h²).
    """
    out = np.zeros(a.size)
    losses = (i_lo + np.arange(a.size)) * h
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.clip(np.log(a / b), losses, losses + h)  # the atom's loss lies in its bin
    carry_a = carry_b = 0.0
    carry_loss = 0.0
    top = i_lo + a.size - 1
    for i in np.flatnonzero(a > 0.0):
        ai, bi, li = float(a[i]), float(b[i]), float(ratio[i])
        if carry_a == 0.0:
            carry_a, carry_b, carry_loss = ai, bi, li
            continue
        g = min(math.floor(li / h + 1e-9), top)  # largest grid index at or below the atom's loss
        gamma = math.exp(g * h)
        gap = ai - gamma * bi
        if gap <= 0.0:  # the atom sits on the grid point itself
            out[g - i_lo] += ai
            continue
        alpha = (gamma * carry_b - carry_a) / gap
        if g * h < carry_loss or alpha >= 1.0:
            # the carry cannot be lifted onto a grid point by this atom: round it down
            out[min(math.floor(carry_loss / h + 1e-9), top) - i_lo] += carry_a
            carry_a, carry_b, carry_loss = ai, bi, li
            continue
        alpha = max(alpha, 0.0)
        out[g - i_lo] += carry_a + alpha * ai
        carry_a, carry_b, carry_loss = (1.0 - alpha) * ai, (1.0 - alpha) * bi, li
    if carry_a > 0.0:
        out[min(max(math.floor(carry_loss / h + 1e-9) - i_lo, 0), a.size - 1)] += carry_a
    return out


@functools.lru_cache(maxsize=4096)
def _fast_length(n: int) -> int:
    """A length ≥ n with only factors 2, 3, 5 (fast for numpy's FFT)."""
    best = 1 << (n - 1).bit_length()
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            m = p35
            while m < n:
                m *= 2
            best = min(best, m)
            p35 *= 3
        p5 *= 5
    return best


@functools.lru_cache(maxsize=128)
def _base_pld(family, rate: float, direction: str, h: float, tail: float, pessimistic: bool) -> DiscretePLD:
    return DiscretePLD.from_pair(family, rate, direction, h, tail, pessimistic)


@functools.lru_cache(maxsize=96)
def _power_pld(family, rate: float, direction: str, log2_count: int, h: float, tail: float, pessimistic: bool):
    """The 2^k-fold composition, by squaring the 2^(k−1)-fold one (cached, so ledgers reuse them)."""
    if log2_count == 0:
        return _base_pld(family, rate, direction, h, tail, pessimistic)
    half = _power_pld(family, rate, direction, log2_count - 1, h, tail, pessimistic)
    return half.compose(half, tail)


# λ grid of the Chernoff bounds that place the window of a one-FFT self-composition
_CHERNOFF_LAMBDAS = np.geomspace(1e-3, 1e3, 31)


def _power_window(pld: DiscretePLD, count: int, tail: float) -> tuple[int, int]:
    """Grid indices [lo, hi] holding all but ``tail`` of each tail of the count-fold sum (Chernoff).

    For the finite losses l_i with masses p_i (a sub-probability), the sum S of
    ``count`` independent copies has P(S ≥ x) ≤ e^{−λx}(Σ p_i e^{λ l_i})^count and
    P(S ≤ x) ≤ e^{λx}(Σ p_i e^{−λ l_i})^count for every λ > 0 (Markov's inequality).
    """
    h, losses = pld.h, pld.losses
    if pld._log_mgf is None:  # log Σ p e^{±λl} on the λ grid, once per PLD
        keep = pld.pmf > 0.0
        kept, log_p = losses[keep], np.log(pld.pmf[keep])
        lam = _CHERNOFF_LAMBDAS[:, None]
        rows = []
        for sign in (1.0, -1.0):
            exponent = log_p + sign * lam * kept
            top = exponent.max(axis=1, keepdims=True)
            rows.append(np.log(np.exp(exponent - top).sum(axis=1)) + top[:, 0])
        pld._log_mgf = tuple(rows)
    log_up, log_down = pld._log_mgf
    x_hi = min(float(np.min((count * log_up - math.log(tail)) / _CHERNOFF_LAMBDAS)), count * losses[-1])
    x_lo = max(float(np.max(-(count * log_down - math.log(tail)) / _CHERNOFF_LAMBDAS)), count * losses[0])
    return math.floor(x_lo / h), math.ceil(x_hi / h)


def _self_compose_fft(pld: DiscretePLD, count: int, tail: float) -> DiscretePLD:
    """The pessimistic ``count``-fold composition by one FFT power (pessimistic PLDs only).

    The count-fold sum is computed circularly on a window [lo, hi] placed by
    :func:`_power_window`; mass outside it aliases into the window, which only
    adds non-negative mass to atoms (δ grows: still an upper bound), and the
    mass above the window (≤ ``tail``) is added to the mass at +∞.
    """
    lo, hi = _power_window(pld, count, tail)
    _check_width(hi - lo)
    size = _fast_length(max(hi - lo + 1, pld.pmf.size))
    spectrum = np.fft.rfft(pld.pmf, size) ** count
    circular = np.fft.irfft(spectrum, size)
    # relative index s of the sum sits at s mod size; the window starts at s = lo − count·offset
    start = lo - count * pld.offset
    pmf = np.roll(circular, -(start % size))
    infinity = 1.0 - (1.0 - pld.infinity_mass) ** count + tail
    return pld._truncate(pmf, lo, infinity, tail)


def _composed_pld(family, rate: float, direction: str, count: int, h: float, tail: float, pessimistic: bool):
    """The ``count``-fold composition: one FFT power (pessimistic) or O(log count) squarings (optimistic)."""
    if pessimistic and count > 1:
        return _self_compose_fft(_base_pld(family, rate, direction, h, tail, True), count, tail)
    result = None
    for k in range(count.bit_length()):
        if count >> k & 1:
            power = _power_pld(family, rate, direction, k, h, tail, pessimistic)
            result = power if result is None else result.compose(power, tail)
    return result


# --------------------------------------------------------------------------- accountant


def _compose_all(parts: list, h: float, tail: float, pessimistic: bool) -> DiscretePLD:
    """Compose many PLDs, always the two shortest first (Huffman order): O(n log k), not O(n·k), for k parts."""
    if not parts:
        return DiscretePLD.identity(h, pessimistic)
    heap = [(p.pmf.size, i, p) for i, p in enumerate(parts)]
    heapq.heapify(heap)
    counter = len(heap)
    while len(heap) > 1:
        _, _, a = heapq.heappop(heap)
        _, _, b = heapq.heappop(heap)
        c = a.compose(b, tail)
        heapq.heappush(heap, (c.pmf.size, counter, c))
        counter += 1
    return heap[0][2]


def _flatten(event: ev.Event, count: int, out: list) -> None:
    """(event, count) pairs of the base and subsampled events inside ``event``."""
    if isinstance(event, ev.SelfComposed):
        _flatten(event.event, count * event.count, out)
    elif isinstance(event, ev.Composed):
        for sub in event.events:
            _flatten(sub, count, out)
    else:
        out.append((event, count))


@functools.lru_cache(maxsize=1024)
def _plan(event: ev.Event) -> tuple:
    """((base event, count, (family, rate) or None for the RDP fallback), …) of one ``event``.

    Raises ``ValueError``/``TypeError`` when a base event has neither an exact
    PLD nor an RDP curve.  Cached per event (events are immutable values).
    """
    parts: list = []
    _flatten(event, 1, parts)
    plan = []
    for sub, n in parts:
        if isinstance(sub, ev.ApproxDP):
            raise ev.ApproxDP.refusal("PLD")
        pair = pld_pair(sub)
        if pair is None:
            RDPAccountant().cost(sub)
        plan.append((sub, n, pair))
    return tuple(plan)


def _covers(certified: dict, state: frozenset) -> bool:
    """Whether every count of ``state`` is at most the ``certified`` state's count of that event."""
    return all(n <= certified.get(event, 0) for event, n in state)


# δ split between the PLD part and the RDP part, as the fraction of δ given to the PLD part.
_SPLITS = tuple(1.0 - np.geomspace(1e-3, 0.5, 16)) + tuple(np.geomspace(1e-3, 0.5, 16)[::-1])


class PLDAccountant(AccountantBase):
    """Privacy accounting by privacy loss distributions (see the module docstring).

    >>> from dpopt.privacy import events as ev
    >>> step = ev.Subsampled(ev.Gaussian(sigma=1.5), rate=0.04, scheme="poisson")
    >>> acc = PLDAccountant().compose(ev.SelfComposed(step, 2250))
    >>> round(acc.get_epsilon(delta=1e-5), 2)
    6.78

    Parameters
    ----------
    discretization:
        Grid spacing h of the losses (default 1e-4); smaller is tighter and slower.
    tail_mass:
        Mass truncated from each tail per convolution; the upper one is added to δ.

    Composition is lazy: ``compose`` counts events, and the PLDs are built and
    convolved on the first ``get_epsilon``/``get_delta`` after a change (T
    identical events by one FFT power).  A ledger's check before each charge
    (:meth:`fits`) composes PLDs only O(log T) times over a run of T similar
    charges: it asks the RDP bound first and certifies scaled-up states.  Events without an exact PLD
    go to an internal :class:`~dpopt.privacy.rdp.RDPAccountant` and the two
    parts compose by basic composition (ε₁ + ε₂, δ₁ + δ₂) at the best split.
    """

    notion = "pld"

    def __init__(self, discretization: float = DEFAULT_DISCRETIZATION, tail_mass: float = DEFAULT_TAIL_MASS):
        self.discretization = val.check_positive("discretization", discretization)
        if self.discretization > 0.1:
            raise ValueError(f"discretization must be in (0, 0.1], got {discretization!r}")
        self.tail_mass = val.check_positive("tail_mass", tail_mass)
        if self.tail_mass > 1e-6:
            raise ValueError(f"tail_mass must be in (0, 1e-6], got {tail_mass!r}")
        self._pld_counts: Counter = Counter()  # (family, rate) -> count
        self._rdp_part = RDPAccountant()  # events without an exact PLD
        self._rdp_events: Counter = Counter()
        self._pld_events: Counter = Counter()
        self._counts: Counter = Counter()  # base event -> count, both parts
        self._rdp_all: RDPAccountant | None = RDPAccountant()  # the whole log, while RDP covers it
        self._cache: dict | None = None
        # ε of whole states (event -> count) already computed, and states certified to fit a
        # budget (see :meth:`fits`); facts about absolute states, so copies share them
        self._known: dict = {"eps": {}, "certified": [], "refuted": []}

    # -- composition ------------------------------------------------------------------
    def _guarantee(self, event: ev.Event):
        """The event's plan: its exact PLD parts, or the RDP fallback (raises where neither applies)."""
        return _plan(event)

    def compose(self, event: ev.Event, count: int = 1) -> PLDAccountant:
        """Add ``count`` repetitions of ``event``; returns ``self`` so calls chain."""
        if not isinstance(event, ev.Event):
            raise TypeError(f"event must be a privacy Event, got {type(event).__name__}")
        count = val.check_int("count", count, minimum=1)
        for sub, n, pair in _plan(event):  # raises for events nobody can account, before any change
            n *= count
            self._counts[sub] += n
            if pair is None:
                self._rdp_part.compose(sub, n)
                self._rdp_events[sub] += n
            else:
                self._pld_counts[pair] += n
                self._pld_events[sub] += n
        if self._rdp_all is not None:
            try:  # the event itself, as an RDP ledger composes it (so ``fits`` agrees bit for bit)
                self._rdp_all.compose(event, count)
            except (TypeError, ValueError):
                self._rdp_all = None
        self._cache = None
        return self

    def copy(self) -> PLDAccountant:
        other = PLDAccountant.__new__(PLDAccountant)
        other.discretization, other.tail_mass = self.discretization, self.tail_mass
        other._pld_counts = Counter(self._pld_counts)
        other._rdp_part = self._rdp_part.copy()
        other._rdp_events, other._pld_events = Counter(self._rdp_events), Counter(self._pld_events)
        other._counts = Counter(self._counts)
        other._rdp_all = None if self._rdp_all is None else self._rdp_all.copy()
        other._cache = None if self._cache is None else dict(self._cache)  # the PLDs are immutable
        other._known = self._known
        return other

    # -- the composed PLDs -----------------------------------------------------------------
    def _plds(self, pessimistic: bool = True) -> dict:
        """{direction: DiscretePLD} of everything with an exact PLD (built on first use)."""
        if self._cache is None:
            self._cache = {}
        if pessimistic in self._cache:
            return self._cache[pessimistic]
        h, tail = self.discretization, self.tail_mass
        out = {}
        items = sorted(self._pld_counts.items(), key=lambda kv: repr(kv[0]))
        for direction in _DIRECTIONS:
            parts = [
                _composed_pld(family, rate, direction if rate < 1.0 else REMOVE, n, h, tail, pessimistic)
                for (family, rate), n in items
            ]
            out[direction] = _compose_all(parts, h, tail, pessimistic)
        self._cache[pessimistic] = out
        return out

    def pld(self, direction: str = REMOVE, pessimistic: bool = True) -> DiscretePLD:
        """The composed PLD of the exactly-accounted part in one ``direction`` ("remove" or "add")."""
        val.check_choice("direction", direction, _DIRECTIONS)
        return self._plds(bool(pessimistic))[direction]

    def _pld_delta(self, epsilon: float, pessimistic: bool) -> float:
        plds = self._plds(pessimistic)
        return max(pld.get_delta(epsilon) for pld in plds.values())

    def _pld_epsilon(self, delta: float, pessimistic: bool) -> float:
        plds = self._plds(pessimistic)
        return max(pld.get_epsilon(delta) for pld in plds.values())

    # -- conversion ---------------------------------------------------------------------------
    def _has_pld(self) -> bool:
        return bool(self._pld_counts)

    def has_exact_part(self) -> bool:
        """Whether some composed event has an exact PLD here (else everything is RDP's fallback)."""
        return self._has_pld()

    def _has_rdp(self) -> bool:
        return bool(self._rdp_events)

    def _rdp_whole(self) -> RDPAccountant | None:
        """The RDP accountant over the whole log (None when RDP does not cover every event).

        Its ε is a valid bound too; for mixed logs basic composition of the
        PLD and RDP parts can be looser than RDP over everything, and a
        ledger's check asks it first (:meth:`fits`).  The smaller is reported.
        """
        return self._rdp_all

    def _split_epsilon(self, delta: float, pessimistic: bool) -> float:
        if not self._has_rdp():
            return self._pld_epsilon(delta, pessimistic)
        if not self._has_pld():
            return self._rdp_part.get_epsilon(delta)
        return min(
            self._pld_epsilon(f * delta, pessimistic) + self._rdp_part.get_epsilon((1.0 - f) * delta)
            for f in _SPLITS
        )

    def get_epsilon(self, delta: float) -> float:
        """An ε such that everything composed is (ε, δ)-DP: a proven upper bound.

        The PLD part is converted by the pessimistic PLDs; RDP-accounted parts
        are added at the best δ split, and then the RDP accountant's ε for the
        whole log is taken instead when it is smaller.
        """
        delta = val.check_open_unit("delta", delta)
        if not self._has_pld() and not self._has_rdp():
            return 0.0
        state = self._state()
        eps = self._known["eps"].get((state, delta))
        if eps is None:
            eps = self._direct_epsilon(delta)
        bounds = [e for c, d, e in self._known["certified"] if d == delta and _covers(c, state)]
        return float(min([eps, *bounds]))

    def _direct_epsilon(self, delta: float) -> float:
        whole = self._rdp_whole()
        try:
            eps = self._split_epsilon(delta, pessimistic=True)
        except GridTooWide:
            if whole is None:
                raise
            return float(whole.get_epsilon(delta))
        if whole is not None:
            eps = min(eps, whole.get_epsilon(delta))
        return float(eps)

    # -- the ledger's check -----------------------------------------------------------------------
    def _state(self, extra: ev.Event | None = None) -> frozenset:
        """The composition as a set of (base event, count), with ``extra`` added once."""
        if extra is None:
            return frozenset(self._counts.items())
        counts = dict(self._counts)
        for sub, n, _ in _plan(extra):
            counts[sub] = counts.get(sub, 0) + n
        return frozenset(counts.items())

    def _state_epsilon(self, state: frozenset, delta: float) -> float:
        """The ε a fresh accountant reports for ``state`` (cached per state and δ)."""
        known = self._known["eps"]
        key = (state, delta)
        if key not in known:
            acc = PLDAccountant(self.discretization, self.tail_mass)
            for event, n in state:
                acc.compose(event, n)
            if len(known) > 256:
                known.clear()
            known[key] = acc._direct_epsilon(delta)
        return known[key]

    def fits(self, event: ev.Event, epsilon: float, delta: float) -> bool:
        """Whether :meth:`get_epsilon` after composing ``event`` would be ≤ ``epsilon`` (composes nothing).

        A ledger asks this before every charge; it is decided, cheapest first, by

        1. a *certified* state that contains the state after ``event`` (every
           count at most the certified one): the larger composition's ε bounds
           the smaller one's (dropping mechanisms is post-processing), and
           :meth:`get_epsilon` reports the certified ε when it is the smaller;
        2. the RDP accountant over the whole log (:meth:`get_epsilon` reports
           the smaller of the PLD and RDP bounds, so RDP's ε ≤ budget is enough);
        3. the PLD ε of the state itself; when it fits, the state is scaled up
           (every count by one factor: doubled, else the largest fitting factor
           found by bisection) and the largest scaled state found to fit is
           certified, so a run of many similar charges computes PLDs O(log T)
           times instead of once per charge.

        It never admits a state whose reported ε exceeds the budget: every
        path compares a valid upper bound on the state's ε that
        :meth:`get_epsilon` then reports (or something smaller).
        """
        state = self._state(event)
        if any(d == delta and e <= epsilon and _covers(c, state) for c, d, e in self._known["certified"]):
            return True
        if self._rdp_all is not None:
            try:
                if self._rdp_all.fits(event, epsilon, delta):
                    return True
            except (TypeError, ValueError):
                pass
        if not self._fits_exactly(state, epsilon, delta):
            return False
        self._certify(dict(state), epsilon, delta)
        return True

    def _fits_exactly(self, state: frozenset, epsilon: float, delta: float) -> bool:
        """Whether the state's ε is ≤ ``epsilon``; a state that is not is remembered as refuted."""
        if self._state_epsilon(state, delta) <= epsilon:
            return True
        refuted = self._known["refuted"]
        refuted.append((dict(state), delta, epsilon))
        del refuted[:-8]
        return False

    def _looks_refuted(self, state: frozenset, epsilon: float, delta: float) -> bool:
        """Whether ``state`` contains a state refuted at a budget ≥ ``epsilon`` (a search hint only)."""
        return any(
            d == delta and e >= epsilon and _covers(dict(state), frozenset(r.items()))
            for r, d, e in self._known["refuted"]
        )

    def _certify(self, counts: dict, epsilon: float, delta: float, steps: int = 10) -> None:
        """Certify the largest state ⌊(1 + m/c)·counts⌋ (c the largest count, m ≤ c) found to fit.

        ``counts`` itself fits.  m = c (every count doubled) is tried first,
        then m = 1 (so a state at its budget costs two more compositions), then
        at most ``steps`` bisection steps in m; a scaled state that
        contains a state already refuted at this budget is taken to fail
        without computing it (the search only narrows; what is certified is
        always computed).
        """
        top = max(counts.values())

        def scaled(m: int) -> frozenset:
            return frozenset((e, n + (m * n) // top) for e, n in counts.items())

        def fits(m: int) -> bool:  # states containing a refuted one are not tried (only certified ones count)
            state = scaled(m)
            return not self._looks_refuted(state, epsilon, delta) and self._fits_exactly(state, epsilon, delta)

        lo, hi = 0, top
        if fits(hi):
            lo = hi
        elif fits(1):  # not doubled: bisect only when there is room for more than one step
            lo = 1
        else:
            hi = 1
        for _ in range(steps):
            if hi - lo <= 1:
                break
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        best = scaled(lo)
        certified = self._known["certified"]
        certified.append((dict(best), delta, self._state_epsilon(best, delta)))
        del certified[:-8]

    def get_epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """(optimistic, pessimistic) ε at ``delta``: the true ε of the PLD part lies between them.

        With RDP-accounted parts the optimistic value is the PLD part's
        optimistic ε alone (a lower bound for the whole composition).
        """
        delta = val.check_open_unit("delta", delta)
        if not self._has_pld():
            upper = self.get_epsilon(delta)
            return (0.0, upper)
        return float(self._pld_epsilon(delta, pessimistic=False)), self.get_epsilon(delta)

    def get_delta(self, epsilon: float) -> float:
        """A δ such that everything composed is (ε, δ)-DP: a proven upper bound."""
        epsilon = val.check_nonnegative("epsilon", epsilon)
        if not self._has_pld() and not self._has_rdp():
            return 0.0
        whole = self._rdp_whole()
        try:
            if not self._has_rdp():
                out = self._pld_delta(epsilon, pessimistic=True)
            elif not self._has_pld():
                out = self._rdp_part.get_delta(epsilon) if epsilon > 0 else 1.0
            else:
                out = min(
                    self._pld_delta(f * epsilon, True) + (self._rdp_part.get_delta((1 - f) * epsilon) if f < 1 else 1.0)
                    for f in _SPLITS
                )
        except GridTooWide:
            if whole is None:
                raise
            out = 1.0
        if whole is not None and epsilon > 0:
            out = min(out, whole.get_delta(epsilon))
        return float(min(out, 1.0))

    def get_delta_bounds(self, epsilon: float) -> tuple[float, float]:
        """(optimistic, pessimistic) δ at ``epsilon`` for the PLD part (see :meth:`get_epsilon_bounds`)."""
        epsilon = val.check_nonnegative("epsilon", epsilon)
        if not self._has_pld():
            return (0.0, self.get_delta(epsilon))
        return self._pld_delta(epsilon, pessimistic=False), self.get_delta(epsilon)

    # -- the record ------------------------------------------------------------------------------
    def parts(self) -> list[dict]:
        """Which accountant handles which event: one dict per distinct event (event, count, accountant)."""
        rows = [{"event": e.to_dict(), "count": n, "accountant": "pld"} for e, n in self._pld_events.items()]
        rows += [{"event": e.to_dict(), "count": n, "accountant": "rdp"} for e, n in self._rdp_events.items()]
        return rows

    def describe(self) -> str:
        """One line: what produced the reported guarantee."""
        n_pld, n_rdp = sum(self._pld_events.values()), sum(self._rdp_events.values())
        try:
            self._plds(True)  # (built by the ε asked before; GridTooWide: get_epsilon took RDP's over the whole log)
        except GridTooWide as exc:
            return (f"PLD accountant (h={self.discretization:g}): {exc}, so the RDP accountant over the whole log "
                    f"({n_pld + n_rdp} event(s))")
        text = f"PLD accountant (h={self.discretization:g}, pessimistic): {n_pld} event(s) by PLD"
        if n_rdp:
            kinds = sorted({type(e).__name__ for e in self._rdp_events})
            text += f", {n_rdp} by the RDP fallback ({', '.join(kinds)}), combined by basic composition"
        return text

    def __repr__(self) -> str:
        return f"PLDAccountant(discretization={self.discretization:g}, events={sum(self._pld_counts.values())})"


register_accountant("pld", PLDAccountant)
