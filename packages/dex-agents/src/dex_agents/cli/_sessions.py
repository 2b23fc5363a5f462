"""``dex-agents sessions``: the chat sessions and what each is waiting for."""

from __future__ import annotations

from dex_agents.cli._chat import ChatOptions, connect
from dex_agents.cli._demo import CHAT_FLOW_TYPE, build_chat_flow
from dex_agents.cli._terminal import Terminal

__all__ = ["describe_state", "list_sessions"]

_WAITING = {
    "AwaitToolApproval": "waiting for approval",
    "AwaitQuestionAnswer": "waiting for an answer",
    "AwaitTimer": "waiting for a timer",
    "AwaitUserMessage": "waiting for a message",
}


def describe_state(status: str, active_steps: list[str]) -> str:
    """A session's state from its search attributes."""
    if status != "running":
        return status
    for step, text in _WAITING.items():
        if step in active_steps:
            return text
    return "running"


async def list_sessions(options: ChatOptions, terminal: Terminal) -> int:
    """Print every chat session, newest first, with its state."""
    flow = build_chat_flow(options.data_dir)
    async with connect(options, [flow], with_worker=False) as client:
        page = await client.search_flows(f"FlowType = '{CHAT_FLOW_TYPE}'", 200)
        if not page.flows:
            terminal.say("No sessions yet. Start one with: dex-agents chat")
            return 0
        for entry in page.flows:
            active = entry.indexed_attributes.get("ActiveStepTypes")
            steps = _steps(active.data if active is not None else None)
            state = describe_state(entry.status.value, steps)
            started = entry.started_at.strftime("%Y-%m-%d %H:%M")
            terminal.say(f"{entry.flow_id}  {started}  {state}")
    return 0


def _steps(data: object) -> list[str]:
    import json

    if isinstance(data, str):
        try:
            parsed = json.loads(data)
        except ValueError:
            return [data]
        return [str(step) for step in parsed] if isinstance(parsed, list) else [data]
    return []
