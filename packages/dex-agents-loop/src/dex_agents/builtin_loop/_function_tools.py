"""Function tools: ``@function_tool`` turns a plain sync or async function into a tool.

The tool's JSON Schema comes from the function's type hints (see ``_schema``), its
description from the docstring. :meth:`FunctionTool.invoke` runs one call: it decodes the
model's arguments, applies ``prepare_arguments``, checks the schema, converts the values to
the annotated types, calls the function (a sync one in a worker thread), and turns the
result into the text the model reads.

Errors the model should see are :class:`~dex_agents.ToolExecutionError`: arguments that are
not JSON, that break the schema, or that ``prepare_arguments`` refuses. Anything else the
function raises propagates unchanged, so the session's effect rules decide what it means.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from dex_agents import (
    AgentEventWriter,
    ToolEffect,
    ToolExecutionError,
    ToolInputRequested,
    ToolPolicy,
)
from dex_agents import idempotency_key as _idempotency_key
from dex_agents.builtin_loop._schema import (
    CompiledType,
    UnsupportedAnnotationError,
    compile_annotation,
    json_default,
    split_docstring_section,
    to_json_compatible,
)
from dex_agents.builtin_loop._validation import SchemaViolationError, validate_json_value

__all__ = [
    "FunctionTool",
    "FunctionToolResult",
    "PrepareArguments",
    "ToolCallContext",
    "function_tool",
    "tool_errors_visible",
]

PrepareArguments = Callable[[dict[str, Any]], Mapping[str, Any]]
"""Converts a call's decoded arguments before the schema check; synchronous, deterministic.

Example: accept the argument shape an earlier version of the tool took::

    def upgrade(arguments: dict[str, Any]) -> dict[str, Any]:
        if "id" in arguments:
            arguments["order_id"] = arguments.pop("id")
        return arguments
"""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ARGS_SECTION = ("Args", "Arguments", "Parameters", "Params")
_JSON_KINDS = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


@dataclass(frozen=True, kw_only=True)
class FunctionToolResult:
    """A function tool's result with images beside its text.

    Attributes:
        output: The text the model reads.
        images: References to images the tool uploaded; opaque here, their type and checks
            arrive with the images work (``ToolCallContext.media_store``). Any sequence is
            accepted and kept as a tuple.
    """

    output: str
    images: Sequence[object] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.output, str):
            raise TypeError(f"FunctionToolResult.output must be a str, not {type(self.output)}")
        object.__setattr__(self, "images", tuple(self.images))


@dataclass(frozen=True, kw_only=True)
class ToolCallContext:
    """What a function tool learns about its call: give a parameter this type to receive it.

    The parameter is left out of the tool's JSON Schema. A hand-built context (in tests, for
    example) needs only the three ids.

    Attributes:
        flow_id: The session id.
        turn_id: The call's turn (``turn-<n>``).
        tool_call_id: The model's id for the call.
        idempotency_key: ``<flow_id>/<turn_id>/<tool_call_id>``, the same on every attempt;
            derived from the ids when left empty.
        attempt: The tool Step's one-based attempt.
        events: Writes events bound to the tool Step (safe from any thread), if any.
        input_answers: Answers to the questions the tool asked, in order.
        input_continuation: The ``continuation`` of the tool's last ``ToolInputRequested``.
        effect: The call's effect after the tool policies, which chose its tool Step.
            ``UNCLASSIFIED`` by default; see :func:`tool_errors_visible`.
        heartbeat_function: What :meth:`heartbeat` awaits; ``None`` makes it a no-op.
    """

    flow_id: str
    turn_id: str
    tool_call_id: str
    idempotency_key: str = ""
    attempt: int = 1
    events: AgentEventWriter | None = None
    input_answers: tuple[str, ...] = ()
    input_continuation: str | None = None
    effect: ToolEffect = ToolEffect.UNCLASSIFIED
    heartbeat_function: Callable[[], Awaitable[None]] | None = field(
        default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self.idempotency_key:
            key = _idempotency_key(self.flow_id, self.turn_id, self.tool_call_id)
            object.__setattr__(self, "idempotency_key", key)
        object.__setattr__(self, "input_answers", tuple(self.input_answers))

    async def heartbeat(self) -> None:
        """Record liveness; the session already heartbeats every 20 seconds by itself."""
        if self.heartbeat_function is not None:
            await self.heartbeat_function()


def tool_errors_visible(context: ToolCallContext) -> bool:
    """Whether a wrapper may turn a tool's errors into ``ToolExecutionError``.

    ``ToolExecutionError`` records the call ``failed``, which tells the model the call took no
    effect. That is only safe to claim for ``READ`` and ``IDEMPOTENT_WRITE`` calls; for
    ``NON_IDEMPOTENT_WRITE`` and ``UNCLASSIFIED`` (the default of a hand-built context) a
    wrapper lets errors propagate, and the session records what its effect rules say.

    Args:
        context: The call's context.

    Returns:
        ``True`` for ``READ`` and ``IDEMPOTENT_WRITE`` calls.
    """
    return context.effect in (ToolEffect.READ, ToolEffect.IDEMPOTENT_WRITE)


@dataclass(frozen=True)
class _Parameter:
    """How one function parameter is filled."""

    name: str
    positional_only: bool
    is_context: bool
    required: bool
    default: object
    compiled: CompiledType | None  # None: the decoded JSON is passed as it is


def _is_context_annotation(annotation: object) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_context_annotation(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return len(members) == 1 and _is_context_annotation(members[0])
    return isinstance(annotation, type) and issubclass(annotation, ToolCallContext)


def _is_async_callable(function: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(type(function), "__call__", None)  # noqa: B004 - an instance's __call__
    return not inspect.isroutine(function) and inspect.iscoroutinefunction(call)


def _type_hints(function: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    target: object = function
    while isinstance(target, functools.partial):
        target = target.func
    if isinstance(target, type):
        # A class called as a tool: the hints of its constructor's parameters.
        target = getattr(target, "__init__", target)
    elif not inspect.isroutine(target):
        target = getattr(type(target), "__call__", target)  # noqa: B004
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError) as error:
        raise TypeError(f"cannot resolve the type hints of tool {tool_name!r}: {error}") from error


def _plain_schema(schema: Mapping[str, Any], tool_name: str) -> dict[str, Any]:
    if not isinstance(schema, Mapping):
        raise TypeError(f"parameters_schema of tool {tool_name!r} must be a mapping")
    try:
        plain = json.loads(json.dumps(schema, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise TypeError(f"parameters_schema of tool {tool_name!r} is not JSON: {error}") from error
    if plain.get("type", "object") != "object":
        raise TypeError(f"parameters_schema of tool {tool_name!r} must describe a JSON object")
    return typing.cast("dict[str, Any]", plain)


class FunctionTool:
    """A plain function offered to the model as a tool; build one with :func:`function_tool`.

    Read-only attributes: ``function``, ``name``, ``description``, ``parameters_schema``,
    ``effect``, ``requires_approval``, ``policy`` and ``prepare_arguments``.

    Args:
        function: A sync or async function (or other callable); a sync one runs in a worker
            thread.
        effect: What a call may do to the world.
        requires_approval: Whether calls wait for approval; ``None`` uses the effect's default.
        name: The tool name (default: the function's ``__name__``); 1 to 64 of ``A-Z``,
            ``a-z``, ``0-9``, ``_`` and ``-``.
        description: What the model reads (default: the cleaned docstring, without its
            ``Args:`` section when the schema is derived, since the schema carries those).
        parameters_schema: The arguments' JSON Schema (default: derived from the type hints).
        prepare_arguments: Converts the decoded arguments before the schema check.

    Raises:
        TypeError: The function cannot be a tool: ``*args``, an unsupported or missing type
            annotation, an async ``prepare_arguments``, or a ``parameters_schema`` that does
            not fit the signature.
        ValueError: The name is not a valid tool name.
    """

    __slots__ = (
        "_accepts_extra",
        "_description",
        "_effect",
        "_function",
        "_is_async",
        "_name",
        "_parameters",
        "_prepare_arguments",
        "_requires_approval",
        "_schema",
    )

    def __init__(
        self,
        function: Callable[..., Any],
        /,
        *,
        effect: ToolEffect = ToolEffect.UNCLASSIFIED,
        requires_approval: bool | None = None,
        name: str | None = None,
        description: str | None = None,
        parameters_schema: Mapping[str, Any] | None = None,
        prepare_arguments: PrepareArguments | None = None,
    ) -> None:
        candidate: object = function
        if isinstance(candidate, FunctionTool) or not callable(candidate):
            raise TypeError(f"function_tool needs a plain function, not {function!r}")
        tool_name = name if name is not None else getattr(function, "__name__", None)
        if not isinstance(tool_name, str) or not _TOOL_NAME.fullmatch(tool_name):
            raise ValueError(
                f"invalid tool name {tool_name!r}: use 1 to 64 of A-Z, a-z, 0-9, _ and -"
            )
        if inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(function):
            raise TypeError(f"tool {tool_name!r} is a generator; a tool returns one result")
        prepare: object = prepare_arguments
        if prepare is not None and (not callable(prepare) or _is_async_callable(prepare)):
            raise TypeError(
                f"prepare_arguments of tool {tool_name!r} must be a synchronous function"
            )
        self._function = function
        self._name = tool_name
        self._effect = ToolEffect(effect)
        self._requires_approval = requires_approval
        self._prepare_arguments = prepare_arguments
        self._is_async = _is_async_callable(function)
        derived = parameters_schema is None
        doc = inspect.getdoc(function) or ""
        doc_text, arg_docs = split_docstring_section(doc, _ARGS_SECTION) if doc else ("", {})
        self._description = (
            description if description is not None else (doc_text if derived else doc)
        )
        self._parameters, self._accepts_extra = self._read_signature(derived)
        if parameters_schema is None:
            self._schema = self._derive_schema(arg_docs)
        else:
            self._schema = _plain_schema(parameters_schema, tool_name)
            self._check_explicit_schema()

    def _read_signature(self, derived: bool) -> tuple[tuple[_Parameter, ...], bool]:  # noqa: FBT001
        try:
            signature = inspect.signature(self._function)
        except (TypeError, ValueError) as error:
            raise TypeError(f"cannot read the signature of tool {self._name!r}") from error
        hints = _type_hints(self._function, self._name)
        parameters: list[_Parameter] = []
        accepts_extra = False
        for parameter in signature.parameters.values():
            where = f"parameter {parameter.name!r} of tool {self._name!r}"
            if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                raise TypeError(f"{where}: *args is not supported")
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                if derived:
                    raise TypeError(f"{where}: **kwargs needs an explicit parameters_schema")
                accepts_extra = True
                continue
            annotation = hints.get(parameter.name, parameter.annotation)
            is_context = _is_context_annotation(annotation)
            compiled: CompiledType | None = None
            if not is_context and annotation is not inspect.Parameter.empty:
                try:
                    compiled = compile_annotation(annotation)
                except UnsupportedAnnotationError as error:
                    if derived:
                        raise TypeError(f"{where}: {error}") from None
            elif not is_context and derived:
                raise TypeError(f"{where} has no type annotation")
            parameters.append(
                _Parameter(
                    name=parameter.name,
                    positional_only=parameter.kind is inspect.Parameter.POSITIONAL_ONLY,
                    is_context=is_context,
                    required=parameter.default is inspect.Parameter.empty,
                    default=parameter.default,
                    compiled=compiled,
                )
            )
        return tuple(parameters), accepts_extra

    def _derive_schema(self, arg_docs: Mapping[str, str]) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for parameter in self._parameters:
            if parameter.is_context or parameter.compiled is None:
                continue
            schema = dict(parameter.compiled.schema)
            if "description" not in schema and arg_docs.get(parameter.name):
                schema["description"] = arg_docs[parameter.name]
            if parameter.required:
                required.append(parameter.name)
            else:
                shown, default = json_default(parameter.default)
                if shown:
                    schema["default"] = default
            properties[parameter.name] = schema
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }

    def _check_explicit_schema(self) -> None:
        raw = self._schema.get("properties")
        properties: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        by_name = {parameter.name: parameter for parameter in self._parameters}
        for key in properties:
            parameter = by_name.get(key)
            if parameter is not None and parameter.is_context:
                raise TypeError(
                    f"parameters_schema of tool {self._name!r} lists {key!r}, "
                    "the ToolCallContext parameter"
                )
            if parameter is None and not self._accepts_extra:
                raise TypeError(
                    f"parameters_schema of tool {self._name!r} lists {key!r}, "
                    "which is not a parameter of the function"
                )
        for parameter in self._parameters:
            if parameter.required and not parameter.is_context and parameter.name not in properties:
                raise TypeError(
                    f"parameter {parameter.name!r} of tool {self._name!r} has no default "
                    "and is missing from parameters_schema"
                )

    @property
    def function(self) -> Callable[..., Any]:
        """The wrapped function, callable directly (in tests, for example)."""
        return self._function

    @property
    def name(self) -> str:
        """The tool name the model calls."""
        return self._name

    @property
    def description(self) -> str:
        """What the model reads about the tool."""
        return self._description

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments (an object schema); a fresh copy on each read."""
        return copy.deepcopy(self._schema)

    @property
    def effect(self) -> ToolEffect:
        """What a call may do to the world."""
        return self._effect

    @property
    def requires_approval(self) -> bool | None:
        """Whether calls wait for approval; ``None`` uses the effect's default."""
        return self._requires_approval

    @property
    def policy(self) -> ToolPolicy:
        """``ToolPolicy(effect, requires_approval)``."""
        return ToolPolicy(self._effect, self._requires_approval)

    @property
    def prepare_arguments(self) -> PrepareArguments | None:
        """Converts decoded arguments before the schema check, if set."""
        return self._prepare_arguments

    def __repr__(self) -> str:
        return f"FunctionTool(name={self._name!r}, effect={self._effect!s})"

    def _invalid(self, reason: str) -> ToolExecutionError:
        return ToolExecutionError(f"invalid arguments for {self._name}: {reason}")

    async def invoke(
        self, arguments_json: str, context: ToolCallContext
    ) -> str | FunctionToolResult | ToolInputRequested:
        """Run one call with the model's arguments.

        Args:
            arguments_json: The arguments as the model wrote them (JSON text).
            context: The call's context, passed to a ``ToolCallContext`` parameter.

        Returns:
            A ``str`` result as it is; a ``FunctionToolResult`` or ``ToolInputRequested``
            unchanged; any other result as JSON text (``ensure_ascii=False``, dataclasses and
            Enum members converted).

        Raises:
            ToolExecutionError: The arguments are not JSON, not an object, refused by
                ``prepare_arguments``, or break the schema
                (``invalid arguments for <tool>: <reason>``); or the result has no JSON form.
                The function's own ``ToolExecutionError`` passes through.
            Exception: Anything else the function raises, unchanged.
        """
        arguments = self._decode(arguments_json)
        if self._prepare_arguments is not None:
            arguments = self._prepare(arguments)
        try:
            validate_json_value(arguments, self._schema)
        except SchemaViolationError as error:
            raise self._invalid(str(error)) from error
        args, kwargs = self._bind(arguments, context)
        if self._is_async:
            result = await self._function(*args, **kwargs)
        else:
            result = await asyncio.to_thread(self._function, *args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return self._output(result)

    def _decode(self, arguments_json: str) -> dict[str, Any]:
        try:
            decoded = json.loads(arguments_json, parse_constant=_refuse_constant)
        except (TypeError, ValueError, RecursionError) as error:
            raise self._invalid("arguments are not valid JSON") from error
        if not isinstance(decoded, dict):
            kind = _JSON_KINDS.get(type(decoded), type(decoded).__name__)
            raise self._invalid(f"arguments must be a JSON object, not {kind}")
        return decoded

    def _prepare(self, arguments: dict[str, Any]) -> dict[str, Any]:
        prepare = typing.cast("PrepareArguments", self._prepare_arguments)
        try:
            prepared: object = prepare(arguments)
        except ToolExecutionError:
            raise
        except Exception as error:  # asyncio.CancelledError is no Exception: it passes
            raise self._invalid(str(error) or type(error).__name__) from error
        if inspect.isawaitable(prepared):
            if inspect.iscoroutine(prepared):
                prepared.close()
            raise ToolExecutionError(
                f"prepare_arguments of {self._name} returned an awaitable; "
                "it must be a synchronous function"
            )
        if not isinstance(prepared, Mapping):
            raise self._invalid(f"prepare_arguments returned {type(prepared).__name__}, not a dict")
        return dict(prepared)

    def _bind(
        self, arguments: Mapping[str, Any], context: ToolCallContext
    ) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        known = {parameter.name for parameter in self._parameters if not parameter.is_context}
        for key, value in arguments.items():
            if key not in known:
                if not self._accepts_extra:
                    raise self._invalid(f"{key!r} is not allowed")
                kwargs[key] = value
        for parameter in self._parameters:
            if parameter.is_context:
                value = context
            elif parameter.name in arguments:
                value = self._convert(parameter, arguments[parameter.name])
            elif parameter.required:
                raise self._invalid(f"{parameter.name!r} is required")
            elif parameter.positional_only:
                value = parameter.default
            else:
                continue
            if parameter.positional_only:
                args.append(value)
            else:
                kwargs[parameter.name] = value
        return args, kwargs

    def _convert(self, parameter: _Parameter, value: object) -> object:
        if parameter.compiled is None:
            return value
        try:
            return parameter.compiled.convert(value)
        except Exception as error:  # a dataclass's __post_init__ may refuse the value
            raise self._invalid(f"{parameter.name!r} is invalid: {error}") from error

    def _output(self, result: object) -> str | FunctionToolResult | ToolInputRequested:
        if isinstance(result, str):
            return str.__str__(result)  # a StrEnum member or other str subclass: its text
        if isinstance(result, FunctionToolResult | ToolInputRequested):
            return result
        try:
            return json.dumps(to_json_compatible(result), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as error:
            raise ToolExecutionError(
                f"{self._name} ran, but its result could not be serialized as JSON: {error}"
            ) from error


def _refuse_constant(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


@overload
def function_tool(function: Callable[..., Any], /) -> FunctionTool: ...


@overload
def function_tool(
    *,
    effect: ToolEffect = ToolEffect.UNCLASSIFIED,
    requires_approval: bool | None = None,
    name: str | None = None,
    description: str | None = None,
    parameters_schema: Mapping[str, Any] | None = None,
    prepare_arguments: PrepareArguments | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def function_tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    effect: ToolEffect = ToolEffect.UNCLASSIFIED,
    requires_approval: bool | None = None,
    name: str | None = None,
    description: str | None = None,
    parameters_schema: Mapping[str, Any] | None = None,
    prepare_arguments: PrepareArguments | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a plain sync or async function into a :class:`FunctionTool`.

    Use it bare (``@function_tool``: ``UNCLASSIFIED``, so calls need approval) or with
    options (``@function_tool(effect=ToolEffect.READ)``).

    Example:
        ```python
        @function_tool(effect=ToolEffect.READ)
        async def lookup_order(order_id: str) -> dict[str, str]:
            return {"order_id": order_id, "status": "shipped"}
        ```

    Args:
        function: The function, when used bare.
        effect: What a call may do to the world.
        requires_approval: Whether calls wait for approval; ``None`` uses the effect's default.
        name: The tool name (default: the function's name).
        description: What the model reads (default: the docstring).
        parameters_schema: The arguments' JSON Schema (default: derived from the type hints).
        prepare_arguments: A synchronous, deterministic function that converts the decoded
            arguments before the schema check.

    Returns:
        The tool, or (with options) a decorator that makes it.

    Raises:
        TypeError: See :class:`FunctionTool`.
        ValueError: The name is not a valid tool name.
    """

    def decorate(target: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            target,
            effect=effect,
            requires_approval=requires_approval,
            name=name,
            description=description,
            parameters_schema=parameters_schema,
            prepare_arguments=prepare_arguments,
        )

    if function is None:
        return decorate
    return decorate(function)
