"""Pull mode: Workers open ``PollWorkerTask`` streams and the engine hands out tasks.

Each stream carries at most one task at a time. A task goes to the idle stream that has
been idle longest (a stream that just sent a final frame may still be finishing its
handler and would refuse with ``NO_CAPACITY``). A stream that half-closes or breaks
before it sent any frame for its task gives the task back unstarted; after a frame, the
attempt fails as a disconnect.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from dataclasses import dataclass, field

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from google.protobuf.timestamp_pb2 import Timestamp

from dex_agents.engine._dispatch import (
    WORKER_DISCONNECTED,
    AttemptFailure,
    Dispatcher,
    Task,
    TaskKind,
)

__all__ = ["PullRouter", "WorkerTaskServicer"]

_LOGGER = logging.getLogger(__name__)
_FIRST_COOLDOWN_SECONDS = 0.005
_StreamContext = grpc.aio.ServicerContext[pb.PollWorkerTaskRequest, pb.PollWorkerTaskResponse]
_MAX_COOLDOWN_SECONDS = 1.0


@dataclass(eq=False)
class _Stream:
    queue: str
    app_worker_id: str
    outbox: asyncio.Queue[pb.PollWorkerTaskResponse | None] = field(default_factory=asyncio.Queue)
    task: Task | None = None
    closed: bool = False
    cooldown: float = 0.0


@dataclass
class _Queue:
    idle: deque[_Stream] = field(default_factory=deque)
    pending: deque[Task] = field(default_factory=deque)


class PullRouter:
    """The pull transport: pending tasks per flow-type queue and the idle streams."""

    def __init__(self) -> None:
        self.dispatcher: Dispatcher | None = None
        self._queues: dict[str, _Queue] = {}
        self._streams: set[_Stream] = set()

    def _queue(self, name: str) -> _Queue:
        return self._queues.setdefault(name, _Queue())

    def workers(self, flow_type: str) -> set[str]:
        """App worker ids with an open stream for a flow type."""
        return {s.app_worker_id for s in self._streams if s.queue == flow_type and not s.closed}

    # Transport -------------------------------------------------------------------------------

    def send(self, task: Task) -> None:
        """Queue a task for its flow type and hand it out if a stream is idle."""
        self._queue(task.flow_type).pending.append(task)
        self._pump(task.flow_type)

    def cancel(self, task: Task) -> None:
        """Withdraw a pending task, or tell the Worker running it to cancel."""
        queue = self._queue(task.flow_type)
        if task in queue.pending:
            queue.pending.remove(task)
            return
        for stream in self._streams:
            if stream.task is task:
                stream.task = None
                stream.outbox.put_nowait(
                    pb.PollWorkerTaskResponse(
                        cancel_task=pb.PollWorkerTaskCancelTask(task_id=task.task_id)
                    )
                )
                return

    def close(self) -> None:
        """End every stream (engine shutdown)."""
        for stream in list(self._streams):
            stream.outbox.put_nowait(None)

    # Hand-out --------------------------------------------------------------------------------

    def _pump(self, queue_name: str) -> None:
        queue = self._queue(queue_name)
        assert self.dispatcher is not None
        while queue.pending and queue.idle:
            stream = queue.idle.popleft()
            if stream.closed or stream.task is not None:
                continue
            task = self._next_for(queue, stream)
            if task is None:
                queue.idle.appendleft(stream)
                return
            stream.task = task
            task.got_output = False
            frame = pb.PollWorkerTask(task_id=task.task_id)
            deadline = Timestamp()
            deadline.FromNanoseconds(int((time.time() + task.attempt_timeout) * 1e9))
            frame.deadline.CopyFrom(deadline)
            getattr(frame, task.kind.value).CopyFrom(task.request)
            stream.outbox.put_nowait(pb.PollWorkerTaskResponse(task=frame))
            self.dispatcher.on_delivered(task)

    @staticmethod
    def _next_for(queue: _Queue, stream: _Stream) -> Task | None:
        for task in queue.pending:
            if stream.app_worker_id not in task.rejected_by:
                queue.pending.remove(task)
                return task
        return None

    def _make_idle(self, stream: _Stream, delay: float = 0.0) -> None:
        if stream.closed:
            return
        if delay > 0:
            asyncio.get_running_loop().call_later(delay, self._make_idle, stream)
            return
        self._queue(stream.queue).idle.append(stream)
        self._pump(stream.queue)

    def _give_back(self, task: Task) -> None:
        """Put a task a Worker let go of back at the head of its queue and hand it out again."""
        assert self.dispatcher is not None
        self.dispatcher.on_returned(task)
        if self.dispatcher.active(task.task_id) is task:
            self._queue(task.flow_type).pending.appendleft(task)
            self._pump(task.flow_type)

    # Worker frames ---------------------------------------------------------------------------

    def on_frame(self, stream: _Stream, request: pb.PollWorkerTaskRequest) -> None:
        """Apply one frame a Worker sent on a registered stream."""
        assert self.dispatcher is not None
        kind = request.WhichOneof("frame")
        if kind == "task_frame":
            self._on_task_frame(stream, request.task_frame)
        elif kind == "reject":
            task = stream.task
            if task is None or task.task_id != request.reject.task_id:
                return
            stream.task = None
            reason = request.reject.reason
            if reason == pb.POLL_WORKER_TASK_REJECT_REASON_NO_CAPACITY:
                # The Worker is full, or still finishing its last handler: back off.
                stream.cooldown = min(
                    max(stream.cooldown * 2, _FIRST_COOLDOWN_SECONDS), _MAX_COOLDOWN_SECONDS
                )
                self._give_back(task)
                self._make_idle(stream, stream.cooldown)
                return
            task.rejected_by.add(stream.app_worker_id)
            self._make_idle(stream)
            if self.workers(task.flow_type) - task.rejected_by:
                self._give_back(task)
                return
            what = "RPC" if task.kind is TaskKind.RPC else "Step"
            self.dispatcher.on_returned(task)
            self.dispatcher.on_failure(
                task,
                AttemptFailure(
                    detail=f"no Worker of flow type {task.flow_type!r} knows this {what}",
                    error_type="UnknownName",
                    delivered=False,
                    grpc_status=12,
                    dispatch_error=pb.DISPATCH_TASK_ERROR_REASON_UNKNOWN_NAME,
                ),
            )

    def _on_task_frame(self, stream: _Stream, frame: pb.PollWorkerTaskFrame) -> None:
        assert self.dispatcher is not None
        task = stream.task
        if task is None or task.task_id != frame.task_id:
            return
        kind = frame.WhichOneof("output")
        if kind == "worker_error":
            self._finished(stream)
            self.dispatcher.on_failure(task, AttemptFailure.from_worker(frame.worker_error))
            return
        if kind == "rpc":
            self._finished(stream)
            self.dispatcher.on_result(task, frame.rpc)
            return
        output = frame.wait_for if kind == "wait_for" else frame.execute
        if output.WhichOneof("output") == "result":
            self._finished(stream)
            self.dispatcher.on_result(task, output.result)
        else:
            self.dispatcher.on_output(task, output)

    def _finished(self, stream: _Stream) -> None:
        """A stream sent its task's final frame: it joins the back of the idle line."""
        stream.task = None
        stream.cooldown = 0.0
        self._make_idle(stream)

    def open(self, queue: str, app_worker_id: str) -> _Stream:
        """Register a new stream and make it idle."""
        stream = _Stream(queue=queue, app_worker_id=app_worker_id)
        self._streams.add(stream)
        self._make_idle(stream)
        return stream

    def closed(self, stream: _Stream) -> None:
        """A stream ended: its task goes back if the Worker never answered, else fails."""
        assert self.dispatcher is not None
        stream.closed = True
        self._streams.discard(stream)
        task = stream.task
        stream.task = None
        if task is None:
            return
        if not task.got_output:
            self._give_back(task)
        else:
            self.dispatcher.on_failure(
                task,
                AttemptFailure(
                    detail="the Worker disconnected while it ran the task",
                    error_type=WORKER_DISCONNECTED,
                    delivered=True,
                    grpc_status=14,
                    dispatch_error=pb.DISPATCH_TASK_ERROR_REASON_WORKER_DISCONNECTED,
                ),
            )


class WorkerTaskServicer(dex_pb2_grpc.WorkerTaskServiceServicer):
    """``WorkerTaskService.PollWorkerTask``: one task stream of a pull Worker."""

    def __init__(self, router: PullRouter) -> None:
        self._router = router

    async def PollWorkerTask(self, request_iterator: object, context: _StreamContext) -> None:
        first: object = await context.read()
        if first is grpc.aio.EOF:
            return
        assert isinstance(first, pb.PollWorkerTaskRequest)
        if first.WhichOneof("frame") != "register":
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "the first frame of a stream must be register"
            )
        register = first.register
        if not register.queue or register.queue not in (
            register.app_worker_id,
            *register.flow_types,
        ):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"queue {register.queue!r} is neither the app worker id nor a flow type",
            )
        await context.write(
            pb.PollWorkerTaskResponse(
                registered=pb.PollWorkerTaskRegistered(supports_unknown_name_rejection=True)
            )
        )
        stream = self._router.open(register.queue, register.app_worker_id)
        reader = asyncio.create_task(self._read(stream, context))
        try:
            while True:
                frame = await stream.outbox.get()
                if frame is None:
                    break
                await context.write(frame)
        except (asyncio.CancelledError, grpc.RpcError, RuntimeError):
            pass
        finally:
            reader.cancel()
            if not stream.closed:
                self._router.closed(stream)

    async def _read(self, stream: _Stream, context: _StreamContext) -> None:
        try:
            while True:
                request: object = await context.read()
                if request is grpc.aio.EOF:
                    break
                assert isinstance(request, pb.PollWorkerTaskRequest)
                self._router.on_frame(stream, request)
        except (grpc.RpcError, RuntimeError, asyncio.CancelledError):
            pass
        except Exception:
            _LOGGER.exception("pull stream reader failed")
        finally:
            if not stream.closed:
                self._router.closed(stream)
            stream.outbox.put_nowait(None)
