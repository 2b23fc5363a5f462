"""The session's Dex Attributes, Channels and Stream, shared by every agent Flow type.

Values travel as compact JSON text written by :mod:`dex_agents._wire`, so a field added in
a later release reads old values without a migration. The typed wrappers here give Steps
and RPCs the value types; ``definition`` is the Dex object for schemas, loads and locks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import dex
from dex import Attribute, AttributeMap, Channel, ChannelMap, Context

from dex_agents._interrupts import AgentInterrupt, AgentInterruptResolution
from dex_agents._messages import AgentMessage, AgentUserMessage, message_sequence_key
from dex_agents._state import AgentState, AgentUsage
from dex_agents._storage import AgentMessageChunk, AgentMessageIndex
from dex_agents._tool_calls import AgentToolCall, ToolCallCompleted
from dex_agents._wire import dumps, loads

__all__ = [
    "AGENT_EVENTS_STREAM_NAME",
    "SESSION_PERSISTENCE",
    "JsonAttribute",
    "JsonAttributeMap",
    "JsonChannel",
    "JsonChannelMap",
    "SessionPersistence",
    "events_stream",
]

T = TypeVar("T")

AGENT_EVENTS_STREAM_NAME = "flow.agent_events"


@dataclass(frozen=True)
class JsonAttribute(Generic[T]):
    """An Attribute holding one JSON-encoded value."""

    definition: Attribute[str]
    kind: type[T]

    def read(self, context: Context) -> T | None:
        """The value, or ``None`` when unset."""
        text = self.definition.get(context)
        return loads(self.kind, text) if text else None

    def write(self, context: Context, value: T) -> None:
        """Stage a new value."""
        self.definition.set(context, dumps(value))

    def delete(self, context: Context) -> None:
        """Stage deletion."""
        self.definition.delete(context)


@dataclass(frozen=True)
class JsonAttributeMap(Generic[T]):
    """An AttributeMap whose instances hold JSON-encoded values."""

    definition: AttributeMap[str]
    kind: type[T]

    def read(self, context: Context, key: str) -> T | None:
        """One instance, or ``None`` when unset (the instance must be loaded)."""
        text = self.definition.get(context, key)
        return loads(self.kind, text) if text else None

    def read_all(self, context: Context) -> dict[str, T]:
        """Every loaded instance by key."""
        values = {}
        for key in self.definition.get_all_instance_keys(context):
            value = self.read(context, key)
            if value is not None:
                values[key] = value
        return values

    def write(self, context: Context, key: str, value: T) -> None:
        """Stage a new instance value."""
        self.definition.set(context, key, dumps(value))

    def delete(self, context: Context, key: str) -> None:
        """Stage deletion of an instance."""
        self.definition.delete(context, key)


@dataclass(frozen=True)
class JsonChannel(Generic[T]):
    """A Channel of JSON-encoded messages."""

    definition: Channel[str]
    kind: type[T]

    def publish(self, context: Context, value: T) -> None:
        """Stage a message."""
        self.definition.publish(context, dumps(value))

    def results(self, context: Context) -> list[T]:
        """What this Step's wait consumed."""
        return [loads(self.kind, text) for text in self.definition.results(context)]

    def pending(self, context: Context) -> list[tuple[str, T]]:
        """Pending messages with their ids (the Channel must be loaded)."""
        return [
            (message.message_id, loads(self.kind, message.value))
            for message in self.definition.pending_messages(context)
        ]


@dataclass(frozen=True)
class JsonChannelMap(Generic[T]):
    """A ChannelMap of JSON-encoded messages."""

    definition: ChannelMap[str]
    kind: type[T]

    def publish(self, context: Context, key: str, value: T) -> None:
        """Stage a message for one instance."""
        self.definition.publish(context, key, dumps(value))

    def results(self, context: Context, key: str) -> list[T]:
        """What this Step's wait consumed from one instance."""
        return [loads(self.kind, text) for text in self.definition.results(context, key)]


@dataclass(frozen=True)
class SessionPersistence:
    """Every Attribute and Channel of a session (see the package docs for their roles)."""

    state: JsonAttribute[AgentState]
    messages: JsonAttributeMap[AgentMessage]
    message_chunks: JsonAttributeMap[AgentMessageChunk]
    message_index: JsonAttribute[AgentMessageIndex]
    turn_reply_sequence: Attribute[int]
    framework_run_state: Attribute[str]
    tool_calls: JsonAttributeMap[AgentToolCall]
    pending_interrupts: Attribute[str]
    usage: JsonAttribute[AgentUsage]
    session_settings: Attribute[str]
    turn_session_settings: Attribute[str]
    queued_user_messages: JsonChannel[AgentUserMessage]
    interrupt_resolutions: JsonChannelMap[AgentInterruptResolution]
    tool_call_results: JsonChannel[ToolCallCompleted]

    def definitions(self) -> tuple[object, ...]:
        """The Dex definitions, for a Flow's persistence schema."""
        items: tuple[object, ...] = (
            self.state,
            self.messages,
            self.message_chunks,
            self.message_index,
            self.turn_reply_sequence,
            self.framework_run_state,
            self.tool_calls,
            self.pending_interrupts,
            self.usage,
            self.session_settings,
            self.turn_session_settings,
            self.queued_user_messages,
            self.interrupt_resolutions,
            self.tool_call_results,
        )
        return tuple(getattr(item, "definition", item) for item in items)

    def read_interrupts(self, context: Context) -> list[AgentInterrupt]:
        """``PendingInterrupts``."""
        text = self.pending_interrupts.get(context)
        return list(loads(tuple[AgentInterrupt, ...], text)) if text else []

    def write_interrupts(self, context: Context, interrupts: Sequence[AgentInterrupt]) -> None:
        """Replace ``PendingInterrupts``."""
        self.pending_interrupts.set(context, dumps(list(interrupts)))

    def store_message(self, context: Context, message: AgentMessage) -> None:
        """Write one window message."""
        self.messages.write(context, message_sequence_key(message.sequence), message)


SESSION_PERSISTENCE = SessionPersistence(
    state=JsonAttribute(Attribute("AGENT_STATE", str), AgentState),
    messages=JsonAttributeMap(AttributeMap("AGENT_MESSAGES", str), AgentMessage),
    message_chunks=JsonAttributeMap(AttributeMap("AGENT_MESSAGE_CHUNKS", str), AgentMessageChunk),
    message_index=JsonAttribute(Attribute("AGENT_MESSAGE_INDEX", str), AgentMessageIndex),
    turn_reply_sequence=Attribute("TURN_REPLY_SEQUENCE", int),
    framework_run_state=Attribute("FRAMEWORK_RUN_STATE", str),
    tool_calls=JsonAttributeMap(AttributeMap("AGENT_TOOL_CALLS", str), AgentToolCall),
    pending_interrupts=Attribute("PENDING_INTERRUPTS", str),
    usage=JsonAttribute(Attribute("AGENT_USAGE", str), AgentUsage),
    session_settings=Attribute("SESSION_SETTINGS", str),
    turn_session_settings=Attribute("TURN_SESSION_SETTINGS", str),
    queued_user_messages=JsonChannel(Channel("QUEUED_USER_MESSAGES", str), AgentUserMessage),
    interrupt_resolutions=JsonChannelMap(
        ChannelMap("INTERRUPT_RESOLUTIONS", str), AgentInterruptResolution
    ),
    tool_call_results=JsonChannel(Channel("TOOL_CALL_RESULTS", str), ToolCallCompleted),
)
"""The one set of definitions every agent Flow type registers."""


def events_stream(capacity_bytes: int) -> dex.Stream[str]:
    """The ``AgentEvents`` Stream definition of a Flow type with this byte budget."""
    return dex.Stream(AGENT_EVENTS_STREAM_NAME, str, capacity_bytes)
