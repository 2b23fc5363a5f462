"""Pure rules of the engine, without a server: wait plans, retries, search queries."""

from __future__ import annotations

import pytest
from dex.dexpb import dex_pb2 as pb

from dex_agents.engine._conditions import build_condition_results, channel_bounds, plan_wait
from dex_agents.engine._retry import RetrySettings, next_retry_delay
from dex_agents.engine._search import Timestamp, parse_query


def _channel(name: str, least: int | None = None, most: int | None = None) -> pb.ChannelCondition:
    condition = pb.ChannelCondition(channel_name=name)
    if least is not None:
        condition.at_least = least
    if most is not None:
        condition.at_most = most
    return condition


@pytest.mark.parametrize(
    ("least", "most", "bounds"),
    [(None, None, (1, 1)), (None, 3, (0, 3)), (2, None, (2, None)), (2, 4, (2, 4))],
)
def test_channel_bounds(
    least: int | None, most: int | None, bounds: tuple[int, int | None]
) -> None:
    assert channel_bounds(_channel("c", least, most)) == bounds


def test_conditions_on_one_channel_share_its_queue_minimums_first() -> None:
    wait = pb.WaitingCondition(waiting_condition_type=pb.WAITING_CONDITION_TYPE_ALL_COMPLETED)
    wait.channel_conditions.extend([_channel("c", 1, None), _channel("c", 2, 2)])
    assert plan_wait(wait, [], {"c": 2}) is None
    plan = plan_wait(wait, [], {"c": 5})
    assert plan is not None
    # Both minimums are reserved (1 + 2), then the first takes everything left.
    assert dict(plan.takes) == {0: 3, 1: 2}


def test_any_of_prefers_a_fired_timer_over_a_ready_channel() -> None:
    wait = pb.WaitingCondition(waiting_condition_type=pb.WAITING_CONDITION_TYPE_ANY_COMPLETED)
    wait.channel_conditions.append(_channel("answers"))
    wait.timer_conditions.add(duration_seconds=5)
    plan = plan_wait(wait, [True], {"answers": 1})
    assert plan is not None
    assert dict(plan.takes) == {}
    plan = plan_wait(wait, [False], {"answers": 1})
    assert plan is not None
    assert dict(plan.takes) == {0: 1}
    results = build_condition_results(wait, [False], {0: [pb.Value(string_value="yes")]})
    assert [r.condition_status for r in results.timer_results] == [pb.CONDITION_STATUS_WAITING]
    assert results.channel_results[0].values[0].string_value == "yes"


def test_any_combination_needs_every_member_of_one_combination() -> None:
    wait = pb.WaitingCondition(
        waiting_condition_type=pb.WAITING_CONDITION_TYPE_ANY_COMBINATION_COMPLETED
    )
    wait.timer_conditions.add(condition_id="t", duration_seconds=1)
    a = _channel("a")
    a.condition_id = "a"
    b = _channel("b")
    b.condition_id = "b"
    wait.channel_conditions.extend([a, b])
    wait.condition_combinations.add(condition_ids=["a", "b"])
    wait.condition_combinations.add(condition_ids=["t"])
    assert plan_wait(wait, [False], {"a": 1}) is None
    assert plan_wait(wait, [False], {"a": 1, "b": 1}) is not None
    assert plan_wait(wait, [True], {}) is not None


def test_an_empty_wait_is_ready_and_at_most_never_blocks() -> None:
    assert plan_wait(pb.WaitingCondition(), [], {}) is not None
    wait = pb.WaitingCondition(waiting_condition_type=pb.WAITING_CONDITION_TYPE_ALL_COMPLETED)
    wait.channel_conditions.append(_channel("c", None, 2))
    plan = plan_wait(wait, [], {})
    assert plan is not None
    assert dict(plan.takes) == {0: 0}


def test_retry_delays_grow_cap_and_stop() -> None:
    settings = RetrySettings.from_proto(
        pb.RetryPolicy(initial_interval_seconds=1, maximum_interval_seconds=5, maximum_attempts=5)
    )
    delays = [next_retry_delay(settings, attempt, 0.0) for attempt in range(1, 6)]
    assert delays == [1.0, 2.0, 4.0, 5.0, None]
    assert next_retry_delay(settings, 1, 0.0, retry_after_seconds=7) == 7.0
    budget = RetrySettings.from_proto(pb.RetryPolicy(total_duration_seconds=10))
    assert next_retry_delay(budget, 1, 9.5) is None
    assert RetrySettings.from_proto(None).maximum_attempts == 0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", True),
        ("FlowType = 'Agent'", True),
        ("FlowType != 'Agent'", False),
        ("ActiveStepTypes = 'AwaitUserMessage'", True),
        ("ActiveStepTypes = 'RunModel'", False),
        ("Count > 2 AND Count <= 3", True),
        ("Missing = 'x' OR FlowType IN ('A', 'Agent')", True),
        ("(Missing != 'x')", False),
        ("StartTime > '2026-01-01T00:00:00Z'", True),
        ("Name STARTS_WITH 'ses'", True),
        ("Done = true", False),
    ],
)
def test_search_queries(query: str, *, expected: bool) -> None:
    attributes = {
        "FlowType": "Agent",
        "ActiveStepTypes": ("AwaitUserMessage",),
        "Count": 3,
        "StartTime": Timestamp(1_800_000_000.0),
        "Name": "session-1",
        "Done": False,
    }
    assert parse_query(query)(attributes) is expected


@pytest.mark.parametrize("query", ["FlowType =", "= 'x'", "(FlowType = 'a'", "A IN 'x'", "A ~ 1"])
def test_malformed_queries_are_rejected(query: str) -> None:
    with pytest.raises(ValueError, match=r"search query|expected|missing"):
        parse_query(query)
