"""The README's Python snippets run as written: each block defines its own inputs."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_snippets():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_snippet_runs_as_written(index):
    code = BLOCKS[index]
    if "import torch" in code:
        pytest.importorskip("torch", reason="the networks snippet needs the torch extra")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "__readme__"})
