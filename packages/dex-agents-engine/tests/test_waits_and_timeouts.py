"""WaitForAttribute and flow timeouts (FAIL, CANCEL and a timeout handler)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import dex
import pytest
from dex import AsyncContext, Context, StepDecision
from engine_harness import Stack

progress = dex.Attribute("progress", int)
never = dex.Channel("never", str)


class Idle(dex.Step[int]):
    async def wait_for(self, context: AsyncContext, input: int) -> dex.Wait:
        return dex.Wait.until(never.for_one())

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:
        return dex.dead_end()


class Waits(dex.Flow[int]):
    def get_steps(self) -> dex.StepList[int]:
        return dex.StepList.start_step(Idle())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(progress, never)

    @dex.rpc()
    def advance(self, context: Context, by: int) -> None:
        progress.set(context, progress.get(context) + by)


class Handled(Waits):
    def get_flow_type(self) -> str:
        return "Handled"

    def handle_timeout(self, context: Context) -> StepDecision:
        return dex.force_complete("handled")


FLOW = Waits()
HANDLED = Handled()


async def test_wait_for_attribute_matches_after_writes(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "attr", 0)
    waiting = asyncio.create_task(
        client.wait_for_attribute_match(
            "attr",
            progress,
            dex.AttributeMatch.greater_than_or_equal(3),
            dex.WaitForAttributeOptions(request_timeout=timedelta(seconds=20)),
        )
    )
    await asyncio.sleep(0.3)
    assert not waiting.done()
    for _ in range(3):
        await client.invoke_rpc(FLOW.advance, "attr", 1)
    assert await waiting == 3
    with pytest.raises(dex.RequestTimeoutError):
        await client.wait_for_attribute_match(
            "attr",
            progress,
            dex.AttributeMatch.equal_to(99),
            dex.WaitForAttributeOptions(request_timeout=timedelta(seconds=1)),
        )


@pytest.mark.parametrize(
    ("policy", "status", "message"),
    [
        (dex.FlowTimeoutPolicy.FAIL, dex.FlowStatus.FAILED, "Flow timed out after 1 seconds"),
        (dex.FlowTimeoutPolicy.CANCEL, dex.FlowStatus.CANCELED, None),
    ],
)
async def test_flow_timeouts_close_the_flow(
    stack: Stack, policy: dex.FlowTimeoutPolicy, status: dex.FlowStatus, message: str | None
) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    options = dex.StartFlowOptions(timeout=timedelta(seconds=1), timeout_policy=policy)
    await client.start_flow(FLOW, "timeout", 0, options)
    result = await client.wait_for_flow("timeout", timedelta(seconds=10))
    assert result.status is status
    assert result.error_message == message


async def test_a_timeout_handler_decides_how_the_flow_ends(stack: Stack) -> None:
    await stack.worker([HANDLED])
    client = stack.client([HANDLED])
    await client.start_flow(
        HANDLED, "handled", 0, dex.StartFlowOptions(timeout=timedelta(seconds=1))
    )
    result = await client.wait_for_flow("handled", timedelta(seconds=10))
    assert result.status is dex.FlowStatus.COMPLETED
    assert result.single_output(str) == "handled"
