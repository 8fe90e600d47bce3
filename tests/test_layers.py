"""The house rules of CONTRIBUTING.md, checked on the source of src/dpopt (parsed, never imported).

1. Layers: a room imports only rooms of lower layers (plus the allowances
   listed here), so no family imports another family and nothing imports upward.
2. Heavy optional dependencies stay in their own room: torch in neural and
   models, mpi4py in dualavg's MPI back end, matplotlib in report.
3. Privacy noise is drawn only in dpopt.privacy: a call such as
   ``rng.laplace(...)``, ``rng.normal(...)`` or ``torch.randn(...)`` anywhere
   else fails, except in the documented allowlist (synthetic data, random
   problem instances).
4. Data sets are read by the data layer and handed down: no algorithm family
   imports dpopt.datasets.

Known violations in areas under active work are listed, with a comment, in
KNOWN_VIOLATIONS; an entry that no longer occurs fails too, so the list only
shrinks.  A new package under src/dpopt must be placed in LAYERS (and get its
paragraph in CONTRIBUTING.md) before this test passes.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "dpopt"

#: The algorithm families: pure math over oracles, one paper each; none imports another.
FAMILIES = ("accelerated", "piecewise", "linesearch", "neural", "dualavg", "bayesopt")

#: Rooms by layer, lowest first.  "__init__" is the top-level package (its ``__version__``).
LAYERS = (
    ("__init__", "_validation", "progress"),  # helpers that import nothing of dpopt
    ("privacy",),  # events, mechanisms, accountants, ledger: knows nothing about optimization
    ("result",),  # the result object every family returns (solution, privacy record, events)
    ("objectives",),  # losses, regularizers, bounds
    ("models", "datasets"),  # the model contract; data sets and their preprocessing
    ("oracles",),  # the only code that reads private data: sample, clip, noise (via privacy), charge
    FAMILIES,
    ("estimators", "report"),  # scikit-learn faces over the families; report formatting
    ("experiments",),  # paper reproductions and audit targets
    ("cli",),  # the dpopt command
    ("__main__",),  # python -m dpopt
)
LAYER = {room: level for level, rooms in enumerate(LAYERS) for room in rooms}

#: Rooms that may import only these (narrower than their layer allows).
ONLY = {
    "report": {"__init__", "_validation", "privacy", "result"},  # formats what it is given, computes nothing
}
#: Rooms no algorithm family may import, though they sit lower.
NOT_FROM_FAMILIES = {"datasets"}  # data reach a family through its model/oracle, never by loading a data set

#: Third-party modules allowed only in these rooms or files (paths relative to src/dpopt).
HEAVY = {
    # privacy/torch_noise.py: the mechanism that draws on a tensor's device; estimators/neural.py: DPMLPClassifier,
    # which API.md promises imports torch lazily
    "torch": ("neural", "models", "privacy/torch_noise.py", "estimators/neural.py"),
    "opacus": ("neural",),
    "mpi4py": ("dualavg/mpi.py",),
    "matplotlib": ("report",),
}

#: Method names that draw random noise (numpy Generator / RandomState, torch).
NOISE_CALLS = {
    "laplace", "normal", "standard_normal", "gumbel", "exponential", "standard_exponential", "standard_cauchy",
    "standard_t", "multivariate_normal", "logistic", "randn", "randn_like", "normal_", "exponential_",
}  # fmt: skip

#: Files outside dpopt.privacy that may draw such noise, and why: none of it protects a release.
NOISE_ALLOWLIST = {
    "datasets/synthetic.py": "synthetic data sets (kuru2022 §5 and friends): the data, not privacy noise",
    "dualavg/shards.py": "synthetic_shard: a node's synthetic data",
    "piecewise/problem.py": "PiecewiseAffineProblem.gaussian: the random instances of han2014 §5",
}

#: Rule breaks that exist today in areas other engineers are changing; each line says what is wrong.
#: Fix the code, then delete the line (an entry that no longer occurs fails the test).
KNOWN_VIOLATIONS: set[str] = set()

#: A package's ``__main__`` is a command-line entry point: it may import dpopt.cli.
ENTRY_POINT_MAY_IMPORT = {"cli"}


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        yield rel, path


def _room(rel: Path) -> str:
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.name != "__init__.py" else "__init__"


def _package(rel: Path) -> list[str]:
    """The package a module's relative imports start from, as dotted parts (``dpopt`` first)."""
    parts = ["dpopt", *rel.with_suffix("").parts]
    return parts[:-1]


def _target_room(dotted: str) -> str:
    """The room of an absolute module name inside dpopt (``dpopt.x.y`` → ``x``; ``dpopt`` → ``__init__``)."""
    parts = dotted.split(".")
    if len(parts) == 1:
        return "__init__"
    head = parts[1]
    return head if (SRC / head).is_dir() or (SRC / f"{head}.py").exists() else "__init__"


@cache
def _imports(rel: Path) -> tuple[list[tuple[str, int]], list[tuple[str, int]], set[str]]:
    """(dpopt modules imported, third-party top-level modules imported, names bound to dpopt.privacy)."""
    tree = ast.parse((SRC / rel).read_text(encoding="utf-8"), filename=str(rel))
    inside, outside, privacy_names = [], [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "dpopt" or alias.name.startswith("dpopt."):
                    inside.append((alias.name, node.lineno))
                    if alias.name.startswith("dpopt.privacy") and alias.asname:
                        privacy_names.add(alias.asname)
                else:
                    outside.append((alias.name.split(".")[0], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package(rel)[: len(_package(rel)) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "dpopt" or module.startswith("dpopt."):
                for alias in node.names:
                    full = f"{module}.{alias.name}"
                    # ``from .. import privacy`` imports the room named by the alias, not the package
                    target = full if module == "dpopt" and _target_room(full) != "__init__" else module
                    inside.append((target, node.lineno))
                    if target.startswith("dpopt.privacy"):
                        privacy_names.add(alias.asname or alias.name)
            else:
                outside.append((module.split(".")[0], node.lineno))
    return inside, outside, privacy_names


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _noise_calls(rel: Path) -> list[tuple[str, int]]:
    """``receiver.method(...)`` calls drawing noise, unless the receiver is a dpopt.privacy module or object."""
    _, _, privacy_names = _imports(rel)
    tree = ast.parse((SRC / rel).read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NOISE_CALLS:
            root = _root_name(node.func.value)
            if root in privacy_names:
                continue
            found.append((f"{root or '…'}.{node.func.attr}" if root == "torch" else node.func.attr, node.lineno))
    return found


def _allowed_in(rel: Path, places) -> bool:
    return any(rel.parts[0] == place or rel.as_posix() == place for place in places)


def _violations() -> dict[str, str]:
    """Every rule break in src/dpopt: its KNOWN_VIOLATIONS-style key → where it is."""
    found = {}
    for rel, _ in _modules():
        room = _room(rel)
        inside, outside, _ = _imports(rel)
        for module, line in inside:
            target = _target_room(module)
            if target == room or room not in LAYER or target not in LAYER:
                continue
            entry = rel.name == "__main__.py" and target in ENTRY_POINT_MAY_IMPORT
            upward = LAYER[target] >= LAYER[room] and not entry
            narrow = room in ONLY and target not in ONLY[room]
            data = room in FAMILIES and target in NOT_FROM_FAMILIES
            if upward or narrow or data:
                found[f"{rel.as_posix()} imports {target}"] = f"src/dpopt/{rel.as_posix()}:{line}"
        for module, line in outside:
            if module in HEAVY and not _allowed_in(rel, HEAVY[module]):
                found[f"{rel.as_posix()} imports {module}"] = f"src/dpopt/{rel.as_posix()}:{line}"
        if room != "privacy" and rel.as_posix() not in NOISE_ALLOWLIST:
            for call, line in _noise_calls(rel):
                found[f"{rel.as_posix()} draws noise: {call}"] = f"src/dpopt/{rel.as_posix()}:{line}"
    return found


def test_every_package_has_a_place_in_the_layers():
    rooms = {_room(rel) for rel, _ in _modules()}
    missing = sorted(rooms - set(LAYER))
    assert not missing, f"place {missing} in LAYERS (tests/test_layers.py) and describe it in CONTRIBUTING.md"


def test_imports_follow_the_house_rules():
    new = {key: where for key, where in _violations().items() if key not in KNOWN_VIOLATIONS}
    assert not new, "rule breaks (see CONTRIBUTING.md):\n" + "\n".join(f"  {w}: {k}" for k, w in sorted(new.items()))


def test_known_violations_still_exist():
    stale = sorted(KNOWN_VIOLATIONS - set(_violations()))
    assert not stale, f"fixed, so delete from KNOWN_VIOLATIONS in tests/test_layers.py: {stale}"


def test_contributing_describes_every_room():
    text = (SRC.parents[1] / "CONTRIBUTING.md").read_text(encoding="utf-8")
    rooms = {_room(rel) for rel, _ in _modules()} - {"__init__", "__main__", "_validation", "progress", "result"}
    missing = sorted(room for room in rooms if f"`dpopt.{room}`" not in text)
    assert not missing, f"CONTRIBUTING.md has no paragraph on {missing}"


# -- the checker itself must catch what it is meant to catch -------------------------------------------------
def _check_source(tmp_path, rel: str, source: str) -> dict[str, str]:
    """The rule breaks the checker finds in a tree holding only ``rel`` (every room an empty folder)."""
    fake = tmp_path / "dpopt"
    for room in {r for rooms in LAYERS for r in rooms} - {"__init__", "__main__"}:
        (fake / room).mkdir(parents=True, exist_ok=True)
    (fake / rel).parent.mkdir(parents=True, exist_ok=True)
    (fake / rel).write_text(source, encoding="utf-8")
    real = globals()["SRC"]
    globals()["SRC"] = fake
    _imports.cache_clear()
    try:
        return _violations()
    finally:
        globals()["SRC"] = real
        _imports.cache_clear()


def test_checker_flags_upward_family_heavy_and_noise(tmp_path):
    found = _check_source(tmp_path, "linesearch/bad.py", (
        "import numpy as np\n"
        "from ..accelerated import minimize\n"  # family → family
        "from ..cli import main\n"  # upward
        "from ..datasets import load\n"  # a family loading data
        "from ..privacy import mechanisms as mech\n"
        "def f(rng, x):\n"
        "    import torch\n"  # heavy dependency outside its room
        "    mech.laplace(x, epsilon=1.0, sensitivity=1.0, rng=rng)\n"  # fine: the privacy core draws
        "    return x + rng.laplace(size=3) + np.random.normal(size=3)\n"  # noise drawn in a family
    ))  # fmt: skip
    assert set(found) == {
        "linesearch/bad.py imports accelerated", "linesearch/bad.py imports cli", "linesearch/bad.py imports datasets",
        "linesearch/bad.py imports torch", "linesearch/bad.py draws noise: laplace",
        "linesearch/bad.py draws noise: normal",
    }  # fmt: skip


def test_checker_passes_lower_imports_and_the_privacy_core(tmp_path):
    assert _check_source(tmp_path, "oracles/good.py", (
        "from .. import __version__\n"
        "from ..models import LinearModel\n"
        "from ..privacy import events as ev\n"
        "from dpopt.privacy import mechanisms\n"
        "def g(rng):\n"
        "    return mechanisms.gaussian(1.0, sigma=1.0, rng=rng), ev.AboveThreshold.laplace(1.0, 1.0, 1.0)\n"
    )) == {}  # fmt: skip
    assert _check_source(tmp_path, "privacy/noise.py", "def h(rng):\n    return rng.laplace()\n") == {}
    assert "report/x.py imports linesearch" in _check_source(tmp_path, "report/x.py",
                                                                 "from ..linesearch import SPECS\n")
