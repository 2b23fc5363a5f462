"""The agent ``dex-agents chat`` runs: the demo model, or a LiteLLM model, with safe tools.

The tools touch only files in the chat's data folder: a read, an idempotent write, and a
non-idempotent write that asks for approval, so every retry rule is visible without a key.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from pathlib import Path

from dex_agents import AgentSessionFlow, BuiltInTool, ToolEffect
from dex_agents.builtin_loop import (
    AgentDefinition,
    ModelClient,
    ModelRequest,
    ScriptedModelClient,
    ScriptedModelReply,
    ScriptedToolCall,
    ToolCallContext,
    builtin_agent_session_flow,
    function_tool,
)

__all__ = ["CHAT_FLOW_TYPE", "DEMO_HELP", "build_chat_flow", "demo_reply"]

CHAT_FLOW_TYPE = "DexAgentsChat"
DEMO_HELP = (
    "I am the demo model (no API key needed). Try: 'save groceries: milk, eggs', "
    "'read groceries', 'postcard to Ana: hello' (asks for approval), 'wait 3', or 'ask me'."
)
_INSTRUCTIONS = (
    "You help the user keep notes and send postcards. Use the tools; ask before guessing."
)


class _Files:
    """Where the demo tools keep their files (the chat's data folder)."""

    folder = Path(".dex-agents")


def _notes() -> Path:
    folder = _Files.folder / "notes"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _safe(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", name.strip()).strip("-")
    if not cleaned:
        raise ValueError("a note needs a name made of letters, digits, '-' or '_'")
    return cleaned


@function_tool(effect=ToolEffect.READ)
def read_note(name: str) -> str:
    """Read a saved note."""
    path = _notes() / f"{_safe(name)}.txt"
    return path.read_text() if path.exists() else f"there is no note named {name}"


@function_tool(effect=ToolEffect.IDEMPOTENT_WRITE)
def save_note(name: str, text: str) -> str:
    """Save a note under a name, replacing an earlier one."""
    (_notes() / f"{_safe(name)}.txt").write_text(text)
    return f"saved note {name}"


@function_tool(effect=ToolEffect.NON_IDEMPOTENT_WRITE)
def send_postcard(to: str, text: str, context: ToolCallContext) -> str:
    """Send a postcard (appends it to postcards.log; never sent twice)."""
    log = _Files.folder / "postcards.log"
    with log.open("a") as handle:
        handle.write(f"{context.idempotency_key}\tto {to}: {text}\n")
    # The post office is slow; DEX_AGENTS_DEMO_POSTCARD_SECONDS makes it slower, so a
    # demo (or a test) can stop the process while a sent postcard is not yet recorded.
    time.sleep(float(os.environ.get("DEX_AGENTS_DEMO_POSTCARD_SECONDS", "0")))
    return f"sent a postcard to {to}"


def demo_reply(request: ModelRequest) -> ScriptedModelReply:
    """The demo model: answers a few phrasings with tool calls, and results with a summary."""
    results = ScriptedModelClient.tool_results(request)
    if results:
        return ScriptedModelReply(text="Done: " + "; ".join(result.output for result in results))
    texts = ScriptedModelClient.user_texts(request)
    text = texts[-1].strip() if texts else ""
    lowered = text.lower()
    if match := re.fullmatch(r"save (.+?):\s*(.+)", text, flags=re.IGNORECASE):
        call = ScriptedToolCall(name="save_note", arguments={"name": match[1], "text": match[2]})
        return ScriptedModelReply(text="Saving it.", tool_calls=[call])
    if match := re.fullmatch(r"read (.+)", text, flags=re.IGNORECASE):
        return ScriptedModelReply(
            tool_calls=[ScriptedToolCall(name="read_note", arguments={"name": match[1]})]
        )
    if match := re.fullmatch(r"postcard to (.+?):\s*(.+)", text, flags=re.IGNORECASE):
        call = ScriptedToolCall(name="send_postcard", arguments={"to": match[1], "text": match[2]})
        return ScriptedModelReply(text="I will send it once you approve.", tool_calls=[call])
    if match := re.fullmatch(r"wait (\d+)", lowered):
        call = ScriptedToolCall(
            name="durable_wait",
            arguments={"duration_seconds": int(match[1]), "reason": "you asked me to wait"},
        )
        return ScriptedModelReply(tool_calls=[call])
    if lowered == "ask me":
        call = ScriptedToolCall(
            name="ask_user",
            arguments={"question": "Tea or coffee?", "choices": ["tea", "coffee"]},
        )
        return ScriptedModelReply(tool_calls=[call])
    return ScriptedModelReply(text=DEMO_HELP)


def build_chat_flow(data_dir: Path, model: str | None = None) -> AgentSessionFlow:
    """The chat's session Flow: the demo model, or ``model`` through LiteLLM."""
    _Files.folder = data_dir
    client: ModelClient
    if model is None:
        client = ScriptedModelClient(demo_reply)
    else:
        # The litellm part is an extra; without it this names dex-agents[litellm].
        litellm_part = importlib.import_module("dex_agents.litellm")
        client = litellm_part.LiteLLMModelClient(model)
    definition = AgentDefinition(
        name="dex-agents-chat",
        instructions=_INSTRUCTIONS,
        model=client,
        tools=[read_note, save_note, send_postcard],
        built_in_tools=frozenset({BuiltInTool.ASK_USER, BuiltInTool.DURABLE_WAIT}),
    )
    return builtin_agent_session_flow(definition, flow_type=CHAT_FLOW_TYPE)
