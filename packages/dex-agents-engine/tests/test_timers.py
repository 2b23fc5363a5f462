"""Timers: whole seconds, any-of against Channels, skipping, and firing after a restart."""

from __future__ import annotations

import time
from datetime import timedelta

import dex
from dex import AsyncContext, StepDecision
from engine_harness import EngineProcess, Stack

answers = dex.Channel("answers", str)


class Ask(dex.Step[int]):
    """Waits for an answer or a timeout, whichever comes first."""

    async def wait_for(self, context: AsyncContext, input: int) -> dex.Wait:
        return dex.Wait.any_of(dex.Timer.by_duration(timedelta(seconds=input)), answers.for_one())

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:
        if context.has_timer_fired(0):
            return dex.graceful_complete("timeout")
        return dex.graceful_complete(answers.results(context)[0])


class Timers(dex.Flow[int]):
    def get_steps(self) -> dex.StepList[int]:
        return dex.StepList.start_step(Ask())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(answers)

    @dex.rpc()
    def answer(self, context: dex.Context, text: str) -> None:
        answers.publish(context, text)


FLOW = Timers()


async def test_timer_fires_after_its_whole_seconds(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    started = time.monotonic()
    await client.start_flow(FLOW, "t", 2)
    result = await client.wait_for_flow("t", timedelta(seconds=10))
    assert result.single_output(str) == "timeout"
    assert 1.0 <= time.monotonic() - started < 6


async def test_a_message_beats_a_pending_timer_and_a_skip_fires_it(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "answered", 60)
    await client.invoke_rpc(FLOW.answer, "answered", "yes")
    assert (await client.wait_for_flow("answered", timedelta(seconds=10))).single_output(
        str
    ) == "yes"
    await client.start_flow(FLOW, "skipped", 60)
    await client.skip_timer(
        "skipped", dex.StepExecutionId("Ask", 1), dex.TimerId.by_condition_index(0)
    )
    assert (await client.wait_for_flow("skipped", timedelta(seconds=10))).single_output(
        str
    ) == "timeout"


async def test_timers_fire_after_an_engine_restart(
    engine_process: EngineProcess, stack: Stack
) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "restart", 3)
    # Wait until the Step is waiting on its timer, then kill the engine past the due time.
    for _ in range(100):
        info = await client.describe_flow("restart")
        if info.status is dex.FlowStatus.RUNNING:
            break
    time.sleep(0.5)
    engine_process.kill()
    time.sleep(3)
    engine_process.start()
    result = await client.wait_for_flow("restart", timedelta(seconds=30))
    assert result.single_output(str) == "timeout"
