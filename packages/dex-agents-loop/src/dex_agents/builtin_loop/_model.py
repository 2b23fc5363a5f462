"""What the loop sends to a model and gets back: the ``ModelClient`` protocol and its values.

A client makes one request per call, with no retries of its own and no provider-side
conversation state, and returns each output item provider-exact: ``ModelOutputItem.item``
is the provider's JSON text, replayed byte for byte to the same provider and API. User
text and tool results are provider-neutral.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from dex_agents import AgentUsage, ModelCallMetadata

__all__ = [
    "ModelClient",
    "ModelInputItem",
    "ModelOutputItem",
    "ModelOutputWriter",
    "ModelRequest",
    "ModelResponse",
    "ModelToolCall",
    "ModelToolDefinition",
    "ToolResultItem",
    "UserTextItem",
    "supports_forced_tool_choice",
]


@dataclass(frozen=True, kw_only=True)
class ModelToolDefinition:
    """A tool as the model sees it.

    Attributes:
        name: The tool name.
        description: What the model reads about the tool.
        parameters: JSON Schema of its arguments (an object schema).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class ModelToolCall:
    """A tool call in a model's output.

    Attributes:
        tool_call_id: The provider's id for the call.
        name: The tool.
        arguments: The arguments as the model wrote them (JSON text, possibly invalid).
    """

    tool_call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, kw_only=True)
class ModelOutputItem:
    """One output item, kept exactly as the provider returned it.

    Attributes:
        provider: Who produced it (``openai``, ``anthropic``, ``scripted``, ...).
        api: The API it came through (``responses``, ``chat_completions``, ``scripted``).
        item: The provider's JSON text, opaque fields included; replayed unchanged to the
            same provider and API.
        text: Its visible text, if any.
        reasoning: Its reasoning summary, if any (dropped when replayed elsewhere).
        tool_call: The tool call it requests, if any.
    """

    provider: str
    api: str
    item: str
    text: str | None = None
    reasoning: str | None = None
    tool_call: ModelToolCall | None = None


@dataclass(frozen=True, kw_only=True)
class UserTextItem:
    """User text, provider-neutral."""

    text: str


@dataclass(frozen=True, kw_only=True)
class ToolResultItem:
    """The result of a tool call, provider-neutral."""

    tool_call_id: str
    tool_name: str
    output: str


ModelInputItem = UserTextItem | ToolResultItem | ModelOutputItem
"""One item of a model request's input, in transcript order."""


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One model call.

    Attributes:
        instructions: The system instructions.
        items: The whole input, in order; every tool call is followed by its result.
        tools: The tools offered in this call (empty: none).
        settings: Model settings (``temperature``, ``max_tokens``, ``tool_choice``, ...),
            passed to the provider as given.
    """

    instructions: str
    items: tuple[ModelInputItem, ...]
    tools: tuple[ModelToolDefinition, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class ModelResponse:
    """What one model call returned.

    Attributes:
        output: The output items, in order.
        usage: Usage of this call.
        metadata: Names the call's span; never stored.
    """

    output: tuple[ModelOutputItem, ...]
    usage: AgentUsage = field(default_factory=AgentUsage)
    metadata: ModelCallMetadata | None = None

    @property
    def tool_calls(self) -> list[ModelToolCall]:
        """The tool calls the model asked for, in order."""
        return [item.tool_call for item in self.output if item.tool_call is not None]

    @property
    def text(self) -> str:
        """The visible text of every output item."""
        return "".join(item.text or "" for item in self.output)


class ModelOutputWriter(Protocol):
    """Where a client streams text while a call runs (the session's events)."""

    def write_text_delta(self, text: str) -> None:
        """Append model text."""

    def write_reasoning_delta(self, text: str) -> None:
        """Append reasoning text."""


@runtime_checkable
class ModelClient(Protocol):
    """A model behind one API: one request per call, no retries of its own."""

    async def call_model(self, request: ModelRequest, output: ModelOutputWriter) -> ModelResponse:
        """Make one model call, streaming text to ``output``."""
        ...

    def estimate_input_tokens(self, request: ModelRequest) -> int:
        """A quick, offline estimate of the request's input tokens."""
        ...


def supports_forced_tool_choice(client: object, settings: Mapping[str, Any]) -> bool:
    """Whether ``client`` can force a tool call with these settings (default: yes)."""
    check = getattr(client, "supports_forced_tool_choice", None)
    return bool(check(settings)) if callable(check) else True
