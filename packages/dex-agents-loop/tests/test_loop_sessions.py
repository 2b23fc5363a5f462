"""The built-in loop end to end on the real engine, with the scripted model."""

from __future__ import annotations

import json

from loop_harness import LoopHarness, last_answer, tool_results

from dex_agents import InterruptKind, MessageRole
from dex_agents.builtin_loop import model_call_limit_text
from dex_agents.testing import FileGate, wait_for_agent_snapshot


async def test_a_tool_turn_stores_every_item_and_pairs_each_call_with_its_result(
    loop: LoopHarness,
) -> None:
    snapshot = await loop.turn("s", "weather in Paris", 1)
    roles = [m.role for m in snapshot.messages]
    assert roles == [
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
        MessageRole.ASSISTANT,
    ]
    assert tool_results(snapshot) == ["sunny in Paris"]
    assert last_answer(snapshot) == "sunny in Paris"
    snapshot = await loop.turn("s", "two tools", 2)
    assert tool_results(snapshot)[-2:] == ["sunny in Oslo", "sunny in Rome"]
    assert last_answer(snapshot) == "sunny in Oslo; sunny in Rome"


async def test_approvals_gate_non_idempotent_writes(loop: LoopHarness) -> None:
    await loop.sessions.start_session("s", "refund 7")
    pending = await wait_for_agent_snapshot(
        loop.sessions, "s", lambda s: next(iter(s.pending_interrupts), None), description="approval"
    )
    assert pending.kind is InterruptKind.APPROVAL
    assert json.loads(pending.arguments or "{}") == {"order_id": 7}
    assert loop.log.count("tool", "refund") == 0
    assert await loop.sessions.resolve_interrupt("s", pending.interrupt_id, approved=True)
    snapshot = await loop.idle("s", 1)
    [call] = loop.log.entries("tool", "refund")
    assert call["key"] == f"s/turn-1/{pending.tool_call_id}"
    assert json.loads(tool_results(snapshot)[0]) == {"refunded": 7, "key": call["key"]}


async def test_the_model_call_limit_ends_a_turn_that_never_stops_calling_tools(
    loop: LoopHarness,
) -> None:
    snapshot = await loop.turn("s", "loop forever", 1)
    assert loop.log.count("model") == 4
    assert loop.log.count("tool", "lookup_weather") == 3
    assert tool_results(snapshot)[-1] == model_call_limit_text(3)


async def test_continuations_store_the_message_and_call_the_model_again(
    loop: LoopHarness,
) -> None:
    snapshot = await loop.turn("s", "decide", 1)
    texts = [(m.role, m.text) for m in snapshot.messages]
    assert texts[-3:] == [
        (MessageRole.ASSISTANT, "I think so."),
        (MessageRole.USER, "Finish with a line that starts with DECISION:."),
        (MessageRole.ASSISTANT, "DECISION: approve"),
    ]


async def test_bad_tool_calls_reach_the_model_as_errors(loop: LoopHarness) -> None:
    snapshot = await loop.turn("s", "garbage", 1)
    assert tool_results(snapshot) == [
        "The tool call failed: invalid arguments for lookup_weather: arguments are not valid JSON"
    ]
    snapshot = await loop.turn("s", "unknown tool", 2)
    assert tool_results(snapshot)[-1] == "The tool call failed: unknown tool teleport"


async def test_built_in_questions_work_under_the_loop(loop: LoopHarness) -> None:
    await loop.sessions.start_session("s", "ask me")
    question = await wait_for_agent_snapshot(
        loop.sessions, "s", lambda s: next(iter(s.pending_interrupts), None), description="question"
    )
    assert question.kind is InterruptKind.QUESTION
    assert await loop.sessions.answer_question("s", question.interrupt_id, "Lima")
    snapshot = await loop.idle("s", 1)
    assert json.loads(tool_results(snapshot)[0]) == {"status": "answered", "answer": "Lima"}


async def test_a_crash_during_run_model_repeats_only_that_call(loop: LoopHarness) -> None:
    await loop.sessions.start_session("s", "crash model")
    pending = await wait_for_agent_snapshot(
        loop.sessions, "s", lambda s: next(iter(s.pending_interrupts), None), description="approval"
    )
    assert await loop.sessions.resolve_interrupt("s", pending.interrupt_id, approved=True)
    gate = FileGate(loop.state, "model")
    await gate.wait_until_reached(timeout=30)
    loop.stack.workers[-1].kill()
    gate.release()
    await loop.stack.start_worker()
    snapshot = await loop.idle("s", 1)
    models = loop.log.entries("model")
    assert [entry["results"] for entry in models] == [0, 1, 1]
    assert loop.log.count("tool", "refund") == 1
    assert "refunded" in last_answer(snapshot)
