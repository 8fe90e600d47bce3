"""The gradient oracles of the accelerated family: minibatch, sensitivity, Laplace noise, ledger.

:class:`PrivateGradientOracle` answers each query with kuru2022 eq. (2.8),

    ∇̃F_{B_t}(x) = (1/m) Σ_{i∈B_t} ∇f(x; y_i) + η_t + ∇h(x),   η_{t,j} ~ Laplace(b_t) i.i.d.,

where B_t is drawn by a :class:`~dpopt.privacy.FixedSizeSampler` (m of n
records without replacement, afresh for every repetition and iteration;
m = n is the full batch) and η_t is released by the shared private gradient
step of :class:`dpopt.oracles.PrivateOracle` (noise on the mean,
``noisy_sum(..., mean=True)``), which charges the amplified event
``Subsampled(Laplace(b_t, S₁/m), m/n, "without_replacement")`` to the pure-DP
ledger (replace-one relation) *before* drawing the noise.  The data are seen
by the oracle through the model contract (:class:`ProjectedData`).  The
regularizer h is data-independent and added after the noise.

Sensitivity (kuru2022 eq. (5.2), Assumption 3.2): for a margin loss with
|φ'| ≤ 1, ‖∇f(x; u, z)‖₁ ≤ ‖u‖₁, so replacing one record changes a per-example
gradient by at most S₁ = 2·sup‖u‖₁ and the minibatch mean by S₁/m.  The bound
``feature_bound`` on ‖u‖₁ is enforced: every row is projected onto the L1
ball of that radius before use (DESIGN.md invariant 5); ``rows_projected``
counts the rows that changed.

:class:`NonPrivateGradientOracle` is the same query without noise and without
a ledger.  It exists for the non-private reference runs and for tests that
check the recursions exactly; a result computed with it has guarantee "none".
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_positive
from ..models import PrivateModel
from ..objectives import LinearLoss, Objective, lipschitz_bound, project_rows
from ..oracles import Normalizer, PrivateOracle
from ..privacy import FixedSizeSampler, Ledger
from ..privacy import events as ev
from .datapass import DataPass

__all__ = ["PrivateGradientOracle", "NonPrivateGradientOracle", "ProjectedData", "l1_sensitivity"]

def l1_sensitivity(loss: LinearLoss, feature_bound: float) -> float:
    """S₁ = 2·sup|φ'|·sup‖u‖₁: replace-one L1 sensitivity of a per-example gradient, eq. (5.2)."""
    bound = lipschitz_bound(loss, check_positive("feature_bound", feature_bound))
    if not np.isfinite(bound):
        raise ValueError(
            f"the {loss.name} loss has unbounded gradients; its L1 sensitivity is infinite"
        )
    return 2.0 * bound


class ProjectedData(PrivateModel):
    """The accelerated family's data pass behind the model contract of :mod:`dpopt.models`.

    Every row lies in the L1 ball of radius B (projected by the oracle), so
    every per-example gradient has L2 norm ≤ ‖∇f_i‖₁ ≤ sup|φ'|·B =
    :attr:`gradient_bound`: the clipped sum is the plain sum for any clip at
    or above it (smaller clips are refused: this data pass does not clip).
    ``indices`` may be ``(R, m)``, one minibatch per row of ``W`` (R, d).
    The regularizer is the objective's own (kuru2022: λ‖x‖²).
    """

    def __init__(self, data: DataPass, bound: float):
        self.data = data
        self._bound = check_positive("bound", bound)

    @property
    def n(self) -> int:
        return self.data.n

    @property
    def dim(self) -> int:
        return self.data.d

    @property
    def gradient_bound(self) -> float:
        return self._bound

    @property
    def l2(self) -> float:  # strong-convexity modulus of the regularizer
        return float(self.data.objective.regularizer.strong_convexity)

    def per_example_clipped_grad_sum(self, w, indices, clip):
        if clip < self._bound:
            raise ValueError(f"clip must be >= the gradient bound {self._bound} (rows are projected, not clipped)")
        count = self.n if indices is None else np.shape(indices)[-1]
        return self.data.grad_sum(w, indices), count

    def clipped_loss_sum(self, w, indices, cap):
        return np.clip(self.data.objective.per_example_values(w, indices), 0.0, cap).sum(axis=-1)

    def loss_value(self, w):
        return self.data.objective.loss_value(w)

    def loss_grad(self, w):
        return self.data.objective.loss_grad(w)

    def regularizer_value(self, w):
        return self.data.objective.regularizer.value(w)

    def regularizer_grad(self, w):
        return self.data.objective.regularizer.grad(w)


class _GradientOracle:
    """Shared part: projected data, sampling of one minibatch per repetition, the data pass."""

    private = False

    def __init__(
        self,
        objective: Objective,
        *,
        feature_bound: float,
        batch_size: int | None = None,
        rng: np.random.Generator,
        precision: str | None = None,
    ):
        if not isinstance(objective, Objective):
            raise TypeError(
                f"objective must be a dpopt.objectives.Objective, got {type(objective).__name__}"
            )
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.feature_bound = check_positive("feature_bound", feature_bound)
        self.sensitivity = l1_sensitivity(objective.loss, self.feature_bound)
        X, self.rows_projected = project_rows(objective.X, self.feature_bound, "l1")
        if self.rows_projected:
            objective = Objective(objective.loss, X, objective.y, objective.regularizer, precision=objective.precision)
        self.objective = objective
        self.n, self.dim = objective.X.shape
        m = self.n if batch_size is None else check_int("batch_size", batch_size)
        if m > self.n:
            raise ValueError(f"batch_size must be <= n={self.n}, got {m}")
        self.batch_size = m
        self.sampler = FixedSizeSampler(m, self.n)
        self.data = DataPass(objective, precision)
        # Independent streams for minibatches and noise: a private and a non-private
        # oracle seeded alike then draw the same minibatches.
        self._sampling_rng, self._noise_rng = rng.spawn(2)
        self.queries = 0

    @property
    def full_batch(self) -> bool:
        return self.batch_size == self.n

    def draw_minibatches(self, repetitions: int) -> np.ndarray:
        """(R, m) indices: an independent uniform m-subset per repetition, from the sampler."""
        return self.sampler.indices(self._sampling_rng, repetitions=repetitions)

    def minibatch_gradient(self, W: np.ndarray) -> np.ndarray:
        """Minibatch mean loss gradient at each row of W (R, d); no noise, no regularizer."""
        if self.full_batch:
            return self.data.mean_grad(W)
        return self.data.mean_grad(W, self.draw_minibatches(W.shape[0]))

    def _regularizer_grad(self, W: np.ndarray) -> np.ndarray:
        return self.objective.regularizer.grad(W)


class PrivateGradientOracle(_GradientOracle):
    """kuru2022 eq. (2.8): minibatch mean gradient + Laplace(b_t) per coordinate, ledger charged.

    Parameters
    ----------
    objective:
        Mean loss + regularizer (:class:`dpopt.objectives.Objective`, linear loss with
        bounded derivative, e.g. logistic).
    feature_bound:
        The public bound on ‖u‖₁ (kuru2022 §5: 20); rows are projected onto it.
    batch_size:
        m (default n: the full batch).
    ledger:
        A pure-DP :class:`~dpopt.privacy.Ledger` with relation ``"replace_one"``.
    rng:
        The generator for minibatches and noise.
    precision:
        ``"float64"`` or ``"float32"`` (see :mod:`dpopt.accelerated.datapass`); default: the
        objective's own ``precision``.
    """

    private = True

    def __init__(
        self, objective, *, feature_bound, batch_size=None, ledger: Ledger, rng, precision=None,
        secure_noise: bool = False,
    ):
        super().__init__(
            objective,
            feature_bound=feature_bound,
            batch_size=batch_size,
            rng=rng,
            precision=precision,
        )
        if not isinstance(ledger, Ledger):
            raise TypeError(f"ledger must be a dpopt.privacy.Ledger, got {type(ledger).__name__}")
        if ledger.accountant_name != "pure" or ledger.relation != "replace_one":
            raise ValueError(
                "the accelerated methods are pure ε-DP under the replace-one relation "
                "(kuru2022 §2.2, Thm A.3): use Ledger(epsilon, accountant='pure', "
                f"relation='replace_one'), got "
                f"accountant={ledger.accountant_name!r}, relation={ledger.relation!r}"
            )
        self.ledger = ledger
        # Replace-one: n is public; the sums divide by the fixed batch size m.
        self.oracle = PrivateOracle(
            ProjectedData(self.data, self.sensitivity / 2.0), ledger=ledger, rng=self._noise_rng,
            sampling_rng=self._sampling_rng, sampler=self.sampler,
            normalizer=Normalizer(float(self.n), "declared"), c_grad=self.sensitivity / 2.0,
            secure_noise=secure_noise,  # exact discrete Laplace at the same ε (mechanisms.secure_event)
        )

    def gradient(self, W: np.ndarray, scale: float) -> np.ndarray:
        """Noisy gradient at each row of W (R, d), Laplace scale ``scale`` on the minibatch mean.

        A row that step sizes far above 1/L have carried out of the float range (max|w| beyond
        :meth:`_reach`, or not finite) gets NaN: it is queried at 0, charged and noised as any
        query, so the run neither raises nor overflows on the one neighbour whose records tip it over.
        """
        event = ev.Laplace(check_positive("scale", scale), self.sensitivity / self.batch_size)
        W = np.asarray(W, dtype=float)
        with np.errstate(invalid="ignore"):
            out = ~(np.max(np.abs(W), axis=-1) <= self._reach())  # NaN compares False: out of range too
        noisy = self.oracle.gradient(np.where(out[..., None], 0.0, W) if out.any() else W, event, mean=True)
        self.queries += 1
        if out.any():
            noisy[out] = np.nan
        return noisy

    def _reach(self) -> float:
        """The largest max|w| queried: every partial sum of a margin u·w is at most ‖u‖₁·max|w| ≤
        feature_bound·max|w| (rows are projected), so no margin overflows in the data pass's precision."""
        return float(np.finfo(self.data.precision).max) / (4.0 * self.feature_bound)


class NonPrivateGradientOracle(_GradientOracle):
    """The same minibatch gradient without noise or ledger (reference runs and tests only)."""

    def gradient(self, W: np.ndarray, scale: float | None = None) -> np.ndarray:
        """Minibatch gradient + regularizer gradient at each row of W; ``scale`` is ignored."""
        self.queries += 1
        return self.minibatch_gradient(W) + self._regularizer_grad(W)
