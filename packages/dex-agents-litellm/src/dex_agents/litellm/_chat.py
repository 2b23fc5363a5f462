"""Chat Completions through LiteLLM: messages in, a streamed assistant message out.

Output items. One assistant message becomes one output item per tool call, because the loop
pairs each tool call with one result; a message without tool calls becomes one item. The
first item holds the message as LiteLLM returns it (``role``, ``content``,
``reasoning_content``, Anthropic ``thinking_blocks`` with their ``signature``,
``provider_specific_fields``) with its first tool call in ``tool_calls``; each later item
holds only ``{"tool_calls": [<call>]}``, with no ``role``. Replaying to the same provider
merges an item without ``role`` into the assistant message right before it, so the provider
gets back one message with every tool call, as it sent it. A response with no text,
reasoning or tool call has no output items.

One exception to replaying unchanged: a tool call whose arguments are not a JSON object
(the model broke off its JSON) replays with ``{}`` as its arguments to every provider but
OpenAI and Azure. LiteLLM converts the arguments of the others into an object and refuses
the whole request otherwise; the tool's result already told the model what was wrong.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from dex_agents import AgentUsage, ModelCallMetadata
from dex_agents.builtin_loop import (
    ModelOutputItem,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ModelToolDefinition,
    ToolResultItem,
    UserTextItem,
)
from dex_agents.litellm._common import (
    DeltaBatcher,
    JsonObject,
    as_int,
    dump_item,
    field,
    list_field,
    load_item,
    otel_provider_name,
    read_stream,
    text_field,
)

__all__ = [
    "CHAT_COMPLETIONS",
    "ChatStream",
    "build_messages",
    "chat_settings",
    "chat_tools",
]

CHAT_COMPLETIONS = "chat_completions"
"""``ModelOutputItem.api`` of Chat Completions items."""

# Providers that take a tool call's arguments as the text the model wrote. Through every
# other provider LiteLLM parses them into an object, and fails on text that is not one.
_RAW_ARGUMENT_PROVIDERS = frozenset({"azure", "openai"})


def chat_tools(tools: tuple[ModelToolDefinition, ...]) -> list[JsonObject]:
    """Tool definitions in Chat Completions form."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": dict(tool.parameters),
            },
        }
        for tool in tools
    ]


def chat_settings(settings: Mapping[str, Any]) -> JsonObject:
    """Model settings in Chat Completions form: ``max_output_tokens`` becomes ``max_tokens``."""
    result = dict(settings)
    if "max_output_tokens" in result:
        max_output_tokens = result.pop("max_output_tokens")
        result.setdefault("max_tokens", max_output_tokens)
    return result


def build_messages(request: ModelRequest, provider: str) -> list[JsonObject]:
    """The request as Chat Completions messages for ``provider``.

    Args:
        request: The model request.
        provider: LiteLLM's name of the provider the messages go to.

    Returns:
        The system message (when there are instructions), then one message per input item,
        the tool calls of one assistant message merged back into it.

    Raises:
        ValueError: A stored output item of this provider is not JSON.
        TypeError: A stored output item of this provider is not a JSON object.
    """
    messages: list[JsonObject] = []
    if request.instructions:
        messages.append({"role": "system", "content": request.instructions})
    raw_arguments = provider in _RAW_ARGUMENT_PROVIDERS
    current: JsonObject | None = None  # the assistant message later output items extend
    current_is_native = False
    for item in request.items:
        if isinstance(item, UserTextItem):
            messages.append({"role": "user", "content": item.text})
            current = None
        elif isinstance(item, ToolResultItem):
            messages.append(
                {"role": "tool", "tool_call_id": item.tool_call_id, "content": item.output}
            )
            current = None
        elif item.provider == provider and item.api == CHAT_COMPLETIONS:
            data = load_item(item)
            calls = [
                _replay_call(call, raw_arguments=raw_arguments)
                for call in list_field(data, "tool_calls")
            ]
            if "role" in data:
                current = dict(data)
                if calls:
                    current["tool_calls"] = calls
                messages.append(current)
            elif current is not None and current_is_native:
                current.setdefault("tool_calls", []).extend(calls)
            else:
                current = {"role": "assistant", "content": None, "tool_calls": calls}
                messages.append(current)
            current_is_native = True
        elif item.text or item.tool_call is not None:
            # Another provider's or API's item: its text and tool call; reasoning is dropped.
            if current is None or current_is_native:
                current = {"role": "assistant", "content": None}
                messages.append(current)
                current_is_native = False
            if item.text:
                current["content"] = (current["content"] or "") + item.text
            if item.tool_call is not None:
                call = item.tool_call
                arguments = call.arguments if raw_arguments else _object_text(call.arguments)
                current.setdefault("tool_calls", []).append(
                    {
                        "id": call.tool_call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": arguments},
                    }
                )
    return messages


def _replay_call(call: object, *, raw_arguments: bool) -> object:
    """A stored tool call as it replays: unchanged, unless the provider needs an object."""
    function = field(call, "function")
    if raw_arguments or not isinstance(call, dict) or not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    if not isinstance(arguments, str) or _object_text(arguments) == arguments:
        return call
    return {**call, "function": {**function, "arguments": "{}"}}


def _object_text(arguments: str) -> str:
    """``arguments`` when they are a JSON object, else ``{}``."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return "{}"
    return arguments if isinstance(parsed, dict) else "{}"


class _ToolCallBuilder:
    """One streamed tool call, assembled from its deltas."""

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.provider_fields: JsonObject = {}

    def add(self, delta: object) -> None:
        self.id = self.id or text_field(delta, "id")
        function = field(delta, "function")
        self.name = self.name or text_field(function, "name")
        self.arguments.append(text_field(function, "arguments"))
        extra = field(delta, "provider_specific_fields")
        if isinstance(extra, dict):
            self.provider_fields.update(extra)

    def to_json(self) -> JsonObject:
        # A tool call needs an id to pair with its result; a few servers send none.
        call: JsonObject = {
            "id": self.id or f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": self.name, "arguments": "".join(self.arguments)},
        }
        if self.provider_fields:
            call["provider_specific_fields"] = self.provider_fields
        return call


class ChatStream:
    """Reads one streamed Chat Completions response and builds the ``ModelResponse``."""

    def __init__(self, *, provider: str, request_model: str, batcher: DeltaBatcher) -> None:
        self._provider = provider
        self._request_model = request_model
        self._batcher = batcher
        self._chunks = 0
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._thinking_blocks: list[JsonObject] = []
        self._open_thinking: list[str] = []
        self._provider_fields: JsonObject = {}
        self._tool_calls: dict[int, _ToolCallBuilder] = {}
        self._finish_reasons: list[str] = []
        self._usage: object = None
        self._response_id = ""
        self._response_model = ""

    async def read(self, stream: AsyncIterator[object]) -> ModelResponse:
        """Consume ``stream``, streaming deltas, and return the response.

        Raises:
            RuntimeError: The stream ended before the provider finished the response.
        """
        async for chunk in read_stream(stream, f"{self._request_model} ({self._provider})"):
            self._add_chunk(chunk)
        self._batcher.flush()
        # LiteLLM ends every stream with a finish reason, "stop" when the provider sent none;
        # its stream wrapper records whether the provider did.
        if self._chunks == 0 or (
            getattr(stream, "received_finish_reason", "") is None
            and getattr(stream, "intermittent_finish_reason", None) is None
        ):
            raise RuntimeError(
                f"{self._request_model} ({self._provider}): the Chat Completions stream ended "
                "without a finish reason; it was cut off or is not a Chat Completions stream"
            )
        return ModelResponse(
            output=self._output_items(),
            usage=self._agent_usage(),
            metadata=ModelCallMetadata(
                request_model=self._request_model,
                response_model=self._response_model or None,
                provider_name=otel_provider_name(self._provider),
                response_id=self._response_id or None,
                finish_reasons=tuple(self._finish_reasons),
            ),
        )

    def _add_chunk(self, chunk: object) -> None:
        self._chunks += 1
        self._response_id = self._response_id or text_field(chunk, "id")
        self._response_model = self._response_model or text_field(chunk, "model")
        usage = field(chunk, "usage")
        if usage is not None:
            self._usage = usage
        choices = list_field(chunk, "choices")
        if not choices:
            return
        finish_reason = text_field(choices[0], "finish_reason")
        if finish_reason and finish_reason not in self._finish_reasons:
            self._finish_reasons.append(finish_reason)
        delta = field(choices[0], "delta")
        reasoning = text_field(delta, "reasoning_content")
        if reasoning:
            self._reasoning.append(reasoning)
            self._batcher.reasoning(reasoning)
        for block in list_field(delta, "thinking_blocks"):
            self._add_thinking_block(block)
        content = text_field(delta, "content")
        if content:
            self._content.append(content)
            self._batcher.text(content)
        for call in list_field(delta, "tool_calls"):
            self._tool_call(call).add(call)
        extra = field(delta, "provider_specific_fields")
        if isinstance(extra, dict):
            self._provider_fields.update(
                {key: value for key, value in extra.items() if key != "thinking_blocks"}
            )

    def _tool_call(self, delta: object) -> _ToolCallBuilder:
        index = field(delta, "index")
        if not isinstance(index, int):
            # No index: a new id starts a call, anything else continues the last one.
            call_id = text_field(delta, "id")
            known = [key for key, call in self._tool_calls.items() if call.id == call_id]
            if known:
                index = known[0]
            elif call_id or not self._tool_calls:
                index = max(self._tool_calls, default=-1) + 1
            else:
                index = max(self._tool_calls)
        return self._tool_calls.setdefault(index, _ToolCallBuilder())

    def _add_thinking_block(self, block: object) -> None:
        """Merge a streamed thinking block.

        LiteLLM streams thinking text in unsigned pieces, then the signature: Anthropic's
        signed block repeats the whole text, Bedrock's has none, so the pieces fill it in.
        """
        kind = text_field(block, "type")
        if kind == "thinking":
            text = text_field(block, "thinking")
            signature = field(block, "signature")
            if signature:
                whole = text or "".join(self._open_thinking)
                self._open_thinking.clear()
                self._thinking_blocks.append(
                    {"type": "thinking", "thinking": whole, "signature": signature}
                )
            else:
                self._open_thinking.append(text)
        elif kind:
            # redacted_thinking and any other block: opaque, kept as it came.
            self._close_thinking()
            if isinstance(block, dict):
                self._thinking_blocks.append(dict(block))
            else:
                self._thinking_blocks.append({"type": kind, "data": field(block, "data")})

    def _close_thinking(self) -> None:
        """Keep thinking text that never got a signature (providers that sign nothing)."""
        if self._open_thinking:
            text = "".join(self._open_thinking)
            self._open_thinking.clear()
            if text:
                self._thinking_blocks.append({"type": "thinking", "thinking": text})

    def _output_items(self) -> tuple[ModelOutputItem, ...]:
        self._close_thinking()
        content = "".join(self._content)
        reasoning = "".join(self._reasoning) or "".join(
            str(block.get("thinking") or "") for block in self._thinking_blocks
        )
        calls = [self._tool_calls[index].to_json() for index in sorted(self._tool_calls)]
        if not (content or reasoning or self._thinking_blocks or calls):
            return ()
        message: JsonObject = {"role": "assistant", "content": content or None}
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self._thinking_blocks:
            message["thinking_blocks"] = self._thinking_blocks
        if self._provider_fields:
            message["provider_specific_fields"] = self._provider_fields
        if calls:
            message["tool_calls"] = calls[:1]
        items = [
            ModelOutputItem(
                provider=self._provider,
                api=CHAT_COMPLETIONS,
                item=dump_item(message),
                text=content or None,
                reasoning=reasoning or None,
                tool_call=_model_tool_call(calls[0]) if calls else None,
            )
        ]
        items.extend(
            ModelOutputItem(
                provider=self._provider,
                api=CHAT_COMPLETIONS,
                item=dump_item({"tool_calls": [call]}),
                tool_call=_model_tool_call(call),
            )
            for call in calls[1:]
        )
        return tuple(items)

    def _agent_usage(self) -> AgentUsage:
        usage = self._usage
        return AgentUsage(
            input_tokens=as_int(field(usage, "prompt_tokens")),
            output_tokens=as_int(field(usage, "completion_tokens")),
            total_tokens=as_int(field(usage, "total_tokens")),
            cached_input_tokens=as_int(
                field(field(usage, "prompt_tokens_details"), "cached_tokens")
            ),
            reasoning_tokens=as_int(
                field(field(usage, "completion_tokens_details"), "reasoning_tokens")
            ),
            model_calls=1,
        )


def _model_tool_call(call: JsonObject) -> ModelToolCall:
    function = call["function"]
    return ModelToolCall(
        tool_call_id=call["id"], name=function["name"], arguments=function["arguments"]
    )
