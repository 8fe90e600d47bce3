"""Private selection among public candidates by counts of the data (the exponential mechanism).

:func:`majority_label` — the majority class of a labelled model, chosen by the
exponential mechanism with utility = the label's count (sensitivity 1 under
add/remove-one and replace-one alike).  With thousands of records the private
choice is the true majority with overwhelming probability.  Step selection
along a line (DP-AGD's NoisyMax) is :meth:`~dpopt.oracles.PrivateOracle.select_step`.
"""

from __future__ import annotations

import numpy as np

from ..privacy import mechanisms as mech

__all__ = ["LABELS", "majority_label"]

#: The two labels a binary majority predictor chooses between, in score order.
LABELS = (-1.0, 1.0)


def majority_label(model, *, epsilon: float, ledger, rng, labels=LABELS, secure_noise: bool = False) -> float:
    """The label of ``labels`` chosen with P ∝ exp(ε·count/2) (ε-DP; charged to ``ledger``).

    ``model`` holds the labels as ``model.y`` (e.g. :class:`~dpopt.models.LinearModel`);
    every record's label must be one of ``labels``.  ``secure_noise``: the exact exponential
    mechanism (:func:`dpopt.privacy.mechanisms.exponential`).
    """
    y = getattr(model, "y", None)
    if y is None:
        raise TypeError(f"majority_label needs a model with labels y, got {type(model).__name__}")
    counts = np.array([np.count_nonzero(y == label) for label in labels], dtype=float)
    if counts.sum() != y.shape[0]:
        allowed = ", ".join(f"{label:+g}" for label in labels)
        raise ValueError(f"majority needs labels in {{{allowed}}}")
    index = int(mech.exponential(counts, epsilon=epsilon, sensitivity=1.0, ledger=ledger, rng=rng,
                                 secure_noise=secure_noise))
    return labels[index]
