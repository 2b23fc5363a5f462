"""Turns end to end: storage, events, failures, questions from tools, and bad input."""

from __future__ import annotations

import dex
import pytest
from core_harness import Harness

from dex_agents import (
    AgentEvent,
    AgentEventType,
    AgentSnapshot,
    MessageRole,
)
from dex_agents._wire import loads
from dex_agents.testing import FileGate, InvocationLog


def _tool_result(snapshot: AgentSnapshot, tool_call_id: str) -> str:
    return next(
        m.text or ""
        for m in snapshot.messages
        if m.role is MessageRole.TOOL and m.tool_call_id == tool_call_id
    )


async def test_messages_roll_into_chunks_and_page_back(harness: Harness) -> None:
    await harness.stack.start_worker()
    await harness.sessions.start_session("s", "one")
    for turn, text in enumerate(["two", "three", "four"], start=2):
        await harness.idle("s", turns=turn - 1)
        assert await harness.sessions.send_user_message("s", text)
    snapshot = await harness.idle("s", turns=4)
    # Window of 4 and chunks of 2: eight messages, every one stored exactly once.
    assert [m.sequence for m in snapshot.messages] == list(range(1, 9))
    assert [m.text for m in snapshot.messages if m.role is MessageRole.USER] == [
        "one",
        "two",
        "three",
        "four",
    ]
    page = await harness.sessions.list_agent_messages("s", limit=3)
    assert [m.sequence for m in page.messages] == [6, 7, 8]
    older = await harness.sessions.list_agent_messages(
        "s", before_sequence=page.next_before_sequence, limit=200
    )
    assert [m.sequence for m in older.messages] == [1, 2, 3, 4, 5]
    assert older.next_before_sequence is None
    assert snapshot.usage.model_calls == 4


async def test_events_carry_turn_step_and_attempt(harness: Harness) -> None:
    await harness.stack.start_worker()
    await harness.sessions.start_session("s", "hello")
    await harness.idle("s")
    page = await harness.stack.client.list_stream_messages("s", harness.flow.events, 100)
    events = [loads(AgentEvent, m.value) for m in reversed(page.messages)]
    kinds = [e.type for e in events]
    assert kinds[0] is AgentEventType.TURN_STARTED
    assert AgentEventType.TEXT_DELTA in kinds
    assert kinds[-1] is AgentEventType.TURN_COMPLETED
    delta = next(e for e in events if e.type is AgentEventType.TEXT_DELTA)
    assert (delta.turn_id, delta.attempt, delta.data) == ("turn-1", 1, {"text": "echo: hello"})
    assert delta.step_execution_id.startswith("RunModel-")


async def test_a_model_call_crash_repeats_only_that_call(harness: Harness) -> None:
    worker = await harness.stack.start_worker()
    tool_gate, model_gate = FileGate(harness.state, "tool"), FileGate(harness.state, "model")
    await harness.sessions.start_session("s", "slow model")
    await tool_gate.wait_until_reached(timeout=30)
    tool_gate.release()
    # The second model call (after the tool) parks; the Worker dies inside it.
    await model_gate.wait_until_reached(timeout=30)
    worker.kill()
    model_gate.release()
    await harness.stack.start_worker()
    snapshot = await harness.idle("s")
    log = InvocationLog(harness.state / "invocations.jsonl")
    # The Worker died before the call sent any frame, so the engine handed the same attempt
    # to the replacement: only the interrupted model call ran again.
    assert [e["index"] for e in log.entries("model")] == [0, 1, 1]
    assert log.count("tool", "lookup") == 1
    assert _tool_result(snapshot, "g1") == "lookup ok []"
    assert snapshot.messages[-1].text == "done"


async def test_a_failed_turn_records_its_error_and_a_note_of_what_ran(harness: Harness) -> None:
    await harness.stack.start_worker()
    await harness.sessions.start_session("s", "model fails")
    snapshot = await harness.idle("s")
    assert snapshot.state is not None
    assert snapshot.state.last_turn_error == "the model provider is down"
    log = InvocationLog(harness.state / "invocations.jsonl")
    assert [e["attempt"] for e in log.entries("model")] == [1, 1, 2, 3]
    note = snapshot.messages[-1]
    assert note.role is MessageRole.USER
    assert note.text == (
        "[Dex] The previous turn failed after these tool calls ran:\n"
        '- save {"id": 3} -> succeeded: save ok []\n'
        "Do not repeat these tool calls unless the user asks again."
    )
    assert snapshot.tool_calls == ()
    # The next turn that completes clears the error.
    assert await harness.sessions.send_user_message("s", "hello")
    snapshot = await harness.idle("s", turns=2)
    assert snapshot.state is not None
    assert snapshot.state.last_turn_error is None


async def test_tool_questions_and_visible_failures(harness: Harness) -> None:
    await harness.stack.start_worker()
    await harness.sessions.start_session("s", "tool question")
    interrupt = await harness.snapshot_until(
        "s", lambda s: next(iter(s.pending_interrupts), None), "the tool's question"
    )
    assert interrupt.interrupt_id == "i1-input-1"  # type: ignore[attr-defined]
    assert not await harness.sessions.answer_question("s", "i1-input-1", "green")
    assert await harness.sessions.answer_question("s", "i1-input-1", "blue")
    snapshot = await harness.idle("s")
    assert _tool_result(snapshot, "i1") == "asker ok ['blue']"
    assert await harness.sessions.send_user_message("s", "visible failure")
    snapshot = await harness.idle("s", turns=2)
    assert _tool_result(snapshot, "f1") == "The tool call failed: the order does not exist"


async def test_a_runner_sets_a_tool_steps_own_timeout_and_retries(harness: Harness) -> None:
    await harness.stack.start_worker()
    log = InvocationLog(harness.state / "invocations.jsonl")
    await harness.sessions.start_session("s", "brittle read")
    snapshot = await harness.idle("s")
    assert [c["attempt"] for c in log.entries("tool", "brittle_read")] == [1, 2]
    assert _tool_result(snapshot, "bb1") == "The tool call failed: brittle_read is broken"
    assert await harness.sessions.send_user_message("s", "hanging read")
    snapshot = await harness.idle("s", turns=2)
    assert log.count("tool", "hanging_read") == 1
    assert _tool_result(snapshot, "h1").startswith("The tool call failed")
    assert "timeout after 1 seconds" in _tool_result(snapshot, "h1")
    assert await harness.sessions.send_user_message("s", "broken write")
    snapshot = await harness.idle("s", turns=3)
    assert log.count("tool", "broken_write") == 1
    assert "outcome is unknown" in _tool_result(snapshot, "bw1")


async def test_bad_input_is_refused_and_changes_nothing(harness: Harness) -> None:
    await harness.stack.start_worker()
    with pytest.raises(ValueError, match="session ids"):
        await harness.sessions.start_session("a/b", "hi")
    await harness.sessions.start_session("s", "")
    snapshot = await harness.snapshot_until(
        "s", lambda s: s if s.state is not None else None, "the session to start"
    )
    assert isinstance(snapshot, AgentSnapshot)
    assert snapshot.state is not None
    assert snapshot.state.turn_count == 0
    assert not await harness.sessions.send_user_message("s", "   ")
    assert not await harness.sessions.resolve_interrupt("s", "nope", approved=True)
    assert not await harness.sessions.answer_question("s", "nope", "x")
    assert not await harness.sessions.answer_question("s", "nope", "  ")
    # A runner that returns a tool call id with '/' fails its turn at once, without retries.
    assert await harness.sessions.send_user_message("s", "bad ids")
    snapshot = await harness.idle("s")
    assert snapshot.state is not None
    assert "must be non-empty and contain no '/'" in (snapshot.state.last_turn_error or "")
    log = InvocationLog(harness.state / "invocations.jsonl")
    assert log.count("model") == 1
    # Invalid built-in arguments fail the call at once; the model sees why.
    assert await harness.sessions.send_user_message("s", "bad ask")
    snapshot = await harness.idle("s", turns=2)
    assert "invalid ask_user arguments: question must be a non-blank string" in _tool_result(
        snapshot, "b1"
    )
    assert snapshot.state is not None
    assert snapshot.state.last_turn_error is None
    with pytest.raises(dex.WorkerInvocationError):
        await harness.stack.client.invoke_rpc(harness.flow.send_user_message, "s", "not json")
