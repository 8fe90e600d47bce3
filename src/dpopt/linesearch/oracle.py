"""The line-search family's private data access is :class:`dpopt.oracles.PrivateOracle`.

Kept as the family's names for it: ``LineSearchOracle`` (the oracle) and
``gradient_sigma`` (σ = C_grad/√(2ρ_grad), chen2020 Algorithm 2, line 6).
"""

from __future__ import annotations

from ..oracles import PrivateOracle as LineSearchOracle
from ..oracles import gaussian_sigma as gradient_sigma

__all__ = ["LineSearchOracle", "gradient_sigma"]
