"""Argument parsing and dispatch of the ``dex-agents`` command."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TextIO, cast

__all__ = ["main"]

_ENGINE_CLI = "dex_agents.engine._cli"
_DEFAULT_DATA_DIR = Path(".dex-agents")

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
    chat = commands.add_parser(
        "chat", help="chat with a durable agent (the embedded engine runs in this process)"
    )
    _common(chat)
    chat.add_argument(
        "--model",
        help="a LiteLLM model such as openai/gpt-5-mini (default: the demo model, no key needed)",
    )
    chat.add_argument("--resume", metavar="SESSION_ID", help="continue an earlier session")
    sessions = commands.add_parser("sessions", help="list chat sessions and what they wait for")
    _common(sessions)
    commands.add_parser(
        "engine",
        help="run the local Dex engine (dex-agents-engine); arguments after it go to the engine",
        add_help=False,
    )
    return parser


def _common(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--data-dir",
        type=Path,
        default=_DEFAULT_DATA_DIR,
        help="where the embedded engine and the demo tools keep their files (.dex-agents)",
    )
    command.add_argument(
        "--server", metavar="HOST:PORT", help="use a running Dex server instead of embedding one"
    )
    command.add_argument("--debug", action="store_true", help="show tracebacks and logs")


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


def _quiet_native_stderr() -> TextIO:
    """Send file descriptor 2 to /dev/null and return a stream on the real stderr.

    gRPC's C core and other native code log to fd 2 from their own threads; in a chat
    those lines would tear through the conversation and through our one-line errors.
    """
    real = os.fdopen(os.dup(2), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    return real


def _run_chat(arguments: argparse.Namespace) -> int:
    from dex_agents.cli._chat import ChatOptions, ChatState, chat
    from dex_agents.cli._sessions import list_sessions
    from dex_agents.cli._terminal import Terminal

    logging.basicConfig(level=logging.DEBUG if arguments.debug else logging.CRITICAL)
    errors = sys.stderr if arguments.debug else _quiet_native_stderr()
    options = ChatOptions(
        data_dir=arguments.data_dir,
        server=arguments.server,
        model=getattr(arguments, "model", None),
        resume=getattr(arguments, "resume", None),
    )
    state = ChatState()
    terminal = Terminal()
    try:
        if arguments.command == "sessions":
            return asyncio.run(list_sessions(options, terminal))
        return asyncio.run(chat(options, state, terminal))
    except KeyboardInterrupt:
        terminal.say("")
        if state.session_id is not None:
            terminal.say(
                f"Stopped. Session {state.session_id} is saved; resume it with: "
                f"dex-agents chat --resume {state.session_id}"
            )
        return 130
    except Exception as error:
        if arguments.debug:
            raise
        print(f"dex-agents: {error}", file=errors)
        return 1


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
    if arguments.command in ("chat", "sessions"):
        return _run_chat(arguments)
    parser.print_help(sys.stderr)
    return 2
