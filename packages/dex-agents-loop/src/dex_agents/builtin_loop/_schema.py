"""JSON Schema for function tools from type hints, with the standard library only.

Two jobs, each a function:

- :func:`compile_annotation` turns a type annotation into a :class:`CompiledType`: the JSON
  Schema a model reads, and a converter from decoded JSON to the annotated Python value.
- :func:`to_json_compatible` turns a tool's result into values ``json.dumps`` accepts.

:func:`split_docstring_section` reads the ``Args:`` / ``Attributes:`` entries of a
Google-style docstring, so parameters and fields get their descriptions. Checking decoded
JSON against a schema is the job of ``_validation``.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from dex_agents.builtin_loop._validation import is_json_valid, json_equal

__all__ = [
    "CompiledType",
    "UnsupportedAnnotationError",
    "compile_annotation",
    "json_default",
    "split_docstring_section",
    "to_json_compatible",
]

JsonSchema = dict[str, Any]
Converter = Callable[[Any], object]

_SUPPORTED_TYPES = (
    "use str, int, float, bool, None, list, tuple, dict, Literal, an Enum, a union, "
    "a dataclass, a TypedDict, or Annotated[T, 'description']"
)
_SEQUENCE_TYPES: tuple[object, ...] = (list, Sequence, MutableSequence)
_MAPPING_TYPES: tuple[object, ...] = (dict, Mapping, MutableMapping)
_KEY_WRAPPERS: tuple[object, ...] = tuple(
    wrapper
    for wrapper in (
        typing.Required,
        typing.NotRequired,
        getattr(typing, "ReadOnly", None),
    )
    if wrapper is not None
)


class UnsupportedAnnotationError(TypeError):
    """A type annotation has no JSON Schema here (raised when a tool is defined)."""


@dataclass(frozen=True)
class CompiledType:
    """A type annotation, compiled once.

    Attributes:
        schema: The JSON Schema of the annotation.
        convert: Turns decoded JSON that is valid against ``schema`` into the annotated
            Python value (dataclass instances, Enum members, tuples, ...).
    """

    schema: JsonSchema
    convert: Converter


def _identity(value: object) -> object:
    return value


def _type_name(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation)


def compile_annotation(annotation: object) -> CompiledType:
    """Compile a type annotation into its JSON Schema and a converter.

    Args:
        annotation: A resolved annotation (from ``typing.get_type_hints(include_extras=True)``).

    Returns:
        The schema and converter.

    Raises:
        UnsupportedAnnotationError: The annotation, or one nested in it, has no JSON Schema,
            such as a class that is neither a dataclass, a TypedDict, nor an Enum.
    """
    return _compile(annotation, ())


def _compile(annotation: object, stack: tuple[type, ...]) -> CompiledType:
    if annotation is Any or annotation is object:
        return CompiledType({}, _identity)
    if annotation is None or annotation is type(None):
        return CompiledType({"type": "null"}, _identity)
    if isinstance(annotation, typing.NewType):
        return _compile(annotation.__supertype__, stack)
    origin = get_origin(annotation)
    if origin is typing.Annotated:
        return _compile_annotated(annotation, stack)
    if origin in _KEY_WRAPPERS:
        return _compile(get_args(annotation)[0], stack)
    if origin is Literal:
        return _compile_literal(get_args(annotation))
    if origin is Union or origin is types.UnionType:
        return _compile_union(get_args(annotation), stack)
    scalar = _compile_scalar(annotation)
    if scalar is not None:
        return scalar
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _compile_enum(annotation)
    container = origin if origin is not None else annotation
    if container in _SEQUENCE_TYPES:
        return _compile_sequence(get_args(annotation), stack)
    if container is tuple:
        return _compile_tuple(annotation, stack)
    if container in _MAPPING_TYPES:
        return _compile_mapping(get_args(annotation), stack)
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return _compile_dataclass(annotation, stack)
    if _is_typeddict(annotation):
        return _compile_typeddict(typing.cast("type", annotation), stack)
    raise UnsupportedAnnotationError(
        f"{_type_name(annotation)} is not supported: {_SUPPORTED_TYPES}"
    )


def _compile_annotated(annotation: object, stack: tuple[type, ...]) -> CompiledType:
    base, *metadata = get_args(annotation)
    compiled = _compile(base, stack)
    description = next((item for item in metadata if isinstance(item, str) and item), None)
    if description is None:
        return compiled
    return CompiledType({**compiled.schema, "description": description}, compiled.convert)


def _to_int(value: object) -> object:
    return int(value) if isinstance(value, float) else value


def _to_float(value: object) -> object:
    return float(value) if isinstance(value, int) and not isinstance(value, bool) else value


def _compile_scalar(annotation: object) -> CompiledType | None:
    if annotation is str:
        return CompiledType({"type": "string"}, _identity)
    if annotation is bool:
        return CompiledType({"type": "boolean"}, _identity)
    if annotation is int:
        return CompiledType({"type": "integer"}, _to_int)
    if annotation is float:
        return CompiledType({"type": "number"}, _to_float)
    return None


def _json_scalar_type(value: object) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _enum_schema(values: Sequence[object], owner: str) -> JsonSchema:
    if not values:
        raise UnsupportedAnnotationError(f"{owner} has no values")
    kinds: list[str] = []
    for value in values:
        kind = _json_scalar_type(value)
        if kind is None:
            raise UnsupportedAnnotationError(
                f"{owner} has the value {value!r}; only str, int, float, bool and None values "
                "are supported"
            )
        if kind not in kinds:
            kinds.append(kind)
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": list(values)}


def _compile_literal(options: tuple[object, ...]) -> CompiledType:
    values = [option.value if isinstance(option, enum.Enum) else option for option in options]
    schema = _enum_schema(values, f"Literal{list(options)!r}")

    def convert(value: object) -> object:
        for option, json_value in zip(options, values, strict=True):
            if json_equal(value, json_value):
                return option
        return value

    return CompiledType(schema, convert)


def _compile_enum(enum_type: type[enum.Enum]) -> CompiledType:
    members = list(enum_type)
    schema = _enum_schema([member.value for member in members], enum_type.__qualname__)

    def convert(value: object) -> object:
        for member in members:
            if json_equal(value, member.value):
                return member
        return value

    return CompiledType(schema, convert)


def _compile_union(members: tuple[object, ...], stack: tuple[type, ...]) -> CompiledType:
    compiled = [_compile(member, stack) for member in members]
    simple_types = [
        part.schema["type"]
        for part in compiled
        if set(part.schema) == {"type"} and isinstance(part.schema["type"], str)
    ]
    schema: JsonSchema
    if len(simple_types) == len(compiled):
        schema = {"type": list(dict.fromkeys(simple_types))}
    else:
        schema = {"anyOf": [part.schema for part in compiled]}

    def convert(value: object) -> object:
        for part in compiled:
            if is_json_valid(value, part.schema):
                return part.convert(value)
        return value

    return CompiledType(schema, convert)


def _compile_sequence(args: tuple[object, ...], stack: tuple[type, ...]) -> CompiledType:
    if not args:
        return CompiledType({"type": "array"}, list)
    item = _compile(args[0], stack)
    return CompiledType(
        {"type": "array", "items": item.schema},
        lambda value: [item.convert(element) for element in value],
    )


def _compile_tuple(annotation: object, stack: tuple[type, ...]) -> CompiledType:
    args = get_args(annotation)
    if annotation is tuple or annotation is typing.Tuple:  # noqa: UP006 - the bare alias
        return CompiledType({"type": "array"}, tuple)
    if len(args) == 2 and args[1] is Ellipsis:  # noqa: PLR2004 - tuple[T, ...]
        item = _compile(args[0], stack)
        return CompiledType(
            {"type": "array", "items": item.schema},
            lambda value: tuple(item.convert(element) for element in value),
        )
    items = [_compile(arg, stack) for arg in args]
    schema: JsonSchema = {
        "type": "array",
        "prefixItems": [item.schema for item in items],
        "minItems": len(items),
        "maxItems": len(items),
    }
    return CompiledType(
        schema,
        lambda value: tuple(
            item.convert(element) for item, element in zip(items, value, strict=True)
        ),
    )


def _compile_mapping(args: tuple[object, ...], stack: tuple[type, ...]) -> CompiledType:
    if not args:
        return CompiledType({"type": "object"}, dict)
    key, value_type = args
    if key is not str and key is not Any:
        raise UnsupportedAnnotationError(
            f"dict keys of type {_type_name(key)} are not supported: JSON object keys are str"
        )
    item = _compile(value_type, stack)
    schema: JsonSchema = {"type": "object"}
    if item.schema:
        schema["additionalProperties"] = item.schema
    return CompiledType(
        schema, lambda value: {name: item.convert(element) for name, element in value.items()}
    )


def _is_typeddict(annotation: object) -> bool:
    if typing.is_typeddict(annotation):
        return True
    # typing_extensions.TypedDict on older Pythons: a dict subclass with the key sets.
    return (
        isinstance(annotation, type)
        and issubclass(annotation, dict)
        and hasattr(annotation, "__required_keys__")
        and hasattr(annotation, "__annotations__")
    )


def _class_hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError) as error:
        raise UnsupportedAnnotationError(
            f"cannot resolve the type hints of {cls.__qualname__}: {error}"
        ) from error


def _class_description(cls: type) -> tuple[str, dict[str, str]]:
    doc = cls.__doc__
    # A dataclass without a docstring gets "Name(field: type, ...)" from dataclasses.
    if not doc or doc.startswith(f"{cls.__name__}("):
        return "", {}
    return split_docstring_section(inspect.cleandoc(doc), ("Attributes",))


def _object_schema(
    cls: type,
    fields: Mapping[str, CompiledType],
    required: Sequence[str],
    defaults: Mapping[str, object],
) -> JsonSchema:
    description, field_docs = _class_description(cls)
    properties: JsonSchema = {}
    for name, compiled in fields.items():
        prop = dict(compiled.schema)
        if name in field_docs and "description" not in prop:
            prop["description"] = field_docs[name]
        if name in defaults:
            prop["default"] = defaults[name]
        properties[name] = prop
    schema: JsonSchema = {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def _compile_fields(
    cls: type, names: Sequence[str], stack: tuple[type, ...]
) -> dict[str, CompiledType]:
    if cls in stack:
        raise UnsupportedAnnotationError(f"{cls.__qualname__} is recursive, which is not supported")
    hints = _class_hints(cls)
    compiled: dict[str, CompiledType] = {}
    for name in names:
        try:
            compiled[name] = _compile(hints.get(name, Any), (*stack, cls))
        except UnsupportedAnnotationError as error:
            raise UnsupportedAnnotationError(
                f"field {name!r} of {cls.__qualname__}: {error}"
            ) from None
    return compiled


def json_default(value: object) -> tuple[bool, object]:
    """``(True, json_value)`` when a default can be shown in a schema, else ``(False, None)``."""
    try:
        return True, to_json_compatible(value)
    except (TypeError, ValueError, RecursionError):
        return False, None


def _compile_dataclass(cls: type, stack: tuple[type, ...]) -> CompiledType:
    init_fields = [field for field in dataclasses.fields(cls) if field.init]
    compiled = _compile_fields(cls, [field.name for field in init_fields], stack)
    required: list[str] = []
    defaults: dict[str, object] = {}
    for field in init_fields:
        if field.default is not dataclasses.MISSING:
            shown, value = json_default(field.default)
            if shown:
                defaults[field.name] = value
        elif field.default_factory is dataclasses.MISSING:
            required.append(field.name)

    def convert(value: Mapping[str, object]) -> object:
        return cls(
            **{
                name: compiled[name].convert(item)
                for name, item in value.items()
                if name in compiled
            }
        )

    return CompiledType(_object_schema(cls, compiled, required, defaults), convert)


def _is_required_key(cls: type, name: str, hint: object) -> bool:
    # Python 3.11 misses Required/NotRequired written as strings (``from __future__ import
    # annotations``) in __required_keys__, so the resolved hint decides first.
    if get_origin(hint) is typing.Annotated:
        hint = get_args(hint)[0]
    if get_origin(hint) is typing.Required:
        return True
    if get_origin(hint) is typing.NotRequired:
        return False
    return name in getattr(cls, "__required_keys__", frozenset({name}))


def _compile_typeddict(cls: type, stack: tuple[type, ...]) -> CompiledType:
    hints = _class_hints(cls)
    names = list(hints)
    compiled = _compile_fields(cls, names, stack)
    required = [name for name in names if _is_required_key(cls, name, hints[name])]

    def convert(value: Mapping[str, object]) -> object:
        return {
            name: compiled[name].convert(item) if name in compiled else item
            for name, item in value.items()
        }

    return CompiledType(_object_schema(cls, compiled, required, {}), convert)


# --- Results ----------------------------------------------------------------------------------


def to_json_compatible(value: object) -> object:
    """Turn a value into plain JSON values: dataclasses, Enums, tuples and sets included.

    Args:
        value: A tool's result.

    Returns:
        Values ``json.dumps`` accepts: dataclass instances become objects of their fields,
        Enum members their values, tuples lists, sets sorted lists when their items sort.

    Raises:
        TypeError: A value, or a dictionary key, has no JSON form.
    """
    if isinstance(value, enum.Enum):
        return to_json_compatible(value.value)
    if value is None or isinstance(value, str | int | float):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: to_json_compatible(getattr(value, field.name))
            for field in dataclasses.fields(value)
        }
    if isinstance(value, Mapping):
        return {_json_key(key): to_json_compatible(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_json_compatible(item) for item in value]
    if isinstance(value, set | frozenset):
        items = [to_json_compatible(item) for item in value]
        try:
            return sorted(items)  # type: ignore[type-var]
        except TypeError:
            return items
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _json_key(key: object) -> object:
    if isinstance(key, enum.Enum):
        key = key.value
    if key is None or isinstance(key, str | int | float):
        return key
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


# --- Docstrings -------------------------------------------------------------------------------

_SECTION_HEADER = re.compile(r"^(\s*)([A-Za-z][A-Za-z ]*):\s*$")
_ENTRY = re.compile(r"^\**(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def split_docstring_section(doc: str, names: Sequence[str]) -> tuple[str, dict[str, str]]:
    """Take one Google-style section (``Args:``, ``Attributes:``, ...) out of a docstring.

    Args:
        doc: A cleaned docstring (``inspect.cleandoc``).
        names: Header names of the section, such as ``("Args", "Arguments")``.

    Returns:
        The docstring without that section, and its entries: name to description, with
        continuation lines joined by spaces.
    """
    wanted = {name.lower() for name in names}
    kept: list[str] = []
    entries: dict[str, str] = {}
    lines = doc.splitlines()
    index = 0
    while index < len(lines):
        header = _SECTION_HEADER.match(lines[index])
        if header is None or header.group(2).strip().lower() not in wanted:
            kept.append(lines[index])
            index += 1
            continue
        indent = len(header.group(1))
        index += 1
        current: str | None = None
        entry_indent: int | None = None
        while index < len(lines):
            line = lines[index]
            stripped = line.strip()
            depth = len(line) - len(line.lstrip())
            if stripped and depth <= indent:
                break
            index += 1
            if not stripped:
                continue
            if entry_indent is None:
                entry_indent = depth
            entry = _ENTRY.match(stripped) if depth <= entry_indent else None
            if entry is not None:
                current = entry.group(1)
                entries[current] = entry.group(2).strip()
            elif current is not None:
                entries[current] = f"{entries[current]} {stripped}".strip()
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return text, entries
