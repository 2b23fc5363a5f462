"""Child processes of a test: the engine and Worker processes, and the safety net that ends them.

Every child runs in its own process group (``start_new_session=True``), so SIGKILL reaches it
and anything it started, at the exact moment a test chooses. Its stdout and stderr go to a log
file, never to a pipe, so a chatty child can never block on a full pipe; readiness is read
from that file. Every live child is also tracked in this module: an ``atexit`` hook kills
whatever a test left behind, so no child outlives the test process that started it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["ChildProcess", "ChildProcessExitedError", "kill_all_children"]

_POLL_SECONDS = 0.02
_LOG_TAIL_CHARS = 4000

_live: dict[int, subprocess.Popen[bytes]] = {}
_live_lock = threading.Lock()


class ChildProcessExitedError(RuntimeError):
    """A child process exited before it reported that it was ready."""


class ChildProcess:
    """One child process in its own process group, with its output in a log file.

    Args:
        name: What the child is, for error messages ("the engine", ...).
        argv: The command line.
        log_path: File that receives the child's stdout and stderr (appended to).
        cwd: Working directory of the child; ``None`` keeps the current one.
        env: The child's complete environment.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = tuple(argv)
        self.log_path = log_path
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # The child inherits its own copy of the descriptor; ours is closed at once. "ab" opens
        # it with O_APPEND, so stdout and stderr lines never overwrite each other.
        with log_path.open("ab") as log:
            self._log_offset = log.tell()
            self._process = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                start_new_session=True,
            )
        with _live_lock:
            _live[self._process.pid] = self._process

    @property
    def pid(self) -> int:
        """The child's process ID (also its process group ID)."""
        return self._process.pid

    @property
    def is_alive(self) -> bool:
        """Whether the child is still running."""
        return self._process.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit code (negative: killed by that signal), or ``None`` while it runs."""
        return self._process.poll()

    def output(self) -> str:
        """The child's output so far (stdout and stderr, since this child started)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._log_offset)
                return log.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def describe_output(self) -> str:
        """The end of the child's output, for error messages."""
        text = self.output().strip()
        if not text:
            return "(no output)"
        if len(text) > _LOG_TAIL_CHARS:
            text = "..." + text[-_LOG_TAIL_CHARS:]
        return text

    async def wait_for_line(
        self, match: Callable[[str], str | None], *, timeout: float, what: str
    ) -> str:
        """Wait until a complete output line satisfies ``match``; return what it returned.

        Args:
            match: Called with each complete line (without its newline); a non-``None``
                result ends the wait.
            timeout: Seconds to wait.
            what: What the line means, for error messages.

        Returns:
            The first non-``None`` result of ``match``.

        Raises:
            ChildProcessExitedError: The child exited first.
            TimeoutError: No such line within ``timeout``; the child is killed.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            # Liveness first: a line printed just before the child exited is then still read.
            alive = self.is_alive
            *lines, _partial = self.output().split("\n")
            for line in lines:
                found = match(line.rstrip("\r"))
                if found is not None:
                    return found
            if not alive:
                self.kill()
                raise ChildProcessExitedError(
                    f"{self.name} exited with code {self.returncode} before {what}; "
                    f"its output ({self.log_path}):\n{self.describe_output()}"
                )
            if loop.time() >= deadline:
                self.kill()
                raise TimeoutError(
                    f"{self.name} did not report {what} within {timeout}s; "
                    f"its output ({self.log_path}):\n{self.describe_output()}"
                )
            await asyncio.sleep(_POLL_SECONDS)

    def kill(self) -> None:
        """SIGKILL the child's process group and reap the child; a no-op once it is gone."""
        _kill_and_reap(self._process)

    async def terminate(self, timeout: float) -> int:
        """SIGTERM the process group, wait for the child, SIGKILL it after ``timeout``.

        Args:
            timeout: Seconds to wait for a clean exit.

        Returns:
            The child's exit code.
        """
        process = self._process
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while process.poll() is None and loop.time() < deadline:
                await asyncio.sleep(_POLL_SECONDS)
        return _kill_and_reap(process)


def _kill_and_reap(process: subprocess.Popen[bytes]) -> int:
    # ``returncode is None`` means the child was not reaped yet, so its PID (and group ID)
    # cannot belong to another process: signalling the group is safe. The group is killed even
    # when the leader already exited, to end anything it started.
    code = process.returncode
    if code is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        code = process.wait()
    with _live_lock:
        _live.pop(process.pid, None)
    return code


def kill_all_children() -> None:
    """SIGKILL every child process this module started that is still running.

    It runs at interpreter exit; a test kit user never needs to call it.
    """
    with _live_lock:
        processes = list(_live.values())
    for process in processes:
        _kill_and_reap(process)


atexit.register(kill_all_children)
