"""DP-BLSGD, DP-BLGD and DP-BLSGD-AC: private gradient descent with noisy backtracking line search.

chen2020 Algorithm 2 (DP-BLSGD) with CHEB (Algorithm 3), its full-batch
version DP-BLGD (§5.3: the budget increase of DP-AGD) and DP-BLSGD-AC (§4.4,
clipping-threshold adaptation eq. (9)).  One loop implements all three
(:func:`_descend`); they differ in the sampling rate and in what happens when
a line search fails.

The plan (:mod:`dpopt.linesearch.plan`): ``planned_iterations`` T and the
initial budgets are fixed before the run, from public quantities, so that T
iterations (plus a reserve for CHEB) spend the budget; the loop makes T
iterations.  (§5.4's ε_iter = ε/(2·50) ignores amplification by subsampling,
so a loop that ran until the budget was spent made 1,450–3,124 iterations at
ε = 0.4 on Adult.)  Each outer iteration t < T (Algorithm 2):

1. stop unless one noisy gradient *and* one line search still fit the budget
   (a gradient that cannot be followed by a line search would be wasted;
   the plan makes this a safety check);
2. g̃_t ← noisy clipped gradient on a Poisson minibatch (lines 4–6);
3. η ← NoisyBTLS(w_t, g̃_t) (line 10); while it fails (η = 0) and the budget
   allows, enlarge the budget and retry (lines 9–20):

   * DP-BLSGD: CHEB — a second noisy gradient, the angle test of eqs. (7)–(8)
     decides whether ρ_grad or ε_BT grows by (1 + ξ), and the two gradients
     are averaged (Algorithm 3);
   * DP-BLGD: DP-AGD's increase — a fresh gradient with the extra budget ξρ_grad
     averaged in by GradAvg, then ρ_grad and ε_BT grow by (1 + ξ);
   * DP-BLSGD-AC: CHEB, and the first time in an iteration that CHEB enlarges
     ρ_grad, C_grad and C_obj shrink by (1 − ζ) (eq. (9));

   a retry is made only if it leaves the iterations still planned their
   budgets (otherwise the iteration ends without a step, as Fig. 1's "no");

4. on success w_{t+1} = w_t − η g̃_t and the angle average (7) is updated;
5. intelligent backtracking: every τ iterations η₀ ← min{ς·max Ω, η₀} over the
   steps Ω chosen since the last reset (§4.2);
6. after an iteration with a failed search, the budgets in force are scaled
   down (as ε_iter) if the iterations still planned would no longer fit what
   is left (:func:`~dpopt.linesearch.plan.fit_remaining`), or set back to the
   budgets of before that iteration's increase when those are at least the scaled
   ones and the rest still fits at them (on DP-BLSGD's usual budgets the
   increase does not fit and this is the common case: the run then reuses RDP
   curves it has instead of computing new ones).  With
   ``secure_noise`` the run also stops (``info["stop"] == "noise"``) if they
   shrank so far that a release would need more noise than the exact samplers
   draw (:data:`dpopt.privacy.mechanisms.SECURE_MAX_SCALE` grid steps).

Defaults beyond §5.4 (documented on :class:`LineSearchHyper`, measured on
Adult with rows ‖x‖₂ ≤ 1).  §5.4's C_grad = 3 and an η₀ of 2 suit the paper's
unnormalized features; with a declared row bound R the defaults are
C_grad = min{3, G} (G the per-example gradient bound) and η₀ = 16/R², and the
line search asks for clipped per-record *decreases* rather than differences of
the clipped objective (same sensitivity C_obj, same events), because the
clipped objective is lowest at the majority-class predictor on imbalanced
data.  With the literal settings DP-BLGD ended at the majority class at every
ε on Adult (logistic and Huberized SVM).

Privacy budget tracking (§4.3).  A :class:`~dpopt.privacy.Ledger` with the RDP
accountant and the add/remove-one relation holds the total (ε, δ); every
sub-routine is charged as its amplified event (Poisson ``Subsampled`` of the
Gaussian gradient, Lemma 1, and of AboveThreshold, Theorems 2/3, amplified by
Lemma 4 or the exact subsampled-Gaussian bound) *before* it runs, and it runs
only if :meth:`~dpopt.privacy.Ledger.can_afford` says it fits.  Because CHEB
makes the budgets depend on earlier releases, the ledger is a Rényi *filter*
at one order α fixed before the run: the order at which the planned
iterations (gradient + line search at the initial budgets, all public) fit
the budget with the largest ε_iter (:func:`~dpopt.linesearch.plan.plan_run`).
Feldman & Zrnic 2021, Thm 3.1 proves that adaptively chosen RDP costs whose
sum at a fixed α never exceeds B(α) compose to (α, B(α))-RDP; accepting a
charge that fits at *any* order of a grid is not covered by it.  The run
stops after T iterations, or when the next sub-routine no longer fits at α,
and reports the filter's guarantee, the budget.  ``info`` reports
``planned_iterations`` and ``iterations`` (run).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields

import numpy as np

from .._validation import (
    as_generator,
    check_choice,
    check_delta,
    check_int,
    check_iterations,
    check_open_unit,
    check_positive,
    check_rate,
)
from ..models import PrivateModel, check_model, diagnostic_value, start_point
from ..oracles import (
    NOISES,
    QUERIES,
    PrivateOracle,
    count_event,
    normalizer_note,
    public_normalizer,
    run_ledger,
    step_event,
)
from ..oracles.noisy_btls import reset_initial_step, run_step
from ..oracles.oracle import QUIET
from ..privacy import events as ev
from ..result import DPResult
from .cheb import AngleAverage, angle_between, cheb, gradient_average
from .model import PAPER_C_GRAD, default_gradient_clip
from .plan import PLAN_ORDERS, fit_remaining, plan_run

__all__ = ["LineSearchHyper", "dp_blsgd", "dp_blgd", "dp_blsgd_ac", "METHODS", "DEFAULT_ETA0", "ETA0_R2",
           "BUDGET_INCREASES"]

#: η₀ when the model declares no row bound (chen2020 does not state its η₀).
DEFAULT_ETA0 = 2.0
#: η₀·R² for a model with rows ‖x‖₂ ≤ R (see ``LineSearchHyper.eta0``).
ETA0_R2 = 16.0
#: Choices of ``LineSearchHyper.budget_increase`` (chen2020 §5.5, Fig. 1).
BUDGET_INCREASES = ("no", "must", "adap")

_NOTES = (
    "Renyi DP with Poisson subsampling (chen2020 Sec. 4.3): each sub-routine is charged as its "
    "amplified event and runs only if it fits the (epsilon, delta) budget. The per-iteration budgets "
    "adapt to privately released gradients (CHEB), so the ledger is a Renyi filter at one order fixed "
    "before the run from the planned, public composition (Feldman & Zrnic 2021, Thm 3.1); the "
    "guarantee reported is the filter's, the budget."
)
_SECURE_NOTE = (
    " Floating-point-safe noise: gradients released on a grid with exact discrete Gaussian noise and "
    "line-search comparisons of grid-rounded queries with exact discrete noise (OS CSPRNG), charged "
    "and planned as the discrete events."
)


@dataclass(frozen=True)
class LineSearchHyper:
    """Hyper-parameters of DP-BLSGD / DP-BLGD / DP-BLSGD-AC (defaults: chen2020 §5.4).

    Attributes
    ----------
    rate:
        Poisson sampling rate q (§5.4: 0.1; default 0.02).  DP-BLGD always uses 1 (full batch).
        With T planned iterations the data work is about 2·T·q passes.  Measured on Adult
        (ε = 0.4, δ = 1e-8, 5 seeds, ``benchmarks/bench_linesearch_plan.py``): at T = 200 the
        test accuracy is 0.822 at q = 0.02, 0.05 and 0.1 alike (±0.004), at 8, 20 and 40
        passes; on 2,000 rows and on synthetic 1e5 × 20 data q did not matter either.
    c_grad:
        Per-example gradient clipping threshold C_grad, eq. (6).  Default (None):
        §5.4's 3, lowered to the model's public per-example gradient bound G when
        it declares one (:func:`~dpopt.linesearch.model.default_gradient_clip`;
        ``LinearModel(..., data_norm=1)`` with the logistic loss: G = 1).  §5.4's
        3 was set for unnormalized features (‖x‖₂ ≈ 3.7 on Adult); on rows with
        ‖x‖₂ ≤ 1 it clips nothing and triples the gradient noise.  DP-BLSGD-AC
        keeps 3: it lowers C_grad itself (eq. (9)), and started at G it shrinks
        below the gradient norms at once (measured on Adult, Huberized SVM: test
        accuracy at the majority level 0.768 from G, 0.83 from 3 at ε ≥ 0.4).
    c_obj:
        Objective clipping threshold C_obj = Δ_q of the line-search queries (§5.4: 1).
    planned_iterations:
        T, the number of outer iterations the run makes (default 200; §5.4's "50" set
        ε_iter = ε/(2·50) instead).  Measured on Adult at ε = 0.4 (q = 0.02): T = 100, 200,
        400, 800 gave test accuracy 0.819, 0.822, 0.821, 0.818 (±0.004).  ε_iter is
        calibrated so that T iterations, amplified as charged, plus a reserve for CHEB
        spend the budget (:func:`~dpopt.linesearch.plan.plan_run`); ``info["eps_iter"]``.
    rho_grad:
        Initial gradient budget ρ_grad (zCDP-style, RDP α·ρ_grad); default ε_iter²/2 (§5.4).
    budget_bt:
        Initial line-search budget: ε_BT for Laplace noise (default ε_iter, §5.4), ρ_BT
        for Gaussian noise (default ε_iter²/2, the ρ of an ε_iter-DP release by Lemma 2).
        With both ``rho_grad`` and ``budget_bt`` given nothing is calibrated; the run
        stops after T iterations or when the next one no longer fits.
    noise:
        NoisyBTLS noise, ``"laplace"`` (the variant of §5.6's figures) or ``"gaussian"``.
    xi:
        Budget increase rate ξ of CHEB / DP-AGD (§5.4: 0.3).
    eta0:
        Initial (and, through intelligent backtracking, largest) step η₀ of the
        line search; chen2020 does not state it.  Default (None): 16/R² when the
        model declares a row bound R (``LinearModel(..., data_norm=R)``), else
        2.0.  On Adult with ‖x‖₂ ≤ 1 (R = 1) the steps DP-BLGD accepts reach
        8–12 for logistic regression and the Huberized SVM, so a η₀ of 2 caps
        every step and leaves the model at the majority class; 16 is four times
        the 1/L step of the logistic loss (L ≤ R²/4).  With ``max_it`` = 15 and
        β = 0.8 the candidates span η₀ … 0.044·η₀, and intelligent
        backtracking lowers η₀ to ς·(largest recent step) every τ iterations.
    alpha:
        Armijo constant α of eq. (2) (§5.4: 0.5).
    beta:
        Backtracking factor β (§5.4: 0.8).
    max_it:
        Candidate steps per line search (Algorithm 1's max_it; not stated in §5.4).
    tau:
        Intelligent backtracking period τ in iterations (§5.4: 10).
    varsigma:
        Intelligent backtracking factor ς > 1 (§5.4: 1.2).
    phi_max, phi_min:
        Angle thresholds of eq. (8) (§5.4: 1.1 and 0.5).
    psi:
        Decay ψ of the angle moving average, eq. (7) (§5.4: 0.8).
    zeta:
        Clipping decrease rate ζ of eq. (9), DP-BLSGD-AC only (§5.4: 0.05).
    query:
        What each NoisyBTLS query measures (both have sensitivity Δ_q = C_obj, so
        the privacy events are the same).  ``"decrease"`` (default): the
        per-record decrease f_i(w) − f_i(w − ηg) clipped to [−C_obj, C_obj], plus
        the public regularizer's decrease.  ``"objective"``: chen2020 Theorem 1's
        clipped objective Σ min{f_i, C_obj}.  The two agree while no loss
        exceeds C_obj.  The clipped objective is flat for records whose loss
        exceeds C_obj, and on imbalanced data (Adult: 24 % positive) it is lower
        at the majority-class predictor (minority records capped at C_obj = 1)
        than at the true minimizer: one noisy-accepted long step lands there,
        no candidate step passes the Armijo test afterwards, and the budget
        increases exhaust the budget (measured: DP-BLGD at ε = 1.6 stopped after 3
        iterations at the majority class).  Clipping decreases instead keeps
        the Armijo test on the true objective.
    budget_increase:
        What a failed line search does (the "budget allocation" of §5.5, Fig. 1):
        ``"adap"`` (default) — CHEB, Algorithm 3 (DP-BLGD: DP-AGD's increase);
        ``"must"`` — a second gradient is drawn and averaged in and ρ_grad always
        grows by (1 + ξ), whatever the angle (DP-BLGD: as ``"adap"``);
        ``"no"`` — never increase: the iteration ends without a step and the
        next one starts with a fresh gradient.
    lazy:
        Evaluate line-search queries one per data pass, only up to the first above
        the threshold, with the noise of all of them drawn when the search opens;
        same output distribution.  Below :data:`dpopt.oracles.oracle.EAGER_ENTRIES`
        loss entries per search (q·N × ``max_it``; 200-row minibatches) the
        candidates are evaluated 3, 6, 12, … per pass (as with ``lazy=False``):
        cheaper than one pass per candidate.
    w0:
        Data-independent starting point (default zeros; Algorithm 2 line 2 says
        "randomly", which any public choice satisfies).
    n_public:
        The public record count N that released sums are divided by (as q·N for
        minibatches).  Default: the model's declared ``n_public``, else a noisy
        count released once before the run with 2 % of its zCDP budget
        (:func:`dpopt.oracles.public_normalizer`).  The data's own n is never
        used: it differs between add/remove neighbours (issue 14, finding 3).
    orders:
        Candidate Rényi orders of a ledger the run makes (default
        :data:`dpopt.linesearch.plan.PLAN_ORDERS`, the integer orders ≥ 2 of
        :data:`dpopt.privacy.DEFAULT_ORDERS`: Lemma 4 covers integer orders, and
        their curves cost a third of the fractional ones' whenever CHEB changes a
        budget).  The run's filter order is the one among them at which the planned
        iterations fit with the largest budgets (``info["filter_order"]``).
    max_iter:
        Cap on outer iterations below the plan (the budget is then not all spent).
    trajectory:
        Record F(w_t) on the full data after every iteration (non-private, for plots).
    secure_noise:
        Floating-point-safe noise (Mironov 2012): every noisy gradient sum is released on a
        power-of-two grid with exact discrete Gaussian noise, and every NoisyBTLS compares its
        queries rounded to a grid (integer sensitivity ⌊Δ_q/g⌋ + 1) against a threshold with exact
        discrete Laplace or discrete Gaussian noise, all from the OS CSPRNG
        (:func:`dpopt.privacy.mechanisms.secure_event`); so does the noisy record count.  The
        plan and every budget check use the discrete events charged: Poisson-subsampled
        ``DiscreteGaussian`` (accounted as the continuous Gaussian that covers it,
        :meth:`dpopt.privacy.events.DiscreteGaussian.dominating_gaussian`) and
        ``DiscreteAboveThreshold`` (eqs. (4)–(5) in grid units,
        :func:`dpopt.privacy.rdp.above_threshold_rdp`).  Measured on Adult (ε = 0.4, δ = 1e-8,
        q = 0.02, ``benchmarks/bench_linesearch_secure.py``, 3 seeds): the plans are the float
        ones (DP-BLSGD ε_iter 0.174, σ/C_grad 5.74 with the Laplace search), test accuracy
        0.823 → 0.821, CPU time per iteration 1.1 → 3.1 ms (Laplace search) and 1.1 → 4.1 ms
        (Gaussian search); DP-BLGD 0.819 → 0.820 at 16 → 19 ms.
    """

    rate: float = 0.02
    c_grad: float | None = None
    c_obj: float = 1.0
    planned_iterations: int = 200
    rho_grad: float | None = None
    budget_bt: float | None = None
    noise: str = "laplace"
    xi: float = 0.3
    eta0: float | None = None
    alpha: float = 0.5
    beta: float = 0.8
    max_it: int = 15
    tau: int = 10
    varsigma: float = 1.2
    phi_max: float = 1.1
    phi_min: float = 0.5
    psi: float = 0.8
    zeta: float = 0.05
    query: str = "decrease"
    budget_increase: str = "adap"
    lazy: bool = True
    w0: np.ndarray | None = field(default=None, compare=False)
    n_public: int | None = None
    orders: tuple | None = None
    max_iter: int = 1_000_000
    trajectory: bool = False
    secure_noise: bool = False

    def __post_init__(self):
        check_rate("rate", self.rate)
        if self.c_grad is not None:
            check_positive("c_grad", self.c_grad)
        check_positive("c_obj", self.c_obj)
        check_iterations("planned_iterations", self.planned_iterations)
        if self.rho_grad is not None:
            check_positive("rho_grad", self.rho_grad)
        if self.budget_bt is not None:
            check_positive("budget_bt", self.budget_bt)
        check_choice("noise", self.noise, NOISES)
        check_positive("xi", self.xi)
        if self.eta0 is not None:
            check_positive("eta0", self.eta0)
        check_choice("query", self.query, QUERIES)
        check_choice("budget_increase", self.budget_increase, BUDGET_INCREASES)
        check_open_unit("alpha", self.alpha)
        check_open_unit("beta", self.beta)
        check_int("max_it", self.max_it)
        check_int("tau", self.tau)
        if check_positive("varsigma", self.varsigma) <= 1.0:
            raise ValueError(f"varsigma must be > 1, got {self.varsigma!r}")
        if check_positive("phi_max", self.phi_max) <= 1.0:
            raise ValueError(f"phi_max must be > 1, got {self.phi_max!r}")
        check_open_unit("phi_min", self.phi_min)
        check_open_unit("psi", self.psi)
        check_open_unit("zeta", self.zeta)
        check_int("max_iter", self.max_iter)
        if self.n_public is not None:
            check_int("n_public", self.n_public)
        if self.orders is not None:
            object.__setattr__(self, "orders", tuple(float(a) for a in np.atleast_1d(self.orders)))

    @classmethod
    def from_kwargs(cls, **hyper) -> LineSearchHyper:
        """Build from keyword arguments, naming any unknown one."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(hyper) - known)
        if unknown:
            raise TypeError(f"unknown hyper-parameter(s) {unknown}; known: {sorted(known)}")
        return cls(**hyper)

    def clip_for(self, model: PrivateModel, adaptive: bool = False) -> float:
        """C_grad: the given value, else §5.4's 3 for DP-BLSGD-AC (``adaptive``), else
        :func:`~dpopt.linesearch.model.default_gradient_clip`."""
        if self.c_grad is not None:
            return self.c_grad
        return PAPER_C_GRAD if adaptive else default_gradient_clip(model)

    def eta0_for(self, model: PrivateModel) -> float:
        """η₀: the given value, else ``ETA0_R2``/R² for a declared row bound R, else 2.0."""
        if self.eta0 is not None:
            return self.eta0
        if model.data_norm is None:
            return DEFAULT_ETA0
        return ETA0_R2 / model.data_norm**2


@dataclass
class _Stats:
    """Counters and logs of one run (returned in ``DPResult.info``)."""

    gradients: int = 0
    line_searches: int = 0
    failures: int = 0
    cheb: dict = field(default_factory=lambda: {"gradient": 0, "line_search": 0, "none": 0})
    budget_increases: int = 0
    steps: list = field(default_factory=list)
    events_per_iteration: list = field(default_factory=list)
    clip_history: list = field(default_factory=list)
    trajectory: list = field(default_factory=list)


def _charged(model, hyper: LineSearchHyper, rate: float, c_grad: float, c_obj: float):
    """``(ρ, bt) ↦`` one iteration's event as a secure run charges it at (C_grad, C_obj), for the plan."""
    return functools.partial(step_event, c_grad=c_grad, c_obj=c_obj, noise=hyper.noise, rate=rate,
                             dim=model.dim, secure_noise=True)


def _descend(model, epsilon, delta, rng, hyper: LineSearchHyper, *, method: str, rate: float,
             increase: str, adaptive_clipping: bool, ledger=None) -> DPResult:
    """The loop shared by the three methods (see the module docstring)."""
    model = check_model(model)
    if ledger is None and epsilon is not None:
        check_positive("epsilon", epsilon)
        if check_delta("delta", 0.0 if delta is None else delta) == 0.0:
            raise ValueError(
                "delta must be in (0, 1): the RDP accounting of chen2020 §4.3 needs delta > 0"
            )
    ledger, epsilon, delta = run_ledger(ledger, epsilon, delta, accountant="rdp",
                                        orders=PLAN_ORDERS if hyper.orders is None else hyper.orders)
    rng = as_generator(rng)
    c_grad = hyper.clip_for(model, adaptive=adaptive_clipping)
    secure = bool(hyper.secure_noise)
    plan = plan_run(hyper, ledger=ledger, epsilon=epsilon, delta=delta, rate=rate,
                    prior=count_event(model, n_public=hyper.n_public, epsilon=epsilon, delta=delta,
                                      secure_noise=secure),
                    event_of=_charged(model, hyper, rate, c_grad, hyper.c_obj) if secure else None)
    if ledger.filter_order is None:
        ledger.fix_filter_order(plan.order)
    rho, bt = rho0, bt0 = plan.rho_grad, plan.budget_bt
    normalizer = public_normalizer(model, n_public=hyper.n_public, ledger=ledger, rng=rng,
                                   epsilon=epsilon, delta=delta, secure_noise=secure)
    oracle = PrivateOracle(model, ledger=ledger, rng=rng, normalizer=normalizer, rate=rate,
                           c_grad=c_grad, c_obj=hyper.c_obj, noise=hyper.noise, lazy=hyper.lazy,
                           query=hyper.query, secure_noise=secure)
    c_grad0 = oracle.c_grad
    w = start_point(model, hyper.w0)
    angles = AngleAverage(hyper.psi)
    previous = None
    eta0 = eta0_initial = float(hyper.eta0_for(model))
    omega = []
    stats = _Stats()
    stop, t = "planned", 0
    alpha, beta, max_it = float(hyper.alpha), float(hyper.beta), int(hyper.max_it)
    last = min(plan.iterations, hyper.max_iter)

    with np.errstate(**QUIET):  # the releases' floating-point warnings off, once for the run
        while t < last:
            planned_step = oracle.step_event(rho, bt)  # a gradient and a line search, composed
            before = (rho, bt)
            if not oracle.can_afford(planned_step):
                stop = "budget"
                break
            if not oracle.releases_exactly(*planned_step.events):  # secure: budgets shrunk below any use
                stop = "noise"
                break
            charged_before = stats.gradients + stats.line_searches  # one event per release
            g = oracle._noisy_gradient(w, rho)
            stats.gradients += 1
            eta, shrunk = 0.0, False
            while True:  # the check above covers the first search; later ones are checked below
                eta = run_step(oracle, w, g, eta0, bt, alpha, beta, max_it)
                stats.line_searches += 1
                if eta > 0.0:
                    break
                stats.failures += 1
                if hyper.budget_increase == "no":  # Fig. 1's "no": move on with a fresh gradient
                    break
                rest = last - t - 1  # a retry must leave the iterations still planned their budgets
                retry = [oracle.line_search_event((1.0 + hyper.xi) * bt)]  # the larger of CHEB's two outcomes
                if rest:
                    retry.append(ev.SelfComposed(planned_step, rest))
                if increase == "cheb":
                    if not oracle.can_afford(oracle.gradient_event(rho), *retry):
                        break
                    g2 = oracle._noisy_gradient(w, rho)
                    stats.gradients += 1
                    out = cheb(g, g2, rho_grad=rho, budget_bt=bt, xi=hyper.xi, theta_bar=angles.value,
                               phi_max=hyper.phi_max, phi_min=hyper.phi_min,
                               force_gradient=hyper.budget_increase == "must")
                    rho, bt, g = out.rho_grad, out.budget_bt, out.gradient
                    stats.cheb[out.action] += 1
                    if adaptive_clipping and out.action == "gradient" and not shrunk:
                        oracle.shrink_clipping(hyper.zeta)
                        shrunk = True
                        stats.clip_history.append((t, oracle.c_grad, oracle.c_obj))
                else:  # DP-AGD (Lee & Kifer 2018): measure the extra budget ξρ and average it in
                    extra = hyper.xi * rho
                    if not (oracle.can_afford(oracle.gradient_event(extra), *retry)
                            and oracle.releases_exactly(oracle.gradient_event(extra))):
                        break
                    g2 = oracle._noisy_gradient(w, extra)
                    stats.gradients += 1
                    g = gradient_average(g, rho, g2, extra)
                    rho, bt = rho + extra, (1.0 + hyper.xi) * bt
                    stats.budget_increases += 1
                if not oracle.can_afford(oracle.line_search_event(bt)):
                    break
            if eta > 0.0:
                w = w - eta * g
                if previous is not None:
                    angles.update(angle_between(g, previous))
                previous = g
                omega.append(eta)
                stats.steps.append(eta)
            t += 1
            charged = stats.gradients + stats.line_searches - charged_before
            stats.events_per_iteration.append(charged)
            if charged > 2:  # a failed search took from the iterations still planned: share what is left
                rho, bt = fit_remaining(hyper, ledger=ledger, rate=rate, remaining=last - t, rho=rho, bt=bt,
                                        event_of=_charged(model, hyper, rate, oracle.c_grad, oracle.c_obj)
                                        if secure else None, before=before, charged=oracle.step_event)
            if t % hyper.tau == 0:
                eta0, omega = reset_initial_step(eta0, omega, hyper.varsigma), []
            if hyper.trajectory:
                stats.trajectory.append(diagnostic_value(model, w))

    if stop == "planned" and t < plan.iterations:
        stop = "max_iter"
    info = {
        "stop": stop,
        "planned_iterations": plan.iterations,
        "iterations": t,
        "eps_iter": plan.eps_iter,
        "updates": len(stats.steps),
        "steps": np.array(stats.steps),
        "gradients": stats.gradients,
        "line_searches": stats.line_searches,
        "line_search_failures": stats.failures,
        "cheb_actions": dict(stats.cheb),
        "budget_increases": stats.budget_increases,
        "events_per_iteration": np.array(stats.events_per_iteration, dtype=int),
        "rho_grad_initial": rho0,
        "rho_grad": rho,
        "budget_bt_initial": bt0,
        "budget_bt": bt,
        "noise": hyper.noise,
        "eta0_initial": eta0_initial,
        "eta0": eta0,
        "query": hyper.query,
        "c_grad_initial": c_grad0,
        "theta_bar": angles.value,
        **oracle.describe(),
        "c_grad": oracle.c_grad,
        "c_obj": oracle.c_obj,
        "clip_history": list(stats.clip_history),
        "filter_order": ledger.filter_order,
        "secure_noise": secure,
    }
    trajectory = np.array(stats.trajectory) if hyper.trajectory else None
    return DPResult.from_ledger(ledger, x=w, fun=diagnostic_value(model, w), method=method, nit=t,
                                trajectory=trajectory, info=info, guarantee="exact",
                                notes=_NOTES + (_SECURE_NOTE if secure else "") + " " + normalizer_note(normalizer))


def dp_blsgd(model: PrivateModel, *, epsilon: float | None = None, delta: float | None = None,
             rng=None, ledger=None, **hyper) -> DPResult:
    """DP-BLSGD: minibatch private gradient descent with NoisyBTLS and CHEB (chen2020 Algorithm 2).

    ``model`` is a :class:`~dpopt.models.PrivateModel` (e.g.
    :class:`~dpopt.models.LinearModel`); (``epsilon``, ``delta``) the total
    budget of the run, spent from ``ledger`` when one is given (an RDP ledger
    under add/remove-one; see :func:`dpopt.oracles.run_ledger`), else from a
    new RDP ledger; ``rng`` a Generator, seed or None.  Keyword hyper-parameters are the fields of
    :class:`LineSearchHyper` (defaults of §5.4: C_obj = 1, ξ = 0.3,
    α = 0.5, β = 0.8, τ = 10, ς = 1.2, φ_max = 1.1, φ_min = 0.5, ψ = 0.8,
    Laplace NoisyBTLS; measured: q = 0.02 and T = 200 iterations, ε_iter calibrated
    so that they spend the budget (§5.4: q = 0.1, ε_iter = ε/100); C_grad = 3 lowered
    to the model's per-example gradient bound, η₀ = 16/R² for rows ‖x‖₂ ≤ R,
    and line-search queries on clipped per-record decreases — see the fields).

    Returns a :class:`~dpopt.result.DPResult` with ``method="dp-blsgd"``, ``x``
    the last iterate, ``fun`` = F(x) on the full data (non-private, for
    reporting) and ``info`` holding the budgets (initial and final), the
    chosen steps, the line-search failures, the CHEB decisions and the
    clipping thresholds.
    """
    h = LineSearchHyper.from_kwargs(**hyper)
    return _descend(model, epsilon, delta, rng, h, method="dp-blsgd", rate=h.rate,
                    increase="cheb", adaptive_clipping=False, ledger=ledger)


def dp_blsgd_ac(model: PrivateModel, *, epsilon: float | None = None, delta: float | None = None,
                rng=None, ledger=None, **hyper) -> DPResult:
    """DP-BLSGD-AC: DP-BLSGD with clipping-threshold adaptation (chen2020 §4.4, eq. (9)).

    As :func:`dp_blsgd`; in addition, the first time within an SGD update that
    CHEB enlarges ρ_grad (Algorithm 3, line 8), C_grad and C_obj are multiplied
    by (1 − ζ) (``zeta``, §5.4: 0.05); C_grad starts at §5.4's 3 unless given
    (see ``c_grad``).  The decision uses only released values,
    so it costs no privacy; the noise multiplier σ/C_grad is unchanged, so the
    RDP of each step is too.  ``info["clip_history"]`` lists
    (iteration, C_grad, C_obj) after every decrease.
    """
    h = LineSearchHyper.from_kwargs(**hyper)
    return _descend(model, epsilon, delta, rng, h, method="dp-blsgd-ac", rate=h.rate,
                    increase="cheb", adaptive_clipping=True, ledger=ledger)


def dp_blgd(model: PrivateModel, *, epsilon: float | None = None, delta: float | None = None,
            rng=None, ledger=None, **hyper) -> DPResult:
    """DP-BLGD: full-batch DP-BLSGD with the budget increase of DP-AGD (chen2020 §5.3).

    Every gradient and line search uses all n records (no subsampling, so no
    amplification).  When NoisyBTLS fails, a fresh gradient is measured with
    the extra budget ξ·ρ_grad and combined with the current one by GradAvg
    (Lee & Kifer 2018), after which ρ_grad ← (1 + ξ)ρ_grad and
    ε_BT ← (1 + ξ)ε_BT, and the line search is retried.  Hyper-parameters as
    :func:`dp_blsgd` except ``rate`` (always 1); the CHEB thresholds
    (``phi_max``, ``phi_min``) and ``zeta`` are unused.
    """
    if "rate" in hyper:
        raise TypeError("dp_blgd is full batch: it takes no 'rate' (use dp_blsgd for minibatches)")
    h = LineSearchHyper.from_kwargs(**hyper)
    return _descend(model, epsilon, delta, rng, h, method="dp-blgd", rate=1.0,
                    increase="agd", adaptive_clipping=False, ledger=ledger)


def _document_hyper_parameters(*functions) -> None:
    """Append the field documentation of :class:`LineSearchHyper` to each function's docstring."""
    fields_doc = LineSearchHyper.__doc__.split("----------\n", 1)[1].rstrip()
    for fn in functions:
        fn.__doc__ = (fn.__doc__.rstrip() + "\n\n    Keyword hyper-parameters (:class:`LineSearchHyper`)\n"
                      "    -------------------------------------------------\n" + fields_doc + "\n")


_document_hyper_parameters(dp_blsgd, dp_blsgd_ac, dp_blgd)

#: The three methods by their result names (for the registry).
METHODS = {"dp-blsgd": dp_blsgd, "dp-blgd": dp_blgd, "dp-blsgd-ac": dp_blsgd_ac}

