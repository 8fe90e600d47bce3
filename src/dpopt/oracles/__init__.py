"""The private-data-access layer: sample, clip, noise (through :mod:`dpopt.privacy`), charge.

Every algorithm family reads private data only through these oracles, over a
model implementing :class:`dpopt.models.PrivateModel`:

* :class:`PrivateOracle` — Gaussian and Laplace gradients (one private gradient
  step, :meth:`PrivateOracle.noisy_sum`), the clipped-loss line-search query
  (AboveThreshold, :meth:`PrivateOracle.line_search`) and step selection
  (:meth:`PrivateOracle.select_step`);
* :class:`Ray`, :func:`above_threshold_search`, :func:`line_search_event` — the
  line-search query itself (chen2020 Algorithm 1, Theorems 1–3);
* :func:`noisy_btls`, :func:`noisy_btls_step`, :func:`reset_initial_step` — NoisyBTLS
  around that query (chen2020 Algorithm 1, intelligent backtracking §4.2), and
  :class:`LineSearchOracle`, the oracle DP-BLSGD builds from a declared ``n_public``:
  shared by :mod:`dpopt.linesearch` and :mod:`dpopt.neural`;
* :func:`majority_label` — private selection of the majority class;
* :class:`Normalizer`, :func:`public_normalizer` — the public record count that
  released sums are divided by (never the data's own n);
* :func:`run_ledger` — the ledger a run spends from (given, or made at the top).
"""

from .ledgers import run_ledger, smallest_affordable_scale
from .line_search import NOISES, QUERIES, Ray, above_threshold_search, armijo_queries, line_search_event
from .line_search_oracle import LineSearchOracle
from .noisy_btls import candidate_steps, noisy_btls, noisy_btls_step, reset_initial_step
from .normalizer import (
    COUNT_SHARE,
    CountDisclosureWarning,
    Normalizer,
    count_event,
    count_sigma,
    disclosed_count,
    laplace_count,
    normalizer_note,
    public_normalizer,
)
from .oracle import PrivateOracle, gaussian_sigma, release_events, step_event
from .selection import LABELS, majority_label

__all__ = [
    "PrivateOracle",
    "gaussian_sigma",
    "release_events",
    "step_event",
    "Ray",
    "NOISES",
    "QUERIES",
    "above_threshold_search",
    "armijo_queries",
    "line_search_event",
    "candidate_steps",
    "noisy_btls",
    "noisy_btls_step",
    "reset_initial_step",
    "LineSearchOracle",
    "Normalizer",
    "COUNT_SHARE",
    "count_sigma",
    "public_normalizer",
    "laplace_count",
    "count_event",
    "disclosed_count",
    "normalizer_note",
    "CountDisclosureWarning",
    "majority_label",
    "LABELS",
    "run_ledger",
    "smallest_affordable_scale",
]
