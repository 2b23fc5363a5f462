"""Settings of a local engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dex.dexpb import dex_pb2 as pb

from dex_agents.engine._store import Durability

__all__ = ["EngineConfig", "parse_worker_target"]


def parse_worker_target(text: str) -> pb.WorkerTarget:
    """``"pull"`` for pull Workers, or a push Worker's ``host:port``."""
    if text == "pull":
        return pb.WorkerTarget(is_pull_mode=True)
    if ":" not in text:
        raise ValueError(f"worker target must be 'pull' or host:port, not {text!r}")
    return pb.WorkerTarget(address=text)


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    """How a local engine stores state and times Worker calls.

    Attributes:
        data_dir: Folder of the SQLite database (created if missing).
        durability: ``fsync`` survives power loss; ``process-crash-safe`` survives
            ``kill -9`` of the engine and is faster.
        default_worker_target: Where flows without a Worker target send tasks:
            ``"pull"`` or a push Worker's ``host:port``.
        max_long_poll_seconds: Longest wait of one long poll (``WaitForFlow``, ``ReadStream``,
            ``WaitForStepCompletion``, ``WaitForAttribute``) before ``LONG_POLL_TIME_OUT``.
        max_rpc_seconds: Longest time an RPC handler may run.
        default_method_timeout_seconds: Attempt timeout of a Step method without one.
        default_heartbeat_timeout_seconds: Heartbeat timeout of a Step method without one;
            0 turns heartbeat enforcement off for such methods.
        min_heartbeat_timeout_seconds: Explicit heartbeat timeouts below this are raised to it.
        schedule_to_start_seconds: How long an attempt may wait for a Worker before it fails
            unstarted (the dispatch wait).
        blob_threshold_bytes: Values larger than this reach Workers as blob references.
        max_value_bytes: Largest value a client may send.
    """

    data_dir: Path
    durability: Durability = Durability.FSYNC
    default_worker_target: str = "pull"
    max_long_poll_seconds: float = 60.0
    max_rpc_seconds: float = 60.0
    default_method_timeout_seconds: int = 7200
    default_heartbeat_timeout_seconds: int = 60
    min_heartbeat_timeout_seconds: int = 10
    schedule_to_start_seconds: float = 10.0
    blob_threshold_bytes: int = 256 * 1024
    max_value_bytes: int = 8 * 1024 * 1024

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", Path(self.data_dir))
        parse_worker_target(self.default_worker_target)
        if self.max_long_poll_seconds <= 0 or self.max_rpc_seconds <= 0:
            raise ValueError("long poll and RPC limits must be positive")
        if self.schedule_to_start_seconds <= 0:
            raise ValueError("the dispatch wait must be positive")
        if self.blob_threshold_bytes <= 0 or self.max_value_bytes <= 0:
            raise ValueError("size limits must be positive")
