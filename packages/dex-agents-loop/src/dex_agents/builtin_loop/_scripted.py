"""``ScriptedModelClient``: a model that answers from a function, for demos and tests."""

from __future__ import annotations

import inspect
import json
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from dex_agents import AgentUsage, ModelCallMetadata
from dex_agents.builtin_loop._model import (
    ModelOutputItem,
    ModelOutputWriter,
    ModelRequest,
    ModelResponse,
    ModelToolCall,
    ToolResultItem,
    UserTextItem,
)

__all__ = ["ScriptedModelClient", "ScriptedModelReply", "ScriptedToolCall"]

_PROVIDER = "scripted"


@dataclass(frozen=True, kw_only=True)
class ScriptedToolCall:
    """A tool call in a scripted reply.

    Attributes:
        name: The tool.
        arguments: A JSON object, or JSON text exactly as a model would send it.
        tool_call_id: The call's id; by default derived from the request, so a rerun of
            the same request repeats it.
    """

    name: str
    arguments: Mapping[str, object] | str = field(default_factory=dict)
    tool_call_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScriptedModelReply:
    """What the scripted model says: text, tool calls and reasoning."""

    text: str | None = None
    tool_calls: Sequence[ScriptedToolCall] = ()
    reasoning: str | None = None
    usage: AgentUsage | None = None


Respond = Callable[[ModelRequest], "ScriptedModelReply | Awaitable[ScriptedModelReply]"]


class ScriptedModelClient:
    """A ``ModelClient`` that answers each call from ``respond(request)``.

    Keep ``respond`` deterministic: a crashed ``RunModel`` reruns it with the same request.

    Args:
        respond: Returns a :class:`ScriptedModelReply`, directly or as an awaitable.
        max_recorded_requests: How many recent requests :attr:`requests` keeps.
    """

    def __init__(self, respond: Respond, *, max_recorded_requests: int = 100) -> None:
        self._respond = respond
        self.requests: deque[ModelRequest] = deque(maxlen=max_recorded_requests)

    async def call_model(self, request: ModelRequest, output: ModelOutputWriter) -> ModelResponse:
        """Answer one call: stream the reply's text, return its items."""
        self.requests.append(request)
        reply = self._respond(request)
        if inspect.isawaitable(reply):
            reply = await reply
        if not isinstance(reply, ScriptedModelReply):
            raise TypeError(f"respond returned {type(reply).__name__}, not ScriptedModelReply")
        items: list[ModelOutputItem] = []
        if reply.reasoning:
            output.write_reasoning_delta(reply.reasoning)
            items.append(
                self._item(
                    {"type": "reasoning", "text": reply.reasoning}, reasoning=reply.reasoning
                )
            )
        if reply.text:
            output.write_text_delta(reply.text)
            items.append(self._item({"type": "message", "text": reply.text}, text=reply.text))
        for index, call in enumerate(reply.tool_calls):
            arguments = (
                call.arguments
                if isinstance(call.arguments, str)
                else json.dumps(dict(call.arguments))
            )
            call_id = call.tool_call_id or f"call-{len(request.items)}-{index}"
            tool_call = ModelToolCall(tool_call_id=call_id, name=call.name, arguments=arguments)
            items.append(
                self._item(
                    {"type": "tool_call", "id": call_id, "name": call.name, "arguments": arguments},
                    tool_call=tool_call,
                )
            )
        usage = reply.usage or AgentUsage(
            input_tokens=self.estimate_input_tokens(request),
            output_tokens=len(reply.text or "") // 4,
            total_tokens=self.estimate_input_tokens(request) + len(reply.text or "") // 4,
        )
        return ModelResponse(
            output=tuple(items),
            usage=usage,
            metadata=ModelCallMetadata(provider_name=_PROVIDER, request_model=_PROVIDER),
        )

    @staticmethod
    def _item(
        data: dict[str, object],
        *,
        text: str | None = None,
        reasoning: str | None = None,
        tool_call: ModelToolCall | None = None,
    ) -> ModelOutputItem:
        return ModelOutputItem(
            provider=_PROVIDER,
            api=_PROVIDER,
            item=json.dumps(data, ensure_ascii=False),
            text=text,
            reasoning=reasoning,
            tool_call=tool_call,
        )

    def estimate_input_tokens(self, request: ModelRequest) -> int:
        """About four characters per token over the instructions and items."""
        characters = len(request.instructions) + sum(
            len(getattr(item, "text", None) or getattr(item, "output", None) or "")
            for item in request.items
        )
        return characters // 4

    @staticmethod
    def user_texts(request: ModelRequest) -> list[str]:
        """Every user text of a request, in order."""
        return [item.text for item in request.items if isinstance(item, UserTextItem)]

    @staticmethod
    def tool_results(request: ModelRequest) -> list[ToolResultItem]:
        """The tool results after the request's last user text (this iteration's results)."""
        results: list[ToolResultItem] = []
        for item in request.items:
            if isinstance(item, UserTextItem):
                results = []
            elif isinstance(item, ToolResultItem):
                results.append(item)
        return results
