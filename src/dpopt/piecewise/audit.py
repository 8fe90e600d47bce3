"""Audit targets for han2014 mechanisms 1, 2 and 4 on worst-case neighbouring offsets b.

Each factory returns an :class:`~dpopt.privacy.audit.AuditTarget` built with
:func:`dpopt.piecewise.audit_target`: ``run(b, R, rng)`` makes R releases of
the mechanism in one batched call of :func:`dpopt.piecewise.minimize` and
returns them with the ledger they charged (the claim is what that ledger
spent).  The released x is one-dimensional, so it is its own audit statistic.

The problem: Example 5 in one dimension, f(x) = |x − y| = max(x − y, −x + y)
on P = [−c, c] with c = b_max/2: pieces a = (+1, −1), private offsets
b = (−y, y).  The neighbour moves the private centre y by b_max:
b′ = b + b_max·(−1, +1), so ‖b − b′‖∞ = b_max (eq. (4)).  This pair is the
worst case of each mechanism's proof, unlike changing one coordinate of b:

* mechanism 1 (Thm 16): ‖b − b′‖₂ = √2·b_max, the full L2 sensitivity √m·b_max
  (one changed coordinate reaches only b_max, a factor √m short), and the
  shift lies along (−1, 1), the only direction of b the minimizer
  x_opt = clip((b₂ − b₁)/2) depends on.  With y = −c versus y′ = +c the
  perturbed minimizer sits at the atom x = c with probabilities 1/2 (D′) and
  P(t ≥ ε·scale) (D), t one coordinate of the 2-D vector-Laplace noise: a
  pair privacy loss of 0.74 at ε = 1, the most any event of x shows.
* mechanism 2 (Thm 9): x_opt moves from −c to +c, the full diameter of P.
  Laplace noise of scale diam(P)/ε and the projection onto P give the atom
  x = c probabilities 1/2 (D′) and e^{−ε}/2 (D): the pair's privacy loss is
  exactly the claimed ε, so the audit can approach the claim.
* mechanism 4 (Algorithms 1–2): the two scores a_iᵀx + b_i move by b_max in
  *opposite* directions, the only case in which the exponential mechanism's
  2Δu denominator is needed (one changed score moves a selection probability
  by at most e^{ε/(2k)}).  With the centre y = 2·b_max outside P, the wrong
  piece (a = +1, away from y) is drawn rarely, and its likelihood ratio
  between D and D′ (y′ = 3·b_max) is near the per-step e^{ε/k}.  Three
  iterations with step 0.1 from x = 0, output the last iterate x(4) ∈
  {−0.3, −0.1, 0.1, 0.3}; the pair's exact privacy loss, from the law of the
  three draws, is 0.70 at ε = 1.

A shift of b by the same constant in every coordinate would be useless for
all three: f moves by a constant and no mechanism's output distribution changes.

The printed sign of Algorithm 1, P(i*) ∝ exp(−ε u/(2b_max)), is *as private*
as the correct one (−u has the same sensitivity), so no audit can flag it; it
is a utility bug, caught by a test of the selection probabilities
(``tests/piecewise/test_audit.py``).

Register them with :func:`dpopt.experiments.audits.register` (names
``"piecewise-laplace-data"``, ``"piecewise-laplace-solution"``,
``"piecewise-subgradient"``).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_choice
from ..privacy.audit import AuditTarget
from .api import audit_target
from .polytope import Polytope
from .problem import PiecewiseAffineProblem

__all__ = [
    "AUDIT_SETTING",
    "AUDITED_METHODS",
    "audit_problem",
    "neighbour_shift",
    "piecewise_audit_target",
]

#: Mechanisms with an exact ε-DP guarantee (mechanism 3 is exact only in the MCMC limit).
AUDITED_METHODS = ("laplace-data", "laplace-solution", "subgradient")

#: ε and b_max of every target; per method the private centre y of D (D′ has y + b_max),
#: the runs per input (mechanism 1 solves one LP per run) and the mechanism's options.
AUDIT_SETTING = {
    "epsilon": 1.0,
    "b_max": 1.0,
    "centre": {"laplace-data": -0.5, "laplace-solution": -0.5, "subgradient": 2.0},
    "samples": {"laplace-data": 2_000, "laplace-solution": 200_000, "subgradient": 200_000},
    "options": {
        "laplace-data": {},
        "laplace-solution": {},
        "subgradient": {"iterations": 3, "step_size": 0.1, "output": "last"},
    },
}


def audit_problem(centre: float) -> PiecewiseAffineProblem:
    """f(x) = |x − y| on P = [−b_max/2, b_max/2] with private centre y = ``centre`` (Example 5, d = 1)."""
    b_max = AUDIT_SETTING["b_max"]
    return PiecewiseAffineProblem.linf_norm(
        [float(centre)], center_change=b_max, polytope=Polytope.cube(b_max / 2.0, 1)
    )


def neighbour_shift() -> np.ndarray:
    """b′ − b = b_max·(−1, +1): the centre y moves by b_max (‖b′ − b‖∞ = b_max, eq. (4))."""
    return AUDIT_SETTING["b_max"] * np.array([-1.0, 1.0])


def piecewise_audit_target(method: str, *, samples: int | None = None) -> AuditTarget:
    """Audit target of han2014 mechanism ``method`` on the worst-case pair of the module docstring."""
    check_choice("method", method, AUDITED_METHODS)
    s = AUDIT_SETTING
    samples = s["samples"][method] if samples is None else samples
    return audit_target(
        audit_problem(s["centre"][method]), method, s["epsilon"], shift=neighbour_shift(),
        samples=samples, batch_size=samples, **s["options"][method],
    )  # fmt: skip
