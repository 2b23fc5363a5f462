"""Messages of a session: what the user sent and what the transcript stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "AgentMessage",
    "AgentUserMessage",
    "FrameworkMessage",
    "MessageRole",
    "message_sequence_key",
]


class MessageRole(StrEnum):
    """Who a stored message is from."""

    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"


@dataclass(frozen=True, kw_only=True)
class FrameworkMessage:
    """One transcript item as a runner produces it.

    Attributes:
        role: Who the item is from.
        framework_item: The framework's own JSON-serializable item; the session stores it
            as given and hands it back to the runner.
        text: Plain text for display and tracing, when the item has any.
        tool_call_id: For a tool request or result item, the call it belongs to.
        tool_name: For a tool request or result item, the tool's name.
    """

    role: MessageRole
    framework_item: Any = None
    text: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None


@dataclass(frozen=True, kw_only=True)
class AgentMessage:
    """A stored transcript message.

    Attributes:
        sequence: Position in the session, from 1, never reused.
        role: Who the message is from.
        framework_item: The runner's item, as stored.
        text: Plain text, when the item has any.
        turn_id: The turn that stored it (``turn-<n>``).
        tool_call_id: The tool call a request or result item belongs to.
        tool_name: The tool of that call.
        created_at: ISO 8601 time the Step that stored it ran.
    """

    sequence: int
    role: MessageRole
    framework_item: Any = None
    text: str | None = None
    turn_id: str | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    created_at: str = ""


@dataclass(frozen=True, kw_only=True)
class AgentUserMessage:
    """A message a user sends to a session (the input of ``send_user_message``).

    Attributes:
        text: The message; blank text is refused.
        plan_mode: Ask for a planning turn (see plan mode).
        metadata: Application data kept with the message, never shown to the model.
    """

    text: str
    plan_mode: bool = False
    metadata: dict[str, str] = field(default_factory=dict)


def message_sequence_key(sequence: int) -> str:
    """The AttributeMap key of a message sequence: 12 digits, zero-padded."""
    if sequence < 1:
        raise ValueError(f"message sequences start at 1, not {sequence}")
    return f"{sequence:012d}"
