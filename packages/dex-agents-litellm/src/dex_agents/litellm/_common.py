"""Helpers both APIs share: JSON items, reading LiteLLM objects, usage and streamed deltas."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from dex_agents.builtin_loop import ModelOutputItem, ModelOutputWriter

__all__ = [
    "DeltaBatcher",
    "JsonObject",
    "as_int",
    "dump_item",
    "field",
    "list_field",
    "load_item",
    "otel_provider_name",
    "read_stream",
    "text_field",
]

JsonObject = dict[str, Any]
"""A JSON object as ``json.loads`` returns it."""

# LiteLLM's provider names mapped to OpenTelemetry's ``gen_ai.provider.name`` values; any
# other provider keeps LiteLLM's name.
_OTEL_PROVIDER_NAMES = {
    "anthropic": "anthropic",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "cohere": "cohere",
    "cohere_chat": "cohere",
    "deepseek": "deepseek",
    "gemini": "gcp.gemini",
    "groq": "groq",
    "mistral": "mistral_ai",
    "openai": "openai",
    "perplexity": "perplexity",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
}


async def read_stream(stream: AsyncIterator[object], source: str) -> AsyncIterator[object]:
    """The chunks or events of a LiteLLM stream, with LiteLLM's own parsing failures named.

    LiteLLM raises its exceptions (``litellm.exceptions``, on top of ``openai``'s) for
    provider errors; anything else out of its stream, such as an ``AttributeError`` for an
    event it could not parse, becomes a ``RuntimeError`` that names ``source``.
    """
    iterator = aiter(stream)
    while True:
        try:
            chunk = await anext(iterator)
        except StopAsyncIteration:
            return
        except Exception as error:
            if type(error).__module__.partition(".")[0] in {"litellm", "openai"}:
                raise
            raise RuntimeError(
                f"{source}: LiteLLM could not read the stream: {type(error).__name__}: {error}"
            ) from error
        yield chunk


def otel_provider_name(provider: str) -> str:
    """The OpenTelemetry ``gen_ai.provider.name`` for a LiteLLM provider name."""
    return _OTEL_PROVIDER_NAMES.get(provider, provider)


def dump_item(value: Mapping[str, Any]) -> str:
    """Compact JSON text for an output item, key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def load_item(item: ModelOutputItem) -> JsonObject:
    """Parse a stored output item of this client.

    Raises:
        ValueError: The item is not JSON.
        TypeError: The item is JSON, but not an object.
    """
    try:
        value = json.loads(item.item)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"stored {item.provider} {item.api} output item is not JSON: {error}"
        ) from error
    if not isinstance(value, dict):
        raise TypeError(f"stored {item.provider} {item.api} output item is not a JSON object")
    return value


def field(value: object, name: str) -> object:
    """Read ``name`` from a LiteLLM object or a dict; ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return cast(object, value.get(name))
    return cast(object, getattr(value, name, None))


def text_field(value: object, name: str) -> str:
    """A string field, ``""`` when absent or not a string."""
    result = field(value, name)
    return result if isinstance(result, str) else ""


def list_field(value: object, name: str) -> list[object]:
    """A list field, ``[]`` when absent or not a list."""
    result = field(value, name)
    return list(result) if isinstance(result, list | tuple) else []


def as_int(value: object) -> int:
    """A token count from a usage field, ``0`` when missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


class DeltaBatcher:
    """Streams text and reasoning deltas to a ``ModelOutputWriter`` in small batches.

    Each ``write_text_delta`` becomes one Stream message, so single-token deltas are
    joined: a batch is written once it holds ``min_chars`` characters or is
    ``max_delay`` seconds old (checked when the next delta arrives), when the kind of
    delta changes, and by ``flush``.
    """

    def __init__(
        self, output: ModelOutputWriter, *, min_chars: int = 32, max_delay: float = 0.1
    ) -> None:
        self._output = output
        self._min_chars = min_chars
        self._max_delay = max_delay
        self._kind = "text"
        self._parts: list[str] = []
        self._size = 0
        self._started = 0.0

    def text(self, delta: str) -> None:
        """Add model text."""
        self._add("text", delta)

    def reasoning(self, delta: str) -> None:
        """Add reasoning text."""
        self._add("reasoning", delta)

    def flush(self) -> None:
        """Write what is buffered."""
        if not self._parts:
            return
        text = "".join(self._parts)
        self._parts.clear()
        self._size = 0
        if self._kind == "text":
            self._output.write_text_delta(text)
        else:
            self._output.write_reasoning_delta(text)

    def _add(self, kind: str, delta: str) -> None:
        if not delta:
            return
        if kind != self._kind:
            self.flush()
            self._kind = kind
        if not self._parts:
            self._started = time.monotonic()
        self._parts.append(delta)
        self._size += len(delta)
        if self._size >= self._min_chars or time.monotonic() - self._started >= self._max_delay:
            self.flush()
