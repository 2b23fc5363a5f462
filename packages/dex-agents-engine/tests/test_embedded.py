"""The engine embedded in-process, and what an engine crash must not lose."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dex
from dex import AsyncContext, StepDecision
from engine_harness import EngineProcess, Stack, wait_until

from dex_agents.engine import Durability, EngineConfig, LocalEngine

notes = dex.Channel("notes", str)


class Collect(dex.Step[int]):
    async def wait_for(self, context: AsyncContext, input: int) -> dex.Wait:
        return dex.Wait.until(notes.for_n(input))

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:
        return dex.graceful_complete(" ".join(notes.results(context)))


class Notes(dex.Flow[int]):
    def get_steps(self) -> dex.StepList[int]:
        return dex.StepList.start_step(Collect())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(notes)

    @dex.rpc()
    def add(self, context: dex.Context, text: str) -> None:
        notes.publish(context, text)

    @dex.rpc(load_channels=(notes,))
    def pending(self, context: dex.Context) -> dex.RPCResult[int]:
        return dex.RPCResult(len(notes.pending_messages(context)))


FLOW = Notes()


async def test_local_engine_serves_in_process(tmp_path: Path) -> None:
    config = EngineConfig(data_dir=tmp_path / "data", durability=Durability.PROCESS_CRASH_SAFE)
    async with LocalEngine(config) as engine:
        assert engine.address.startswith("127.0.0.1:")
        stack = Stack(EngineProcess(tmp_path), tmp_path)
        stack.engine.address = engine.address
        try:
            await stack.worker([FLOW])
            client = stack.client([FLOW])
            await client.start_flow(FLOW, "embedded", 2)
            await client.invoke_rpc(FLOW.add, "embedded", "one")
            await client.invoke_rpc(FLOW.add, "embedded", "two")
            result = await client.wait_for_flow("embedded", timedelta(seconds=10))
            assert result.single_output(str) == "one two"
        finally:
            await stack.close()


async def test_acknowledged_effects_survive_an_engine_kill(
    engine_process: EngineProcess, stack: Stack
) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "kept", 3)
    await client.invoke_rpc(FLOW.add, "kept", "a")
    await client.invoke_rpc(FLOW.add, "kept", "b")
    engine_process.restart()

    errors: list[BaseException] = []

    async def both_pending() -> bool:
        try:
            return await client.invoke_rpc(FLOW.pending, "kept") == 2
        except dex.DexServiceError as error:  # the engine or the Worker is not back yet
            errors.append(error)
            return False

    try:
        await wait_until("the Worker to reconnect", both_pending, timeout=60)
    except AssertionError:
        raise AssertionError(f"RPC errors while waiting: {errors[-3:]!r}") from None
    await client.invoke_rpc(FLOW.add, "kept", "c")
    result = await client.wait_for_flow("kept", timedelta(seconds=20))
    assert result.single_output(str) == "a b c"
