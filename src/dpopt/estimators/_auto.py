"""``method="auto"``: the method and regularization chosen from a measured table.

The table is ``benchmarks/bench_defaults.py`` (test accuracy of every method
against IBM diffprivlib's ``LogisticRegression`` and the majority class at
ε ∈ {0.1, 0.5, 1, 2, 5} on 398 rows of breast-cancer data and on 1,000, 5,000
and 32,561 rows of UCI Adult; ``regularization_sweep`` in the same file).
What it showed, with r = n·ε/d the records per coordinate of budget (n rows,
d coefficients including the intercept, ε the budget of one binary problem):

* **Pure ε-DP (δ = 0).** Objective perturbation (Chaudhuri et al. 2011) is
  the most accurate pure method wherever any pure method beats the majority
  class, *if* its regularization follows the budget: the best Λ on every
  cell lay within a factor 3 of Λ = 0.08/r (e.g. 3e-3 at r ≈ 26–47, 3e-4 at
  r ≈ 230–300, 3e-5 at r ≈ 1,500), which also lifts it above diffprivlib at
  ε = 2–5 on full Adult where the old fixed Λ = 1e-3 capped it at 0.823.
  Whether it beats the majority class at all depends on d more steeply than
  r says: it did on breast cancer at r = 12.8 (d = 31) but not on Adult at
  r = 18.7 (d = 108).  The index that separated every measured cell is
  s = n·ε/d² (learned at s ≥ 0.28, not at s ≤ 0.21; threshold 0.3).  Below it
  no pure method beat the majority class (dp-nag-opt returned a constant
  classifier, objective perturbation fell below it), and diffprivlib was
  below the majority class too on every such Adult cell; there ``auto`` returns the
  majority class chosen by the exponential mechanism (wrong with probability
  ≈ exp(−ε·gap/2) for a count gap between the classes) and warns.
* **(ε, δ)-DP (δ > 0).** DP-BLSGD was the most accurate method on every cell
  but two (Adult at r < 5, where every method was at or below the majority
  class).  Its neighbouring relation is add/remove, under which n is not
  public, so the choice may not depend on n: ``auto`` is DP-BLSGD whatever
  the size, and a warning names the measured risk when r < 5 (computed for
  the warning only, never for a choice).

For the pure methods the relation is replace-one, under which n is public, so
choosing by r reveals nothing the guarantee does not already assume.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AutoChoice", "choose", "PURE_LEARNABLE_S", "APPROX_LEARNABLE_R", "objpert_regularization"]

#: below this s = nε/d² no pure ε-DP method beat the majority class in the table
PURE_LEARNABLE_S = 0.3
#: below this r every (ε, δ) method was at or below the majority class on Adult
APPROX_LEARNABLE_R = 5.0
#: objective perturbation's best regularization was within ×3 of this constant over r
OBJPERT_REGULARIZATION_RATE = 0.08
#: the range the rule was measured on
OBJPERT_REGULARIZATION_RANGE = (1e-5, 3e-3)


@dataclass(frozen=True)
class AutoChoice:
    """What ``method="auto"`` fits: the method, its regularization (None: the estimator's)
    and the warning to raise (None: none)."""

    method: str
    regularization: float | None
    warning: str | None


def objpert_regularization(r: float) -> float:
    """Λ = 0.08/r clipped to the measured range [1e-5, 3e-3]."""
    low, high = OBJPERT_REGULARIZATION_RANGE
    return float(min(max(OBJPERT_REGULARIZATION_RATE / r, low), high))


def choose(n: int, d: int, epsilon: float, delta: float) -> AutoChoice:
    """The table's choice for one binary problem of n rows, d coefficients and budget (ε, δ)."""
    r = n * epsilon / d
    if delta > 0:
        warning = None
        if r < APPROX_LEARNABLE_R:
            warning = (
                f"the budget is small for these data: n*epsilon/d = {n}*{epsilon:g}/{d} = {r:.3g} < "
                f"{APPROX_LEARNABLE_R:g}, below which no (epsilon, delta) method beat the majority class "
                "in dpopt's measurements; expect a near-constant classifier (raise epsilon, or reduce d)"
            )
        return AutoChoice("dp-blsgd", None, warning)
    s = r / d
    if s >= PURE_LEARNABLE_S:
        return AutoChoice("objpert", objpert_regularization(r), None)
    message = (
        f"the budget is too small to learn a linear model at this size: n*epsilon/d^2 = {n}*{epsilon:g}/{d}^2 "
        f"= {s:.3g} < {PURE_LEARNABLE_S:g}, below which no pure epsilon-DP method beat the majority class "
        "in dpopt's measurements"
    )
    return AutoChoice(
        "majority",
        None,
        message + "; returning the majority class chosen by the exponential mechanism (a constant "
        "predictor). Raise epsilon, give more rows, reduce d, or set method= to fit all coefficients.",
    )
