"""Tool call records and what the session tells the model about them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from dex_agents._policies import ToolEffect

__all__ = [
    "ATTEMPT_NOT_STARTED_ERROR_TYPE",
    "MISSING_TOOL_RESULT_TEXT",
    "TOOL_CALL_NOT_RUN_ERROR_PREFIX",
    "AgentToolCall",
    "ToolCallCompleted",
    "ToolCallStatus",
    "describe_tool_call_outcome",
]

ATTEMPT_NOT_STARTED_ERROR_TYPE = "dex_agents.engine.AttemptNotStarted"
"""``RecoveryErrorInfo.error_type`` meaning no attempt of the failed Step reached a Worker.

``dex-python-sdk`` 1.23.0 has no ``attempt_progress``; ``dex-agents-engine`` reports
``NOT_STARTED`` through this error type instead.
"""

TOOL_CALL_NOT_RUN_ERROR_PREFIX = "the tool did not run, so it is safe to call again"
"""Start of the ``error`` of a call whose tool Step never reached a Worker."""

MISSING_TOOL_RESULT_TEXT = (
    "The tool call's outcome is unknown: it may or may not have taken effect."
)
"""What the model sees for a stored tool call without a final record."""


class ToolCallStatus(StrEnum):
    """Where a tool call is; the last four are final."""

    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    AWAITING_ANSWER = "awaiting_answer"
    WAITING_FOR_TIMER = "waiting_for_timer"
    WAITING_FOR_TASK = "waiting_for_task"
    REJECTED = "rejected"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    OUTCOME_UNKNOWN = "outcome_unknown"

    @property
    def is_final(self) -> bool:
        """Whether the record will not change again in its turn."""
        return self in (
            ToolCallStatus.REJECTED,
            ToolCallStatus.SUCCEEDED,
            ToolCallStatus.FAILED,
            ToolCallStatus.OUTCOME_UNKNOWN,
        )


@dataclass(frozen=True, kw_only=True)
class AgentToolCall:
    """The record of one tool call of the active turn (``AgentToolCalls[tool_call_id]``).

    Attributes:
        tool_call_id: The model's id for the call; unique within its turn.
        tool_name: The tool.
        arguments: The arguments as the model sent them (JSON text).
        turn_id: The turn that made the call.
        effect: The effect after the tool policies; it chose the tool Step.
        requires_approval: Whether the call waited for approval.
        status: Where the call is.
        deferral_order: Position in the model's response, from 0.
        built_in_tool: The built-in tool's name for ``ask_user`` and ``durable_wait``.
        output: The tool's result text, once ``succeeded``.
        error: Why the call ``failed`` or has an unknown outcome.
        rejection_message: The reviewer's reason, or why the call was not run.
        cancellation_reason: ``steered`` or ``turn_cancelled`` when a turn control
            removed the call.
        wait_until: For ``durable_wait``: ISO 8601 end of the wait.
        wait_reason: For ``durable_wait``: the reason the model gave.
        question: A pending question (``ask_user``, or a tool's ``ToolInputRequested``).
        choices: The allowed answers, when restricted.
        allows_free_text: Whether any non-blank answer is accepted.
        input_answers: Answers given to the tool's questions, in order.
        input_continuation: The tool's continuation of its last question.
        input_request_count: How many questions the tool asked.
        input_interrupt_raised: Whether the pending question's interrupt is raised yet.
        tool_source_reference: Opaque text the call's tool source stored.
        task_id: A started tool task's handle.
        task_poll_interval_seconds: Seconds until the next poll of the task.
        trace_context: W3C ``traceparent`` of the call's span.
    """

    tool_call_id: str
    tool_name: str
    arguments: str
    turn_id: str
    effect: ToolEffect
    requires_approval: bool
    status: ToolCallStatus
    deferral_order: int = 0
    built_in_tool: str | None = None
    output: str | None = None
    error: str | None = None
    rejection_message: str | None = None
    cancellation_reason: str | None = None
    wait_until: str | None = None
    wait_reason: str | None = None
    question: str | None = None
    choices: tuple[str, ...] = ()
    allows_free_text: bool = True
    input_answers: tuple[str, ...] = ()
    input_continuation: str | None = None
    input_request_count: int = 0
    input_interrupt_raised: bool = False
    tool_source_reference: str | None = None
    task_id: str | None = None
    task_poll_interval_seconds: int | None = None
    trace_context: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolCallCompleted:
    """Published on ``ToolCallResults`` once per call, when its record becomes final."""

    tool_call_id: str
    turn_id: str
    status: ToolCallStatus


def describe_tool_call_outcome(record: AgentToolCall) -> str:
    """The text the model sees as the result of a final tool call record."""
    status = record.status
    if status is ToolCallStatus.SUCCEEDED:
        return record.output or ""
    if status is ToolCallStatus.REJECTED:
        if record.cancellation_reason == "steered":
            return json.dumps(
                {"status": "cancelled", "reason": "superseded_by_steered_user_message"},
                separators=(",", ":"),
            )
        if record.cancellation_reason == "turn_cancelled":
            return json.dumps(
                {"status": "cancelled", "reason": "turn_cancelled_by_user"}, separators=(",", ":")
            )
        reason = record.rejection_message or "The user rejected this tool call."
        return f"The tool call was rejected: {reason}"
    if status is ToolCallStatus.FAILED:
        return f"The tool call failed: {record.error or 'unknown error'}"
    if status is ToolCallStatus.OUTCOME_UNKNOWN:
        detail = f" ({record.error})" if record.error else ""
        return MISSING_TOOL_RESULT_TEXT + detail
    return MISSING_TOOL_RESULT_TEXT
