"""What every session Step shares: services, options, events, heartbeats and storage."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeVar

import dex
from dex import AsyncContext

from dex_agents._events import AgentEvent, AgentEventType, AgentEventWriter
from dex_agents._interrupts import AgentInterrupt
from dex_agents._messages import AgentMessage, FrameworkMessage, message_sequence_key
from dex_agents._options import AgentSessionOptions
from dex_agents._persistence import SESSION_PERSISTENCE
from dex_agents._runner import AgentFrameworkRunner
from dex_agents._state import AgentState
from dex_agents._storage import next_sequence, plan_append
from dex_agents._tool_calls import AgentToolCall, ToolCallCompleted
from dex_agents._wire import dumps

__all__ = [
    "HEARTBEAT_INTERVAL_SECONDS",
    "SHORT_STEP_TIMEOUT",
    "P",
    "Session",
    "SessionStep",
    "all_messages",
    "append_messages",
    "background_heartbeats",
    "deadline_after",
    "finish_tool_call",
    "log_warning",
    "now",
    "read_state",
    "remove_interrupts",
    "sync_options",
]

_LOGGER = logging.getLogger("dex_agents")
HEARTBEAT_INTERVAL_SECONDS = 20.0
SHORT_STEP_TIMEOUT = timedelta(minutes=1)
"""Attempt timeout of the Steps that only read and write session state."""
P = SESSION_PERSISTENCE
InputT = TypeVar("InputT")


@dataclass(frozen=True, eq=False)
class Session:
    """What the Steps of one session Flow type share."""

    runner: AgentFrameworkRunner[Any]
    options: AgentSessionOptions
    events: dex.Stream[str]

    def writer(self, context: AsyncContext, turn_id: str | None) -> AgentEventWriter:
        """An event writer bound to this Step execution and attempt."""

        def emit(event: AgentEvent) -> None:
            self.events.write(context, dumps(event))

        return AgentEventWriter(
            emit,
            turn_id=turn_id,
            step_execution_id=context.step_execution_id,
            attempt=context.attempt,
        )

    def emit(
        self,
        context: AsyncContext,
        turn_id: str | None,
        event_type: AgentEventType,
        data: dict[str, object],
    ) -> None:
        """Write one event from the Step's own coroutine."""
        writer = self.writer(context, turn_id)
        writer.write_event(event_type, data)
        writer.close()


class SessionStep(dex.Step[InputT]):
    """A Step of the session Flow: it shares the Flow's :class:`Session`.

    By default a short Step that loads the AttributeMaps named in ``loaded_maps``.
    """

    loaded_maps: ClassVar[tuple[dex.AttributeMap[str], ...]] = ()

    def __init__(self, session: Session) -> None:
        self._session = session

    def get_step_options(self) -> dex.StepOptions:
        return sync_options(
            execute_method_timeout=SHORT_STEP_TIMEOUT,
            execute_load_attribute_maps=self.loaded_maps,
        )


def now() -> datetime:
    """The Worker's clock, in UTC."""
    return datetime.now(UTC)


def sync_options(**settings: Any) -> dex.StepOptions:  # noqa: ANN401 - forwards StepOptions fields
    """Step options with SYNC durability for both methods, as every session Step sets."""
    return dex.StepOptions(
        wait_for_durability=dex.StepDurability.SYNC,
        execute_durability=dex.StepDurability.SYNC,
        **settings,
    )


@contextlib.asynccontextmanager
async def background_heartbeats(
    context: AsyncContext, checkpoint: list[str | None] | None = None
) -> AsyncIterator[None]:
    """Heartbeat every 20 seconds while the body runs, repeating the saved checkpoint."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_INTERVAL_SECONDS)
            if checkpoint is not None and checkpoint[0] is not None:
                await context.heartbeat(checkpoint[0])
            else:
                await context.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def all_messages(context: AsyncContext) -> list[AgentMessage]:
    """Every stored message in sequence order (the window and every chunk must be loaded)."""
    messages = [
        message
        for chunk in P.message_chunks.read_all(context).values()
        for message in chunk.messages
    ]
    messages.extend(P.messages.read_all(context).values())
    return sorted(messages, key=lambda message: message.sequence)


def append_messages(
    session: Session,
    context: AsyncContext,
    turn_id: str | None,
    items: Sequence[FrameworkMessage],
) -> list[AgentMessage]:
    """Store items after the newest message, rolling the window into chunks as needed.

    The window (``AgentMessages``) must be loaded.
    """
    if not items:
        return []
    window = list(P.messages.read_all(context).values())
    index = P.message_index.read(context)
    first = next_sequence(window, index)
    created = now().isoformat()
    new = []
    for offset, item in enumerate(items):
        if not isinstance(item, FrameworkMessage):
            raise TypeError(f"runners return FrameworkMessage values, not {type(item).__name__}")
        new.append(
            AgentMessage(
                sequence=first + offset,
                role=item.role,
                framework_item=item.framework_item,
                text=item.text,
                turn_id=turn_id,
                tool_call_id=item.tool_call_id,
                tool_name=item.tool_name,
                created_at=created,
            )
        )
    plan = plan_append(window, index, new, session.options.storage_limits())
    for message in plan.window_writes:
        P.store_message(context, message)
    for sequence in plan.window_deletes:
        P.messages.delete(context, message_sequence_key(sequence))
    for chunk in plan.chunk_writes:
        P.message_chunks.write(context, message_sequence_key(chunk.first_sequence), chunk)
    if plan.index is not None:
        P.message_index.write(context, plan.index)
    return new


def finish_tool_call(
    session: Session, context: AsyncContext, record: AgentToolCall
) -> dex.StepDecision:
    """Store a final record, publish its one ``ToolCallResults`` message, and end the Step."""
    P.tool_calls.write(context, record.tool_call_id, record)
    P.tool_call_results.publish(
        context,
        ToolCallCompleted(
            tool_call_id=record.tool_call_id, turn_id=record.turn_id, status=record.status
        ),
    )
    writer = session.writer(context, record.turn_id)
    writer.write_tool_call_finished(record.tool_call_id, record.tool_name, record.status.value)
    writer.close()
    return dex.dead_end()


def read_state(context: AsyncContext) -> AgentState:
    """``AgentState`` (a fresh one before ``StartAgentSession`` committed)."""
    return P.state.read(context) or AgentState()


def deadline_after(delay: timedelta | None) -> str | None:
    """An interrupt deadline ``delay`` from now, as ISO 8601."""
    return None if delay is None else (now() + delay).isoformat()


def remove_interrupts(
    interrupts: Sequence[AgentInterrupt], interrupt_ids: set[str]
) -> list[AgentInterrupt]:
    """``interrupts`` without the given ids."""
    return [i for i in interrupts if i.interrupt_id not in interrupt_ids]


def log_warning(message: str, *args: object) -> None:
    """Log to the ``dex_agents`` logger."""
    _LOGGER.warning(message, *args)
