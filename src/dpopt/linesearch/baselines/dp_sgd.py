"""DP-SGD (Abadi et al. 2016, "Deep learning with differential privacy", Algorithm 1): chen2020 ref. [5].

Each of T steps draws a Poisson minibatch at rate q, sums the per-example
gradients clipped to L2 norm C (chen2020 eq. (6)), adds N(0, σ²I) and divides
by the expected batch size q·N (the "lot size" L of Abadi et al.) for a
public record count N (the realized |B| is data-dependent under Poisson
sampling and the data's n differs between neighbours), then takes a step
of fixed size η on that noisy gradient plus the public regularizer gradient.

Accounting: σ is the smallest noise for which T Poisson-subsampled Gaussian
releases of sensitivity C are (ε, δ)-DP under the run's accountant
(``accountant=``; by default the PLD accountant, else the RDP accountant —
the "moments accountant" of Abadi et al. in its exact sampled-Gaussian form of
Mironov, Talwar & Zhang 2019 — when the ledger handed in checks by RDP);
every step is charged to a :class:`Ledger` of that accountant as
``Subsampled(Gaussian(σ, C), q, "poisson")`` by the sampler that drew the batch,
through :class:`dpopt.oracles.PrivateOracle`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..._validation import as_generator, check_int, check_iterations, check_positive, check_rate
from ...models import check_model, diagnostic_value, start_point
from ...objectives import MarginLoss
from ...oracles import PrivateOracle, normalizer_note, public_normalizer, run_ledger, smallest_affordable_scale
from ...privacy import events as ev
from ...privacy import mechanisms as mech
from ...privacy.calibration import calibrate_run, run_accountant
from ...result import DPResult
from ..model import default_gradient_clip
from ._common import Hyper, check_budget

__all__ = ["DPSGDHyper", "dp_sgd", "default_step", "MARGIN_CURVATURE"]


@dataclass(frozen=True)
class DPSGDHyper(Hyper):
    """Hyper-parameters of :func:`dp_sgd`.

    Attributes
    ----------
    rate:
        Poisson sampling rate q (chen2020 §5.4: 0.1 for every gradient method).
    c_grad:
        Per-example gradient clipping threshold C (§5.4: 3).
    steps:
        Number of steps T, fixed in advance (100 = 10 expected epochs at q = 0.1).
    lr:
        Constant step size η.  Default (linear models only, :func:`default_step`):
        1/(c·R² + μ) with c = sup ℓ'' of the loss, capped at ¼ for margin losses,
        and R = ``data_norm`` (logistic and Huberized hinge: 1/(¼R² + μ) ≈ 4 for
        R = 1).  Required for other models.
    data_norm:
        The row-norm bound R used only for the default step size (the privacy
        guarantee does not depend on it: clipping bounds every gradient).
        Default (None): the model's declared ``data_norm``, else 1.
    w0:
        Public starting point (default zeros).
    n_public:
        The public record count N; sums are divided by the expected batch size
        q·N.  Default: the model's declared ``n_public``, else a noisy count
        released first (:func:`dpopt.oracles.public_normalizer`); never the
        data's own n, which differs between add/remove neighbours.
    orders:
        Rényi orders of the ledger and of the calibration (default
        :data:`dpopt.privacy.DEFAULT_ORDERS`).
    trajectory:
        Record F(w_t) on the full data after every step (non-private, for plots).
    """

    rate: float = 0.1
    c_grad: float | None = None
    steps: int = 100
    lr: float | None = None
    data_norm: float | None = None
    w0: np.ndarray | None = None
    n_public: int | None = None
    orders: tuple | None = None
    trajectory: bool = False

    def __post_init__(self):
        check_rate("rate", self.rate)
        if self.c_grad is not None:
            check_positive("c_grad", self.c_grad)
        check_iterations("steps", self.steps)
        if self.lr is not None:
            check_positive("lr", self.lr)
        if self.data_norm is not None:
            check_positive("data_norm", self.data_norm)
        if self.n_public is not None:
            check_int("n_public", self.n_public)
        if self.orders is not None:
            object.__setattr__(self, "orders", tuple(float(a) for a in np.atleast_1d(self.orders)))


def _step_event(sigma: float, c_grad: float, secure_size: int = 0) -> ev.Event:
    """One gradient release of noise σ as it is charged: the Gaussian, or with ``secure_size`` > 0 the
    discrete event of a secure release of that many values (:func:`dpopt.privacy.mechanisms.secure_event`)."""
    step = ev.Gaussian(sigma, c_grad)
    return mech.secure_event(step, secure_size)[0] if secure_size else step


@functools.lru_cache(maxsize=512)
def _calibrated_sigma(epsilon: float, delta: float, steps: int, rate: float, c_grad: float,
                      orders: tuple | None, notion: str, secure_size: int = 0) -> float:
    """σ by :func:`~dpopt.privacy.calibration.calibrate_run` under ``notion``, memoized (experiments repeat it);
    the steps are :func:`_step_event` (``secure_size``: see there)."""
    def run_of(sigma):
        step = _step_event(sigma, c_grad, secure_size)
        return ev.SelfComposed(step if rate == 1.0 else ev.Subsampled(step, rate, ev.POISSON), steps)

    start = c_grad * max(1.0, rate * math.sqrt(2.0 * steps * math.log(1.25 / delta)) / epsilon)
    return calibrate_run(run_of, epsilon, delta, run_accountant(notion, orders=orders), start=start)


_ACCOUNTING = {
    "rdp": "RDP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar & Zhang 2019) "
           "converted to (epsilon, delta). ",
    "pld": "Privacy loss distribution of the Poisson-subsampled Gaussian mechanism, composed "
           "numerically with pessimistic discretization (a proven upper bound on epsilon). ",
}

#: c of the default step 1/(c·R² + μ) for margin losses: the logistic loss's sup ℓ'' (see default_step).
MARGIN_CURVATURE = 0.25


def default_step(model, data_norm: float = 1.0) -> float:
    """η = 1/(c·R² + μ) with c the loss's curvature bound (public constants only).

    For a margin loss c is capped at ¼, the logistic loss's bound: the Huberized
    hinge's sup ℓ'' = 1/(2h) (= 1 at h = 0.5) holds only on a band of margins of
    width 2h, and its 1/L step left DP-SGD's 100 steps at the majority class on
    Adult and KEEL magic at every ε (measured; with ¼ it reaches the
    non-private accuracy within 0.03 at ε ≥ 0.4).
    """
    loss = getattr(model, "loss", None)
    curvature = getattr(loss, "curvature_bound", math.inf)
    if not math.isfinite(curvature):
        raise ValueError(
            "lr is required: the model's loss has no finite curvature bound for the default 1/L step"
        )
    if isinstance(loss, MarginLoss):
        curvature = min(curvature, MARGIN_CURVATURE)
    return 1.0 / (curvature * check_positive("data_norm", data_norm) ** 2 + model.l2)


def dp_sgd(model, *, epsilon: float | None = None, delta: float | None = None, rng=None,
           ledger=None, accountant=None, secure_noise: bool = False, **hyper) -> DPResult:
    """DP-SGD with Poisson sampling and RDP accounting (Abadi et al. 2016, Algorithm 1).

    ``model`` is a :class:`~dpopt.models.PrivateModel`; the step is

        w_{t+1} = w_t − η·[(Σ_{i∈B_t} clip(∇f_i(w_t), C) + N(0, σ²I))/(q N) + ∇r(w_t)],

    B_t a Poisson sample at rate q and N the public record count (``n_public``).  (``epsilon``,
    ``delta``) is the total budget, spent from ``ledger`` when given (RDP,
    add/remove-one), else from a new RDP ledger; ``rng`` a Generator, seed or
    None.  σ is calibrated so that the T steps fit what the ledger has left, by
    ``accountant`` (``"rdp"``, ``"pld"``, or ``"auto"``/None: the tightest that
    applies, :func:`~dpopt.privacy.calibration.run_accountant`), which also
    checks the run's own budget.  ``secure_noise=True`` releases every noisy
    gradient sum on a power-of-two grid with exact discrete Gaussian noise from
    the OS CSPRNG (:func:`dpopt.privacy.mechanisms.release`), charged as the
    subsampled ``DiscreteGaussian`` of the same noise multiplier.
    Hyper-parameters: the fields of :class:`DPSGDHyper`.  Returns the last
    iterate as a :class:`~dpopt.result.DPResult` (``method="dp-sgd"``) whose
    ledger holds the charged events; ``info["sigma"]`` is σ,
    ``info["noise_multiplier"]`` σ/C and ``info["normalizer"]`` N and its source.
    """
    model = check_model(model)
    if ledger is None:
        check_budget(epsilon, delta, need_delta=True)
    h = DPSGDHyper.from_kwargs(**hyper)
    if h.rate < 1.0:  # before the record count: such a ledger refused the first sampled step after charging it
        node = ledger
        while node is not None:
            if node.notion == "zcdp":
                raise ValueError("dp-sgd samples its batches (rate < 1), which a zCDP ledger cannot account (zCDP "
                                 "has no amplification by subsampling); give an RDP or PLD ledger, or rate=1")
            node = node.parent
    fresh = ledger is None
    acc = run_accountant(accountant, ledger, orders=h.orders)
    ledger, epsilon, delta = run_ledger(ledger, epsilon, delta, accountant=acc)
    rng = as_generator(rng)
    normalizer = public_normalizer(model, n_public=h.n_public, ledger=ledger, rng=rng,
                                   epsilon=epsilon, delta=delta, secure_noise=secure_noise)
    data_norm = h.data_norm if h.data_norm is not None else (model.data_norm or 1.0)
    lr = h.lr if h.lr is not None else default_step(model, data_norm)
    c_grad = h.c_grad if h.c_grad is not None else default_gradient_clip(model)
    w = start_point(model, h.w0)
    secure_size = int(np.size(w)) if secure_noise else 0
    sigma = _calibrated_sigma(epsilon, delta, h.steps, h.rate, c_grad, h.orders, acc.notion, secure_size)
    oracle = PrivateOracle(model, ledger=ledger, rng=rng, normalizer=normalizer, rate=h.rate,
                           c_grad=c_grad, secure_noise=secure_noise)
    if not (fresh and normalizer.source == "declared"):  # part of the budget is already spent
        sigma = smallest_affordable_scale(
            ledger, lambda s: ev.SelfComposed(oracle.wrap(_step_event(s, c_grad, secure_size)), h.steps),
            start=sigma)
    trajectory = []
    for _ in range(h.steps):
        w = w - lr * oracle.gaussian_gradient(w, sigma)
        if h.trajectory:
            trajectory.append(diagnostic_value(model, w))
    info = {"sigma": sigma, "noise_multiplier": sigma / c_grad, "steps": h.steps, "lr": lr,
            "c_grad": c_grad, **oracle.describe()}
    return DPResult.from_ledger(
        ledger, x=w, fun=diagnostic_value(model, w), method="dp-sgd", nit=h.steps,
        trajectory=np.array(trajectory) if h.trajectory else None, info=info, guarantee="exact",
        notes=_ACCOUNTING[acc.notion] + normalizer_note(normalizer),
    )
