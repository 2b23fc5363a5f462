"""Starting, waiting for, describing and stopping flows; id reuse; the result table."""

from __future__ import annotations

from datetime import timedelta

import dex
import pytest
from dex import AsyncContext, StepDecision
from engine_harness import Stack


class Echo(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        if input == "fail":
            return dex.force_fail("asked to fail")
        if input == "dead":
            return dex.dead_end()
        if input == "park":
            return dex.go_to(Park, input)
        return dex.graceful_complete(input.upper())


class Park(dex.Step[str]):
    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        return dex.Wait.until(inbox.for_one())

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        return dex.graceful_complete(inbox.results(context)[0])


class Boom(dex.Step[str]):
    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(execute_retry=dex.RetryPolicy(maximum_attempts=2))

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        raise RuntimeError(f"boom {context.attempt}")


inbox = dex.Channel("inbox", str)


class Lifecycle(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Echo()).other_steps(Park())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(inbox)

    @dex.rpc()
    def send(self, context: dex.Context, text: str) -> None:
        inbox.publish(context, text)


class Failing(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Boom())


FLOW = Lifecycle()
FAILING = Failing()
FLOWS = [FLOW, FAILING]


async def test_flow_completes_with_its_output(stack: Stack) -> None:
    await stack.worker(FLOWS)
    client = stack.client(FLOWS)
    run_id = await client.start_flow(FLOW, "ok", "hello")
    result = await client.wait_for_flow("ok", timedelta(seconds=10))
    assert result.status is dex.FlowStatus.COMPLETED
    assert result.single_output(str) == "HELLO"
    info = await client.describe_flow("ok")
    assert info.run_id == run_id
    assert info.status is dex.FlowStatus.COMPLETED


async def test_force_fail_and_worker_failures_close_with_the_documented_errors(
    stack: Stack,
) -> None:
    await stack.worker(FLOWS)
    client = stack.client(FLOWS)
    await client.start_flow(FLOW, "ff", "fail")
    result = await client.wait_for_flow("ff", timedelta(seconds=10))
    assert result.status is dex.FlowStatus.FAILED
    assert result.error_type is dex.FlowErrorType.STEP_DECISION_FAILED
    assert result.error_message == "asked to fail"

    await client.start_flow(FAILING, "boom", "x")
    result = await client.wait_for_flow("boom", timedelta(seconds=20))
    assert result.status is dex.FlowStatus.FAILED
    assert result.error_type is dex.FlowErrorType.WORKER_API_FAILED
    assert result.error_message == "boom 2"


async def test_dead_end_keeps_the_flow_running_and_stop_types_close_it(stack: Stack) -> None:
    await stack.worker(FLOWS)
    client = stack.client(FLOWS)
    for flow_id, stop, status in (
        ("cancel", dex.StopType.CANCEL, dex.FlowStatus.CANCELED),
        ("terminate", dex.StopType.TERMINATE, dex.FlowStatus.TERMINATED),
        ("fail", dex.StopType.FAIL, dex.FlowStatus.FAILED),
    ):
        await client.start_flow(FLOW, flow_id, "dead")
        with pytest.raises(dex.LongPollTimeoutError):
            await client.wait_for_flow(flow_id, timedelta(seconds=1))
        await client.stop_flow(flow_id, dex.StopFlowOptions(type=stop, reason="enough"))
        result = await client.wait_for_flow(flow_id, timedelta(seconds=5))
        assert result.status is status
    failed = await client.wait_for_flow("fail", timedelta(seconds=5))
    assert failed.error_type is dex.FlowErrorType.CLIENT_API_FAILED
    assert failed.error_message == "enough"
    with pytest.raises(dex.FlowNotActiveOrNotFoundError):
        await client.stop_flow("cancel")


async def test_start_is_idempotent_by_request_id_and_reuse_policies_apply(stack: Stack) -> None:
    await stack.worker(FLOWS)
    client = stack.client(FLOWS)
    same = dex.StartFlowOptions(request_id="req-1", ignore_already_started=True)
    first = await client.start_flow(FLOW, "idem", "park", same)
    assert await client.start_flow(FLOW, "idem", "park", same) == first
    with pytest.raises(dex.FlowAlreadyStartedError):
        await client.start_flow(FLOW, "idem", "park")
    await client.invoke_rpc(FLOW.send, "idem", "bye")
    await client.wait_for_flow("idem", timedelta(seconds=10))
    # The default policy rejects every previously used id; others allow what they name.
    with pytest.raises(dex.FlowAlreadyStartedError):
        await client.start_flow(FLOW, "idem", "again")
    with pytest.raises(dex.FlowAlreadyStartedError):
        await client.start_flow(
            FLOW,
            "idem",
            "again",
            dex.StartFlowOptions(id_reuse_policy=dex.IdReusePolicy.ALLOW_IF_PREVIOUS_FAILED),
        )
    second = await client.start_flow(
        FLOW,
        "idem",
        "again",
        dex.StartFlowOptions(id_reuse_policy=dex.IdReusePolicy.ALLOW_IF_NOT_RUNNING),
    )
    assert second != first
    result = await client.wait_for_flow("idem", timedelta(seconds=10))
    assert result.single_output(str) == "AGAIN"
    await client.start_flow(FLOW, "busy", "park")
    replaced = await client.start_flow(
        FLOW,
        "busy",
        "x",
        dex.StartFlowOptions(id_reuse_policy=dex.IdReusePolicy.ALLOW_TERMINATE_IF_RUNNING),
    )
    assert (await client.describe_flow("busy")).run_id == replaced


async def test_unknown_flows_raise_not_found(stack: Stack) -> None:
    client = stack.client(FLOWS)
    with pytest.raises(dex.FlowNotFoundError):
        await client.wait_for_flow("missing", timedelta(seconds=1))
    with pytest.raises(dex.FlowNotFoundError):
        await client.describe_flow("missing")
    with pytest.raises(dex.FlowNotActiveOrNotFoundError):
        await client.invoke_rpc(FLOW.send, "missing", "x")
