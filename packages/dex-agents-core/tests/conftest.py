"""Fixtures for the core's integration tests: a private engine and Worker child processes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from dex_agents import AgentSessionClient, AgentSessionFlow, AgentSnapshot
from dex_agents.testing import AgentTestStack, wait_for_agent_snapshot

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from core_agent import build_flow  # noqa: E402 - found through the path entry above


class Harness:
    """A running stack with the test agent's Flow and its session client."""

    def __init__(self, stack: AgentTestStack, flow: AgentSessionFlow, state: Path) -> None:
        self.stack = stack
        self.flow = flow
        self.state = state
        self.sessions: AgentSessionClient = stack.sessions(flow)

    async def snapshot_until(
        self, session_id: str, probe: Callable[[AgentSnapshot], object], description: str
    ) -> object:
        return await wait_for_agent_snapshot(
            self.sessions, session_id, probe, description=description, timeout=45
        )

    async def idle(self, session_id: str, turns: int = 1) -> AgentSnapshot:
        """Wait until ``turns`` turns ended and the session waits for a message."""
        result = await self.snapshot_until(
            session_id,
            lambda s: (
                s
                if s.state is not None
                and s.state.turn_count >= turns
                and s.state.active_turn_id is None
                else None
            ),
            f"turn {turns} to end",
        )
        assert isinstance(result, AgentSnapshot)
        return result


@pytest.fixture
async def harness(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Harness]:
    state = tmp_path / "state"
    state.mkdir()
    marker = request.node.get_closest_marker("session_env")
    env = {"CORE_TEST_STATE": str(state), **(marker.kwargs if marker else {})}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    engine_marker = request.node.get_closest_marker("engine_args")
    flow = build_flow()
    async with AgentTestStack(
        tmp_path,
        [flow],
        "core_worker",
        worker_cwd=HERE,
        worker_env=env,
        engine_args=(
            "--min-heartbeat-timeout",
            "1",
            *(engine_marker.args if engine_marker else ()),
        ),
    ) as stack:
        yield Harness(stack, flow, state)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "session_env(**env): environment of the test's Workers")
    config.addinivalue_line("markers", "engine_args(*args): extra engine options")
