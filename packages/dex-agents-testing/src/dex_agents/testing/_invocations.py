"""An append-only JSON-lines log of real calls, shared by Worker processes and the test."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["InvocationLog"]


class InvocationLog:
    """Records real tool and model calls made in any Worker process; the test counts them.

    Each :meth:`record` appends one JSON object on one line with a single ``write`` to a file
    opened with ``O_APPEND``, so records from several processes never interleave, and a
    Worker killed between two records leaves only whole lines behind. Every entry holds
    ``kind``, ``name``, ``pid`` (the recording process) and the extra fields.

    Example (in a tool handler, then in the test)::

        InvocationLog(state_dir / "calls.jsonl").record("tool", "refund", order=7)
        assert InvocationLog(state_dir / "calls.jsonl").count("tool", "refund") == 1

    Args:
        path: The log file; created on the first record.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def record(self, kind: str, name: str, **fields: object) -> None:
        """Append one entry.

        Args:
            kind: What was called, e.g. ``"tool"`` or ``"model"``.
            name: Which one, e.g. the tool's name.
            **fields: More JSON-serializable values to keep (``pid`` overrides the default).

        Raises:
            TypeError: A field is not JSON-serializable.
            OSError: The line could not be written in one piece.
        """
        entry: dict[str, object] = {"kind": kind, "name": name, "pid": os.getpid(), **fields}
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            written = os.write(descriptor, line)
        finally:
            os.close(descriptor)
        if written != len(line):
            raise OSError(f"wrote {written} of {len(line)} bytes to {self.path}")

    def entries(self, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        """Every entry in the order recorded, optionally only those of one kind and name.

        Args:
            kind: Keep only entries of this kind.
            name: Keep only entries with this name.

        Returns:
            The entries as dictionaries (an empty list before the first record).
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        # Only complete lines: a record is one write, so a partial line is one still arriving.
        complete = raw[: raw.rfind(b"\n") + 1].decode()
        found: list[dict[str, Any]] = [json.loads(line) for line in complete.splitlines() if line]
        return [
            entry
            for entry in found
            if (kind is None or entry.get("kind") == kind)
            and (name is None or entry.get("name") == name)
        ]

    def count(self, kind: str | None = None, name: str | None = None) -> int:
        """How many entries match ``kind`` and ``name`` (``None`` matches any)."""
        return len(self.entries(kind, name))

    def __repr__(self) -> str:
        return f"InvocationLog({str(self.path)!r})"
