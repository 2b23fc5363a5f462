"""Events on the ``AgentEvents`` Stream: live text, tool progress, turn boundaries.

Streams are best effort; a UI rebuilds from ``get_agent_snapshot``. Every event carries the
turn, the Step execution and the attempt that wrote it, so a UI keeps only the highest
attempt's live text of each Step execution.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

__all__ = ["AgentEvent", "AgentEventType", "AgentEventWriter"]


class AgentEventType(StrEnum):
    """Kinds of ``AgentEvent``."""

    TURN_STARTED = "turn_started"
    TURN_COMPLETED = "turn_completed"
    TURN_FAILED = "turn_failed"
    TURN_STEERED = "turn_steered"
    TURN_CANCELLED = "turn_cancelled"
    TEXT_DELTA = "text_delta"
    REASONING_DELTA = "reasoning_delta"
    TOOL_CALL_STARTED = "tool_call_started"
    TOOL_CALL_FINISHED = "tool_call_finished"
    TOOL_CALL_DEFERRED = "tool_call_deferred"
    INTERRUPT_RAISED = "interrupt_raised"
    INTERRUPT_RESOLVED = "interrupt_resolved"
    TIMER_STARTED = "timer_started"
    PLAN_UPDATED = "plan_updated"
    PLAN_EXECUTION_STARTED = "plan_execution_started"
    TOOL_TASK_STARTED = "tool_task_started"
    USAGE_RECORDED = "usage_recorded"
    COMPACTION_STARTED = "compaction_started"
    COMPACTION_FINISHED = "compaction_finished"


@dataclass(frozen=True, kw_only=True)
class AgentEvent:
    """One message of the ``AgentEvents`` Stream.

    Attributes:
        type: The kind of event.
        turn_id: The turn it belongs to.
        step_execution_id: The Step execution that wrote it (shared by its attempts).
        attempt: The Step attempt that wrote it.
        data: The event's payload (see ``AgentEventType``).
        created_at: ISO 8601 time it was written.
    """

    type: AgentEventType
    turn_id: str | None
    step_execution_id: str
    attempt: int
    data: dict[str, object] = field(default_factory=dict)
    created_at: str = ""


class AgentEventWriter:
    """Writes events bound to one turn, Step execution and attempt.

    Safe to call from any thread; writes after :meth:`close` are dropped.
    """

    def __init__(
        self,
        emit: Callable[[AgentEvent], None],
        *,
        turn_id: str | None,
        step_execution_id: str,
        attempt: int,
    ) -> None:
        self._emit = emit
        self._turn_id = turn_id
        self._step_execution_id = step_execution_id
        self._attempt = attempt
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._closed = False

    def close(self) -> None:
        """Drop every later write (the Step returned)."""
        self._closed = True

    def write_event(self, event_type: AgentEventType, data: Mapping[str, object]) -> None:
        """Write one event of any type."""
        event = AgentEvent(
            type=event_type,
            turn_id=self._turn_id,
            step_execution_id=self._step_execution_id,
            attempt=self._attempt,
            data=dict(data),
            created_at=datetime.now(UTC).isoformat(),
        )
        if threading.get_ident() == self._loop_thread:
            self._deliver(event)
        else:
            self._loop.call_soon_threadsafe(self._deliver, event)

    def _deliver(self, event: AgentEvent) -> None:
        if not self._closed:
            self._emit(event)

    def write_text_delta(self, text: str) -> None:
        """Append model text (one Stream message per call: batch tiny chunks)."""
        self.write_event(AgentEventType.TEXT_DELTA, {"text": text})

    def write_reasoning_delta(self, text: str) -> None:
        """Append model reasoning text."""
        self.write_event(AgentEventType.REASONING_DELTA, {"text": text})

    def write_tool_call_started(self, tool_call_id: str, tool_name: str) -> None:
        """A tool call started."""
        self.write_event(
            AgentEventType.TOOL_CALL_STARTED, {"tool_call_id": tool_call_id, "tool_name": tool_name}
        )

    def write_tool_call_finished(self, tool_call_id: str, tool_name: str, status: str) -> None:
        """A tool call's record became final."""
        self.write_event(
            AgentEventType.TOOL_CALL_FINISHED,
            {"tool_call_id": tool_call_id, "tool_name": tool_name, "status": status},
        )
