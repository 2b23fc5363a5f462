"""Handing method calls and RPCs to Workers, one attempt at a time.

The :class:`Dispatcher` owns every attempt between "committed" and "answered": it picks the
transport (pull streams or push calls), enforces the schedule-to-start, attempt and heartbeat
timeouts, and reports back to a :class:`TaskListener`. It never touches flow state.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from dex.dexpb import dex_pb2 as pb
from google.protobuf.message import Message

__all__ = [
    "AttemptFailure",
    "Dispatcher",
    "Task",
    "TaskKind",
    "TaskListener",
    "Transport",
]

WORKER_DISCONNECTED = "WorkerDisconnected"
"""``error_type`` of an attempt whose Worker went away after it started the task."""


class TaskKind(StrEnum):
    """What a task asks a Worker to run."""

    WAIT_FOR = "wait_for"
    EXECUTE = "execute"
    RPC = "rpc"


@dataclass(frozen=True)
class AttemptFailure:
    """Why an attempt ended without a result.

    Attributes:
        detail: The Worker's error detail, or the engine's reason.
        error_type: The exception type, or a timeout or transport kind.
        delivered: Whether a Worker may have run the handler in this attempt.
        stack_trace: The Worker's formatted traceback, when it sent one.
        grpc_status: The gRPC code of the failure (2 for handler errors).
        retry_after_seconds: The delay the handler asked for with ``retry_after``.
        dispatch_error: A ``DispatchTaskErrorReason`` when no Worker served the task.
    """

    detail: str
    error_type: str
    delivered: bool
    stack_trace: str = ""
    grpc_status: int = 2
    retry_after_seconds: int = 0
    dispatch_error: int = pb.DISPATCH_TASK_ERROR_REASON_UNSPECIFIED

    @classmethod
    def from_worker(cls, error: pb.WorkerErrorResponse) -> AttemptFailure:
        """Wrap a ``WorkerErrorResponse`` of a handler that ran."""
        return cls(
            detail=error.detail,
            error_type=error.error_type,
            delivered=True,
            stack_trace=error.stack_trace,
            grpc_status=error.grpc_status or 2,
            retry_after_seconds=error.retry_after_seconds,
        )


class TaskListener(Protocol):
    """Receives what happened to one task; every call is on the event loop."""

    def delivered(self, task: Task) -> None:
        """The attempt was handed to a Worker."""

    def returned(self, task: Task) -> None:
        """A delivered attempt came back unstarted and is pending again."""

    def progress(self, task: Task, output: Message) -> None:
        """A heartbeat or stream-write frame arrived."""

    def finished(self, task: Task, result: Message) -> None:
        """The final result arrived (``InvokeWaitForMethodResponse`` and the like)."""

    def failed(self, task: Task, failure: AttemptFailure) -> None:
        """The attempt failed."""


@dataclass(eq=False)
class Task:
    """One attempt of a method call or one RPC, addressed to a flow's Workers.

    Attributes:
        kind: Which request ``request`` is.
        flow_type: The flow type, which is the pull queue.
        target: The flow's Worker target (pull mode or a push address).
        request: ``InvokeWaitForMethodRequest``, ``InvokeExecuteMethodRequest`` or
            ``InvokeWorkerRPCRequest``.
        listener: Receives the outcome.
        attempt_timeout: Seconds from delivery until the attempt times out.
        heartbeat_timeout: Seconds without a frame before the attempt times out.
        schedule_to_start: Seconds the task may wait for a Worker before it fails unstarted.
    """

    kind: TaskKind
    flow_type: str
    target: pb.WorkerTarget
    request: Message
    listener: TaskListener
    attempt_timeout: float
    heartbeat_timeout: float | None = None
    schedule_to_start: float | None = None
    task_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    submitted_at: float = 0.0
    """Loop time the attempt was submitted; the dispatch wait counts from here."""
    got_output: bool = False
    rejected_by: set[str] = field(default_factory=set)
    timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    """Timeout handles the dispatcher arms for this attempt."""


class Transport(Protocol):
    """The last hop to a Worker: pull streams or push calls."""

    def send(self, task: Task) -> None:
        """Queue or start the task."""

    def cancel(self, task: Task) -> None:
        """Withdraw a pending task or cancel a running one; no callbacks follow."""


class Dispatcher:
    """Routes tasks to a transport and enforces their timeouts."""

    def __init__(self, pull: Transport, push: Transport) -> None:
        self._pull = pull
        self._push = push
        self._tasks: dict[str, Task] = {}

    def _transport(self, task: Task) -> Transport:
        if task.target.is_pull_mode or not task.target.address:
            return self._pull
        return self._push

    def submit(self, task: Task) -> None:
        """Start a task's attempt (call only after the state that caused it committed)."""
        self._tasks[task.task_id] = task
        task.submitted_at = asyncio.get_running_loop().time()
        self._arm_schedule_to_start(task)
        self._transport(task).send(task)

    def cancel(self, task_id: str) -> None:
        """Stop a task; its listener hears nothing more."""
        task = self._tasks.pop(task_id, None)
        if task is not None:
            self._disarm(task)
            self._transport(task).cancel(task)

    def active(self, task_id: str) -> Task | None:
        """The live task with this id."""
        return self._tasks.get(task_id)

    def close(self) -> None:
        """Cancel every task (engine shutdown)."""
        for task_id in list(self._tasks):
            self.cancel(task_id)

    # Timers ----------------------------------------------------------------------------------

    def _arm(self, task: Task, name: str, delay: float, action: Callable[[Task], None]) -> None:
        old = task.timers.pop(name, None)
        if old is not None:
            old.cancel()
        task.timers[name] = asyncio.get_running_loop().call_later(delay, action, task)

    def _disarm(self, task: Task, *names: str) -> None:
        for name in names or list(task.timers):
            handle = task.timers.pop(name, None)
            if handle is not None:
                handle.cancel()

    def _arm_schedule_to_start(self, task: Task) -> None:
        # A task handed back (refused, or dropped by a closing stream) keeps its original
        # deadline: being refused again and again must not keep it waiting forever.
        if task.schedule_to_start is not None:
            waited = asyncio.get_running_loop().time() - task.submitted_at
            remaining = max(0.0, task.schedule_to_start - waited)
            self._arm(task, "start", remaining, self._schedule_to_start_expired)

    def _schedule_to_start_expired(self, task: Task) -> None:
        self._fail(
            task,
            AttemptFailure(
                detail=(f"no Worker took the task within {task.schedule_to_start:g} seconds"),
                error_type="ScheduleToStart",
                delivered=False,
                grpc_status=14,
                dispatch_error=pb.DISPATCH_TASK_ERROR_REASON_NO_WORKER_AVAILABLE,
            ),
            withdraw=True,
        )

    def _attempt_timed_out(self, task: Task) -> None:
        self._fail(
            task,
            AttemptFailure(
                detail=f"activity StartToClose timeout after {task.attempt_timeout:g} seconds",
                error_type="StartToClose",
                delivered=True,
                grpc_status=4,
            ),
            withdraw=True,
        )

    def _heartbeat_timed_out(self, task: Task) -> None:
        self._fail(
            task,
            AttemptFailure(
                detail=f"activity Heartbeat timeout after {task.heartbeat_timeout:g} seconds",
                error_type="Heartbeat",
                delivered=True,
                grpc_status=4,
            ),
            withdraw=True,
        )

    def _fail(self, task: Task, failure: AttemptFailure, *, withdraw: bool) -> None:
        if self._tasks.pop(task.task_id, None) is None:
            return
        self._disarm(task)
        if withdraw:
            self._transport(task).cancel(task)
        task.listener.failed(task, failure)

    # Transport callbacks -----------------------------------------------------------------------

    def on_delivered(self, task: Task) -> None:
        """A transport handed the task to a Worker."""
        if task.task_id not in self._tasks:
            return
        self._disarm(task, "start")
        self._arm(task, "attempt", task.attempt_timeout, self._attempt_timed_out)
        if task.heartbeat_timeout is not None:
            self._arm(task, "heartbeat", task.heartbeat_timeout, self._heartbeat_timed_out)
        task.listener.delivered(task)

    def on_returned(self, task: Task) -> None:
        """The Worker let go of the task before any output; it is pending again."""
        if task.task_id not in self._tasks:
            return
        self._disarm(task, "attempt", "heartbeat")
        task.listener.returned(task)
        self._arm_schedule_to_start(task)

    def on_output(self, task: Task, output: Message) -> None:
        """A heartbeat or stream write arrived: the attempt is alive."""
        if task.task_id not in self._tasks:
            return
        task.got_output = True
        if task.heartbeat_timeout is not None:
            self._arm(task, "heartbeat", task.heartbeat_timeout, self._heartbeat_timed_out)
        task.listener.progress(task, output)

    def on_result(self, task: Task, result: Message) -> None:
        """The final result arrived."""
        if self._tasks.pop(task.task_id, None) is None:
            return
        self._disarm(task)
        task.listener.finished(task, result)

    def on_failure(self, task: Task, failure: AttemptFailure) -> None:
        """The attempt failed on the Worker or in transit."""
        self._fail(task, failure, withdraw=False)
