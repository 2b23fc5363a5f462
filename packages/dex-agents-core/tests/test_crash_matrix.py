"""The crash-injection matrix: each session Step killed while it runs, Worker or engine.

Each case parks one Step at a FileGate, kills the Worker (SIGKILL) or the engine (SIGKILL,
then a restart on the same data), lets the session go on, and checks from the invocation
log and the snapshot that no message was lost and no single-attempt write ran twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from core_harness import Harness

from dex_agents import AgentSnapshot, MessageRole
from dex_agents.testing import FileGate, InvocationLog


@dataclass(frozen=True)
class Case:
    step: str
    gate: str
    first_message: str
    second_message: str | None = None


CASES = [
    # StartAgentSession stores the initial message through build_user_message.
    Case("StartAgentSession", "user-message", "gated hello"),
    # AwaitUserMessage stores a queued message the same way.
    Case("AwaitUserMessage", "user-message", "", "gated hello"),
    Case("RunModel", "model", "gate model"),
    Case("CallTool", "tool", "read"),
    Case("CallSingleAttemptTool", "tool", "charge"),
]


def _user_texts(snapshot: AgentSnapshot) -> list[str]:
    return [m.text or "" for m in snapshot.messages if m.role is MessageRole.USER]


async def _crash(harness: Harness, *, engine: bool, gate: FileGate | None = None) -> None:
    """Kill the engine or the Worker, open the gate, and bring the killed process back.

    The gate opens before a replacement Worker starts: a handler parked in synchronous code
    blocks its Worker's event loop, which would keep the replacement from registering.
    """
    if engine:
        await harness.stack.engine.restart()
        if gate is not None:
            gate.release()
    else:
        harness.stack.workers[-1].kill()
        if gate is not None:
            gate.release()
        await harness.stack.start_worker()


@pytest.mark.session_env(CORE_TEST_USER_MESSAGE_GATE="gated")
@pytest.mark.parametrize("engine", [False, True], ids=["worker-killed", "engine-killed"])
@pytest.mark.parametrize("case", CASES, ids=[case.step for case in CASES])
async def test_a_killed_step_loses_nothing_and_writes_once(
    harness: Harness, case: Case, *, engine: bool
) -> None:
    await harness.stack.start_worker()
    gate = FileGate(harness.state, case.gate)
    await harness.sessions.start_session("s", case.first_message)
    if case.second_message is not None:
        await harness.idle("s", turns=0)
        assert await harness.sessions.send_user_message("s", case.second_message)
    await gate.wait_until_reached(timeout=30)
    await _crash(harness, engine=engine, gate=gate)
    snapshot = await harness.idle("s", turns=1)
    texts = _user_texts(snapshot)
    expected = case.second_message or case.first_message
    assert texts.count(expected) == 1, texts
    assert snapshot.messages[-1].role is MessageRole.ASSISTANT
    log = InvocationLog(harness.state / "invocations.jsonl")
    assert log.count("tool", "charge") <= 1
    # The session takes the next message as usual.
    assert await harness.sessions.send_user_message("s", "after")
    snapshot = await harness.idle("s", turns=2)
    assert _user_texts(snapshot)[-1] == "after"


@pytest.mark.parametrize("engine", [False, True], ids=["worker-killed", "engine-killed"])
async def test_waiting_steps_survive_a_crash(harness: Harness, *, engine: bool) -> None:
    await harness.stack.start_worker()
    await harness.sessions.start_session("s", "approve")
    await harness.snapshot_until("s", lambda s: s.pending_interrupts, "the approval")
    await _crash(harness, engine=engine)
    assert await harness.sessions.resolve_interrupt("s", "a1", approved=True)
    snapshot = await harness.idle("s")
    assert InvocationLog(harness.state / "invocations.jsonl").count("tool", "refund") == 1
    assert snapshot.messages[-1].text == "done"


@pytest.mark.session_env(CORE_TEST_USER_MESSAGE_GATE="[Dex] The previous turn failed")
@pytest.mark.parametrize("engine", [False, True], ids=["worker-killed", "engine-killed"])
async def test_record_turn_failure_killed_while_it_stores_the_note(
    harness: Harness, *, engine: bool
) -> None:
    await harness.stack.start_worker()
    gate = FileGate(harness.state, "user-message")
    await harness.sessions.start_session("s", "model fails")
    await gate.wait_until_reached(timeout=60)
    await _crash(harness, engine=engine, gate=gate)
    snapshot = await harness.idle("s")
    notes = [t for t in _user_texts(snapshot) if t.startswith("[Dex] The previous turn failed")]
    assert len(notes) == 1
    assert snapshot.state is not None
    assert snapshot.state.last_turn_error == "the model provider is down"
    assert InvocationLog(harness.state / "invocations.jsonl").count("tool", "save") == 1


@dataclass(frozen=True)
class Parked:
    step: str
    message: str
    tool_call_id: str
    result: str
    resolve: str | None = None


PARKED = [
    Parked("ResumeTurn", "plain tool", "pt1", "lookup ok []"),
    Parked("AwaitToolApproval", "approve", "a1", "refund ok []", resolve="approve"),
    # Parks in wait_for, before the question can be answered; it is answered after the crash.
    Parked("AwaitQuestionAnswer", "ask", "q1", '{"status":"answered","answer":"S"}', "answer"),
    Parked("AwaitTimer", "wait", "t1", '"status":"completed"'),
    Parked("RecordToolFailure", "broken read", "br1", "The tool call failed: broken_read"),
    Parked("RecordToolOutcomeUnknown", "broken write", "bw1", "outcome is unknown"),
]


@pytest.mark.parametrize("engine", [False, True], ids=["worker-killed", "engine-killed"])
@pytest.mark.parametrize("case", PARKED, ids=[case.step for case in PARKED])
async def test_a_step_parked_inside_survives_a_crash(
    harness: Harness, case: Parked, *, engine: bool
) -> None:
    await harness.stack.start_worker(env={"CORE_TEST_PARK_STEP": case.step})
    gate = FileGate(harness.state, "step")
    await harness.sessions.start_session("s", case.message)
    if case.resolve == "approve":
        await harness.snapshot_until("s", lambda s: s.pending_interrupts, "the interrupt")
        assert await harness.sessions.resolve_interrupt("s", case.tool_call_id, approved=True)
    await gate.wait_until_reached(timeout=45)
    await _crash(harness, engine=engine, gate=gate)
    if case.resolve == "answer":
        await harness.snapshot_until("s", lambda s: s.pending_interrupts, "the question")
        assert await harness.sessions.answer_question("s", case.tool_call_id, "S")
    snapshot = await harness.idle("s")
    results = [
        m.text or ""
        for m in snapshot.messages
        if m.role is MessageRole.TOOL and m.tool_call_id == case.tool_call_id
    ]
    assert len(results) == 1
    assert case.result in results[0]
    log = InvocationLog(harness.state / "invocations.jsonl")
    assert log.count("tool", "broken_write") <= 1
    assert log.count("tool", "refund") <= 1
