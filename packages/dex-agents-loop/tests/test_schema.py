"""JSON Schema from type hints, the validator, value conversion and JSON results (pure)."""

from __future__ import annotations

import collections.abc
import dataclasses
import datetime
import enum
import typing
from typing import Annotated, Any, Literal, NewType, NotRequired, Required, TypedDict

import pytest

from dex_agents.builtin_loop._schema import (
    UnsupportedAnnotationError,
    compile_annotation,
    json_default,
    split_docstring_section,
    to_json_compatible,
)
from dex_agents.builtin_loop._validation import (
    SchemaViolationError,
    is_json_valid,
    validate_json_value,
)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Status(enum.StrEnum):
    OPEN = "open"
    CLOSED = "closed"


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int = 0


@dataclasses.dataclass
class Line:
    """A line between two points.

    Attributes:
        start: Where it starts.
        end: Where it ends.
    """

    start: Point
    end: Point
    tags: list[str] = dataclasses.field(default_factory=list)
    color: Color = Color.RED
    length: float = dataclasses.field(default=0.0, init=False)


class Address(TypedDict):
    street: str
    number: NotRequired[int]


class PartialAddress(TypedDict, total=False):
    street: Required[str]
    city: str


# The functional syntax keeps real objects, not strings, in the annotations.
Functional = TypedDict("Functional", {"a": int, "b": NotRequired[str]})  # noqa: UP013
Loose = TypedDict("Loose", {"a": Required[int], "b": str}, total=False)  # noqa: UP013


@dataclasses.dataclass
class Node:
    children: list[Node]


@dataclasses.dataclass
class HasDate:
    when: datetime.date


class Plain:
    pass


UserId = NewType("UserId", str)

OBJECT_OF_POINT = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
    "required": ["x"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (object, {}),
        (UserId, {"type": "string"}),
        (list, {"type": "array"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (typing.List[str], {"type": "array", "items": {"type": "string"}}),  # noqa: UP006
        (collections.abc.Sequence[str], {"type": "array", "items": {"type": "string"}}),
        (typing.Sequence[bool], {"type": "array", "items": {"type": "boolean"}}),
        (tuple, {"type": "array"}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[str, int],
            {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict, {"type": "object"}),
        (dict[str, Any], {"type": "object"}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (
            collections.abc.Mapping[str, float],
            {"type": "object", "additionalProperties": {"type": "number"}},
        ),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Literal["a", 1, None], {"type": ["string", "integer", "null"], "enum": ["a", 1, None]}),
        (Literal[Color.RED], {"type": "string", "enum": ["red"]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Priority, {"type": "integer", "enum": [1, 2]}),
        (Status, {"type": "string", "enum": ["open", "closed"]}),
        (int | None, {"type": ["integer", "null"]}),
        (typing.Optional[str], {"type": ["string", "null"]}),  # noqa: UP045
        (typing.Union[int, str], {"type": ["integer", "string"]}),  # noqa: UP007
        (
            int | list[int],
            {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
        ),
        (Literal["a"] | None, {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}),
        (Point | None, {"anyOf": [OBJECT_OF_POINT, {"type": "null"}]}),
        (Point, OBJECT_OF_POINT),
        (Annotated[str, "The order ID"], {"type": "string", "description": "The order ID"}),
        (Annotated[int, 42, "A count"], {"type": "integer", "description": "A count"}),
        (Annotated[int, 42], {"type": "integer"}),
        (
            Address,
            {
                "type": "object",
                "properties": {"street": {"type": "string"}, "number": {"type": "integer"}},
                "required": ["street"],
                "additionalProperties": False,
            },
        ),
        (
            PartialAddress,
            {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                "required": ["street"],
                "additionalProperties": False,
            },
        ),
        (
            Functional,
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "required": ["a"],
                "additionalProperties": False,
            },
        ),
        (
            Loose,
            {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "required": ["a"],
                "additionalProperties": False,
            },
        ),
    ],
)
def test_schema_of_each_supported_annotation(annotation: object, schema: dict[str, Any]) -> None:
    assert compile_annotation(annotation).schema == schema


def test_dataclass_schema_has_descriptions_defaults_and_only_init_fields() -> None:
    assert compile_annotation(Line).schema == {
        "type": "object",
        "properties": {
            "start": {**OBJECT_OF_POINT, "description": "Where it starts."},
            "end": {**OBJECT_OF_POINT, "description": "Where it ends."},
            "tags": {"type": "array", "items": {"type": "string"}},
            "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
        },
        "required": ["start", "end"],
        "additionalProperties": False,
        "description": "A line between two points.",
    }


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (Plain, "Plain is not supported"),
        (datetime.datetime, "datetime is not supported"),
        (set[int], "is not supported"),
        (dict[int, str], "dict keys of type int are not supported"),
        (list[Plain], "Plain is not supported"),
        (Node, "field 'children' of Node: Node is recursive"),
        (HasDate, "field 'when' of HasDate: date is not supported"),
        (Literal[1.5j], "only str, int, float, bool and None values"),
        (typing.TypeVar("T"), "is not supported"),
    ],
)
def test_unsupported_annotations_raise_type_error(annotation: object, message: str) -> None:
    with pytest.raises(UnsupportedAnnotationError, match=message) as caught:
        compile_annotation(annotation)
    assert isinstance(caught.value, TypeError)


def test_enum_without_members_is_unsupported() -> None:
    class Empty(enum.Enum):
        pass

    with pytest.raises(TypeError, match="has no values"):
        compile_annotation(Empty)


def test_enum_with_non_json_values_is_unsupported() -> None:
    class Shape(enum.Enum):
        SQUARE = (1, 1)

    with pytest.raises(TypeError, match=r"has the value \(1, 1\)"):
        compile_annotation(Shape)


# --- Conversion -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (int, 3.0, 3),
        (float, 3, 3.0),
        (str, "x", "x"),
        (Any, {"a": [1]}, {"a": [1]}),
        (Color, "green", Color.GREEN),
        (Priority, 2, Priority.HIGH),
        (Literal["a", "b"], "b", "b"),
        (Literal[Color.RED], "red", Color.RED),
        (list[Color], ["red", "green"], [Color.RED, Color.GREEN]),
        (tuple[int, ...], [1, 2], (1, 2)),
        (tuple[str, Color], ["a", "red"], ("a", Color.RED)),
        (tuple, [1, "a"], (1, "a")),
        (dict[str, Color], {"k": "red"}, {"k": Color.RED}),
        (Point, {"x": 1}, Point(x=1)),
        (Point | None, None, None),
        (Point | None, {"x": 1, "y": 2}, Point(x=1, y=2)),
        (int | str, "5", "5"),
        (int | float, 1.5, 1.5),
        (Color | None, "red", Color.RED),
        (Address, {"street": "Main"}, {"street": "Main"}),
        (Annotated[Color, "A color"], "red", Color.RED),
        (list[Point], [{"x": 1}, {"x": 2, "y": 3}], [Point(1), Point(2, 3)]),
    ],
)
def test_conversion_to_annotated_types(annotation: object, value: object, expected: object) -> None:
    converted = compile_annotation(annotation).convert(value)
    assert converted == expected
    assert type(converted) is type(expected)


def test_nested_dataclass_conversion() -> None:
    line = compile_annotation(Line).convert(
        {"start": {"x": 1}, "end": {"x": 2, "y": 2}, "color": "green", "tags": ["a"]}
    )
    assert line == Line(start=Point(1), end=Point(2, 2), tags=["a"], color=Color.GREEN)
    assert isinstance(line.start, Point)


def test_typeddict_stays_a_dict_with_converted_values() -> None:
    class Paint(TypedDict):
        color: Color

    converted = compile_annotation(Paint).convert({"color": "red"})
    assert converted == {"color": Color.RED}
    assert type(converted) is dict


# --- Validation -------------------------------------------------------------------------------


def _reason(value: object, schema: dict[str, Any]) -> str:
    with pytest.raises(SchemaViolationError) as caught:
        validate_json_value(value, schema)
    return str(caught.value)


def _arguments_schema(**properties: object) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({}, "'order_id' is required"),
        ({"order_id": 5}, "'order_id' must be a string"),
        ({"order_id": None}, "'order_id' must be a string"),
    ],
)
def test_string_and_required_reasons(value: object, reason: str) -> None:
    assert _reason(value, _arguments_schema(order_id={"type": "string"})) == reason


@pytest.mark.parametrize(
    ("schema", "value", "reason"),
    [
        ({"type": "integer"}, 1.5, "'amount' must be an integer"),
        ({"type": "integer"}, "1", "'amount' must be an integer"),
        ({"type": "integer"}, True, "'amount' must be an integer"),
        ({"type": "number"}, "1", "'amount' must be a number"),
        ({"type": "number"}, False, "'amount' must be a number"),
        ({"type": "boolean"}, 1, "'amount' must be a boolean"),
        ({"type": "null"}, 0, "'amount' must be null"),
        ({"type": "array"}, {}, "'amount' must be an array"),
        ({"type": "object"}, [], "'amount' must be an object"),
        ({"type": ["integer", "null"]}, "x", "'amount' must be an integer or null"),
        (
            {"type": ["string", "integer", "null"]},
            [],
            "'amount' must be a string, an integer or null",
        ),
        ({"enum": ["a", "b"]}, "c", '\'amount\' must be one of "a", "b"'),
        ({"enum": [1]}, True, "'amount' must be one of 1"),
        ({"const": "x"}, "y", "'amount' must be \"x\""),
        ({"minimum": 1}, 0, "'amount' must be at least 1"),
        ({"maximum": 10}, 11, "'amount' must be at most 10"),
        ({"exclusiveMinimum": 0}, 0, "'amount' must be greater than 0"),
        ({"exclusiveMaximum": 1.5}, 1.5, "'amount' must be less than 1.5"),
        ({"type": "array", "minItems": 2}, [1], "'amount' must have at least 2 items"),
        ({"type": "array", "maxItems": 1}, [1, 2], "'amount' must have at most 1 items"),
        (
            {"type": "array", "items": {"type": "integer"}},
            [1, "x", 3, None],
            "'amount[1]' must be an integer; 'amount[3]' must be an integer",
        ),
        (
            {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "integer"}}]},
            "x",
            "'amount' must be an integer or an array",
        ),
        (
            {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
            "b",
            "'amount' must be one of \"a\"",
        ),
        (
            {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]},
            3,
            "'amount' must be one of \"a\" or null",
        ),
        (False, 1, "'amount' is not allowed"),
    ],
)
def test_type_enum_and_bound_reasons(schema: object, value: object, reason: str) -> None:
    assert _reason({"amount": value}, _arguments_schema(amount=schema)) == reason


def test_integer_accepts_integral_floats_and_number_accepts_ints() -> None:
    assert is_json_valid(
        {"a": 2.0, "b": 3}, _arguments_schema(a={"type": "integer"}, b={"type": "number"})
    )


def test_unexpected_property_and_nested_paths() -> None:
    schema = _arguments_schema(
        order=compile_annotation(Line).schema, counts=compile_annotation(dict[str, int]).schema
    )
    value = {
        "order": {"start": {"x": "1"}, "end": {"y": 2}, "tags": [1], "extra": True},
        "counts": {"a": 1, "b": "two"},
        "surprise": 1,
    }
    assert _reason(value, schema) == (
        "'order.start.x' must be an integer; 'order.end.x' is required; "
        "'order.tags[0]' must be a string; 'order.extra' is not allowed; "
        "'counts.b' must be an integer; 'surprise' is not allowed"
    )


def test_any_of_reports_the_branch_of_the_values_type() -> None:
    schema = _arguments_schema(point=compile_annotation(Point | None).schema)
    assert _reason({"point": {"y": 1}}, schema) == "'point.x' is required"
    assert _reason({"point": "here"}, schema) == "'point' must be an object or null"


def test_local_refs_are_followed() -> None:
    schema = {
        "type": "object",
        "$defs": {"Item": {"type": "object", "required": ["sku"]}},
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
    }
    assert _reason({"items": [{}]}, schema) == "'items[0].sku' is required"
    assert is_json_valid({"items": [{"sku": 1}]}, schema)
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/x"}}}
    assert is_json_valid({"a": 1}, remote)


def test_unknown_keywords_are_ignored() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "pattern": "^x", "minLength": 5}},
        "x-vendor": True,
        "oneOf": [{}],
    }
    assert is_json_valid({"name": "abc"}, schema)


def test_root_subject_and_enum_equality_keeps_bools_apart() -> None:
    assert _reason(1, {"type": "string"}) == "the value must be a string"
    assert is_json_valid(1.0, {"enum": [1]})
    assert not is_json_valid(1, {"enum": [True]})
    assert is_json_valid([1, {"a": None}], {"const": [1.0, {"a": None}]})
    assert not is_json_valid([1], {"const": [1, 2]})


# --- Results and defaults -----------------------------------------------------------------------


def test_to_json_compatible_converts_dataclasses_enums_and_collections() -> None:
    value = {
        "line": Line(start=Point(1), end=Point(2), tags=["t"]),
        "status": Status.OPEN,
        "pair": (1, Priority.HIGH),
        "set": {3, 1, 2},
        Color.GREEN: None,
        1: 1.5,
    }
    assert to_json_compatible(value) == {
        "line": {
            "start": {"x": 1, "y": 0},
            "end": {"x": 2, "y": 0},
            "tags": ["t"],
            "color": "red",
            "length": 0.0,
        },
        "status": "open",
        "pair": [1, 2],
        "set": [1, 2, 3],
        "green": None,
        1: 1.5,
    }
    assert type(to_json_compatible(Status.OPEN)) is str


def test_to_json_compatible_refuses_other_objects() -> None:
    with pytest.raises(TypeError, match="Object of type Plain is not JSON serializable"):
        to_json_compatible({"a": [Plain()]})
    with pytest.raises(TypeError, match="keys must be"):
        to_json_compatible({(1, 2): "x"})


def test_unsortable_sets_keep_their_items() -> None:
    result = to_json_compatible({1, "a"})
    assert isinstance(result, list)
    assert sorted(result, key=str) == [1, "a"]


def test_json_default() -> None:
    assert json_default(Color.RED) == (True, "red")
    assert json_default(Plain()) == (False, None)


# --- Docstrings ----------------------------------------------------------------------------------


def test_split_docstring_section() -> None:
    doc = (
        "Refund part of an order.\n"
        "\n"
        "Args:\n"
        "    order_id: The order.\n"
        "    amount_cents (int): How much,\n"
        "        in cents.\n"
        "    **extra: Ignored.\n"
        "\n"
        "Returns:\n"
        "    The refund id."
    )
    text, entries = split_docstring_section(doc, ("Args",))
    assert text == "Refund part of an order.\n\nReturns:\n    The refund id."
    assert entries == {
        "order_id": "The order.",
        "amount_cents": "How much, in cents.",
        "extra": "Ignored.",
    }


def test_split_docstring_section_without_the_section() -> None:
    assert split_docstring_section("Just text.\n\nMore.", ("Args",)) == ("Just text.\n\nMore.", {})
