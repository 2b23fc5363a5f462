"""SQLite persistence: one transaction per state transition, replayed on start.

Every change a transition makes is collected in a :class:`Changes` and written by
:meth:`Store.commit` in a single transaction before anyone is told about it.
"""

from __future__ import annotations

import json
import sqlite3
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine._model import ChannelEntry, Execution, Run

__all__ = ["Changes", "Durability", "RunSummary", "Store"]

_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs(
    run_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, flow_id TEXT NOT NULL,
    status INTEGER NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_by_flow ON runs(flow_id, seq);
CREATE TABLE IF NOT EXISTS executions(
    run_id TEXT NOT NULL, exec_id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY(run_id, exec_id));
CREATE TABLE IF NOT EXISTS snapshots(
    run_id TEXT NOT NULL, exec_id TEXT NOT NULL, request BLOB NOT NULL,
    PRIMARY KEY(run_id, exec_id));
CREATE TABLE IF NOT EXISTS attributes(
    run_id TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY(run_id, key));
CREATE TABLE IF NOT EXISTS channel_messages(
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, channel TEXT NOT NULL,
    message_id TEXT NOT NULL, value BLOB NOT NULL, PRIMARY KEY(run_id, seq));
CREATE TABLE IF NOT EXISTS history(
    run_id TEXT NOT NULL, event_id INTEGER NOT NULL, event BLOB NOT NULL,
    PRIMARY KEY(run_id, event_id));
CREATE TABLE IF NOT EXISTS blobs(
    flow_id TEXT NOT NULL, blob_id TEXT NOT NULL, value BLOB NOT NULL,
    PRIMARY KEY(flow_id, blob_id));
CREATE TABLE IF NOT EXISTS indexes(key TEXT PRIMARY KEY, type INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS stream_messages(
    scope TEXT NOT NULL, seq INTEGER NOT NULL, flow_id TEXT NOT NULL, created_ms INTEGER NOT NULL,
    source TEXT NOT NULL, value BLOB NOT NULL, charged INTEGER NOT NULL, PRIMARY KEY(scope, seq));
"""


class Durability(StrEnum):
    """What an acknowledged change survives."""

    FSYNC = "fsync"
    """Power loss: every commit is fsynced."""
    PROCESS_CRASH_SAFE = "process-crash-safe"
    """``kill -9`` of the engine, not power loss: commits are not fsynced."""


@dataclass
class Changes:
    """Writes of one transition, applied together by :meth:`Store.commit`."""

    runs: dict[str, Run] = field(default_factory=dict)
    executions: dict[tuple[str, str], Execution | None] = field(default_factory=dict)
    snapshots: dict[tuple[str, str], bytes | None] = field(default_factory=dict)
    attributes: dict[tuple[str, str], bytes | None] = field(default_factory=dict)
    channel_added: list[tuple[str, int, str, str, bytes]] = field(default_factory=list)
    channel_removed: list[tuple[str, int]] = field(default_factory=list)
    history: list[tuple[str, int, bytes]] = field(default_factory=list)
    after_commit: list[Callable[[], None]] = field(default_factory=list)

    def touch(self, run: Run) -> None:
        """Mark a run's own row as changed."""
        self.runs[run.run_id] = run

    def save(self, run: Run, execution: Execution) -> None:
        """Mark an execution row as changed."""
        self.executions[(run.run_id, execution.exec_id)] = execution

    def drop(self, run: Run, execution: Execution) -> None:
        """Delete an execution row and its request snapshot."""
        self.executions[(run.run_id, execution.exec_id)] = None
        self.snapshots[(run.run_id, execution.exec_id)] = None

    def later(self, action: Callable[[], None]) -> None:
        """Run ``action`` once the transaction committed."""
        self.after_commit.append(action)


@dataclass(frozen=True)
class RunSummary:
    """A run row as stored: enough to decide whether to load it whole."""

    run_id: str
    seq: int
    flow_id: str
    status: int
    data: dict[str, Any]


class Store:
    """The engine's SQLite database (WAL mode, one connection, one writer)."""

    def __init__(self, data_dir: Path, durability: Durability) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "engine.sqlite3"
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        synchronous = "FULL" if durability is Durability.FSYNC else "OFF"
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta VALUES('schema', ?)", (str(_SCHEMA_VERSION),))
        elif int(row[0]) != _SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path} has schema version {row[0]}; this engine reads {_SCHEMA_VERSION}"
            )
        max_seq = self._db.execute("SELECT MAX(seq) FROM runs").fetchone()[0]
        self.next_run_seq = (max_seq or 0) + 1

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def commit(self, changes: Changes) -> None:
        """Write every change of one transition in a single transaction."""
        db = self._db
        db.execute("BEGIN")
        try:
            for run in changes.runs.values():
                db.execute(
                    "INSERT OR REPLACE INTO runs VALUES(?,?,?,?,?)",
                    (run.run_id, run.seq, run.flow_id, run.status, json.dumps(run.to_json())),
                )
            for (run_id, exec_id), execution in changes.executions.items():
                if execution is None:
                    db.execute(
                        "DELETE FROM executions WHERE run_id=? AND exec_id=?", (run_id, exec_id)
                    )
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO executions VALUES(?,?,?)",
                        (run_id, exec_id, json.dumps(execution.to_json())),
                    )
            for (run_id, exec_id), request in changes.snapshots.items():
                if request is None:
                    db.execute(
                        "DELETE FROM snapshots WHERE run_id=? AND exec_id=?", (run_id, exec_id)
                    )
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO snapshots VALUES(?,?,?)", (run_id, exec_id, request)
                    )
            for (run_id, key), value in changes.attributes.items():
                if value is None:
                    db.execute("DELETE FROM attributes WHERE run_id=? AND key=?", (run_id, key))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO attributes VALUES(?,?,?)", (run_id, key, value)
                    )
            db.executemany("INSERT INTO channel_messages VALUES(?,?,?,?,?)", changes.channel_added)
            db.executemany(
                "DELETE FROM channel_messages WHERE run_id=? AND seq=?", changes.channel_removed
            )
            db.executemany("INSERT INTO history VALUES(?,?,?)", changes.history)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # Loading -------------------------------------------------------------------------------

    def summaries(self) -> Iterator[RunSummary]:
        """Every run row, oldest first."""
        for run_id, seq, flow_id, status, data in self._db.execute(
            "SELECT run_id, seq, flow_id, status, data FROM runs ORDER BY seq"
        ):
            yield RunSummary(run_id, seq, flow_id, status, json.loads(data))

    def load_run(self, summary: RunSummary) -> Run:
        """Load a whole run: attributes, Channels and active executions."""
        run = Run.from_json(summary.data, summary.seq)
        for key, value in self._db.execute(
            "SELECT key, value FROM attributes WHERE run_id=?", (run.run_id,)
        ):
            run.attributes[key] = pb.Value.FromString(value)
        for seq, channel, message_id, value in self._db.execute(
            "SELECT seq, channel, message_id, value FROM channel_messages "
            "WHERE run_id=? ORDER BY seq",
            (run.run_id,),
        ):
            run.channels.setdefault(channel, deque()).append(
                ChannelEntry(seq, message_id, pb.Value.FromString(value))
            )
        executions = [
            Execution.from_json(json.loads(data))
            for (data,) in self._db.execute(
                "SELECT data FROM executions WHERE run_id=?", (run.run_id,)
            )
        ]
        for execution in sorted(executions, key=lambda e: e.seq):
            run.executions[execution.exec_id] = execution
        return run

    def snapshot(self, run_id: str, exec_id: str) -> bytes | None:
        """The request snapshot of an execution's current method call."""
        row = self._db.execute(
            "SELECT request FROM snapshots WHERE run_id=? AND exec_id=?", (run_id, exec_id)
        ).fetchone()
        return None if row is None else bytes(row[0])

    def history(self, run_id: str, start: int, limit: int) -> list[bytes]:
        """History events of a run from event id ``start``, at most ``limit``."""
        return [
            bytes(event)
            for (event,) in self._db.execute(
                "SELECT event FROM history WHERE run_id=? AND event_id>=? "
                "ORDER BY event_id LIMIT ?",
                (run_id, start, limit),
            )
        ]

    # Indexes and blobs -----------------------------------------------------------------------

    def indexes(self) -> dict[str, int]:
        """The attribute index registry (key -> IndexType)."""
        return dict(self._db.execute("SELECT key, type FROM indexes").fetchall())

    def save_indexes(self, indexes: Mapping[str, int]) -> None:
        """Register attribute indexes."""
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO indexes VALUES(?,?)", list(indexes.items())
            )

    def put_blob(self, flow_id: str, blob_id: str, value: bytes) -> None:
        """Store an offloaded value under its content-addressed id."""
        self._db.execute("INSERT OR IGNORE INTO blobs VALUES(?,?,?)", (flow_id, blob_id, value))

    def get_blob(self, flow_id: str, blob_id: str) -> bytes | None:
        """An offloaded value, or ``None`` for an id this engine never issued."""
        row = self._db.execute(
            "SELECT value FROM blobs WHERE flow_id=? AND blob_id=?", (flow_id, blob_id)
        ).fetchone()
        return None if row is None else bytes(row[0])

    # Streams ---------------------------------------------------------------------------------

    @property
    def db(self) -> sqlite3.Connection:
        """The raw connection, for the stream store's own short transactions."""
        return self._db
