"""The OpenAI Responses API through LiteLLM: input items in, streamed output items out.

Each output item (``message``, ``reasoning`` with its ``encrypted_content``,
``function_call``, ...) is stored as the JSON object the provider streamed in its
``response.output_item.done`` event, field order and unknown fields kept, and replayed as an
input item unchanged. Nothing is stored provider-side (``store=False``), so encrypted
reasoning is what carries the model's reasoning from one call to the next.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

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
    "RESPONSES",
    "ResponsesStream",
    "build_input",
    "responses_settings",
    "responses_tools",
]

RESPONSES = "responses"
"""``ModelOutputItem.api`` of Responses API items."""

_TEXT_DELTAS = frozenset({"response.output_text.delta", "response.refusal.delta"})
_REASONING_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)


def responses_tools(tools: tuple[ModelToolDefinition, ...]) -> list[JsonObject]:
    """Tool definitions in Responses API form.

    ``strict`` is off: the Responses API turns it on by default, which refuses any
    parameters schema that is not written for strict mode.
    """
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
            "strict": False,
        }
        for tool in tools
    ]


def responses_settings(settings: Mapping[str, Any], *, reasoning_model: bool) -> JsonObject:
    """Model settings in Responses API form.

    Chat Completions names are translated: ``max_tokens`` becomes ``max_output_tokens``,
    ``reasoning_effort`` becomes ``reasoning.effort``, and a ``tool_choice`` naming a
    function loses its ``function`` wrapper. A reasoning model gets
    ``reasoning.summary="auto"``, so its reasoning summaries stream, unless the settings
    set ``reasoning.summary`` themselves (``None`` asks for none).
    """
    result = dict(settings)
    if "max_tokens" in result:
        max_tokens = result.pop("max_tokens")
        result.setdefault("max_output_tokens", max_tokens)
    reasoning = dict(result.pop("reasoning", None) or {})
    if "reasoning_effort" in result:
        reasoning.setdefault("effort", result.pop("reasoning_effort"))
    if reasoning_model:
        reasoning.setdefault("summary", "auto")
    if reasoning:
        result["reasoning"] = reasoning
    tool_choice = result.get("tool_choice")
    if isinstance(tool_choice, Mapping) and isinstance(tool_choice.get("function"), Mapping):
        result["tool_choice"] = {"type": "function", "name": tool_choice["function"]["name"]}
    return result


def build_input(request: ModelRequest, provider: str) -> list[JsonObject]:
    """The request's items as Responses API input items for ``provider``.

    Raises:
        ValueError: A stored output item of this provider is not JSON.
        TypeError: A stored output item of this provider is not a JSON object.
    """
    items: list[JsonObject] = []
    for item in request.items:
        if isinstance(item, UserTextItem):
            items.append({"role": "user", "content": item.text})
        elif isinstance(item, ToolResultItem):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": item.tool_call_id,
                    "output": item.output,
                }
            )
        elif item.provider == provider and item.api == RESPONSES:
            items.append(load_item(item))
        else:
            # Another provider's or API's item: its text and tool call; reasoning is dropped.
            if item.text:
                items.append({"role": "assistant", "content": item.text})
            if item.tool_call is not None:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": item.tool_call.tool_call_id,
                        "name": item.tool_call.name,
                        "arguments": item.tool_call.arguments,
                    }
                )
    return items


class ResponsesStream:
    """Reads one streamed Responses API response and builds the ``ModelResponse``."""

    def __init__(self, *, provider: str, request_model: str, batcher: DeltaBatcher) -> None:
        self._provider = provider
        self._request_model = request_model
        self._batcher = batcher
        self._items: dict[int, JsonObject] = {}
        self._final: object = None
        self._reasoning_part: tuple[object, object] | None = None

    async def read(self, stream: AsyncIterator[object]) -> ModelResponse:
        """Consume ``stream``, streaming deltas, and return the response.

        Raises:
            RuntimeError: The provider reported an error, or the stream ended before the
                response did.
        """
        async for event in read_stream(stream, f"{self._request_model} ({self._provider})"):
            self._add_event(event)
        self._batcher.flush()
        final = self._final
        if final is None:
            raise RuntimeError(
                f"{self._request_model} ({self._provider}): the Responses API stream ended "
                "before response.completed"
            )
        for index, item in enumerate(list_field(final, "output")):
            self._items.setdefault(index, _as_json(item))
        output = tuple(self._output_item(self._items[index]) for index in sorted(self._items))
        return ModelResponse(
            output=output,
            usage=_agent_usage(field(final, "usage")),
            metadata=ModelCallMetadata(
                request_model=self._request_model,
                response_model=text_field(final, "model") or None,
                provider_name=otel_provider_name(self._provider),
                response_id=_original_response_id(text_field(final, "id")),
                finish_reasons=(_finish_reason(final, output),),
            ),
        )

    def _add_event(self, event: object) -> None:
        kind = text_field(event, "type")
        if kind in _TEXT_DELTAS:
            self._batcher.text(text_field(event, "delta"))
        elif kind in _REASONING_DELTAS:
            part = (field(event, "item_id"), field(event, "summary_index"))
            if self._reasoning_part is not None and part != self._reasoning_part:
                self._batcher.reasoning("\n\n")
            self._reasoning_part = part
            self._batcher.reasoning(text_field(event, "delta"))
        elif kind == "response.output_item.done":
            index = field(event, "output_index")
            item = field(event, "item")
            if isinstance(index, int) and item is not None:
                self._items[index] = _as_json(item)
        elif kind in {"response.completed", "response.incomplete"}:
            self._final = field(event, "response")
        elif kind in {"response.failed", "error"}:
            error = field(field(event, "response"), "error") if kind == "response.failed" else event
            code = text_field(error, "code")
            message = text_field(error, "message") or "no message"
            raise RuntimeError(
                f"{self._request_model} ({self._provider}) failed the response"
                + (f" with {code}" if code else "")
                + f": {message}"
            )

    def _output_item(self, item: JsonObject) -> ModelOutputItem:
        kind = item.get("type")
        text: str | None = None
        reasoning: str | None = None
        tool_call: ModelToolCall | None = None
        if kind == "message":
            parts = [
                str(part.get("text") or part.get("refusal") or "")
                for part in item.get("content") or []
                if isinstance(part, dict)
            ]
            text = "".join(parts) or None
        elif kind == "reasoning":
            summaries = [
                str(part.get("text") or "")
                for part in item.get("summary") or []
                if isinstance(part, dict)
            ]
            reasoning = "\n\n".join(summary for summary in summaries if summary) or None
        elif kind == "function_call":
            tool_call = ModelToolCall(
                tool_call_id=str(item.get("call_id") or ""),
                name=str(item.get("name") or ""),
                arguments=str(item.get("arguments") or ""),
            )
        return ModelOutputItem(
            provider=self._provider,
            api=RESPONSES,
            item=dump_item(item),
            text=text,
            reasoning=reasoning,
            tool_call=tool_call,
        )


def _as_json(item: object) -> JsonObject:
    """An output item as the JSON object the provider sent: only the fields it set."""
    if isinstance(item, Mapping):
        return dict(item)
    model_dump = getattr(item, "model_dump", None)  # LiteLLM's and OpenAI's pydantic models
    if callable(model_dump):
        return cast(JsonObject, model_dump(mode="json", exclude_unset=True))
    raise RuntimeError(f"unexpected Responses API output item: {item!r}")


def _agent_usage(usage: object) -> AgentUsage:
    return AgentUsage(
        input_tokens=as_int(field(usage, "input_tokens")),
        output_tokens=as_int(field(usage, "output_tokens")),
        total_tokens=as_int(field(usage, "total_tokens")),
        cached_input_tokens=as_int(field(field(usage, "input_tokens_details"), "cached_tokens")),
        reasoning_tokens=as_int(field(field(usage, "output_tokens_details"), "reasoning_tokens")),
        model_calls=1,
    )


def _finish_reason(final: object, output: tuple[ModelOutputItem, ...]) -> str:
    """``tool_calls`` or ``stop``; for an incomplete response, why it stopped."""
    if field(final, "status") == "incomplete":
        return text_field(field(final, "incomplete_details"), "reason") or "incomplete"
    return "tool_calls" if any(item.tool_call for item in output) else "stop"


def _original_response_id(response_id: str) -> str | None:
    """The provider's response ID; LiteLLM returns it wrapped with its routing data."""
    if not response_id:
        return None
    from litellm.responses.utils import ResponsesAPIRequestUtils

    return ResponsesAPIRequestUtils.decode_previous_response_id_to_original_previous_response_id(
        response_id
    )
