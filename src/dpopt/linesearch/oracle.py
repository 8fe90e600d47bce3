"""The private data access of DP-BLSGD: minibatches, clipping, noise and the ledger in one place.

DESIGN.md ("Algorithms are pure math"): the optimizer in :mod:`.algorithms`
only sees this oracle.  The oracle owns

* the Poisson sampler at rate q (chen2020 Algorithm 2, line 4; §4.3 assumes
  Poisson subsampling for Lemma 4) — or the full data when q = 1 (DP-BLGD);
* the clipping thresholds C_grad (eq. (6)) and C_obj (Theorem 1), which
  DP-BLSGD-AC may shrink (eq. (9));
* the events it charges and the mechanisms that draw the noise.

Every sub-routine draws its *own* minibatch.  Algorithm 2 reuses the
gradient's minibatch B for the line search, but §4.3 amplifies the gradient
and each line search separately (``amp(αρ_grad)`` and ``amp(ε_ls(α))``), which
Lemma 4 justifies only when each mechanism runs on an independent Poisson
sample; fresh samples make the accounting of §4.3 exact.

Scale: sums over a minibatch are divided by the *expected* batch size q·n,
not by the realized |B| of line 6 (which is data-dependent under Poisson
sampling and would leak), as in Abadi et al. 2016.
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import check_choice, check_int, check_positive, check_rate
from ..privacy import Ledger, PoissonSampler
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from .model import PrivateModel
from .noisy_btls import NOISES, QUERIES, Ray, line_search_event, noisy_btls

__all__ = ["LineSearchOracle", "gradient_sigma"]


def gradient_sigma(rho: float, clip: float) -> float:
    """σ of Algorithm 2, line 6: variance C_grad²/(2ρ_grad), i.e. (α, αρ)-RDP (Lemma 1)."""
    return check_positive("clip", clip) / math.sqrt(2.0 * check_positive("rho", rho))


class LineSearchOracle:
    """Noisy gradients and noisy line searches of one run, charged to one ledger.

    Parameters
    ----------
    model:
        A :class:`~dpopt.linesearch.model.PrivateModel`.
    ledger:
        The run's RDP ledger (add/remove-one relation).
    rng:
        ``numpy.random.Generator`` for sampling and noise.
    rate:
        Poisson sampling rate q ∈ (0, 1]; 1 means full batch (no sampling).
    c_grad, c_obj:
        Clipping thresholds C_grad (gradient, eq. (6)) and C_obj (objective,
        Theorem 1).
    noise:
        ``"laplace"`` or ``"gaussian"``: the NoisyBTLS variant.
    lazy:
        Evaluate line-search queries one at a time (see :func:`noisy_btls`).
    query:
        What a line-search query measures: ``"objective"`` (the clipped objective of
        chen2020 Theorem 1) or ``"decrease"`` (per-record decreases clipped to
        ±C_obj); see :meth:`~dpopt.linesearch.noisy_btls.Ray.of_model`.
    n_public:
        The record count used to normalize sums (default ``model.n``).  It must
        be public: under add/remove-one the true n differs between neighbours,
        and DP-SGD practice (Abadi et al. 2016) treats it as known.  Pass a
        fixed value when n itself is sensitive.
    """

    def __init__(self, model: PrivateModel, *, ledger: Ledger, rng: np.random.Generator,
                 rate: float, c_grad: float, c_obj: float, noise: str = "laplace",
                 lazy: bool = False, n_public: int | None = None, query: str = "objective"):
        if not isinstance(model, PrivateModel):
            raise TypeError(f"model must be a PrivateModel, got {type(model).__name__}")
        if not isinstance(ledger, Ledger):
            raise TypeError(f"ledger must be a dpopt.privacy.Ledger, got {type(ledger).__name__}")
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        self.model = model
        self.ledger = ledger
        self.rng = rng
        self.rate = check_rate("rate", rate)
        self.sampler = PoissonSampler(self.rate) if self.rate < 1.0 else None
        self.c_grad = check_positive("c_grad", c_grad)
        self.c_obj = check_positive("c_obj", c_obj)
        self.noise = check_choice("noise", noise, NOISES)
        self.lazy = bool(lazy)
        self.query = check_choice("query", query, QUERIES)
        n_public = model.n if n_public is None else check_int("n_public", n_public)
        #: Expected number of records per sub-routine, q·n: the public normalizer.
        self.weight = self.rate * n_public
        self._events: dict = {}  # events by (kind, budget, threshold): built once, re-used

    # -- events -----------------------------------------------------------------------------
    def _wrap(self, event: ev.Event) -> ev.Event:
        return self.sampler.wrap(event) if self.sampler is not None else event

    def gradient_event(self, rho: float) -> ev.Event:
        """The event one noisy gradient with budget ρ charges (amplified when q < 1)."""
        key = ("gradient", rho, self.c_grad)
        if key not in self._events:
            sigma = gradient_sigma(rho, self.c_grad)
            self._events[key] = self._wrap(ev.Gaussian(sigma, self.c_grad))
        return self._events[key]

    def line_search_event(self, budget: float) -> ev.Event:
        """The event one NoisyBTLS call with budget ε_BT (or ρ_BT) charges."""
        key = ("line_search", budget, self.c_obj)
        if key not in self._events:
            self._events[key] = self._wrap(line_search_event(budget, self.c_obj, self.noise))
        return self._events[key]

    def can_afford(self, *events: ev.Event) -> bool:
        """Whether the ledger can still pay for all ``events`` together."""
        event = events[0] if len(events) == 1 else ev.Composed(events)
        return self.ledger.can_afford(event)

    # -- releases ---------------------------------------------------------------------------
    def _batch(self):
        if self.sampler is None:
            return None
        return self.sampler.indices(self.model.n, self.rng)

    def noisy_gradient(self, w, rho: float) -> np.ndarray:
        """g̃ = (Σ_B clip(∇f_i, C_grad) + N(0, σ²I))/(q n) + ∇r(w) (Algorithm 2, lines 4–6)."""
        indices = self._batch()
        total, _ = self.model.per_example_clipped_grad_sum(w, indices, self.c_grad)
        sigma = gradient_sigma(rho, self.c_grad)
        noisy = mech.gaussian(total, sensitivity=self.c_grad, sigma=sigma, ledger=self.ledger,
                              rng=self.rng, sampler=self.sampler)
        return noisy / self.weight + self.model.regularizer_grad(w)

    def line_search(self, w, g, *, eta0: float, budget: float, alpha: float, beta: float,
                    max_it: int) -> float:
        """NoisyBTLS (Algorithm 1) along w − η g on a fresh minibatch; 0 when it fails."""
        indices = self._batch()
        ray = Ray.of_model(self.model, w, g, cap=self.c_obj, indices=indices, weight=self.weight,
                           query=self.query)
        return noisy_btls(ray, eta0=eta0, budget=budget, ledger=self.ledger, rng=self.rng,
                          noise=self.noise, alpha=alpha, beta=beta, max_it=max_it,
                          sampler=self.sampler, lazy=self.lazy)

    def shrink_clipping(self, zeta: float) -> None:
        """C_grad ← (1 − ζ)C_grad and C_obj ← (1 − ζ)C_obj (eq. (9), DP-BLSGD-AC)."""
        factor = 1.0 - zeta
        self.c_grad *= factor
        self.c_obj *= factor
