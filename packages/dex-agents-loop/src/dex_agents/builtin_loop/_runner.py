"""``BuiltinLoopAgentRunner``: the runner contract for an ``AgentDefinition``.

Each ``RunModel`` makes exactly one model call. The model input is rebuilt from committed
state only: the instructions, every stored item, and the results of the previous model
response from the final tool call records. Items are stored as they appear, so the
framework run state holds only counters.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from dex_agents import (
    BUILT_IN_TOOL_DEFINITIONS,
    MISSING_TOOL_RESULT_TEXT,
    AgentSessionFlow,
    AgentSessionOptions,
    AgentToolCall,
    AgentTurnContext,
    AgentTurnOutcome,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    FrameworkMessage,
    ToolCallsRequested,
    ToolCallStepOptions,
    ToolCallStepOptionsProvider,
    ToolEffect,
    ToolExecutionError,
    ToolExecutionResult,
    ToolPolicy,
    TurnCompleted,
    TurnContinued,
    describe_tool_call_outcome,
)
from dex_agents.builtin_loop._definition import (
    MAX_CONSECUTIVE_TURN_CONTINUATIONS,
    TURN_CONTINUATION_LIMIT_ERROR,
    AgentDefinition,
    ContinueTurn,
    InstructionContext,
    ToolSource,
    TurnContinuationContext,
    builtin_agent_session_options,
)
from dex_agents.builtin_loop._function_tools import FunctionToolResult, ToolCallContext
from dex_agents.builtin_loop._model import (
    ModelInputItem,
    ModelOutputItem,
    ModelRequest,
    ModelToolCall,
    ModelToolDefinition,
    ToolResultItem,
    UserTextItem,
)
from dex_agents.builtin_loop._transcript import (
    input_items,
    output_message,
    tool_result_message,
    unanswered_calls,
    user_message,
)

__all__ = ["BuiltinLoopAgentRunner", "builtin_agent_session_flow", "model_call_limit_text"]

_LOGGER = logging.getLogger("dex_agents.builtin_loop")
_SOURCE_KEY = "stepwise_tool_source"


def model_call_limit_text(limit: int) -> str:
    """The result of a tool call made after the turn's model call limit."""
    return f"The tool call was not run: this turn reached its limit of {limit} model calls."


@dataclass(frozen=True)
class _RunState:
    """What the framework run state holds: the turn's model calls and continuations."""

    model_calls: int = 0
    continuations: int = 0

    @classmethod
    def parse(cls, text: str | None) -> _RunState:
        if not text:
            return cls()
        data = json.loads(text)
        return cls(int(data.get("model_calls", 0)), int(data.get("continuations", 0)))

    def dump(self) -> str:
        return json.dumps({"model_calls": self.model_calls, "continuations": self.continuations})


async def _resolve(value: Any) -> Any:  # noqa: ANN401 - user hooks may return anything
    return await value if inspect.isawaitable(value) else value


class _Writer:
    """Adapts the turn's event writer to ``ModelOutputWriter``."""

    def __init__(self, turn: AgentTurnContext) -> None:
        self._events = turn.events

    def write_text_delta(self, text: str) -> None:
        self._events.write_text_delta(text)

    def write_reasoning_delta(self, text: str) -> None:
        self._events.write_reasoning_delta(text)


class BuiltinLoopAgentRunner:
    """Runs an ``AgentDefinition``: one model call per ``RunModel``, one Step per tool call."""

    def __init__(self, definition: AgentDefinition) -> None:
        self.definition = definition
        self._tools = {tool.name: tool for tool in definition.tools}
        self._sources = {source.source_name: source for source in definition.tool_sources}

    def build_user_message(self, text: str) -> FrameworkMessage:
        """A user message as the loop stores it."""
        return user_message(text)

    def build_unfinished_turn_messages(self, turn: AgentTurnContext) -> Sequence[FrameworkMessage]:
        """Results for the stored tool calls that have none, from their records."""
        return [tool_result_message(r) for r in self._results(turn, input_items(turn.messages))]

    @staticmethod
    def _results(turn: AgentTurnContext, items: Sequence[ModelInputItem]) -> list[ToolResultItem]:
        results = []
        for call in unanswered_calls(items):
            record = turn.recorded_tool_call(call.tool_call_id)
            output = (
                describe_tool_call_outcome(record)
                if record is not None and record.status.is_final
                else MISSING_TOOL_RESULT_TEXT
            )
            results.append(
                ToolResultItem(tool_call_id=call.tool_call_id, tool_name=call.name, output=output)
            )
        return results

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        """Make one model call from committed state and say how the turn goes on."""
        definition = self.definition
        state = _RunState.parse(turn.framework_run_state)
        items = input_items(turn.messages)
        results = self._results(turn, items)
        items.extend(results)
        stored: list[FrameworkMessage] = [tool_result_message(r) for r in results]
        hook = definition.decide_turn_continuation
        if results and hook is not None:
            previous = [
                item for item in items if isinstance(item, ModelOutputItem) and item.tool_call
            ]
            decision = await self._decide(turn, previous, results)
            if decision == "end":
                return TurnCompleted(new_messages=stored)
            if isinstance(decision, ContinueTurn):
                items.append(UserTextItem(text=decision.message))
                stored.append(user_message(decision.message))
        limited = state.model_calls >= definition.max_model_calls_per_turn
        tools, listed = ([], {}) if limited else await self._offered_tools(turn)
        request = ModelRequest(
            instructions=await self._instructions(turn),
            items=tuple(items),
            tools=tuple(tools),
            settings=dict(definition.model_settings),
        )
        response = await definition.model.call_model(request, _Writer(turn))
        outputs = list(response.output)
        stored.extend(output_message(item) for item in outputs)
        state = _RunState(state.model_calls + 1, state.continuations)
        calls = response.tool_calls
        metadata = response.metadata
        if calls and limited:
            text = model_call_limit_text(definition.max_model_calls_per_turn)
            stored.extend(
                tool_result_message(
                    ToolResultItem(tool_call_id=c.tool_call_id, tool_name=c.name, output=text)
                )
                for c in calls
            )
            return TurnCompleted(
                new_messages=stored, usage=response.usage, model_call_metadata=metadata
            )
        if calls:
            offered = {tool.name: tool for tool in tools}
            deferred = [self._defer(turn, call, offered, listed) for call in calls]
            return ToolCallsRequested(
                framework_run_state=_RunState(state.model_calls, 0).dump(),
                tool_calls=deferred,
                new_messages=stored,
                usage=response.usage,
                model_call_metadata=metadata,
            )
        if hook is not None:
            decision = await self._decide(turn, outputs, [])
            if isinstance(decision, ContinueTurn):
                if state.continuations >= MAX_CONSECUTIVE_TURN_CONTINUATIONS:
                    return TurnCompleted(
                        new_messages=stored,
                        usage=response.usage,
                        turn_error=TURN_CONTINUATION_LIMIT_ERROR,
                        model_call_metadata=metadata,
                    )
                stored.append(user_message(decision.message))
                return TurnContinued(
                    framework_run_state=_RunState(
                        state.model_calls, state.continuations + 1
                    ).dump(),
                    new_messages=stored,
                    usage=response.usage,
                    model_call_metadata=metadata,
                )
        return TurnCompleted(
            new_messages=stored, usage=response.usage, model_call_metadata=metadata
        )

    async def _decide(
        self,
        turn: AgentTurnContext,
        outputs: Sequence[ModelOutputItem],
        results: Sequence[ToolResultItem],
    ) -> object:
        hook = self.definition.decide_turn_continuation
        assert hook is not None
        decision = await _resolve(
            hook(
                TurnContinuationContext(
                    flow_id=turn.flow_id,
                    turn_id=turn.turn_id,
                    session_settings=turn.session_settings,
                    model_output=tuple(outputs),
                    tool_results=tuple(results),
                )
            )
        )
        if decision in ("end", "default"):
            return decision
        if isinstance(decision, ContinueTurn) and decision.message.strip():
            return decision
        raise ValueError(
            f"decide_turn_continuation returned {decision!r}, not 'end', 'default' or a "
            "ContinueTurn with a message"
        )

    async def _instructions(self, turn: AgentTurnContext) -> str:
        instructions = self.definition.instructions
        if isinstance(instructions, str):
            return instructions
        text = await _resolve(
            instructions(
                InstructionContext(
                    flow_id=turn.flow_id,
                    turn_id=turn.turn_id,
                    session_settings=turn.session_settings,
                    interaction_mode=turn.interaction_mode,
                )
            )
        )
        if not isinstance(text, str):
            raise TypeError("the instructions function must return a string")
        return text

    async def _offered_tools(
        self, turn: AgentTurnContext
    ) -> tuple[list[ModelToolDefinition], dict[str, str]]:
        """Function tools, each source's listing, then the enabled built-in tools.

        Also returns which source listed each source tool.
        """
        enabled = {tool.value for tool in turn.enabled_built_in_tools}
        offered = [
            ModelToolDefinition(
                name=tool.name, description=tool.description, parameters=tool.parameters_schema
            )
            for tool in self.definition.tools
        ]
        function_names = {tool.name for tool in offered}
        for name in function_names & enabled:
            raise ValueError(f"tool {name} uses the name of an enabled built-in tool")
        seen: dict[str, str] = {}
        for source in self.definition.tool_sources:
            for tool in await self._listing(source):
                if tool.name in enabled:
                    raise ValueError(f"tool {tool.name} uses the name of an enabled built-in tool")
                if tool.name in function_names:
                    raise ValueError(
                        f"tool {tool.name} of a tool source uses the name of a function tool"
                    )
                if tool.name in seen:
                    raise ValueError(f"two tool sources list a tool named {tool.name}")
                seen[tool.name] = source.source_name
                offered.append(tool)
        offered.extend(
            ModelToolDefinition(
                name=definition.name.value,
                description=definition.description,
                parameters=definition.parameters,
            )
            for definition in BUILT_IN_TOOL_DEFINITIONS
            if definition.name.value in enabled
        )
        return offered, seen

    async def _listing(self, source: ToolSource) -> Sequence[ModelToolDefinition]:
        timeout = self.definition.tool_source_listing_timeout.total_seconds()
        try:
            async with asyncio.timeout(timeout):
                return list(await source.list_tools())
        except Exception:
            _LOGGER.warning(
                "tool source %s offered no tools: its listing failed",
                source.source_name,
                exc_info=True,
            )
            return []

    def _defer(
        self,
        turn: AgentTurnContext,
        call: ModelToolCall,
        offered: dict[str, ModelToolDefinition],
        listed: dict[str, str],
    ) -> DeferredToolCall:
        name = call.name
        enabled = {tool.value for tool in turn.enabled_built_in_tools}
        if name in enabled:
            policy = ToolPolicy(ToolEffect.READ)
        elif name in self._tools:
            policy = self.definition.tool_policies.get(name) or self._tools[name].policy
        elif name in listed:
            source = self._sources[listed[name]]
            deferred = source.deferred_tool_call(offered[name], call)
            reference = json.dumps(
                {_SOURCE_KEY: source.source_name, "reference": deferred.tool_source_reference}
            )
            return DeferredToolCall(
                tool_call_id=call.tool_call_id,
                tool_name=name,
                arguments=call.arguments,
                policy=self.definition.tool_policies.get(name) or deferred.policy,
                tool_source_reference=reference,
            )
        else:
            # Never offered: it runs nowhere, so it needs no approval and fails as unknown.
            policy = ToolPolicy(ToolEffect.UNCLASSIFIED, requires_approval=False)
        return DeferredToolCall(
            tool_call_id=call.tool_call_id,
            tool_name=name,
            arguments=call.arguments,
            policy=policy,
        )

    def _source_call(self, record: AgentToolCall) -> tuple[str, ToolSource | None, AgentToolCall]:
        """The name and source (``None`` when this Worker lacks it) of a source's call."""
        data = json.loads(record.tool_source_reference or "{}")
        name = str(data.get(_SOURCE_KEY))
        # The source gets its own reference back, not the loop's envelope around it.
        own = replace(record, tool_source_reference=data.get("reference"))
        return name, self._sources.get(name), own

    def tool_call_step_options(self, call: AgentToolCall) -> ToolCallStepOptions | None:
        """A tool source's own tool Step options for a call of its tool, if it gives any."""
        if not call.tool_source_reference:
            return None
        _name, source, own = self._source_call(call)
        provider: object = source  # an optional protocol beside ToolSource's
        if isinstance(provider, ToolCallStepOptionsProvider):
            return provider.tool_call_step_options(own)
        return None

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        """Run one approved call: a function tool, or a call of a source's tool."""
        record = call.tool_call
        if record.tool_source_reference:
            name, source, own = self._source_call(record)
            if source is None:
                raise LookupError(f"this Worker has no tool source {name!r}")
            return await source.execute_deferred_tool_call(replace(call, tool_call=own))
        tool = self._tools.get(record.tool_name)
        if tool is None:
            raise ToolExecutionError(f"unknown tool {record.tool_name}")
        context = ToolCallContext(
            idempotency_key=call.idempotency_key,
            attempt=call.attempt,
            flow_id=call.flow_id,
            turn_id=call.turn_id,
            tool_call_id=record.tool_call_id,
            events=call.events,
            input_answers=call.input_answers,
            input_continuation=record.input_continuation,
            effect=record.effect,
            heartbeat_function=call.heartbeat,
        )
        result = await tool.invoke(record.arguments, context)
        if isinstance(result, FunctionToolResult):
            return ToolExecutionResult(output=result.output)
        if isinstance(result, str):
            return ToolExecutionResult(output=result)
        return result


def builtin_agent_session_flow(
    definition: AgentDefinition,
    *,
    flow_type: str,
    options: AgentSessionOptions | None = None,
) -> AgentSessionFlow:
    """The session Flow of an agent, with options derived from its definition."""
    return AgentSessionFlow(
        BuiltinLoopAgentRunner(definition),
        flow_type=flow_type,
        options=options or builtin_agent_session_options(definition),
    )
