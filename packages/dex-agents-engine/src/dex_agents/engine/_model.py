"""In-memory state of flow runs and Step executions, with their persisted JSON form.

A run's row holds run-level bookkeeping; each active Step execution has its own row, so a
transition rewrites only what it touched. Attributes, Channel messages, history and request
snapshots live in their own tables (see ``_store``).
"""

from __future__ import annotations

import base64
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from dex.dexpb import dex_pb2 as pb
from google.protobuf.message import Message

__all__ = [
    "ChannelEntry",
    "Execution",
    "Method",
    "MethodCall",
    "Phase",
    "Run",
    "TimerState",
]

M = TypeVar("M", bound=Message)


def _pack(message: Message | None) -> str | None:
    if message is None:
        return None
    return base64.b64encode(message.SerializeToString()).decode("ascii")


def _unpack(kind: type[M], text: str | None) -> M | None:
    if text is None:
        return None
    message = kind()
    message.ParseFromString(base64.b64decode(text))
    return message


def _unpack_required(kind: type[M], text: str) -> M:
    message = _unpack(kind, text)
    assert message is not None
    return message


class Method(StrEnum):
    """The two worker methods of a Step."""

    WAIT_FOR = "wait_for"
    EXECUTE = "execute"


class Phase(StrEnum):
    """Where a Step execution is in its lifecycle."""

    LOCKING = "locking"
    """Waiting for the method's attribute locks."""
    RUNNING = "running"
    """A method call is pending, running on a Worker, or waiting to retry."""
    WAITING = "waiting"
    """``wait_for`` returned; waiting for its conditions."""


@dataclass
class TimerState:
    """One timer condition of a waiting Step."""

    condition_id: str
    firing: int
    status: int = pb.INTERNAL_TIMER_STATUS_PENDING

    @property
    def done(self) -> bool:
        """Whether the timer fired or was skipped."""
        return self.status in (pb.INTERNAL_TIMER_STATUS_FIRED, pb.INTERNAL_TIMER_STATUS_SKIPPED)


@dataclass
class MethodCall:
    """One call of ``wait_for`` or ``execute`` with all its attempts."""

    method: Method
    first_attempt_ts: int
    attempt: int = 1
    delivered_attempts: int = 0
    """Attempts that reached a Worker; zero at a final failure means the handler never ran."""
    in_flight: bool = False
    """The current attempt was handed to a Worker and has not finished."""
    retry_at: float | None = None
    checkpoint: pb.Value | None = None
    last_failure: pb.StepMethodFailure | None = None
    started_time: float = 0.0
    task_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method.value,
            "first": self.first_attempt_ts,
            "attempt": self.attempt,
            "delivered": self.delivered_attempts,
            "in_flight": self.in_flight,
            "retry_at": self.retry_at,
            "checkpoint": _pack(self.checkpoint),
            "failure": _pack(self.last_failure),
            "started": self.started_time,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MethodCall:
        return cls(
            method=Method(data["method"]),
            first_attempt_ts=data["first"],
            attempt=data["attempt"],
            delivered_attempts=data["delivered"],
            in_flight=data["in_flight"],
            retry_at=data["retry_at"],
            checkpoint=_unpack(pb.Value, data["checkpoint"]),
            last_failure=_unpack(pb.StepMethodFailure, data["failure"]),
            started_time=data["started"],
        )


@dataclass
class Execution:
    """An active Step execution ``<step_type>-<n>``."""

    exec_id: str
    step_type: str
    seq: int
    movement: pb.StepMovement
    phase: Phase = Phase.RUNNING
    method: Method = Method.EXECUTE
    waiting: pb.WaitingCondition | None = None
    timers: list[TimerState] = field(default_factory=list)
    locals: list[pb.KV] = field(default_factory=list)
    condition_results: pb.ConditionResults | None = None
    recovery: pb.RecoveryErrorInfo | None = None
    call: MethodCall | None = None
    system: bool = False
    held_locks: tuple[str, ...] = ()

    @property
    def options(self) -> pb.StepOptions:
        """The options of this execution's movement."""
        return self.movement.step_options

    @property
    def from_id(self) -> str:
        """The execution (or ``__start__`` / ``__rpc/<name>``) that scheduled this one."""
        return self.movement.from_step_execution_id_internal_only

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.exec_id,
            "type": self.step_type,
            "seq": self.seq,
            "movement": _pack(self.movement),
            "phase": self.phase.value,
            "method": self.method.value,
            "waiting": _pack(self.waiting),
            "timers": [[t.condition_id, t.firing, t.status] for t in self.timers],
            "locals": [_pack(kv) for kv in self.locals],
            "results": _pack(self.condition_results),
            "recovery": _pack(self.recovery),
            "call": self.call.to_json() if self.call else None,
            "system": self.system,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Execution:
        return cls(
            exec_id=data["id"],
            step_type=data["type"],
            seq=data["seq"],
            movement=_unpack_required(pb.StepMovement, data["movement"]),
            phase=Phase(data["phase"]),
            method=Method(data["method"]),
            waiting=_unpack(pb.WaitingCondition, data["waiting"]),
            timers=[TimerState(c, f, s) for c, f, s in data["timers"]],
            locals=[_unpack_required(pb.KV, kv) for kv in data["locals"]],
            condition_results=_unpack(pb.ConditionResults, data["results"]),
            recovery=_unpack(pb.RecoveryErrorInfo, data["recovery"]),
            call=MethodCall.from_json(data["call"]) if data["call"] else None,
            system=data["system"],
        )


@dataclass
class ChannelEntry:
    """A pending Channel message; ``seq`` orders messages across the run."""

    seq: int
    message_id: str
    value: pb.Value


@dataclass(eq=False)
class Run:
    """One run of a flow: identity, configuration, and live state."""

    flow_id: str
    run_id: str
    flow_type: str
    request_id: str
    start_time: float
    config: pb.FlowConfig
    start: pb.StartFlowRequest
    seq: int = 0
    first_run_id: str = ""
    status: int = pb.FLOW_STATUS_RUNNING
    close_time: float | None = None
    error_type: int = pb.FLOW_ERROR_TYPE_UNSPECIFIED
    error_message: str = ""
    run_attempt: int = 1
    counters: dict[str, int] = field(default_factory=dict)
    outputs: list[pb.StepCompletionOutput] = field(default_factory=list)
    graceful: bool = False
    app_search: dict[str, list[Any]] = field(default_factory=dict)
    """Application index values: key -> [IndexType, JSON-able value]."""
    next_event_id: int = 1
    next_exec_seq: int = 1
    next_channel_seq: int = 1
    pending_skips: list[list[Any]] = field(default_factory=list)
    not_before: float = 0.0
    # Live state, persisted in their own tables or rebuilt on load.
    attributes: dict[str, pb.Value] = field(default_factory=dict)
    channels: dict[str, deque[ChannelEntry]] = field(default_factory=dict)
    executions: dict[str, Execution] = field(default_factory=dict)
    locks: dict[str, str] = field(default_factory=dict)

    @property
    def is_open(self) -> bool:
        """Whether the run is still running."""
        return self.status == pb.FLOW_STATUS_RUNNING

    def to_json(self) -> dict[str, Any]:
        return {
            "flow_id": self.flow_id,
            "run_id": self.run_id,
            "first_run_id": self.first_run_id,
            "flow_type": self.flow_type,
            "request_id": self.request_id,
            "start_time": self.start_time,
            "close_time": self.close_time,
            "status": self.status,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "run_attempt": self.run_attempt,
            "config": _pack(self.config),
            "start": _pack(self.start),
            "counters": self.counters,
            "outputs": [_pack(o) for o in self.outputs],
            "graceful": self.graceful,
            "app_search": self.app_search,
            "next_event_id": self.next_event_id,
            "next_exec_seq": self.next_exec_seq,
            "next_channel_seq": self.next_channel_seq,
            "pending_skips": self.pending_skips,
            "not_before": self.not_before,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], seq: int) -> Run:
        return cls(
            flow_id=data["flow_id"],
            run_id=data["run_id"],
            seq=seq,
            first_run_id=data["first_run_id"],
            flow_type=data["flow_type"],
            request_id=data["request_id"],
            start_time=data["start_time"],
            close_time=data["close_time"],
            status=data["status"],
            error_type=data["error_type"],
            error_message=data["error_message"],
            run_attempt=data["run_attempt"],
            config=_unpack_required(pb.FlowConfig, data["config"]),
            start=_unpack_required(pb.StartFlowRequest, data["start"]),
            counters=data["counters"],
            outputs=[_unpack_required(pb.StepCompletionOutput, o) for o in data["outputs"]],
            graceful=data["graceful"],
            app_search=data["app_search"],
            next_event_id=data["next_event_id"],
            next_exec_seq=data["next_exec_seq"],
            next_channel_seq=data["next_channel_seq"],
            pending_skips=data["pending_skips"],
            not_before=data["not_before"],
        )
