"""How the loop stores model items in the session transcript and reads them back.

Each stored message's ``framework_item`` is a small JSON object with a ``type``:
``user_text``, ``output`` (a provider-exact model output item) or ``tool_result``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dex_agents import AgentMessage, FrameworkMessage, MessageRole
from dex_agents.builtin_loop._model import (
    ModelInputItem,
    ModelOutputItem,
    ModelToolCall,
    ToolResultItem,
    UserTextItem,
)

__all__ = [
    "input_items",
    "output_message",
    "tool_result_message",
    "unanswered_calls",
    "user_message",
]


def user_message(text: str) -> FrameworkMessage:
    """A user message as the loop stores it."""
    return FrameworkMessage(
        role=MessageRole.USER, framework_item={"type": "user_text", "text": text}, text=text
    )


def output_message(item: ModelOutputItem) -> FrameworkMessage:
    """A model output item as the loop stores it."""
    call = item.tool_call
    return FrameworkMessage(
        role=MessageRole.ASSISTANT,
        framework_item={
            "type": "output",
            "provider": item.provider,
            "api": item.api,
            "item": item.item,
            "text": item.text,
            "reasoning": item.reasoning,
            "tool_call": None
            if call is None
            else {
                "tool_call_id": call.tool_call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
        },
        text=item.text,
        tool_call_id=call.tool_call_id if call else None,
        tool_name=call.name if call else None,
    )


def tool_result_message(result: ToolResultItem) -> FrameworkMessage:
    """A tool result as the loop stores it."""
    return FrameworkMessage(
        role=MessageRole.TOOL,
        framework_item={
            "type": "tool_result",
            "tool_call_id": result.tool_call_id,
            "tool_name": result.tool_name,
            "output": result.output,
        },
        text=result.output,
        tool_call_id=result.tool_call_id,
        tool_name=result.tool_name,
    )


def _item(message: AgentMessage) -> ModelInputItem | None:
    data: Any = message.framework_item
    if not isinstance(data, dict):
        # A message another runner stored: keep its text.
        return UserTextItem(text=message.text) if message.text else None
    kind = data.get("type")
    if kind == "user_text":
        return UserTextItem(text=str(data.get("text", "")))
    if kind == "tool_result":
        return ToolResultItem(
            tool_call_id=str(data["tool_call_id"]),
            tool_name=str(data["tool_name"]),
            output=str(data["output"]),
        )
    if kind == "output":
        call = data.get("tool_call")
        return ModelOutputItem(
            provider=str(data["provider"]),
            api=str(data["api"]),
            item=str(data["item"]),
            text=data.get("text"),
            reasoning=data.get("reasoning"),
            tool_call=None
            if not call
            else ModelToolCall(
                tool_call_id=str(call["tool_call_id"]),
                name=str(call["name"]),
                arguments=str(call["arguments"]),
            ),
        )
    return UserTextItem(text=message.text) if message.text else None


def input_items(messages: Sequence[AgentMessage]) -> list[ModelInputItem]:
    """The model input items of stored messages, in order."""
    return [item for item in map(_item, messages) if item is not None]


def unanswered_calls(items: Sequence[ModelInputItem]) -> list[ModelToolCall]:
    """Stored tool calls that have no stored result yet, in order."""
    answered = {item.tool_call_id for item in items if isinstance(item, ToolResultItem)}
    return [
        item.tool_call
        for item in items
        if isinstance(item, ModelOutputItem)
        and item.tool_call is not None
        and item.tool_call.tool_call_id not in answered
    ]
