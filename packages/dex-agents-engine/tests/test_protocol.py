"""Wire-level behaviour: server info, history, flow state, config, blobs and bad input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import dex
import grpc
import pytest
from dex import AsyncContext, StepDecision
from dex.dexpb import dex_pb2 as pb
from dex.dexpb import dex_pb2_grpc
from engine_harness import EngineProcess, Stack, wait_until
from google.protobuf import empty_pb2

big = dex.Attribute("big", str)
inbox = dex.Channel("inbox", str)
BIG = "x" * (3_900_000)


class Write(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        big.set(context, BIG if input == "big" else input)
        return dex.go_to(Check, input)


class Check(dex.Step[str]):
    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        return dex.Wait.until(inbox.for_one())

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        return dex.graceful_complete(len(big.get(context) or ""))


class Wire(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Write()).other_steps(Check())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(big, inbox)

    @dex.rpc()
    def size(self, context: dex.Context) -> dex.RPCResult[int]:
        return dex.RPCResult(len(big.get(context) or ""))

    @dex.rpc()
    def send(self, context: dex.Context, text: str) -> None:
        inbox.publish(context, text)

    @dex.rpc(is_transactional=True)
    def write(self, context: dex.Context, text: str) -> None:
        big.set(context, text)


FLOW = Wire()


@pytest.fixture
async def service(engine_process: EngineProcess) -> AsyncIterator[dex_pb2_grpc.FlowServiceStub]:
    async with grpc.aio.insecure_channel(engine_process.address) as channel:
        yield dex_pb2_grpc.FlowServiceStub(channel)  # type: ignore[no-untyped-call]


async def test_server_info_and_health(service: dex_pb2_grpc.FlowServiceStub) -> None:
    info = await service.GetServerInfo(empty_pb2.Empty())
    assert (info.minimum_supported_protocol_version, info.current_protocol_version) == (1, 3)
    assert (await service.HealthCheck(empty_pb2.Empty())).condition == "OK"


async def test_history_lists_completed_steps_and_state_shows_active_ones(
    stack: Stack, service: dex_pb2_grpc.FlowServiceStub
) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    run_id = await client.start_flow(FLOW, "hist", "small")
    for _ in range(100):
        state = await service.GetFlowState(pb.GetFlowStateRequest(flow_id="hist"))
        if any(e.phase == pb.ACTIVE_STEP_PHASE_WAITING for e in state.active_step_executions):
            break
        await asyncio.sleep(0.05)
    [waiting] = state.active_step_executions
    assert (waiting.step_execution_id, waiting.from_step_execution_id) == ("Check-1", "Write-1")
    assert [kv.key for kv in state.attributes] == ["big"]
    await client.invoke_rpc(FLOW.send, "hist", "go")
    await client.wait_for_flow("hist", timedelta(seconds=10))
    history = await service.GetHistoryEvents(
        pb.GetHistoryEventsRequest(flow_id="hist", run_id=run_id)
    )
    completed = [
        (
            e.step_execute_completed.context.step_type,
            e.step_execute_completed.context.step_execution_id,
            e.step_execute_completed.context.final_attempt,
        )
        for e in history.events
        if e.HasField("step_execute_completed")
    ]
    assert completed == [("Write", "Write-1", 1), ("Check", "Check-1", 1)]
    assert history.events[-1].HasField("flow_closed")


async def test_update_flow_config_merges_and_rejects_bad_values(
    stack: Stack, service: dex_pb2_grpc.FlowServiceStub
) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "config", "small")
    await client.update_flow_config(
        "config", dex.FlowConfig(active_step_search_mode=dex.ActiveStepSearchMode.DISABLED)
    )
    state = await service.GetFlowState(pb.GetFlowStateRequest(flow_id="config"))
    assert state.flow_config.active_step_search_mode == pb.ACTIVE_STEP_SEARCH_MODE_DISABLED
    assert state.flow_config.worker_target.is_pull_mode
    with pytest.raises(grpc.aio.AioRpcError) as failure:
        await service.UpdateFlowConfig(
            pb.UpdateFlowConfigRequest(
                flow_id="config", flow_config=pb.FlowConfig(continue_as_new_threshold=-1)
            )
        )
    assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT


async def test_values_near_the_grpc_limit_travel_as_blobs(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "blob", "big")

    async def written() -> bool:
        return await client.invoke_rpc(FLOW.size, "blob") == len(BIG)

    await wait_until("the big value", written)
    await client.invoke_rpc(FLOW.send, "blob", "go")
    result = await client.wait_for_flow("blob", timedelta(seconds=20))
    assert result.single_output(int) == len(BIG)


async def test_bad_requests_get_invalid_argument_and_the_engine_keeps_serving(
    stack: Stack, service: dex_pb2_grpc.FlowServiceStub
) -> None:
    bad_starts = [
        pb.StartFlowRequest(flow_id="a/b", flow_type="Wire", request_id="r"),
        pb.StartFlowRequest(flow_id="", flow_type="Wire", request_id="r"),
        pb.StartFlowRequest(flow_id="ok", flow_type="", request_id="r"),
        pb.StartFlowRequest(
            flow_id="ok", flow_type="Wire", request_id="r", start_step_type="Write"
        ),
        pb.StartFlowRequest(
            flow_id="huge",
            flow_type="Wire",
            request_id="r",
            start_step_type="Write",
            step_input=pb.Value(string_value="y" * 9_000_000),
        ),
    ]
    for request in bad_starts:
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await service.StartFlow(request)
        assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as failure:
        await service.SearchFlows(pb.SearchFlowsRequest(query="FlowType ="))
    assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    # A garbage first frame on a Worker stream is refused; everyone else is still served.
    async with grpc.aio.insecure_channel(stack.engine.address) as channel:
        tasks = dex_pb2_grpc.WorkerTaskServiceStub(channel)  # type: ignore[no-untyped-call]
        call = tasks.PollWorkerTask()
        await call.write(pb.PollWorkerTaskRequest(pong=pb.PollWorkerTaskPong()))
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await call.read()
        assert failure.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "after", "small")
    await client.invoke_rpc(FLOW.send, "after", "go")
    assert (await client.wait_for_flow("after", timedelta(seconds=10))).single_output(int) == 5


async def test_rpcs_to_closed_flows(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "closed", "small")

    async def written() -> bool:
        return await client.invoke_rpc(FLOW.size, "closed") == 5

    await wait_until("the Write Step", written)
    await client.stop_flow("closed")
    # A read-only RPC may read the closed run; one with effects may not.
    assert await client.invoke_rpc(FLOW.size, "closed") == 5
    with pytest.raises(dex.FlowNotActiveOrNotFoundError):
        await client.invoke_rpc(FLOW.write, "closed", "z")
    with pytest.raises(dex.FlowNotActiveOrNotFoundError):
        await client.invoke_rpc(FLOW.send, "closed", "z")


async def test_sigterm_stops_the_engine_cleanly(engine_process: EngineProcess) -> None:
    assert engine_process.terminate() == 0
