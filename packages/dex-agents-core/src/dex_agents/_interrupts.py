"""Interrupts: approvals and questions that wait for a person."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

__all__ = [
    "AgentInterrupt",
    "AgentInterruptResolution",
    "AnswerQuestionRequest",
    "InterruptKind",
    "QuestionResolution",
    "ResolveInterruptRequest",
    "deadline_passed",
]


class InterruptKind(StrEnum):
    """What an interrupt asks of a person."""

    APPROVAL = "approval"
    QUESTION = "question"


class QuestionResolution(StrEnum):
    """How a question ended."""

    ANSWERED = "answered"
    DECLINED = "declined"
    DEADLINE_PASSED = "deadline_passed"


@dataclass(frozen=True, kw_only=True)
class AgentInterrupt:
    """A pending approval or question (an entry of ``PendingInterrupts``).

    Attributes:
        interrupt_id: The tool call id, or ``<tool_call_id>-input-<n>`` for a tool's question.
        tool_call_id: The call that waits.
        tool_name: Its tool.
        kind: Approval or question.
        turn_id: The turn of the call.
        arguments: For an approval: the call's arguments (JSON text).
        deadline: ISO 8601 time after which the interrupt can no longer be resolved.
        question: For a question: its text.
        choices: For a question: the allowed answers, when restricted.
        allows_free_text: For a question: whether any non-blank answer is accepted.
    """

    interrupt_id: str
    tool_call_id: str
    tool_name: str
    kind: InterruptKind
    turn_id: str
    arguments: str | None = None
    deadline: str | None = None
    question: str | None = None
    choices: tuple[str, ...] = ()
    allows_free_text: bool = True


@dataclass(frozen=True, kw_only=True)
class AgentInterruptResolution:
    """What resolved an interrupt (published on ``InterruptResolutions[interrupt_id]``).

    Attributes:
        interrupt_id: The interrupt.
        kind: Approval or question.
        approved: For an approval: the decision.
        rejection_message: For a rejected approval: the reason given to the model.
        resolution: For a question: answered or declined.
        answer: For an answered question: the answer.
    """

    interrupt_id: str
    kind: InterruptKind
    approved: bool = False
    rejection_message: str | None = None
    resolution: QuestionResolution | None = None
    answer: str | None = None


@dataclass(frozen=True, kw_only=True)
class ResolveInterruptRequest:
    """Input of ``resolve_interrupt``: approve or reject an approval, or decline a question."""

    interrupt_id: str
    approved: bool
    rejection_message: str | None = None


@dataclass(frozen=True, kw_only=True)
class AnswerQuestionRequest:
    """Input of ``answer_question``."""

    interrupt_id: str
    answer: str


def deadline_passed(interrupt: AgentInterrupt, now: datetime) -> bool:
    """Whether an interrupt's deadline is behind ``now`` (an aware datetime)."""
    return interrupt.deadline is not None and datetime.fromisoformat(interrupt.deadline) <= now
