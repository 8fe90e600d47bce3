"""The one executor and the skeleton every paper reproduction runs on."""

from __future__ import annotations

import io
import multiprocessing
import time

import numpy as np
import pytest

from dpopt.experiments import han2014
from dpopt.experiments.framework import Task, execute, task_seed
from dpopt.progress import Progress


def _draw(state, key, seed):
    """A task: a few draws from its own stream, shifted by the shared state."""
    return state["shift"] + np.random.default_rng(seed).standard_normal(3)


def _fail(state, key):
    if key == 2:
        raise RuntimeError("task 2 failed")
    time.sleep(0.05)
    return key


def _tasks(n=6):
    return [Task((k,), (k, task_seed(7, k)), cost=k % 3, label=f"task {k}") for k in range(n)]


def test_task_seed_is_the_spawned_child():
    children = np.random.SeedSequence(5).spawn(4)
    for i, child in enumerate(children):
        assert task_seed(5, i).generate_state(4).tolist() == child.generate_state(4).tolist()
    assert task_seed(5, 1, 2).spawn_key == (1, 2)


def test_results_in_task_order_largest_cost_first_and_independent_of_jobs():
    seen = []
    one = execute(_draw, _tasks(), state={"shift": 10.0}, jobs=1, progress=lambda *call: seen.append(call))
    two = execute(_draw, _tasks(), state={"shift": 10.0}, jobs=2)
    assert [call[:2] for call in seen] == [(k, 6) for k in range(1, 7)]
    assert [call[2] for call in seen] == ["task 2", "task 5", "task 1", "task 4", "task 0", "task 3"]
    for k, (a, b) in enumerate(zip(one, two, strict=True)):
        np.testing.assert_array_equal(a, b)  # each task's stream depends only on its key
        np.testing.assert_array_equal(a, 10.0 + np.random.default_rng(np.random.SeedSequence(7).spawn(6)[k])
                                      .standard_normal(3))  # fmt: skip


def test_a_failed_task_stops_every_worker():
    tasks = [Task((k,), (k,)) for k in range(8)]
    with pytest.raises(RuntimeError, match="task 2 failed"):
        execute(_fail, tasks, jobs=2)
    assert multiprocessing.active_children() == []


def test_interrupt_in_process_writes_no_folder(tmp_path):
    def interrupt(done, total, label):
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        han2014.run(config=han2014.QUICK, out=tmp_path / "out", progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_bad_jobs_and_unknown_overrides_are_refused_before_running(tmp_path):
    with pytest.raises(ValueError, match="jobs"):
        execute(_draw, _tasks(), state={"shift": 0.0}, jobs=0)
    with pytest.raises(TypeError, match="unknown configuration field"):
        han2014.run(quick=True, repetitions=3)
    with pytest.raises(ValueError, match="seed"):
        han2014.run(quick=True, seed=-1)


def _wait_for(condition, timeout: float = 10.0) -> None:
    """Sleep until ``condition()`` holds, at most ``timeout`` s: a keepalive's lines come on time on an idle
    machine, later on a loaded one (a fixed sleep would fail there), never if it is broken (then the
    assertion after this fails)."""
    end = time.monotonic() + timeout
    while not condition() and time.monotonic() < end:
        time.sleep(0.01)


def test_keepalive_repeats_the_status_while_nothing_finishes():
    stream = io.StringIO()
    progress = Progress("job", stream=stream)
    progress(1, 3, "first")
    with progress.keepalive(interval=0.2):  # (two repeats: 0.4 s unloaded; a loaded machine may take longer)
        _wait_for(lambda: len(stream.getvalue().splitlines()) >= 3)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("job: [1/3] first (")
    assert len(lines) >= 3 and all(line.startswith("job: [1/3] first … still running (") for line in lines[1:])
    quiet = Progress("job", stream=io.StringIO(), quiet=True)
    with quiet.keepalive(interval=0.05):
        time.sleep(0.2)
    assert quiet.stream.getvalue() == ""


def test_a_noted_step_is_shown_only_when_slow_and_the_first_line_comes_early():
    """Progress(first=...): a command's first line after ``first`` s of silence, later ones after ``interval``;
    a noted status is written by the keepalive only (a quick step prints nothing)."""
    quick = Progress("cmd", stream=io.StringIO(), first=10.0)  # (a quick step: well within its first)
    with quick.keepalive(interval=10.0):
        quick.note(0, 1, "reading")
    assert quick.stream.getvalue() == ""
    slow = Progress("cmd", stream=io.StringIO(), first=0.1)
    with slow.keepalive(interval=10.0):
        slow.note(0, 1, "reading")
        _wait_for(lambda: slow.stream.getvalue() != "")  # 0.1 s unloaded; the next line only 10 s later
    lines = slow.stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cmd: [0/1] reading … still running (")



def test_keepalive_ends_its_redrawn_line_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    progress = Progress("job", stream=Terminal())
    progress(2, 2, "done")
    with progress.keepalive(interval=0.2):
        time.sleep(0.5)  # writing the report after the last task
    text = progress.stream.getvalue()
    assert "… still running" in text and text.endswith("\n") and text.count("\r\033[K") >= 2
