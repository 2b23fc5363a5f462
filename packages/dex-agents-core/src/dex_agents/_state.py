"""The session's own state: status, the active turn, usage."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

__all__ = [
    "AgentSessionStartInput",
    "AgentState",
    "AgentStatus",
    "AgentUsage",
    "InteractionMode",
    "ModelCallMetadata",
    "turn_id_of",
]


class AgentStatus(StrEnum):
    """What the session is doing."""

    WAITING_FOR_USER_MESSAGE = "waiting_for_user_message"
    RUNNING_MODEL = "running_model"
    RUNNING_TOOLS = "running_tools"
    COMPACTING_CONTEXT = "compacting_context"


class InteractionMode(StrEnum):
    """What kind of turn is running."""

    CHAT = "chat"
    PLANNING = "planning"
    EXECUTING = "executing"


@dataclass(frozen=True, kw_only=True)
class AgentUsage:
    """Token usage of one model call, or the session's total.

    Attributes:
        input_tokens: Prompt tokens.
        output_tokens: Completion tokens, reasoning included.
        total_tokens: Input plus output, as the provider reports it.
        cached_input_tokens: Prompt tokens served from a provider cache.
        reasoning_tokens: Output tokens spent on reasoning.
        model_calls: Model calls counted.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    model_calls: int = 0

    def __add__(self, other: AgentUsage) -> AgentUsage:
        return AgentUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            model_calls=self.model_calls + other.model_calls,
        )


@dataclass(frozen=True, kw_only=True)
class ModelCallMetadata:
    """What a runner knows about one model call; names its span, never stored."""

    request_model: str | None = None
    response_model: str | None = None
    provider_name: str | None = None
    response_id: str | None = None
    finish_reasons: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class AgentState:
    """The ``AgentState`` Attribute.

    Attributes:
        status: What the session is doing.
        turn_count: Turns started so far; the active turn is ``turn-<turn_count>``.
        active_turn_id: The running turn, or ``None`` between turns.
        interaction_mode: The kind of the active (or last) turn.
        last_turn_error: Why the last failed turn failed; cleared when a turn completes.
        turn_model_calls: Model calls made by the active turn.
        accepts_turn_control: Whether the active turn can be steered or cancelled.
    """

    status: AgentStatus = AgentStatus.WAITING_FOR_USER_MESSAGE
    turn_count: int = 0
    active_turn_id: str | None = None
    interaction_mode: InteractionMode = InteractionMode.CHAT
    last_turn_error: str | None = None
    turn_model_calls: int = 0
    accepts_turn_control: bool = True

    def start_turn(self, mode: InteractionMode = InteractionMode.CHAT) -> AgentState:
        """The state at the start of the next turn."""
        count = self.turn_count + 1
        return replace(
            self,
            status=AgentStatus.RUNNING_MODEL,
            turn_count=count,
            active_turn_id=turn_id_of(count),
            interaction_mode=mode,
            turn_model_calls=0,
        )

    def end_turn(self, error: str | None) -> AgentState:
        """The state after the active turn ended (``error`` for a failed turn)."""
        return replace(
            self,
            status=AgentStatus.WAITING_FOR_USER_MESSAGE,
            active_turn_id=None,
            last_turn_error=error,
            turn_model_calls=0,
        )


@dataclass(frozen=True, kw_only=True)
class AgentSessionStartInput:
    """Input of ``StartAgentSession`` (the Flow's start input).

    Attributes:
        initial_message: The first user message; blank starts no turn.
        session_settings: The session's settings (a JSON object).
        start_environment: Where the starting program ran; never read by the session.
    """

    initial_message: str | None = None
    session_settings: dict[str, object] | None = None
    start_environment: dict[str, str] | None = None


def turn_id_of(count: int) -> str:
    """``turn-<n>``."""
    return f"turn-{count}"
