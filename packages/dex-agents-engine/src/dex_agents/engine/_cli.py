"""``dex-agents-engine``: run a local Dex engine in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from dex_agents.engine._config import EngineConfig
from dex_agents.engine._server import LocalEngine
from dex_agents.engine._store import Durability

__all__ = ["build_parser", "main"]


def build_parser(prog: str = "dex-agents-engine") -> argparse.ArgumentParser:
    """The command-line parser (``serve`` and its options)."""
    parser = argparse.ArgumentParser(prog=prog, description="A local Dex engine.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the engine until SIGTERM or Ctrl+C")
    serve.add_argument("--address", default="127.0.0.1:8801", help="host:port (port 0: any free)")
    serve.add_argument("--data-dir", type=Path, default=Path(".dex-engine"), help="state folder")
    serve.add_argument(
        "--durability",
        choices=[d.value for d in Durability],
        default=Durability.FSYNC.value,
        help="fsync survives power loss; process-crash-safe survives kill -9 and is faster",
    )
    serve.add_argument(
        "--default-worker-target",
        default="pull",
        help="'pull' or a push Worker's host:port, for flows started without a target",
    )
    serve.add_argument("--min-heartbeat-timeout", type=int, default=10, metavar="SECONDS")
    serve.add_argument("--default-heartbeat-timeout", type=int, default=60, metavar="SECONDS")
    serve.add_argument("--max-long-poll", type=float, default=60.0, metavar="SECONDS")
    serve.add_argument(
        "--dispatch-wait",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long a task may wait for a Worker before its attempt fails unstarted",
    )
    serve.add_argument("--log-level", default="WARNING")
    return parser


async def _serve(args: argparse.Namespace) -> None:
    config = EngineConfig(
        data_dir=args.data_dir,
        durability=Durability(args.durability),
        default_worker_target=args.default_worker_target,
        min_heartbeat_timeout_seconds=args.min_heartbeat_timeout,
        default_heartbeat_timeout_seconds=args.default_heartbeat_timeout,
        max_long_poll_seconds=args.max_long_poll,
        schedule_to_start_seconds=args.dispatch_wait,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    engine = LocalEngine(config, address=args.address)
    address = await engine.start()
    print(f"dex-agents-engine listening on {address}", flush=True)
    await stop.wait()
    await engine.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return the process exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_serve(args))
    except (OSError, ValueError, RuntimeError) as error:
        print(f"dex-agents-engine: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
