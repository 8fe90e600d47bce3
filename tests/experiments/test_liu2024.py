import csv

import numpy as np
import pytest

from dpopt.dualavg import Regularizer
from dpopt.dualavg.problem import objective
from dpopt.experiments import liu2024
from dpopt.experiments.registry import get
from dpopt.objectives import HingeLoss

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

TINY = liu2024.Config(
    datasets=("synthetic",), regularizers=("l2", "l1"), epsilons=(1.0,), settings=((0.25, 1), (1.0, 1)),
    nodes=4, records=120, test_records=60, synthetic_dim=5, epochs=1.0, seeds=2,
)  # fmt: skip


def test_reference_minimum_is_a_minimum():
    shards, _ = liu2024._data("synthetic", TINY)
    rng = np.random.default_rng(0)
    for reg in (Regularizer("l2", 5e-4), Regularizer("l1", 5e-4)):
        x, f = liu2024.reference_minimum(shards, reg)
        for _ in range(20):
            y = x + 1e-3 * rng.normal(size=x.shape)
            assert f <= float(objective(shards, y, HingeLoss(), reg)) + 1e-9


def test_tiny_run_writes_the_summary(tmp_path):
    assert get("liu2024").module == "dpopt.experiments.liu2024"
    result = liu2024.run(config=TINY, out=tmp_path / "out")
    with open(tmp_path / "out" / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == liu2024.SUMMARY_COLUMNS
    assert {r["method"] for r in rows} == {"dda", "dda-all-active"}
    assert all(float(r["suboptimality_mean"]) >= -1e-9 for r in rows)
    assert (tmp_path / "out" / "report.html").exists() and (tmp_path / "out" / "summary_paper_model.csv").exists()
    assert "Algorithm 1 beats [19]" in result.text
