"""Fixtures for the core's integration tests: a private engine and Worker child processes."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dex_agents.testing import AgentTestStack

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from core_agent import build_flow  # noqa: E402 - found through the path entry above
from core_harness import Harness  # noqa: E402


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
