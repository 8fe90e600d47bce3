"""Every sub-command's --help states the default of each option that has one (dpopt dualavg listed 19
options with neither a word nor a default; dpopt demo --methods and dpopt fit/tune --method no default)."""

from __future__ import annotations

import argparse

from dpopt.cli import build_parser


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_every_option_with_a_default_says_so_in_its_help():
    silent = []
    for command, parser in _subparsers().items():
        for action in parser._actions:
            if action.default in (None, False, (), [], argparse.SUPPRESS) or action.dest == "help":
                continue
            text = (action.help or "") % {"default": action.default}
            if "default" not in text:
                silent.append(f"{command} {action.option_strings[0]} (default {action.default!r})")
    assert silent == []
