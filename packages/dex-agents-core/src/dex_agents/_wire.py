"""JSON codec for the session's persisted and exchanged values.

Every value the session stores in Dex or passes through an RPC is a frozen dataclass whose
field names are the wire names. :func:`dumps` writes compact JSON text; :func:`loads` reads
it back into the dataclass, taking each missing field's default (so a field added later reads
old values without a migration) and ignoring unknown fields (so an older Worker reads newer
values).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from enum import Enum
from functools import cache
from typing import Any, TypeVar, get_args, get_origin

__all__ = ["WireError", "dumps", "from_wire", "loads", "to_wire"]

T = TypeVar("T")


class WireError(ValueError):
    """A stored or received value does not match its type."""


def to_wire(value: object) -> Any:  # noqa: ANN401 - JSON data is dynamically typed
    """Convert a value to JSON data: dataclasses by field name, enums by value."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: to_wire(getattr(value, field.name)) for field in _fields(type(value))}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(key): to_wire(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_wire(item) for item in value]
    return value


def dumps(value: object) -> str:
    """Compact JSON text of a value (UTF-8, non-ASCII unescaped)."""
    return json.dumps(to_wire(value), ensure_ascii=False, separators=(",", ":"))


def loads(kind: type[T], text: str) -> T:
    """Read JSON text as ``kind``.

    Raises:
        WireError: The text is not JSON or does not match ``kind``.
    """
    try:
        data = json.loads(text)
    except (TypeError, ValueError) as error:
        raise WireError(f"{kind.__name__}: not valid JSON: {error}") from None
    value: T = from_wire(kind, data)
    return value


@cache
def _fields(kind: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(kind)


@cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind)


def from_wire(kind: Any, data: Any) -> Any:  # noqa: ANN401
    """Convert JSON data to a value of the type hint ``kind``."""
    if kind is Any or kind is object:
        return data
    origin = get_origin(kind)
    if origin is typing.Union or origin is types.UnionType:
        options = get_args(kind)
        if data is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return from_wire(option, data)
            except WireError as error:
                errors.append(str(error))
        raise WireError("; ".join(errors) or f"no type matches {data!r}")
    if origin is typing.Literal:
        if data not in get_args(kind):
            raise WireError(f"{data!r} is not one of {get_args(kind)}")
        return data
    if origin in (list, tuple) or kind in (list, tuple):
        if not isinstance(data, list):
            raise WireError(f"expected a JSON array, got {type(data).__name__}")
        arguments = get_args(kind)
        item = arguments[0] if arguments else Any
        items = [from_wire(item, entry) for entry in data]
        return tuple(items) if (origin or kind) is tuple else items
    if origin is dict or kind is dict:
        if not isinstance(data, dict):
            raise WireError(f"expected a JSON object, got {type(data).__name__}")
        arguments = get_args(kind)
        value_kind = arguments[1] if arguments else Any
        return {str(key): from_wire(value_kind, entry) for key, entry in data.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        if not isinstance(data, dict):
            raise WireError(f"{kind.__name__}: expected a JSON object, got {type(data).__name__}")
        hints = _hints(kind)
        values = {}
        for field in _fields(kind):
            if field.name in data:
                try:
                    values[field.name] = from_wire(hints[field.name], data[field.name])
                except WireError as error:
                    raise WireError(f"{kind.__name__}.{field.name}: {error}") from None
            elif (
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING
            ):
                raise WireError(f"{kind.__name__}: missing field {field.name!r}")
        return kind(**values)
    if isinstance(kind, type) and issubclass(kind, Enum):
        try:
            return kind(data)
        except ValueError:
            raise WireError(f"{data!r} is not a {kind.__name__}") from None
    if kind is float and isinstance(data, int) and not isinstance(data, bool):
        try:
            return float(data)
        except OverflowError:
            raise WireError(f"{data} is too large for a float") from None
    if kind in (str, int, float, bool, type(None)):
        if type(data) is not kind:
            raise WireError(f"expected {kind.__name__}, got {type(data).__name__}")
        return data
    raise WireError(f"unsupported wire type {kind!r}")
