"""Entry points of the piecewise family: :func:`minimize`, release functions and audit targets."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._validation import check_choice, check_finite_array, check_int
from ..privacy import Ledger
from ..result import DPResult
from . import mechanisms
from .solver import solve

__all__ = ["METHODS", "minimize", "release_function", "audit_target"]

#: Method names (the papers' own, lower case) → mechanism.
METHODS: dict[str, Callable[..., DPResult]] = {
    "laplace-data": mechanisms.laplace_data,
    "laplace-solution": mechanisms.laplace_solution,
    "exponential": mechanisms.exponential,
    "subgradient": mechanisms.subgradient,
}


def minimize(
    problem, epsilon: float, method: str = "subgradient", *, repetitions=None, rng=None,
    ledger=None, **options,
) -> DPResult:  # fmt: skip
    """ε-DP approximate minimizer of ``problem`` (han2014 Problem 4) by one of the four mechanisms.

    ``method`` is ``"laplace-data"``, ``"laplace-solution"``, ``"exponential"``
    or ``"subgradient"`` (see :mod:`dpopt.piecewise.mechanisms`);
    ``repetitions=R`` runs R independent repetitions in one call (``x`` has
    shape (R, d); the privacy record describes one repetition, for experiments:
    releasing all R on the same data spends R·ε, stated in ``privacy_all``); ``options`` go to the
    mechanism (e.g. ``iterations=100``,
    ``output="last"``, ``steps=5000``, ``paper_scaling=True``, ``secure_noise=True``
    for the methods in :data:`~dpopt.piecewise.mechanisms.SECURE_METHODS`).
    """
    check_choice("method", method, METHODS)
    mechanism = METHODS[method]
    return mechanism(problem, epsilon, repetitions=repetitions, rng=rng, ledger=ledger, **options)


def release_function(problem, method: str, epsilon: float, **options) -> Callable:
    """``fn(b, R, rng) -> (x (R, d), ledger)``: R independent releases of ``method`` on offsets b.

    Everything public (A, P, b_max, ``options``) is fixed from ``problem``;
    ``b`` is the private database (e.g. b and a neighbour with
    ‖b − b′‖∞ ≤ b_max).  Each call charges a fresh ledger of ``epsilon``
    and returns it with the outputs, the form
    :class:`dpopt.privacy.audit.AuditTarget` runs.
    """
    check_choice("method", method, METHODS)

    def fn(b, R: int, rng) -> tuple[np.ndarray, Ledger]:
        ledger = mechanisms.new_ledger(epsilon)
        result = minimize(
            problem.with_b(b), epsilon, method=method, repetitions=R, rng=rng, ledger=ledger,
            **options,
        )  # fmt: skip
        return result.x, ledger

    return fn


def audit_target(
    problem, method: str, epsilon: float, *, shift=None, samples: int = 20_000,
    batch_size: int = 5_000, **options,
):  # fmt: skip
    """A :class:`dpopt.privacy.audit.AuditTarget` for ``method`` on b versus b + ``shift``.

    ``shift`` must satisfy ‖shift‖∞ ≤ b_max (eq. (4)).  Default: +b_max on the
    piece active at x_opt and −b_max on every other piece.  A shift by the
    same constant in every coordinate would be useless — f moves by a
    constant, so x_opt, the perturbed LPs, the exponential-mechanism density
    and every subgradient selection are unchanged — whereas the ± pattern
    moves the scores of the active piece against the others by 2·b_max (the
    worst case of the exponential mechanism) and has L2 norm √m·b_max (the
    sensitivity of Thm 16).  Outputs (R, d) are reduced by the audit
    engine's classifier (Fisher's linear discriminant by default).
    """
    from ..privacy.audit import AuditTarget

    check_choice("method", method, METHODS)
    if shift is None:
        active = np.argmax(problem.scores(solve(problem).x))
        shift = np.full(problem.m, -problem.b_max)
        shift[active] = problem.b_max
    shift = check_finite_array("shift", shift)
    if shift.shape != (problem.m,):
        raise ValueError(f"shift must have shape ({problem.m},), got {shift.shape}")
    if np.max(np.abs(shift)) > problem.b_max * (1 + 1e-12):
        raise ValueError(f"shift must satisfy ||shift||_inf <= b_max = {problem.b_max:g} (eq. (4))")
    return AuditTarget(
        name=f"han2014-{method}",
        run=release_function(problem, method, epsilon, **options),
        data=problem.b.copy(),
        neighbour=problem.b + shift,
        description=f"han2014 {method} (epsilon={epsilon:g}) on b vs b + shift, {problem!r}",
        statistic_name="released x",
        samples=check_int("samples", samples, minimum=4),
        batch_size=check_int("batch_size", batch_size),
    )
