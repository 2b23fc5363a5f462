"""A scripted runner for the core's tests: replies come from a script, tools from a table.

The script maps a turn's first user message to the model replies of that turn, in order.
The index of the next reply travels in ``framework_run_state``, so a retried or resumed
model call picks the same reply. Every real model and tool call is appended to a JSON-lines
log, so tests can count them across Worker processes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dex_agents import (
    AgentToolCall,
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    FrameworkMessage,
    MessageRole,
    ToolCallsRequested,
    ToolCallStepOptions,
    ToolEffect,
    ToolExecutionResult,
    TurnCompleted,
    describe_tool_call_outcome,
)
from dex_agents.testing import FileGate, InvocationLog


@dataclass(frozen=True)
class Call:
    """One tool call the scripted model makes."""

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, object] = field(default_factory=dict)
    effect: ToolEffect | None = None


@dataclass(frozen=True)
class Tools:
    """A scripted reply that asks for tools."""

    calls: Sequence[Call]


@dataclass(frozen=True)
class Answer:
    """A scripted final answer."""

    text: str


Reply = Tools | Answer
Tool = Callable[[DeferredToolExecution], Awaitable[DeferredToolOutcome]]


def log(kind: str, name: str, **fields: object) -> None:
    """Record one real call in ``$CORE_TEST_STATE/invocations.jsonl`` when it is set."""
    state = os.environ.get("CORE_TEST_STATE")
    if state:
        InvocationLog(Path(state) / "invocations.jsonl").record(kind, name, **fields)


class ScriptedRunner:
    """Implements the runner contract from a script."""

    def __init__(
        self,
        script: Mapping[str, Sequence[Reply]],
        tools: Mapping[str, Tool],
        step_options: Mapping[str, ToolCallStepOptions] | None = None,
    ) -> None:
        self.script = script
        self.tools = tools
        self.step_options = step_options or {}

    def tool_call_step_options(self, call: AgentToolCall) -> ToolCallStepOptions | None:
        return self.step_options.get(call.tool_name)

    def build_user_message(self, text: str) -> FrameworkMessage:
        state = os.environ.get("CORE_TEST_STATE")
        gate = os.environ.get("CORE_TEST_USER_MESSAGE_GATE")
        if state and gate and text.startswith(gate):
            # Parks the Step that stores a user message (a start, a queued message, a note).
            FileGate(state, "user-message").wait_for_release_blocking(timeout=60)
        return FrameworkMessage(role=MessageRole.USER, framework_item={"text": text}, text=text)

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        index = int(turn.framework_run_state or 0)
        user = next(
            m.text
            for m in reversed(turn.messages)
            if m.role is MessageRole.USER and m.turn_id == turn.turn_id
        )
        replies = self.script.get(user or "", [Answer(f"echo: {user}")])
        reply = replies[index]
        log("model", turn.turn_id, attempt=turn.attempt, index=index)
        state = os.environ.get("CORE_TEST_STATE")
        if state and ((user == "slow model" and index > 0) or user == "gate model"):
            await FileGate(state, "model").wait_for_release(timeout=60)
        if user == "model fails" and index > 0:
            raise RuntimeError("the model provider is down")
        results = [
            FrameworkMessage(
                role=MessageRole.TOOL,
                framework_item={"result": describe_tool_call_outcome(record)},
                text=describe_tool_call_outcome(record),
                tool_call_id=record.tool_call_id,
                tool_name=record.tool_name,
            )
            for record in sorted(turn.tool_calls.values(), key=lambda r: r.deferral_order)
        ]
        if isinstance(reply, Answer):
            final = FrameworkMessage(
                role=MessageRole.ASSISTANT, framework_item={"text": reply.text}, text=reply.text
            )
            turn.events.write_text_delta(reply.text)
            return TurnCompleted(new_messages=[*results, final])
        return ToolCallsRequested(
            framework_run_state=str(index + 1),
            tool_calls=[
                DeferredToolCall(
                    tool_call_id=call.tool_call_id,
                    tool_name=call.tool_name,
                    arguments=json.dumps(call.arguments),
                    policy=turn.resolve_tool_policy(call.tool_name, call.effect),
                )
                for call in reply.calls
            ],
        )

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        tool = self.tools.get(call.tool_call.tool_name)
        if tool is None:
            return ToolExecutionResult(output=f"no tool {call.tool_call.tool_name}")
        return await tool(call)
