"""Unit tests of session values: state, usage, interrupts, paging, options, message keys."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from dex_agents._builtin_tools import BuiltInTool
from dex_agents._interrupts import AgentInterrupt, InterruptKind, deadline_passed
from dex_agents._messages import AgentMessage, MessageRole, message_sequence_key
from dex_agents._options import AgentSessionOptions, RunModelLimit
from dex_agents._policies import ToolEffect, ToolPolicy
from dex_agents._snapshot import (
    MAX_MESSAGE_PAGE_SIZE,
    SNAPSHOT_MESSAGE_LIMIT,
    AgentMessagesPage,
    ListAgentMessagesRequest,
    page_messages,
)
from dex_agents._state import (
    AgentState,
    AgentStatus,
    AgentUsage,
    InteractionMode,
    turn_id_of,
)
from dex_agents._storage import AgentMessageIndex, MessageChunkRef, StorageLimits

MiB = 1024 * 1024


def msgs(first: int, last: int) -> list[AgentMessage]:
    return [
        AgentMessage(sequence=sequence, role=MessageRole.USER, text=f"m{sequence}")
        for sequence in range(first, last + 1)
    ]


# -- AgentState ------------------------------------------------------------------------------------


def test_a_fresh_state_waits_for_a_user_message() -> None:
    state = AgentState()
    assert state.status is AgentStatus.WAITING_FOR_USER_MESSAGE
    assert state.turn_count == 0
    assert state.active_turn_id is None
    assert state.interaction_mode is InteractionMode.CHAT
    assert state.last_turn_error is None
    assert state.turn_model_calls == 0
    assert state.accepts_turn_control is True


@pytest.mark.parametrize(("count", "turn_id"), [(1, "turn-1"), (2, "turn-2"), (107, "turn-107")])
def test_turn_id_of(count: int, turn_id: str) -> None:
    assert turn_id_of(count) == turn_id


def test_turns_start_and_end_in_order() -> None:
    state = AgentState()
    first = state.start_turn()
    assert first == AgentState(
        status=AgentStatus.RUNNING_MODEL,
        turn_count=1,
        active_turn_id="turn-1",
        interaction_mode=InteractionMode.CHAT,
    )
    assert state == AgentState()  # start_turn returns a new value
    ended = first.end_turn(None)
    assert ended == AgentState(turn_count=1)
    second = ended.start_turn(InteractionMode.PLANNING)
    assert second.active_turn_id == "turn-2"
    assert second.turn_count == 2
    assert second.interaction_mode is InteractionMode.PLANNING
    assert second.status is AgentStatus.RUNNING_MODEL


def test_start_turn_resets_the_turn_model_calls_and_keeps_the_last_error() -> None:
    state = AgentState(turn_count=3, last_turn_error="boom", turn_model_calls=5)
    started = state.start_turn(InteractionMode.EXECUTING)
    assert started.turn_model_calls == 0
    assert started.active_turn_id == "turn-4"
    # last_turn_error is cleared when a later turn completes, not when it starts.
    assert started.last_turn_error == "boom"
    assert started.end_turn(None).last_turn_error is None


@pytest.mark.parametrize("error", [None, "model call failed"])
def test_end_turn(error: str | None) -> None:
    running = AgentState(
        status=AgentStatus.RUNNING_TOOLS,
        turn_count=2,
        active_turn_id="turn-2",
        interaction_mode=InteractionMode.PLANNING,
        last_turn_error="earlier",
        turn_model_calls=3,
        accepts_turn_control=False,
    )
    ended = running.end_turn(error)
    assert ended == AgentState(
        status=AgentStatus.WAITING_FOR_USER_MESSAGE,
        turn_count=2,
        active_turn_id=None,
        interaction_mode=InteractionMode.PLANNING,
        last_turn_error=error,
        turn_model_calls=0,
        accepts_turn_control=False,
    )


def test_state_enum_wire_values() -> None:
    assert [s.value for s in AgentStatus] == [
        "waiting_for_user_message",
        "running_model",
        "running_tools",
        "compacting_context",
    ]
    assert [m.value for m in InteractionMode] == ["chat", "planning", "executing"]


# -- AgentUsage ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("left", "right", "total"),
    [
        (AgentUsage(), AgentUsage(), AgentUsage()),
        (
            AgentUsage(input_tokens=10, output_tokens=5, total_tokens=15, model_calls=1),
            AgentUsage(),
            AgentUsage(input_tokens=10, output_tokens=5, total_tokens=15, model_calls=1),
        ),
        (
            AgentUsage(
                input_tokens=1,
                output_tokens=2,
                total_tokens=3,
                cached_input_tokens=4,
                reasoning_tokens=5,
                model_calls=6,
            ),
            AgentUsage(
                input_tokens=10,
                output_tokens=20,
                total_tokens=30,
                cached_input_tokens=40,
                reasoning_tokens=50,
                model_calls=60,
            ),
            AgentUsage(
                input_tokens=11,
                output_tokens=22,
                total_tokens=33,
                cached_input_tokens=44,
                reasoning_tokens=55,
                model_calls=66,
            ),
        ),
    ],
)
def test_usage_adds_field_by_field(left: AgentUsage, right: AgentUsage, total: AgentUsage) -> None:
    assert left + right == total
    assert right + left == total


def test_usage_sum_over_many_calls() -> None:
    call = AgentUsage(input_tokens=100, output_tokens=20, total_tokens=120, model_calls=1)
    total = sum([call] * 5, AgentUsage())
    assert total == AgentUsage(input_tokens=500, output_tokens=100, total_tokens=600, model_calls=5)


# -- deadline_passed -------------------------------------------------------------------------------

NOW = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)


def interrupt(deadline: str | None) -> AgentInterrupt:
    return AgentInterrupt(
        interrupt_id="call_1",
        tool_call_id="call_1",
        tool_name="refund",
        kind=InterruptKind.APPROVAL,
        turn_id="turn-1",
        deadline=deadline,
    )


@pytest.mark.parametrize(
    ("deadline", "passed"),
    [
        (None, False),
        ("2030-01-01T12:00:01+00:00", False),
        ("2030-01-01T12:00:00.000001+00:00", False),
        ("2030-01-01T12:00:00+00:00", True),
        ("2030-01-01T11:59:59.999999+00:00", True),
        ("2029-12-31T00:00:00+00:00", True),
        ("2030-01-01T12:00:00Z", True),
        ("2030-01-01T13:00:00+01:00", True),  # the same instant in another zone
        ("2030-01-01T13:00:01+01:00", False),
        ("2030-01-01T11:00:00-01:00", True),
        ("2030-01-01T11:30:00-01:00", False),
    ],
)
def test_deadline_passed(deadline: str | None, passed: bool) -> None:  # noqa: FBT001
    assert deadline_passed(interrupt(deadline), NOW) is passed


def test_deadline_passed_with_now_in_another_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    now = NOW.astimezone(tokyo)
    assert deadline_passed(interrupt("2030-01-01T12:00:00+00:00"), now)
    assert not deadline_passed(interrupt("2030-01-01T12:00:01+00:00"), now)


def test_deadline_round_trips_through_isoformat() -> None:
    deadline = NOW + timedelta(minutes=5)
    pending = interrupt(deadline.isoformat())
    assert not deadline_passed(pending, NOW)
    assert not deadline_passed(pending, deadline - timedelta(microseconds=1))
    assert deadline_passed(pending, deadline)


# -- page_messages -----------------------------------------------------------------------------


def test_page_sizes() -> None:
    assert MAX_MESSAGE_PAGE_SIZE == 200
    assert SNAPSHOT_MESSAGE_LIMIT == 200
    assert ListAgentMessagesRequest() == ListAgentMessagesRequest(before_sequence=None, limit=50)


@pytest.mark.parametrize(
    ("limit", "size"),
    [(-10, 1), (0, 1), (1, 1), (2, 2), (50, 50), (199, 199), (200, 200), (201, 200), (10**6, 200)],
)
def test_limit_is_clamped_to_1_through_200(limit: int, size: int) -> None:
    messages = msgs(1, 500)
    page = page_messages(messages, ListAgentMessagesRequest(limit=limit), None)
    assert [m.sequence for m in page.messages] == list(range(501 - size, 501))
    assert page.next_before_sequence == 501 - size


@pytest.mark.parametrize(
    ("count", "before", "limit", "expected", "next_before"),
    [
        (0, None, 50, [], None),
        (3, None, 50, [1, 2, 3], None),
        (10, None, 3, [8, 9, 10], 8),
        (10, 8, 3, [5, 6, 7], 5),
        (10, 5, 3, [2, 3, 4], 2),
        (10, 2, 3, [1], None),
        (10, 4, 3, [1, 2, 3], None),
        (10, 1, 3, [], None),
        (10, 11, 3, [8, 9, 10], 8),
        (10, 1000, 20, list(range(1, 11)), None),
    ],
)
def test_pages_go_back_oldest_first(
    count: int, before: int | None, limit: int, expected: list[int], next_before: int | None
) -> None:
    request = ListAgentMessagesRequest(before_sequence=before, limit=limit)
    page = page_messages(msgs(1, count), request, None)
    assert [m.sequence for m in page.messages] == expected
    assert page.next_before_sequence == next_before
    assert page.deleted_before_sequence is None


def test_following_next_before_sequence_visits_every_message_once() -> None:
    messages = msgs(1, 437)
    seen: list[int] = []
    before: int | None = None
    for _ in range(100):
        page = page_messages(
            messages, ListAgentMessagesRequest(before_sequence=before, limit=60), None
        )
        seen[:0] = [m.sequence for m in page.messages]
        before = page.next_before_sequence
        if before is None:
            break
    assert seen == list(range(1, 438))


@pytest.mark.parametrize(
    ("index", "deleted_before"),
    [
        (None, None),
        (AgentMessageIndex(), None),
        (
            AgentMessageIndex(
                chunks=(MessageChunkRef(first_sequence=1, last_sequence=32),),
                window_first_sequence=33,
                first_sequence=1,
            ),
            None,
        ),
        (
            AgentMessageIndex(
                chunks=(MessageChunkRef(first_sequence=33, last_sequence=64),),
                window_first_sequence=65,
                first_sequence=33,
            ),
            33,
        ),
    ],
)
def test_deleted_before_sequence_comes_from_the_index(
    index: AgentMessageIndex | None, deleted_before: int | None
) -> None:
    first = index.first_sequence if index is not None else 1
    messages = msgs(first, 100)
    for before in (None, 60, first + 1):
        page = page_messages(messages, ListAgentMessagesRequest(before_sequence=before), index)
        assert page.deleted_before_sequence == deleted_before


def test_the_last_page_after_retention_starts_at_the_first_stored_message() -> None:
    index = AgentMessageIndex(
        chunks=(MessageChunkRef(first_sequence=33, last_sequence=64),),
        window_first_sequence=65,
        first_sequence=33,
    )
    page = page_messages(msgs(33, 70), ListAgentMessagesRequest(before_sequence=40), index)
    assert page == AgentMessagesPage(
        messages=tuple(msgs(33, 39)), next_before_sequence=None, deleted_before_sequence=33
    )


# -- AgentSessionOptions -----------------------------------------------------------------------


def test_option_defaults_match_the_spec() -> None:
    options = AgentSessionOptions()
    assert options.tool_policies == {}
    assert options.default_tool_effect is ToolEffect.UNCLASSIFIED
    assert options.event_stream_capacity_bytes == 10 * MiB
    assert options.interrupt_deadline is None
    assert options.built_in_tools == frozenset()
    assert options.max_durable_wait == timedelta(days=365)
    assert options.plan_mode_enabled is False
    assert options.tool_timeout == timedelta(minutes=15)
    assert options.retained_message_limit == 1000
    assert options.run_model_limit == RunModelLimit(
        timeout=timedelta(minutes=15),
        heartbeat_timeout=timedelta(minutes=2),
        maximum_attempts=3,
        retry_budget=timedelta(minutes=30),
    )
    assert options.storage_limits() == StorageLimits(
        window_size=64, chunk_size=32, chunk_max_bytes=MiB
    )


def test_storage_limits_follow_the_message_options() -> None:
    options = AgentSessionOptions(
        message_window_size=8, message_chunk_size=4, message_chunk_max_bytes=8 * MiB
    )
    assert options.storage_limits() == StorageLimits(
        window_size=8, chunk_size=4, chunk_max_bytes=8 * MiB
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"built_in_tools": frozenset({BuiltInTool.ASK_USER, BuiltInTool.DURABLE_WAIT})},
        {"built_in_tools": frozenset({"ask_user"})},
        {"interrupt_deadline": timedelta(seconds=1)},
        {"max_durable_wait": timedelta(seconds=1)},
        {"event_stream_capacity_bytes": 1},
        {"run_model_limit": RunModelLimit(maximum_attempts=1)},
        {"message_window_size": 1, "message_chunk_size": 1, "message_chunk_max_bytes": 1},
        {"retained_message_limit": None},
        {"tool_policies": {"refund": ToolPolicy(ToolEffect.NON_IDEMPOTENT_WRITE)}},
    ],
)
def test_options_accept(kwargs: dict[str, Any]) -> None:
    AgentSessionOptions(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"event_stream_capacity_bytes": 0}, "event_stream_capacity_bytes must be positive"),
        ({"event_stream_capacity_bytes": -1}, "event_stream_capacity_bytes must be positive"),
        ({"interrupt_deadline": timedelta(0)}, "interrupt_deadline must be positive"),
        ({"interrupt_deadline": timedelta(seconds=-1)}, "interrupt_deadline must be positive"),
        (
            {"max_durable_wait": timedelta(milliseconds=999)},
            "max_durable_wait must be at least one second",
        ),
        ({"max_durable_wait": timedelta(0)}, "max_durable_wait must be at least one second"),
        (
            {"run_model_limit": RunModelLimit(maximum_attempts=0)},
            "run_model_limit.maximum_attempts must be at least 1",
        ),
        ({"built_in_tools": frozenset({"ask"})}, "unknown built-in tools: ['ask']"),
        (
            {"built_in_tools": frozenset({"zz", "aa", BuiltInTool.ASK_USER})},
            "unknown built-in tools: ['aa', 'zz']",
        ),
        (
            {"built_in_tools": frozenset({BuiltInTool.WRITE_TODOS})},
            "write_todos and plan mode are not available in this release yet",
        ),
        (
            {"plan_mode_enabled": True},
            "write_todos and plan mode are not available in this release yet",
        ),
        (
            {"message_window_size": 0},
            "message_window_size and message_chunk_size must be at least 1",
        ),
        (
            {"message_chunk_size": 0},
            "message_window_size and message_chunk_size must be at least 1",
        ),
        (
            {"message_chunk_max_bytes": 0},
            "message_chunk_max_bytes must be between 1 byte and 8 MiB",
        ),
        (
            {"message_chunk_max_bytes": 8 * MiB + 1},
            "message_chunk_max_bytes must be between 1 byte and 8 MiB",
        ),
    ],
)
def test_options_reject(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        AgentSessionOptions(**kwargs)


# -- message_sequence_key --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sequence", "key"),
    [
        (1, "000000000001"),
        (9, "000000000009"),
        (10, "000000000010"),
        (1000, "000000001000"),
        (123456789012, "123456789012"),
        (999999999999, "999999999999"),
    ],
)
def test_message_sequence_key(sequence: int, key: str) -> None:
    assert message_sequence_key(sequence) == key
    assert len(key) == 12


@pytest.mark.parametrize("sequence", [0, -1, -100])
def test_message_sequence_key_rejects_sequences_before_1(sequence: int) -> None:
    with pytest.raises(ValueError, match=f"^message sequences start at 1, not {sequence}$"):
        message_sequence_key(sequence)


def test_message_sequence_keys_sort_like_their_sequences() -> None:
    sequences = [1, 2, 9, 10, 11, 99, 100, 101, 999, 1000, 65, 64, 33, 32, 10**9, 10**11]
    keys = [message_sequence_key(s) for s in sequences]
    assert sorted(keys) == [message_sequence_key(s) for s in sorted(sequences)]
