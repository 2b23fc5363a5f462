"""Argument parsing and dispatch of the ``dex-agents`` command."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import cast

__all__ = ["main"]

_ENGINE_CLI = "dex_agents.engine._cli"

EngineMain = Callable[[list[str]], int | None]
"""The engine's entry point: takes the arguments after ``engine``, returns an exit status."""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dex-agents",
        description="Durable agent sessions on Dex.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"%(prog)s {version('dex-agents')}",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser(
        "engine",
        help="run the local Dex engine (dex-agents-engine); arguments after it go to the engine",
        add_help=False,
    )
    return parser


def _run_engine(args: list[str]) -> int:
    try:
        module = importlib.import_module(_ENGINE_CLI)
    except ModuleNotFoundError as error:
        # Only the engine's own modules count as "not available"; a missing dependency of
        # the engine is a real error and keeps its traceback.
        if error.name is None or not f"{_ENGINE_CLI}.".startswith(f"{error.name}."):
            raise
        print(f"dex-agents engine: the engine command is not available: {error}", file=sys.stderr)
        return 1
    engine_main = cast("EngineMain", module.main)
    status = engine_main(args)
    return 0 if status is None else status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``dex-agents`` command.

    Args:
        argv: The arguments after the program name; ``sys.argv[1:]`` when ``None``.

    Returns:
        The process exit status.
    """
    parser = _build_parser()
    arguments, rest = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if arguments.command == "engine":
        return _run_engine(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    parser.print_help(sys.stderr)
    return 2
