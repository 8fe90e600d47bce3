"""dpopt: differentially private optimization on one privacy core.

Layers (DESIGN.md), lowest first: :mod:`dpopt.privacy`; :mod:`dpopt.objectives`
and :mod:`dpopt.datasets`; the algorithm families; :mod:`dpopt.estimators`;
:mod:`dpopt.experiments` and :mod:`dpopt.cli`.
"""

__version__ = "0.1.0"
