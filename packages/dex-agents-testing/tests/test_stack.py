"""AgentTestStack against a real engine process, the real SDK and Worker child processes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dex
import kit_flows
import pytest
from kit_helpers import make_stack, process_exists

import dex_agents
from dex_agents.testing import (
    EXECUTE_COMPLETED_EVENT,
    AgentTestStack,
    ChildProcessExitedError,
    FileGate,
    StepHistoryEntry,
)


class _BodyFailedError(Exception):
    pass


async def test_leaving_the_stack_ends_every_process_even_when_the_body_raises(
    tmp_path: Path, state_dir: Path
) -> None:
    pids: list[int] = []
    stack = make_stack(tmp_path, state_dir)

    async def failing_test_body() -> None:
        async with stack:
            first = await stack.start_worker()
            second = await stack.start_worker(max_concurrent_tasks=2)
            assert stack.engine.pid is not None
            pids.extend([stack.engine.pid, first.pid, second.pid])
            assert all(process_exists(pid) for pid in pids)
            assert stack.workers == (first, second)
            raise _BodyFailedError

    with pytest.raises(_BodyFailedError):
        await failing_test_body()
    assert not any(process_exists(pid) for pid in pids)
    assert not stack.engine.is_alive
    assert [worker.returncode for worker in stack.workers] == [-9, -9]
    with pytest.raises(RuntimeError, match="enter the AgentTestStack"):
        _ = stack.client


async def test_a_clean_exit_ends_every_process_too(tmp_path: Path, state_dir: Path) -> None:
    async with make_stack(tmp_path, state_dir) as stack:
        worker = await stack.start_worker()
        engine_pid = stack.engine.pid
        assert engine_pid is not None
        assert await worker.terminate() == 0
    assert not process_exists(worker.pid)
    assert not process_exists(engine_pid)


async def test_a_worker_killed_at_a_gate_is_replaced_and_the_flow_completes(
    tmp_path: Path, state_dir: Path
) -> None:
    gate = FileGate(state_dir, "kill-here")
    async with make_stack(tmp_path, state_dir) as stack:
        flow = stack.flows[0]
        worker = await stack.start_worker()
        await stack.client.start_flow(flow, "killed", "kill-here")
        await gate.wait_until_reached(timeout=20)
        worker.kill()
        assert not worker.is_alive
        replacement = await stack.start_worker()
        # Gated never sent a frame, so the engine hands the same attempt to the new Worker.
        await gate.wait_until_reached(timeout=20, count=2)
        gate.release()
        result = await stack.client.wait_for_flow("killed", timedelta(seconds=20))
        assert result.status is dex.FlowStatus.COMPLETED
        assert result.single_output(str) == "done:kill-here"

    gated = kit_flows.calls(state_dir).entries("step", "Gated")
    assert [entry["attempt"] for entry in gated] == [1, 1]
    assert [entry["pid"] for entry in gated] == [worker.pid, replacement.pid]
    assert kit_flows.calls(state_dir).count("step", "Finish") == 1


async def test_two_gates_reached_at_once_prove_two_steps_run_in_parallel(
    tmp_path: Path, state_dir: Path
) -> None:
    left, right = FileGate(state_dir, "left"), FileGate(state_dir, "right")
    async with make_stack(tmp_path, state_dir) as stack:
        flow = stack.flows[1]
        await stack.start_worker()
        await stack.client.start_flow(flow, "fan", "left,right")
        await left.wait_until_reached(timeout=20)
        await right.wait_until_reached(timeout=20)
        # Both handlers are parked at once: neither was released yet.
        assert not left.released
        assert not right.released
        left.release()
        right.release()
        result = await stack.client.wait_for_flow("fan", timedelta(seconds=20))
        assert sorted(c.decode(str) for c in result.completions) == ["left", "right"]


async def test_step_history_lists_the_completed_steps_in_order_with_final_attempts(
    tmp_path: Path, state_dir: Path
) -> None:
    FileGate(state_dir, "flaky-open").release()
    async with make_stack(tmp_path, state_dir) as stack:
        await stack.start_worker()
        await stack.client.start_flow(stack.flows[0], "history", "flaky-open")
        await stack.client.wait_for_flow("history", timedelta(seconds=20))
        history = await stack.read_step_history("history")

    assert history == [
        StepHistoryEntry(
            event_type=EXECUTE_COMPLETED_EVENT,
            step_type=step_type,
            step_execution_id=f"{step_type}-1",
            final_attempt=attempt,
        )
        for step_type, attempt in (("Prepare", 1), ("Flaky", 2), ("Gated", 1), ("Finish", 1))
    ]
    assert kit_flows.calls(state_dir).count("step", "Flaky") == 2


async def test_an_engine_restart_keeps_the_flow(tmp_path: Path, state_dir: Path) -> None:
    gate = FileGate(state_dir, "restart")
    async with make_stack(tmp_path, state_dir) as stack:
        address = stack.server_address
        await stack.start_worker()
        await stack.client.start_flow(stack.flows[0], "survivor", "restart")
        await gate.wait_until_reached(timeout=20)
        old_pid = stack.engine.pid
        assert await stack.engine.restart() == address
        assert stack.engine.pid != old_pid
        assert stack.server_address == address
        gate.release()
        # The attempt that ran while the engine died counts as failed and runs again on the
        # same Worker, which reconnected by itself.
        result = await stack.client.wait_for_flow("survivor", timedelta(seconds=30))
        assert result.status is dex.FlowStatus.COMPLETED
        history = await stack.read_step_history("survivor")

    assert [entry.step_type for entry in history] == ["Prepare", "Flaky", "Gated", "Finish"]
    assert history[2].final_attempt == 2
    assert [entry["attempt"] for entry in kit_flows.calls(state_dir).entries("step", "Gated")] == [
        1,
        2,
    ]


async def test_the_engine_stops_cleanly_on_terminate(tmp_path: Path, state_dir: Path) -> None:
    async with make_stack(tmp_path, state_dir) as stack:
        assert await stack.engine.terminate() == 0
        assert not stack.engine.is_alive


async def test_a_worker_that_cannot_start_fails_with_its_output(tmp_path: Path) -> None:
    async with AgentTestStack(
        tmp_path, kit_flows.build_flows(), "kit_no_such_worker_module"
    ) as stack:
        with pytest.raises(ChildProcessExitedError, match="No module named kit_no_such_worker"):
            await stack.start_worker()
        [worker] = stack.workers
        assert worker.returncode == 1


async def test_sessions_wraps_the_stack_client_in_an_agent_session_client(
    tmp_path: Path, state_dir: Path
) -> None:
    async with make_stack(tmp_path, state_dir) as stack:
        flow = stack.flows[0]
        sessions = stack.sessions(flow)  # type: ignore[arg-type]  # stores the flow, no more
        assert isinstance(sessions, dex_agents.AgentSessionClient)
        assert sessions.client is stack.client
        assert sessions.flow is flow
