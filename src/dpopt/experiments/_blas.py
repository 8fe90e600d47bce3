"""One BLAS thread for the experiments' batched data passes."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def single_threaded_blas():
    """Limit BLAS to one thread while the block runs.

    The (R, d) × (d, rows) products of batched repetitions are slower
    multi-threaded on a busy 2-core machine, and the experiments parallelize
    over processes instead.  threadpoolctl is optional: without it this is a
    no-op (only a speed-up is lost).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield
