"""Retries with backoff and retry_after, attempt and heartbeat timeouts, checkpoints."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import dex
from dex import AsyncContext, StepDecision
from engine_harness import Stack

SEEN: dict[str, list[object]] = {}


class RetryAfter(dex.Step[str]):
    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            execute_retry=dex.RetryPolicy(
                maximum_attempts=3, initial_interval=timedelta(seconds=10)
            )
        )

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        SEEN.setdefault("retry_after", []).append(time.monotonic())
        if context.attempt == 1:
            raise dex.retry_after(2, RuntimeError("not ready"))
        return dex.graceful_complete(context.attempt)


class Slow(dex.Step[str]):
    """Times out on its first attempt; the retry is quick."""

    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            execute_method_timeout=timedelta(seconds=1),
            execute_retry=dex.RetryPolicy(maximum_attempts=2),
        )

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        if context.attempt == 1:
            await asyncio.sleep(5)
        return dex.graceful_complete(context.attempt)


class Silent(dex.Step[str]):
    """Never heartbeats: every attempt misses its heartbeat timeout."""

    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            heartbeat_timeout=timedelta(seconds=1),
            execute_retry=dex.RetryPolicy(maximum_attempts=1),
        )

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        await asyncio.sleep(5)
        return dex.graceful_complete(0)


class Checkpoint(dex.Step[str]):
    """Saves progress in a heartbeat, fails, and resumes from it on the retry."""

    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(execute_retry=dex.RetryPolicy(maximum_attempts=2))

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        if context.attempt == 1:
            assert not context.has_last_heartbeat_value()
            await context.heartbeat("job-42")
            raise RuntimeError("lost the connection")
        return dex.graceful_complete(context.get_last_heartbeat_value(str))


class Picker(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        target = {"retry_after": RetryAfter, "slow": Slow, "silent": Silent}.get(input, Checkpoint)
        return dex.go_to(target, input)


class Retries(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Picker()).other_steps(
            RetryAfter(), Slow(), Silent(), Checkpoint()
        )


FLOW = Retries()


async def test_retry_after_sets_the_next_delay(stack: Stack) -> None:
    SEEN.clear()
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "ra", "retry_after")
    result = await client.wait_for_flow("ra", timedelta(seconds=15))
    assert result.single_output(int) == 2
    first, second = SEEN["retry_after"]
    assert 2.0 <= second - first < 9  # type: ignore[operator]


async def test_an_attempt_timeout_fails_the_attempt_and_the_retry_runs(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "slow", "slow")
    result = await client.wait_for_flow("slow", timedelta(seconds=15))
    assert result.single_output(int) == 2


async def test_a_missed_heartbeat_fails_the_attempt(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "silent", "silent")
    result = await client.wait_for_flow("silent", timedelta(seconds=15))
    assert result.status is dex.FlowStatus.FAILED
    assert "timeout" in (result.error_message or "").lower()
    assert "heartbeat" in (result.error_message or "").lower()


async def test_a_retried_attempt_reads_the_last_heartbeat_checkpoint(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "checkpoint", "checkpoint")
    result = await client.wait_for_flow("checkpoint", timedelta(seconds=15))
    assert result.single_output(str) == "job-42"
