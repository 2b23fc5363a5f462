"""The loop tests' harness: a running stack, its session client, and waiting helpers."""

from __future__ import annotations

from pathlib import Path

from dex_agents import AgentSessionFlow, AgentSnapshot, MessageRole
from dex_agents.testing import AgentTestStack, InvocationLog, wait_for_agent_snapshot


class LoopHarness:
    """A stack with the loop test agent."""

    def __init__(self, stack: AgentTestStack, flow: AgentSessionFlow, state: Path) -> None:
        self.stack = stack
        self.flow = flow
        self.state = state
        self.sessions = stack.sessions(flow)
        self.log = InvocationLog(state / "invocations.jsonl")

    async def turn(self, session_id: str, text: str, turns: int) -> AgentSnapshot:
        """Start the session with ``text`` (or send it), and wait for turn ``turns`` to end."""
        if turns == 1:
            await self.sessions.start_session(session_id, text)
        else:
            assert await self.sessions.send_user_message(session_id, text)
        return await self.idle(session_id, turns)

    async def idle(self, session_id: str, turns: int) -> AgentSnapshot:
        result = await wait_for_agent_snapshot(
            self.sessions,
            session_id,
            lambda s: (
                s
                if s.state is not None
                and s.state.turn_count >= turns
                and s.state.active_turn_id is None
                else None
            ),
            description=f"turn {turns} to end",
            timeout=45,
        )
        assert isinstance(result, AgentSnapshot)
        return result


def last_answer(snapshot: AgentSnapshot) -> str:
    """The text of the last assistant message."""
    return next(
        m.text or "" for m in reversed(snapshot.messages) if m.role is MessageRole.ASSISTANT
    )


def tool_results(snapshot: AgentSnapshot) -> list[str]:
    """Every stored tool result text, in order."""
    return [m.text or "" for m in snapshot.messages if m.role is MessageRole.TOOL]
