"""A missing optional dependency is one line naming the ``pip install 'dpopt[EXTRA]'`` that brings it.

The plain install (numpy and scipy) has no scikit-learn, matplotlib, PyTorch or mpi4py; a command
or module that needs one says which extra to install, before it starts any work (``dpopt demo``
without matplotlib used to fit for 35 s and then end in a traceback).  A module is made missing
here by ``sys.modules[name] = None``, which makes both ``importlib.util.find_spec`` and ``import``
report it absent.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import re
import sys

import pytest
from packaging.requirements import Requirement

from dpopt._validation import EXTRAS, install_hint
from dpopt.cli import main


def _run(argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # pragma: no cover - argparse's own errors
        code = exc.code
    captured = capsys.readouterr()
    assert captured.out == ""
    return code, captured.err


def test_every_extra_named_in_a_hint_is_declared_and_brings_its_module():
    declared = {}
    for text in md.requires("dpopt") or []:
        req = Requirement(text)
        match = re.search(r'extra\s*==\s*"([^"]+)"', str(req.marker or ""))
        if match:
            declared.setdefault(match.group(1), set()).add(re.sub(r"[-_.]+", "-", req.name).lower())
    distribution = {"sklearn": "scikit-learn", "matplotlib": "matplotlib", "torch": "torch", "mpi4py": "mpi4py"}
    for module, (_, extra) in EXTRAS.items():
        assert distribution[module] in declared.get(extra, set()), (module, extra, declared.get(extra))


def test_the_hint_names_each_module_and_each_extra_once():
    assert install_hint(["sklearn"]) == "needs scikit-learn: pip install 'dpopt[sklearn]'"
    assert install_hint(["matplotlib", "torch", "sklearn"]) == (
        "needs matplotlib, PyTorch, scikit-learn: pip install 'dpopt[plots,torch,sklearn]'"
    )


@pytest.mark.parametrize(
    "argv, absent, message",
    [
        (["demo"], ("matplotlib",), "dpopt demo: error: needs matplotlib: pip install 'dpopt[plots]'"),
        (["fit", "--data", "x.csv", "--target", "y", "--epsilon", "1"], ("sklearn",),
         "dpopt fit: error: needs scikit-learn: pip install 'dpopt[sklearn]'"),
        (["predict", "--model", "m.json", "--data", "x.csv"], ("sklearn",),
         "dpopt predict: error: needs scikit-learn: pip install 'dpopt[sklearn]'"),
        (["tune", "--data", "x.csv", "--target", "y", "--space", "C=1:2", "--epsilon", "1"], ("sklearn",),
         "dpopt tune: error: needs scikit-learn: pip install 'dpopt[sklearn]'"),
        (["reproduce", "kusner2015", "--quick"], ("sklearn",),
         "dpopt reproduce: error: kusner2015 needs scikit-learn: pip install 'dpopt[sklearn]'"),
        (["reproduce", "chen2020-nn", "--quick"], ("torch", "sklearn"),
         "dpopt reproduce: error: chen2020-nn needs PyTorch, scikit-learn: pip install 'dpopt[torch,sklearn]'"),
    ],
)
def test_a_command_without_its_optional_module_is_one_line_before_any_work(
    argv, absent, message, monkeypatch, tmp_path, capsys
):
    monkeypatch.chdir(tmp_path)
    for module in absent:
        monkeypatch.setitem(sys.modules, module, None)
    code, err = _run(argv, capsys)
    assert (code, err.splitlines()) == (2, [message])
    assert list(tmp_path.iterdir()) == []


def test_an_optional_module_a_command_meets_late_is_one_line(monkeypatch, capsys):
    import dpopt.cli.account as account

    def needs_torch(args):
        import torch  # noqa: F401

    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(account, "run", needs_torch)
    code, err = _run(["account", "--mechanism", "laplace", "--scale", "1"], capsys)
    assert (code, err.splitlines()) == (2, ["dpopt account: error: needs PyTorch: pip install 'dpopt[torch]'"])


def test_importing_the_estimators_without_scikit_learn_names_the_extra(monkeypatch):
    for name in [n for n in sys.modules if n == "dpopt.estimators" or n.startswith("dpopt.estimators.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    hint = r"^dpopt.estimators needs scikit-learn: pip install 'dpopt\[sklearn\]'$"
    with pytest.raises(ModuleNotFoundError, match=hint):
        importlib.import_module("dpopt.estimators")


def test_figures_without_matplotlib_name_the_extra(monkeypatch):
    from dpopt.report.figures import pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ModuleNotFoundError, match=r"needs matplotlib: pip install 'dpopt\[plots\]'$"):
        pyplot()


def _without_torch(monkeypatch):
    for name in [n for n in sys.modules if n == "dpopt.neural" or n.startswith("dpopt.neural.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "torch", None)


def test_audit_all_skips_a_target_this_installation_cannot_run_and_a_named_one_is_one_line(monkeypatch, capsys):
    from dpopt.experiments import audits

    _without_torch(monkeypatch)
    monkeypatch.setattr(audits, "available", lambda: ["laplace", "neural-dp-sgd"])
    assert main(["audit", "all", "--samples", "200", "--seed", "1"]) == 0
    captured = capsys.readouterr()
    assert "dpopt audit: note: skipped neural-dp-sgd, which needs PyTorch: pip install 'dpopt[torch]'" in (
        captured.err.splitlines()
    )
    assert "laplace" in captured.out and "neural-dp-sgd" not in captured.out
    code, err = _run(["audit", "neural-dp-sgd", "--samples", "200"], capsys)
    assert (code, err.splitlines()) == (2, ["dpopt audit: error: needs PyTorch: pip install 'dpopt[torch]'"])
