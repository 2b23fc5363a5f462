"""Steps that wait for a person or for time: approvals, questions, durable waits."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import datetime, timedelta

import dex
from dex import AsyncContext, StepDecision

from dex_agents._builtin_tools import (
    QUESTION_DEADLINE_PASSED_ERROR,
    QUESTION_DECLINED_TEXT,
    BuiltInTool,
    answered_result,
    waited_result,
)
from dex_agents._events import AgentEventType
from dex_agents._interrupts import (
    AgentInterrupt,
    AgentInterruptResolution,
    InterruptKind,
    QuestionResolution,
    deadline_passed,
)
from dex_agents._steps._common import (
    SHORT_STEP_TIMEOUT,
    P,
    SessionStep,
    deadline_after,
    finish_tool_call,
    now,
    remove_interrupts,
)
from dex_agents._steps._tools import own_record_options, tool_step_movement
from dex_agents._tool_calls import AgentToolCall, ToolCallStatus

__all__ = ["AwaitQuestionAnswer", "AwaitTimer", "AwaitToolApproval", "question_interrupt_id"]


def question_interrupt_id(record: AgentToolCall) -> str:
    """``ask_user`` uses the call id; a tool's n-th question ``<id>-input-<n>``."""
    if record.built_in_tool == BuiltInTool.ASK_USER.value:
        return record.tool_call_id
    return f"{record.tool_call_id}-input-{record.input_request_count}"


def _seconds_until(moment: str) -> int:
    """Whole seconds until an ISO 8601 time, rounded up, never negative."""
    return max(0, math.ceil((datetime.fromisoformat(moment) - now()).total_seconds()))


def _find(interrupts: list[AgentInterrupt], interrupt_id: str) -> AgentInterrupt | None:
    return next((i for i in interrupts if i.interrupt_id == interrupt_id), None)


def _resolution_or_deadline(context: AsyncContext, interrupt_id: str) -> dex.Wait:
    """Wait for the interrupt's resolution, or for its deadline while it is pending."""
    conditions = [P.interrupt_resolutions.definition.for_one(interrupt_id)]
    mine = _find(P.read_interrupts(context), interrupt_id)
    if mine is not None and mine.deadline is not None:
        # Timers first: a deadline reached as the answer arrives is checked in execute.
        seconds = timedelta(seconds=_seconds_until(mine.deadline))
        conditions.insert(0, dex.Timer.by_duration(seconds))
    return dex.Wait.any_of(*conditions)


def _resolved(resolution: AgentInterruptResolution, record: AgentToolCall) -> dict[str, object]:
    return {
        "interrupt_id": resolution.interrupt_id,
        "approved": resolution.approved,
        "rejection_message": resolution.rejection_message,
        "kind": resolution.kind.value,
        "answered": resolution.resolution is QuestionResolution.ANSWERED,
        "cancellation_reason": record.cancellation_reason,
    }


class _WaitingStep(SessionStep[str]):
    """Waits for a person or for time on behalf of one tool call."""

    @classmethod
    def movement(cls, tool_call_id: str) -> dex.StepMovement[str]:
        """A movement to this Step for one call, loading only its record."""
        return dex.StepMovement.of(cls, tool_call_id, options=cls.options_for(tool_call_id))

    @classmethod
    def options_for(cls, tool_call_id: str) -> dex.StepOptions:
        """This Step's options for one call."""
        return own_record_options(
            tool_call_id,
            execute_method_timeout=SHORT_STEP_TIMEOUT,
            execute_lock_attributes=(P.pending_interrupts.lock(),),
        )

    def _again(self, record: AgentToolCall) -> StepDecision:
        return dex.go_to_many(self.movement(record.tool_call_id))


class AwaitToolApproval(_WaitingStep):
    """Waits for an approval, a rejection, or the interrupt's deadline."""

    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        return _resolution_or_deadline(context, input)

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        session = self._session
        record = P.tool_calls.read(context, input)
        if record is None or record.status is not ToolCallStatus.AWAITING_APPROVAL:
            return dex.dead_end()
        resolutions = P.interrupt_resolutions.results(context, input)
        if not resolutions:
            interrupts = P.read_interrupts(context)
            mine = _find(interrupts, input)
            if mine is None or not deadline_passed(mine, now()):
                # Early Timer, or resolved just as the Timer fired: wait for the answer.
                return self._again(record)
            P.write_interrupts(context, remove_interrupts(interrupts, {input}))
            resolution = AgentInterruptResolution(
                interrupt_id=input,
                kind=InterruptKind.APPROVAL,
                rejection_message="the approval deadline passed",
            )
        else:
            resolution = resolutions[0]
        session.emit(
            context,
            record.turn_id,
            AgentEventType.INTERRUPT_RESOLVED,
            _resolved(resolution, record),
        )
        if resolution.approved:
            approved = replace(record, status=ToolCallStatus.APPROVED)
            P.tool_calls.write(context, input, approved)
            return dex.go_to_many(tool_step_movement(session, approved))
        rejected = replace(
            record,
            status=ToolCallStatus.REJECTED,
            rejection_message=resolution.rejection_message,
        )
        return finish_tool_call(session, context, rejected)


class AwaitQuestionAnswer(_WaitingStep):
    """Waits for the answer to an ``ask_user`` call or a tool's question.

    A tool's question is raised here, under the ``PendingInterrupts`` lock, so parallel
    tool calls can ask at once.
    """

    @classmethod
    def options_for(cls, tool_call_id: str) -> dex.StepOptions:
        """Also loads every record of the turn, to keep question ids unique."""
        return own_record_options(
            tool_call_id,
            execute_method_timeout=SHORT_STEP_TIMEOUT,
            execute_lock_attributes=(P.pending_interrupts.lock(),),
            execute_load_attribute_maps=(P.tool_calls.definition,),
        )

    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        record = P.tool_calls.read(context, input)
        if record is None or not record.input_interrupt_raised:
            return dex.Wait.until(dex.Timer.by_duration(timedelta(0)))
        return _resolution_or_deadline(context, question_interrupt_id(record))

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        session = self._session
        record = P.tool_calls.read(context, input)
        if record is None or record.status is not ToolCallStatus.AWAITING_ANSWER:
            return dex.dead_end()
        interrupt_id = question_interrupt_id(record)
        interrupts = P.read_interrupts(context)
        if not record.input_interrupt_raised:
            return self._raise(context, record, interrupts)
        resolutions = P.interrupt_resolutions.results(context, interrupt_id)
        if not resolutions:
            mine = _find(interrupts, interrupt_id)
            if mine is None or not deadline_passed(mine, now()):
                return self._again(record)
            P.write_interrupts(context, remove_interrupts(interrupts, {interrupt_id}))
            session.emit(
                context,
                record.turn_id,
                AgentEventType.INTERRUPT_RESOLVED,
                {
                    "interrupt_id": interrupt_id,
                    "approved": False,
                    "kind": "question",
                    "answered": False,
                },
            )
            failed = replace(
                record, status=ToolCallStatus.FAILED, error=QUESTION_DEADLINE_PASSED_ERROR
            )
            return finish_tool_call(session, context, failed)
        resolution = resolutions[0]
        session.emit(
            context,
            record.turn_id,
            AgentEventType.INTERRUPT_RESOLVED,
            _resolved(resolution, record),
        )
        answered = resolution.resolution is QuestionResolution.ANSWERED
        if record.built_in_tool == BuiltInTool.ASK_USER.value:
            output = (
                answered_result(resolution.answer or "") if answered else QUESTION_DECLINED_TEXT
            )
            return finish_tool_call(
                session, context, replace(record, status=ToolCallStatus.SUCCEEDED, output=output)
            )
        if not answered:
            declined = replace(
                record, status=ToolCallStatus.REJECTED, rejection_message=QUESTION_DECLINED_TEXT
            )
            return finish_tool_call(session, context, declined)
        resumed = replace(
            record,
            status=ToolCallStatus.APPROVED,
            input_answers=(*record.input_answers, resolution.answer or ""),
            input_interrupt_raised=False,
        )
        P.tool_calls.write(context, input, resumed)
        return dex.go_to_many(tool_step_movement(session, resumed))

    def _raise(
        self, context: AsyncContext, record: AgentToolCall, interrupts: list[AgentInterrupt]
    ) -> StepDecision:
        session = self._session
        interrupt_id = question_interrupt_id(record)
        taken = _find(interrupts, interrupt_id) is not None or (
            interrupt_id in P.tool_calls.definition.get_all_instance_keys(context)
        )
        if taken:
            failed = replace(
                record,
                status=ToolCallStatus.FAILED,
                error=f"the question id {interrupt_id!r} is already used in this turn",
            )
            return finish_tool_call(session, context, failed)
        interrupt = AgentInterrupt(
            interrupt_id=interrupt_id,
            tool_call_id=record.tool_call_id,
            tool_name=record.tool_name,
            kind=InterruptKind.QUESTION,
            turn_id=record.turn_id,
            deadline=deadline_after(session.options.interrupt_deadline),
            question=record.question,
            choices=record.choices,
            allows_free_text=record.allows_free_text,
        )
        P.write_interrupts(context, [*interrupts, interrupt])
        raised = replace(record, input_interrupt_raised=True)
        P.tool_calls.write(context, record.tool_call_id, raised)
        session.emit(
            context,
            record.turn_id,
            AgentEventType.INTERRUPT_RAISED,
            {
                "interrupt_id": interrupt_id,
                "tool_call_id": record.tool_call_id,
                "tool_name": record.tool_name,
                "deadline": interrupt.deadline,
                "kind": "question",
                "question": record.question,
                "choices": list(record.choices),
                "allows_free_text": record.allows_free_text,
            },
        )
        return self._again(raised)


class AwaitTimer(_WaitingStep):
    """Waits out a ``durable_wait`` call on a Timer; no Worker holds the wait."""

    @classmethod
    def options_for(cls, tool_call_id: str) -> dex.StepOptions:
        """Loads the call's record; takes no lock."""
        return own_record_options(tool_call_id, execute_method_timeout=SHORT_STEP_TIMEOUT)

    async def wait_for(self, context: AsyncContext, input: str) -> dex.Wait:
        record = P.tool_calls.read(context, input)
        seconds = _seconds_until(record.wait_until) if record and record.wait_until else 0
        return dex.Wait.until(dex.Timer.by_duration(timedelta(seconds=seconds)))

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        record = P.tool_calls.read(context, input)
        if record is None or record.status is not ToolCallStatus.WAITING_FOR_TIMER:
            return dex.dead_end()
        arguments = json.loads(record.arguments)
        result = waited_result(int(arguments["duration_seconds"]), record.wait_reason or "")
        done = replace(record, status=ToolCallStatus.SUCCEEDED, output=result)
        return finish_tool_call(self._session, context, done)
