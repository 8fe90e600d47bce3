"""Moved to :mod:`dpopt.report` (one module per concern); this name stays for code written against it.

New code imports from :mod:`dpopt.report`.
"""

from ..report import *  # noqa: F403
from ..report import __all__  # noqa: F401
