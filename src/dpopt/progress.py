"""A small progress reporter for long runs (experiments, the demo).

On a terminal it redraws one status line; in a non-interactive run it prints a
line per finished task (so CI logs show progress); ``quiet=True`` silences it.
Experiments accept any callable ``progress(done, total, label)``; this class
is one.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``progress(done, total, label)`` → prints ``[done/total] label (elapsed)``."""

    def __init__(self, title: str = "", *, quiet: bool = False, stream=None, min_interval: float = 0.0):
        self.title = title
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.min_interval = min_interval
        self.start = time.perf_counter()
        self._last = -float("inf")

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def __call__(self, done: int, total: int, label: str = "") -> None:
        if self.quiet:
            return
        now = time.perf_counter()
        if done < total and now - self._last < self.min_interval:
            return
        self._last = now
        prefix = f"{self.title}: " if self.title else ""
        width = len(str(total))
        text = f"{prefix}[{done:>{width}}/{total}] {label} ({now - self.start:.1f}s)"
        if self.interactive:
            end = "\n" if done >= total else ""
            self.stream.write("\r\033[K" + text + end)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
