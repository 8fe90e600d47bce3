"""The DP-BLSGD oracle: :class:`dpopt.oracles.PrivateOracle` built from a declared ``n_public``.

``LineSearchOracle`` is the oracle of the backtracking line-search methods of
chen2020 (Algorithm 2 and its §5.7 use on networks), with the constructor both
:mod:`dpopt.linesearch` and :mod:`dpopt.neural` call (``n_public=`` instead of
a :class:`~dpopt.oracles.Normalizer`); ``gradient_sigma`` is
σ = C_grad/√(2ρ_grad) (chen2020 Algorithm 2, line 6).
"""

from __future__ import annotations

from .normalizer import Normalizer, disclosed_count
from .oracle import PrivateOracle
from .oracle import gaussian_sigma as gradient_sigma

__all__ = ["LineSearchOracle", "gradient_sigma"]


class LineSearchOracle(PrivateOracle):
    """:class:`~dpopt.oracles.PrivateOracle` with the normalizer given as ``n_public``.

    ``normalizer`` (a :class:`~dpopt.oracles.Normalizer` or a declared count)
    wins; else ``n_public`` (declared); else the model's declared ``n_public``;
    else the data's own n, disclosed with a
    :class:`~dpopt.oracles.CountDisclosureWarning`
    (:func:`~dpopt.oracles.disclosed_count`).
    """

    def __init__(self, model, *, ledger, rng, rate: float, c_grad: float, c_obj: float,
                 noise: str = "laplace", lazy: bool = False, n_public: int | None = None,
                 query: str = "objective", normalizer=None, secure_noise: bool = False):
        if normalizer is None:
            normalizer = (Normalizer(float(n_public), "declared") if n_public is not None
                          else disclosed_count(model, stacklevel=3))
        super().__init__(model, ledger=ledger, rng=rng, normalizer=normalizer, rate=rate,
                         c_grad=c_grad, c_obj=c_obj, noise=noise, query=query, lazy=lazy,
                         secure_noise=secure_noise)
