"""Tool call Steps: ``CallTool``, ``CallSingleAttemptTool`` and their failure routes.

``RecordToolFailure`` and ``RecordToolOutcomeUnknown`` record a call whose tool Step
failed for good.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import dex
from dex import AsyncContext, StepDecision

from dex_agents._policies import ToolEffect, idempotency_key, uses_single_attempt_step
from dex_agents._runner import (
    DeferredToolExecution,
    ToolCallStepOptions,
    ToolCallStepOptionsProvider,
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolOutcomeUnknownError,
)
from dex_agents._steps._common import (
    SHORT_STEP_TIMEOUT,
    P,
    Session,
    SessionStep,
    background_heartbeats,
    finish_tool_call,
    sync_options,
)
from dex_agents._tool_calls import (
    ATTEMPT_NOT_STARTED_ERROR_TYPE,
    TOOL_CALL_NOT_RUN_ERROR_PREFIX,
    AgentToolCall,
    ToolCallStatus,
)

__all__ = [
    "CallSingleAttemptTool",
    "CallTool",
    "RecordToolFailure",
    "RecordToolOutcomeUnknown",
    "own_record_options",
    "tool_step_movement",
]

_HEARTBEAT_TIMEOUT = timedelta(minutes=2)


def own_record_options(tool_call_id: str, **settings: object) -> dex.StepOptions:
    """Options that load only this call's ``AgentToolCalls`` instance, in both methods."""
    load = (P.tool_calls.definition.load(tool_call_id),)
    return sync_options(
        wait_for_load_attribute_map_instances=load,
        execute_load_attribute_map_instances=load,
        **settings,
    )


def tool_step_movement(session: Session, record: AgentToolCall) -> dex.StepMovement[str]:
    """The tool Step that runs an approved call, chosen by its effect.

    A runner that is a ``ToolCallStepOptionsProvider`` may set this movement's timeout and,
    for ``CallTool``, its retry policy.
    """
    step: type[_ToolStep] = (
        CallSingleAttemptTool if uses_single_attempt_step(record.effect) else CallTool
    )
    runner = session.runner
    own = (
        runner.tool_call_step_options(record)
        if isinstance(runner, ToolCallStepOptionsProvider)
        else None
    )
    return dex.StepMovement.of(
        step, record.tool_call_id, options=step.options_for(session, record.tool_call_id, own)
    )


class _ToolStep(SessionStep[str]):
    """Runs one approved tool call once per attempt."""

    failure_route: type[dex.Step[str]]
    attempts: int

    @classmethod
    def options_for(
        cls, session: Session, tool_call_id: str, own: ToolCallStepOptions | None
    ) -> dex.StepOptions:
        """This Step's options for one call, with the call's own settings where it has any."""
        timeout = session.options.tool_timeout
        retry = dex.RetryPolicy(maximum_attempts=cls.attempts)
        if own is not None:
            timeout = own.execute_method_timeout or timeout
            # A single-attempt Step never retries, whatever the runner asks.
            if cls.attempts > 1 and own.retry_policy is not None:
                retry = own.retry_policy
        return own_record_options(
            tool_call_id,
            execute_method_timeout=timeout,
            heartbeat_timeout=_HEARTBEAT_TIMEOUT,
            execute_retry=retry,
        ).on_execute_failure_proceed_to(
            cls.failure_route,
            own_record_options(tool_call_id, execute_method_timeout=SHORT_STEP_TIMEOUT),
        )

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        session = self._session
        record = P.tool_calls.read(context, input)
        if record is None or record.status is not ToolCallStatus.APPROVED:
            return dex.dead_end()
        writer = session.writer(context, record.turn_id)
        writer.write_tool_call_started(record.tool_call_id, record.tool_name)
        checkpoint: list[str | None] = [
            context.get_last_heartbeat_value(str) if context.has_last_heartbeat_value() else None
        ]
        # A frame before the tool runs: from now on a lost Worker fails the attempt instead
        # of handing the same attempt to another Worker.
        await context.heartbeat(checkpoint[0]) if checkpoint[
            0
        ] is not None else await context.heartbeat()

        async def beat() -> None:
            if checkpoint[0] is not None:
                await context.heartbeat(checkpoint[0])
            else:
                await context.heartbeat()

        async def save(text: str) -> None:
            checkpoint[0] = text
            await context.heartbeat(text)

        call = DeferredToolExecution(
            flow_id=context.flow_id,
            turn_id=record.turn_id,
            tool_call=record,
            idempotency_key=idempotency_key(context.flow_id, record.turn_id, record.tool_call_id),
            attempt=context.attempt,
            events=writer,
            input_answers=record.input_answers,
            heartbeat_checkpoint=checkpoint[0],
            context=context,
            heartbeat_function=beat,
            checkpoint_function=save,
        )
        try:
            async with background_heartbeats(context, checkpoint):
                outcome = await session.runner.execute_deferred_tool_call(call)
        except ToolExecutionError as error:
            return finish_tool_call(
                session, context, replace(record, status=ToolCallStatus.FAILED, error=str(error))
            )
        except ToolOutcomeUnknownError as error:
            final = replace(record, status=ToolCallStatus.OUTCOME_UNKNOWN, error=str(error))
            return finish_tool_call(session, context, final)
        finally:
            writer.close()
        if isinstance(outcome, ToolExecutionResult):
            final = replace(record, status=ToolCallStatus.SUCCEEDED, output=outcome.output)
            return finish_tool_call(session, context, final)
        if isinstance(outcome, ToolInputRequested):
            from dex_agents._steps._waits import AwaitQuestionAnswer

            asking = replace(
                record,
                status=ToolCallStatus.AWAITING_ANSWER,
                question=outcome.question,
                choices=tuple(outcome.choices),
                allows_free_text=outcome.allows_free_text,
                input_continuation=outcome.continuation,
                input_request_count=record.input_request_count + 1,
                input_interrupt_raised=False,
            )
            P.tool_calls.write(context, record.tool_call_id, asking)
            return dex.go_to_many(AwaitQuestionAnswer.movement(record.tool_call_id))
        raise TypeError(f"execute_deferred_tool_call returned {type(outcome).__name__}")


class _RecordFailure(SessionStep[str]):
    """Records the final outcome of a tool Step that failed for good."""

    reads_fail: bool

    async def execute(self, context: AsyncContext, input: str) -> StepDecision:
        record = P.tool_calls.read(context, input)
        if record is None or record.status.is_final:
            return dex.dead_end()
        recovery = context.recovery_error
        detail = recovery.detail if recovery is not None else "the tool Step failed"
        never_ran = (
            recovery is not None
            and recovery.error_type == ATTEMPT_NOT_STARTED_ERROR_TYPE
            and record.input_request_count == 0
        )
        if never_ran:
            final = replace(
                record,
                status=ToolCallStatus.FAILED,
                error=f"{TOOL_CALL_NOT_RUN_ERROR_PREFIX}: {detail}",
            )
        elif self.reads_fail and record.effect is ToolEffect.READ:
            final = replace(record, status=ToolCallStatus.FAILED, error=detail)
        else:
            final = replace(record, status=ToolCallStatus.OUTCOME_UNKNOWN, error=detail)
        return finish_tool_call(self._session, context, final)


class RecordToolFailure(_RecordFailure):
    """Failure route of ``CallTool``: ``failed`` for a read, ``outcome_unknown`` for a write."""

    reads_fail = True


class RecordToolOutcomeUnknown(_RecordFailure):
    """Failure route of ``CallSingleAttemptTool``: ``outcome_unknown``."""

    reads_fail = False


class CallTool(_ToolStep):
    """Runs one ``read`` or ``idempotent_write`` call: three attempts."""

    failure_route = RecordToolFailure
    attempts = 3


class CallSingleAttemptTool(_ToolStep):
    """Runs one ``non_idempotent_write`` or ``unclassified`` call: one attempt."""

    failure_route = RecordToolOutcomeUnknown
    attempts = 1
