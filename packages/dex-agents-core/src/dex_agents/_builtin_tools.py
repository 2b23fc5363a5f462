"""Built-in tools the session routes itself: ``ask_user`` and ``durable_wait``.

They work under every runner: the runner offers their definitions, and ``RunModel`` sends
their calls to ``AwaitQuestionAnswer`` and ``AwaitTimer``. Argument checks are pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

__all__ = [
    "BUILT_IN_TOOL_DEFINITIONS",
    "QUESTION_DEADLINE_PASSED_ERROR",
    "QUESTION_DECLINED_TEXT",
    "AskUserArguments",
    "BuiltInTool",
    "BuiltInToolArgumentError",
    "BuiltInToolDefinition",
    "DurableWaitArguments",
    "answered_result",
    "parse_ask_user",
    "parse_durable_wait",
    "waited_result",
]

QUESTION_DECLINED_TEXT = "The user declined to answer."
QUESTION_DEADLINE_PASSED_ERROR = "question deadline passed"


class BuiltInTool(StrEnum):
    """Tools the session itself implements."""

    ASK_USER = "ask_user"
    DURABLE_WAIT = "durable_wait"
    WRITE_TODOS = "write_todos"


@dataclass(frozen=True, kw_only=True)
class BuiltInToolDefinition:
    """A built-in tool as a runner offers it to a model.

    Attributes:
        name: The tool name.
        description: What the model reads about it.
        parameters: JSON Schema of its arguments.
    """

    name: BuiltInTool
    description: str
    parameters: dict[str, Any]


BUILT_IN_TOOL_DEFINITIONS: tuple[BuiltInToolDefinition, ...] = (
    BuiltInToolDefinition(
        name=BuiltInTool.ASK_USER,
        description=(
            "Ask the user a question and wait for the answer. Offer choices when only "
            "some answers make sense."
        ),
        parameters={
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question to ask."},
                "choices": {
                    "type": ["array", "null"],
                    "items": {"type": "string"},
                    "description": "Answers the user may pick from.",
                },
                "allows_free_text": {
                    "type": ["boolean", "null"],
                    "description": "Whether the user may answer outside the choices.",
                },
            },
            "required": ["question"],
            "additionalProperties": False,
        },
    ),
    BuiltInToolDefinition(
        name=BuiltInTool.DURABLE_WAIT,
        description=("Wait for a number of seconds without holding any resources, then continue."),
        parameters={
            "type": "object",
            "properties": {
                "duration_seconds": {"type": "integer", "minimum": 1},
                "reason": {"type": "string", "description": "Why the wait is needed."},
            },
            "required": ["duration_seconds", "reason"],
            "additionalProperties": False,
        },
    ),
)


class BuiltInToolArgumentError(ValueError):
    """A built-in call's arguments are invalid; the call records ``failed`` with this text."""

    def __init__(self, tool: BuiltInTool, reason: str) -> None:
        super().__init__(f"invalid {tool.value} arguments: {reason}")


@dataclass(frozen=True, kw_only=True)
class AskUserArguments:
    """Checked arguments of ``ask_user``."""

    question: str
    choices: tuple[str, ...] = ()
    allows_free_text: bool = True


@dataclass(frozen=True, kw_only=True)
class DurableWaitArguments:
    """Checked arguments of ``durable_wait``."""

    duration_seconds: int
    reason: str


def _object(tool: BuiltInTool, arguments: str) -> dict[str, Any]:
    try:
        data = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        raise BuiltInToolArgumentError(tool, "arguments are not valid JSON") from None
    if not isinstance(data, dict):
        raise BuiltInToolArgumentError(tool, "arguments must be a JSON object")
    # Providers in strict-schema mode send null for an absent optional argument.
    return {key: value for key, value in data.items() if value is not None}


def parse_ask_user(arguments: str) -> AskUserArguments:
    """Check ``ask_user`` arguments.

    Raises:
        BuiltInToolArgumentError: With the reason the model will read.
    """
    tool = BuiltInTool.ASK_USER
    data = _object(tool, arguments)
    unknown = set(data) - {"question", "choices", "allows_free_text"}
    if unknown:
        raise BuiltInToolArgumentError(tool, f"unknown argument {sorted(unknown)[0]!r}")
    question = data.get("question")
    if not isinstance(question, str) or not question.strip():
        raise BuiltInToolArgumentError(tool, "question must be a non-blank string")
    choices = data.get("choices", [])
    if not isinstance(choices, list) or not all(
        isinstance(choice, str) and choice.strip() for choice in choices
    ):
        raise BuiltInToolArgumentError(tool, "choices must be a list of non-blank strings")
    if len(set(choices)) != len(choices):
        raise BuiltInToolArgumentError(tool, "choices must be unique")
    free_text = data.get("allows_free_text", not choices)
    if not isinstance(free_text, bool):
        raise BuiltInToolArgumentError(tool, "allows_free_text must be a boolean")
    if not choices and not free_text:
        raise BuiltInToolArgumentError(tool, "a question without choices must allow free text")
    return AskUserArguments(
        question=question.strip(), choices=tuple(choices), allows_free_text=free_text
    )


def parse_durable_wait(arguments: str, max_wait: timedelta) -> DurableWaitArguments:
    """Check ``durable_wait`` arguments against the longest allowed wait.

    Raises:
        BuiltInToolArgumentError: With the reason the model will read.
    """
    tool = BuiltInTool.DURABLE_WAIT
    data = _object(tool, arguments)
    unknown = set(data) - {"duration_seconds", "reason"}
    if unknown:
        raise BuiltInToolArgumentError(tool, f"unknown argument {sorted(unknown)[0]!r}")
    duration = data.get("duration_seconds")
    if isinstance(duration, float) and duration.is_integer():
        duration = int(duration)
    limit = int(max_wait.total_seconds())
    if not isinstance(duration, int) or isinstance(duration, bool):
        raise BuiltInToolArgumentError(tool, "duration_seconds must be a whole number")
    if not 1 <= duration <= limit:
        raise BuiltInToolArgumentError(tool, f"duration_seconds must be between 1 and {limit}")
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise BuiltInToolArgumentError(tool, "reason must be a non-blank string")
    return DurableWaitArguments(duration_seconds=duration, reason=reason.strip())


def answered_result(answer: str) -> str:
    """The model-visible result of an answered ``ask_user`` call."""
    return json.dumps(
        {"status": "answered", "answer": answer}, ensure_ascii=False, separators=(",", ":")
    )


def waited_result(waited_seconds: int, reason: str) -> str:
    """The model-visible result of a finished ``durable_wait`` call."""
    return json.dumps(
        {"status": "completed", "waited_seconds": waited_seconds, "reason": reason},
        ensure_ascii=False,
        separators=(",", ":"),
    )
