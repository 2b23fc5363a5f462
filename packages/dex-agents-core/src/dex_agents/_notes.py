"""The note a failed turn leaves so the next turn does not repeat its writes."""

from __future__ import annotations

from collections.abc import Iterable

from dex_agents._tool_calls import AgentToolCall, describe_tool_call_outcome

__all__ = ["build_turn_failure_note"]


def build_turn_failure_note(records: Iterable[AgentToolCall]) -> str | None:
    """The turn-failure note over a turn's final tool call records, in model order.

    Returns ``None`` when no record is final (no tool ran, so nothing can repeat).
    """
    final = sorted(
        (record for record in records if record.status.is_final),
        key=lambda record: record.deferral_order,
    )
    if not final:
        return None
    lines = ["[Dex] The previous turn failed after these tool calls ran:"]
    lines.extend(
        f"- {record.tool_name} {record.arguments} -> {record.status.value}: "
        f"{describe_tool_call_outcome(record)}"
        for record in final
    )
    lines.append("Do not repeat these tool calls unless the user asks again.")
    return "\n".join(lines)
