"""``AgentDefinition``: an agent in Dex terms, and the hooks and sources it takes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from dex_agents import (
    AgentSessionOptions,
    BuiltInTool,
    DeferredToolCall,
    DeferredToolExecution,
    DeferredToolOutcome,
    InteractionMode,
    ToolEffect,
    ToolPolicy,
)
from dex_agents.builtin_loop._model import (
    ModelClient,
    ModelOutputItem,
    ModelToolCall,
    ModelToolDefinition,
    ToolResultItem,
)

if TYPE_CHECKING:
    from dex_agents.builtin_loop._function_tools import FunctionTool

__all__ = [
    "MAX_CONSECUTIVE_TURN_CONTINUATIONS",
    "TURN_CONTINUATION_LIMIT_ERROR",
    "AgentDefinition",
    "ContinueTurn",
    "InstructionContext",
    "ToolSource",
    "TurnContinuation",
    "TurnContinuationContext",
    "builtin_agent_session_options",
]

MAX_CONSECUTIVE_TURN_CONTINUATIONS = 8
TURN_CONTINUATION_LIMIT_ERROR = (
    f"the turn continued more than {MAX_CONSECUTIVE_TURN_CONTINUATIONS} times in a row "
    "without a tool call"
)
_MiB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class InstructionContext:
    """What an instructions function sees in each ``RunModel``."""

    flow_id: str
    turn_id: str
    session_settings: Mapping[str, object] = field(default_factory=dict)
    interaction_mode: InteractionMode = InteractionMode.CHAT


@dataclass(frozen=True)
class ContinueTurn:
    """Continue the turn with ``message`` as user text (``decide_turn_continuation``)."""

    message: str


TurnContinuation = Literal["end", "default"] | ContinueTurn
"""What ``decide_turn_continuation`` returns."""


@dataclass(frozen=True, kw_only=True)
class TurnContinuationContext:
    """One loop iteration, for ``decide_turn_continuation``.

    Attributes:
        flow_id: The session id.
        turn_id: The turn.
        session_settings: The turn's session settings.
        model_output: The iteration's model output items.
        tool_results: Its tool results (empty when the model answered without tools).
    """

    flow_id: str
    turn_id: str
    session_settings: Mapping[str, object]
    model_output: Sequence[ModelOutputItem]
    tool_results: Sequence[ToolResultItem]


@runtime_checkable
class ToolSource(Protocol):
    """Tools listed at run time, such as an MCP server's.

    A source that is also a ``ToolCallStepOptionsProvider`` gives the tool Steps of its
    calls their own timeout and retry policy; it receives the call with its own reference.
    """

    @property
    def source_name(self) -> str:
        """A name unique among the agent's sources and stable across deploys."""
        ...

    async def list_tools(self) -> Sequence[ModelToolDefinition]:
        """The tools to offer now."""
        ...

    def deferred_tool_call(
        self, listed_tool: ModelToolDefinition, call: ModelToolCall
    ) -> DeferredToolCall:
        """The deferred call (policy, reference) for a call of one of its listed tools."""
        ...

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> DeferredToolOutcome:
        """Run one approved call of one of its tools."""
        ...


Instructions = str | Callable[[InstructionContext], "str | Awaitable[str]"]
ContinuationHook = Callable[
    [TurnContinuationContext], "TurnContinuation | Awaitable[TurnContinuation]"
]


@dataclass(frozen=True, kw_only=True)
class AgentDefinition:
    """An agent defined in Dex terms, run by ``BuiltinLoopAgentRunner``.

    Attributes:
        name: The agent's name.
        instructions: System instructions, or a function of :class:`InstructionContext`
            evaluated in every ``RunModel``.
        model: The model client.
        model_settings: Settings passed to every model call.
        tools: Function tools (see ``function_tool``).
        tool_sources: Sources of tools listed at run time.
        tool_policies: Policies by tool name; they override a function tool's own.
        default_tool_effect: Effect of a tool without a policy.
        built_in_tools: Built-in tools the session offers and routes.
        max_model_calls_per_turn: After this many model calls in one turn the next call
            offers no tools, and a tool call the model makes anyway is not run.
        interrupt_deadline: How long an approval or question may wait.
        event_stream_capacity_bytes: Byte budget of the ``AgentEvents`` Stream.
        plan_mode_enabled: Whether messages may ask for planning turns.
        decide_turn_continuation: Decides at the end of each iteration whether the turn
            ends or continues.
        tool_source_listing_timeout: Longest wait for one source's listing.
    """

    name: str
    instructions: Instructions
    model: ModelClient
    model_settings: Mapping[str, Any] = field(default_factory=dict)
    tools: Sequence[FunctionTool] = ()
    tool_sources: Sequence[ToolSource] = ()
    tool_policies: Mapping[str, ToolPolicy] = field(default_factory=dict)
    default_tool_effect: ToolEffect = ToolEffect.UNCLASSIFIED
    built_in_tools: frozenset[BuiltInTool] = frozenset()
    max_model_calls_per_turn: int = 100
    interrupt_deadline: timedelta | None = None
    event_stream_capacity_bytes: int = 10 * _MiB
    plan_mode_enabled: bool = False
    decide_turn_continuation: ContinuationHook | None = None
    tool_source_listing_timeout: timedelta = timedelta(seconds=10)

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("an agent needs a non-blank name")
        if self.max_model_calls_per_turn < 1:
            raise ValueError("max_model_calls_per_turn must be at least 1")
        names = [tool.name for tool in self.tools]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"two function tools are named {repeated[0]!r}")
        enabled = {tool.value for tool in self.built_in_tools}
        for name in names:
            if name in enabled:
                raise ValueError(f"tool {name} uses the name of an enabled built-in tool")
        sources = [source.source_name for source in self.tool_sources]
        if len(set(sources)) != len(sources):
            raise ValueError("tool sources need unique source_name values")
        declared: dict[str, str] = {}
        for source in self.tool_sources:
            names_of = getattr(source, "declared_tool_names", None)
            for name in names_of() if callable(names_of) else ():
                if name in enabled:
                    raise ValueError(f"tool {name} uses the name of an enabled built-in tool")
                if name in names:
                    raise ValueError(
                        f"tool {name} of a tool source uses the name of a function tool"
                    )
                if name in declared:
                    raise ValueError(f"two tool sources list a tool named {name}")
                declared[name] = source.source_name
        AgentSessionOptions(
            built_in_tools=self.built_in_tools, plan_mode_enabled=self.plan_mode_enabled
        )


def builtin_agent_session_options(definition: AgentDefinition) -> AgentSessionOptions:
    """The session options an agent definition implies."""
    return AgentSessionOptions(
        tool_policies=dict(definition.tool_policies),
        default_tool_effect=definition.default_tool_effect,
        event_stream_capacity_bytes=definition.event_stream_capacity_bytes,
        interrupt_deadline=definition.interrupt_deadline,
        built_in_tools=definition.built_in_tools,
        plan_mode_enabled=definition.plan_mode_enabled,
    )
