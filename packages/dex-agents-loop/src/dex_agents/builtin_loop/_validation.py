"""Validation of decoded JSON against a JSON Schema, with the standard library only.

:func:`validate_json_value` checks decoded JSON against the subset of JSON Schema that
``compile_annotation`` (in ``_schema``) writes, plus a few common keywords of hand-written
schemas, and raises :class:`SchemaViolationError` with a reason a model can act on.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "SchemaViolationError",
    "is_json_valid",
    "json_equal",
    "validate_json_value",
]

Path = tuple[str | int, ...]
_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
    "array": "an array",
    "object": "an object",
}


class SchemaViolationError(ValueError):
    """Decoded JSON breaks a schema; ``str(error)`` is the reason, written for the model."""


def validate_json_value(value: object, schema: Mapping[str, Any]) -> None:
    """Check decoded JSON against a JSON Schema.

    Understood keywords: the ones :func:`compile_annotation` writes (``type``, ``enum``,
    ``properties``, ``required``, ``additionalProperties``, ``items``, ``prefixItems``,
    ``minItems``, ``maxItems``, ``anyOf``) plus ``const``, ``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``exclusiveMaximum`` and local ``$ref`` (``#/...``). Other keywords,
    such as ``pattern`` or ``oneOf``, are ignored.

    Args:
        value: The decoded JSON (``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``,
            ``None``; tuples count as arrays).
        schema: The schema.

    Raises:
        SchemaViolationError: With every violation found, joined by ``"; "``, such as
            ``'order_id' is required`` or ``'amount' must be an integer``.
    """
    errors = list(_errors(value, schema, schema, ()))
    if errors:
        raise SchemaViolationError("; ".join(dict.fromkeys(errors)))


def is_json_valid(value: object, schema: Mapping[str, Any]) -> bool:
    """Whether decoded JSON is valid against a schema (see :func:`validate_json_value`)."""
    return next(_errors(value, schema, schema, ()), None) is None


def _subject(path: Path) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return f"'{text}'" if text else "the value"


def _json_text(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return repr(value)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _matches_type(value: object, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return _is_number(value)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "object":
        return isinstance(value, Mapping)
    return True  # an unknown type name constrains nothing


def json_equal(left: object, right: object) -> bool:
    """Whether two decoded JSON values are equal as JSON (``1 == 1.0``, ``true != 1``)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) and _is_number(right):
        return left == right
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(
            json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return type(left) is type(right) and left == right


def _resolve_ref(root: object, ref: str) -> object:
    if not ref.startswith("#"):
        return True  # remote references are not followed
    target: object = root
    for raw in ref[1:].split("/")[1:] if ref != "#" else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, Mapping) and key in target:
            target = target[key]
        elif isinstance(target, list) and key.isdigit() and int(key) < len(target):
            target = target[int(key)]
        else:
            return True
    return target


def _types_of(schema: Mapping[str, Any]) -> list[str] | None:
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [item for item in kind if isinstance(item, str)]
    return None


def _describe(schema: object, root: object) -> str:
    if isinstance(schema, Mapping):
        if isinstance(schema.get("$ref"), str):
            return _describe(_resolve_ref(root, schema["$ref"]), root)
        if "const" in schema:
            return _json_text(schema["const"])
        if isinstance(schema.get("enum"), list):
            return "one of " + ", ".join(_json_text(item) for item in schema["enum"])
        branches = schema.get("anyOf")
        if isinstance(branches, list):
            return _join_or([_describe(branch, root) for branch in branches])
        kinds = _types_of(schema)
        if kinds:
            return _join_or([_TYPE_WORDS.get(kind, kind) for kind in kinds])
    return "a valid value"


def _join_or(words: Sequence[str]) -> str:
    unique = list(dict.fromkeys(words))
    if len(unique) == 1:
        return unique[0]
    return ", ".join(unique[:-1]) + " or " + unique[-1]


def _errors(value: object, schema: object, root: object, path: Path) -> Iterator[str]:
    if schema is False:
        yield f"{_subject(path)} is not allowed"
        return
    if not isinstance(schema, Mapping):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str):
        yield from _errors(value, _resolve_ref(root, ref), root, path)
    kinds = _types_of(schema)
    if kinds and not any(_matches_type(value, kind) for kind in kinds):
        yield f"{_subject(path)} must be {_join_or([_TYPE_WORDS.get(k, k) for k in kinds])}"
        return
    enum_values = schema.get("enum")
    if isinstance(enum_values, list) and not any(json_equal(value, item) for item in enum_values):
        yield f"{_subject(path)} must be {_describe({'enum': enum_values}, root)}"
        return
    if "const" in schema and not json_equal(value, schema["const"]):
        yield f"{_subject(path)} must be {_json_text(schema['const'])}"
        return
    yield from _any_of_errors(value, schema, root, path)
    if _is_number(value):
        yield from _number_errors(typing.cast("float", value), schema, path)
    elif isinstance(value, list | tuple):
        yield from _array_errors(value, schema, root, path)
    elif isinstance(value, Mapping):
        yield from _object_errors(value, schema, root, path)


def _branch_matches_type(value: object, branch: object, root: object) -> bool:
    if isinstance(branch, Mapping) and isinstance(branch.get("$ref"), str):
        branch = _resolve_ref(root, branch["$ref"])
    if not isinstance(branch, Mapping):
        return False
    kinds = _types_of(branch)
    return bool(kinds) and any(_matches_type(value, kind) for kind in kinds or ())


def _any_of_errors(
    value: object, schema: Mapping[str, Any], root: object, path: Path
) -> Iterator[str]:
    branches = schema.get("anyOf")
    if not isinstance(branches, list) or not branches:
        return
    results = [list(_errors(value, branch, root, path)) for branch in branches]
    if any(not errors for errors in results):
        return
    # One branch of the value's JSON type: its own errors are the precise reason.
    typed = [
        errors
        for branch, errors in zip(branches, results, strict=True)
        if _branch_matches_type(value, branch, root)
    ]
    if len(typed) == 1:
        yield from typed[0]
    else:
        yield f"{_subject(path)} must be {_describe({'anyOf': branches}, root)}"


def _number_errors(value: float, schema: Mapping[str, Any], path: Path) -> Iterator[str]:
    checks: tuple[tuple[str, Callable[[float, float], bool], str], ...] = (
        ("minimum", lambda v, bound: v >= bound, "at least"),
        ("maximum", lambda v, bound: v <= bound, "at most"),
        ("exclusiveMinimum", lambda v, bound: v > bound, "greater than"),
        ("exclusiveMaximum", lambda v, bound: v < bound, "less than"),
    )
    for keyword, passes, words in checks:
        bound = schema.get(keyword)
        if _is_number(bound) and not passes(value, typing.cast("float", bound)):
            yield f"{_subject(path)} must be {words} {_json_text(bound)}"


def _array_errors(
    value: Sequence[object], schema: Mapping[str, Any], root: object, path: Path
) -> Iterator[str]:
    fewest = schema.get("minItems")
    if isinstance(fewest, int) and len(value) < fewest:
        yield f"{_subject(path)} must have at least {fewest} items"
    most = schema.get("maxItems")
    if isinstance(most, int) and len(value) > most:
        yield f"{_subject(path)} must have at most {most} items"
    prefix = schema.get("prefixItems")
    prefix_items = prefix if isinstance(prefix, list) else []
    for index, (element, item_schema) in enumerate(zip(value, prefix_items, strict=False)):
        yield from _errors(element, item_schema, root, (*path, index))
    items = schema.get("items")
    if isinstance(items, Mapping | bool):
        for index in range(len(prefix_items), len(value)):
            yield from _errors(value[index], items, root, (*path, index))


def _object_errors(
    value: Mapping[Any, object], schema: Mapping[str, Any], root: object, path: Path
) -> Iterator[str]:
    required = schema.get("required")
    for name in required if isinstance(required, list) else ():
        if name not in value:
            yield f"{_subject((*path, name))} is required"
    raw_properties = schema.get("properties")
    properties: Mapping[str, Any] = raw_properties if isinstance(raw_properties, Mapping) else {}
    additional = schema.get("additionalProperties", True)
    for name, element in value.items():
        if name in properties:
            yield from _errors(element, properties[name], root, (*path, str(name)))
        elif additional is False:
            yield f"{_subject((*path, str(name)))} is not allowed"
        elif isinstance(additional, Mapping):
            yield from _errors(element, additional, root, (*path, str(name)))
