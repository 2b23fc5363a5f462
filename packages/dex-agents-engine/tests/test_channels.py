"""Channels and ChannelMaps: bounds, message ids, FIFO consumption, deletion."""

from __future__ import annotations

from datetime import timedelta

import dex
import pytest
from dex import AsyncContext, StepDecision
from engine_harness import Stack

queue = dex.Channel("queue", str)
tasks = dex.ChannelMap("tasks", str)


class Take(dex.Step[str]):
    """Waits with the bound named by its input, then reports what it consumed."""

    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        condition = {
            "one": queue.for_one(),
            "three": queue.for_n(3),
            "least2": queue.at_least(2),
            "most2": queue.at_most(2),
            "range": queue.for_range(at_least=1, at_most=2),
            "map": tasks.for_one("a b"),
        }[input]
        return dex.Wait.until(condition)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        source = tasks.results(context, "a b") if input == "map" else queue.results(context)
        return dex.graceful_complete(",".join(source))


class Channels(dex.Flow[str]):
    def get_steps(self) -> dex.StepList[str]:
        return dex.StepList.start_step(Take())

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        return dex.PersistenceSchema.of(queue, tasks)

    @dex.rpc()
    def put(self, context: dex.Context, items: list[str]) -> None:
        for item in items:
            queue.publish(context, item)

    @dex.rpc()
    def put_task(self, context: dex.Context, item: str) -> None:
        tasks.publish(context, "a b", item)

    @dex.rpc(load_channels=(queue,))
    def pending(self, context: dex.Context) -> dex.RPCResult[list[str]]:
        return dex.RPCResult([m.message_id for m in queue.pending_messages(context)])

    @dex.rpc(load_channels=(queue,), is_transactional=True)
    def drop(self, context: dex.Context, message_id: str) -> None:
        queue.delete(context, message_id)

    @dex.rpc()
    def size(self, context: dex.Context) -> dex.RPCResult[int]:
        return dex.RPCResult(queue.size(context))


FLOW = Channels()


@pytest.mark.parametrize(
    ("bound", "published", "expected"),
    [
        ("one", ["a", "b"], "a"),
        ("three", ["a", "b", "c", "d"], "a,b,c"),
        ("least2", ["a", "b", "c"], "a,b,c"),
        ("range", ["a", "b", "c"], "a,b"),
        ("most2", [], ""),
    ],
)
async def test_channel_bounds(
    stack: Stack, bound: str, published: list[str], expected: str
) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, bound, bound)
    if published:
        await client.invoke_rpc(FLOW.put, bound, published)
    result = await client.wait_for_flow(bound, timedelta(seconds=10))
    assert result.single_output(str) == expected


async def test_channel_map_instances_are_independent_queues(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "map", "map")
    await client.invoke_rpc(FLOW.put, "map", ["not for the map"])
    await client.invoke_rpc(FLOW.put_task, "map", "task one")
    result = await client.wait_for_flow("map", timedelta(seconds=10))
    assert result.single_output(str) == "task one"
    assert await client.invoke_rpc(FLOW.size, "map") == 1


async def test_messages_have_ids_and_a_consumed_one_cannot_be_deleted(stack: Stack) -> None:
    await stack.worker([FLOW])
    client = stack.client([FLOW])
    await client.start_flow(FLOW, "ids", "three")
    await client.invoke_rpc(FLOW.put, "ids", ["a", "b"])
    ids = await client.invoke_rpc(FLOW.pending, "ids")
    assert len(ids) == 2
    assert len(set(ids)) == 2
    await client.invoke_rpc(FLOW.drop, "ids", ids[0])
    assert await client.invoke_rpc(FLOW.pending, "ids") == ids[1:]
    with pytest.raises(dex.ChannelMessageNotFoundError):
        await client.invoke_rpc(FLOW.drop, "ids", ids[0])
    await client.invoke_rpc(FLOW.put, "ids", ["c", "d"])
    result = await client.wait_for_flow("ids", timedelta(seconds=10))
    assert result.single_output(str) == "b,c,d"
