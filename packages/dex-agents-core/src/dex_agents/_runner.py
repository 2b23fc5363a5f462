"""The runner contract: what an adapter implements and what the session hands it.

The session calls the runner from Steps, so every call may run again after a crash or a
retry: a runner keeps no state between calls and derives everything from the arguments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

from dex_agents._builtin_tools import BuiltInTool
from dex_agents._events import AgentEventWriter
from dex_agents._messages import AgentMessage, FrameworkMessage
from dex_agents._policies import ToolEffect, ToolPolicy, resolve_tool_policy
from dex_agents._state import AgentUsage, InteractionMode, ModelCallMetadata
from dex_agents._tool_calls import AgentToolCall

if TYPE_CHECKING:
    from dex import AsyncContext, RetryPolicy

__all__ = [
    "AgentFrameworkRunner",
    "AgentTurnContext",
    "AgentTurnOutcome",
    "DeferredToolCall",
    "DeferredToolExecution",
    "DeferredToolOutcome",
    "ToolCallStepOptions",
    "ToolCallStepOptionsProvider",
    "ToolCallsRequested",
    "ToolExecutionError",
    "ToolExecutionResult",
    "ToolInputRequested",
    "ToolOutcomeUnknownError",
    "TurnCompleted",
    "TurnContinued",
    "UnfinishedTurnMessageBuilder",
]


@dataclass(frozen=True, kw_only=True)
class DeferredToolCall:
    """A tool call the model asked for, which the session runs in its own Step.

    Attributes:
        tool_call_id: Non-empty, without ``/``, unique within the turn.
        tool_name: The tool.
        arguments: The arguments as the model sent them (JSON text).
        policy: From ``AgentTurnContext.resolve_tool_policy``.
        tool_source_reference: Opaque text stored on the call's record for its tool source.
    """

    tool_call_id: str
    tool_name: str
    arguments: str
    policy: ToolPolicy
    tool_source_reference: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCallsRequested:
    """The model asked for tools: the session runs them, then calls the runner again.

    Attributes:
        framework_run_state: Non-empty state that continues the turn after the tools.
        tool_calls: One entry per call, in model order.
        usage: Usage of this model call only.
        new_messages: Items to store now (a runner that stores items as they appear).
        model_call_metadata: Names the model call's span; never stored.
    """

    framework_run_state: str
    tool_calls: Sequence[DeferredToolCall]
    usage: AgentUsage = field(default_factory=AgentUsage)
    new_messages: Sequence[FrameworkMessage] = ()
    model_call_metadata: ModelCallMetadata | None = None


@dataclass(frozen=True, kw_only=True)
class TurnCompleted:
    """The turn ended: the session stores ``new_messages`` in one commit.

    Attributes:
        new_messages: The turn's items the session has not stored yet, in order.
        usage: Usage of this model call only.
        turn_error: Ends the turn as failed, without a retry; becomes ``last_turn_error``.
        model_call_metadata: Names the model call's span; never stored.
    """

    new_messages: Sequence[FrameworkMessage] = ()
    usage: AgentUsage = field(default_factory=AgentUsage)
    turn_error: str | None = None
    model_call_metadata: ModelCallMetadata | None = None


@dataclass(frozen=True, kw_only=True)
class TurnContinued:
    """Make another model call in the same turn after storing ``new_messages``."""

    framework_run_state: str
    new_messages: Sequence[FrameworkMessage] = ()
    usage: AgentUsage = field(default_factory=AgentUsage)
    model_call_metadata: ModelCallMetadata | None = None


AgentTurnOutcome = TurnCompleted | ToolCallsRequested | TurnContinued
"""What ``run_model_step`` returns."""


@dataclass(frozen=True, kw_only=True)
class ToolExecutionResult:
    """A tool's result; ``output`` is what the model sees."""

    output: str


@dataclass(frozen=True, kw_only=True)
class ToolInputRequested:
    """The tool needs an answer before it takes any effect.

    Attributes:
        question: What to ask the user.
        choices: Allowed answers, when restricted.
        allows_free_text: Whether any non-blank answer is accepted.
        continuation: Stored as the record's ``input_continuation`` for the next attempt.
    """

    question: str
    choices: Sequence[str] = ()
    allows_free_text: bool = True
    continuation: str | None = None


DeferredToolOutcome = ToolExecutionResult | ToolInputRequested
"""What ``execute_deferred_tool_call`` of a runner whose tools ask questions returns."""


class ToolExecutionError(Exception):
    """A tool failure the model should see: the call records ``failed``, without a retry."""


class ToolOutcomeUnknownError(Exception):
    """The tool sent a write and cannot tell whether it took effect: ``outcome_unknown``."""


@dataclass(frozen=True, kw_only=True)
class AgentTurnContext:
    """Committed state handed to ``run_model_step``.

    Attributes:
        flow_id: The session id.
        turn_id: ``turn-<n>``.
        attempt: The one-based ``RunModel`` attempt.
        messages: Every stored message in sequence order.
        framework_run_state: ``None`` for the turn's first model call, else the state from
            its last ``ToolCallsRequested`` or ``TurnContinued``.
        tool_calls: This turn's tool call records by id (all final when ``RunModel`` runs).
        events: Writes events bound to this turn, Step execution and attempt.
        enabled_built_in_tools: Built-in tools to offer to the model.
        session_settings: The turn's session settings (empty when there are none).
        interaction_mode: The kind of turn.
    """

    flow_id: str
    turn_id: str
    attempt: int
    messages: Sequence[AgentMessage]
    framework_run_state: str | None
    tool_calls: Mapping[str, AgentToolCall]
    events: AgentEventWriter
    enabled_built_in_tools: frozenset[BuiltInTool] = frozenset()
    session_settings: Mapping[str, object] = field(default_factory=dict)
    interaction_mode: InteractionMode = InteractionMode.CHAT
    tool_policies: Mapping[str, ToolPolicy] = field(default_factory=dict, repr=False)
    default_tool_effect: ToolEffect = field(default=ToolEffect.UNCLASSIFIED, repr=False)
    heartbeat_function: Callable[[], Awaitable[None]] | None = field(default=None, repr=False)

    @property
    def is_resuming(self) -> bool:
        """Whether this model call continues the turn after tool calls or a continuation."""
        return self.framework_run_state is not None

    def recorded_tool_call(self, tool_call_id: str) -> AgentToolCall | None:
        """The record of one of this turn's tool calls."""
        return self.tool_calls.get(tool_call_id)

    def resolve_tool_policy(
        self, name: str, framework_effect: ToolEffect | None = None
    ) -> ToolPolicy:
        """The policy of a tool: explicit policy, else framework metadata, else the default."""
        return resolve_tool_policy(
            name, self.tool_policies, self.default_tool_effect, framework_effect
        )

    async def heartbeat(self) -> None:
        """Record liveness (the session also heartbeats every 20 seconds)."""
        if self.heartbeat_function is not None:
            await self.heartbeat_function()


@dataclass(frozen=True, kw_only=True)
class DeferredToolExecution:
    """An approved tool call handed to ``execute_deferred_tool_call``.

    Attributes:
        flow_id: The session id.
        turn_id: The call's turn.
        tool_call: The call's record.
        idempotency_key: ``<flow_id>/<turn_id>/<tool_call_id>``, the same on every attempt.
        attempt: The tool Step's attempt.
        events: Writes events bound to the tool Step.
        input_answers: Answers to the tool's earlier questions, in order.
        heartbeat_checkpoint: Text an earlier attempt saved with
            :meth:`save_heartbeat_checkpoint`.
        context: The tool Step's live Dex context, valid during the call only.
        supports_tool_tasks: Whether the runner polls tool tasks.
    """

    flow_id: str
    turn_id: str
    tool_call: AgentToolCall
    idempotency_key: str
    attempt: int
    events: AgentEventWriter
    input_answers: tuple[str, ...] = ()
    heartbeat_checkpoint: str | None = None
    context: AsyncContext | None = field(default=None, repr=False)
    supports_tool_tasks: bool = False
    heartbeat_function: Callable[[], Awaitable[None]] | None = field(default=None, repr=False)
    checkpoint_function: Callable[[str], Awaitable[None]] | None = field(default=None, repr=False)

    async def heartbeat(self) -> None:
        """Record liveness (carrying the saved checkpoint, if any)."""
        if self.heartbeat_function is not None:
            await self.heartbeat_function()

    async def save_heartbeat_checkpoint(self, text: str) -> None:
        """Record a heartbeat carrying ``text``; a retried attempt reads it back."""
        if self.checkpoint_function is not None:
            await self.checkpoint_function(text)


ToolOutcomeT_co = TypeVar("ToolOutcomeT_co", covariant=True)


class AgentFrameworkRunner(Protocol[ToolOutcomeT_co]):
    """What an adapter implements to run its framework inside a session."""

    def build_user_message(self, text: str) -> FrameworkMessage:
        """Wrap user text as the framework's user item (role ``user``)."""
        ...

    async def run_model_step(self, turn: AgentTurnContext) -> AgentTurnOutcome:
        """Make at most one model call and say how the turn goes on."""
        ...

    async def execute_deferred_tool_call(self, call: DeferredToolExecution) -> ToolOutcomeT_co:
        """Run one approved tool call once."""
        ...


@runtime_checkable
class UnfinishedTurnMessageBuilder(Protocol):
    """Optional: the exact transcript of a turn that ends early (failure, steer)."""

    def build_unfinished_turn_messages(self, turn: AgentTurnContext) -> Sequence[FrameworkMessage]:
        """The turn's items not stored yet, with a result for every tool call."""
        ...


@dataclass(frozen=True, kw_only=True)
class ToolCallStepOptions:
    """One call's own tool Step settings, from a `ToolCallStepOptionsProvider`.

    Attributes:
        execute_method_timeout: Each attempt's timeout; ``None`` keeps
            ``AgentSessionOptions.tool_timeout``.
        retry_policy: ``CallTool``'s retry policy; ``None`` keeps three attempts. It is
            ignored for ``CallSingleAttemptTool``, which never retries.
    """

    execute_method_timeout: timedelta | None = None
    retry_policy: RetryPolicy | None = None

    def __post_init__(self) -> None:
        if self.execute_method_timeout is not None and self.execute_method_timeout <= timedelta():
            raise ValueError("execute_method_timeout must be positive")


@runtime_checkable
class ToolCallStepOptionsProvider(Protocol):
    """Optional: gives a call's tool Step its own timeout and retry policy.

    Called when the session moves an approved call to its tool Step; the options hold for
    every attempt of that Step. A tool source with its own limits (an API's timeout, its
    retry rules) implements it.
    """

    def tool_call_step_options(self, call: AgentToolCall) -> ToolCallStepOptions | None:
        """The call's tool Step options, or ``None`` for the session's defaults."""
        ...
