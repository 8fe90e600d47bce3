"""The experiments ``dpopt reproduce`` knows: one :class:`Experiment` entry per paper.

An entry is cheap (a name, a one-line title, the module that holds the
experiment): listing the papers imports none of them, so an experiment that
needs an optional dependency (PyTorch, mpi4py) costs nothing until it is run.

How to register a new experiment (e.g. ``smith2026``):

1. Write ``dpopt/experiments/smith2026.py`` on the shared skeleton: the
   paper's ``_compute``, ``_write`` and ``_report`` functions, then

       EXPERIMENT = PaperExperiment("smith2026", FULL, QUICK, SUMMARY_COLUMNS, _compute, _write, _report)
       run = EXPERIMENT.run

   (:mod:`dpopt.experiments.framework` explains each piece and runs the
   tasks with :func:`~dpopt.experiments.framework.execute`).  What
   ``dpopt reproduce`` needs is only a function ``run(quick=False, out=None,
   *, seed=None, progress=None, jobs=None)`` whose result has ``text``
   (printed) and ``paths`` (each written file's relative name → its path).
2. Add one line at the bottom of this file::

       register(Experiment("smith2026", "Smith (2026) §4: ...", "dpopt.experiments.smith2026",
                           requires=("matplotlib",)))

   ``requires`` lists the importable modules the run needs (checked before it
   starts, with a one-line ``pip install`` hint); ``parallel=False`` when
   ``--jobs`` does not apply.

``dpopt reproduce`` reads :data:`EXPERIMENTS` for its choices, help text and
checks; nothing about a paper is written in the command itself.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from .._validation import EXTRAS, missing_modules

__all__ = ["Experiment", "EXPERIMENTS", "register", "get", "names", "missing_requirements"]

_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class Experiment:
    """One reproducible experiment.

    ``name`` is what ``dpopt reproduce NAME`` takes (lower case, e.g.
    ``"chen2020-nn"``); ``title`` one line for the help text; ``module`` the
    importable module holding ``entry`` (default ``run``, see the module
    docstring for its signature); ``parallel`` whether ``--jobs`` applies;
    ``requires`` the optional modules the run imports beyond numpy and scipy
    (keys of :data:`dpopt._validation.EXTRAS`, which names the extra that
    installs each).
    """

    name: str
    title: str
    module: str
    parallel: bool = True
    requires: tuple[str, ...] = ("matplotlib",)
    entry: str = "run"

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"name must be lower-case letters, digits and '-', got {self.name!r}")
        if not self.title or not self.module:
            raise ValueError(f"experiment {self.name!r}: title and module must not be empty")
        unknown = sorted(set(self.requires) - set(EXTRAS))
        if unknown:
            raise ValueError(f"experiment {self.name!r}: requires {unknown}, which no extra of dpopt installs")

    def load(self) -> Callable:
        """The experiment's ``run`` function (imports its module)."""
        return getattr(importlib.import_module(self.module), self.entry)


#: name → :class:`Experiment`, in the order ``dpopt reproduce --help`` lists them.
EXPERIMENTS: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to :data:`EXPERIMENTS`; registering a name twice is an error."""
    if not isinstance(experiment, Experiment):
        raise TypeError(f"experiment must be an Experiment, got {type(experiment).__name__}")
    if experiment.name in EXPERIMENTS:
        raise ValueError(f"experiment {experiment.name!r} is already registered")
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def get(name: str) -> Experiment:
    """The registered experiment ``name``; ValueError listing the known ones otherwise."""
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}") from None


def names() -> tuple[str, ...]:
    return tuple(EXPERIMENTS)


def missing_requirements(experiment: Experiment) -> list[str]:
    """The modules of ``experiment.requires`` that cannot be imported here."""
    return missing_modules(experiment.requires)


# -- the experiments ------------------------------------------------------------------------------------
register(Experiment(
    "kuru2022",
    "Kuru et al. (2022) §5: DP-GD, DP-HB, DP-NAG, DP-MASG and the -opt budget split on logistic regression",
    "dpopt.experiments.kuru2022",
))
register(Experiment(
    "han2014",
    "Han, Topcu & Pappas (2014) §5: four private mechanisms for piecewise-affine minimization",
    "dpopt.experiments.han2014",
))
register(Experiment(
    "chen2020",
    "Chen & Lee (2020) §5: private line search (DP-BLSGD, DP-BLGD) against DP-SGD, DP-AGD and others",
    "dpopt.experiments.chen2020",
))
register(Experiment(
    "kusner2015",
    "Kusner et al. (2015) §6: the multi-task GP likelihood of k1 (Figure 1) and private hyper-parameter tuning",
    "dpopt.experiments.kusner2015",
    parallel=False,
    requires=("matplotlib", "sklearn"),
))
register(Experiment(
    "chen2020-nn",
    "Chen & Lee (2020) §5.7: DP-BLSGD, DP-SGD and DP-Adam training networks at equal per-iteration RDP",
    "dpopt.experiments.chen2020_nn",
    requires=("matplotlib", "torch", "sklearn"),  # sklearn: its bundled digits set (quick and full runs)
))
register(Experiment(
    "liu2024",
    "Liu, Johansson & Shi (2024) §5: private distributed dual averaging (Algorithm 1 vs [19]) on SVMs",
    "dpopt.experiments.liu2024",
    requires=("matplotlib", "sklearn"),
))
