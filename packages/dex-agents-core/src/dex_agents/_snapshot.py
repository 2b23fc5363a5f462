"""What ``get_agent_snapshot`` and ``list_agent_messages`` return, and how they are built."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dex_agents._interrupts import AgentInterrupt
from dex_agents._messages import AgentMessage
from dex_agents._state import AgentState, AgentUsage
from dex_agents._storage import AgentMessageIndex
from dex_agents._tool_calls import AgentToolCall

__all__ = [
    "MAX_MESSAGE_PAGE_SIZE",
    "SNAPSHOT_MESSAGE_LIMIT",
    "AgentMessagesPage",
    "AgentSnapshot",
    "ListAgentMessagesRequest",
    "QueuedUserMessage",
    "page_messages",
]

SNAPSHOT_MESSAGE_LIMIT = 200
MAX_MESSAGE_PAGE_SIZE = 200


@dataclass(frozen=True, kw_only=True)
class QueuedUserMessage:
    """A message waiting for the running turn to end, with its Channel message id."""

    message_id: str
    text: str
    plan_mode: bool = False


@dataclass(frozen=True, kw_only=True)
class AgentSnapshot:
    """A session at one moment.

    Attributes:
        state: ``None`` until ``StartAgentSession`` commits.
        messages: The last 200 stored messages, oldest first.
        pending_interrupts: Approvals and questions waiting for a person.
        tool_calls: The active turn's tool call records, in model order.
        usage: The session's total usage.
        queued_message_count: Messages waiting for the running turn to end.
        queued_messages: Those messages with their ids.
        session_settings: The settings the next turn starts with.
        first_sequence: The oldest stored message, or ``None`` before any.
    """

    state: AgentState | None
    messages: tuple[AgentMessage, ...] = ()
    pending_interrupts: tuple[AgentInterrupt, ...] = ()
    tool_calls: tuple[AgentToolCall, ...] = ()
    usage: AgentUsage = field(default_factory=AgentUsage)
    queued_message_count: int = 0
    queued_messages: tuple[QueuedUserMessage, ...] = ()
    session_settings: dict[str, object] = field(default_factory=dict)
    first_sequence: int | None = None


@dataclass(frozen=True, kw_only=True)
class ListAgentMessagesRequest:
    """Input of ``list_agent_messages``: the page before ``before_sequence`` (or the newest).

    ``limit`` is clamped to 1..200.
    """

    before_sequence: int | None = None
    limit: int = 50


@dataclass(frozen=True, kw_only=True)
class AgentMessagesPage:
    """A page of stored messages, oldest first.

    Attributes:
        messages: The page.
        next_before_sequence: Pass it as ``before_sequence`` for the older page; ``None``
            on the last page.
        deleted_before_sequence: Set once retention deleted messages before this sequence.
    """

    messages: tuple[AgentMessage, ...]
    next_before_sequence: int | None = None
    deleted_before_sequence: int | None = None


def page_messages(
    messages: Sequence[AgentMessage],
    request: ListAgentMessagesRequest,
    index: AgentMessageIndex | None,
) -> AgentMessagesPage:
    """Cut one page out of every stored message (sorted by sequence)."""
    limit = min(max(request.limit, 1), MAX_MESSAGE_PAGE_SIZE)
    before = request.before_sequence
    older = [m for m in messages if before is None or m.sequence < before]
    page = older[-limit:]
    first_stored = index.first_sequence if index is not None else 1
    return AgentMessagesPage(
        messages=tuple(page),
        next_before_sequence=page[0].sequence if len(older) > len(page) else None,
        deleted_before_sequence=first_stored if first_stored > 1 else None,
    )
