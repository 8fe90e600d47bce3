"""A small progress reporter for long runs (experiments, the demo).

On a terminal it redraws one status line; in a non-interactive run it prints a
line per finished task (so CI logs show progress); ``quiet=True`` silences it.
Experiments accept any callable ``progress(done, total, label)``; this class
is one.  :meth:`Progress.keepalive` repeats the last status with the elapsed
time whenever nothing was shown for a few seconds, so a long task never
leaves the command silent.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

__all__ = ["Progress"]


class Progress:
    """``progress(done, total, label)`` → prints ``[done/total] label (elapsed)``."""

    def __init__(self, title: str = "", *, quiet: bool = False, stream=None, min_interval: float = 0.0,
                 first: float | None = None):
        self.title = title
        #: the silence :meth:`keepalive` allows before the first line of all (None: its interval)
        self.first = first
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.min_interval = min_interval
        self.start = time.perf_counter()
        self._last = -float("inf")
        self._shown = self.start  # when anything was last written
        self._status = (0, 0, "starting")
        self._open = False
        self._written = False  # whether any line was written yet
        #: held while writing (and by whoever must not fork in the middle of a write)
        self.lock = threading.RLock()

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def __call__(self, done: int, total: int, label: str = "") -> None:
        if self.quiet:
            return
        now = time.perf_counter()
        if done < total and now - self._last < self.min_interval:
            return
        self._last = now
        self._status = (done, total, label)
        self._write(done, total, label, now, final=done >= total)

    def _write(self, done: int, total: int, label: str, now: float, *, final: bool) -> None:
        prefix = f"{self.title}: " if self.title else ""
        width = len(str(total))
        text = f"{prefix}[{done:>{width}}/{total}] {label} ({now - self.start:.1f}s)"
        with self.lock:
            if self.interactive:
                self.stream.write("\r\033[K" + text + ("\n" if final else ""))
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
            self._shown = now
            self._written = True
            self._open = self.interactive and not final  # a redrawn line waits for its end

    def note(self, done: int, total: int, label: str = "") -> None:
        """Set the status :meth:`keepalive` repeats without writing it: a step shown only when it is slow
        (so that a command refusing its input at that step still prints one line, the error)."""
        self._status = (done, total, label)

    @contextlib.contextmanager
    def keepalive(self, interval: float = 4.0, *, first: float | None = None):
        """While the block runs, repeat the last status (``… still running``) after ``interval`` s of silence;
        ``first`` (default: the reporter's ``first``, else ``interval``): the silence allowed before the first
        line of all, from the reporter's creation."""
        if self.quiet:
            yield
            return
        stop = threading.Event()
        first = next(f for f in (first, self.first, interval) if f is not None)

        def beat() -> None:
            while not stop.wait(min(1.0, interval / 4, first / 4)):
                now = time.perf_counter()
                if now - self._shown >= (interval if self._written else first):
                    done, total, label = self._status
                    self._write(done, total, f"{label} … still running", now, final=False)

        thread = threading.Thread(target=beat, name="progress-keepalive", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            if self._open:  # end a redrawn status line before anything else is printed
                with self.lock:
                    self.stream.write("\n")
                    self.stream.flush()
                    self._open = False
