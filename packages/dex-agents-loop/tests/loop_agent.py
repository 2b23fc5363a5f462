"""The agent of the loop's integration tests, built the same way by the test and its Worker.

The scripted model reads the turn's last user text and the tool results so far, so a
rerun of a model call repeats its answer. Tools record real calls in
``$LOOP_TEST_STATE/invocations.jsonl``.
"""

from __future__ import annotations

import os
from pathlib import Path

from dex_agents import AgentSessionFlow, BuiltInTool, ToolEffect
from dex_agents.builtin_loop import (
    AgentDefinition,
    ContinueTurn,
    ModelRequest,
    ScriptedModelClient,
    ScriptedModelReply,
    ScriptedToolCall,
    ToolCallContext,
    TurnContinuation,
    TurnContinuationContext,
    UserTextItem,
    builtin_agent_session_flow,
    function_tool,
)
from dex_agents.testing import FileGate, InvocationLog

FLOW_TYPE = "LoopTestAgent"
CONTINUE_MESSAGE = "Finish with a line that starts with DECISION:."


def _state() -> Path | None:
    state = os.environ.get("LOOP_TEST_STATE")
    return Path(state) if state else None


def _log(kind: str, name: str, **fields: object) -> None:
    state = _state()
    if state is not None:
        InvocationLog(state / "invocations.jsonl").record(kind, name, **fields)


@function_tool(effect=ToolEffect.READ)
async def lookup_weather(city: str) -> str:
    """Look up today's weather in a city."""
    _log("tool", "lookup_weather", city=city)
    return f"sunny in {city}"


@function_tool(effect=ToolEffect.NON_IDEMPOTENT_WRITE)
def refund(order_id: int, context: ToolCallContext) -> dict[str, object]:
    """Refund an order."""
    _log("tool", "refund", order_id=order_id, key=context.idempotency_key)
    return {"refunded": order_id, "key": context.idempotency_key}


def _last_user_text(request: ModelRequest) -> str:
    texts = [item.text for item in request.items if isinstance(item, UserTextItem)]
    return texts[-1] if texts else ""


async def respond(request: ModelRequest) -> ScriptedModelReply:
    text = _last_user_text(request)
    results = ScriptedModelClient.tool_results(request)
    first = ScriptedModelClient.user_texts(request)
    _log("model", "scripted", user=text, results=len(results))
    state = _state()
    if state is not None and text == "crash model" and results:
        await FileGate(state, "model").wait_for_release(timeout=60)
    if text == "loop forever":
        return ScriptedModelReply(
            tool_calls=[ScriptedToolCall(name="lookup_weather", arguments={"city": "Nowhere"})]
        )
    if results:
        return ScriptedModelReply(text="; ".join(result.output for result in results))
    if text.startswith("weather in "):
        return ScriptedModelReply(
            tool_calls=[ScriptedToolCall(name="lookup_weather", arguments={"city": text[11:]})]
        )
    if text in ("refund 7", "crash model"):
        return ScriptedModelReply(
            text="Refunding.",
            tool_calls=[ScriptedToolCall(name="refund", arguments={"order_id": 7})],
        )
    if text == "two tools":
        return ScriptedModelReply(
            tool_calls=[
                ScriptedToolCall(name="lookup_weather", arguments={"city": "Oslo"}),
                ScriptedToolCall(name="lookup_weather", arguments={"city": "Rome"}),
            ]
        )
    if text == "garbage":
        return ScriptedModelReply(
            tool_calls=[ScriptedToolCall(name="lookup_weather", arguments="{not json")]
        )
    if text == "unknown tool":
        return ScriptedModelReply(tool_calls=[ScriptedToolCall(name="teleport", arguments={})])
    if text == "ask me":
        return ScriptedModelReply(
            tool_calls=[ScriptedToolCall(name="ask_user", arguments={"question": "Which city?"})]
        )
    if text == CONTINUE_MESSAGE:
        return ScriptedModelReply(text="DECISION: approve")
    if text == "decide":
        return ScriptedModelReply(text="I think so.")
    return ScriptedModelReply(text=f"echo: {text}" if first else "hello")


def decide(context: TurnContinuationContext) -> TurnContinuation:
    answer = "".join(item.text or "" for item in context.model_output)
    if not context.tool_results and answer == "I think so.":
        return ContinueTurn(CONTINUE_MESSAGE)
    return "default"


def build_definition() -> AgentDefinition:
    return AgentDefinition(
        name="loop-test",
        instructions="You are a test agent.",
        model=ScriptedModelClient(respond),
        tools=[lookup_weather, refund],
        built_in_tools=frozenset({BuiltInTool.ASK_USER}),
        max_model_calls_per_turn=3,
        decide_turn_continuation=decide,
    )


def build_flow() -> AgentSessionFlow:
    return builtin_agent_session_flow(build_definition(), flow_type=FLOW_TYPE)
