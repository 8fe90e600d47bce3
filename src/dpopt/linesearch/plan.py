"""The run's plan: initial budgets under which ``planned_iterations`` iterations spend the budget.

chen2020 §5.4 sets the initial budgets from ε_iter = ε/(2·50): ρ_grad = ε_iter²/2 and
ε_BT = ε_iter (ρ_BT = ε_iter²/2 for the Gaussian search).  That split counts
each iteration as if it cost ε_iter twice under basic composition; the
run's ledger composes Poisson-amplified RDP instead (§4.3, Lemma 4 and the
exact subsampled Gaussian), under which one iteration at q = 0.1 costs a
small fraction of that, so the loop — which runs until the budget is spent —
made 1,450–3,124 iterations at ε = 0.4 on Adult, not 50.

Here ε_iter is *calibrated* instead: the largest ε_iter (same ratio of the
two budgets as §5.4) such that ``planned_iterations`` iterations — one
gradient and one line search each, amplified as the oracle charges them —
plus a reserve of :data:`RESERVE` for CHEB's budget increases, plus the
noisy record count when one is released first, fit the budget at one
Rényi order α.  That α is fixed as the ledger's filter order (Feldman &
Zrnic 2021, Thm 3.1; see :mod:`dpopt.linesearch.algorithms`).  Everything
here is computed from public quantities (ε, δ, q, C_grad, C_obj, the
planned count), so the plan reveals nothing about the data.  The loop
makes the planned iterations: a CHEB retry is made only if it leaves the
iterations still planned their budgets, and after a failed search the
budgets in force shrink (as ε_iter) if the rest no longer fits
(:func:`fit_remaining`).  It stops earlier only if a ledger refuses the
next iteration (a ledger shared with other runs, a parent's budget).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..oracles import gaussian_sigma, line_search_event
from ..privacy import PoissonSampler
from ..privacy import events as ev
from ..privacy.rdp import DEFAULT_ORDERS, rdp_budget_per_order, rdp_curve

__all__ = ["Plan", "plan_run", "fit_remaining", "RESERVE", "PLAN_ORDERS"]

#: The integer orders α ≥ 2 of :data:`~dpopt.privacy.rdp.DEFAULT_ORDERS` (chen2020 Lemma 4's
#: orders): the grid of a ledger DP-BLSGD makes, and the candidates for its filter order.
PLAN_ORDERS: tuple = tuple(float(a) for a in DEFAULT_ORDERS if a >= 2.0 and a == round(a))

#: Share of the planned composition held back for CHEB's extra gradients and line searches
#: (each failed search costs one more of each, at budgets that grow by 1 + ξ).  Measured with
#: benchmarks/bench_linesearch_plan.py (Adult and synthetic data, the default plan): searches
#: failed in about 2 % of iterations.
RESERVE = 0.1
#: Relative precision of the calibrated ε_iter (log scale): a smaller ε_iter only wastes budget.
_LOG_TOL = 1e-4
#: The same for :func:`fit_remaining`, which runs after every failed search (1 % is plenty there).
_RESCALE_TOL = 1e-2
#: The slope of log(one iteration's RDP at the filter order) in log λ that :func:`fit_remaining`'s
#: first guess assumes (RDP ∝ λ², see :func:`_shrink`), and the secant steps it takes at most.
_RESCALE_SLOPE = 2.0
_SECANT_STEPS = 4
#: Without a guess, :func:`fit_remaining` brackets from λ = 1 when gap(λ = 1) < −this: fewer than
#: e^{−1} of the wanted iterations fit, at a cliff (:func:`_shrink`), where secant steps creep, or
#: for a shrink far outside the power law's reach.
_SECANT_REACH = 1.0
#: :func:`fit_remaining`'s bracketing step (log λ), and the largest first step of its secant.
_RESCALE_STEP = math.log(1.25)


@dataclass(frozen=True)
class Plan:
    """Planned iterations, the initial budgets (ρ_grad, ε_BT or ρ_BT), ε_iter and the filter order."""

    iterations: int
    rho_grad: float
    budget_bt: float
    eps_iter: float | None
    order: float

    def describe(self) -> dict:
        return {"planned_iterations": self.iterations, "eps_iter": self.eps_iter,
                "filter_order": self.order}


def _budgets(hyper, eps_iter: float) -> tuple[float, float]:
    """(ρ_grad, ε_BT or ρ_BT) for ε_iter, the §5.4 ratio; given values are kept."""
    rho = hyper.rho_grad if hyper.rho_grad is not None else 0.5 * eps_iter**2
    if hyper.budget_bt is not None:
        return rho, hyper.budget_bt
    return rho, (eps_iter if hyper.noise == "laplace" else 0.5 * eps_iter**2)


def _room(ledger, epsilon: float, delta: float, prior) -> tuple[np.ndarray, np.ndarray]:
    """(orders, RDP room) the planned iterations may use: B(α) less what is spent and ``prior``.

    A ledger that is already a filter offers its one order; otherwise the
    integer orders ≥ 2 of its grid (Lemma 4's orders; cheap curves).
    """
    if ledger.notion != "rdp":  # (a run given a ledger and no epsilon spends that ledger itself: its filter)
        raise ValueError(f"the line-search methods spend through a Renyi filter: give an RDP ledger "
                         f"(accountant='rdp') or epsilon and delta with this one, got a {ledger.notion!r} ledger")
    orders = np.asarray(ledger.accountant.orders, dtype=float)
    if ledger.filter_order is not None:
        orders = np.array([ledger.filter_order])
    else:
        integer = orders[(orders >= 2.0) & (orders == np.round(orders))]
        orders = integer if integer.size else orders
    spent = ledger.accountant
    room = rdp_budget_per_order(orders, epsilon, delta)
    if ledger.events:
        room = room - np.array([spent.rdp[spent.order_index(a)] for a in orders])
    if prior is not None:
        room = room - rdp_curve(prior, orders)
    return orders, room


def _step(hyper, rate: float, rho: float, bt: float) -> ev.Event:
    """One planned iteration: a Gaussian gradient and a line search, amplified as the oracle charges them.

    The RDP depends on the noise multipliers only (σ/C_grad = 1/√(2ρ), ε_BT), so
    the clipping thresholds, which DP-BLSGD-AC shrinks, do not enter (C = 1 here).
    """
    wrap = PoissonSampler(rate).wrap
    return ev.Composed((wrap(ev.Gaussian(gaussian_sigma(rho, 1.0), 1.0)),
                        wrap(line_search_event(bt, 1.0, hyper.noise))))


def _fits(hyper, rate, orders, room, rho, bt, event_of=None) -> np.ndarray:
    """Per order, how many iterations at (ρ, bt) fit ``room`` (0 where the order is unusable);
    ``event_of(ρ, bt)`` builds one iteration's event (default :func:`_step`)."""
    event = _step(hyper, rate, rho, bt) if event_of is None else event_of(rho, bt)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(room > 0.0, room / rdp_curve(event, orders), 0.0)
    return np.nan_to_num(n, nan=0.0)


def _largest(gap, start: float, cap: float | None = None, *, step: float = math.log(4.0),
             tol: float = _LOG_TOL) -> float | None:
    """The largest u (≤ ``cap``) with ``gap(u) ≥ 0`` for a decreasing ``gap``, to ``tol``, bracketing
    in steps of ``step``; None if there is none within 40 (log units) below ``start``.

    ``gap`` is evaluated once per point (the bracket's ends are asked again by the bracketing
    and by Brent's method, and its root once more at the end; each value costs an RDP curve).
    """
    values: dict = {}
    plain = gap

    def gap(u: float) -> float:
        value = values.get(u)
        if value is None:
            value = values[u] = plain(u)
        return value

    lo = start if cap is None else min(start, cap)
    floor = lo - 40.0
    while gap(lo) < 0.0:
        if lo < floor:
            return None
        lo -= step
    if cap is not None and lo >= cap:
        return cap
    hi = lo + step if cap is None else min(lo + step, cap)
    while gap(hi) >= 0.0:
        if cap is not None and hi >= cap:
            return cap
        lo, hi = hi, hi + step if cap is None else min(hi + step, cap)
    return _brent(gap, lo, hi, tol)


def _brent(gap, lo: float, hi: float, tol: float) -> float:
    """A u that fits (``gap(u) ≥ 0``) within about ``tol`` below the root of a decreasing ``gap`` in
    [lo, hi], gap(lo) ≥ 0 > gap(hi): Brent's method to ``tol``, stepping down by ``tol`` until it fits."""
    u = optimize.brentq(gap, lo, hi, xtol=tol)
    while gap(u) < 0.0:
        u -= tol
    return u


def plan_run(hyper, *, ledger, epsilon: float, delta: float, rate: float, prior: ev.Event | None = None,
             event_of=None) -> Plan:
    """The :class:`Plan` of one run (see the module docstring).

    ``hyper`` is the run's :class:`~dpopt.linesearch.algorithms.LineSearchHyper`;
    ``prior`` an event charged before the iterations (the noisy count).  With
    both ``rho_grad`` and ``budget_bt`` given nothing is calibrated: the order
    is the one at which most iterations fit.  ``iterations`` is 0 when not
    one iteration fits.  ``event_of(ρ, bt)``, when given, is one iteration's event as the run
    charges it (a secure run's discrete events, :func:`dpopt.oracles.step_event`); default :func:`_step`.
    """
    orders, room = _room(ledger, epsilon, delta, prior)
    target = hyper.planned_iterations * (1.0 + RESERVE)

    def fits(eps_iter: float | None) -> np.ndarray:
        return _fits(hyper, rate, orders, room, *_budgets(hyper, eps_iter or 0.0), event_of)

    def planned(eps_iter: float | None, iterations: int) -> Plan:
        n = fits(eps_iter)
        best = int(np.argmax(n))
        count = iterations if n[best] >= 1.0 else 0
        order = float(orders[best]) if count else float(orders[-1])
        return Plan(count, *_budgets(hyper, eps_iter or 0.0), eps_iter, order)

    if hyper.rho_grad is not None and hyper.budget_bt is not None:
        return planned(None, hyper.planned_iterations)
    paper = epsilon / (2.0 * hyper.planned_iterations)  # §5.4's ε_iter, a start for the search
    u = _largest(lambda u: math.log(max(float(fits(math.exp(u)).max()), 1e-300)) - math.log(target),
                 math.log(paper))
    return planned(paper, 0) if u is None else planned(math.exp(u), hyper.planned_iterations)


def fit_remaining(hyper, *, ledger, rate: float, remaining: int, rho: float, bt: float,
                  event_of=None, before: tuple[float, float] | None = None,
                  charged=None) -> tuple[float, float]:
    """(ρ_grad, bt), scaled down as ε_iter (by λ ≤ 1: ρ·λ², ε_BT·λ or ρ_BT·λ²) so that ``remaining``
    iterations plus the reserve still fit the ledger's room at its filter order.

    Called after an iteration whose line search failed: CHEB's extra gradient
    and retried search, and its (1 + ξ) increase of the budgets in force, take
    from the iterations still planned; the later iterations then share what is
    left, and the run makes the planned number of iterations.  Public
    quantities only (the budgets follow released values).  Unchanged if they fit.
    ``event_of``: as for :func:`plan_run`.  ``before``: the (ρ_grad, bt) in force before
    that iteration's increase, if known; the scale that brings the budgets back to them is
    tried first (see :func:`_shrink`).  The result fits, and is within 1 % (of λ) of the
    largest λ that does — or it is ``before`` itself, when that is at least the scaled answer in
    both budgets and the rest still fits at it: ``charged(ρ, bt)`` is one iteration's event as the
    ledger checks it (the oracle's ``step_event``), whose cost at the filter order the ledger
    already holds (:meth:`~dpopt.privacy.Ledger.filter_cost`).  The run's budgets then return to
    values whose RDP curves exist instead of new ones (a new one costs ~0.3–0.6 ms at a filter's
    orders); at the cliff described in :func:`_shrink` this is the common case.
    """
    orders, room = ledger.remaining_rdp()
    if remaining <= 0 or not np.any(room > 0.0):
        return rho, bt
    target = math.log(remaining * (1.0 + RESERVE))
    power = 1.0 if hyper.noise == "laplace" else 2.0

    def scaled(u: float) -> tuple[float, float]:
        return rho * math.exp(2.0 * u), bt * math.exp(power * u)

    values: dict = {}

    def gap(u: float) -> float:
        value = values.get(u)
        if value is None:
            fit = float(_fits(hyper, rate, orders, room, *scaled(u), event_of).max())
            value = values[u] = math.log(max(fit, 1e-300)) - target
        return value

    g0 = gap(0.0)  # the budgets in force usually fit: one value
    if g0 >= 0.0:
        return rho, bt
    guess = None
    if before is not None and before[0] > 0.0 and before[1] > 0.0:
        guess = min(0.5 * math.log(before[0] / rho), math.log(before[1] / bt) / power)
    u, fit, fail = _shrink(gap, g0, _RESCALE_TOL, guess)
    if u is None and fit is not None:  # the secant steps misbehaved: Brent in the bracket they found
        u = _brent(gap, fit, fail, _RESCALE_TOL)
    elif u is None:  # or bracket below the smallest u known not to fit, in steps of 25 %
        u = _largest(gap, fail, cap=fail, step=_RESCALE_STEP, tol=_RESCALE_TOL)  # (gap keeps its values)
    if u is None:
        return rho, bt
    out = scaled(u)
    if (before is not None and charged is not None and getattr(ledger, "filter_order", None) is not None
            and before[0] >= out[0] and before[1] >= out[1]
            and room[0] >= remaining * (1.0 + RESERVE) * ledger.filter_cost(charged(*before))):
        return before  # at least the budgets of the scaled answer, and curves the ledger holds
    return out


def _shrink(gap, g0: float, tol: float, guess: float | None = None) -> tuple[float | None, float | None, float]:
    """(u, fit, fail): u the largest u < 0 with ``gap(u) ≥ 0`` to ``tol`` (a u that fits, and one within
    ``tol`` above it that does not) for a decreasing ``gap`` with ``gap(0) = g0 < 0``, or None if the
    steps misbehave; ``fit`` and ``fail`` the largest u found to fit (None if none) and the smallest
    found not to.

    ``gap`` is log(iterations that fit) − log(iterations wanted) at the budgets scaled by λ = e^u.
    The first guess is a power law: one iteration's RDP at the filter order is about ∝ λ² (ρλ² for
    the gradient; ε_BT λ for a Laplace search, whose RDP is about quadratic in ε for small ε, or
    ρ_BT λ²), so gap(u) ≈ g0 − :data:`_RESCALE_SLOPE`·u, trusted down to one bracketing step
    (:data:`_RESCALE_STEP`) only; or ``guess`` (in :func:`fit_remaining`, the scale of the budgets
    before the failed search's increase) where that is larger or g0 < −:data:`_SECANT_REACH`
    (without a guess there, None at once: bracket from 0).  Later guesses are secant steps
    through the last two values (straight lines in log–log).  Each guess r is tried just below
    (expected to fit), or, once a fitting u lies within tol/2 below r, that u is confirmed by a
    point 0.9·tol above it (expected not to fit).  Where the RDP is smooth in λ a shrink under
    about 1 % takes 2 values (gap(0) and one), a larger one usually 3.  The RDP can also have a
    cliff: at the filter order the subsampled AboveThreshold's amplification breaks down above
    some budget, and the plan's budgets, calibrated to the largest that fit, sit at that edge,
    where gap(0) is about −10 after CHEB's increase; the largest λ that fits is then next to
    ``guess``, found in 3 values (bracketing from 0 takes 6 to 10 there).
    """
    fit, fail = None, 0.0  # the largest u that fits, the smallest that does not
    last = (0.0, g0)  # the last value, for the secant
    r = max(g0 / _RESCALE_SLOPE, -_RESCALE_STEP)
    if guess is not None and -40.0 < guess < 0.0 and (guess > r or g0 < -_SECANT_REACH):
        r = guess + 0.25 * tol  # so that it is tried itself
    elif g0 < -_SECANT_REACH:
        return None, None, 0.0
    for _ in range(_SECANT_STEPS):
        if not (math.isfinite(r) and r > -40.0):
            break
        r = min(r, fail) if fit is None else min(max(r, fit), fail)  # into the bracket
        if fit is not None and r - fit <= 0.5 * tol:
            p = fit + 0.9 * tol  # below fail: the bracket is wider than tol
        elif fail - r <= 0.5 * tol:
            p = max(fail - 0.9 * tol, r - 0.25 * tol)
        else:
            p = r - 0.25 * tol
        g = gap(p)  # p lies strictly between fit and fail
        if g >= 0.0:
            fit = p
        else:
            fail = p
        if fit is not None and fail - fit <= tol:
            return fit, fit, fail
        slope = (g - last[1]) / (p - last[0])
        if not slope < 0.0:  # gap is not decreasing there: no secant step
            break
        r, last = p - g / slope, (p, g)
    return None, fit, fail
