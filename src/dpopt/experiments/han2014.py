"""Reproduction of Han, Topcu & Pappas (2014), §5: four private mechanisms on random instances.

What the paper fixes (§5.1–5.2) and we follow: a_i, b_i i.i.d. N(0, 1);
P = [−c, c]^d; ε = 0.1; expectations over 1000 runs shown with 2σ error
bars; the exponential mechanism sampled by Metropolis with Gaussian
proposals of covariance Σ = η c I, η = 0.1, 5000 steps; k = 100 subgradient
iterations; objective vs iterations (Fig. 1), vs c (Fig. 2), vs m (Fig. 3,
nested instances: the pieces for a smaller m are a subset of those for a
larger m) with the true optimum f_opt.

What the paper leaves open and we chose (documented in the report too):

- d = 10, and one fixed random instance (seed ``seed``) whose first m
  pieces are used at every grid point; the 1000 runs vary only the
  mechanisms' randomness (the optimum line of Figs. 2–3 is a single curve).
- c sweep at m = 20: c ∈ {0.1, 0.2, 0.5, 1, 2, 5} (log-spaced over the range
  where §5.2's effects, a falling f_opt and noise growing with c, are visible);
  m sweep at c = 1: m ∈ {5, 10, 20, 50, 100, 200}; Fig. 1 at (c, m) = (1, 20)
  with k ∈ {1, 2, 5, 10, 20, 50, 100, 200, 500}.
- b_max = 1 (one standard deviation of the b_i), the adjacency radius of (4).
- Subgradient method: x(1) = 0 (the centre of P), constant step
  α = diam(P)/(G√k) (the minimizer of the first term of bound (14)), and the
  step-weighted average iterate released: Thm 24's proof bounds exactly that
  average (by convexity), whereas (14) as stated bounds the best iterate,
  which cannot be released for free.  Algorithm 2 as printed releases the
  last iterate x(k+1); the same runs (same random draws, so the comparison is
  paired) are also summarized with that output in ``subgradient_outputs.csv``.
  The non-private curve of Fig. 1 uses the same steps with true subgradients.
- Laplace on the solution uses Thm 9's scale diam(P)/ε (no extra √d) and
  projects onto P; the exponential mechanism reads Σ = η c I literally as a
  covariance (per-coordinate std √(η c)) and starts every chain at 0.
- "2σ error bars" are drawn as ±2 standard errors of the estimated
  expectation (σ/√runs); the spread σ of the runs is in ``summary.csv``.

``run(quick=True)`` uses 100 runs, 1000 MCMC steps and 3-point grids for CI.
Outputs (in ``out``): ``summary.csv`` (long form: method, sweep, value,
objective_mean, objective_std, optimum, plus objective_sem, runs, c, m and
the MCMC diagnostics), ``runs.csv`` (one objective per run),
``iterations.csv`` (Fig. 1 data), ``subgradient_outputs.csv`` (last vs
averaged iterate of the private subgradient method), ``privacy/<method>.json`` (each
mechanism's privacy record and event log), ``fig1_iterations.png``, ``fig2_c.png``,
``fig3_m.png`` and ``report.html`` (written last; the folder appears only when the
run has finished).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._validation import check_int, check_positive
from ..piecewise import PiecewiseAffineProblem, Polytope, minimize, solve, subgradient_method
from ..report.figures import log_axis_at, pyplot, save_figure
from ..report.files import write_csv
from ..report.markup import Section, details_html, list_html, pre_html, table_html
from ..report.privacy import privacy_section, write_privacy_records
from .framework import PaperExperiment, ReportParts, Task, execute

__all__ = ["Config", "QUICK", "FULL", "Han2014Run", "run", "METHODS", "SUMMARY_COLUMNS"]

#: Mechanisms in the order of the paper's §4 (names as in summary.csv).
METHODS = ("laplace-data", "laplace-solution", "exponential", "subgradient")
LABELS = {
    "laplace-data": "Laplace on data (Thm 16)",
    "laplace-solution": "Laplace on solution (Thm 9)",
    "exponential": "exponential mechanism (Thm 19, MCMC)",
    "subgradient": "private subgradient (Alg. 1-2)",
    "non-private": "non-private subgradient",
}
OTHER_OUTPUT = {"average": "last", "last": "average"}
SUMMARY_COLUMNS = (
    "method", "sweep", "value", "objective_mean", "objective_std", "optimum", "objective_sem",
    "runs", "c", "m", "mcmc_acceptance", "mcmc_rhat", "seconds",
)  # fmt: skip
#: The files beside the report and what they hold (privacy/ is described by the framework).
FILES = {
    "summary.csv": "long form: one row per (method, sweep, value) with mean, std and s.e. of the objective",
    "runs.csv": "the objective of every run",
    "iterations.csv": "Fig. 1: private and non-private subgradient method against the number of iterations",
    "subgradient_outputs.csv": "averaged vs last iterate of the private subgradient method (paired runs)",
}


@dataclass(frozen=True)
class Config:
    """Every parameter of the experiment (see the module docstring for the choices)."""

    d: int = 10
    m: int = 20
    c: float = 1.0
    c_grid: tuple = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
    m_grid: tuple = (5, 10, 20, 50, 100, 200)
    iteration_grid: tuple = (1, 2, 5, 10, 20, 50, 100, 200, 500)
    epsilon: float = 0.1
    b_max: float = 1.0
    runs: int = 1000
    mcmc_steps: int = 5000
    eta: float = 0.1
    iterations: int = 100
    subgradient_output: str = "average"
    seed: int = 0

    def __post_init__(self):
        check_int("d", self.d)
        check_int("m", self.m)
        check_positive("c", self.c)
        check_positive("epsilon", self.epsilon)
        check_positive("b_max", self.b_max)
        check_int("runs", self.runs, minimum=2)
        check_int("mcmc_steps", self.mcmc_steps, minimum=4)
        check_int("iterations", self.iterations)
        for name, grid in (("c_grid", self.c_grid), ("m_grid", self.m_grid)):
            if len(grid) == 0:
                raise ValueError(f"{name} must not be empty")
        for c in self.c_grid:
            check_positive("c_grid entries", c)
        for k in (*self.m_grid, *self.iteration_grid):
            check_int("grid entries", k)


FULL = Config()
QUICK = Config(
    runs=100,
    mcmc_steps=1000,
    c_grid=(0.2, 1.0, 5.0),
    m_grid=(5, 20, 100),
    iteration_grid=(1, 10, 100),
)


@dataclass
class Han2014Run:
    """What :func:`run` produced: the summary rows, Fig. 1 rows, output paths and timings."""

    config: Config
    summary: list[dict]
    iterations: list[dict]
    table: str
    verdict: list[dict]
    paths: dict = field(default_factory=dict)
    seconds: float = 0.0
    privacy: dict = field(default_factory=dict)
    outputs: list[dict] = field(default_factory=list)
    figures: dict = field(default_factory=dict)
    per_run: list[dict] = field(default_factory=list)  # one objective per run (runs.csv)
    optimum: float = float("nan")  # f_opt at Fig. 1's (c, m)

    @property
    def text(self) -> str:
        """The terminal summary: the table and the verdict on the paper's claim."""
        wins = sum(row["subgradient_lowest"] for row in self.verdict)
        return (
            f"{self.table}\nThe private subgradient method has the lowest mean objective at {wins} of "
            f"{len(self.verdict)} grid points (paper: at all of them)."
        )


def _instance(config: Config) -> tuple[np.ndarray, np.ndarray]:
    m_max = max((config.m, *config.m_grid))
    full = PiecewiseAffineProblem.gaussian(
        m_max, config.d, c=config.c, b_max=config.b_max, rng=config.seed
    )
    return full.A, full.b


def _problem(A, b, config: Config, c: float, m: int) -> PiecewiseAffineProblem:
    return PiecewiseAffineProblem(
        A[:m], b[:m], b_max=config.b_max, polytope=Polytope.cube(c, config.d)
    )


def _options(method: str, config: Config) -> dict:
    if method == "exponential":
        return {"steps": config.mcmc_steps, "eta": config.eta}
    if method == "subgradient":
        return {"iterations": config.iterations, "output": config.subgradient_output}
    return {}


def _seed(config: Config, *key: int) -> np.random.SeedSequence:
    """The stream of one mechanism run: ``SeedSequence([seed, *key])`` (the streams of the published numbers)."""
    return np.random.SeedSequence([config.seed, *key])


def _mechanism(state: dict, c: float, m: int, key: int, j: int) -> dict:
    """Mechanism ``METHODS[j]`` at grid point ``key`` = (c, m): objectives (R,), diagnostics, privacy record."""
    config = state["config"]
    problem = _problem(state["A"], state["b"], config, c, m)
    method = METHODS[j]
    start = time.perf_counter()
    rng = np.random.default_rng(_seed(config, key, j))
    result = minimize(problem, config.epsilon, method=method, repetitions=config.runs, rng=rng,
                      **_options(method, config))  # fmt: skip
    seconds = time.perf_counter() - start
    out = {"method": method, "f": np.asarray(result.fun), "info": result.info, "seconds": seconds,
           "privacy": result.privacy_record(),
           "label": f"c={c:g} m={m}: {method:16s} mean f = {np.mean(result.fun):9.4f}  ({seconds:.1f} s)"}  # fmt: skip
    if method == "subgradient":
        # Same seed ⇒ same draws and iterates; only the released aggregate differs.
        other = OTHER_OUTPUT[config.subgradient_output]
        paired = minimize(
            problem, config.epsilon, method=method, repetitions=config.runs,
            rng=np.random.default_rng(_seed(config, key, j)), **{**_options(method, config), "output": other},
        )  # fmt: skip
        out["paired"] = np.asarray(paired.fun)
    return out


def _point(A, b, config: Config, c: float, m: int, mechanisms: list[dict]) -> dict:
    """All four mechanisms at one grid point: {method: (objectives (R,), info, seconds), optimum, paired output}."""
    point = {"optimum": float(solve(_problem(A, b, config, c, m)).fun)}
    for out in mechanisms:
        point[out["method"]] = (out["f"], out["info"], out["seconds"])
        if "paired" in out:
            point["subgradient-" + OTHER_OUTPUT[config.subgradient_output]] = out["paired"]
    return point


def _output_rows(point: dict, sweep: str, value, config: Config) -> list[dict]:
    """The private subgradient method's mean objective for both outputs (paired runs)."""
    other = OTHER_OUTPUT[config.subgradient_output]
    best_other = min(np.mean(point[m][0]) for m in METHODS if m != "subgradient")
    rows = []
    for output, f in ((config.subgradient_output, point["subgradient"][0]),
                      (other, point["subgradient-" + other])):  # fmt: skip
        std = float(np.std(f, ddof=1))
        rows.append({
            "sweep": sweep, "value": value, "output": output, "objective_mean": float(np.mean(f)),
            "objective_std": std, "objective_sem": std / np.sqrt(f.size),
            "best_other_mean": float(best_other), "lowest_of_all": bool(np.mean(f) < best_other),
        })  # fmt: skip
    return rows


def _summary_rows(
    point: dict, sweep: str, value, c: float, m: int
) -> tuple[list[dict], list[dict]]:
    rows, per_run = [], []
    for method in METHODS:
        objectives, info, seconds = point[method]
        runs = len(objectives)
        std = float(np.std(objectives, ddof=1))
        rows.append({
            "method": method, "sweep": sweep, "value": value,
            "objective_mean": float(np.mean(objectives)), "objective_std": std,
            "optimum": point["optimum"], "objective_sem": std / np.sqrt(runs), "runs": runs,
            "c": c, "m": m,
            "mcmc_acceptance": info.get("acceptance_rate", ""),
            "mcmc_rhat": info.get("rhat", ""), "seconds": round(seconds, 3),
        })  # fmt: skip
        per_run.extend(
            {"sweep": sweep, "value": value, "c": c, "m": m, "method": method, "run": r,
             "objective": float(f)}
            for r, f in enumerate(objectives)
        )  # fmt: skip
    return rows, per_run


def _iteration_point(state: dict, i: int, k: int) -> list[dict]:
    """Fig. 1 at ``k`` iterations: the private and the non-private subgradient method's objective."""
    config = state["config"]
    problem = _problem(state["A"], state["b"], config, config.c, config.m)
    private = minimize(
        problem, config.epsilon, method="subgradient", repetitions=config.runs,
        rng=np.random.default_rng(_seed(config, 10_000 + i)), iterations=k, output=config.subgradient_output,
    )  # fmt: skip
    f = np.asarray(private.fun)
    std = float(f.std(ddof=1))
    exact = subgradient_method(problem, k, output=config.subgradient_output)
    f_np = float(problem.value(exact.x)[0])
    return [
        {"iterations": k, "method": "subgradient", "objective_mean": float(f.mean()), "objective_std": std,
         "objective_sem": std / np.sqrt(f.size), "runs": f.size},
        {"iterations": k, "method": "non-private", "objective_mean": f_np, "objective_std": 0.0,
         "objective_sem": 0.0, "runs": 1},
    ]  # fmt: skip


def _work(state: dict, kind: str, *args):
    return _mechanism(state, *args) if kind == "mechanism" else _iteration_point(state, *args)


def _describe(task: Task, result) -> str:
    if task.args[0] == "mechanism":
        return result["label"]
    private, exact = result
    return f"Fig. 1: k={private['iterations']}: private {private['objective_mean']:.4f}, " \
           f"non-private {exact['objective_mean']:.4f}"


def _verdict(summary: list[dict]) -> list[dict]:
    """Per grid point: the method with the lowest mean, and whether subgradient is lowest."""
    out = []
    for sweep in ("c", "m"):
        values = sorted({row["value"] for row in summary if row["sweep"] == sweep})
        for value in values:
            rows = {r["method"]: r for r in summary if r["sweep"] == sweep and r["value"] == value}
            best = min(rows, key=lambda name: rows[name]["objective_mean"])
            sub = rows["subgradient"]
            runner_up = min(
                (rows[name] for name in rows if name != "subgradient"),
                key=lambda r: r["objective_mean"],
            )
            margin = runner_up["objective_mean"] - sub["objective_mean"]
            se = float(np.hypot(runner_up["objective_sem"], sub["objective_sem"]))
            out.append({
                "sweep": sweep, "value": value, "lowest": best,
                "subgradient_lowest": best == "subgradient",
                "subgradient_mean": sub["objective_mean"],
                "best_other": runner_up["method"], "best_other_mean": runner_up["objective_mean"],
                "margin": margin, "margin_in_se": margin / se if se > 0 else float("inf"),
            })  # fmt: skip
    return out


def _format_table(summary: list[dict]) -> str:
    header = f"{'sweep':>5} {'value':>6} {'optimum':>9} " + " ".join(f"{m:>17}" for m in METHODS)
    lines = [header, "-" * len(header)]
    keys = sorted({(r["sweep"], r["value"]) for r in summary})
    for sweep, value in keys:
        rows = {r["method"]: r for r in summary if (r["sweep"], r["value"]) == (sweep, value)}
        cells = " ".join(
            f"{rows[m]['objective_mean']:9.3f}±{2 * rows[m]['objective_sem']:<7.3f}"
            for m in METHODS
        )
        lines.append(f"{sweep:>5} {value:>6g} {rows[METHODS[0]]['optimum']:9.3f} {cells}")
    lines.append("(mean objective ± 2 standard errors over the runs)")
    return "\n".join(lines)


# -- figures --------------------------------------------------------------------------------
_STYLE = {
    "laplace-data": dict(color="tab:red", marker="s"),
    "laplace-solution": dict(color="tab:orange", marker="^"),
    "exponential": dict(color="tab:green", marker="D"),
    "subgradient": dict(color="black", marker="o"),
    "non-private": dict(color="tab:blue", marker="v"),
}


def _sweep_figure(path: Path, summary: list[dict], sweep: str, config: Config) -> Path:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    rows = [r for r in summary if r["sweep"] == sweep]
    values = sorted({r["value"] for r in rows})
    for method in METHODS:
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["value"])
        ax.errorbar(
            [r["value"] for r in mine], [r["objective_mean"] for r in mine],
            yerr=[2 * r["objective_sem"] for r in mine], capsize=3, label=LABELS[method],
            **_STYLE[method],
        )  # fmt: skip
    optimum = {r["value"]: r["optimum"] for r in rows}
    ax.plot(values, [optimum[v] for v in values], "m--", label="true optimum $f_{opt}$")
    log_axis_at(ax, values)
    if sweep == "c":
        ax.set_xlabel(r"c  (box $P = [-c, c]^d$)")
        ax.set_title(f"Fig. 2: objective vs c (d={config.d}, m={config.m}, ε={config.epsilon:g})")
    else:
        ax.set_xlabel("m (number of affine pieces)")
        ax.set_title(f"Fig. 3: objective vs m (d={config.d}, c={config.c:g}, ε={config.epsilon:g})")
    return _finish(fig, ax, path, f"mean objective f(x) over {config.runs} runs (±2 s.e.)")


def _iteration_figure(path: Path, rows: list[dict], optimum: float, config: Config) -> Path:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for method in ("subgradient", "non-private"):
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["iterations"])
        ax.errorbar(
            [r["iterations"] for r in mine], [r["objective_mean"] for r in mine],
            yerr=[2 * r["objective_sem"] for r in mine], capsize=3,
            label=f"{LABELS[method]}, {config.subgradient_output} iterate",
            **_STYLE[method],
        )  # fmt: skip
    ax.axhline(optimum, color="m", linestyle="--", label="true optimum $f_{opt}$")
    log_axis_at(ax, sorted({r["iterations"] for r in rows}))
    ax.set_xlabel("number of iterations k")
    ax.set_title(f"Fig. 1: objective vs iterations (d={config.d}, m={config.m}, c={config.c:g})")
    return _finish(fig, ax, path, f"objective f (private: mean of {config.runs} runs ±2 s.e.)")


def _finish(fig, ax, path: Path, ylabel: str) -> Path:
    """The y label, grid and legend every han2014 figure has; then save it."""
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path, dpi=120)



def _report(result: Han2014Run, quick: bool) -> ReportParts:
    config = result.config
    verdict_rows = [
        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}
        for row in result.verdict
    ]
    wins = sum(row["subgradient_lowest"] for row in result.verdict)
    points = len({(c, config.m) for c in config.c_grid} | {(config.c, m) for m in config.m_grid})
    about = [
        f"Four mechanisms (Laplace on the data, Laplace on the solution, the exponential mechanism "
        f"sampled by MCMC, the private subgradient method) at ε = {config.epsilon:g}, {config.runs} "
        f"independent runs each, at {points} grid points: c ∈ {{{', '.join(f'{c:g}' for c in config.c_grid)}}} "
        f"at m = {config.m}, and m ∈ {{{', '.join(str(m) for m in config.m_grid)}}} at c = {config.c:g}; "
        f"Fig. 1 at k ∈ {{{', '.join(str(k) for k in config.iteration_grid)}}} subgradient iterations. "
        f"Seed {config.seed}.",
        "Choices the paper leaves open (d, the grids, b_max, the step size, x(1), the output of the "
        "subgradient method) are listed in the module docstring of dpopt.experiments.han2014.",
    ] + (["This is the reduced --quick configuration (fewer runs, MCMC steps and grid points): "
          "a smoke test, not the paper's numbers."] if quick else [])
    verdict = Section(
        "Does the private subgradient method have the lowest expected objective?",
        table_html(verdict_rows),
        paragraphs=[
            f"The paper's finding (§5.2): the private subgradient method has the lowest expected objective "
            f"over the c and m grids. Here it has the lowest mean at {wins} of {len(result.verdict)} grid "
            "points. margin = best other mean − subgradient mean, in objective units and in standard errors "
            "(positive: subgradient lower)."
        ],
    )
    m_max = max((config.m, *config.m_grid))
    data = Section(
        "Data",
        list_html([
            f"One random instance (seed {config.seed}): {m_max} affine pieces a_iᵀx + b_i in d = {config.d} "
            "dimensions, a_i and b_i i.i.d. N(0, 1); the first m pieces are used at each grid point "
            "(nested instances).",
            f"The private data are the offsets b; the slopes a_i and the box P = [−c, c]^{config.d} are public. "
            f"Neighbouring data sets differ by at most b_max = {config.b_max:g} in every b_i (eq. (4)).",
            "f_opt (the 'optimum' column) is the exact minimum from the epigraph LP (HiGHS).",
        ]),  # fmt: skip
    )
    privacy = privacy_section(
        result.privacy,
        paragraphs=[
            f"Every run of every mechanism spends ε = {config.epsilon:g} under the adjacency of eq. (4); "
            "the records below (and their event logs in privacy/) are those of the first grid point (the others are "
            "identical in ε). Projecting "
            "the Laplace-on-solution output onto P is post-processing and costs nothing."
        ],
    )
    summary = Section(
        "Summary table",
        pre_html(result.table)
        + details_html("summary.csv (long form)", table_html(result.summary, SUMMARY_COLUMNS)),
    )
    outputs = Section(
        "Private subgradient method: averaged vs last iterate (paired runs)",
        table_html(result.outputs),
        paragraphs=[
            "Both outputs come from the same random draws; lowest_of_all compares with the "
            "best of the other three mechanisms at that grid point."
        ],
    )
    return ReportParts(
        "Reproduction of Han, Topcu & Pappas (2014): private minimization of piecewise-affine functions",
        about, verdict, summary, data, privacy,
        figure_note="Points are means over the runs with ±2 standard errors of the mean; the dashed line is f_opt.",
        files=FILES, extra=[outputs],
    )


def _compute(config: Config, *, jobs: int, progress) -> Han2014Run:
    """Every mechanism at every grid point and every Fig. 1 point is a task; then the tables and verdict."""
    A, b = _instance(config)
    points = [("c", c, c, config.m) for c in config.c_grid] + [("m", m, config.c, m) for m in config.m_grid]
    keys = {point: key for key, point in enumerate(dict.fromkeys((c, m) for _, _, c, m in points))}
    tasks = [Task(("mechanism", key, j), ("mechanism", c, m, key, j)) for (c, m), key in keys.items()
             for j in range(len(METHODS))]  # fmt: skip
    tasks += [Task(("fig1", i), ("fig1", i, k)) for i, k in enumerate(config.iteration_grid)]
    done = execute(_work, tasks, state={"config": config, "A": A, "b": b}, jobs=jobs, progress=progress,
                   describe=_describe)  # fmt: skip
    results = dict(zip((task.key for task in tasks), done, strict=True))
    cache = {
        (c, m): _point(A, b, config, c, m, [results[("mechanism", key, j)] for j in range(len(METHODS))])
        for (c, m), key in keys.items()
    }
    summary, per_run, outputs = [], [], []
    for sweep, value, c, m in points:
        rows, runs_rows = _summary_rows(cache[(c, m)], sweep, value, c, m)
        summary.extend(rows)
        per_run.extend(runs_rows)
        outputs.extend(_output_rows(cache[(c, m)], sweep, value, config))
    privacy = {method: results[("mechanism", 0, j)]["privacy"] for j, method in enumerate(METHODS)}
    iteration_rows = [row for i in range(len(config.iteration_grid)) for row in results[("fig1", i)]]
    optimum = cache[(config.c, config.m)]["optimum"] if (config.c, config.m) in cache else float(
        solve(_problem(A, b, config, config.c, config.m)).fun)
    return Han2014Run(
        config, summary, iteration_rows, _format_table(summary), _verdict(summary),
        privacy=privacy, outputs=outputs, per_run=per_run, optimum=optimum,
    )  # fmt: skip


def _write(result: Han2014Run, folder: Path) -> dict:
    write_csv(folder / "runs.csv", result.per_run)
    write_csv(folder / "iterations.csv", result.iterations)
    write_csv(folder / "subgradient_outputs.csv", result.outputs)
    write_privacy_records(folder / "privacy", result.privacy)
    figures = {
        "Fig. 1: objective vs iterations": _iteration_figure(
            folder / "fig1_iterations.png", result.iterations, result.optimum, result.config
        ),
        "Fig. 2: objective vs c": _sweep_figure(folder / "fig2_c.png", result.summary, "c", result.config),
        "Fig. 3: objective vs m": _sweep_figure(folder / "fig3_m.png", result.summary, "m", result.config),
    }
    return figures


#: han2014 on the shared skeleton: ``run(quick=False, out=None, *, config=None, seed=None, progress=None,
#: jobs=None, runs=None)``; ``progress`` is called after each mechanism at each grid point and each point of
#: Fig. 1; ``jobs`` defaults to 1.
EXPERIMENT = PaperExperiment("han2014", FULL, QUICK, SUMMARY_COLUMNS, _compute, _write, _report)
run = EXPERIMENT.run
