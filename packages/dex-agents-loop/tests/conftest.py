"""Fixtures for the loop's integration tests: a private engine and Worker child processes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from loop_harness import LoopHarness  # noqa: E402 - found through the path entry above


@pytest.fixture
async def loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LoopHarness]:
    from loop_agent import build_flow

    from dex_agents.testing import AgentTestStack

    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("LOOP_TEST_STATE", str(state))
    flow = build_flow()
    async with AgentTestStack(
        tmp_path, [flow], "loop_worker", worker_cwd=HERE, worker_env={"LOOP_TEST_STATE": str(state)}
    ) as stack:
        await stack.start_worker()
        yield LoopHarness(stack, flow, state)
