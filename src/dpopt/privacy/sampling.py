"""Subsampling schemes that carry their own accounting.

DESIGN.md invariant 6: the sampler that draws a minibatch is the object that
wraps the mechanism's event in :class:`~dpopt.privacy.events.Subsampled`, so
the accountant always sees the scheme that was actually used.  Pass the sampler
to a mechanism (``sampler=...``) and it charges the amplified event.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_rate
from . import events as ev

__all__ = ["PoissonSampler", "FixedSizeSampler"]

# Above this many (repetition × record) keys, draw each repetition's subset on its own.
_VECTORIZED_ENTRIES = 1 << 24


class PoissonSampler:
    """Keep each of n records independently with probability ``rate`` (add/remove-one relation).

    Drawn as a Binomial(n, rate) size followed by a uniform subset of that
    size, which has exactly the Poisson-sampling distribution and costs
    O(rate·n) instead of n uniform draws.
    """

    scheme = ev.POISSON

    def __init__(self, rate: float):
        self.rate = check_rate("rate", rate)

    def wrap(self, event: ev.Event) -> ev.Event:
        return event if self.rate == 1.0 else ev.Subsampled(event, self.rate, self.scheme)

    def indices(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Sorted indices of one Poisson sample of ``range(n)``."""
        n = check_int("n", n)
        size = rng.binomial(n, self.rate)
        return np.sort(rng.choice(n, size=size, replace=False))

    def mask(self, n: int, rng: np.random.Generator, repetitions: int) -> np.ndarray:
        """Boolean (repetitions, n) membership mask, one independent sample per row."""
        n = check_int("n", n)
        repetitions = check_int("repetitions", repetitions)
        return rng.random((repetitions, n)) < self.rate

    def __repr__(self) -> str:
        return f"PoissonSampler(rate={self.rate!r})"


class FixedSizeSampler:
    """A uniformly random subset of exactly ``batch_size`` of n records (replace-one relation).

    Sampling without replacement at rate m/n, as in kuru2022 (Thm A.3, eq. (3.3)).
    """

    scheme = ev.WITHOUT_REPLACEMENT

    def __init__(self, batch_size: int, n: int):
        self.batch_size = check_int("batch_size", batch_size)
        self.n = check_int("n", n)
        if self.batch_size > self.n:
            raise ValueError(f"batch_size must be <= n={self.n}, got {self.batch_size}")
        self.rate = self.batch_size / self.n

    def wrap(self, event: ev.Event) -> ev.Event:
        return event if self.batch_size == self.n else ev.Subsampled(event, self.rate, self.scheme)

    def indices(self, rng: np.random.Generator, repetitions: int | None = None) -> np.ndarray:
        """(batch_size,) indices, or (repetitions, batch_size) with an independent subset per row."""
        if repetitions is None:
            return rng.choice(self.n, size=self.batch_size, replace=False)
        repetitions = check_int("repetitions", repetitions)
        if repetitions * self.n <= _VECTORIZED_ENTRIES:
            # The batch_size smallest of n i.i.d. uniform keys index a uniformly random subset.
            keys = rng.random((repetitions, self.n))
            return np.argpartition(keys, self.batch_size - 1, axis=1)[:, : self.batch_size]
        return np.stack([rng.choice(self.n, size=self.batch_size, replace=False) for _ in range(repetitions)])

    def __repr__(self) -> str:
        return f"FixedSizeSampler(batch_size={self.batch_size}, n={self.n})"
