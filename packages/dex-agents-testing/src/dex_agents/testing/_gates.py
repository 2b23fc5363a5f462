"""File gates: park a handler in a Worker process at an exact point until the test releases it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

__all__ = ["FileGate"]

_DEFAULT_POLL_SECONDS = 0.02
_DEFAULT_REACHED_TIMEOUT_SECONDS = 30.0


class FileGate:
    """A gate shared by a Worker process and the test through two files in ``state_dir``.

    The handler side calls :meth:`wait_for_release`: it marks ``<name>.reached`` and waits
    for ``<name>.released``. The test side awaits :meth:`wait_until_reached`, does what the
    moment calls for (SIGKILL the Worker, check state, reach a second gate), then calls
    :meth:`release`. Files work across processes and survive a Worker's death, so a
    replacement Worker that reruns the handler finds the gate still closed, or open.

    Each arrival appends one line to ``<name>.reached``: :attr:`reached_count` counts the
    attempts that got there, and ``wait_until_reached(count=2)`` waits for a rerun.

    Example (inside a Step handler that runs in the Worker child)::

        await FileGate(state_dir, "refund").wait_for_release()

    Args:
        state_dir: Folder shared by the test and its Worker processes.
        name: The gate's name, a plain file name.

    Raises:
        ValueError: ``name`` is empty or not a plain file name.
    """

    def __init__(self, state_dir: Path | str, name: str) -> None:
        if not name or name in (".", "..") or "/" in name or os.sep in name:
            raise ValueError(f"a gate name must be a plain file name, not {name!r}")
        self.state_dir = Path(state_dir)
        self.name = name

    @property
    def reached_path(self) -> Path:
        """The file a handler appends to when it reaches the gate."""
        return self.state_dir / f"{self.name}.reached"

    @property
    def released_path(self) -> Path:
        """The file whose existence opens the gate."""
        return self.state_dir / f"{self.name}.released"

    @property
    def reached(self) -> bool:
        """Whether any handler reached the gate since it was created or :meth:`reset`."""
        return self.reached_path.exists()

    @property
    def reached_count(self) -> int:
        """How many times handlers reached the gate since it was created or :meth:`reset`."""
        try:
            return self.reached_path.read_bytes().count(b"\n")
        except FileNotFoundError:
            return 0

    @property
    def released(self) -> bool:
        """Whether the test released the gate."""
        return self.released_path.exists()

    def mark_reached(self) -> None:
        """Record one arrival at the gate (handler side); safe from several processes."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        line = f"{os.getpid()}\n".encode()
        descriptor = os.open(self.reached_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(descriptor, line)
        finally:
            os.close(descriptor)

    async def wait_for_release(
        self, poll: float = _DEFAULT_POLL_SECONDS, timeout: float | None = None
    ) -> None:
        """Mark the gate reached, then wait until the test releases it (handler side).

        Args:
            poll: Seconds between checks of the release file.
            timeout: Seconds to wait at most; ``None`` waits until released or cancelled.

        Raises:
            TimeoutError: The gate was not released within ``timeout``.
        """
        self.mark_reached()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self.released:
            if deadline is not None and loop.time() >= deadline:
                raise TimeoutError(f"gate {self.name!r} was not released within {timeout}s")
            await asyncio.sleep(poll)

    def wait_for_release_blocking(
        self, poll: float = _DEFAULT_POLL_SECONDS, timeout: float | None = None
    ) -> None:
        """Like :meth:`wait_for_release`, for synchronous code (it blocks the thread).

        Raises:
            TimeoutError: The gate was not released within ``timeout``.
        """
        self.mark_reached()
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.released:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"gate {self.name!r} was not released within {timeout}s")
            time.sleep(poll)

    async def wait_until_reached(
        self,
        timeout: float = _DEFAULT_REACHED_TIMEOUT_SECONDS,
        *,
        count: int = 1,
        poll: float = _DEFAULT_POLL_SECONDS,
    ) -> None:
        """Wait until handlers reached the gate ``count`` times in all (test side).

        Args:
            timeout: Seconds to wait at most.
            count: Arrivals to wait for, counted since the gate was created or reset.
            poll: Seconds between checks.

        Raises:
            TimeoutError: Fewer arrivals within ``timeout``.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.reached_count < count:
            if loop.time() >= deadline:
                raise TimeoutError(
                    f"timed out after {timeout}s waiting for gate {self.name!r} to be reached "
                    f"{count} time(s); reached {self.reached_count}"
                )
            await asyncio.sleep(poll)

    def release(self) -> None:
        """Open the gate (test side): every handler waiting there, now or later, goes on."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.released_path.touch()

    def reset(self) -> None:
        """Forget arrivals and close the gate again (test side)."""
        self.reached_path.unlink(missing_ok=True)
        self.released_path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return (
            f"FileGate({str(self.state_dir)!r}, {self.name!r}, "
            f"reached={self.reached_count}, released={self.released})"
        )
