"""dpopt reproduce: run a paper's experiment from the library and write its report.

    dpopt reproduce han2014 --quick            # ~10 s: ./dpopt-han2014-quick/report.html
    dpopt reproduce kuru2022 --out results/    # the full grid of kuru2022 §5

The output folder receives summary.csv (long form: one row per method and
grid point), report.html (self-contained: setup, verdict on the paper's
claims, figures, tables, data and privacy guarantee) and the CSV/JSON files the
report is drawn from.  The folder appears only when the run has finished: an
interrupted or failed run leaves nothing behind.  --quick runs a reduced
configuration (a smoke test in under two minutes, not the paper's numbers;
chen2020 --quick --jobs 1 took 21 CPU-seconds on a 2-core machine).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

from .._validation import install_hint
from ..experiments import registry
from . import FIRST_PROGRESS, UserError


def register(sub) -> None:
    p = sub.add_parser(
        "reproduce",
        help="run a paper's experiment and write summary.csv and report.html",
        description=__doc__,
        epilog="Papers: " + "; ".join(f"{e.name}: {e.title}" for e in registry.EXPERIMENTS.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paper", choices=registry.names(), help="which paper's experiment")
    p.add_argument("--quick", action="store_true", help="reduced configuration, under two minutes (a smoke test)")
    p.add_argument(
        "--out", type=Path, metavar="DIR", help="output folder (default ./dpopt-PAPER, or ./dpopt-PAPER-quick)"
    )
    p.add_argument("--seed", type=int, metavar="S", help="seed of the data, splits and privacy noise (default 0)")
    p.add_argument(
        "--jobs", type=int, metavar="N", help="worker processes (default: the experiment's; some run in one)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.set_defaults(func=run)
    # Bad arguments are user errors like any other: one line on stderr, exit code 2.
    p.error = functools.partial(_error, p)


def _error(parser: argparse.ArgumentParser, message: str) -> None:
    parser.exit(2, f"{parser.prog}: error: {message} (see {parser.prog} --help)\n")


def default_out(paper: str, quick: bool) -> Path:
    return Path(f"dpopt-{paper}" + ("-quick" if quick else ""))


def _check(args) -> Path:
    """Validate everything before the run starts, so bad input fails in a second, not after minutes."""
    from ..report import check_output_dir

    if args.seed is not None and args.seed < 0:
        raise UserError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs must be a positive integer, got {args.jobs}")
    out = args.out if args.out is not None else default_out(args.paper, args.quick)
    try:
        check_output_dir(out)
    except ValueError as exc:
        raise UserError(str(exc).replace("out: ", "--out: ", 1)) from exc
    experiment = registry.get(args.paper)
    missing = registry.missing_requirements(experiment)
    if missing:
        raise UserError(f"{args.paper} {install_hint(missing)}")
    return out


def run(args) -> int:
    from ..experiments.framework import sigterm_as_interrupt
    from ..progress import Progress

    out = _check(args)
    experiment = registry.get(args.paper)
    run_experiment = experiment.load()
    progress = Progress(f"reproduce {args.paper}", quiet=args.quiet, first=FIRST_PROGRESS)
    kwargs = {"quick": args.quick, "out": out, "seed": args.seed, "progress": progress}
    if args.jobs is not None:
        if not experiment.parallel:
            if not args.quiet:
                print(f"dpopt reproduce: note: {args.paper} runs in one process; --jobs is ignored", file=sys.stderr)
        else:
            kwargs["jobs"] = args.jobs
    start = time.perf_counter()
    # A termination request (kill, a CI timeout) unwinds like Ctrl-C: worker processes are stopped and
    # no partial output folder remains.
    try:
        with sigterm_as_interrupt():
            result = run_experiment(**kwargs)
    except KeyboardInterrupt:
        if progress.interactive and not args.quiet:
            progress.stream.write("\n")  # end the redrawn status line before the "interrupted" message
        raise
    seconds = time.perf_counter() - start
    print(result.text)
    print()
    print(f"{len(result.paths)} files written to {out} in {seconds:.1f} s:")
    for path in sorted(result.paths.values()):
        print(f"  {path}")
    print(f"Open {out / 'report.html'} in a browser for the full report.")
    return 0
