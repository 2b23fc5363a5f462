"""The core tests' harness: a running AgentTestStack with the test agent's session client.

Kept apart from ``conftest.py`` so test modules import it by a name no other package uses.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dex_agents import AgentSessionClient, AgentSessionFlow, AgentSnapshot
from dex_agents.testing import AgentTestStack, wait_for_agent_snapshot


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
