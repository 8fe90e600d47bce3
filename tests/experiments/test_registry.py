"""The experiment registry that ``dpopt reproduce`` reads."""

from __future__ import annotations

import sys

import pytest

from dpopt.cli import build_parser
from dpopt.experiments import registry
from dpopt.experiments.registry import Experiment


def test_the_three_papers_are_registered_lazily():
    assert {"kuru2022", "han2014", "chen2020"} <= set(registry.names())
    for experiment in registry.EXPERIMENTS.values():
        assert experiment.title and experiment.module.startswith("dpopt.experiments.")
    assert all(registry.get(name).parallel for name in ("kuru2022", "han2014", "chen2020"))


def test_listing_imports_no_experiment_module():
    code = (
        "import sys; from dpopt.cli import build_parser; build_parser(); "
        "assert not [m for m in sys.modules if m.startswith('dpopt.experiments.') and "
        "m.split('.')[-1] in ('kuru2022', 'han2014', 'chen2020')], sorted(sys.modules)"
    )
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_reproduce_takes_its_choices_and_help_from_the_registry():
    parser = build_parser()
    sub = next(a for a in parser._subparsers._group_actions if a.dest == "command")
    reproduce = sub.choices["reproduce"]
    paper = next(a for a in reproduce._actions if a.dest == "paper")
    assert tuple(paper.choices) == registry.names()
    for experiment in registry.EXPERIMENTS.values():
        assert experiment.title in reproduce.epilog


def test_load_returns_the_run_function():
    from dpopt.experiments import han2014

    assert registry.get("han2014").load() is han2014.run


def test_register_rejects_duplicates_and_bad_entries(monkeypatch):
    monkeypatch.setattr(registry, "EXPERIMENTS", dict(registry.EXPERIMENTS))
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Experiment("han2014", "again", "dpopt.experiments.han2014"))
    with pytest.raises(ValueError, match="name must be lower-case"):
        Experiment("Liu 2024", "t", "m")
    with pytest.raises(TypeError, match="must be an Experiment"):
        registry.register(("liu2024", "t", "m"))
    with pytest.raises(ValueError, match="unknown experiment 'smith2099'; known: kuru2022"):
        registry.get("smith2099")
    with pytest.raises(ValueError, match=r"requires \['no_such_module_xyz'\], which no extra of dpopt installs"):
        Experiment("smith2099", "t", "m", requires=("no_such_module_xyz", "matplotlib"))
    added = registry.register(Experiment("smith2099", "a test entry", "dpopt.experiments.nowhere",
                                         requires=("torch", "matplotlib")))
    assert registry.get("smith2099") is added
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec reports it absent
    assert registry.missing_requirements(added) == ["torch"]
