"""``InvokeRPC``: run an RPC handler on a Worker and apply its effects atomically.

A query-style RPC reads a snapshot and applies effects only if it returned any; it may
read a closed run. A transactional RPC (``is_transactional`` or any lock key) needs a
running run, takes its locks without waiting (a held key fails at once with ``ABORTED``),
and applies all effects or none.
"""

from __future__ import annotations

import asyncio

import grpc
from dex.dexpb import dex_pb2 as pb
from google.protobuf.message import Message

from dex_agents.engine._dispatch import AttemptFailure, Task, TaskKind
from dex_agents.engine._engine import Engine
from dex_agents.engine._errors import ServiceError, bad_request, flow_not_found
from dex_agents.engine._model import Run
from dex_agents.engine._state import (
    apply_attribute_writes,
    apply_deletions,
    apply_publications,
    fill_state,
    missing_deletions,
)

__all__ = ["invoke_rpc"]


class _Outcome:
    """A task listener that resolves one future with the RPC's result or failure."""

    def __init__(self) -> None:
        self.future: asyncio.Future[Message | AttemptFailure] = (
            asyncio.get_running_loop().create_future()
        )

    def delivered(self, task: Task) -> None:
        """An RPC attempt has no durable bookkeeping."""

    def returned(self, task: Task) -> None:
        """The task is pending again; nothing to record."""

    def progress(self, task: Task, output: Message) -> None:
        """RPC handlers send no progress frames."""

    def finished(self, task: Task, result: Message) -> None:
        if not self.future.done():
            self.future.set_result(result)

    def failed(self, task: Task, failure: AttemptFailure) -> None:
        if not self.future.done():
            self.future.set_result(failure)


def _worker_error(failure: AttemptFailure) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.FAILED_PRECONDITION,
        failure.detail or "the RPC handler failed",
        pb.ERROR_SUB_STATUS_WORKER_API_ERROR,
        pb.ServiceErrorResponse(
            original_worker_error_detail=failure.detail,
            original_worker_error_type=failure.error_type,
            original_worker_error_status=failure.grpc_status,
            original_worker_error_stack_trace=failure.stack_trace,
            dispatch_task_error_reason=failure.dispatch_error,  # type: ignore[arg-type]
        ),
    )


def _has_effects(response: pb.InvokeWorkerRPCResponse) -> bool:
    decision = response.step_decision
    return bool(
        response.upsert_attributes
        or response.publish_to_channel
        or response.delete_from_channel
        or response.record_events
        or decision.next_steps
        or decision.cancel_step_types
    )


def _resolve(engine: Engine, request: pb.InvokeRPCRequest) -> Run:
    if request.run_id:
        run = engine.runs.get(request.run_id)
        if run is None or run.flow_id != request.flow_id:
            raise flow_not_found(request.flow_id)
        return run
    return engine.run_of(request.flow_id, active=False)


def _validate(request: pb.InvokeRPCRequest, max_value_bytes: int) -> None:
    if not request.flow_id or not request.rpc_name or not request.request_id:
        raise bad_request("flow_id, rpc_name and request_id must not be empty")
    if request.timeout_seconds < 0:
        raise bad_request("timeout_seconds must not be negative")
    kind = request.input.WhichOneof("kind")
    if kind is None or kind.startswith("internal_blob_id"):
        raise bad_request("the RPC input must be a concrete value")
    if request.input.ByteSize() > max_value_bytes:
        raise bad_request(f"the RPC input is larger than {max_value_bytes} bytes")
    selectors = (
        *request.lock_attribute_keys,
        *request.load_attribute_map_instances,
        *request.load_channel_names,
        *request.load_channel_map_instances,
    )
    if any(not name for name in selectors):
        raise bad_request("lock keys and load selectors must not be empty")


async def invoke_rpc(engine: Engine, request: pb.InvokeRPCRequest) -> pb.InvokeRPCResponse:
    """Serve one ``InvokeRPC`` call."""
    _validate(request, engine.config.max_value_bytes)
    run = _resolve(engine, request)
    transactional = request.is_transactional or bool(request.lock_attribute_keys)
    if transactional and not run.is_open:
        raise flow_not_found(request.flow_id, closed=True)
    holder = f"rpc:{request.request_id}"
    keys = tuple(dict.fromkeys(request.lock_attribute_keys))
    if keys:
        if any(key in run.locks for key in keys):
            raise ServiceError(
                grpc.StatusCode.ABORTED,
                "one or more attribute keys are locked",
                pb.ERROR_SUB_STATUS_WORKER_API_ERROR,
            )
        for key in keys:
            run.locks[key] = holder
    try:
        response = await _call_worker(engine, run, request)
        if _has_effects(response):
            _apply(engine, run, request, response, transactional=transactional)
        output = response.output if response.HasField("output") else pb.Value(null_value=0)  # type: ignore[arg-type]
        return pb.InvokeRPCResponse(output=engine.blobs.offload(run.flow_id, output))
    finally:
        if keys:
            for key in keys:
                if run.locks.get(key) == holder:
                    del run.locks[key]
            if run.is_open:
                with engine.transition(run) as changes:
                    engine.wake_lock_waiters(run, changes)


async def _call_worker(
    engine: Engine, run: Run, request: pb.InvokeRPCRequest
) -> pb.InvokeWorkerRPCResponse:
    worker_request = pb.InvokeWorkerRPCRequest(
        flow_type=run.flow_type, rpc_name=request.rpc_name, input=request.input
    )
    worker_request.context.flow_id = run.flow_id
    worker_request.context.run_id = run.run_id
    worker_request.context.flow_started_timestamp = int(run.start_time)
    worker_request.context.run_attempt = run.run_attempt
    fill_state(
        run,
        worker_request,
        request.load_attribute_map_instances,
        request.load_channel_names,
        request.load_channel_map_instances,
        engine.blobs,
    )
    limit = engine.config.max_rpc_seconds
    timeout = min(float(request.timeout_seconds), limit) if request.timeout_seconds else limit
    outcome = _Outcome()
    task = Task(
        kind=TaskKind.RPC,
        flow_type=run.flow_type,
        target=engine.target(run),
        request=worker_request,
        listener=outcome,
        attempt_timeout=timeout,
        schedule_to_start=timeout,
    )
    engine.dispatcher.submit(task)
    try:
        result = await outcome.future
    except asyncio.CancelledError:
        engine.dispatcher.cancel(task.task_id)
        raise
    if isinstance(result, AttemptFailure):
        raise _worker_error(result)
    assert isinstance(result, pb.InvokeWorkerRPCResponse)
    return result


def _apply(
    engine: Engine,
    run: Run,
    request: pb.InvokeRPCRequest,
    response: pb.InvokeWorkerRPCResponse,
    *,
    transactional: bool,
) -> None:
    current = engine.latest.get(run.flow_id)
    if not run.is_open or current is not run:
        raise flow_not_found(request.flow_id, closed=True)
    decision = response.step_decision
    if decision.HasField("close_decision") or decision.cancel_sibling_step_types:
        raise _worker_error(
            AttemptFailure(
                detail="an RPC may not close the flow or cancel sibling Steps",
                error_type="InvalidRpcResult",
                delivered=True,
            )
        )
    if transactional:
        missing = missing_deletions(run, response.delete_from_channel)
        if missing:
            raise ServiceError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"Channel message {missing[0]} is no longer pending",
                pb.ERROR_SUB_STATUS_CHANNEL_MESSAGE_NOT_FOUND,
            )
    with engine.transition(run) as changes:
        apply_attribute_writes(run, response.upsert_attributes, changes, engine.indexes)
        apply_publications(run, response.publish_to_channel, changes)
        apply_deletions(run, response.delete_from_channel, changes)
        event = pb.FlowHistoryEvent()
        completed = event.rpc_execution_completed
        completed.rpc_name = request.rpc_name
        completed.step_decision.CopyFrom(decision)
        completed.upsert_attributes.extend(response.upsert_attributes)
        completed.record_events.extend(response.record_events)
        engine.record_event(run, changes, event)
        cancel_types = set(decision.cancel_step_types)
        for execution in list(run.executions.values()):
            if not execution.system and execution.step_type in cancel_types:
                engine.cancel_execution(run, execution, changes)
        engine.enqueue(run, decision.next_steps, f"__rpc/{request.rpc_name}", changes)
        engine.evaluate_waits(run, changes)
        engine.check_graceful_completion(run, changes)
