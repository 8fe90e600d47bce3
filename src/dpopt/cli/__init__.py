"""The ``dpopt`` command.

Each sub-command lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code.  Errors a user can fix (bad file, bad
ε, unknown column) are raised as :class:`UserError` and printed as one line
with exit code 2; so is a missing optional dependency (with the ``pip install
'dpopt[EXTRA]'`` that brings it): a command lists those it always needs as
``set_defaults(requires=...)``, checked before it starts.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from .._validation import EXTRAS, can_write_into, install_hint, missing_modules

__all__ = ["main", "UserError", "build_parser", "check_out", "Parser", "FIRST_PROGRESS"]

# Sub-command modules, in the order ``dpopt --help`` lists them.
COMMANDS = ("demo", "fit", "predict", "tune", "account", "audit", "reproduce", "dualavg")


#: Seconds a command may run before its first progress line (``Progress(first=...)``, see its keepalive): with
#: Python's start-up and dpopt's imports before it (1.5 CPU-s, 2.5 s on a loaded machine) no command is
#: silent for more than 5 s; a quick one prints nothing but its result.
FIRST_PROGRESS = 1.5


class UserError(Exception):
    """An error in the user's input: printed as one line, exit code 2."""


def check_out(option: str, path) -> None:
    """Refuse an output file before any work is done: its folder must exist and it must not be a folder."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UserError(f"{option} folder {str(folder)!r} does not exist")
    if path.is_dir():
        raise UserError(f"{option} {str(path)!r} is a folder: give a file name inside it")
    why = can_write_into(folder)  # found now, not after the budget is spent
    if why is not None:
        raise UserError(f"{option} folder {str(folder)!r} is not writable ({why})")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors (an unknown option, a value of the wrong type, a missing
    required option) are one line, as every other error of the command is, instead of argparse's
    usage block followed by the error; exit code 2.  Sub-command parsers inherit it."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="dpopt", description="Differentially private optimization with one privacy accountant."
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            continue  # sub-command not shipped in this build
        module.register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from .. import __version__

        print(__version__)
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        missing = missing_modules(getattr(args, "requires", ()))  # optional modules the command always needs
        if missing:
            raise UserError(install_hint(missing))
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"dpopt {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # a budget too small for the run: refused before anything is released
        from ..privacy import BudgetExceededError

        if not isinstance(exc, BudgetExceededError):
            raise
        print(f"dpopt {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # an optional module only some of a command's options need
        if (exc.name or "").split(".")[0] not in EXTRAS:
            raise
        print(f"dpopt {args.command}: error: {install_hint([exc.name.split('.')[0]])}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dpopt {args.command}: interrupted", file=sys.stderr)
        return 130
