"""Audit targets of Algorithm 3's two releases (worst case, kusner2015 §5).

Each target runs :func:`~dpopt.bayesopt.algorithms.optimize` itself (GP-UCB
and the release through the mechanisms) on a *validation-score table*: the
data D is the vector f_V(w_λ) over Λ, and D′ the table of a neighbouring
validation set at the bound the proof must cover (as the mechanism targets of
:mod:`dpopt.experiments.audits` audit on query answers):

- ``bayesopt-alg3-score``: every entry of D′ exceeds D's by Δ_f of Theorem 7,
  so max_t f_V(w_{λ_t}) moves by exactly Δ_f whichever candidates GP-UCB visits;
- ``bayesopt-alg3-lambda``: two candidates whose scores move by the per-record
  bound in opposite directions (D = (r, 5r), D′ = (0, 6r)), the exponential
  mechanism's worst case: P_D(0)/P_D′(0) = (1 + e^{3ε})/(1 + e^{2ε}), ln 0.92 at
  ε = 1 (a twin drawing half the noise has ln((1 + e⁶)/(1 + e⁴)) = 1.98).

GP-UCB is deterministic given the table, so one call of ``optimize`` with
``repetitions=R`` draws the R releases of a chunk in one batch.
"""

from __future__ import annotations

import numpy as np

from ..privacy import Ledger
from ..privacy.audit import AuditTarget
from .algorithms import RELATION, optimize
from .bounds import per_record_term, score_sensitivity_alg3
from .space import CandidateSet

__all__ = ["ALG3_SETTING", "alg3_problem", "alg3_score_target", "alg3_lambda_target"]

#: ε, validation size m, L, g*, λ range of Λ, |Λ|, GP-UCB steps T.
ALG3_SETTING = {"epsilon": 1.0, "validation_size": 10, "lipschitz": 0.1, "g_star": 1.0,
                "lambda_range": (0.5, 1.0), "n_iter": 4}

# The validation sets differ in one record (RELATION, replace one: optimize refuses another relation); the tables
# are at Theorem 7's bound.


def alg3_problem(n_candidates: int) -> tuple[CandidateSet, dict]:
    """Λ (``n_candidates`` regularization values spread over the λ range) and optimize's keywords."""
    s = ALG3_SETTING
    lam = np.linspace(*s["lambda_range"], n_candidates)
    candidates = CandidateSet.grid(lam, names=("regularization",))
    kwargs = dict(algorithm=3, epsilon=s["epsilon"], n_iter=s["n_iter"], regularization=lam,
                  lipschitz=s["lipschitz"], g_star=s["g_star"], validation_size=s["validation_size"])
    return candidates, kwargs


def _target(name: str, release: str, table, table_prime, output: str, **fields) -> AuditTarget:
    candidates, kwargs = alg3_problem(len(table))

    def run(values, repetitions, rng):
        ledger = Ledger(kwargs["epsilon"], relation=RELATION)
        result = optimize(lambda i: values[i], candidates, release=release, ledger=ledger, rng=rng,
                          repetitions=repetitions, **kwargs)
        return np.asarray(result.fun if output == "fun" else result.info["index"], dtype=float), ledger

    return AuditTarget(name, run, np.asarray(table, float), np.asarray(table_prime, float), **fields)


def alg3_score_target() -> AuditTarget:
    """Algorithm 3's released score, ε = 1, on tables whose maxima differ by exactly Δ_f."""
    s = ALG3_SETTING
    delta_f = score_sensitivity_alg3(s["validation_size"], lipschitz=s["lipschitz"], g_star=s["g_star"],
                                     lambda_min=s["lambda_range"][0], lambda_max=s["lambda_range"][1])
    table = np.linspace(0.6, 0.7, 8)
    return _target("bayesopt-alg3-score", "score", table, table + delta_f, "fun",
                   statistic_name="released score", samples=400_000)


def alg3_lambda_target() -> AuditTarget:
    """Algorithm 3's released λ, ε = 1, two candidates moved by the per-record bound in opposite directions."""
    s = ALG3_SETTING
    r = per_record_term(s["validation_size"], lipschitz=s["lipschitz"], g_star=s["g_star"],
                        lambda_min=s["lambda_range"][0])
    return _target("bayesopt-alg3-lambda", "lambda", np.array([1.0, 5.0]) * r, np.array([0.0, 6.0]) * r,
                   "index", statistic_name="released index", samples=400_000)
