"""``RunModel``: one model call per Step, and what the session does with its outcome."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, timedelta

import dex
from dex import AsyncContext, StepDecision

from dex_agents._builtin_tools import (
    BuiltInTool,
    BuiltInToolArgumentError,
    parse_ask_user,
    parse_durable_wait,
)
from dex_agents._events import AgentEventType
from dex_agents._interrupts import AgentInterrupt, InterruptKind
from dex_agents._policies import ToolEffect
from dex_agents._runner import (
    AgentTurnContext,
    DeferredToolCall,
    ToolCallsRequested,
    TurnCompleted,
    TurnContinued,
    UnfinishedTurnMessageBuilder,
)
from dex_agents._state import AgentState, AgentStatus, AgentUsage
from dex_agents._steps._common import (
    P,
    SessionStep,
    all_messages,
    append_messages,
    background_heartbeats,
    deadline_after,
    finish_tool_call,
    now,
    read_state,
    sync_options,
)
from dex_agents._steps._tools import tool_step_movement
from dex_agents._steps._turn import AwaitUserMessage, RecordTurnFailure, ResumeTurn, end_turn
from dex_agents._steps._waits import AwaitQuestionAnswer, AwaitTimer, AwaitToolApproval
from dex_agents._tool_calls import AgentToolCall, ToolCallStatus
from dex_agents._wire import to_wire

__all__ = ["RunModel", "check_tool_calls"]


def check_tool_calls(outcome: ToolCallsRequested, previous: Sequence[str]) -> str | None:
    """Why a ``ToolCallsRequested`` is unusable, or ``None`` when it is fine."""
    if not outcome.framework_run_state:
        return "ToolCallsRequested needs a non-empty framework_run_state"
    if not outcome.tool_calls:
        return "ToolCallsRequested needs at least one tool call"
    seen = set(previous)
    for call in outcome.tool_calls:
        if not call.tool_call_id or "/" in call.tool_call_id:
            return f"tool call id {call.tool_call_id!r} must be non-empty and contain no '/'"
        if call.tool_call_id in seen:
            return f"tool call id {call.tool_call_id!r} is used twice in one turn"
        seen.add(call.tool_call_id)
    return None


class RunModel(SessionStep[None]):
    """Calls ``run_model_step`` once and stores what it returns."""

    def get_step_options(self) -> dex.StepOptions:
        limit = self._session.options.run_model_limit
        return sync_options(
            execute_method_timeout=limit.timeout,
            heartbeat_timeout=limit.heartbeat_timeout,
            execute_retry=dex.RetryPolicy(
                maximum_attempts=limit.maximum_attempts, total_duration=limit.retry_budget
            ),
            execute_load_attribute_maps=(
                P.messages.definition,
                P.message_chunks.definition,
                P.tool_calls.definition,
            ),
        ).on_execute_failure_proceed_to(RecordTurnFailure)

    async def execute(self, context: AsyncContext, input: None) -> StepDecision:
        session = self._session
        state = read_state(context)
        turn_id = state.active_turn_id
        if turn_id is None:
            return dex.go_to(AwaitUserMessage, None)
        records = {
            r.tool_call_id: r
            for r in P.tool_calls.read_all(context).values()
            if r.turn_id == turn_id
        }
        writer = session.writer(context, turn_id)
        options = session.options
        turn = AgentTurnContext(
            flow_id=context.flow_id,
            turn_id=turn_id,
            attempt=context.attempt,
            messages=all_messages(context),
            framework_run_state=P.framework_run_state.get(context) or None,
            tool_calls=records,
            events=writer,
            enabled_built_in_tools=options.built_in_tools,
            interaction_mode=state.interaction_mode,
            tool_policies=options.tool_policies,
            default_tool_effect=options.default_tool_effect,
            heartbeat_function=context.heartbeat,
        )
        try:
            async with background_heartbeats(context):
                outcome = await session.runner.run_model_step(turn)
        finally:
            writer.close()
        usage = outcome.usage if hasattr(outcome, "usage") else AgentUsage()
        total = (P.usage.read(context) or AgentUsage()) + replace(usage, model_calls=1)
        P.usage.write(context, total)
        session.emit(
            context,
            turn_id,
            AgentEventType.USAGE_RECORDED,
            {"recorded": _usage_json(usage), "session": _usage_json(total)},
        )
        state = replace(state, turn_model_calls=state.turn_model_calls + 1)
        stores_items = isinstance(session.runner, UnfinishedTurnMessageBuilder)
        if isinstance(outcome, TurnCompleted):
            stored = append_messages(session, context, turn_id, outcome.new_messages)
            return end_turn(
                session, context, state, error=outcome.turn_error, stored_count=len(stored)
            )
        if isinstance(outcome, TurnContinued):
            if not outcome.framework_run_state:
                return self._fail(
                    context, state, "TurnContinued needs a non-empty framework_run_state"
                )
            if outcome.new_messages and not stores_items:
                return self._fail(context, state, _NO_BUILDER)
            append_messages(session, context, turn_id, outcome.new_messages)
            P.framework_run_state.set(context, outcome.framework_run_state)
            P.state.write(context, state)
            return dex.go_to(RunModel, None)
        if isinstance(outcome, ToolCallsRequested):
            problem = check_tool_calls(outcome, list(records))
            if problem is None and outcome.new_messages and not stores_items:
                problem = _NO_BUILDER
            if problem is not None:
                return self._fail(context, state, problem)
            append_messages(session, context, turn_id, outcome.new_messages)
            P.framework_run_state.set(context, outcome.framework_run_state)
            return self._defer(context, state, outcome.tool_calls)
        raise TypeError(f"run_model_step returned {type(outcome).__name__}")

    def _fail(self, context: AsyncContext, state: AgentState, error: str) -> StepDecision:
        """End the turn as failed at once: retrying the same model output cannot help."""
        P.state.write(context, replace(state, last_turn_error=error))
        return dex.go_to(RecordTurnFailure, None)

    def _defer(
        self, context: AsyncContext, state: AgentState, calls: Sequence[DeferredToolCall]
    ) -> StepDecision:
        session = self._session
        turn_id = state.active_turn_id
        assert turn_id is not None
        interrupts = P.read_interrupts(context)
        deadline = deadline_after(session.options.interrupt_deadline)
        movements: list[dex.StepMovement[str]] = []
        for order, call in enumerate(calls):
            record, movement, interrupt = self._route(context, turn_id, order, call, deadline)
            if interrupt is not None:
                interrupts.append(interrupt)
                session.emit(context, turn_id, AgentEventType.INTERRUPT_RAISED, _raised(interrupt))
            if movement is None:
                finish_tool_call(session, context, record)
            else:
                P.tool_calls.write(context, record.tool_call_id, record)
                movements.append(movement)
        P.write_interrupts(context, interrupts)
        P.state.write(context, replace(state, status=AgentStatus.RUNNING_TOOLS))
        resume = dex.StepMovement.of(ResumeTurn, len(calls))
        return dex.go_to_many(*movements, resume)

    def _route(
        self,
        context: AsyncContext,
        turn_id: str,
        order: int,
        call: DeferredToolCall,
        deadline: str | None,
    ) -> tuple[AgentToolCall, dex.StepMovement[str] | None, AgentInterrupt | None]:
        """The record, next Step and interrupt of one requested call."""
        session = self._session
        options = session.options
        built_in = (
            BuiltInTool(call.tool_name)
            if call.tool_name in {tool.value for tool in options.built_in_tools}
            else None
        )
        base = AgentToolCall(
            tool_call_id=call.tool_call_id,
            tool_name=call.tool_name,
            arguments=call.arguments,
            turn_id=turn_id,
            effect=ToolEffect.READ if built_in else call.policy.effect,
            requires_approval=False if built_in else call.policy.is_approval_required,
            status=ToolCallStatus.APPROVED,
            deferral_order=order,
            built_in_tool=built_in.value if built_in else None,
            tool_source_reference=call.tool_source_reference,
        )
        if built_in is BuiltInTool.ASK_USER:
            try:
                asked = parse_ask_user(call.arguments)
            except BuiltInToolArgumentError as error:
                return replace(base, status=ToolCallStatus.FAILED, error=str(error)), None, None
            record = replace(
                base,
                status=ToolCallStatus.AWAITING_ANSWER,
                question=asked.question,
                choices=asked.choices,
                allows_free_text=asked.allows_free_text,
                input_interrupt_raised=True,
            )
            interrupt = AgentInterrupt(
                interrupt_id=call.tool_call_id,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                kind=InterruptKind.QUESTION,
                turn_id=turn_id,
                deadline=deadline,
                question=asked.question,
                choices=asked.choices,
                allows_free_text=asked.allows_free_text,
            )
            return record, AwaitQuestionAnswer.movement(call.tool_call_id), interrupt
        if built_in is BuiltInTool.DURABLE_WAIT:
            try:
                waited = parse_durable_wait(call.arguments, options.max_durable_wait)
            except BuiltInToolArgumentError as error:
                return replace(base, status=ToolCallStatus.FAILED, error=str(error)), None, None
            until = now() + timedelta(seconds=waited.duration_seconds)
            record = replace(
                base,
                status=ToolCallStatus.WAITING_FOR_TIMER,
                wait_until=until.astimezone(UTC).isoformat(),
                wait_reason=waited.reason,
            )
            session.emit(
                context,
                turn_id,
                AgentEventType.TIMER_STARTED,
                {
                    "tool_call_id": call.tool_call_id,
                    "wait_until": record.wait_until,
                    "reason": waited.reason,
                },
            )
            return record, AwaitTimer.movement(call.tool_call_id), None
        session.emit(
            context,
            turn_id,
            AgentEventType.TOOL_CALL_DEFERRED,
            {
                "tool_call_id": call.tool_call_id,
                "tool_name": call.tool_name,
                "effect": base.effect.value,
                "requires_approval": base.requires_approval,
            },
        )
        if base.requires_approval:
            record = replace(base, status=ToolCallStatus.AWAITING_APPROVAL)
            interrupt = AgentInterrupt(
                interrupt_id=call.tool_call_id,
                tool_call_id=call.tool_call_id,
                tool_name=call.tool_name,
                kind=InterruptKind.APPROVAL,
                turn_id=turn_id,
                arguments=call.arguments,
                deadline=deadline,
            )
            return record, AwaitToolApproval.movement(call.tool_call_id), interrupt
        return base, tool_step_movement(session, base), None


_NO_BUILDER = (
    "the runner stored new_messages before the turn ended but does not implement "
    "build_unfinished_turn_messages"
)


def _usage_json(usage: AgentUsage) -> dict[str, object]:
    data: dict[str, object] = to_wire(usage)
    return data


def _raised(interrupt: AgentInterrupt) -> dict[str, object]:
    return {
        "interrupt_id": interrupt.interrupt_id,
        "tool_call_id": interrupt.tool_call_id,
        "tool_name": interrupt.tool_name,
        "deadline": interrupt.deadline,
        "kind": interrupt.kind.value,
        "question": interrupt.question,
        "choices": list(interrupt.choices),
        "allows_free_text": interrupt.allows_free_text,
    }
