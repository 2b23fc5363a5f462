"""Unit tests of the JSON codec (``dex_agents._wire``): no engine, no network."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

import pytest

from dex_agents._interrupts import AgentInterrupt, InterruptKind
from dex_agents._messages import AgentMessage, MessageRole
from dex_agents._policies import ToolEffect
from dex_agents._state import AgentState, AgentStatus, AgentUsage, InteractionMode
from dex_agents._storage import (
    AgentMessageChunk,
    AgentMessageIndex,
    MessageChunkRef,
)
from dex_agents._tool_calls import AgentToolCall, ToolCallStatus
from dex_agents._wire import WireError, dumps, from_wire, loads, to_wire


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Level(Enum):
    LOW = 1
    HIGH = 2


@dataclass(frozen=True, kw_only=True)
class Inner:
    x: int
    label: str = "none"


@dataclass(frozen=True, kw_only=True)
class Outer:
    inner: Inner
    items: tuple[Inner, ...] = ()
    tags: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    maybe: int | None = None
    either: int | str = 0
    color: Color = Color.RED
    level: Level = Level.LOW
    effect: ToolEffect = ToolEffect.READ
    ratio: float = 0.0
    mode: Literal["a", "b"] = "a"
    anything: Any = None
    flag: bool = False


FULL = Outer(
    inner=Inner(x=1, label="one"),
    items=(Inner(x=2), Inner(x=3, label="three")),
    tags=["t1", "t2"],
    scores={"a": 1.5, "b": 2.0},
    maybe=7,
    either="text",
    color=Color.BLUE,
    level=Level.HIGH,
    effect=ToolEffect.NON_IDEMPOTENT_WRITE,
    ratio=0.25,
    mode="b",
    anything={"nested": [1, "two", None]},
    flag=True,
)


# -- to_wire / dumps ---------------------------------------------------------------------------


def test_to_wire_writes_dataclasses_by_field_name_and_enums_by_value() -> None:
    assert to_wire(FULL) == {
        "inner": {"x": 1, "label": "one"},
        "items": [{"x": 2, "label": "none"}, {"x": 3, "label": "three"}],
        "tags": ["t1", "t2"],
        "scores": {"a": 1.5, "b": 2.0},
        "maybe": 7,
        "either": "text",
        "color": "blue",
        "level": 2,
        "effect": "non_idempotent_write",
        "ratio": 0.25,
        "mode": "b",
        "anything": {"nested": [1, "two", None]},
        "flag": True,
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({1: "a", 2: "b"}, {"1": "a", "2": "b"}),
        ({ToolEffect.READ: Color.RED}, {"read": "red"}),
        ((1, (2, 3)), [1, [2, 3]]),
        ([Inner(x=1)], [{"x": 1, "label": "none"}]),
        ("plain", "plain"),
        (None, None),
        (1.5, 1.5),
    ],
)
def test_to_wire_converts_containers_keys_and_scalars(value: object, expected: object) -> None:
    assert to_wire(value) == expected


def test_to_wire_leaves_a_dataclass_type_alone() -> None:
    assert to_wire(Inner) is Inner


def test_dumps_is_compact_and_keeps_non_ascii() -> None:
    assert dumps(Inner(x=1, label="héllo ✓")) == '{"x":1,"label":"héllo ✓"}'
    assert dumps({"a": [1, 2], "b": None}) == '{"a":[1,2],"b":null}'


# -- loads / from_wire: round trips --------------------------------------------------------------


def test_round_trip_of_a_nested_dataclass() -> None:
    value = loads(Outer, dumps(FULL))
    assert value == FULL
    assert isinstance(value.items, tuple)
    assert isinstance(value.tags, list)
    assert value.color is Color.BLUE
    assert value.effect is ToolEffect.NON_IDEMPOTENT_WRITE


@pytest.mark.parametrize(
    "value",
    [
        AgentMessage(
            sequence=3,
            role=MessageRole.TOOL,
            framework_item={"type": "function_call_output", "output": "ok"},
            text="ok",
            turn_id="turn-1",
            tool_call_id="call_1",
            tool_name="lookup",
            created_at="2030-01-01T00:00:00+00:00",
        ),
        AgentMessageChunk(
            first_sequence=1,
            messages=(
                AgentMessage(sequence=1, role=MessageRole.USER, text="hi"),
                AgentMessage(sequence=2, role=MessageRole.ASSISTANT, text="hello"),
            ),
        ),
        AgentMessageIndex(
            chunks=(
                MessageChunkRef(first_sequence=1, last_sequence=32),
                MessageChunkRef(first_sequence=33, last_sequence=40),
            ),
            window_first_sequence=41,
            first_sequence=1,
        ),
        AgentState(
            status=AgentStatus.RUNNING_TOOLS,
            turn_count=4,
            active_turn_id="turn-4",
            interaction_mode=InteractionMode.CHAT,
            last_turn_error="boom",
            turn_model_calls=2,
            accepts_turn_control=False,
        ),
        AgentUsage(input_tokens=1, output_tokens=2, total_tokens=3, model_calls=1),
        AgentToolCall(
            tool_call_id="call_9",
            tool_name="refund",
            arguments='{"order": 7}',
            turn_id="turn-2",
            effect=ToolEffect.IDEMPOTENT_WRITE,
            requires_approval=True,
            status=ToolCallStatus.AWAITING_ANSWER,
            deferral_order=1,
            choices=("yes", "no"),
            allows_free_text=False,
            input_answers=("yes",),
            task_poll_interval_seconds=5,
        ),
        AgentInterrupt(
            interrupt_id="call_9-input-1",
            tool_call_id="call_9",
            tool_name="refund",
            kind=InterruptKind.QUESTION,
            turn_id="turn-2",
            deadline="2030-01-01T00:00:00+00:00",
            question="Sure?",
            choices=("yes", "no"),
            allows_free_text=False,
        ),
    ],
    ids=lambda value: type(value).__name__,
)
def test_round_trip_of_session_values(value: object) -> None:
    assert loads(type(value), dumps(value)) == value


def test_round_trip_of_a_list_of_interrupts_as_persistence_stores_them() -> None:
    interrupts = [
        AgentInterrupt(
            interrupt_id=f"call_{n}",
            tool_call_id=f"call_{n}",
            tool_name="t",
            kind=InterruptKind.APPROVAL,
            turn_id="turn-1",
        )
        for n in range(3)
    ]
    assert loads(tuple[AgentInterrupt, ...], dumps(interrupts)) == tuple(interrupts)


# -- loads / from_wire: defaults, unknown fields, coercions ------------------------------------


def test_missing_fields_take_their_defaults() -> None:
    assert loads(Outer, '{"inner":{"x":5}}') == Outer(inner=Inner(x=5))


def test_missing_fields_take_default_factories_fresh() -> None:
    first = loads(Outer, '{"inner":{"x":5}}')
    second = loads(Outer, '{"inner":{"x":5}}')
    assert first.tags == []
    assert first.tags is not second.tags


def test_unknown_fields_are_ignored() -> None:
    text = '{"inner":{"x":5,"added_later":1},"future_field":{"a":[1]},"maybe":null}'
    assert loads(Outer, text) == Outer(inner=Inner(x=5))


def test_old_agent_state_without_newer_fields_reads_with_defaults() -> None:
    state = loads(AgentState, '{"status":"running_model","turn_count":2}')
    assert state == AgentState(status=AgentStatus.RUNNING_MODEL, turn_count=2)
    assert state.accepts_turn_control is True


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        (float, 3, 3.0),
        (float, 0, 0.0),
        (float, -2, -2.0),
        (float, 2.5, 2.5),
        (float | None, 4, 4.0),
        (dict[str, float], {"a": 1, "b": 0.5}, {"a": 1.0, "b": 0.5}),
        (list[float], [1, 2.5], [1.0, 2.5]),
    ],
)
def test_float_accepts_json_integers(kind: object, data: object, expected: object) -> None:
    value = from_wire(kind, data)
    assert value == expected
    assert type(value) is type(expected)
    if isinstance(value, dict | list):
        items = value.values() if isinstance(value, dict) else value
        assert all(type(item) is float for item in items)


@pytest.mark.parametrize(
    ("kind", "data", "expected"),
    [
        (int | None, None, None),
        (int | None, 3, 3),
        (int | str, 3, 3),
        (int | str, "3", "3"),
        (Inner | None, None, None),
        (Inner | None, {"x": 1}, Inner(x=1)),
        (str | None, "", ""),
        (Literal["a", "b"], "b", "b"),
        (Any, {"k": [1]}, {"k": [1]}),
        (object, [1, "x"], [1, "x"]),
        (list, [1, "x", None], [1, "x", None]),
        (tuple, [1, "x"], (1, "x")),
        (dict, {"a": 1}, {"a": 1}),
        (tuple[int, ...], [], ()),
        (tuple[int, ...], [1, 2], (1, 2)),
        (list[Inner], [{"x": 1}], [Inner(x=1)]),
        (dict[str, Inner], {"k": {"x": 2}}, {"k": Inner(x=2)}),
        (Color, "red", Color.RED),
        (Level, 2, Level.HIGH),
        (ToolEffect, "unclassified", ToolEffect.UNCLASSIFIED),
        (bool, False, False),
        (type(None), None, None),
    ],
)
def test_from_wire_accepts(kind: object, data: object, expected: object) -> None:
    value = from_wire(kind, data)
    assert value == expected
    assert type(value) is type(expected)


def test_enum_values_come_back_as_the_enum_members() -> None:
    assert from_wire(ToolCallStatus, "succeeded") is ToolCallStatus.SUCCEEDED
    assert from_wire(MessageRole, "tool") is MessageRole.TOOL


# -- WireError messages --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        (int, "1", "expected int, got str"),
        (int, True, "expected int, got bool"),
        (int, 1.0, "expected int, got float"),
        (int, None, "expected int, got NoneType"),
        (float, True, "expected float, got bool"),
        (float, "1.5", "expected float, got str"),
        (str, 1, "expected str, got int"),
        (bool, 1, "expected bool, got int"),
        (int | None, "x", "expected int, got str"),
        (int | str, 1.5, "expected int, got float; expected str, got float"),
        (Literal["a", "b"], "c", "'c' is not one of ('a', 'b')"),
        (list[int], {"a": 1}, "expected a JSON array, got dict"),
        (tuple[int, ...], "12", "expected a JSON array, got str"),
        (list[int], [1, "2"], "expected int, got str"),
        (dict[str, int], [1], "expected a JSON object, got list"),
        (Inner, [1], "Inner: expected a JSON object, got list"),
        (Inner, {}, "Inner: missing field 'x'"),
        (Inner, {"x": "1"}, "Inner.x: expected int, got str"),
        (Color, "green", "'green' is not a Color"),
        (Level, "1", "'1' is not a Level"),
        (ToolEffect, "write", "'write' is not a ToolEffect"),
        (bytes, "abc", "unsupported wire type <class 'bytes'>"),
        (set[int], [1], "unsupported wire type set[int]"),
    ],
)
def test_from_wire_errors(kind: object, data: object, message: str) -> None:
    with pytest.raises(WireError) as caught:
        from_wire(kind, data)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{}", "Outer: missing field 'inner'"),
        ('{"inner":{}}', "Outer.inner: Inner: missing field 'x'"),
        ('{"inner":{"x":"1"}}', "Outer.inner: Inner.x: expected int, got str"),
        (
            '{"inner":{"x":1},"items":[{"x":null}]}',
            "Outer.items: Inner.x: expected int, got NoneType",
        ),
        ('{"inner":{"x":1},"color":"green"}', "Outer.color: 'green' is not a Color"),
        ('{"inner":{"x":1},"maybe":"7"}', "Outer.maybe: expected int, got str"),
        ('{"inner":{"x":1},"mode":"c"}', "Outer.mode: 'c' is not one of ('a', 'b')"),
        ('{"inner":{"x":1},"scores":{"a":"1"}}', "Outer.scores: expected float, got str"),
        ("[]", "Outer: expected a JSON object, got list"),
        ("null", "Outer: expected a JSON object, got NoneType"),
    ],
)
def test_loads_errors_name_the_path(text: str, message: str) -> None:
    with pytest.raises(WireError) as caught:
        loads(Outer, text)
    assert str(caught.value) == message


@pytest.mark.parametrize("text", ["", "{", "not json", '{"x": 1,}', "{'x': 1}"])
def test_loads_rejects_text_that_is_not_json(text: str) -> None:
    with pytest.raises(WireError, match=r"^Inner: not valid JSON: "):
        loads(Inner, text)


def test_wire_error_is_a_value_error_and_hides_the_cause() -> None:
    with pytest.raises(ValueError, match=r"Inner\.x") as caught:
        loads(Inner, '{"x":"1"}')
    assert isinstance(caught.value, WireError)
    assert caught.value.__suppress_context__


def test_float_field_with_an_integer_too_large_for_a_float_is_a_wire_error() -> None:
    text = '{"inner":{"x":1},"ratio":1' + "0" * 400 + "}"
    with pytest.raises(WireError):
        loads(Outer, text)
