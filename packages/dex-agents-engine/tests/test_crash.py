"""SIGKILL of a Worker or of the engine at a Step boundary loses nothing."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import crash_flows
import dex
import grpc
from crash_flows import read_log
from dex.dexpb import dex_pb2, dex_pb2_grpc
from engine_harness import EngineProcess, Stack, WorkerProcess, wait_until


def _state(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    state.mkdir(exist_ok=True)
    return state


async def test_worker_killed_before_any_frame_returns_the_task_with_the_same_attempt(
    stack: Stack, worker_processes: list[WorkerProcess], tmp_path: Path
) -> None:
    state = _state(tmp_path)
    address = stack.engine.address
    worker_processes.append(WorkerProcess(address, "crash_flows:FLOWS", state))
    client = stack.client(crash_flows.FLOWS)
    await client.start_flow(crash_flows.FLOWS[0], "silent", "x")
    await wait_until("the gate", (state / "silent.reached").exists)
    worker_processes[0].kill()
    (state / "silent.reached").unlink()
    worker_processes.append(WorkerProcess(address, "crash_flows:FLOWS", state))
    await wait_until("the gate again", (state / "silent.reached").exists)
    (state / "silent.release").write_text("")
    result = await client.wait_for_flow("silent", timedelta(seconds=20))
    assert result.status is dex.FlowStatus.COMPLETED
    assert read_log(state) == ["start 1", "silent 1", "silent 1", "finish 1"]


async def test_worker_killed_after_a_heartbeat_fails_the_attempt_as_not_completed(
    stack: Stack, worker_processes: list[WorkerProcess], tmp_path: Path
) -> None:
    state = _state(tmp_path)
    address = stack.engine.address
    worker_processes.append(WorkerProcess(address, "crash_flows:FLOWS", state))
    client = stack.client(crash_flows.FLOWS)
    await client.start_flow(crash_flows.FLOWS[1], "write", "x")
    await wait_until("the gate", (state / "write.reached").exists)
    await _wait_heartbeat(stack, "write")
    worker_processes[0].kill()
    worker_processes.append(WorkerProcess(address, "crash_flows:FLOWS", state))
    result = await client.wait_for_flow("write", timedelta(seconds=20))
    assert result.status is dex.FlowStatus.COMPLETED
    assert read_log(state) == ["write 1", "recover WorkerDisconnected"]


async def _wait_heartbeat(stack: Stack, flow_id: str) -> None:
    """Wait until the engine recorded the handler's heartbeat (its first frame)."""
    async with grpc.aio.insecure_channel(stack.engine.address) as channel:
        service = dex_pb2_grpc.FlowServiceStub(channel)

        async def has_frame() -> bool:
            state = await service.GetFlowState(dex_pb2.GetFlowStateRequest(flow_id=flow_id))
            return any(
                e.step_type == "Write" and e.phase == dex_pb2.ACTIVE_STEP_PHASE_ACTIVE
                for e in state.active_step_executions
            )

        await wait_until("the Write Step", has_frame)
        await asyncio.sleep(0.3)


async def test_engine_killed_mid_step_resumes_every_flow(
    engine_process: EngineProcess, worker_processes: list[WorkerProcess], tmp_path: Path
) -> None:
    state = _state(tmp_path)
    stack = Stack(engine_process, tmp_path)
    try:
        worker_processes.append(WorkerProcess(engine_process.address, "crash_flows:FLOWS", state))
        client = stack.client(crash_flows.FLOWS)
        await client.start_flow(crash_flows.FLOWS[0], "resume", "y")
        await wait_until("the gate", (state / "silent.reached").exists)
        engine_process.restart()
        (state / "silent.release").write_text("")
        result = await client.wait_for_flow("resume", timedelta(seconds=30))
        assert result.status is dex.FlowStatus.COMPLETED
        assert result.single_output(str) == "done:y"
        log = read_log(state)
        assert log[0] == "start 1"
        assert log[-1] == "finish 1"
        # The attempt that was running when the engine died counts as failed and is retried.
        assert "silent 2" in log
    finally:
        await stack.close()
