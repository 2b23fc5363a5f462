"""The loop runner without an engine: tool sources, definition checks, continuation limits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta

import pytest

from dex_agents import (
    AgentEvent,
    AgentEventWriter,
    AgentToolCall,
    AgentTurnContext,
    BuiltInTool,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    ToolCallsRequested,
    ToolCallStatus,
    ToolCallStepOptions,
    ToolEffect,
    ToolExecutionError,
    ToolExecutionResult,
    ToolPolicy,
    TurnCompleted,
    TurnContinued,
)
from dex_agents.builtin_loop import (
    MAX_CONSECUTIVE_TURN_CONTINUATIONS,
    TURN_CONTINUATION_LIMIT_ERROR,
    AgentDefinition,
    BuiltinLoopAgentRunner,
    ContinueTurn,
    ModelRequest,
    ModelToolCall,
    ModelToolDefinition,
    ScriptedModelClient,
    ScriptedModelReply,
    ScriptedToolCall,
    TurnContinuationContext,
    function_tool,
)


@function_tool(effect=ToolEffect.READ)
def lookup(city: str) -> str:
    """Look up a city."""
    return f"looked up {city}"


@dataclass
class Source:
    """A tool source for tests: lists what it is told, or fails, or hangs."""

    source_name: str
    tools: Sequence[str] = ()
    fail: bool = False
    hang: bool = False
    executed: list[str] = field(default_factory=list)

    async def list_tools(self) -> Sequence[ModelToolDefinition]:
        if self.fail:
            raise ConnectionError("the server is down")
        if self.hang:
            await asyncio.sleep(60)
        return [
            ModelToolDefinition(name=name, description=name, parameters={"type": "object"})
            for name in self.tools
        ]

    def deferred_tool_call(
        self, listed_tool: ModelToolDefinition, call: ModelToolCall
    ) -> DeferredToolCall:
        return DeferredToolCall(
            tool_call_id=call.tool_call_id,
            tool_name=call.name,
            arguments=call.arguments,
            policy=ToolPolicy(ToolEffect.IDEMPOTENT_WRITE),
            tool_source_reference=f"ref:{listed_tool.name}",
        )

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        self.executed.append(call.tool_call.tool_source_reference or "")
        return ToolExecutionResult(output=f"{self.source_name} ran {call.tool_call.tool_name}")


def _turn(*, run_state: str | None = None, settings: bool = False) -> AgentTurnContext:
    events: list[AgentEvent] = []
    writer = AgentEventWriter(
        events.append, turn_id="turn-1", step_execution_id="RunModel-1", attempt=1
    )
    from dex_agents import AgentMessage, MessageRole

    return AgentTurnContext(
        flow_id="s",
        turn_id="turn-1",
        attempt=1,
        messages=[
            AgentMessage(
                sequence=1,
                role=MessageRole.USER,
                framework_item={"type": "user_text", "text": "go"},
                text="go",
                turn_id="turn-1",
            )
        ],
        framework_run_state=run_state,
        tool_calls={},
        events=writer,
        enabled_built_in_tools=frozenset({BuiltInTool.ASK_USER}) if settings else frozenset(),
    )


def _definition(respond: object, **fields: object) -> AgentDefinition:
    return AgentDefinition(
        name="unit",
        instructions="Be brief.",
        model=ScriptedModelClient(respond),  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


async def _offered_tool_names(turn: AgentTurnContext, **fields: object) -> list[str]:
    """The tools the model is offered on one ``RunModel`` of a definition with ``fields``."""
    definition = _definition(lambda _request: ScriptedModelReply(text="ok"), **fields)
    outcome = await BuiltinLoopAgentRunner(definition).run_model_step(turn)
    assert isinstance(outcome, TurnCompleted)
    model = definition.model
    assert isinstance(model, ScriptedModelClient)
    return [tool.name for tool in model.requests[0].tools]


async def test_sources_are_offered_after_function_tools_and_before_built_ins() -> None:
    offered = await _offered_tool_names(
        _turn(settings=True),
        tools=[lookup],
        tool_sources=[Source("files", ["read_file"]), Source("down", fail=True)],
        built_in_tools=frozenset({BuiltInTool.ASK_USER}),
    )
    assert offered == ["lookup", "read_file", "ask_user"]


async def test_a_source_that_hangs_offers_no_tools_after_its_timeout() -> None:
    offered = await _offered_tool_names(
        _turn(),
        tool_sources=[Source("slow", ["x"], hang=True)],
        tool_source_listing_timeout=timedelta(milliseconds=50),
    )
    assert offered == []


def _approved_record(call: DeferredToolCall) -> AgentToolCall:
    """The record the session keeps of a source's call once it is approved."""
    return AgentToolCall(
        tool_call_id=call.tool_call_id,
        tool_name=call.tool_name,
        arguments=call.arguments,
        turn_id="turn-1",
        effect=ToolEffect.IDEMPOTENT_WRITE,
        requires_approval=False,
        status=ToolCallStatus.APPROVED,
        tool_source_reference=call.tool_source_reference,
    )


async def test_source_calls_keep_their_reference_and_reach_their_source() -> None:
    def respond(_request: ModelRequest) -> ScriptedModelReply:
        return ScriptedModelReply(tool_calls=[ScriptedToolCall(name="read_file", arguments={})])

    files = Source("files", ["read_file"])
    runner = BuiltinLoopAgentRunner(_definition(respond, tool_sources=[files]))
    outcome = await runner.run_model_step(_turn())
    assert isinstance(outcome, ToolCallsRequested)
    [call] = outcome.tool_calls
    assert call.policy == ToolPolicy(ToolEffect.IDEMPOTENT_WRITE)
    reference = json.loads(call.tool_source_reference or "")
    assert reference == {"stepwise_tool_source": "files", "reference": "ref:read_file"}
    record = _approved_record(call)
    writer = AgentEventWriter(
        lambda _e: None, turn_id="turn-1", step_execution_id="CallTool-1", attempt=1
    )
    execution = DeferredToolExecution(
        flow_id="s",
        turn_id="turn-1",
        tool_call=record,
        idempotency_key="k",
        attempt=1,
        events=writer,
    )
    result = await runner.execute_deferred_tool_call(execution)
    assert result == ToolExecutionResult(output="files ran read_file")
    assert files.executed == ["ref:read_file"]
    stranger = BuiltinLoopAgentRunner(_definition(respond))
    with pytest.raises(LookupError, match="no tool source 'files'"):
        await stranger.execute_deferred_tool_call(execution)
    # Without options of its own, or on a Worker without the source, the defaults hold.
    assert runner.tool_call_step_options(record) is None
    assert stranger.tool_call_step_options(record) is None


@dataclass
class TimedSource(Source):
    """A source whose calls get their own tool Step options."""

    asked: list[str] = field(default_factory=list)

    def tool_call_step_options(self, call: AgentToolCall) -> ToolCallStepOptions | None:
        self.asked.append(call.tool_source_reference or "")
        return ToolCallStepOptions(execute_method_timeout=timedelta(seconds=7))


async def test_a_source_gives_its_calls_their_own_tool_step_options() -> None:
    def respond(_request: ModelRequest) -> ScriptedModelReply:
        return ScriptedModelReply(tool_calls=[ScriptedToolCall(name="slow_api", arguments={})])

    api = TimedSource("api", ["slow_api"])
    runner = BuiltinLoopAgentRunner(_definition(respond, tools=[lookup], tool_sources=[api]))
    outcome = await runner.run_model_step(_turn())
    assert isinstance(outcome, ToolCallsRequested)
    [call] = outcome.tool_calls
    record = _approved_record(call)
    options = runner.tool_call_step_options(record)
    assert options == ToolCallStepOptions(execute_method_timeout=timedelta(seconds=7))
    assert api.asked == ["ref:slow_api"]
    function_call = replace(record, tool_name="lookup", tool_source_reference=None)
    assert runner.tool_call_step_options(function_call) is None


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        (
            [Source("a", ["lookup"])],
            "tool lookup of a tool source uses the name of a function tool",
        ),
        ([Source("a", ["x"]), Source("b", ["x"])], "two tool sources list a tool named x"),
        ([Source("a", ["ask_user"])], "tool ask_user uses the name of an enabled built-in tool"),
    ],
)
async def test_name_clashes_fail_the_attempt_before_any_model_request(
    sources: list[Source], message: str
) -> None:
    calls: list[ModelRequest] = []
    runner = BuiltinLoopAgentRunner(
        _definition(
            lambda request: calls.append(request) or ScriptedModelReply(text="never"),
            tools=[lookup],
            tool_sources=sources,
            built_in_tools=frozenset({BuiltInTool.ASK_USER}),
        )
    )
    with pytest.raises(ValueError, match=message):
        await runner.run_model_step(_turn(settings=True))
    assert calls == []


def test_definition_checks() -> None:
    reply = ScriptedModelReply(text="x")

    @function_tool(name="ask_user")
    def ask(question: str) -> str:
        """Ask."""
        return question

    enabled = frozenset({BuiltInTool.ASK_USER})
    with pytest.raises(ValueError, match="uses the name of an enabled built-in tool"):
        _definition(lambda _r: reply, tools=[ask], built_in_tools=enabled)
    with pytest.raises(ValueError, match="two function tools"):
        _definition(lambda _r: reply, tools=[lookup, lookup])
    with pytest.raises(ValueError, match="unique source_name"):
        _definition(lambda _r: reply, tool_sources=[Source("a"), Source("a")])
    with pytest.raises(ValueError, match="max_model_calls_per_turn"):
        _definition(lambda _r: reply, max_model_calls_per_turn=0)


async def test_continuations_stop_at_their_limit() -> None:
    def decide(_context: TurnContinuationContext) -> ContinueTurn:
        return ContinueTurn("again")

    runner = BuiltinLoopAgentRunner(
        _definition(lambda _r: ScriptedModelReply(text="hmm"), decide_turn_continuation=decide)
    )
    state = None
    for _ in range(MAX_CONSECUTIVE_TURN_CONTINUATIONS):
        outcome = await runner.run_model_step(_turn(run_state=state))
        assert isinstance(outcome, TurnContinued)
        state = outcome.framework_run_state
    outcome = await runner.run_model_step(_turn(run_state=state))
    assert isinstance(outcome, TurnCompleted)
    assert outcome.turn_error == TURN_CONTINUATION_LIMIT_ERROR


async def test_a_bad_continuation_fails_the_attempt() -> None:
    runner = BuiltinLoopAgentRunner(
        _definition(
            lambda _r: ScriptedModelReply(text="hmm"),
            decide_turn_continuation=lambda _c: ContinueTurn("  "),
        )
    )
    with pytest.raises(ValueError, match="decide_turn_continuation returned"):
        await runner.run_model_step(_turn())


async def test_unknown_tools_fail_visibly_without_approval() -> None:
    runner = BuiltinLoopAgentRunner(
        _definition(lambda _r: ScriptedModelReply(tool_calls=[ScriptedToolCall(name="teleport")]))
    )
    outcome = await runner.run_model_step(_turn())
    assert isinstance(outcome, ToolCallsRequested)
    assert outcome.tool_calls[0].policy == ToolPolicy(
        ToolEffect.UNCLASSIFIED, requires_approval=False
    )
    record = AgentToolCall(
        tool_call_id="c",
        tool_name="teleport",
        arguments="{}",
        turn_id="turn-1",
        effect=ToolEffect.UNCLASSIFIED,
        requires_approval=False,
        status=ToolCallStatus.APPROVED,
    )
    writer = AgentEventWriter(lambda _e: None, turn_id="turn-1", step_execution_id="X-1", attempt=1)
    execution = DeferredToolExecution(
        flow_id="s",
        turn_id="turn-1",
        tool_call=record,
        idempotency_key="k",
        attempt=1,
        events=writer,
    )
    with pytest.raises(ToolExecutionError, match="unknown tool teleport"):
        await runner.execute_deferred_tool_call(execution)
