"""chen2020-nn (§5.7, Fig. 5) on a tiny configuration: the API columns, the methods, ε per iteration, the report."""

import csv
import json

import numpy as np
import pytest

from dpopt.datasets.fashion_mnist import FASHION_MNIST_DIR, FASHION_MNIST_REQUIREMENT
from dpopt.experiments import chen2020_nn, registry
from dpopt.privacy import RDPAccountant
from dpopt.privacy import events as ev

COLUMNS = ("method", "dataset", "model", "iteration", "accuracy_mean", "accuracy_std", "objective_mean",
           "epsilon_spent")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("nn") / "out"
    config = chen2020_nn.Config(datasets=("digits",), iterations=4, eval_every=2, seeds=2, eval_size=100,
                                digits_rate=0.05)
    return chen2020_nn.run(config=config, out=out, seed=3, jobs=1), out


def test_summary_has_the_api_columns_methods_and_epsilon(result):
    run, out = result
    with open(out / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert set(COLUMNS) <= set(rows[0])
    assert {r["method"] for r in rows} == {"dp-blsgd", "dp-sgd", "dp-adam", "non-private"}
    assert {(r["dataset"], r["model"]) for r in rows} == {("digits", "mlp"), ("digits", "cnn")}
    for method in ("dp-blsgd", "dp-sgd", "dp-adam"):
        eps = [float(r["epsilon_spent"]) for r in rows if r["method"] == method and r["model"] == "mlp"]
        assert eps[0] == 0.0 and np.all(np.diff(eps) > 0)
    steps = [float(r["step_size_mean"]) for r in rows if r["method"] == "dp-blsgd" and r["iteration"] != "0"]
    assert all(s > 0 for s in steps)
    assert (out / "report.html").is_file() and (out / "fig5.png").is_file()
    assert len(run.verdict) == 2


def test_privacy_records_replay(result):
    _, out = result
    record = json.loads((out / "privacy" / "dp-sgd-digits-mlp.json").read_text())
    events = [ev.from_dict(e) for e in record["events"]]
    assert len(events) == 4
    replay = RDPAccountant().compose(ev.Composed(events)).get_epsilon(record["delta"])
    assert replay >= record["epsilon"] * (1 - 1e-9)  # the record's denser order grid is never looser


def test_registered_with_its_requirements():
    entry = registry.get("chen2020-nn")
    assert "torch" in entry.requires and entry.load() is chen2020_nn.run


@pytest.mark.skipif(not FASHION_MNIST_DIR.is_dir(), reason=f"Fashion-MNIST is absent: {FASHION_MNIST_REQUIREMENT}")
def test_fashion_mnist_runs_at_the_paper_rate(tmp_path):
    """The Fashion-MNIST branch (the Debian package through the data layer), at q = 1/200 on 2,000 rows."""
    config = chen2020_nn.Config(datasets=("fashion-mnist",), models=("mlp",), iterations=2, eval_every=1, seeds=2,
                                train_size=2000, eval_size=50)
    run = chen2020_nn.run(config=config, out=tmp_path / "out", seed=1, jobs=1)
    eps = {(r["method"], r["iteration"]): r["epsilon_spent"] for r in run.summary if r["method"] != "non-private"}
    assert {m for m, _ in eps} == {"dp-blsgd", "dp-sgd", "dp-adam"}
    assert all(0 < eps[m, 1] < eps[m, 2] for m in ("dp-blsgd", "dp-sgd", "dp-adam"))
    assert [r["method"] for r in run.table] == list(chen2020_nn.METHODS)
    assert set(run.table[0]) == {"dataset", "model", "method", "final (2)"}  # no TABLE_AT iteration below 2
