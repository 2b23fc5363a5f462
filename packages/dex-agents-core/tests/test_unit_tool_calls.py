"""Unit tests of tool effects and policies, tool call records, and the turn-failure note."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from dex_agents import ToolCallStepOptions
from dex_agents._notes import build_turn_failure_note
from dex_agents._policies import (
    ToolEffect,
    ToolPolicy,
    idempotency_key,
    resolve_tool_policy,
    uses_single_attempt_step,
)
from dex_agents._tool_calls import (
    MISSING_TOOL_RESULT_TEXT,
    TOOL_CALL_NOT_RUN_ERROR_PREFIX,
    AgentToolCall,
    ToolCallStatus,
    describe_tool_call_outcome,
)


def record(
    status: ToolCallStatus,
    *,
    tool_call_id: str = "call_1",
    tool_name: str = "lookup",
    arguments: str = '{"order":7}',
    deferral_order: int = 0,
    output: str | None = None,
    error: str | None = None,
    rejection_message: str | None = None,
    cancellation_reason: str | None = None,
) -> AgentToolCall:
    return AgentToolCall(
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        arguments=arguments,
        turn_id="turn-1",
        effect=ToolEffect.READ,
        requires_approval=False,
        status=status,
        deferral_order=deferral_order,
        output=output,
        error=error,
        rejection_message=rejection_message,
        cancellation_reason=cancellation_reason,
    )


# -- ToolEffect and ToolPolicy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("effect", "wire", "approval", "single_attempt"),
    [
        (ToolEffect.READ, "read", False, False),
        (ToolEffect.IDEMPOTENT_WRITE, "idempotent_write", False, False),
        (ToolEffect.NON_IDEMPOTENT_WRITE, "non_idempotent_write", True, True),
        (ToolEffect.UNCLASSIFIED, "unclassified", True, True),
    ],
)
def test_effect_table(
    effect: ToolEffect,
    wire: str,
    approval: bool,  # noqa: FBT001 - a parametrize column
    single_attempt: bool,  # noqa: FBT001 - a parametrize column
) -> None:
    assert effect.value == wire
    assert ToolEffect(wire) is effect
    assert effect.requires_approval_by_default is approval
    assert uses_single_attempt_step(effect) is single_attempt
    assert ToolPolicy(effect).requires_approval is None
    assert ToolPolicy(effect).is_approval_required is approval


@pytest.mark.parametrize("effect", list(ToolEffect))
@pytest.mark.parametrize("explicit", [True, False])
def test_an_explicit_approval_overrides_the_effect_default(
    effect: ToolEffect,
    explicit: bool,  # noqa: FBT001 - a parametrize column
) -> None:
    assert ToolPolicy(effect, requires_approval=explicit).is_approval_required is explicit


def test_every_effect_is_in_the_table() -> None:
    assert {effect.value for effect in ToolEffect} == {
        "read",
        "idempotent_write",
        "non_idempotent_write",
        "unclassified",
    }


EXPLICIT = ToolPolicy(ToolEffect.IDEMPOTENT_WRITE, requires_approval=True)


@pytest.mark.parametrize(
    ("name", "framework_effect", "default_effect", "expected"),
    [
        ("refund", None, ToolEffect.UNCLASSIFIED, EXPLICIT),
        ("refund", ToolEffect.READ, ToolEffect.UNCLASSIFIED, EXPLICIT),
        ("refund", ToolEffect.READ, ToolEffect.READ, EXPLICIT),
        ("lookup", ToolEffect.READ, ToolEffect.UNCLASSIFIED, ToolPolicy(ToolEffect.READ)),
        (
            "lookup",
            ToolEffect.IDEMPOTENT_WRITE,
            ToolEffect.READ,
            ToolPolicy(ToolEffect.IDEMPOTENT_WRITE),
        ),
        ("lookup", None, ToolEffect.UNCLASSIFIED, ToolPolicy(ToolEffect.UNCLASSIFIED)),
        ("lookup", None, ToolEffect.READ, ToolPolicy(ToolEffect.READ)),
        ("Refund", None, ToolEffect.READ, ToolPolicy(ToolEffect.READ)),
    ],
)
def test_resolve_tool_policy_precedence(
    name: str,
    framework_effect: ToolEffect | None,
    default_effect: ToolEffect,
    expected: ToolPolicy,
) -> None:
    policies = {"refund": EXPLICIT}
    policy = resolve_tool_policy(name, policies, default_effect, framework_effect)
    assert policy == expected


def test_resolved_framework_and_default_policies_use_the_effect_default_approval() -> None:
    read = resolve_tool_policy("t", {}, ToolEffect.UNCLASSIFIED, ToolEffect.READ)
    assert read.requires_approval is None
    assert not read.is_approval_required
    unclassified = resolve_tool_policy("t", {}, ToolEffect.UNCLASSIFIED)
    assert unclassified.is_approval_required


def test_an_explicit_policy_is_returned_as_given() -> None:
    policies = {"t": ToolPolicy(ToolEffect.UNCLASSIFIED, requires_approval=False)}
    assert resolve_tool_policy("t", policies, ToolEffect.READ, ToolEffect.READ) is policies["t"]


@pytest.mark.parametrize(
    ("flow_id", "turn_id", "tool_call_id", "expected"),
    [
        ("session-42", "turn-3", "call_abc", "session-42/turn-3/call_abc"),
        ("f", "turn-1", "1", "f/turn-1/1"),
    ],
)
def test_idempotency_key(flow_id: str, turn_id: str, tool_call_id: str, expected: str) -> None:
    assert idempotency_key(flow_id, turn_id, tool_call_id) == expected


def test_idempotency_keys_differ_across_turns_for_a_repeated_call_id() -> None:
    assert idempotency_key("f", "turn-1", "call_1") != idempotency_key("f", "turn-2", "call_1")


# -- ToolCallStatus ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "final"),
    [
        (ToolCallStatus.AWAITING_APPROVAL, False),
        (ToolCallStatus.APPROVED, False),
        (ToolCallStatus.AWAITING_ANSWER, False),
        (ToolCallStatus.WAITING_FOR_TIMER, False),
        (ToolCallStatus.WAITING_FOR_TASK, False),
        (ToolCallStatus.REJECTED, True),
        (ToolCallStatus.SUCCEEDED, True),
        (ToolCallStatus.FAILED, True),
        (ToolCallStatus.OUTCOME_UNKNOWN, True),
    ],
)
def test_is_final(status: ToolCallStatus, final: bool) -> None:  # noqa: FBT001
    assert status.is_final is final


def test_status_wire_values() -> None:
    assert [status.value for status in ToolCallStatus] == [
        "awaiting_approval",
        "approved",
        "awaiting_answer",
        "waiting_for_timer",
        "waiting_for_task",
        "rejected",
        "succeeded",
        "failed",
        "outcome_unknown",
    ]


# -- describe_tool_call_outcome ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "text"),
    [
        (record(ToolCallStatus.SUCCEEDED, output="42 items"), "42 items"),
        (record(ToolCallStatus.SUCCEEDED, output=""), ""),
        (record(ToolCallStatus.SUCCEEDED), ""),
        (
            record(ToolCallStatus.REJECTED, rejection_message="Not this account"),
            "The tool call was rejected: Not this account",
        ),
        (
            record(ToolCallStatus.REJECTED),
            "The tool call was rejected: The user rejected this tool call.",
        ),
        (
            record(ToolCallStatus.REJECTED, rejection_message=""),
            "The tool call was rejected: The user rejected this tool call.",
        ),
        (record(ToolCallStatus.FAILED, error="timeout"), "The tool call failed: timeout"),
        (record(ToolCallStatus.FAILED), "The tool call failed: unknown error"),
        (
            record(
                ToolCallStatus.FAILED,
                error=f"{TOOL_CALL_NOT_RUN_ERROR_PREFIX}: worker lost",
            ),
            "The tool call failed: the tool did not run, so it is safe to call again: worker lost",
        ),
        (
            record(ToolCallStatus.OUTCOME_UNKNOWN, error="connection reset"),
            (
                "The tool call's outcome is unknown: it may or may not have taken effect. "
                "(connection reset)"
            ),
        ),
        (record(ToolCallStatus.OUTCOME_UNKNOWN), MISSING_TOOL_RESULT_TEXT),
        (
            record(ToolCallStatus.OUTCOME_UNKNOWN, cancellation_reason="turn_cancelled"),
            MISSING_TOOL_RESULT_TEXT,
        ),
        (record(ToolCallStatus.AWAITING_APPROVAL), MISSING_TOOL_RESULT_TEXT),
        (record(ToolCallStatus.WAITING_FOR_TASK, output="partial"), MISSING_TOOL_RESULT_TEXT),
    ],
)
def test_describe_tool_call_outcome(call: AgentToolCall, text: str) -> None:
    assert describe_tool_call_outcome(call) == text


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("steered", {"status": "cancelled", "reason": "superseded_by_steered_user_message"}),
        ("turn_cancelled", {"status": "cancelled", "reason": "turn_cancelled_by_user"}),
    ],
)
def test_a_call_removed_by_a_turn_control_reads_as_cancelled(
    reason: str, expected: dict[str, str]
) -> None:
    # The cancellation reason wins over a rejection message.
    call = record(ToolCallStatus.REJECTED, cancellation_reason=reason, rejection_message="ignored")
    text = describe_tool_call_outcome(call)
    assert json.loads(text) == expected
    assert list(json.loads(text)) == ["status", "reason"]


def test_an_unknown_cancellation_reason_reads_as_a_rejection() -> None:
    call = record(ToolCallStatus.REJECTED, cancellation_reason="other", rejection_message="no")
    assert describe_tool_call_outcome(call) == "The tool call was rejected: no"


def test_missing_tool_result_and_not_run_texts() -> None:
    assert MISSING_TOOL_RESULT_TEXT == (
        "The tool call's outcome is unknown: it may or may not have taken effect."
    )
    assert TOOL_CALL_NOT_RUN_ERROR_PREFIX == "the tool did not run, so it is safe to call again"


# -- build_turn_failure_note -----------------------------------------------------------------


def test_the_note_lists_final_records_in_deferral_order() -> None:
    records = [
        record(
            ToolCallStatus.FAILED,
            tool_call_id="c",
            tool_name="charge",
            arguments='{"amount":5}',
            deferral_order=2,
            error="card declined",
        ),
        record(
            ToolCallStatus.SUCCEEDED,
            tool_call_id="a",
            tool_name="lookup",
            arguments='{"order":7}',
            deferral_order=0,
            output="found",
        ),
        record(
            ToolCallStatus.AWAITING_APPROVAL,
            tool_call_id="b",
            tool_name="refund",
            deferral_order=1,
        ),
        record(
            ToolCallStatus.OUTCOME_UNKNOWN,
            tool_call_id="d",
            tool_name="email",
            arguments="{}",
            deferral_order=3,
        ),
        record(
            ToolCallStatus.REJECTED,
            tool_call_id="e",
            tool_name="delete",
            arguments='{"id":1}',
            deferral_order=4,
            cancellation_reason="steered",
        ),
    ]
    assert build_turn_failure_note(records) == (
        "[Dex] The previous turn failed after these tool calls ran:\n"
        '- lookup {"order":7} -> succeeded: found\n'
        '- charge {"amount":5} -> failed: The tool call failed: card declined\n'
        "- email {} -> outcome_unknown: The tool call's outcome is unknown: it may or may "
        "not have taken effect.\n"
        '- delete {"id":1} -> rejected: ' + describe_tool_call_outcome(records[4]) + "\n"
        "Do not repeat these tool calls unless the user asks again."
    )


def test_the_note_has_one_line_per_final_record_between_header_and_footer() -> None:
    records = [
        record(ToolCallStatus.SUCCEEDED, tool_call_id=str(n), deferral_order=n, output=str(n))
        for n in range(5)
    ]
    note = build_turn_failure_note(reversed(records))
    assert note is not None
    lines = note.split("\n")
    assert lines[0] == "[Dex] The previous turn failed after these tool calls ran:"
    assert lines[-1] == "Do not repeat these tool calls unless the user asks again."
    assert lines[1:-1] == [f'- lookup {{"order":7}} -> succeeded: {n}' for n in range(5)]


@pytest.mark.parametrize(
    "records",
    [
        [],
        [record(ToolCallStatus.AWAITING_APPROVAL)],
        [
            record(ToolCallStatus.APPROVED, tool_call_id="a"),
            record(ToolCallStatus.AWAITING_ANSWER, tool_call_id="b"),
            record(ToolCallStatus.WAITING_FOR_TIMER, tool_call_id="c"),
            record(ToolCallStatus.WAITING_FOR_TASK, tool_call_id="d"),
        ],
    ],
    ids=["none", "one-waiting", "all-waiting"],
)
def test_no_note_without_a_final_record(records: list[AgentToolCall]) -> None:
    assert build_turn_failure_note(records) is None


def test_the_note_accepts_any_iterable() -> None:
    call = record(ToolCallStatus.SUCCEEDED, output="ok")
    assert build_turn_failure_note(iter([call])) == build_turn_failure_note([call])
    assert build_turn_failure_note(c for c in [replace(call, deferral_order=9)]) is not None


def test_tool_call_step_options_refuse_a_timeout_that_is_not_positive() -> None:
    with pytest.raises(ValueError, match="execute_method_timeout must be positive"):
        ToolCallStepOptions(execute_method_timeout=timedelta())
    assert ToolCallStepOptions().retry_policy is None
