"""``FlowService``: the client- and Worker-facing RPCs, thin over :class:`Engine`.

Every handler turns a :class:`ServiceError` into the rich gRPC status the SDK decodes;
anything else becomes ``INTERNAL`` and the engine keeps serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeAlias, TypeVar

import grpc
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from google.protobuf import empty_pb2
from google.protobuf.message import Message

from dex_agents.engine._engine import Engine
from dex_agents.engine._errors import (
    ServiceError,
    bad_request,
    flow_not_found,
    long_poll_timeout,
    request_timeout,
)
from dex_agents.engine._model import Execution, Phase, Run
from dex_agents.engine._rpc import invoke_rpc
from dex_agents.engine._search import parse_query
from dex_agents.engine._state import search_attributes, search_value_to_wire

__all__ = ["FlowServicer"]

_LOGGER = logging.getLogger(__name__)
_DEFAULT_PAGE_SIZE = 1000
T = TypeVar("T")
Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)
Ctx: TypeAlias = grpc.aio.ServicerContext[Message, Message]


def _server_version() -> str:
    try:
        return f"dex-agents-engine {version('dex-agents-engine')}"
    except PackageNotFoundError:
        return "dex-agents-engine"


def _guarded(
    handler: Callable[[FlowServicer, Req, Ctx], Awaitable[Resp]],
) -> Callable[[FlowServicer, Req, Ctx], Awaitable[Resp]]:
    """Answer a ServiceError with its rich status, anything else with ``INTERNAL``."""

    @functools.wraps(handler)
    async def wrapper(self: FlowServicer, request: Req, context: Ctx) -> Resp:
        try:
            return await handler(self, request, context)
        except ServiceError as error:
            failure = error
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as error:
            _LOGGER.exception("%s failed", handler.__name__)
            failure = ServiceError(grpc.StatusCode.INTERNAL, f"internal engine error: {error}")
        await context.abort_with_status(failure.to_status())
        raise AssertionError("abort_with_status returned")

    return wrapper


def _unimplemented(name: str) -> Callable[[FlowServicer, Message, Ctx], Awaitable[Message]]:
    async def handler(_self: FlowServicer, _request: Message, _context: Ctx) -> Message:
        raise ServiceError(
            grpc.StatusCode.UNIMPLEMENTED, f"{name} is not supported by dex-agents-engine"
        )

    handler.__name__ = name
    return _guarded(handler)


def _flow_result(engine: Engine, run: Run) -> pb.FlowResult:
    result = pb.FlowResult(
        flow_status=run.status,  # type: ignore[arg-type]
        error_type=run.error_type,  # type: ignore[arg-type]
        error_message=run.error_message,
    )
    for output in run.outputs:
        entry = result.results.add()
        entry.CopyFrom(output)
        entry.completed_step_output.CopyFrom(
            engine.blobs.offload(run.flow_id, output.completed_step_output)
        )
    return result


async def _wait(
    engine: Engine,
    flow_id: str,
    check: Callable[[], T | None],
    budget: float,
    timeout_error: Callable[[], ServiceError],
) -> T:
    deadline = time.monotonic() + budget
    while True:
        result = check()
        if result is not None:
            return result
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise timeout_error()
        event = engine.changed(flow_id)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), remaining)


def _budget(
    engine: Engine, request_seconds: int, what: str
) -> tuple[float, Callable[[], ServiceError]]:
    limit = engine.config.max_long_poll_seconds
    if 0 < request_seconds <= limit:
        return float(request_seconds), lambda: request_timeout(what)
    return limit, lambda: long_poll_timeout(what)


def _matches(stored: pb.Value, operator: int, operand: pb.Value) -> bool:
    kind = stored.WhichOneof("kind")
    if kind in ("internal_blob_id_for_string_value", "internal_blob_id_for_obj_value"):
        raise ServiceError(grpc.StatusCode.FAILED_PRECONDITION, "the Attribute value is a blob")
    numeric = ("int_value", "double_value")
    left: Any = getattr(stored, kind) if kind else None
    right: Any = getattr(operand, operand.WhichOneof("kind") or "null_value")
    same = kind == operand.WhichOneof("kind") or (
        kind in numeric and operand.WhichOneof("kind") in numeric
    )
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_EQUAL:
        return same and left == right
    if operator == pb.ATTRIBUTE_MATCH_OPERATOR_NOT_EQUAL:
        return not (same and left == right)
    if kind not in numeric or operand.WhichOneof("kind") not in numeric:
        return False
    ordered: dict[int, bool] = {
        pb.ATTRIBUTE_MATCH_OPERATOR_GREATER_THAN: left > right,
        pb.ATTRIBUTE_MATCH_OPERATOR_GREATER_THAN_OR_EQUAL: left >= right,
        pb.ATTRIBUTE_MATCH_OPERATOR_LESS_THAN: left < right,
        pb.ATTRIBUTE_MATCH_OPERATOR_LESS_THAN_OR_EQUAL: left <= right,
    }
    return ordered.get(operator, False)


def _active_state(execution: Execution) -> pb.ActiveStepExecutionState:
    state = pb.ActiveStepExecutionState(
        step_execution_id=execution.exec_id,
        from_step_execution_id=execution.from_id,
        step_type=execution.step_type,
        phase=(
            pb.ACTIVE_STEP_PHASE_WAITING
            if execution.phase is Phase.WAITING
            else pb.ACTIVE_STEP_PHASE_ACTIVE
        ),
        movement=execution.movement,
    )
    state.step_execution_locals.extend(execution.locals)
    if execution.waiting is not None:
        waiting = state.waiting_condition
        waiting.waiting_condition_type = execution.waiting.waiting_condition_type
        waiting.timer_conditions.extend(execution.waiting.timer_conditions)
        waiting.channel_conditions.extend(execution.waiting.channel_conditions)
        waiting.condition_combinations.extend(execution.waiting.condition_combinations)
    for timer in execution.timers:
        state.timers.add(
            condition_id=timer.condition_id,
            firing_unix_timestamp_seconds=timer.firing,
            status=timer.status,
        )
    if execution.call is not None and execution.call.last_failure is not None:
        state.last_failure_info.CopyFrom(execution.call.last_failure)
    return state


class FlowServicer(dex_pb2_grpc.FlowServiceServicer):
    """The Dex ``FlowService`` over one :class:`Engine`."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # Startup and health ----------------------------------------------------------------------

    @_guarded
    async def GetServerInfo(self, request: empty_pb2.Empty, context: Ctx) -> pb.ServerInfo:
        return pb.ServerInfo(
            server_version=_server_version(),
            minimum_supported_protocol_version=1,
            current_protocol_version=3,
        )

    @_guarded
    async def SyncAttributeIndexes(
        self, request: pb.SyncAttributeIndexRequest, context: Ctx
    ) -> pb.SyncAttributeIndexResponse:
        indexes = dict(request.attribute_indexes)
        for key, kind in indexes.items():
            if not key or kind not in pb.IndexType.values() or kind == pb.INDEX_TYPE_UNSPECIFIED:
                raise bad_request(f"invalid index {key!r}")
            known = self._engine.indexes.get(key)
            if known is not None and known != kind:
                raise bad_request(f"index {key!r} is already registered with another type")
        self._engine.store.save_indexes(indexes)
        self._engine.indexes.update(indexes)
        return pb.SyncAttributeIndexResponse()

    @_guarded
    async def HealthCheck(self, request: empty_pb2.Empty, context: Ctx) -> pb.HealthInfo:
        return pb.HealthInfo(condition="OK", hostname=socket.gethostname())

    # Lifecycle -------------------------------------------------------------------------------

    @_guarded
    async def StartFlow(self, request: pb.StartFlowRequest, context: Ctx) -> pb.StartFlowResponse:
        return pb.StartFlowResponse(run_id=self._engine.start_flow(request))

    @_guarded
    async def WaitForFlow(self, request: pb.WaitForFlowRequest, context: Ctx) -> pb.FlowResult:
        engine = self._engine
        engine.run_of(request.flow_id, active=False)
        limit = engine.config.max_long_poll_seconds
        budget = min(request.wait_time_seconds, limit) if request.wait_time_seconds > 0 else limit

        def closed() -> pb.FlowResult | None:
            run = engine.latest[request.flow_id]
            return None if run.is_open else _flow_result(engine, run)

        return await _wait(
            engine, request.flow_id, closed, budget, lambda: long_poll_timeout("the flow to close")
        )

    @_guarded
    async def StopFlow(self, request: pb.StopFlowRequest, context: Ctx) -> empty_pb2.Empty:
        self._engine.stop_flow(request)
        return empty_pb2.Empty()

    @_guarded
    async def GetFlowSummary(
        self, request: pb.GetFlowSummaryRequest, context: Ctx
    ) -> pb.GetFlowSummaryResponse:
        run = self._run(request.flow_id, request.run_id)
        summary = pb.GetFlowSummaryResponse(
            first_run_id=run.first_run_id,
            request_id=run.request_id,
            flow_type=run.flow_type,
            flow_status=run.status,  # type: ignore[arg-type]
            run_attempt=run.run_attempt,
        )
        summary.flow_execution_id.flow_id = run.flow_id
        summary.flow_execution_id.run_id = run.run_id
        summary.start_time.FromNanoseconds(int(run.start_time * 1e9))
        if run.close_time is not None:
            summary.close_time.FromNanoseconds(int(run.close_time * 1e9))
        return summary

    def _run(self, flow_id: str, run_id: str) -> Run:
        if run_id:
            run = self._engine.runs.get(run_id)
            if run is None or run.flow_id != flow_id:
                raise flow_not_found(flow_id)
            return run
        return self._engine.run_of(flow_id, active=False)

    @_guarded
    async def UpdateFlowConfig(
        self, request: pb.UpdateFlowConfigRequest, context: Ctx
    ) -> empty_pb2.Empty:
        self._engine.update_flow_config(request)
        return empty_pb2.Empty()

    @_guarded
    async def TriggerContinueAsNew(
        self, request: pb.TriggerContinueAsNewRequest, context: Ctx
    ) -> empty_pb2.Empty:
        # A local engine keeps no Temporal history, so there is nothing to roll over.
        self._engine.run_of(request.flow_id, active=True)
        return empty_pb2.Empty()

    @_guarded
    async def SkipTimer(self, request: pb.SkipTimerRequest, context: Ctx) -> empty_pb2.Empty:
        self._engine.skip_timer(request)
        return empty_pb2.Empty()

    # Waits -----------------------------------------------------------------------------------

    @_guarded
    async def WaitForStepCompletion(
        self, request: pb.WaitForStepCompletionRequest, context: Ctx
    ) -> pb.WaitForStepCompletionResponse:
        engine = self._engine
        if not request.step_type or not request.step_execution_number.isdigit():
            raise bad_request("step_type and a positive step_execution_number are required")
        number = int(request.step_execution_number)
        if number < 1:
            raise bad_request("step_execution_number must be positive")
        run = engine.run_of(request.flow_id, active=False)
        exec_id = f"{request.step_type}-{number}"

        def completed() -> pb.WaitForStepCompletionResponse | None:
            done = number <= run.counters.get(request.step_type, 0) and (
                exec_id not in run.executions
            )
            if done:
                return pb.WaitForStepCompletionResponse()
            if not run.is_open:
                raise flow_not_found(request.flow_id, closed=True)
            return None

        budget, on_timeout = _budget(engine, request.request_timeout_seconds, f"Step {exec_id}")
        return await _wait(engine, request.flow_id, completed, budget, on_timeout)

    @_guarded
    async def WaitForAttribute(
        self, request: pb.WaitForAttributeRequest, context: Ctx
    ) -> pb.WaitForAttributeResponse:
        engine = self._engine
        match = request.match
        if not match.key or match.operator == pb.ATTRIBUTE_MATCH_OPERATOR_UNSPECIFIED:
            raise bad_request("an attribute match needs a key and an operator")
        if match.operand.WhichOneof("kind") not in (
            "string_value",
            "int_value",
            "double_value",
            "bool_value",
        ):
            raise bad_request("the operand must be a string, number or bool")
        run = engine.run_of(request.flow_id, active=True)

        def matched() -> pb.WaitForAttributeResponse | None:
            stored = run.attributes.get(match.key)
            if stored is not None and _matches(stored, match.operator, match.operand):
                return pb.WaitForAttributeResponse(matched_value=stored)
            if not run.is_open:
                raise flow_not_found(request.flow_id, closed=True)
            return None

        budget, on_timeout = _budget(engine, request.request_timeout_seconds, match.key)
        return await _wait(engine, request.flow_id, matched, budget, on_timeout)

    # RPCs and state --------------------------------------------------------------------------

    @_guarded
    async def InvokeRPC(self, request: pb.InvokeRPCRequest, context: Ctx) -> pb.InvokeRPCResponse:
        return await invoke_rpc(self._engine, request)

    @_guarded
    async def SearchFlows(
        self, request: pb.SearchFlowsRequest, context: Ctx
    ) -> pb.SearchFlowsResponse:
        if request.page_size < 0:
            raise bad_request("page_size must not be negative")
        try:
            predicate = parse_query(request.query)
        except ValueError as error:
            raise bad_request(str(error)) from None
        try:
            offset = int(request.next_page_token or "0")
        except ValueError:
            raise bad_request("malformed next_page_token") from None
        size = request.page_size or _DEFAULT_PAGE_SIZE
        runs = sorted(self._engine.runs.values(), key=lambda r: (-r.start_time, -r.seq))
        matching = []
        for run in runs:
            attributes = search_attributes(run)
            if predicate(attributes):
                matching.append((run, attributes))
        response = pb.SearchFlowsResponse()
        for run, attributes in matching[offset : offset + size]:
            entry = response.flow_runs.add(
                flow_id=run.flow_id,
                run_id=run.run_id,
                flow_type=run.flow_type,
                flow_status=run.status,
            )
            entry.start_time.FromNanoseconds(int(run.start_time * 1e9))
            if run.close_time is not None:
                entry.close_time.FromNanoseconds(int(run.close_time * 1e9))
            for key in sorted(attributes):
                if key in ("StartTime", "CloseTime"):
                    continue
                entry.indexed_attributes.add(key=key, value=search_value_to_wire(attributes[key]))
        if offset + size < len(matching):
            response.next_page_token = str(offset + size)
        return response

    @_guarded
    async def GetFlowState(
        self, request: pb.GetFlowStateRequest, context: Ctx
    ) -> pb.GetFlowStateResponse:
        run = self._run(request.flow_id, request.run_id)
        state = pb.GetFlowStateResponse(flow_config=run.config)
        for key in sorted(run.attributes):
            state.attributes.add(key=key, value=run.attributes[key])
        for execution in sorted(run.executions.values(), key=lambda e: e.seq):
            state.active_step_executions.append(_active_state(execution))
        for name, queue in run.channels.items():
            if queue:
                messages = state.pending_channel_messages[name].messages
                for entry in queue:
                    messages.add(channel_name=name, message_id=entry.message_id, value=entry.value)
        state.completed_steps.extend(run.outputs)
        return state

    @_guarded
    async def GetHistoryEvents(
        self, request: pb.GetHistoryEventsRequest, context: Ctx
    ) -> pb.GetHistoryEventsResponse:
        if not request.run_id:
            raise bad_request("run_id is required")
        run = self._run(request.flow_id, request.run_id)
        try:
            start = (
                int(request.next_page_token.decode() or 0) or request.start_internal_event_id or 1
            )
        except ValueError:
            raise bad_request("malformed next_page_token") from None
        size = request.estimate_page_size or 100
        events = [
            pb.FlowHistoryEvent.FromString(raw)
            for raw in self._engine.store.history(run.run_id, start, size)
        ]
        response = pb.GetHistoryEventsResponse(events=events)
        following = events[-1].event_id + 1 if events else start
        response.next_internal_event_id = following
        if following < run.next_event_id:
            response.next_page_token = str(following).encode()
        return response

    @_guarded
    async def LoadBlobs(self, request: pb.LoadBlobsRequest, context: Ctx) -> pb.LoadBlobsResponse:
        response = pb.LoadBlobsResponse()
        for entry in request.entries:
            kind = entry.blob_value.WhichOneof("kind")
            if kind not in ("internal_blob_id_for_string_value", "internal_blob_id_for_obj_value"):
                raise bad_request("LoadBlobs entries must be blob references")
            blob_id = getattr(entry.blob_value, kind)
            raw = self._engine.store.get_blob(entry.flow_id, blob_id)
            if raw is not None:
                response.values[blob_id].CopyFrom(pb.Value.FromString(raw))
        return response

    # Streams ---------------------------------------------------------------------------------

    @_guarded
    async def WriteStream(self, request: pb.WriteStreamRequest, context: Ctx) -> empty_pb2.Empty:
        if not request.source:
            raise bad_request("source must not be empty")
        self._engine.streams.append(
            flow_id=request.flow_id,
            flow_type=request.flow_type,
            stream_name=request.stream_name,
            capacity=request.stream_capacity_bytes,
            value=request.value,
            source=request.source,
        )
        return empty_pb2.Empty()

    @_guarded
    async def ReadStream(
        self, request: pb.ReadStreamRequest, context: Ctx
    ) -> pb.ReadStreamResponse:
        return await self._engine.streams.read(request)

    @_guarded
    async def ListStreamMessages(
        self, request: pb.ListStreamMessagesRequest, context: Ctx
    ) -> pb.ListStreamMessagesResponse:
        return self._engine.streams.list(request)

    # Not used by dex-python-sdk 1.23.0 -------------------------------------------------------

    PublishToChannel = _unimplemented("PublishToChannel")
    GetChannelMessages = _unimplemented("GetChannelMessages")
    DeleteChannelMessage = _unimplemented("DeleteChannelMessage")
    GetAttributes = _unimplemented("GetAttributes")
    SetAttributes = _unimplemented("SetAttributes")
    WaitForHistoryEvent = _unimplemented("WaitForHistoryEvent")
    ResetFlow = _unimplemented("ResetFlow")
