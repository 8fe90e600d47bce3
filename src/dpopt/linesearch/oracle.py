"""The line-search family's handle on :class:`dpopt.oracles.PrivateOracle`.

``LineSearchOracle`` (the constructor with ``n_public=``) and ``gradient_sigma``
(σ = C_grad/√(2ρ_grad), chen2020 Algorithm 2, line 6) live in
:mod:`dpopt.oracles.line_search_oracle`, shared with :mod:`dpopt.neural`; this
module re-exports them under the family's earlier names.
"""

from __future__ import annotations

from ..oracles.line_search_oracle import LineSearchOracle, gradient_sigma

__all__ = ["LineSearchOracle", "gradient_sigma"]
