"""Steps at turn boundaries.

Starting the session, waiting for a message, resuming after tool calls, and recording a
failed turn.
"""

from __future__ import annotations

from dataclasses import replace

import dex
from dex import AsyncContext, StepDecision

from dex_agents._events import AgentEventType
from dex_agents._messages import MessageRole
from dex_agents._notes import build_turn_failure_note
from dex_agents._runner import AgentTurnContext, UnfinishedTurnMessageBuilder
from dex_agents._state import (
    AgentSessionStartInput,
    AgentState,
    AgentStatus,
    AgentUsage,
    InteractionMode,
)
from dex_agents._steps._common import (
    P,
    Session,
    SessionStep,
    all_messages,
    append_messages,
    log_warning,
    read_state,
)
from dex_agents._tool_calls import AgentToolCall
from dex_agents._wire import dumps, loads

__all__ = [
    "AwaitUserMessage",
    "RecordTurnFailure",
    "ResumeTurn",
    "StartAgentSession",
    "end_turn",
    "start_turn",
    "turn_records",
]


def start_turn(session: Session, context: AsyncContext, text: str) -> StepDecision:
    """Store the user's message, start ``turn-<n>``, and move to ``RunModel``."""
    from dex_agents._steps._run_model import RunModel

    state = read_state(context).start_turn(InteractionMode.CHAT)
    item = session.runner.build_user_message(text)
    if item.role is not MessageRole.USER:
        raise ValueError(f"build_user_message returned a {item.role.value} message, not user")
    [stored] = append_messages(session, context, state.active_turn_id, [item])
    P.turn_reply_sequence.set(context, stored.sequence + 1)
    P.turn_session_settings.set(
        context,
        dumps({"turn_id": state.active_turn_id, "settings": _settings(context)}),
    )
    P.state.write(context, state)
    session.emit(
        context, state.active_turn_id, AgentEventType.TURN_STARTED, {"sequence": stored.sequence}
    )
    return dex.go_to(RunModel, None)


def _settings(context: AsyncContext) -> dict[str, object]:
    text = P.session_settings.get(context)
    return loads(dict[str, object], text) if text else {}


def turn_records(context: AsyncContext, turn_id: str | None) -> list[AgentToolCall]:
    """The loaded tool call records of one turn, in model order."""
    records = [r for r in P.tool_calls.read_all(context).values() if r.turn_id == turn_id]
    return sorted(records, key=lambda record: record.deferral_order)


def end_turn(
    session: Session,
    context: AsyncContext,
    state: AgentState,
    *,
    error: str | None,
    stored_count: int,
) -> StepDecision:
    """Clear the turn's records and run state and wait for the next message."""
    turn_id = state.active_turn_id
    for record in turn_records(context, turn_id):
        P.tool_calls.delete(context, record.tool_call_id)
    interrupts = P.read_interrupts(context)
    kept = [i for i in interrupts if i.turn_id != turn_id]
    if len(kept) != len(interrupts):
        P.write_interrupts(context, kept)
    P.framework_run_state.delete(context)
    P.state.write(context, state.end_turn(error))
    if error is None:
        session.emit(
            context, turn_id, AgentEventType.TURN_COMPLETED, {"message_count": stored_count}
        )
    else:
        session.emit(context, turn_id, AgentEventType.TURN_FAILED, {"error": error})
    return dex.go_to(AwaitUserMessage, None)


class StartAgentSession(SessionStep[str]):
    """Start Step: initializes the session, and starts a turn for a non-blank message."""

    loaded_maps = (P.messages.definition,)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        start = loads(AgentSessionStartInput, input)
        P.state.write(context, AgentState())
        P.usage.write(context, AgentUsage())
        P.write_interrupts(context, [])
        P.session_settings.set(context, dumps(start.session_settings or {}))
        if start.initial_message is not None and start.initial_message.strip():
            return start_turn(self._session, context, start.initial_message)
        return dex.go_to(AwaitUserMessage, None)


class AwaitUserMessage(SessionStep[None]):
    """Waits for a queued user message, then starts a turn with it."""

    loaded_maps = (P.messages.definition,)

    async def wait_for(self, context: AsyncContext, input: None) -> dex.Wait:
        return dex.Wait.until(P.queued_user_messages.definition.for_one())

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:
        [message] = P.queued_user_messages.results(context)
        if not message.text.strip():
            return dex.go_to(AwaitUserMessage, None)
        return start_turn(self._session, context, message.text)


class ResumeTurn(SessionStep[int]):
    """Waits for the results of the turn's tool calls, then makes the next model call."""

    loaded_maps = (P.tool_calls.definition,)

    async def wait_for(self, context: AsyncContext, input: int) -> dex.Wait:
        return dex.Wait.until(P.tool_call_results.definition.for_n(max(1, input)))

    async def execute(self, context: AsyncContext, input: int) -> StepDecision:
        from dex_agents._steps._run_model import RunModel

        state = read_state(context)
        unfinished = [
            r for r in turn_records(context, state.active_turn_id) if not r.status.is_final
        ]
        if unfinished:
            return dex.go_to(ResumeTurn, len(unfinished))
        P.state.write(context, replace(state, status=AgentStatus.RUNNING_MODEL))
        return dex.go_to(RunModel, None)


class RecordTurnFailure(SessionStep[None]):
    """Failure route of ``RunModel``: records the error and leaves a note of what ran."""

    loaded_maps = (P.messages.definition, P.message_chunks.definition, P.tool_calls.definition)

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:
        session = self._session
        state = read_state(context)
        if state.active_turn_id is None:
            return dex.go_to(AwaitUserMessage, None)
        recovery = context.recovery_error
        error = (
            recovery.detail if recovery is not None else state.last_turn_error or "the turn failed"
        )
        records = turn_records(context, state.active_turn_id)
        stored = 0
        run_state = P.framework_run_state.get(context) or None
        if run_state is not None and isinstance(session.runner, UnfinishedTurnMessageBuilder):
            turn = AgentTurnContext(
                flow_id=context.flow_id,
                turn_id=state.active_turn_id,
                attempt=context.attempt,
                messages=all_messages(context),
                framework_run_state=run_state,
                tool_calls={r.tool_call_id: r for r in records},
                events=session.writer(context, state.active_turn_id),
            )
            try:
                items = list(session.runner.build_unfinished_turn_messages(turn))
                stored += len(append_messages(session, context, state.active_turn_id, items))
            except Exception:
                log_warning("build_unfinished_turn_messages failed; storing only the note")
        note = build_turn_failure_note(records)
        if note is not None:
            item = session.runner.build_user_message(note)
            stored += len(append_messages(session, context, state.active_turn_id, [item]))
        return end_turn(session, context, state, error=error, stored_count=stored)
