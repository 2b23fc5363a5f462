"""A private ``dex-agents-engine`` process for one test: start, kill, restart, terminate."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from dex_agents.testing._processes import ChildProcess, ChildProcessExitedError

__all__ = ["EngineHandle"]

_LISTENING = re.compile(r"^dex-agents-engine listening on (\S+)$")
_START_TIMEOUT_SECONDS = 30.0
_TERMINATE_TIMEOUT_SECONDS = 20.0
# After a SIGKILL the old listening socket is gone at once, but another process may briefly
# hold the port; a restart tries a few times before giving up.
_RESTART_BIND_ATTEMPTS = 10
_RESTART_BIND_PAUSE_SECONDS = 0.2


class EngineHandle:
    """The engine process of an :class:`~dex_agents.testing.AgentTestStack`.

    It runs ``python -m dex_agents.engine serve`` with ``process-crash-safe`` durability in its
    own process group; a watchdog in it stops it if the test process dies without cleaning
    up. A SIGKILL loses no acknowledged change, and :meth:`restart` brings the engine back on
    the same address and data directory, so the stack's Client and every Worker reconnect by
    themselves.

    Args:
        data_dir: The engine's state folder (kept across restarts).
        log_path: File that receives the engine's output.
        engine_args: Extra ``serve`` options, e.g. ``("--min-heartbeat-timeout", "1")``.
    """

    def __init__(self, data_dir: Path, log_path: Path, engine_args: Sequence[str] = ()) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.engine_args = tuple(engine_args)
        self._bind = "127.0.0.1:0"
        self._address = ""
        self._process: ChildProcess | None = None

    @property
    def address(self) -> str:
        """``host:port`` the engine listens on (the same after a restart).

        Raises:
            RuntimeError: The engine was never started.
        """
        if not self._address:
            raise RuntimeError("the engine has not been started")
        return self._address

    @property
    def pid(self) -> int | None:
        """Process ID of the current engine process, ``None`` before the first start."""
        return self._process.pid if self._process is not None else None

    @property
    def is_alive(self) -> bool:
        """Whether the engine process is running."""
        return self._process is not None and self._process.is_alive

    def output(self) -> str:
        """What the current engine process printed so far (its log lines)."""
        return self._process.output() if self._process is not None else ""

    async def start(self) -> str:
        """Start the engine (on its previous address if it ran before); return the address.

        Raises:
            RuntimeError: The engine is already running.
            ChildProcessExitedError: The engine exited before listening.
            TimeoutError: The engine did not listen within 30 seconds.
        """
        if self.is_alive:
            raise RuntimeError("the engine is already running")
        attempts = _RESTART_BIND_ATTEMPTS if self._address else 1
        for attempt in range(1, attempts + 1):
            try:
                self._address = await self._start_once()
            except ChildProcessExitedError as error:
                if attempt == attempts or "cannot bind" not in str(error):
                    raise
                await asyncio.sleep(_RESTART_BIND_PAUSE_SECONDS)
            else:
                self._bind = self._address
                break
        return self._address

    async def _start_once(self) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            sys.executable,
            "-m",
            "dex_agents.testing._guard",
            str(os.getpid()),
            "dex_agents.engine",
            "serve",
            "--address",
            self._bind,
            "--data-dir",
            str(self.data_dir),
            "--durability",
            "process-crash-safe",
            *self.engine_args,
        ]
        self._process = ChildProcess(
            "the engine", argv, log_path=self.log_path, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )

        def listening(line: str) -> str | None:
            found = _LISTENING.match(line)
            return found.group(1) if found else None

        return await self._process.wait_for_line(
            listening, timeout=_START_TIMEOUT_SECONDS, what="listening"
        )

    def kill(self) -> None:
        """SIGKILL the engine (as a crash would) and reap it; a no-op when it is not running."""
        if self._process is not None:
            self._process.kill()

    async def restart(self) -> str:
        """Kill the engine if it runs, then start it again on the same address and data.

        Flows carry on where the engine's last committed change left them; an attempt that
        was running when the engine died counts as failed and is retried by its policy.

        Returns:
            The engine's address, unchanged.
        """
        self.kill()
        return await self.start()

    async def terminate(self, timeout: float = _TERMINATE_TIMEOUT_SECONDS) -> int:
        """Stop the engine cleanly with SIGTERM (SIGKILL after ``timeout`` seconds).

        Args:
            timeout: Seconds to wait for a clean exit.

        Returns:
            The engine's exit code (0 after a clean stop).

        Raises:
            RuntimeError: The engine was never started.
        """
        if self._process is None:
            raise RuntimeError("the engine has not been started")
        return await self._process.terminate(timeout)

    def __repr__(self) -> str:
        state = "running" if self.is_alive else "stopped"
        return f"EngineHandle(address={self._address!r}, pid={self.pid}, {state})"
