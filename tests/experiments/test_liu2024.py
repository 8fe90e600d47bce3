import csv

import numpy as np
import pytest
from scipy import sparse
from scipy.optimize import linprog

from dpopt.dualavg import Regularizer
from dpopt.dualavg.problem import objective
from dpopt.experiments import liu2024
from dpopt.experiments.registry import get
from dpopt.objectives import HingeLoss

pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

TINY = liu2024.Config(
    datasets=("synthetic",), regularizers=("l2", "l1"), epsilons=(1.0,), iotas=(0.25,), edges=(1,), nodes=4,
    synthetic_records_per_node=30, synthetic_dim=5, synthetic_test=60, epochs=1.0, local_steps=30, seeds=2,
    checkpoints=2,
)  # fmt: skip


def _full_lp(X, y, phi):
    """min (1/N) Σ s + φ Σ (u + v) s.t. s_j ≥ 1 − y_j c_j (u − v), all ≥ 0: every record an explicit constraint."""
    N, d = X.shape
    YX = y[:, None] * X
    A = sparse.hstack([sparse.csr_matrix(-YX), sparse.csr_matrix(YX), -sparse.identity(N)]).tocsr()
    c = np.concatenate([np.full(2 * d, phi), np.full(N, 1.0 / N)])
    res = linprog(c, A_ub=A, b_ub=-np.ones(N), bounds=(0, None), method="highs")
    return res.fun


def test_reference_minimum_is_a_minimum():
    shards, _, _ = liu2024._data("synthetic", TINY)
    rng = np.random.default_rng(0)
    for reg in (Regularizer("l2", 5e-4), Regularizer("l1", 5e-4)):
        x, f = liu2024.reference_minimum(shards, reg)
        for _ in range(20):
            y = x + 1e-3 * rng.normal(size=x.shape)
            assert f <= float(objective(shards, y, HingeLoss(), reg)) + 1e-9


@pytest.mark.parametrize("start", [None, "shifted"])
def test_active_set_lp_equals_the_full_lp(start):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.where(X @ rng.normal(size=6) + 0.3 * rng.normal(size=400) > 0, 1.0, -1.0)
    X[200:230] = X[0]  # duplicated records are merged with their weight
    y[200:230] = y[0]
    phi = 5e-3
    x, f = liu2024.l1_hinge_minimum(X, y, phi, start=None if start is None else 5 * rng.normal(size=6))
    assert f == pytest.approx(_full_lp(X, y, phi), abs=1e-9)
    assert f == pytest.approx(np.mean(np.maximum(0, 1 - y * (X @ x))) + phi * np.abs(x).sum(), abs=1e-9)


def test_tiny_run_writes_the_summary(tmp_path):
    assert get("liu2024").module == "dpopt.experiments.liu2024"
    result = liu2024.run(config=TINY, out=tmp_path / "out")
    with open(tmp_path / "out" / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == liu2024.SUMMARY_COLUMNS
    assert {r["method"] for r in rows} == {"dda", "dda-all-active", "non-private"}
    assert {r["accounting"] for r in rows} == {"exact", "conditional", "none"}
    assert all(float(r["suboptimality_mean"]) >= -1e-9 for r in rows)
    for name in ("report.html", "curves.csv", "noise.csv", "claims.csv", "fig_l2_exact.png", "fig_l1_conditional.png"):
        assert (tmp_path / "out" / name).exists()
    assert "Algorithm 1 beats [19]" in result.text
    # ι = 1: both models are one run; ι < 1: the paper's (conditional) model needs no more noise than the exact one
    by = {(r["regularizer"], r["accounting"], r["iota"]): r for r in rows if r["method"] != "non-private"}
    for reg in ("l2", "l1"):
        assert by[(reg, "exact", "1.0")]["suboptimality_mean"] == by[(reg, "conditional", "1.0")]["suboptimality_mean"]
        assert float(by[(reg, "conditional", "0.25")]["sigma"]) < float(by[(reg, "exact", "0.25")]["sigma"])
    with open(tmp_path / "out" / "curves.csv") as f:
        curves = list(csv.DictReader(f))
    last = [c for c in curves if c["round"] == rows[0]["rounds"] and c["regularizer"] == rows[0]["regularizer"]
            and c["accounting"] == rows[0]["accounting"] and c["iota"] == rows[0]["iota"]]  # fmt: skip
    assert float(last[0]["suboptimality_mean"]) == pytest.approx(float(rows[0]["suboptimality_mean"]))


def test_config_rejects_the_baseline_as_an_iota():
    with pytest.raises(ValueError, match="iotas"):
        liu2024.Config(iotas=(0.1, 1.0))
    with pytest.raises(ValueError, match="accountings"):
        liu2024.Config(accountings=("hidden",))


def test_fashion_mnist_is_a_balanced_binary_task():
    from dpopt.datasets.fashion_mnist import FASHION_MNIST_DIR

    if not (FASHION_MNIST_DIR / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
    config = liu2024.Config(datasets=("fashion-mnist",), records_per_node=50, test_records=100)
    shards, (X_test, y_test), note = liu2024._data("fashion-mnist", config)
    assert len(shards) == 20 and all(X.shape == (50, 784) for X, _ in shards)
    y = np.concatenate([s[1] for s in shards])
    assert set(np.unique(y)) == {-1.0, 1.0} and 0.4 < np.mean(y > 0) < 0.6
    assert np.allclose(np.linalg.norm(np.concatenate([s[0] for s in shards]), axis=1), 1.0)
    assert X_test.shape == (100, 784) and "Fashion-MNIST" in note
