"""The public constant a released sum is divided by (issue 14, finding 3).

Under the add/remove-one relation the number of records n is itself private:
it differs by one between neighbours.  A noisy mean (Σ_B clip(∇f_i) + noise)/n
normalized by the data's own n has sensitivity ≈ 2C/(n+1) between neighbours
(the sum moves by C *and* the divisor moves), not the C/n the Gaussian event
charges.  Released sums are therefore divided by a constant that is the same
for both neighbours:

* ``"declared"`` — a public record count ``n_public`` the user states (the
  size of a published data set, of a public split; the model's or the
  algorithm's ``n_public``).  Poisson-sampled queries divide by the expected
  batch size q·n_public, as Opacus does (Abadi et al. 2016's "lot size").
* ``"noisy_count"`` — when nothing is declared, the count is *released*
  once, before the run, by the Gaussian mechanism (sensitivity 1 under
  add/remove-one) with a small share of the run's budget
  (:data:`COUNT_SHARE` of its zCDP ρ); every later use is post-processing.

* ``"disclosed"`` — the data's own count, used as if public: a disclosed,
  warned, recorded non-private step (DESIGN.md invariant 7), for callers that
  follow the practice of treating a data set's size as known (Abadi et al.
  2016; Opacus).  The guarantee then holds for neighbours of the same size only.

The chosen normalizer is recorded in the result (``info["normalizer"]``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from .._validation import check_int
from ..privacy import Ledger
from ..privacy import events as ev
from ..privacy import mechanisms as mech
from ..privacy.zcdp import rho_from_epsilon_delta

__all__ = ["Normalizer", "COUNT_SHARE", "count_sigma", "public_normalizer", "laplace_count", "count_event",
           "disclosed_count", "CountDisclosureWarning", "normalizer_note"]

#: Share of the run's zCDP budget ρ(ε, δ) spent on the noisy record count (σ = 1/√(2·share·ρ)).
#: At ε = 0.05, δ = 1e-8 this is σ ≈ 860 records (≈ 3 % of Adult's 30k training rows), at ε = 1 σ ≈ 43.
COUNT_SHARE = 0.02
#: The released count is never used below this (a divisor must stay positive).
MIN_COUNT = 1.0

NORMALIZERS = ("declared", "noisy_count", "disclosed")


class CountDisclosureWarning(UserWarning):
    """The data's own record count is used as a public normalizer (a disclosed, non-private step)."""


@dataclass(frozen=True)
class Normalizer:
    """A public record count N and where it came from (``"declared"``, ``"noisy_count"``, ``"disclosed"``)."""

    count: float
    source: str

    def __post_init__(self):
        if not (math.isfinite(self.count) and self.count > 0):
            raise ValueError(f"count must be finite and > 0, got {self.count!r}")
        if self.source not in NORMALIZERS:
            raise ValueError(f"source must be one of {NORMALIZERS}, got {self.source!r}")

    def describe(self) -> dict:
        """JSON-ready record: ``{"count": N, "source": ...}``."""
        return {"count": float(self.count), "source": self.source}


def count_sigma(epsilon: float, delta: float, share: float = COUNT_SHARE) -> float:
    """σ of the noisy count: its zCDP cost 1/(2σ²) is ``share`` of ρ(ε, δ) (Bun & Steinke, Prop. 1.3)."""
    rho = rho_from_epsilon_delta(epsilon, delta)
    return 1.0 / math.sqrt(2.0 * share * rho)


def count_event(model, *, n_public=None, epsilon: float, delta: float,
                secure_noise: bool = False) -> ev.Event | None:
    """The event :func:`public_normalizer` charges for these arguments (None: nothing is charged).

    For planning a run's budget before anything is charged; public quantities only.
    """
    declared = n_public if n_public is not None else getattr(model, "n_public", None)
    if declared is not None or delta <= 0.0:
        return None
    event = ev.Gaussian(count_sigma(epsilon, delta), 1.0)
    return mech.secure_event(event, 1)[0] if secure_noise else event


def public_normalizer(model, *, n_public=None, ledger: Ledger, rng, epsilon: float,
                      delta: float, secure_noise: bool = False) -> Normalizer:
    """The normalizer of one run: ``n_public`` (else the model's declared one), else a noisy count.

    ``epsilon``/``delta`` are the run's planned budget (they size the count's
    noise); the count is charged to ``ledger`` as ``Gaussian(σ, 1)`` before it
    is drawn (``secure_noise``: on a grid with exact discrete Gaussian noise, charged as
    :func:`count_event` says).  ``model.n`` is read only inside that release.
    """
    declared = n_public if n_public is not None else getattr(model, "n_public", None)
    if declared is not None:
        return Normalizer(float(check_int("n_public", declared)), "declared")
    if delta <= 0.0:
        raise ValueError(
            "n_public is required for a pure-DP run: declare the public record count "
            "(the data's own n is private under add/remove-one)"
        )
    noisy = mech.gaussian(float(model.n), sensitivity=1.0, sigma=count_sigma(epsilon, delta),
                          ledger=ledger, rng=rng, secure_noise=secure_noise)
    return Normalizer(max(float(noisy), MIN_COUNT), "noisy_count")


def laplace_count(n_records: int, *, epsilon: float, ledger: Ledger, rng, secure_noise: bool = False) -> Normalizer:
    """The record count released by the Laplace mechanism: n + Lap(1/ε), at least :data:`MIN_COUNT`.

    Sensitivity 1 under add/remove-one; charged to ``ledger`` as ``Laplace(1/ε, 1)`` before it
    is drawn (``secure_noise``: exact discrete Laplace on a grid at the same ε, charged as the
    ``DiscreteLaplace``).  Pure ε-DP, so a caller can split an (ε_total, δ) budget into this ε and a run
    of (ε_total − ε, δ) by basic composition, whatever accountant the run uses.  Everything
    computed from the result (a choice of method, a default, a normalizer) is post-processing.
    """
    noisy = mech.laplace(float(check_int("n_records", n_records)), sensitivity=1.0, epsilon=epsilon,
                         ledger=ledger, rng=rng, secure_noise=secure_noise)
    return Normalizer(max(float(noisy), MIN_COUNT), "noisy_count")


def disclosed_count(model, *, stacklevel: int = 3) -> Normalizer:
    """The model's declared ``n_public``, else its own n as a *disclosed* count (warned).

    For callers that treat the data set's size as known; prefer declaring
    ``n_public`` or :func:`public_normalizer`'s noisy count.
    """
    declared = getattr(model, "n_public", None)
    if declared is not None:
        return Normalizer(float(check_int("n_public", declared)), "declared")
    warnings.warn(
        f"the data's own record count (n={model.n}) normalizes released sums: it is disclosed, and "
        "the guarantee covers neighbours of equal size only; declare n_public to avoid this",
        CountDisclosureWarning, stacklevel=stacklevel,
    )
    return Normalizer(float(model.n), "disclosed")


_NOTES = {
    "declared": "the declared public record count N = {count:g}",
    "noisy_count": "a noisy record count N = {count:.1f}, released first (sensitivity 1)",
    "disclosed": "the data's own record count N = {count:g}, disclosed (not covered by the guarantee "
                 "between neighbours of different size)",
}


def normalizer_note(normalizer: Normalizer) -> str:
    """One sentence for a result's notes: which public count divided the released sums."""
    return "Sums are divided by q*N with " + _NOTES[normalizer.source].format(count=normalizer.count) + "."
