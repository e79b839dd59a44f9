"""The command line every benchmark shares: its parser, and modules that hold several commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence


def parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of ``python -m benchmarks NAME``, its help the module's docstring as written."""
    return argparse.ArgumentParser(
        prog=f"python -m benchmarks {name}",
        description=doc,
        formatter_class=argparse.RawTextHelpFormatter,
    )


def dispatch(
    commands: Mapping[str, Callable[[Sequence[str]], None]],
    argv: Sequence[str] | None,
    default: str | None = None,
) -> None:
    """Run the command that ``argv`` names first (``default`` when it names none)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in commands:
        commands[args[0]](args[1:])
    elif default is not None:
        commands[default](args)
    else:
        raise SystemExit(f"the first argument is one of {', '.join(commands)}")
