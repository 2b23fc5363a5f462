"""Every row of the effects table under a Worker SIGKILL at the moment the tool runs."""

from __future__ import annotations

import pytest
from core_harness import Harness

from dex_agents import (
    TOOL_CALL_NOT_RUN_ERROR_PREFIX,
    AgentSnapshot,
    InterruptKind,
    MessageRole,
    ToolCallStatus,
)
from dex_agents.testing import EXECUTE_FAILED_EVENT, FileGate, InvocationLog, wait_until


def _log(harness: Harness) -> InvocationLog:
    return InvocationLog(harness.state / "invocations.jsonl")


def _tool_result(snapshot: AgentSnapshot, tool_call_id: str) -> str:
    return next(
        m.text or ""
        for m in snapshot.messages
        if m.role is MessageRole.TOOL and m.tool_call_id == tool_call_id
    )


async def _kill_worker_inside_tool(harness: Harness, message: str) -> FileGate:
    """Starts session ``s`` with ``message`` and SIGKILLs its Worker while the tool runs."""
    worker = await harness.stack.start_worker()
    gate = FileGate(harness.state, "tool")
    await harness.sessions.start_session("s", message)
    await gate.wait_until_reached(timeout=30)
    worker.kill()
    return gate


@pytest.mark.parametrize(
    ("message", "tool", "call_id"),
    [("read", "lookup", "r1"), ("idempotent", "save", "w1")],
)
async def test_retried_effects_run_again_with_the_same_key(
    harness: Harness, message: str, tool: str, call_id: str
) -> None:
    gate = await _kill_worker_inside_tool(harness, message)
    gate.reset()
    await harness.stack.start_worker()
    await gate.wait_until_reached(timeout=30)
    gate.release()
    snapshot = await harness.idle("s")
    calls = _log(harness).entries("tool", tool)
    assert [c["attempt"] for c in calls] == [1, 2]
    assert {c["key"] for c in calls} == {f"s/turn-1/{call_id}"}
    assert _tool_result(snapshot, call_id) == f"{tool} ok []"
    assert snapshot.state is not None
    assert snapshot.state.last_turn_error is None


@pytest.mark.parametrize(
    ("message", "tool", "call_id"), [("charge", "charge", "n1"), ("mystery", "mystery", "u1")]
)
async def test_single_attempt_effects_record_outcome_unknown_and_never_run_twice(
    harness: Harness, message: str, tool: str, call_id: str
) -> None:
    gate = await _kill_worker_inside_tool(harness, message)
    gate.release()
    await harness.stack.start_worker()
    snapshot = await harness.idle("s")
    assert _log(harness).count("tool", tool) == 1
    assert "outcome is unknown" in _tool_result(snapshot, call_id)


async def test_approvals_survive_a_worker_restart_and_run_once(harness: Harness) -> None:
    worker = await harness.stack.start_worker()
    await harness.sessions.start_session("s", "approve")
    interrupt = await harness.snapshot_until(
        "s", lambda s: next(iter(s.pending_interrupts), None), "a pending approval"
    )
    worker.kill()
    await harness.stack.start_worker()
    assert interrupt.kind is InterruptKind.APPROVAL  # type: ignore[attr-defined]
    assert await harness.sessions.resolve_interrupt("s", "a1", approved=True)
    assert not await harness.sessions.resolve_interrupt("s", "a1", approved=True)
    snapshot = await harness.idle("s")
    assert _log(harness).count("tool", "refund") == 1
    assert _tool_result(snapshot, "a1") == "refund ok []"


async def test_questions_and_durable_waits_survive_a_worker_restart(harness: Harness) -> None:
    worker = await harness.stack.start_worker()
    await harness.sessions.start_session("s", "ask")
    await harness.snapshot_until("s", lambda s: s.pending_interrupts, "the question")
    worker.kill()
    await harness.stack.start_worker()
    assert not await harness.sessions.answer_question("s", "q1", "XL")
    assert await harness.sessions.answer_question("s", "q1", "M")
    assert not await harness.sessions.answer_question("s", "q1", "S")
    snapshot = await harness.idle("s")
    assert _tool_result(snapshot, "q1") == '{"status":"answered","answer":"M"}'
    worker = harness.stack.workers[-1]
    assert await harness.sessions.send_user_message("s", "wait")
    await harness.snapshot_until(
        "s",
        lambda s: any(c.status is ToolCallStatus.WAITING_FOR_TIMER for c in s.tool_calls),
        "the durable wait",
    )
    worker.kill()
    await harness.stack.start_worker()
    snapshot = await harness.idle("s", turns=2)
    assert '"waited_seconds":2' in _tool_result(snapshot, "t1")


@pytest.mark.session_env(CORE_TEST_INTERRUPT_DEADLINE="2")
async def test_interrupt_deadlines_expire(harness: Harness) -> None:
    await harness.stack.start_worker()
    await harness.sessions.start_session("s", "approve")
    snapshot = await harness.idle("s")
    assert "approval deadline passed" in _tool_result(snapshot, "a1")
    assert not await harness.sessions.resolve_interrupt("s", "a1", approved=True)
    assert _log(harness).count("tool", "refund") == 0


async def test_parallel_tool_calls_overlap(harness: Harness) -> None:
    await harness.stack.start_worker()
    left, right = FileGate(harness.state, "left"), FileGate(harness.state, "right")
    await harness.sessions.start_session("s", "parallel")
    await left.wait_until_reached(timeout=30)
    await right.wait_until_reached(timeout=30)
    left.release()
    right.release()
    snapshot = await harness.idle("s")
    assert _tool_result(snapshot, "p1") == "lookup ok []"
    assert _tool_result(snapshot, "p2") == "save ok []"


@pytest.mark.engine_args("--dispatch-wait", "2")
async def test_a_tool_step_that_never_reached_a_worker_is_safe_to_call_again(
    harness: Harness,
) -> None:
    # Three task slots, one kept for RPCs: the two gated reads hold both Step slots, so the
    # single-attempt charge is never handed to a Worker before its dispatch wait ends.
    await harness.stack.start_worker(max_concurrent_tasks=3)
    left, right = FileGate(harness.state, "left"), FileGate(harness.state, "right")
    await harness.sessions.start_session("s", "starved")
    await left.wait_until_reached(timeout=30)
    await right.wait_until_reached(timeout=30)

    async def charge_failed() -> bool:
        history = await harness.stack.read_step_history("s")
        return any(
            e.event_type == EXECUTE_FAILED_EVENT and e.step_type == "CallSingleAttemptTool"
            for e in history
        )

    await wait_until("the charge to fail unstarted", charge_failed, timeout=30)
    left.release()
    right.release()
    snapshot = await harness.idle("s")
    assert _log(harness).count("tool", "charge") == 0
    assert _tool_result(snapshot, "s3").startswith(
        f"The tool call failed: {TOOL_CALL_NOT_RUN_ERROR_PREFIX}: "
    )
