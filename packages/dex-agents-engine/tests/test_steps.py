"""Step semantics: parallel fan-out, locks, cancellation, failure routes and recovery info."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import dex
import pytest
from dex import AsyncContext, StepDecision
from engine_harness import Stack, wait_until

from dex_agents.engine import ATTEMPT_NOT_STARTED_ERROR_TYPE

EVENTS: dict[str, list[object]] = {}
counter = dex.Attribute("counter", int)
release = dex.Channel("release", str)


def record(key: str, value: object) -> None:
    EVENTS.setdefault(key, []).append(value)


class FanOut(dex.Step[int]):
    async def execute(self, context: AsyncContext, input: int) -> StepDecision:
        return dex.go_to_many(*(dex.StepMovement.of(Sleeper, i) for i in range(input)))


class Sleeper(dex.Step[int]):
    async def execute(self, context: AsyncContext, input: int) -> StepDecision:
        started = time.monotonic()
        await asyncio.sleep(0.5)
        record("sleeper", (started, time.monotonic()))
        return dex.graceful_complete(input)


class Parallel(dex.Flow[int]):
    def get_steps(self) -> dex.StepList[int]:
        return dex.StepList.start_step(FanOut()).other_steps(Sleeper())


async def test_go_to_many_runs_steps_in_parallel_on_free_worker_slots(stack: Stack) -> None:
    EVENTS.clear()
    flow = Parallel()
    await stack.worker([flow], max_concurrent_tasks=4)
    client = stack.client([flow])
    await client.start_flow(flow, "fan", 3)
    result = await client.wait_for_flow("fan", timedelta(seconds=20))
    assert sorted(c.decode(int) for c in result.completions) == [0, 1, 2]
    spans = EVENTS["sleeper"]
    assert max(s for s, _ in spans) < min(e for _, e in spans)  # type: ignore[misc]


class Locked(dex.Step[str]):
    """Holds the counter's lock across a failed first attempt and its retry."""

    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            execute_lock_attributes=(counter.lock(),),
            execute_retry=dex.RetryPolicy(initial_interval=timedelta(seconds=2)),
        )

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        record("locked", (input, context.attempt, time.monotonic()))
        if input == "first" and context.attempt == 1:
            raise RuntimeError("first attempt fails")
        counter.set(context, counter.get(context) + 1)
        return dex.dead_end()


class Start2(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        return dex.go_to_many(
            dex.StepMovement.of(Locked, "first"), dex.StepMovement.of(Locked, "second")
        )


class Locks(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Start2()).other_steps(Locked())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(counter)

    @dex.rpc(lock_attributes=(counter.lock(),))
    def bump(self, context: dex.Context) -> dex.RPCResult[int]:
        counter.set(context, counter.get(context) + 100)
        return dex.RPCResult(counter.get(context))

    @dex.rpc()
    def read(self, context: dex.Context) -> dex.RPCResult[int]:
        return dex.RPCResult(counter.get(context))


async def test_step_locks_wait_and_hold_across_retries_while_rpc_locks_fail_at_once(
    stack: Stack,
) -> None:
    EVENTS.clear()
    flow = Locks()
    await stack.worker([flow])
    client = stack.client([flow])
    await client.start_flow(flow, "locks", "go")
    await wait_until("the first attempt", lambda: EVENTS.get("locked"))
    # The first Step is between attempts and still holds the lock.
    with pytest.raises(dex.RpcLockConflictError):
        await client.invoke_rpc(flow.bump, "locks")

    async def both_done() -> bool:
        return await client.invoke_rpc(flow.read, "locks") == 2

    await wait_until("both Steps", both_done)
    order = [(name, attempt) for name, attempt, _ in EVENTS["locked"]]  # type: ignore[misc]
    assert order == [("first", 1), ("first", 2), ("second", 1)]
    assert await client.invoke_rpc(flow.bump, "locks") == 102


class Long(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        record("long", "started")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            record("long", "cancelled")
            raise
        return dex.dead_end()


class Canceller(dex.Step[str]):
    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        return dex.Wait.until(release.for_one())

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        return dex.graceful_complete("cancelled Long").with_canceling_steps(Long)


class Start3(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        return dex.go_to_many(dex.StepMovement.of(Long, ""), dex.StepMovement.of(Canceller, ""))


class Cancels(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Start3()).other_steps(Long(), Canceller())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(release)

    @dex.rpc()
    def go(self, context: dex.Context) -> None:
        release.publish(context, "now")


async def test_cancelling_a_step_cancels_its_running_async_handler(stack: Stack) -> None:
    EVENTS.clear()
    flow = Cancels()
    await stack.worker([flow])
    client = stack.client([flow])
    await client.start_flow(flow, "cancel", "")
    await wait_until("Long to start", lambda: EVENTS.get("long"))
    await client.invoke_rpc(flow.go, "cancel")
    result = await client.wait_for_flow("cancel", timedelta(seconds=10))
    assert result.single_output(str) == "cancelled Long"
    await wait_until("the handler to see cancellation", lambda: "cancelled" in EVENTS["long"])
    await client.wait_for_step_completion(
        "cancel", dex.StepExecutionId("Long", 1), dex.WaitForStepCompletionOptions()
    )


class Flaky(dex.Step[str]):
    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            execute_retry=dex.RetryPolicy(maximum_attempts=2, initial_interval=timedelta(seconds=1))
        ).on_execute_failure_proceed_to(Recovery)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        raise RuntimeError(f"bad {input} on attempt {context.attempt}")


class Recovery(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        error = context.recovery_error
        assert error is not None
        return dex.graceful_complete(f"{input}|{error.error_type}|{error.detail}")


class Recovers(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Flaky()).other_steps(Recovery())


async def test_execute_failure_proceeds_to_the_recovery_step_with_the_error(stack: Stack) -> None:
    flow = Recovers()
    await stack.worker([flow])
    client = stack.client([flow])
    await client.start_flow(flow, "recover", "input")
    result = await client.wait_for_flow("recover", timedelta(seconds=20))
    assert result.single_output(str) == "input|builtins.RuntimeError|bad input on attempt 2"


class NeverRuns(dex.Step[str]):
    def get_step_options(self) -> dex.StepOptions:
        return dex.StepOptions(
            execute_method_timeout=timedelta(seconds=1),
            execute_retry=dex.RetryPolicy(maximum_attempts=1),
        ).on_execute_failure_proceed_to(Recovery)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        raise AssertionError("no Worker serves this flow type")


class Unserved(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(NeverRuns()).other_steps(Recovery())


async def test_a_failure_no_attempt_of_which_reached_a_worker_has_its_own_error_type(
    stack: Stack,
) -> None:
    served = Unserved()
    client = stack.client([served])
    await client.start_flow(served, "unserved", "x")
    # No Worker polls this flow type: the single attempt expires before any Worker took it.
    await asyncio.sleep(1.5)
    await stack.worker([served])
    result = await client.wait_for_flow("unserved", timedelta(seconds=20))
    output = result.single_output(str)
    assert output.split("|")[1] == ATTEMPT_NOT_STARTED_ERROR_TYPE
