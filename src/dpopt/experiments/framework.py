"""One experiment framework: the skeleton of a paper reproduction and the one executor that runs its tasks.

A paper module keeps only its science and hands the rest to
:class:`PaperExperiment`::

    def _compute(config, *, jobs, progress):               # the experiment: returns its result object
        tasks = [Task((k,), (k, task_seed(config.seed, k)), label=f"point {k}") for k in range(8)]
        rows = execute(_one_point, tasks, state={"data": ...}, jobs=jobs, progress=progress)
        return Liu2024Run(config, rows, text="...")        # needs .config, .text, .seconds, .paths, .figures

    def _write(result, folder):                            # files beyond summary.csv, and the figures
        write_csv(folder / "runs.csv", result.rows)
        return {"Fig. 1: ...": _figure(folder / "fig1.png", result)}

    def _report(result, quick):                            # what the report says about this paper
        return ReportParts(title=..., about=[...], verdict=Section(...), summary=..., data=..., privacy=...,
                           figure_note="...", files=FILES)

    EXPERIMENT = PaperExperiment("liu2024", FULL, QUICK, SUMMARY_COLUMNS, _compute, _write, _report)
    run = EXPERIMENT.run

and registers itself in :mod:`dpopt.experiments.registry`.  ``_one_point``
is a module-level function ``(state, *args)``; :meth:`PaperExperiment.run`
fills the result's ``seconds``, ``paths`` and ``figures``.

What the skeleton does for every paper: checks ``out`` before anything runs,
picks the configuration (``quick``, ``config``, ``seed`` and the paper's own
overrides, validated by the configuration's ``__post_init__``), keeps the
progress line alive (:meth:`dpopt.progress.Progress.keepalive`: no silence
longer than a few seconds), turns SIGTERM into the same clean stop as Ctrl-C,
and writes ``summary.csv`` and the paper's files into one all-or-nothing
output folder (:func:`dpopt.report.atomic_output`).

:func:`execute` runs independent tasks in ``jobs`` worker processes (or in
this one): each task carries its own seed (:func:`task_seed`, a
``numpy.random.SeedSequence``), so the numbers do not depend on ``jobs`` or
on the order in which tasks finish; every worker uses one BLAS thread;
Ctrl-C or a failed task terminates the workers at once.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, fields, replace
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int
from ..report.figures import figures_section
from ..report.files import atomic_output, check_output_dir, write_csv, written_files
from ..report.layout import reproduce_command, run_section, write_experiment_report
from ..report.markup import Section
from ._blas import single_threaded_blas

__all__ = ["Task", "task_seed", "execute", "PaperExperiment", "ReportParts", "sigterm_as_interrupt", "result_fields",
           "progress_counter"]

#: What the report's file list says about ``privacy/`` unless the paper says otherwise.
PRIVACY_FILES = ("each method's privacy record: ε, notion, relation and event log "
                 "(`dpopt account --events FILE` re-derives ε from it)")  # fmt: skip

Progress = Callable[[int, int, str], None]


def task_seed(seed: int, *key: int) -> np.random.SeedSequence:
    """The seed of the task ``key`` of a run seeded ``seed``: ``SeedSequence(seed, spawn_key=key)``.

    Equal to the ``i``-th child of ``SeedSequence(seed).spawn(n)`` for ``key = (i,)``; streams of
    different keys are independent, and a task's stream depends on nothing but ``seed`` and its key.
    """
    return np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key))


@dataclass(frozen=True)
class Task:
    """One independent unit of work: ``work(state, *args)``.

    ``key`` names the task (unique within a run); ``cost`` orders the work
    (largest first, so the slowest tasks do not start last); ``label`` is the
    progress text when the task finishes (unless :func:`execute` gets ``describe``).
    """

    key: tuple
    args: tuple = ()
    cost: float = 0.0
    label: str = ""


# -- the worker side -----------------------------------------------------------------------------------
_WORKER: dict = {}


def _init_worker(state) -> None:
    """Worker process: the shared state, and one BLAS thread for the rest of its life.

    Two workers on two cores with BLAS's default threads each oversubscribe the
    machine, and the spinning BLAS threads then multiply the CPU time.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle: it stops the workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # and terminate() must end a worker, not interrupt its task
    _WORKER.clear()
    _WORKER["state"] = state
    with contextlib.suppress(ImportError):  # optional: only a speed-up
        from threadpoolctl import threadpool_limits

        _WORKER["blas_limit"] = threadpool_limits(limits=1, user_api="blas")


def _call(work: Callable, args: tuple):
    return work(_WORKER["state"], *args)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel the queued tasks and terminate the workers (they ignore SIGINT)."""
    if hasattr(pool, "terminate_workers"):  # Python ≥ 3.14
        pool.terminate_workers()
        return
    # Terminate the workers, then let the pool's own manager thread reap them (it sees them die,
    # fails the pending futures and joins every worker) and wait for it.  Joining the workers here
    # as well would race that thread's waitpid and could leave a reaped worker listed as running.
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def execute(
    work: Callable,
    tasks: Sequence[Task],
    *,
    state: Any = None,
    jobs: int = 1,
    progress: Progress | None = None,
    describe: Callable[[Task, Any], str] | None = None,
) -> list:
    """``[work(state, *task.args) for task in tasks]``, computed in ``jobs`` processes.

    ``work`` must be a module-level function (workers find it by name).  The
    tasks run largest ``cost`` first; the results come back in the order of
    ``tasks``.  ``state`` is shared read-only data (forked, not copied per
    task, where the platform can fork).  After each finished task
    ``progress(done, total, label)`` is called with ``describe(task, result)``
    or the task's label.  With ``jobs == 1`` everything runs here, with one
    BLAS thread.  Ctrl-C (KeyboardInterrupt) or an exception in a task stops
    every worker before it propagates.
    """
    jobs = check_int("jobs", jobs)
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i].cost)
    results: list = [None] * len(tasks)
    finished = 0

    def report(i: int) -> None:
        nonlocal finished
        finished += 1
        if progress is not None:
            label = describe(tasks[i], results[i]) if describe is not None else tasks[i].label
            progress(finished, len(tasks), label)

    if jobs == 1 or len(tasks) <= 1:
        with single_threaded_blas():
            for i in order:
                results[i] = work(state, *tasks[i].args)
                report(i)
        return results
    # fork shares the state without pickling; spawn where fork does not exist (Windows)
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    pool = ProcessPoolExecutor(min(jobs, len(tasks)), mp_context=context, initializer=_init_worker,
                               initargs=(state,))  # fmt: skip
    try:
        with _forking(progress):
            futures = {pool.submit(_call, work, tasks[i].args): i for i in order}
        for future in as_completed(futures):
            i = futures[future]
            results[i] = future.result()
            report(i)
    except BaseException:  # Ctrl-C or a failed task: stop now, not after the queued tasks
        _stop(pool)
        raise
    pool.shutdown()
    return results


def progress_counter(progress: Progress | None, total: int) -> Callable[[str], None]:
    """For work done in sequence without :func:`execute`: ``step(label)`` reports the next of ``total`` steps."""
    done = 0

    def step(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, label)

    return step


@contextlib.contextmanager
def _forking(progress):
    """The block that forks the workers: hold the progress writer's lock (a lock another thread holds at fork
    time stays locked forever in the child) and defer Ctrl-C and SIGTERM until the forks are done (raised
    inside one of the interpreter's at-fork hooks, the KeyboardInterrupt would be swallowed and the run would
    go on)."""
    lock = getattr(progress, "lock", None) or contextlib.nullcontext()
    deferred: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, lambda number, frame: deferred.append(number))
    try:
        with lock:
            yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if deferred:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _keepalive(progress):
    hook = getattr(progress, "keepalive", None)
    if hook is None:
        yield
        return
    with hook():
        yield


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt():
    """A termination request (kill, a CI timeout) unwinds like Ctrl-C: workers stop, no partial folder."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- the skeleton -------------------------------------------------------------------------------------
@dataclass
class ReportParts:
    """What a paper's report says beyond the shared layout (see :func:`dpopt.report.write_experiment_report`).

    ``about``: paragraphs of "What was run" (the command, the configuration and
    the time are added); ``figure_note``: the paragraph above the figures;
    ``files``: what each written file holds; ``captions``: figure key →
    caption where the keys :meth:`PaperExperiment.write` returns are not
    the captions themselves.
    """

    title: str
    about: Sequence[str]
    verdict: Section
    summary: Section
    data: Section
    privacy: Section
    figure_note: str
    files: Mapping[str, str]
    extra: Sequence[Section] = ()
    captions: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PaperExperiment:
    """The shared skeleton of a paper reproduction; the paper supplies its science as functions.

    ``FULL``/``QUICK``: the paper's configuration and the CI-sized one (frozen
    dataclasses with a ``seed`` field); ``summary_columns``: the columns of
    summary.csv (API.md); ``compute(config, *, jobs, progress) -> result``;
    ``write(result, folder) -> {key: figure path}`` writes the files
    beyond summary.csv (the result's ``figures`` map the same keys to the
    final paths; a key is the figure's caption unless ``ReportParts.captions``
    names one); ``report(result, quick) -> ReportParts``;
    ``summary(result)``: the rows of summary.csv (default ``result.summary``);
    ``jobs``: the default worker processes of (quick, full) runs.
    """

    name: str
    FULL: Any
    QUICK: Any
    summary_columns: tuple[str, ...]
    compute: Callable
    write: Callable
    report: Callable
    summary: Callable = attrgetter("summary")
    jobs: tuple[int, int] = (1, 1)

    def is_quick(self, config) -> bool:
        """Whether ``config`` is the --quick configuration (with any seed)."""
        return config == replace(self.QUICK, seed=config.seed)

    def configure(self, quick: bool = False, config=None, seed: int | None = None, **overrides):
        """The configuration to run: ``config`` or the preset, with ``seed`` and the named fields overridden."""
        config = config if config is not None else (self.QUICK if quick else self.FULL)
        names = {f.name for f in fields(config)}
        changes = {key: tuple(v) if isinstance(v, list) else v for key, v in overrides.items() if v is not None}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"{self.name}: unknown configuration field(s) {unknown}")
        if seed is not None:
            changes["seed"] = check_int("seed", seed, minimum=0)
        return replace(config, **changes) if changes else config

    def run(self, quick: bool = False, out=None, *, config=None, seed: int | None = None,
            progress: Progress | None = None, jobs: int | None = None, **overrides):
        """Run the experiment; with ``out`` write summary.csv, the paper's files and report.html there.

        ``quick`` selects ``QUICK`` instead of ``FULL``; ``config`` overrides
        both; ``seed`` and ``overrides`` (fields of the configuration, e.g.
        ``repetitions=5``) override the chosen configuration's.
        ``progress(done, total, label)`` is called as tasks finish (e.g.
        :class:`dpopt.progress.Progress`).  ``jobs`` worker processes share the
        tasks (the results do not depend on it).  The output folder is all or
        nothing (:func:`dpopt.report.atomic_output`).
        """  # fmt: skip
        if out is not None:
            out = check_output_dir(out)
        config = self.configure(quick, config, seed, **overrides)
        jobs = self.jobs[0 if quick else 1] if jobs is None else check_int("jobs", jobs)
        progress = progress or (lambda done, total, label: None)
        start = time.perf_counter()
        with sigterm_as_interrupt(), _keepalive(progress):
            result = self.compute(config, jobs=jobs, progress=progress)
            result.seconds = time.perf_counter() - start
            if out is not None:
                with atomic_output(out) as tmp:
                    write_csv(tmp / "summary.csv", self.summary(result), self.summary_columns)
                    figures = self.write(result, tmp)
                    self._write_report(result, tmp / "report.html", figures)
                    result.paths = written_files(tmp, out)
                result.figures = {key: out / path.relative_to(tmp) for key, path in figures.items()}
        result.seconds = time.perf_counter() - start
        return result

    def _write_report(self, result, path: Path, figures: Mapping[str, Path]) -> Path:
        """The report in the layout every reproduction shares; written last, after the files it lists."""
        config = result.config
        parts = self.report(result, self.is_quick(config))
        command = reproduce_command(self.name, config, quick=self.QUICK, full=self.FULL, seed=config.seed)
        return write_experiment_report(
            path, parts.title,
            run=run_section(command=command, config=asdict(config), seconds=result.seconds, paragraphs=parts.about),
            verdict=parts.verdict,
            figures=figures_section({parts.captions.get(k, k): p for k, p in figures.items()},
                                    [parts.figure_note] if parts.figure_note else []),
            summary=parts.summary, data=parts.data, privacy=parts.privacy, extra=parts.extra,
            files={"privacy/": PRIVACY_FILES, **parts.files},
        )  # fmt: skip


def result_fields(result) -> dict:
    """The JSON-ready fields every experiment result has: configuration, text, seconds, written files."""
    return {
        "config": asdict(result.config),
        "text": result.text,
        "seconds": result.seconds,
        "paths": {k: str(v) for k, v in result.paths.items()},
        "figures": {k: str(v) for k, v in result.figures.items()},
    }
