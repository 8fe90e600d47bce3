"""Reproduction of Liu, Johansson & Shi (2024) §5: private distributed dual averaging on SVMs.

Setting (§5.1): hinge-loss SVM, n = 20 nodes, records split evenly at random;
ℓ2 (μ = 5e-4, a_t = t, γ_t = 20) and ℓ1 (φ = 5e-4, a_t = 1, γ_t = 0.01√t);
ε ∈ {0.2, 0.4, 0.6, 0.8, 1}, δ₀ = 0.01; Algorithm 1 (``dda``) with
ι ∈ {0.1, 0.2} against the all-active baseline [19] (``dda-all-active``,
ι = 1); 1 or 2 edges sampled per round on the complete supergraph with
Metropolis weights; 3 epochs; 5 seeds as one batch of repetitions of the
simulator.  Metrics: F(x̄) − F(x*) at x̄ = n⁻¹ Σ_i x̃_i (the paper's
suboptimality) and the test accuracy of x̄, after the last round and along
the run (Figs. 1–4).

Data.  The paper's ``epsilon`` (400,000 × 2,000, dense) and ``rcv1``
(677,399 × 47,236, sparse) are not available offline.  Substitutes, each
with thousands of records per node (the paper's sets have tens of
thousands; Algorithm 1 cannot learn privately from a few hundred):

* ``fashion-mnist`` — dense, 784 features: Fashion-MNIST (Debian package
  ``dataset-fashion-mnist``) as a balanced binary task, upper-body garments
  and dresses (T-shirt/top, pullover, dress, coat, shirt: +1) against
  trousers, footwear and bags (−1); 60,000 training images (q = 3,000 per
  node) and the 10,000 test images.
* ``adult`` — sparse one-hot census set (108 features), standing in for
  ``rcv1``: UCI Adult's 32,561 training rows (q = 1,628 per node) and its
  16,281 test rows.
* ``synthetic`` — generated like ``epsilon``: dense Gaussian features scaled
  to unit norm, labels of a planted separator with 10% label noise
  (:func:`dpopt.dualavg.shards.synthetic_shard`, node by node); q = 10,000
  per node at d = 100 (epsilon: q = 20,000 at d = 2,000 — smaller here so
  that the grid runs on a shared 2-core machine).

Every row is scaled to unit ℓ2 norm (a public per-record map), so the hinge
loss is 1-Lipschitz and the clip L = 1 never binds.

Rounds.  "3 epochs" is read as every method touching 3N records, so
Algorithm 1 (⌈nι⌉ active nodes) runs 1/ι times the rounds of [19].  The
paper draws one record per active node and round (b = 1): 3q/ι rounds, 90,000
for Fashion-MNIST at ι = 0.1.  Here an active node draws a minibatch of
b = ⌈q / local_steps⌉ records without replacement (the simulator's
``batch``; 300 local steps per node and epoch by default): the same records
and epochs in b times fewer rounds.  (Under exact accounting the replace-one
bound for sampling without replacement (Wang–Balle–Kasiviswanathan Thm 9)
keeps a floor of order T·(b/q)³ at high orders: at b/q = 1/100 no σ reaches
ε = 0.2 at δ = 1e-5 — the calibrated σ runs to thousands — while b/q = 1/300
needs σ ≈ 1.)  The privacy accounting follows the
batch exactly (sampling rate b/q, sensitivity 2L/b of the mean), and
Theorem 1's σ is unchanged by b (ε′_t = 2ι(b/q)·2(L/b)√(2 log(2/δ₀))/σ:
b cancels), so its σ is reported for the rounds actually run.

Noise and the two accountings.  Every private run calibrates σ with the
privacy core's accountant for (ε, δ = 1e-5) (``accountant``: by default the
tightest that applies — RDP for visible activation, PLD for the hidden one;
``"rdp"`` for both) under one of two models:
``exact`` — node activation is visible (inactive nodes send nothing), so
activation amplifies only through the rounds a node is idle (the run's
guarantee is exact); ``conditional`` — the paper's Lemma 4.2, activation
hidden, a record used with probability ι·b/q per round (guarantee
conditional on that assumption).  At ι = 1 the two coincide and the one run
serves both.  Theorem 1's σ (δ₀ = 0.01) and the ε it actually gives under
each model are listed beside them (``noise.csv``).

F* comes from precise solvers, not scikit-learn's SGDClassifier (which the
paper used): liblinear's dual coordinate descent at tol 1e-10 for ℓ2, and
for ℓ1 an exact active-set linear program (:func:`l1_hinge_minimum`), its
restricted LPs solved as their 2d-row duals: ~100 s on the synthetic set and
~125 s on Fashion-MNIST's 60,000 dense 784-pixel records here (its older
primal form did not finish in 10 minutes on either), so no pair is skipped
by default (``Config.skip`` can leave pairs out).

Cost.  The simulator's rounds are overhead-bound: about 0.9 ms of CPU per
round with 2 active nodes and 5 repetitions, 5.2 ms with all 20 nodes active
(Fashion-MNIST sizes, measured here).  One (data set, regularizer) pair with
every ε, ι ∈ {0.1, 0.2} and [19], both accountings and 5 seeds at one edge
count is 28 runs: 1.5 (Adult) to 3.6 (Fashion-MNIST) minutes of CPU
measured; the full configuration (6 pairs, 1 and 2 edges) about 30 minutes
(estimated) plus ~4 minutes of F*.  With the paper's b = 1 every run of
Algorithm 1 would take b times the rounds (90,000 at ι = 0.1 on
Fashion-MNIST).

``run(quick=True)`` is a smoke test on reduced sizes (not the paper's
numbers).  Outputs: ``summary.csv`` (API.md's columns plus ``accounting``),
``curves.csv``, ``noise.csv``, ``claims.csv``, the figures, ``privacy/`` and
``report.html`` (written last, all or nothing).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import _validation as val
from ..dualavg import minimize
from ..dualavg.problem import objective
from ..dualavg.prox import Regularizer
from ..dualavg.shards import synthetic_shard
from ..objectives import HingeLoss
from ..report.figures import pyplot, save_figure
from ..report.files import write_csv
from ..report.markup import Section, list_html, table_html
from ..report.privacy import privacy_section, write_privacy_records
from .framework import PaperExperiment, ReportParts, Task, execute, task_seed

__all__ = ["Config", "FULL", "QUICK", "run", "reference_minimum", "l1_hinge_minimum", "SUMMARY_COLUMNS"]

SUMMARY_COLUMNS = (
    "method", "dataset", "regularizer", "accounting", "epsilon", "iota", "edges",
    "suboptimality_mean", "suboptimality_std", "accuracy_mean", "accuracy_std", "sigma", "batch", "rounds",
)  # fmt: skip
STRENGTH = 5e-4
ACCOUNTINGS = ("exact", "conditional")
DATASETS = ("fashion-mnist", "adult", "synthetic")
#: Fashion-MNIST classes labelled +1: T-shirt/top, pullover, dress, coat, shirt (35,000 of the 70,000 images).
FASHION_POSITIVE = (0, 2, 3, 4, 6)
#: The ε of the paper's curves vs iterations: Fig. 1 (ℓ2) and Fig. 3 (ℓ1).
CURVE_EPSILON = {"l2": 0.8, "l1": 0.4}


@dataclass(frozen=True)
class Config:
    datasets: tuple = DATASETS
    regularizers: tuple = ("l2", "l1")
    epsilons: tuple = (0.2, 0.4, 0.6, 0.8, 1.0)
    iotas: tuple = (0.1, 0.2)  # Algorithm 1; the all-active [19] (ι = 1) always runs
    edges: tuple = (1, 2)
    accountings: tuple = ACCOUNTINGS
    nodes: int = 20
    records_per_node: int = 0  # 0: the whole training split, evenly (q = ⌊N/n⌋)
    test_records: int = 0  # 0: the whole test split
    synthetic_records_per_node: int = 10_000
    synthetic_dim: int = 100
    synthetic_test: int = 20_000
    epochs: float = 3.0
    local_steps: int = 300  # per node and epoch: minibatch b = ⌈q / local_steps⌉ (the paper: b = 1)
    delta: float = 1e-5
    delta0: float = 0.01
    accountant: str = "auto"  # σ's accountant: "auto" (the tightest: PLD for the conditional model), "rdp", "pld"
    seeds: int = 5
    checkpoints: int = 8  # points of the curves vs iterations
    nonprivate: bool = True
    #: (dataset, regularizer) pairs left out (none by default: the exact ℓ1 reference LP takes ~2 minutes on
    #: Fashion-MNIST and the synthetic set here)
    skip: tuple = ()
    seed: int = 0

    @property
    def problems(self) -> list[tuple[str, str]]:
        """The (dataset, regularizer) pairs that run."""
        return [(d, r) for d in self.datasets for r in self.regularizers if (d, r) not in self.skip]

    def __post_init__(self):
        for name in ("datasets", "regularizers", "epsilons", "iotas", "edges", "accountings"):
            if not isinstance(getattr(self, name), tuple) or not getattr(self, name):
                raise TypeError(f"{name} must be a non-empty tuple")
        for d in self.datasets:
            val.check_choice("datasets", d, DATASETS)
        for r in self.regularizers:
            val.check_choice("regularizers", r, ("l2", "l1"))
        for a in self.accountings:
            val.check_choice("accountings", a, ACCOUNTINGS)
        val.check_choice("accountant", self.accountant, ("auto", "rdp", "pld"))
        for e in self.epsilons:
            val.check_positive("epsilons", e)
        for i in self.iotas:
            if not 0.0 < i < 1.0:
                raise ValueError(f"iotas must be in (0, 1) (ι = 1 is the baseline and always runs), got {i!r}")
        for e in self.edges:
            val.check_int("edges", e)
        for name in ("records_per_node", "test_records"):
            val.check_int(name, getattr(self, name), minimum=0)
        val.check_int("nodes", self.nodes, minimum=2)
        val.check_int("local_steps", self.local_steps)
        val.check_int("seeds", self.seeds)
        val.check_int("checkpoints", self.checkpoints)
        if not self.problems:
            raise ValueError("skip leaves no (dataset, regularizer) pair to run")


FULL = Config()
QUICK = Config(
    datasets=("synthetic",), epsilons=(0.5, 1.0), iotas=(0.2,), edges=(1,), synthetic_records_per_node=400,
    synthetic_dim=20, synthetic_test=2000, local_steps=100, seeds=2, checkpoints=4,
)  # fmt: skip


@dataclass
class Liu2024Run:
    config: Config
    summary: list
    curves: list
    noise: list
    claims: list
    privacy: dict
    optimum: dict
    data_notes: list
    run_seconds: dict
    claims_table: list = field(default_factory=list)
    seconds: float = 0.0
    paths: dict = field(default_factory=dict)
    text: str = ""
    figures: dict = field(default_factory=dict)


# -- data -------------------------------------------------------------------------------------------------------
def _unit_rows(X) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)


def _data(name: str, config: Config):
    """(shards, (X_test, y_test), note) of one substitute, split evenly at random over the nodes."""
    n = config.nodes
    if name == "synthetic":
        q, d = config.synthetic_records_per_node, config.synthetic_dim
        shards = [synthetic_shard(i, size=q, dim=d, seed=config.seed) for i in range(n)]
        test = synthetic_shard(n, size=config.synthetic_test, dim=d, seed=config.seed)  # a node that never trains
        note = (f"synthetic (like epsilon): {n} × {q} training records generated node by node, d = {d}, "
                "dense unit-norm Gaussian features, planted separator, 10% label noise; "
                f"{len(test[1])} test records")  # fmt: skip
        return shards, test, note
    from ..datasets import load

    if name == "adult":
        data = load("adult")
        train, test = data.group("train"), data.group("test")
        X, y, X_test, y_test = train.X, train.y, test.X, test.y
        what = "UCI Adult (one-hot census set, 108 features; substitute for rcv1)"
    else:
        train, test = load("fashion-mnist:train"), load("fashion-mnist:test")
        X, X_test = train.X, test.X
        y, y_test = (np.where(np.isin(t.y, FASHION_POSITIVE), 1.0, -1.0) for t in (train, test))
        what = ("Fashion-MNIST, T-shirt/top, pullover, dress, coat, shirt (+1) vs trousers, footwear, bags (−1); "
                "784 pixels (dense; substitute for epsilon)")  # fmt: skip
    q = len(y) // n if not config.records_per_node else min(config.records_per_node, len(y) // n)
    perm = np.random.default_rng(task_seed(config.seed, 7)).permutation(len(y))[: q * n]
    X = _unit_rows(X[perm])
    y = np.asarray(y, dtype=float)[perm]
    shards = [(X[k * q : (k + 1) * q], y[k * q : (k + 1) * q]) for k in range(n)]
    if config.test_records:
        X_test, y_test = X_test[: config.test_records], y_test[: config.test_records]
    test = (_unit_rows(X_test), np.asarray(y_test, dtype=float))
    note = (f"{name}: {what}; {n} × {q} training records drawn at random from {len(train.y)} "
            f"(rows scaled to unit norm); {len(test[1])} test records")  # fmt: skip
    return shards, test, note


# -- the precise reference F* ------------------------------------------------------------------------------------
def l1_hinge_minimum(X: np.ndarray, y: np.ndarray, phi: float, *, start=None, band: float = 0.25
                     ) -> tuple[np.ndarray, float]:
    """Exact argmin of (1/N) Σ_j max(0, 1 − y_j c_jᵀx) + φ‖x‖₁ by an active-set sequence of linear programs.

    Records whose margin m_j = y_j c_jᵀx is far below 1 enter the objective
    through the linear piece 1 − m_j, those far above through 0, and the rest
    as explicit LP constraints (HiGHS).  Each piece is ≤ the hinge, so every
    LP minimizes a lower bound of F over ‖x‖₁ ≤ F(0)/φ (a ball that holds
    x*); when no record's margin at the LP solution contradicts its assumed
    piece the bound is tight there and the solution is the exact minimizer.
    Contradicting records join the explicit set, so the loop ends.  Each
    restricted LP is solved as its dual (HiGHS dual simplex): one variable per
    explicit record in [0, w_j] plus the ball's multiplier, and only 2d rows,
    so its bases are d-sized (the primal form's bases grow with the explicit
    set: it did not finish in ~10 minutes on the 200,000 × 100 synthetic set,
    the dual form takes ~2 minutes with the ℓ2 start; the whole dual LP took
    157 s with HiGHS' interior point and over 300 s with its dual simplex).
    x = u − v is read off the rows' marginals.  Identical records are merged
    (weights).  The sets start from the margins of
    ``start`` (records within ``band`` of 1 explicit; :func:`reference_minimum`
    starts from the ℓ2 solution), or with every record explicit (the full LP).
    """
    from scipy.optimize import linprog

    N, d = X.shape
    YX, counts = np.unique(y[:, None] * X, axis=0, return_counts=True)
    w = counts / N
    m = YX @ (np.zeros(d) if start is None else start)
    explicit = np.abs(m - 1.0) <= (band if start is not None else np.inf)
    while True:
        linear = ~explicit & (m < 1.0)
        g = w[linear] @ YX[linear]
        A = YX[explicit]
        k = len(A)
        # the dual of the restricted LP: max Σ α − β/φ over 0 ≤ α ≤ w, β ≥ 0, |Aᵀα + g| ≤ φ + β (2d rows)
        A_ub = np.block([[A.T, -np.ones((d, 1))], [-A.T, -np.ones((d, 1))]])
        b_ub = np.concatenate([phi - g, phi + g])
        bounds = np.column_stack([np.zeros(k + 1), np.append(w[explicit], np.inf)])
        res = linprog(np.append(-np.ones(k), 1.0 / phi), A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs-ds")
        if res.status != 0:
            raise RuntimeError(f"the reference LP failed: {res.message}")
        x = res.ineqlin.marginals[d:] - res.ineqlin.marginals[:d]  # the primal x = u − v from the duals
        m = YX @ x
        wrong = ~explicit & ((linear & (m > 1.0)) | (~linear & (m < 1.0)))
        if not wrong.any():
            return x, float(-res.fun + w[linear].sum())
        explicit |= wrong


def reference_minimum(shards, regularizer: Regularizer) -> tuple[np.ndarray, float]:
    """(x*, F*) of eq. (26) with equal shard sizes: liblinear at tol 1e-10 (ℓ2) or the exact LP (ℓ1)."""
    from sklearn.svm import LinearSVC

    X = np.concatenate([s[0] for s in shards])
    y = np.concatenate([s[1] for s in shards])

    def svc(tol):  # h = μ‖x‖²/2: C = 1/(μN)
        return LinearSVC(loss="hinge", C=1.0 / (regularizer.strength * len(y)), fit_intercept=False, tol=tol,
                         max_iter=1_000_000, dual=True).fit(X, y).coef_.ravel()  # fmt: skip

    if regularizer.kind == "l2":
        x = svc(1e-10)
    else:
        x, _ = l1_hinge_minimum(X, y, regularizer.strength, start=svc(1e-4))
    return x, float(objective(shards, x, HingeLoss(), regularizer))


# -- one run of the simulator (a task) ---------------------------------------------------------------------------
def _batch(q: int, config: Config) -> int:
    return max(1, math.ceil(q / config.local_steps))


def _rounds(shards, iota: float, batch: int, config: Config) -> int:
    active = math.ceil(len(shards) * iota - 1e-12)
    return math.ceil(config.epochs * sum(len(s[1]) for s in shards) / (active * batch))


def _one_run(state, dataset, reg, iota, edges, epsilon, accounting, seed):
    """One minimize() call with the seeds as repetitions; F, accuracy, curves and the noise report."""
    config = state["config"]
    shards, (X_test, y_test) = state["data"][dataset]
    batch = _batch(len(shards[0][1]), config)
    rounds = _rounds(shards, iota, batch, config)
    start = time.perf_counter()
    res = minimize(
        shards, epsilon=epsilon, delta=config.delta, delta0=config.delta0, regularizer=reg, strength=STRENGTH,
        iota=iota, edges=edges, rounds=rounds, batch=batch, repetitions=config.seeds,
        activation_visible=accounting != "conditional", seed=seed,
        accountant=None if config.accountant == "auto" else config.accountant,
        record_every=max(1, rounds // config.checkpoints),
    )  # fmt: skip

    def accuracy(x):
        return np.mean(np.sign(x @ X_test.T) == y_test[None, :], axis=1)

    points = [row[0] for row in res.trajectory] if res.trajectory is not None else []
    curve_f = [row[1:] for row in res.trajectory] if res.trajectory is not None else []
    curve_acc = [accuracy(x) for x in res.info["recorded_x"]]
    if not points or points[-1] != rounds:
        points, curve_f, curve_acc = points + [rounds], curve_f + [res.fun], curve_acc + [accuracy(res.x)]
    return {
        "fun": np.asarray(res.fun), "accuracy": accuracy(res.x), "rounds": rounds, "batch": batch,
        "sigma": res.info["sigma"], "noise": res.info["noise_report"],
        "record": res.privacy_record() if epsilon is not None else None,
        "curve": (np.asarray(points), np.asarray(curve_f), np.asarray(curve_acc)),
        "seconds": time.perf_counter() - start,
    }  # fmt: skip


def _tasks(config: Config, sizes: dict) -> list[Task]:
    """Every simulator run: (dataset, reg, ι, edges, ε, accounting); ι = 1 once (both models coincide)."""
    tasks = []
    iotas = (*config.iotas, 1.0)
    for dataset, reg in config.problems:
        di, ri = config.datasets.index(dataset), config.regularizers.index(reg)
        for ii, iota in enumerate(iotas):
            for ei, edges in enumerate(config.edges):
                models = ("exact",) if iota == 1.0 else config.accountings
                grid = [(k, eps, acc) for k, eps in enumerate(config.epsilons) for acc in models]
                if config.nonprivate and ei == 0:  # the optimization error alone, at the first edge count
                    grid.append((len(config.epsilons), None, "none"))
                for k, eps, acc in grid:  # one seed per setting: the two models see the same draws
                    seed = int(task_seed(config.seed, 9, di, ri, ii, ei, k).generate_state(1)[0])
                    cost = sizes[dataset] * (1.0 + 0.3 / iota)
                    label = f"{dataset} {reg} eps={eps} iota={iota:g} edges={edges} {acc}"
                    tasks.append(Task((dataset, reg, iota, edges, eps, acc),
                                      (dataset, reg, iota, edges, eps, acc, seed), cost, label))  # fmt: skip
    return tasks


# -- tables ------------------------------------------------------------------------------------------------------
def _method(iota, epsilon) -> str:
    return "non-private" if epsilon is None else ("dda-all-active" if iota == 1.0 else "dda")


def _std(a) -> float:
    return float(np.std(a, ddof=1)) if len(a) > 1 else 0.0


def _rows(config: Config, tasks, results, optimum):
    summary, curves, noise, privacy, seconds = [], [], {}, {}, {}
    for task, out in zip(tasks, results, strict=True):
        dataset, reg, iota, edges, eps, acc = task.key
        sub = out["fun"] - optimum[(dataset, reg)]
        models = [acc] if iota < 1.0 or eps is None else [a for a in config.accountings]
        seconds[task.label] = out["seconds"]
        for model in models:
            row = {"method": _method(iota, eps), "dataset": dataset, "regularizer": reg, "accounting": model,
                   "epsilon": "inf" if eps is None else eps, "iota": iota, "edges": edges,
                   "suboptimality_mean": float(sub.mean()), "suboptimality_std": _std(sub),
                   "accuracy_mean": float(out["accuracy"].mean()), "accuracy_std": _std(out["accuracy"]),
                   "sigma": out["sigma"], "batch": out["batch"], "rounds": out["rounds"]}  # fmt: skip
            summary.append(row)
            points, f, a = out["curve"]
            for t, fi, ai in zip(points, f, a, strict=True):
                fi = np.asarray(fi) - optimum[(dataset, reg)]
                curves.append({k: row[k] for k in SUMMARY_COLUMNS[:7]} | {
                    "round": int(t), "records_touched": int(t) * math.ceil(config.nodes * iota - 1e-12) * out["batch"],
                    "suboptimality_mean": float(np.mean(fi)), "suboptimality_std": _std(fi),
                    "accuracy_mean": float(np.mean(ai)), "accuracy_std": _std(ai)})  # fmt: skip
            if out["noise"] is not None:
                rep = out["noise"]
                key = (dataset, eps, iota, model)
                noise[key] = {"dataset": dataset, "epsilon": eps, "iota": iota, "accounting": model,
                              "batch": out["batch"], "rounds": out["rounds"],
                              "sigma_accountant": rep["sigma_accountant"], "sigma_theorem1": rep["sigma_theorem1"],
                              "epsilon_of_theorem1_sigma": rep["epsilon_theorem1_sigma"],
                              "theorem1_delta": rep["theorem1_delta"], "delta": rep["delta"],
                              "theorem1_condition": rep["note"]}  # fmt: skip
            if out["record"] is not None:
                privacy[f"{row['method']}-{dataset}-{reg}-eps{eps:g}-iota{iota:g}-e{edges}-{model}"] = out["record"]
    return summary, curves, list(noise.values()), privacy, seconds


def _pairs(items):
    return zip(items[:-1], items[1:], strict=True)


def _clear(a: dict, b: dict, R: int) -> bool:
    """Whether two rows' mean suboptimalities differ by more than 2 standard errors."""
    se = math.sqrt((a["suboptimality_std"] ** 2 + b["suboptimality_std"] ** 2) / R)
    return abs(a["suboptimality_mean"] - b["suboptimality_mean"]) > 2 * se


def _claims(summary, config: Config):
    """Per (accounting, dataset, reg, edges, ε): the ι ordering and Algorithm 1 vs [19], with the numbers."""
    key = {(r["accounting"], r["dataset"], r["regularizer"], r["edges"], r["epsilon"], r["iota"]): r
           for r in summary if r["method"] != "non-private"}  # fmt: skip
    iotas = sorted(config.iotas)
    table, lines = [], []
    for acc in config.accountings:
        for dataset, reg in config.problems:
            for edges in config.edges:
                rows, gaps = [], []
                for eps in config.epsilons:
                    alg = [key[(acc, dataset, reg, edges, eps, i)] for i in iotas]
                    base = key[(acc, dataset, reg, edges, eps, 1.0)]
                    chain = [*alg, base]
                    order = all(a["suboptimality_mean"] < b["suboptimality_mean"] for a, b in _pairs(chain))
                    beats = [a["suboptimality_mean"] < base["suboptimality_mean"] for a in alg]
                    gap = base["suboptimality_mean"] - min(a["suboptimality_mean"] for a in alg)
                    gaps.append(gap)
                    row = {"accounting": acc, "dataset": dataset, "regularizer": reg, "edges": edges,
                           "epsilon": eps}  # fmt: skip
                    for i, a in zip(iotas, alg, strict=True):
                        row[f"subopt_iota{i:g}"] = a["suboptimality_mean"]
                    row["subopt_[19]"] = base["suboptimality_mean"]
                    for i, a in zip(iotas, alg, strict=True):
                        row[f"acc_iota{i:g}"] = a["accuracy_mean"]
                    row["acc_[19]"] = base["accuracy_mean"]
                    row["smaller_iota_smaller_loss"] = order
                    row["alg1_beats_[19]"] = f"{sum(beats)}/{len(beats)}"
                    clear = sum(b and _clear(a, base, config.seeds) for a, b in zip(alg, beats, strict=True))
                    row["clear_(2_se)"] = f"{clear}/{len(beats)}"
                    row["gap_[19]_minus_best_alg1"] = gap
                    rows.append(row)
                table.extend(rows)
                n_order = sum(r["smaller_iota_smaller_loss"] for r in rows)
                n_beat = sum(int(r["alg1_beats_[19]"].split("/")[0]) for r in rows)
                widening = sum(a > b for a, b in _pairs(gaps))
                lines.append(
                    f"{acc}, {dataset}, {reg}, {edges} edge(s): smaller ι gives smaller suboptimality (ι "
                    f"{' < '.join(f'{i:g}' for i in iotas)} < 1) at {n_order} of {len(rows)} ε; Algorithm 1 beats "
                    f"[19] in {n_beat} of {len(rows) * len(iotas)} (ε, ι) cases; gap [19] − best Alg. 1 by ε "
                    + ", ".join(f"{e:g}: {g:.3g}" for e, g in zip(config.epsilons, gaps, strict=True))
                    + f" (shrinks with ε in {widening} of {len(gaps) - 1} steps)."
                )  # fmt: skip
    return table, lines


# -- figures -----------------------------------------------------------------------------------------------------
def _label(iota, edges) -> str:
    return ("[19] all active" if iota == 1.0 else f"Alg. 1 ι={iota:g}") + f", {edges} edge(s)"


def _figure(path, result, reg: str, accounting: str):
    """Fig. 1/3 (vs rounds at the paper's ε) and Fig. 2/4 (after the last round vs ε), one row per data set."""
    config = result.config
    eps_ref = CURVE_EPSILON[reg] if CURVE_EPSILON[reg] in config.epsilons else config.epsilons[-1]
    plt = pyplot()
    datasets = [d for d, r in config.problems if r == reg]
    fig, axes = plt.subplots(len(datasets), 4, figsize=(16, 3.3 * len(datasets)), squeeze=False)
    settings = [(i, e) for i in (*config.iotas, 1.0) for e in config.edges]
    for row, dataset in zip(axes, datasets, strict=True):
        for iota, edges in settings:
            label, ls = _label(iota, edges), ("-" if edges == config.edges[0] else "--")
            want = (dataset, reg, accounting, eps_ref, iota, edges)
            sel = [c for c in result.curves if tuple(c[k] for k in SUMMARY_COLUMNS[1:7]) == want]
            if sel:
                x = [c["round"] for c in sel]
                row[0].plot(x, [max(c["suboptimality_mean"], 1e-6) for c in sel], ls, marker=".", label=label)
                row[1].plot(x, [c["accuracy_mean"] for c in sel], ls, marker=".", label=label)
            pts = [r for r in result.summary if (r["dataset"], r["regularizer"], r["accounting"], r["iota"],
                                                 r["edges"]) == (dataset, reg, accounting, iota, edges)
                   and r["method"] != "non-private"]  # fmt: skip
            eps = [r["epsilon"] for r in pts]
            row[2].errorbar(eps, [max(r["suboptimality_mean"], 1e-6) for r in pts],
                            yerr=[r["suboptimality_std"] for r in pts], fmt=ls, marker="o", capsize=2, label=label)
            row[3].errorbar(eps, [r["accuracy_mean"] for r in pts], yerr=[r["accuracy_std"] for r in pts], fmt=ls,
                            marker="o", capsize=2, label=label)  # fmt: skip
        for ax in (row[0], row[2]):
            ax.set_yscale("log")
        row[0].set_ylabel(f"{dataset}\nF(x̄) − F*")
        row[1].set_ylabel("test accuracy")
        row[0].set_title(f"vs rounds, ε = {eps_ref:g}")
        row[1].set_title(f"vs rounds, ε = {eps_ref:g}")
        row[2].set_title("after 3 epochs vs ε")
        row[3].set_title("after 3 epochs vs ε")
    for ax in axes[-1]:
        ax.set_xlabel("ε" if ax in (axes[-1][2], axes[-1][3]) else "round")
    axes[0][3].legend(fontsize=7)
    fig.suptitle(f"{reg}-regularized SVM, {accounting} accounting (mean ± std over {config.seeds} seeds)")
    return save_figure(fig, path, dpi=90, rect=(0, 0, 1, 0.97))


# -- the experiment ----------------------------------------------------------------------------------------------
def _compute(config: Config, *, jobs: int, progress) -> Liu2024Run:
    start = time.perf_counter()
    data, notes = {}, []
    for dataset in config.datasets:
        shards, test, note = _data(dataset, config)
        data[dataset] = (shards, test)
        notes.append(note)
    progress(0, 1, "F* (precise solvers)")
    optimum, optimum_seconds = {}, {}
    for dataset, reg in config.problems:
        t0 = time.perf_counter()
        optimum[(dataset, reg)] = reference_minimum(data[dataset][0], Regularizer(reg, STRENGTH))[1]
        optimum_seconds[f"F* {dataset} {reg}"] = time.perf_counter() - t0
        progress(0, 1, f"F* {dataset} {reg}: {optimum[(dataset, reg)]:.6g}")
    sizes = {d: sum(len(s[1]) for s in data[d][0]) * data[d][0][0][0].shape[1] for d in config.datasets}
    tasks = _tasks(config, sizes)
    results = execute(_one_run, tasks, state={"config": config, "data": data}, jobs=jobs, progress=progress)
    summary, curves, noise, privacy, seconds = _rows(config, tasks, results, optimum)
    claims_table, claims = _claims(summary, config)
    result = Liu2024Run(config, summary, curves, noise, claims, privacy,
                        {f"{d}/{r}": v for (d, r), v in optimum.items()}, notes, optimum_seconds | seconds,
                        claims_table)  # fmt: skip
    result.seconds = time.perf_counter() - start
    result.text = "\n".join(
        [f"liu2024: {len(tasks)} simulator runs ({len(summary)} summary rows) in {result.seconds:.1f} s"]
        + [f"  {r['method']:14s} {r['dataset']:13s} {r['regularizer']} {r['accounting']:11s} eps={r['epsilon']:<4} "
           f"iota={r['iota']:<4g} edges={r['edges']}: subopt {r['suboptimality_mean']:.4g} ± "
           f"{r['suboptimality_std']:.2g}, acc {r['accuracy_mean']:.3f} (σ={r['sigma']:.3g})" for r in summary]
        + claims
    )  # fmt: skip
    return result


def _write(result: Liu2024Run, folder) -> dict:
    write_csv(folder / "curves.csv", result.curves)
    write_csv(folder / "noise.csv", result.noise)
    write_csv(folder / "claims.csv", result.claims_table)
    write_csv(folder / "timings.csv", [{"what": k, "seconds": v} for k, v in result.run_seconds.items()])
    write_privacy_records(folder / "privacy", result.privacy)
    figures = {}
    for acc in result.config.accountings:
        for reg in sorted({r for _, r in result.config.problems}, reverse=True):
            fig = "1–2" if reg == "l2" else "3–4"
            caption = f"Figs. {fig}, {reg}, {acc} accounting: suboptimality and test accuracy"
            figures[caption] = _figure(folder / f"fig_{reg}_{acc}.png", result, reg, acc)
    return figures


def _report(result: Liu2024Run, quick: bool) -> ReportParts:
    config = result.config
    verdict = Section("Do the paper's claims hold here?", list_html(result.claims), paragraphs=[
        "Claims (§5.2–5.3): a smaller activation ratio ι gives a smaller utility loss at equal ε; "
        "Algorithm 1 beats the all-active [19] at every ε, with a wider gap at small ε.",
        "Two accountings are run. Exact: an observer sees which nodes send, so node activation gives "
        "almost no amplification (a node's records are used in as many rounds whatever ι). The paper's "
        "model (Lemma 4.2): activation hidden, a record used with probability ι·b/q per round; valid only "
        "under that assumption (accounting 'conditional').",
        "A difference is called clear when the means differ by more than two standard errors over the "
        "seeds."])  # fmt: skip
    optimum = ", ".join(f"{k}: {v:.8g}" for k, v in result.optimum.items())
    data = Section("Data", list_html([*result.data_notes,
                                      f"F* (liblinear at tol 1e-10 for ℓ2, exact active-set LP for ℓ1): {optimum}"]))
    privacy = privacy_section(result.privacy, paragraphs=[
        "Per record holder, replace-one: each record lives on one node, so its guarantee is that node's composed "
        "rounds (activation public or hidden; b of q records without replacement; Gaussian). noise.csv lists "
        "Theorem 1's σ (δ₀ = 0.01) and the accountant's σ, and the ε the accountant gives Theorem 1's σ at "
        "δ."])  # fmt: skip
    claims_cols = list(result.claims_table[0]) if result.claims_table else []
    return ReportParts(
        "Reproduction of Liu, Johansson & Shi (2024): private distributed dual averaging",
        ["Substitutes for the paper's data: see Data. An active node draws a minibatch of b = ⌈q/"
         f"{config.local_steps}⌉ records per round (the paper: one), so 3 epochs take b times fewer rounds; "
         "the accounting follows the batch." + (
            " This is the reduced --quick configuration: a smoke test, not the paper's numbers." if quick else "")],
        verdict, Section("Summary table", table_html(result.summary, SUMMARY_COLUMNS)), data, privacy,
        figure_note="Solid lines: the first edge count; dashed: the second.",
        files={"curves.csv": "suboptimality and accuracy along each run (mean and std over seeds)",
               "noise.csv": "both σ's and the ε Theorem 1's σ gives, per data set, ε, ι and accounting",
               "claims.csv": "the claims table: suboptimality by ι and against [19] per ε",
               "timings.csv": "seconds per simulator run and per reference solve"},
        extra=[Section("Claims table", table_html(result.claims_table, claims_cols)),
               Section("Noise levels", table_html(result.noise))],
    )  # fmt: skip


#: liu2024 on the shared skeleton: ``run(quick=False, out=None, *, config=None, seed=None, progress=None,
#: jobs=None)`` runs the grid (one task per simulator run, in ``jobs`` processes) and, with ``out``, writes
#: the CSVs, the figures and ``report.html`` there (all or nothing).
EXPERIMENT = PaperExperiment("liu2024", FULL, QUICK, SUMMARY_COLUMNS, _compute, _write, _report)
run = EXPERIMENT.run
