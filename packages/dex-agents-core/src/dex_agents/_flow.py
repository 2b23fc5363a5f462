"""``AgentSessionFlow``: one durable Flow per agent session, and its RPCs."""

from __future__ import annotations

from typing import Any

import dex
from dex import Context

from dex_agents._interrupts import (
    AgentInterruptResolution,
    AnswerQuestionRequest,
    InterruptKind,
    QuestionResolution,
    ResolveInterruptRequest,
    deadline_passed,
)
from dex_agents._messages import AgentUserMessage
from dex_agents._options import AgentSessionOptions
from dex_agents._persistence import SESSION_PERSISTENCE as P
from dex_agents._persistence import events_stream
from dex_agents._runner import AgentFrameworkRunner
from dex_agents._snapshot import (
    SNAPSHOT_MESSAGE_LIMIT,
    AgentSnapshot,
    ListAgentMessagesRequest,
    QueuedUserMessage,
    page_messages,
)
from dex_agents._state import AgentUsage
from dex_agents._steps._common import Session, all_messages, now, remove_interrupts
from dex_agents._steps._run_model import RunModel
from dex_agents._steps._tools import (
    CallSingleAttemptTool,
    CallTool,
    RecordToolFailure,
    RecordToolOutcomeUnknown,
)
from dex_agents._steps._turn import (
    AwaitUserMessage,
    RecordTurnFailure,
    ResumeTurn,
    StartAgentSession,
)
from dex_agents._steps._waits import AwaitQuestionAnswer, AwaitTimer, AwaitToolApproval
from dex_agents._wire import dumps, loads

__all__ = ["AGENT_SESSION_ACTIVE_STEP_SEARCH_MODE", "AgentSessionFlow"]

AGENT_SESSION_ACTIVE_STEP_SEARCH_MODE = dex.ActiveStepSearchMode.WITH_WAIT_FOR
"""The search mode ``start_session`` sets, so ``ActiveStepTypes`` finds waiting sessions."""

_WHOLE_STATE = (P.messages.definition, P.message_chunks.definition, P.tool_calls.definition)


class AgentSessionFlow(dex.Flow[str]):
    """One agent session per Flow run; the Flow id is the session id.

    Args:
        runner: The adapter that runs the agent framework.
        flow_type: This agent's Flow type (one per agent).
        options: Tool policies, interrupts, events and storage.
    """

    def __init__(
        self,
        runner: AgentFrameworkRunner[Any],
        *,
        flow_type: str,
        options: AgentSessionOptions | None = None,
    ) -> None:
        if not flow_type or not flow_type.strip():
            raise ValueError("flow_type must be a non-empty name")
        self.runner = runner
        self.flow_type = flow_type
        self.options = options or AgentSessionOptions()
        self.events = events_stream(self.options.event_stream_capacity_bytes)
        session = Session(runner=runner, options=self.options, events=self.events)
        self._steps = (
            AwaitUserMessage(session),
            RunModel(session),
            AwaitToolApproval(session),
            AwaitQuestionAnswer(session),
            AwaitTimer(session),
            CallTool(session),
            CallSingleAttemptTool(session),
            RecordToolFailure(session),
            RecordToolOutcomeUnknown(session),
            ResumeTurn(session),
            RecordTurnFailure(session),
        )
        self._start = StartAgentSession(session)

    def get_flow_type(self) -> str:
        """The agent's Flow type."""
        return self.flow_type

    def get_steps(self) -> dex.StepList[str]:
        """Every Step of the session (see "Flow shape" in the docs)."""
        return dex.StepList.start_step(self._start).other_steps(*self._steps)

    def get_persistence_schema(self) -> dex.PersistenceSchema:
        """The shared session Attributes and Channels, and this type's ``AgentEvents``."""
        return dex.PersistenceSchema.of(*P.definitions(), self.events)  # type: ignore[arg-type]

    @dex.rpc(is_transactional=True)
    def send_user_message(self, context: Context, message: str) -> dex.RPCResult[bool]:
        """Queue a user message; ``False`` for blank text or plan mode while it is off."""
        sent = loads(AgentUserMessage, message)
        if not sent.text.strip() or (sent.plan_mode and not self.options.plan_mode_enabled):
            return dex.RPCResult(output=False)
        P.queued_user_messages.publish(context, sent)
        return dex.RPCResult(output=True)

    @dex.rpc(lock_attributes=(P.pending_interrupts.lock(),))
    def resolve_interrupt(self, context: Context, request: str) -> dex.RPCResult[bool]:
        """Approve or reject an approval, or decline a question (``approved=False``)."""
        resolve = loads(ResolveInterruptRequest, request)
        interrupts = P.read_interrupts(context)
        mine = next((i for i in interrupts if i.interrupt_id == resolve.interrupt_id), None)
        if mine is None or deadline_passed(mine, now()):
            return dex.RPCResult(output=False)
        if mine.kind is InterruptKind.QUESTION:
            if resolve.approved:
                return dex.RPCResult(output=False)
            resolution = AgentInterruptResolution(
                interrupt_id=mine.interrupt_id,
                kind=InterruptKind.QUESTION,
                resolution=QuestionResolution.DECLINED,
            )
        else:
            resolution = AgentInterruptResolution(
                interrupt_id=mine.interrupt_id,
                kind=InterruptKind.APPROVAL,
                approved=resolve.approved,
                rejection_message=None if resolve.approved else resolve.rejection_message,
            )
        P.write_interrupts(context, remove_interrupts(interrupts, {mine.interrupt_id}))
        P.interrupt_resolutions.publish(context, mine.interrupt_id, resolution)
        return dex.RPCResult(output=True)

    @dex.rpc(lock_attributes=(P.pending_interrupts.lock(),))
    def answer_question(self, context: Context, request: str) -> dex.RPCResult[bool]:
        """Answer a pending question; ``False`` for a blank or disallowed answer."""
        answer = loads(AnswerQuestionRequest, request)
        interrupts = P.read_interrupts(context)
        mine = next((i for i in interrupts if i.interrupt_id == answer.interrupt_id), None)
        text = answer.answer.strip()
        if (
            mine is None
            or mine.kind is not InterruptKind.QUESTION
            or deadline_passed(mine, now())
            or not text
            or (mine.choices and not mine.allows_free_text and text not in mine.choices)
        ):
            return dex.RPCResult(output=False)
        P.write_interrupts(context, remove_interrupts(interrupts, {mine.interrupt_id}))
        P.interrupt_resolutions.publish(
            context,
            mine.interrupt_id,
            AgentInterruptResolution(
                interrupt_id=mine.interrupt_id,
                kind=InterruptKind.QUESTION,
                resolution=QuestionResolution.ANSWERED,
                answer=text,
            ),
        )
        return dex.RPCResult(output=True)

    @dex.rpc(load_attribute_maps=_WHOLE_STATE, load_channels=(P.queued_user_messages.definition,))
    def get_agent_snapshot(self, context: Context) -> dex.RPCResult[str]:
        """The session now (JSON of ``AgentSnapshot``)."""
        state = P.state.read(context)
        messages = all_messages(context)  # type: ignore[arg-type]
        queued = [
            QueuedUserMessage(message_id=message_id, text=value.text, plan_mode=value.plan_mode)
            for message_id, value in P.queued_user_messages.pending(context)
        ]
        turn = state.active_turn_id if state is not None else None
        records = sorted(
            (r for r in P.tool_calls.read_all(context).values() if r.turn_id == turn),
            key=lambda record: record.deferral_order,
        )
        settings_text = P.session_settings.get(context)
        snapshot = AgentSnapshot(
            state=state,
            messages=tuple(messages[-SNAPSHOT_MESSAGE_LIMIT:]),
            pending_interrupts=tuple(P.read_interrupts(context)),
            tool_calls=tuple(records) if turn is not None else (),
            usage=P.usage.read(context) or AgentUsage(),
            queued_message_count=len(queued),
            queued_messages=tuple(queued),
            session_settings=loads(dict[str, object], settings_text) if settings_text else {},
            first_sequence=messages[0].sequence if messages else None,
        )
        return dex.RPCResult(dumps(snapshot))

    @dex.rpc(load_attribute_maps=(P.messages.definition, P.message_chunks.definition))
    def list_agent_messages(self, context: Context, request: str) -> dex.RPCResult[str]:
        """A page of stored messages (JSON of ``AgentMessagesPage``)."""
        page = page_messages(
            all_messages(context),  # type: ignore[arg-type]
            loads(ListAgentMessagesRequest, request),
            P.message_index.read(context),
        )
        return dex.RPCResult(dumps(page))
