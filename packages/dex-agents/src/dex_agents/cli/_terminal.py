"""Line input that an event loop can await, and output that is flushed at once."""

from __future__ import annotations

import asyncio
import sys
import threading

__all__ = ["Terminal"]


class Terminal:
    """Reads stdin lines in a daemon thread, so a Ctrl+C never waits for it."""

    def __init__(self) -> None:
        self._lines: asyncio.Queue[str | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _start(self) -> asyncio.Queue[str | None]:
        if self._lines is None:
            self._lines = asyncio.Queue()
            self._loop = asyncio.get_running_loop()
            threading.Thread(target=self._read, name="dex-agents-stdin", daemon=True).start()
        return self._lines

    def _read(self) -> None:
        loop, lines = self._loop, self._lines
        if loop is None or lines is None:
            return
        for line in sys.stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line.rstrip("\r\n"))
        loop.call_soon_threadsafe(lines.put_nowait, None)

    async def ask(self, prompt: str) -> str | None:
        """Show ``prompt`` and wait for one line; ``None`` at the end of input."""
        lines = self._start()
        self.write(prompt)
        return await lines.get()

    @staticmethod
    def write(text: str) -> None:
        """Write without a newline."""
        sys.stdout.write(text)
        sys.stdout.flush()

    @staticmethod
    def say(text: str = "") -> None:
        """Write one line."""
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
