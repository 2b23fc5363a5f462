"""Streams (resume tokens, long polls, trimming, Step writes) and SearchFlows."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import dex
import pytest
from dex import AsyncContext, StepDecision
from engine_harness import Stack

tokens = dex.Stream("tokens", str, 4096)
tiny = dex.Stream("tiny", str, 400)
status = dex.Attribute("status", str, index=dex.AttributeIndex(dex.IndexType.KEYWORD))
wake = dex.Channel("wake", str)


class Speak(dex.Step[str]):
    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        for word in input.split():
            tokens.write(context, word)
        status.set(context, "spoken")
        return dex.go_to(Listen, input)


class Listen(dex.Step[str]):
    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        return dex.Wait.until(wake.for_one())

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        status.set(context, "done")
        return dex.graceful_complete(input)


class Streams(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Speak()).other_steps(Listen())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(tokens, tiny, status, wake)

    @dex.rpc()
    def poke(self, context: dex.Context) -> None:
        wake.publish(context, "go")


FLOW = Streams()


async def test_stream_reads_resume_after_the_token_and_long_poll(stack: Stack) -> None:
    client = stack.client([FLOW])
    for word in ("a", "b", "c"):
        await client.write_stream("s1", tokens, "test", word)
    await client.write_stream("other", tokens, "test", "not mine")
    first = await client.read_stream("s1", tokens)
    assert first.value == "a"
    second = await client.read_stream("s1", tokens, first.resume_token)
    third = await client.read_stream("s1", tokens, second.resume_token)
    assert (second.value, third.value) == ("b", "c")
    with pytest.raises(dex.LongPollTimeoutError):
        await client.read_stream("s1", tokens, third.resume_token, timedelta(seconds=1))
    waiting = asyncio.create_task(
        client.read_stream("s1", tokens, third.resume_token, timedelta(seconds=10))
    )
    await asyncio.sleep(0.2)
    await client.write_stream("s1", tokens, "test", "d")
    assert (await waiting).value == "d"
    page = await client.list_stream_messages("s1", tokens, 2)
    assert [m.value for m in page.messages] == ["d", "c"]
    older = await client.list_stream_messages("s1", tokens, 10, page.next_page_token)
    assert [m.value for m in older.messages] == ["b", "a"]
    assert older.next_page_token == ""
    with pytest.raises(dex.DexServiceError):
        await client.read_stream("other", tokens, first.resume_token)


async def test_a_full_stream_trims_its_oldest_messages(stack: Stack) -> None:
    client = stack.client([FLOW])
    for index in range(20):
        await client.write_stream("trim", tiny, "test", f"message {index:02d}")
    page = await client.list_stream_messages("trim", tiny, 100)
    values = [m.value for m in page.messages]
    assert values[0] == "message 19"
    assert "message 00" not in values
    assert len(values) < 20
    with pytest.raises(dex.DexServiceError):
        await client.write_stream("trim", tiny, "test", "x" * 1000)


async def test_search_by_flow_type_status_active_step_and_index(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "search-a", "hello there")
    await client.start_flow(FLOW, "search-b", "bye")

    async def listening() -> list[str]:
        page = await client.search_flows("ActiveStepTypes = 'Listen'", 10)
        return sorted(f.flow_id for f in page.flows)

    for _ in range(100):
        if await listening() == ["search-a", "search-b"]:
            break
        await asyncio.sleep(0.05)
    assert await listening() == ["search-a", "search-b"]
    await client.invoke_rpc(FLOW.poke, "search-b")
    await client.wait_for_flow("search-b", timedelta(seconds=10))
    assert await listening() == ["search-a"]
    page = await client.search_flows(
        "FlowType = 'Streams' AND (ExecutionStatus = 'Completed' OR status = 'spoken')", 10
    )
    assert sorted(f.flow_id for f in page.flows) == ["search-a", "search-b"]
    done = await client.search_flows("status = 'done'", 10)
    assert [f.flow_id for f in done.flows] == ["search-b"]
    assert done.flows[0].indexed_attributes["status"].data == "done"
    first = await client.search_flows("FlowType = 'Streams'", 1)
    assert len(first.flows) == 1
    assert first.next_page_token
    with pytest.raises(dex.DexServiceError):
        await client.search_flows("FlowType = = 'x'", 10)
    # The Step's Stream writes landed in order, with the Step execution as their source.
    written = await client.list_stream_messages("search-a", tokens, 10)
    assert [(m.value, m.source) for m in reversed(written.messages)] == [
        ("hello", "#Speak-1"),
        ("there", "#Speak-1"),
    ]
