"""``method="auto"``: the method and regularization chosen from a measured table.

The table is ``benchmarks/bench_defaults.py`` (test accuracy of every method
against IBM diffprivlib's ``LogisticRegression`` and the majority class at
ε ∈ {0.1, 0.5, 1, 2, 5} on 398 rows of breast-cancer data, on two small
medical sets with few columns (KEEL pima, 537 rows, and saheart, 323 rows) and
on 1,000, 5,000 and 32,561 rows of UCI Adult; ``METHOD@MU`` and ``objpert~K``
entries sweep the regularization)
and ``benchmarks/bench_dpsgd_defaults.py`` (DP-SGD over epochs, rate, step size
and μ).
What it showed, with r = n·ε/d the records per coordinate of budget (n rows,
d coefficients including the intercept, ε the budget of one binary problem):

* **Pure ε-DP (δ = 0).** Objective perturbation (Chaudhuri et al. 2011) is
  the most accurate pure method wherever any pure method beats the majority
  class, *if* its regularization follows the budget.  On Adult the best Λ of
  every cell lay within a factor 3 of 0.08/r (e.g. 3e-3 at r ≈ 26–47, 3e-4 at
  r ≈ 230–300); above r = 300 the best Λ fell faster (2e-5 at r = 1,507: full
  Adult at ε = 5), so the rule is multiplied by (300/r)^0.6 there, and with
  the intercept column at :data:`OBJPERT_INTERCEPT` = 0.5 that cell reached
  diffprivlib's 0.842.  A flat K/r does not carry over to few columns: on two
  small medical sets (KEEL pima, 537 × 9; saheart, 323 × 11) 0.08/r lost to
  diffprivlib by up to 0.036, because at small n·Λ the Jacobian term of
  Algorithm 2 takes much of ε from the noise (pima: 40 % at ε = 5, 64 % at ε = 0.5).  The rule
  (:func:`objpert_regularization`) therefore holds the noise's ε times n·Λ at
  K·d (K = 0.12): Λ ≈ K/r on Adult (4 % above), up to 1.45 times that on those sets.
  Whether it beats the majority class at all depends on d more steeply than
  r says: it did on breast cancer at r = 12.8 (d = 31) but not on Adult at
  r = 18.7 (d = 108).  On breast cancer and Adult the index s = n·ε/d²
  separated every cell (learned at s ≥ 0.28, not at s ≤ 0.21; threshold 0.3).
  Below it no pure method beat the majority class (dp-nag-opt returned a
  constant classifier, objective perturbation fell below it), and diffprivlib
  was below the majority class too on every such Adult cell; there ``auto``
  returns the majority class chosen by the exponential mechanism (wrong with
  probability ≈ exp(−ε·gap/2) for a count gap between the classes) and warns.
  On pima and saheart no public index separates: their labels are weakly
  predictable (the best non-private linear model is 0.08 above the majority
  class), and objective perturbation stayed below the majority class at
  s = 0.54–2.7 (pima ε = 0.1 and 0.5, saheart ε = 0.5) where it beat it by
  0.058 on Adult (ε = 0.5, s = 1.4); diffprivlib was below it there too.

  The table (pure ε-DP, test accuracy mean ± std over 40 seeds on the small
  sets, 5 on Adult; ``<``: more than one standard error below diffprivlib or
  below the majority class; "before": Λ = 0.08/r clipped to [1e-5, 3e-3]):

  ========  =====  ========  ===========  ============  ============
  data      ε      majority  diffprivlib  auto before   auto
  ========  =====  ========  ===========  ============  ============
  cancer    1      0.608     0.632        0.594 <       0.641
  cancer    2      0.608     0.779        0.750 <       0.737 <
  cancer    5      0.608     0.856        0.867         0.850
  pima      0.5    0.636     0.595        0.576 <       0.622 <
  pima      1      0.636     0.601        0.605 <       0.645
  pima      2      0.636     0.674        0.650 <       0.668
  pima      5      0.636     0.677        0.713         0.708
  saheart   0.5    0.640     0.593        0.543 <       0.617 <
  saheart   1      0.640     0.597        0.607 <       0.643
  saheart   2      0.640     0.655        0.634 <       0.667
  saheart   5      0.640     0.695        0.669 <       0.688 <
  adult-5k  1      0.764     0.710        0.788         0.789
  adult     0.5    0.764     0.758        0.820         0.822
  adult     5      0.764     0.842        0.842         0.842
  ========  =====  ========  ===========  ============  ============

  (The other cells choose the majority class, unchanged.)  Cells marked ``<``:
  15 of 30 before, 7 of 30 now, two of them the majority class picked
  wrongly by its exponential mechanism at ε = 0.1; the per-seed 70/30 splits
  of :func:`objpert_regularization`'s sweep put breast cancer at ε = 2 at
  +0.018 over diffprivlib rather than this split's −0.042.
* **(ε, δ)-DP (δ > 0).**  These methods' relation is add/remove, under which
  n is private (it differs between neighbours), so the choice may not read n:
  the estimator first *releases* the count, N̂ = n + Lap(1/ε_c) with
  ε_c = :data:`COUNT_SHARE`·ε (sensitivity 1, charged to the fit's ledger),
  and the method runs on the rest (1 − COUNT_SHARE)·ε by basic composition.
  The choice, the regularization, DP-SGD's plan and the method's public
  normalizer (its ``n_public``) are then functions of N̂, d, ε and δ only:
  released or public quantities.  With r̂ = N̂·ε/d:

  - r̂ < 10: the private majority class (the exponential mechanism, pure ε-DP
    under add/remove too) with a :class:`UtilityWarning` stating N̂, ε and d.
    Every (ε, δ) method fell below the majority class at r ≤ 4.63 (DP-BLSGD
    on Adult 1k at ε = 0.1 and 0.5, 5k at ε = 0.1: 0.649, 0.762, 0.757
    against 0.764), and DP-BLSGD's plan of 200 iterations at q = 0.02 fell
    below it on breast cancer at ε = 0.5 (r = 6.3: 0.561 against 0.608); it
    beat it from r = 9.1 on (Adult 1k at ε = 1: 0.777).
  - 10 ≤ r̂ < 20: DP-BLSGD (chen2020 Algorithm 2, its own defaults, μ = 1e-3),
    the steadier method there (breast cancer at ε = 1, r = 12.6: 0.751 against
    DP-SGD's 0.683).
  - r̂ ≥ 20: DP-SGD with the measured plan of :func:`dpsgd_plan` and μ of
    :func:`dpsgd_regularization`, the most accurate (ε, δ) method on every such
    cell (breast cancer at ε = 5: 0.897 against DP-BLSGD's 0.731; Adult 1k at
    ε = 5: 0.812 against 0.787; full Adult at ε = 5: 0.844 against 0.821 and
    diffprivlib's 0.842) and 2–4× cheaper than DP-BLSGD there.

  The table over 5 seeds (``bench_defaults.py --methods auto-delta``, rerun with
  these thresholds; auto δ = 1e-5 / diffprivlib, majority 0.608 on breast cancer
  and 0.764 on Adult): breast cancer 0.608/0.522, 0.608/0.588, 0.719/0.623,
  0.891/0.771, 0.923/0.848 at ε = 0.1, 0.5, 1, 2, 5 (at ε = 1 auto's std is
  0.113, diffprivlib's 0.202); Adult 1k 0.764, 0.764, 0.771, 0.786, 0.818
  against diffprivlib's 0.628–0.753; Adult 5k 0.764, 0.801, 0.822, 0.830, 0.836
  against 0.646–0.815; full Adult 0.818, 0.836, 0.839, 0.841, 0.844 against
  0.696, 0.758, 0.773, 0.827, 0.842.

  The count's noise flips the choice only near a threshold, where both
  choices scored alike (at Adult 5k, ε = 0.1, r = 4.63, the flip needs
  Lap > 1,480 records: probability 0.5·e^{−2.96} ≈ 2.6 % at ε_c = 0.002).

For the pure methods the relation is replace-one, under which n is public, so
choosing by r reveals nothing the guarantee does not already assume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.optimize import brentq

from ..linesearch.baselines.dp_sgd import MARGIN_CURVATURE

__all__ = [
    "AutoChoice",
    "choose",
    "PURE_LEARNABLE_S",
    "APPROX_LEARNABLE_R",
    "APPROX_SGD_R",
    "COUNT_SHARE",
    "objpert_regularization",
    "outpert_regularization",
    "OBJPERT_INTERCEPT",
    "dpsgd_regularization",
    "dpsgd_plan",
]

#: below this s = nε/d² no pure ε-DP method beat the majority class in the table
PURE_LEARNABLE_S = 0.3
#: below this r̂ = N̂·ε/d (N̂ the released count) DP-BLSGD was at or below the majority class on Adult
APPROX_LEARNABLE_R = 10.0
#: DP-SGD's measured defaults (``benchmarks/bench_dpsgd_defaults.py``; see :func:`dpsgd_plan`)
DPSGD_REGULARIZATION_RATE = 0.01
DPSGD_REGULARIZATION_RANGE = (1e-5, 1e-3)
DPSGD_BATCH = 80.0
DPSGD_RATE_RANGE = (0.05, 1.0)
DPSGD_STEPS_RATE = 16.0
DPSGD_STEPS_RANGE = (800, 6400)
DPSGD_LR_FACTOR_MAX = 4.0
#: from this r̂ on DP-SGD (with :func:`dpsgd_plan`) beat DP-BLSGD; below it DP-BLSGD was the steadier
APPROX_SGD_R = 20.0
#: share of an add/remove fit's ε spent on the released record count N̂ (Laplace, sensitivity 1)
COUNT_SHARE = 0.02
#: objective perturbation's noise-to-regularization constant K of :func:`objpert_regularization`
#: (``benchmarks/bench_defaults.py --methods objpert~K``): Λ = K/r counting only the ε that reaches the noise
OBJPERT_REGULARIZATION_RATE = 0.12
#: the range the rule was measured on (the sweeps' Λ reached 0.17 on Adult 1k at ε = 0.1)
OBJPERT_REGULARIZATION_RANGE = (1e-5, 0.1)
#: above this r the best Λ fell faster than 0.08/r: (300/r)^0.6 more (2e-5 at r = 1,507, full Adult at ε = 5)
OBJPERT_STEEPER_FROM = 300.0
OBJPERT_STEEPER_POWER = 0.6
#: objective perturbation's intercept column a (rows [x/B, a]/√(1 + a²)): with a = 0.5 instead of 1 the
#: features keep 89 % of their scale instead of 71 % inside the same row bound, so the same noise b moves
#: the feature coefficients 21 % less and the intercept less too (full Adult, ε = 5: 0.8401 -> 0.8413 at
#: Λ = 5.3e-5 and 0.8419 at Λ = 2e-5, 3 seeds)
OBJPERT_INTERCEPT = 0.5
#: output perturbation's best Λ was within ×3 of 0.3/r (``benchmarks/bench_defaults.py --methods outpert@MU``,
#: Adult 1k/5k/full, r = 1-490): its noise norm is d·Δ₂/ε = 2/(r·Λ), so a fixed Λ = 1e-3 sent ε = 0.1 on full
#: Adult (r = 30) to 0.39-0.58 accuracy, below the majority class; at Λ = 0.3/r = 0.01 it scored 0.768
OUTPERT_REGULARIZATION_RATE = 0.3
#: the same for its Gaussian noise (δ = 1e-5, Adult 5k and full, r = 5-610): best Λ within ×3 of 0.1/r
#: (full Adult at r = 30: 0.779 at Λ = 3e-3 against 0.764 at 0.01; noise norm grows like √d·σ, not d)
OUTPERT_GAUSSIAN_REGULARIZATION_RATE = 0.1
#: the range: above 0.3 (r < 1) every Λ gave the majority class or less; below chen2020's 1e-3 the gain on
#: Adult was small (r = 609, Gaussian: 0.830 at 3e-4, 0.822 at 1e-3) and on well-separated low-d data
#: (three 2-d clusters, r = 667) Λ = 4.5e-4 scored 0.67 where 1e-3 scored over 0.8, so the rule only raises Λ
OUTPERT_REGULARIZATION_RANGE = (1e-3, 0.3)


@dataclass(frozen=True)
class AutoChoice:
    """What ``method="auto"`` fits: the method, its regularization (None: the estimator's) and, when it is
    the majority class, why (``reason``: the budget is too small to learn at this size, with the numbers)."""

    method: str
    regularization: float | None
    reason: str | None = None

    @property
    def warning(self) -> str | None:
        """The warning ``method="auto"`` raises (None: none): the reason and what it returns instead."""
        return None if self.reason is None else self.reason + _MAJORITY_ADVICE

    def warning_for(self, method: str) -> str | None:
        """The warning of a fit of ``method`` named by the user on the problem of this choice: the
        majority-class warning's numbers when the table would have returned the majority class, else None."""
        if self.reason is None or method == "majority":
            return None
        return (f"{self.reason}; fitting {method} as asked, but at this budget method='auto' returns the majority "
                "class. Raise epsilon, give more rows or reduce d.")


def objpert_regularization(n: float, d: int, epsilon: float, curvature: float = MARGIN_CURVATURE, *,
                           rate: float = OBJPERT_REGULARIZATION_RATE) -> float:
    """Objective perturbation's Λ for n rows (of norm ≤ 1), d coefficients, budget ε and a loss with ℓ'' ≤ c
    (``rate``: the constant K, for the benchmark's sweeps).

    Chaudhuri et al. 2011 Algorithm 2 spends ε_J = 2·log(1 + c/(nΛ)) of ε on the Jacobian and the rest,
    ε' = ε − ε_J, on the noise b (norm ≈ 2d/ε'), which moves the minimizer by about ‖b‖/(nΛ).  The rule
    holds that ratio at the measured constant: m = nΛ solves (ε − 2·log(1 + c/m))·m = K·d with
    K = :data:`OBJPERT_REGULARIZATION_RATE` — Λ = K/r (r = nε/d) where the Jacobian's share is small
    (logistic loss, c = 1/4, on Adult, d = 108: 4 % above K/r, 1 + 2c/(K·d) for small ε), larger where
    it is not (few columns, small n: 1.45 times K/r on pima).  Times (300/r)^0.6 above r = 300, clipped to
    the measured range [1e-5, 0.1].

    Measured (test accuracy minus diffprivlib's, per-seed 70/30 splits, ε = 0.5, 1, 2, 5): with Λ = 0.08/r,
    the rule of the first table, pima (537 × 9) lost by up to 0.036 and saheart (323 × 11) by up to 0.032,
    each several standard errors; with this rule at K = 0.12 no cell lost by more than one standard
    error (pima −0.007 ± 0.007 at ε = 2, saheart −0.005 ± 0.004 at ε = 5) while breast cancer
    (398 × 31), which preferred 0.08/r, kept +0.014 to +0.083; a flat 0.16/r scored the same on pima and
    saheart and 0.008-0.012 lower on breast cancer.
    """
    low, high = OBJPERT_REGULARIZATION_RANGE
    target = rate * d

    def excess(m: float) -> float:  # increasing in m
        return (epsilon - 2.0 * math.log1p(curvature / m)) * m - target

    # ε' = 0 there (excess = −K·d < 0); for ε > 1,400, where e^(ε/2) overflows, a point just above it
    lo = curvature / math.expm1(min(epsilon / 2.0, 700.0))
    hi = lo + (target + 2.0 * curvature) / epsilon
    while excess(hi) < 0.0:
        hi *= 2.0
    m = brentq(excess, lo, hi, xtol=1e-12 * hi)
    r = n * epsilon / d
    steeper = min(1.0, OBJPERT_STEEPER_FROM / r) ** OBJPERT_STEEPER_POWER
    return float(min(max(m / n * steeper, low), high))


def outpert_regularization(r: float, *, gaussian: bool = False) -> float:
    """Output perturbation's Λ at r = n·ε/d: 0.3/r (0.1/r for Gaussian noise) clipped to [1e-3, 0.3].

    Chaudhuri et al. 2011's noise has norm ≈ d·Δ₂/ε = 2/(r·Λ) (Δ₂ = 2/(nΛ), Corollary 8) while the
    minimizer's norm shrinks only like 1/Λ once Λ is large, so Λ must grow as r falls.
    """
    low, high = OUTPERT_REGULARIZATION_RANGE
    rate = OUTPERT_GAUSSIAN_REGULARIZATION_RATE if gaussian else OUTPERT_REGULARIZATION_RATE
    return float(min(max(rate / r, low), high))


def dpsgd_regularization(r: float) -> float:
    """DP-SGD's μ at r = N·ε/d: 0.01/r clipped to the measured range [1e-5, 1e-3]."""
    low, high = DPSGD_REGULARIZATION_RANGE
    return float(min(max(DPSGD_REGULARIZATION_RATE / r, low), high))


def dpsgd_plan(count: float, d: int, epsilon: float, regularization: float) -> dict:
    """DP-SGD's sampling rate q, step count T and step size η for N = ``count`` records (released
    or declared), d coefficients, budget ε and the regularization μ it runs with.

    With r = N·ε/d: q = 80/N within [0.05, 1] (a batch of at least 80 expected records, 5 % of
    the rows on large data); T = 16·r within [800, 6,400]; η = k/(¼ + μ), DP-SGD's own 1/L step
    for rows of norm ≤ 1 times k = 16·r/6,400 within [1, 4], so that the distance η·T the run can
    travel keeps growing with r once T is capped (measured: at r = 1,507 on Adult, T = 6,400 with
    k = 4 scored 0.844, with k = 1 0.841; at r ≤ 50, T = 800 with k = 1 was best).
    """
    r = count * epsilon / d
    rate = min(1.0, max(DPSGD_RATE_RANGE[0], DPSGD_BATCH / count))
    low, high = DPSGD_STEPS_RANGE
    steps = int(round(min(max(DPSGD_STEPS_RATE * r, low), high)))
    factor = min(max(DPSGD_STEPS_RATE * r / high, 1.0), DPSGD_LR_FACTOR_MAX)
    return {"rate": rate, "steps": steps, "lr": factor / (MARGIN_CURVATURE + regularization)}


def choose(n: float, d: int, epsilon: float, delta: float, curvature: float = MARGIN_CURVATURE) -> AutoChoice:
    """The table's choice for one binary problem of n rows, d coefficients and budget (ε, δ)
    (``curvature``: the loss's bound on ℓ'', for objective perturbation's Λ).

    For δ > 0 (add/remove relation) ``n`` must be a released or declared count
    (N̂ of the module docstring), never the data's own n; ``epsilon`` is what
    the method spends (after the count's share).
    """
    r = n * epsilon / d
    if delta > 0:
        if r >= APPROX_SGD_R:
            return AutoChoice("dp-sgd", dpsgd_regularization(r))
        if r >= APPROX_LEARNABLE_R:
            return AutoChoice("dp-blsgd", None)
        return _majority(
            f"N*epsilon/d = {n:.1f}*{epsilon:g}/{d} = {r:.3g} < {APPROX_LEARNABLE_R:g} (N the record count released "
            f"first with {COUNT_SHARE:.0%} of the budget, epsilon what is left for one binary problem)",
            "(epsilon, delta)",
        )
    s = r / d
    if s >= PURE_LEARNABLE_S:
        return AutoChoice("objpert", objpert_regularization(n, d, epsilon, curvature))
    return _majority(f"n*epsilon/d^2 = {n}*{epsilon:g}/{d}^2 = {s:.3g} < {PURE_LEARNABLE_S:g}", "pure epsilon-DP")


def _majority(numbers: str, kind: str) -> AutoChoice:
    """The private majority class, with the warning that states the numbers below the table's threshold."""
    reason = (f"the budget is too small to learn a linear model at this size: {numbers}, below which no {kind} "
              "method beat the majority class in dpopt's measurements")
    return AutoChoice("majority", None, reason)


_MAJORITY_ADVICE = (
    "; returning the majority class chosen by the exponential mechanism (a constant "
    "predictor). Raise epsilon, give more rows, reduce d, or set method= to fit all coefficients."
)
