"""Push mode: the engine calls a Worker's ``WorkerService`` at the flow's target address.

A call that fails before the Worker sent anything, because the Worker is unreachable or
busy (``UNAVAILABLE``, ``RESOURCE_EXHAUSTED``), gives the attempt back unstarted and is
tried again shortly; the schedule-to-start timeout bounds how long.
"""

from __future__ import annotations

import asyncio
import logging

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from grpc_status import rpc_status

from dex_agents.engine._dispatch import (
    WORKER_DISCONNECTED,
    AttemptFailure,
    Dispatcher,
    Task,
    TaskKind,
)

__all__ = ["PushClient"]

_LOGGER = logging.getLogger(__name__)
_RETRY_UNSTARTED_SECONDS = 0.25
_UNSTARTED_CODES = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)


def worker_error_of(error: grpc.aio.AioRpcError) -> pb.WorkerErrorResponse | None:
    """The ``WorkerErrorResponse`` in a failed call's rich status, if any."""
    try:
        status = rpc_status.from_call(error)  # type: ignore[arg-type]
    except ValueError:
        return None
    if status is None:
        return None
    for detail in status.details:
        response = pb.WorkerErrorResponse()
        if detail.Unpack(response):
            return response
    return None


class PushClient:
    """The push transport: one gRPC call per attempt."""

    def __init__(self) -> None:
        self.dispatcher: Dispatcher | None = None
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._calls: dict[str, asyncio.Task[None]] = {}

    def _stub(self, address: str) -> dex_pb2_grpc.WorkerServiceStub:
        channel = self._channels.get(address)
        if channel is None:
            channel = grpc.aio.insecure_channel(
                address, options=[("grpc.max_receive_message_length", 16 * 1024 * 1024)]
            )
            self._channels[address] = channel
        return dex_pb2_grpc.WorkerServiceStub(channel)  # type: ignore[no-untyped-call]

    def send(self, task: Task) -> None:
        """Start the call in the background."""
        self._calls[task.task_id] = asyncio.get_running_loop().create_task(self._call(task))

    def cancel(self, task: Task) -> None:
        """Cancel the call; the Worker sees its context cancelled."""
        call = self._calls.pop(task.task_id, None)
        if call is not None and call is not asyncio.current_task():
            call.cancel()

    async def close(self) -> None:
        """Cancel every call and close the channels."""
        for call in list(self._calls.values()):
            call.cancel()
        for channel in self._channels.values():
            await channel.close(grace=None)

    async def _call(self, task: Task) -> None:
        dispatcher = self.dispatcher
        assert dispatcher is not None
        stub = self._stub(task.target.address)
        dispatcher.on_delivered(task)
        try:
            if task.kind is TaskKind.RPC:
                response = await stub.InvokeWorkerRPC(task.request, timeout=task.attempt_timeout)
                task.got_output = True
                self._calls.pop(task.task_id, None)
                dispatcher.on_result(task, response)
                return
            method = (
                stub.InvokeWaitForMethod
                if task.kind is TaskKind.WAIT_FOR
                else stub.InvokeExecuteMethod
            )
            async for output in method(task.request, timeout=task.attempt_timeout):
                task.got_output = True
                if output.WhichOneof("output") == "result":
                    self._calls.pop(task.task_id, None)
                    dispatcher.on_result(task, output.result)
                    return
                dispatcher.on_output(task, output)
            self._calls.pop(task.task_id, None)
            dispatcher.on_failure(
                task,
                AttemptFailure(
                    detail="the Worker ended the call without a result",
                    error_type=WORKER_DISCONNECTED,
                    delivered=True,
                    grpc_status=14,
                ),
            )
        except asyncio.CancelledError:
            return
        except grpc.aio.AioRpcError as error:
            self._calls.pop(task.task_id, None)
            self._failed(task, error)

    def _failed(self, task: Task, error: grpc.aio.AioRpcError) -> None:
        dispatcher = self.dispatcher
        assert dispatcher is not None
        if error.code() in _UNSTARTED_CODES and not task.got_output:
            dispatcher.on_returned(task)
            if dispatcher.active(task.task_id) is task:
                asyncio.get_running_loop().call_later(_RETRY_UNSTARTED_SECONDS, self._resend, task)
            return
        worker_error = worker_error_of(error)
        if worker_error is not None:
            failure = AttemptFailure.from_worker(worker_error)
        else:
            failure = AttemptFailure(
                detail=error.details() or error.code().name,
                error_type=f"grpc.{error.code().name}",
                delivered=True,
                grpc_status=error.code().value[0],
            )
        dispatcher.on_failure(task, failure)

    def _resend(self, task: Task) -> None:
        assert self.dispatcher is not None
        if self.dispatcher.active(task.task_id) is task:
            self.send(task)
