"""``@function_tool``, ``FunctionTool.invoke`` and ``ToolCallContext`` (pure, no engine)."""

import asyncio
import dataclasses
import enum
import functools
import json
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Annotated, Any, Literal, Optional

import pytest

from dex_agents import ToolEffect, ToolExecutionError, ToolInputRequested, ToolPolicy
from dex_agents.builtin_loop import FunctionTool, FunctionToolResult, ToolCallContext, function_tool
from dex_agents.builtin_loop._function_tools import tool_errors_visible


class Currency(enum.Enum):
    EUR = "eur"
    USD = "usd"


class Verdict(enum.StrEnum):
    APPROVED = "approved"


@dataclasses.dataclass(frozen=True)
class Money:
    amount_cents: int
    currency: Currency = Currency.EUR

    def __post_init__(self) -> None:
        if self.amount_cents < 0:
            raise ValueError("amount_cents must not be negative")


@dataclasses.dataclass
class Receipt:
    order_id: str
    total: Money


class Unsupported:
    pass


def make_context(**overrides: object) -> ToolCallContext:
    values: dict[str, Any] = {
        "flow_id": "session-1",
        "turn_id": "turn-2",
        "tool_call_id": "call-3",
        **overrides,
    }
    return ToolCallContext(**values)


async def invoke(tool: FunctionTool, arguments: object, **context: object) -> object:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return await tool.invoke(text, make_context(**context))


async def invoke_error(tool: FunctionTool, arguments: object) -> str:
    with pytest.raises(ToolExecutionError) as caught:
        await invoke(tool, arguments)
    return str(caught.value)


# --- Decorator and metadata ------------------------------------------------------------------


def test_bare_decorator_uses_name_docstring_and_unclassified() -> None:
    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order by its ID."""
        return order_id

    assert isinstance(lookup_order, FunctionTool)
    assert lookup_order.name == "lookup_order"
    assert lookup_order.description == "Look up an order by its ID."
    assert lookup_order.effect is ToolEffect.UNCLASSIFIED
    assert lookup_order.requires_approval is None
    assert lookup_order.policy == ToolPolicy(ToolEffect.UNCLASSIFIED)
    assert lookup_order.policy.is_approval_required
    assert lookup_order.prepare_arguments is None
    assert lookup_order.function("x") == "x"
    assert lookup_order.parameters_schema == {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
        "additionalProperties": False,
    }
    assert repr(lookup_order) == "FunctionTool(name='lookup_order', effect=unclassified)"


def test_decorator_with_options() -> None:
    def upgrade(arguments: dict[str, Any]) -> dict[str, Any]:
        return arguments

    @function_tool(
        effect=ToolEffect.READ,
        requires_approval=True,
        name="find-order",
        description="Finds an order.",
        prepare_arguments=upgrade,
    )
    async def lookup_order(order_id: str) -> str:
        """Ignored docstring."""
        return order_id

    assert lookup_order.name == "find-order"
    assert lookup_order.description == "Finds an order."
    assert lookup_order.effect is ToolEffect.READ
    assert lookup_order.requires_approval is True
    assert lookup_order.policy == ToolPolicy(ToolEffect.READ, requires_approval=True)
    assert lookup_order.prepare_arguments is upgrade


def test_function_tool_class_and_empty_decorator_call() -> None:
    def ping() -> str:
        return "pong"

    assert FunctionTool(ping, effect=ToolEffect.READ).policy == ToolPolicy(ToolEffect.READ)
    tool = function_tool()(ping)
    assert tool.description == ""
    assert tool.parameters_schema == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_description_leaves_args_to_the_schema() -> None:
    @function_tool
    def refund_order(
        order_id: str,
        amount_cents: Annotated[int, "Cents to refund"],
        reason: Literal["damaged", "late"] = "late",
        note: str | None = None,
    ) -> str:
        """Refund part of an order.

        Only for shipped orders.

        Args:
            order_id: The order to refund.
            amount_cents: Overridden by Annotated.
            reason: Why,
                in one word.

            note: A note.

        Returns:
            The refund id.
        """
        return f"{order_id}:{amount_cents}:{reason}:{note}"

    assert refund_order.description == (
        "Refund part of an order.\n\nOnly for shipped orders.\n\nReturns:\n    The refund id."
    )
    assert refund_order.parameters_schema == {
        "type": "object",
        "properties": {
            "order_id": {"type": "string", "description": "The order to refund."},
            "amount_cents": {"type": "integer", "description": "Cents to refund"},
            "reason": {
                "type": "string",
                "enum": ["damaged", "late"],
                "description": "Why, in one word.",
                "default": "late",
            },
            "note": {"type": ["string", "null"], "description": "A note.", "default": None},
        },
        "required": ["order_id", "amount_cents"],
        "additionalProperties": False,
    }


def test_defaults_without_a_json_form_are_left_out() -> None:
    sentinel = object()

    @function_tool
    def tool(value: object = sentinel, currency: Currency = Currency.USD) -> str:
        return f"{value}:{currency}"

    assert tool.parameters_schema["properties"] == {
        "value": {},
        "currency": {"type": "string", "enum": ["eur", "usd"], "default": "usd"},
    }
    assert tool.parameters_schema["required"] == []


def test_parameters_schema_is_a_fresh_copy() -> None:
    @function_tool
    def tool(value: str) -> str:
        return value

    tool.parameters_schema["properties"]["value"]["type"] = "integer"
    assert tool.parameters_schema["properties"]["value"] == {"type": "string"}


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: function_tool(_takes_unsupported),
            "parameter 'thing' of tool '_takes_unsupported': Unsupported is not supported",
        ),
        (
            lambda: function_tool(_no_annotation),
            "parameter 'value' of tool '_no_annotation' has no",
        ),
        (lambda: function_tool(_var_positional), r"parameter 'values' .*: \*args is not supported"),
        (lambda: function_tool(_var_keyword), r"\*\*kwargs needs an explicit parameters_schema"),
        (lambda: function_tool(_generator), "is a generator"),
        (
            lambda: function_tool(prepare_arguments=_async_prepare)(_takes_str),  # type: ignore[arg-type]
            "prepare_arguments of tool '_takes_str' must be a synchronous function",
        ),
        (lambda: function_tool(function_tool(_takes_str)), "needs a plain function"),  # type: ignore[call-overload]
        (lambda: FunctionTool(42), "needs a plain function"),  # type: ignore[arg-type]
        (lambda: function_tool(_unresolvable), "cannot resolve the type hints"),
    ],
)
def test_definition_errors_are_type_errors(build: Callable[[], object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        build()


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dot.ted", "ünïcode", "new\n"])
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="invalid tool name"):
        function_tool(name=name)(_takes_str)


def test_lambda_needs_a_name() -> None:
    with pytest.raises(ValueError, match="'<lambda>'"):
        function_tool(lambda: "x")
    assert function_tool(name="answer")(lambda: "x").name == "answer"


def _takes_unsupported(thing: Unsupported) -> str:
    return str(thing)


def _no_annotation(value) -> str:  # type: ignore[no-untyped-def]  # noqa: ANN001
    return str(value)


def _var_positional(*values: int) -> str:
    return str(values)


def _var_keyword(**values: int) -> str:
    return str(values)


def _generator(value: int) -> Iterator[int]:
    yield value


async def _async_prepare(arguments: dict[str, Any]) -> dict[str, Any]:
    return arguments


def _takes_str(value: str) -> str:
    return value


def _unresolvable(value: "NotDefinedAnywhere") -> str:  # type: ignore[name-defined]  # noqa: F821
    return str(value)


# --- Explicit parameters_schema ---------------------------------------------------------------

EXPLICIT = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
    },
    "required": ["query"],
}


def test_explicit_schema_is_used_and_keeps_the_whole_docstring() -> None:
    @function_tool(parameters_schema=EXPLICIT)
    def search(query, limit=10):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
        """Search.

        Args:
            query: What to find.
            limit: How many.
        """
        return f"{query}:{limit}"

    assert search.parameters_schema == EXPLICIT
    assert search.parameters_schema is not EXPLICIT
    assert search.description == (
        "Search.\n\nArgs:\n    query: What to find.\n    limit: How many."
    )


async def test_explicit_schema_validates_and_passes_values_unconverted() -> None:
    @function_tool(parameters_schema=EXPLICIT)
    def search(query: Unsupported, limit: int = 10) -> str:
        return f"{query!r}:{limit!r}"

    assert await invoke(search, {"query": "x", "limit": 3.0}) == "'x':3"
    assert await invoke_error(search, {"limit": 0}) == (
        "invalid arguments for search: 'query' is required; 'limit' must be at least 1"
    )


async def test_explicit_schema_with_var_keyword_passes_extra_arguments() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}}

    @function_tool(parameters_schema=schema)
    def tool(a: int = 0, **rest: object) -> dict[str, object]:
        return {"a": a, **rest}

    assert await invoke(tool, {"a": 1, "b": [2], "c": "3"}) == '{"a": 1, "b": [2], "c": "3"}'


async def test_explicit_schema_without_var_keyword_refuses_extra_arguments() -> None:
    @function_tool(parameters_schema={"type": "object", "properties": {"a": {}}})
    def tool(a: int = 0) -> int:
        return a

    assert await invoke_error(tool, {"b": 1}) == "invalid arguments for tool: 'b' is not allowed"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object", "properties": {"other": {}}},
            "lists 'other', which is not a parameter",
        ),
        ({"type": "object", "properties": {}}, "parameter 'value' of tool 'tool' has no default"),
        (
            {"type": "object", "properties": {"value": {}, "context": {}}},
            "lists 'context', the ToolCallContext parameter",
        ),
        ({"type": "array"}, "must describe a JSON object"),
        ({"type": "object", "default": object()}, "is not JSON"),
        ("not a mapping", "must be a mapping"),
    ],
)
def test_explicit_schema_must_fit_the_signature(schema: Mapping[str, Any], message: str) -> None:
    def tool(value: str, context: ToolCallContext) -> str:
        return f"{value}:{context.tool_call_id}"

    with pytest.raises(TypeError, match=message):
        function_tool(parameters_schema=schema)(tool)


# --- Calling ---------------------------------------------------------------------------------


async def test_sync_function_runs_in_a_worker_thread() -> None:
    @function_tool
    def where() -> int:
        return threading.get_ident()

    assert int(typing_str(await invoke(where, {}))) != threading.get_ident()


async def test_async_function_is_awaited_on_the_loop() -> None:
    loop = asyncio.get_running_loop()

    @function_tool
    async def where() -> bool:
        await asyncio.sleep(0)
        return (
            asyncio.get_running_loop() is loop
            and threading.current_thread() is threading.main_thread()
        )

    assert await invoke(where, {}) == "true"


async def test_async_partials_and_callable_objects_are_awaited() -> None:
    async def add(a: int, b: int) -> int:
        return a + b

    class Adder:
        async def __call__(self, a: int, b: int) -> int:
            return a + b

    assert await invoke(function_tool(name="add")(functools.partial(add, b=1)), {"a": 1}) == "2"
    assert await invoke(function_tool(name="adder")(Adder()), {"a": 2, "b": 3}) == "5"


async def test_sync_function_returning_an_awaitable_is_awaited() -> None:
    async def later() -> str:
        return "done"

    @function_tool
    def start() -> Awaitable[str]:
        return later()

    assert await invoke(start, {}) == "done"


async def test_arguments_are_converted_to_the_annotated_types() -> None:
    seen: dict[str, object] = {}

    @function_tool
    def pay(
        receipt: Receipt,
        method: Literal["card", "cash"],
        currency: Currency,
        extras: list[Money] | None = None,
        pair: tuple[int, Currency] = (0, Currency.EUR),
    ) -> str:
        seen.update(receipt=receipt, method=method, currency=currency, extras=extras, pair=pair)
        return "paid"

    result = await invoke(
        pay,
        {
            "receipt": {"order_id": "o-1", "total": {"amount_cents": 250.0, "currency": "usd"}},
            "method": "card",
            "currency": "eur",
            "extras": [{"amount_cents": 1}],
            "pair": [2, "usd"],
        },
    )
    assert result == "paid"
    assert seen == {
        "receipt": Receipt("o-1", Money(250, Currency.USD)),
        "method": "card",
        "currency": Currency.EUR,
        "extras": [Money(1)],
        "pair": (2, Currency.USD),
    }
    assert type(seen["receipt"].total.amount_cents) is int  # type: ignore[attr-defined]


async def test_positional_only_parameters_and_defaults() -> None:
    @function_tool
    def tool(a: int = 1, b: int = 2, /, c: int = 3) -> list[int]:
        return [a, b, c]

    assert await invoke(tool, {"b": 20}) == "[1, 20, 3]"
    assert await invoke(tool, {}) == "[1, 2, 3]"


async def test_a_value_the_dataclass_refuses_is_invalid_arguments() -> None:
    @function_tool
    def refund(total: Money) -> str:
        return str(total)

    assert await invoke_error(refund, {"total": {"amount_cents": -5}}) == (
        "invalid arguments for refund: 'total' is invalid: amount_cents must not be negative"
    )


# --- Context --------------------------------------------------------------------------------


@pytest.mark.parametrize("position", ["first", "middle", "keyword", "optional", "annotated"])
async def test_context_is_injected_anywhere_and_left_out_of_the_schema(position: str) -> None:
    def first(context: ToolCallContext, order_id: str) -> str:
        return f"{order_id}:{context.idempotency_key}"

    def middle(order_id: str, context: ToolCallContext, note: str = "") -> str:
        return f"{order_id}:{context.idempotency_key}{note}"

    def keyword(order_id: str, *, context: ToolCallContext) -> str:
        return f"{order_id}:{context.idempotency_key}"

    def optional(order_id: str, context: Optional[ToolCallContext] = None) -> str:  # noqa: UP045
        assert context is not None
        return f"{order_id}:{context.idempotency_key}"

    def annotated(order_id: str, context: Annotated[ToolCallContext, "ctx"]) -> str:
        return f"{order_id}:{context.idempotency_key}"

    functions: dict[str, Callable[..., str]] = {
        "first": first,
        "middle": middle,
        "keyword": keyword,
        "optional": optional,
        "annotated": annotated,
    }
    tool = function_tool(functions[position])
    assert "context" not in tool.parameters_schema["properties"]
    assert "context" not in tool.parameters_schema["required"]
    assert await invoke(tool, {"order_id": "o"}) == "o:session-1/turn-2/call-3"
    assert await invoke_error(tool, {"order_id": "o", "context": {}}) == (
        f"invalid arguments for {position}: 'context' is not allowed"
    )


async def test_context_fields_reach_the_function() -> None:
    beats: list[str] = []

    async def beat() -> None:
        beats.append("beat")

    @function_tool(effect=ToolEffect.NON_IDEMPOTENT_WRITE)
    async def refund(context: ToolCallContext) -> dict[str, object]:
        await context.heartbeat()
        return {
            "key": context.idempotency_key,
            "attempt": context.attempt,
            "answers": list(context.input_answers),
            "continuation": context.input_continuation,
            "effect": context.effect,
            "events": context.events,
        }

    result = await invoke(
        refund,
        {},
        idempotency_key="custom-key",
        attempt=2,
        input_answers=["yes"],
        input_continuation="step-2",
        effect=ToolEffect.NON_IDEMPOTENT_WRITE,
        heartbeat_function=beat,
    )
    assert json.loads(typing_str(result)) == {
        "key": "custom-key",
        "attempt": 2,
        "answers": ["yes"],
        "continuation": "step-2",
        "effect": "non_idempotent_write",
        "events": None,
    }
    assert beats == ["beat"]


async def test_hand_built_context_defaults() -> None:
    context = make_context(input_answers=["a", "b"])
    assert context.idempotency_key == "session-1/turn-2/call-3"
    assert context.attempt == 1
    assert context.events is None
    assert context.input_answers == ("a", "b")
    assert context.input_continuation is None
    assert context.effect is ToolEffect.UNCLASSIFIED
    await context.heartbeat()  # no heartbeat function: nothing happens
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.attempt = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("effect", "visible"),
    [
        (ToolEffect.READ, True),
        (ToolEffect.IDEMPOTENT_WRITE, True),
        (ToolEffect.NON_IDEMPOTENT_WRITE, False),
        (ToolEffect.UNCLASSIFIED, False),
    ],
)
def test_tool_errors_visible_follows_the_effect(effect: ToolEffect, visible: bool) -> None:  # noqa: FBT001
    assert tool_errors_visible(make_context(effect=effect)) is visible


def test_tool_errors_visible_is_false_for_a_hand_built_context() -> None:
    assert not tool_errors_visible(make_context())


# --- Arguments the model got wrong -----------------------------------------------------------


@function_tool(effect=ToolEffect.NON_IDEMPOTENT_WRITE)
def refund_order(order_id: str, amount: int, reason: Literal["damaged", "late"] = "late") -> str:
    """Refund part of an order."""
    return f"{order_id}:{amount}:{reason}"


@pytest.mark.parametrize(
    "text", ["", "not json", "{'order_id': 1}", '{"order_id": "x",}', "{", '{"amount": NaN}']
)
async def test_arguments_that_are_not_json(text: str) -> None:
    assert await invoke_error(refund_order, text) == (
        "invalid arguments for refund_order: arguments are not valid JSON"
    )


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("[]", "an array"),
        ('"x"', "a string"),
        ("1", "a number"),
        ("true", "a boolean"),
        ("null", "null"),
    ],
)
async def test_arguments_that_are_not_an_object(text: str, kind: str) -> None:
    assert await invoke_error(refund_order, text) == (
        f"invalid arguments for refund_order: arguments must be a JSON object, not {kind}"
    )


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ({"amount": 1}, "'order_id' is required"),
        ({"order_id": "o"}, "'amount' is required"),
        ({"order_id": "o", "amount": "5"}, "'amount' must be an integer"),
        ({"order_id": "o", "amount": 1.5}, "'amount' must be an integer"),
        (
            {"order_id": "o", "amount": 1, "reason": "bored"},
            '\'reason\' must be one of "damaged", "late"',
        ),
        ({"order_id": "o", "amount": 1, "amount_cents": 1}, "'amount_cents' is not allowed"),
        ({}, "'order_id' is required; 'amount' is required"),
    ],
)
async def test_schema_violations(arguments: dict[str, Any], reason: str) -> None:
    assert (
        await invoke_error(refund_order, arguments)
        == f"invalid arguments for refund_order: {reason}"
    )


async def test_valid_arguments_run_the_function() -> None:
    assert await invoke(refund_order, {"order_id": "o", "amount": 2.0}) == "o:2:late"


# --- prepare_arguments ------------------------------------------------------------------------


def _upgrade(arguments: dict[str, Any]) -> dict[str, Any]:
    if "id" in arguments:
        arguments["order_id"] = arguments.pop("id")
    if "cents" in arguments:
        arguments["amount"] = int(arguments.pop("cents"))
    return arguments


def _make_refund(prepare: Callable[[dict[str, Any]], Any]) -> FunctionTool:
    @function_tool(effect=ToolEffect.READ, prepare_arguments=prepare)
    def refund(order_id: str, amount: int) -> str:
        return f"{order_id}:{amount}"

    return refund


async def test_prepare_arguments_converts_an_older_shape_before_the_schema_check() -> None:
    tool = _make_refund(_upgrade)
    assert await invoke(tool, {"id": "o-1", "cents": "250"}) == "o-1:250"
    assert await invoke(tool, {"order_id": "o-2", "amount": 3}) == "o-2:3"
    assert (
        await invoke_error(tool, {"id": "o-1"})
        == "invalid arguments for refund: 'amount' is required"
    )


async def test_prepare_arguments_exception_fails_like_a_schema_violation() -> None:
    tool = _make_refund(_upgrade)
    assert await invoke_error(tool, {"id": "o", "cents": "many"}) == (
        "invalid arguments for refund: invalid literal for int() with base 10: 'many'"
    )

    def empty_message(arguments: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG001
        raise KeyError

    assert (
        await invoke_error(_make_refund(empty_message), {})
        == "invalid arguments for refund: KeyError"
    )


async def test_prepare_arguments_tool_execution_error_passes_unchanged() -> None:
    def refuse(arguments: dict[str, Any]) -> dict[str, Any]:
        raise ToolExecutionError(f"order {arguments['order_id']} is too old to refund")

    assert (
        await invoke_error(_make_refund(refuse), {"order_id": "o-9"})
        == "order o-9 is too old to refund"
    )


async def test_prepare_arguments_awaitable_result_is_refused() -> None:
    async def later(arguments: dict[str, Any]) -> dict[str, Any]:
        return arguments

    def sneaky(arguments: dict[str, Any]) -> Awaitable[dict[str, Any]]:
        return later(arguments)  # closed by the tool, so no "never awaited" warning

    assert await invoke_error(_make_refund(sneaky), {"order_id": "o", "amount": 1}) == (
        "prepare_arguments of refund returned an awaitable; it must be a synchronous function"
    )

    loop = asyncio.get_running_loop()
    future: asyncio.Future[dict[str, Any]] = loop.create_future()
    assert "returned an awaitable" in await invoke_error(_make_refund(lambda _: future), {})


async def test_prepare_arguments_cancelled_error_passes_through() -> None:
    def cancel(arguments: dict[str, Any]) -> dict[str, Any]:  # noqa: ARG001
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await invoke(_make_refund(cancel), {})


async def test_prepare_arguments_must_return_a_mapping() -> None:
    assert await invoke_error(_make_refund(lambda _: ["order_id"]), {}) == (
        "invalid arguments for refund: prepare_arguments returned list, not a dict"
    )


# --- Results and the function's own errors -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "output"),
    [
        ("plain text", "plain text"),
        ("", ""),
        (Verdict.APPROVED, "approved"),
        ({"name": "Zoë", "n": [1, 2.5, None, True]}, '{"name": "Zoë", "n": [1, 2.5, null, true]}'),
        (["a", 1], '["a", 1]'),
        (42, "42"),
        (None, "null"),
        (
            Receipt("o", Money(5)),
            '{"order_id": "o", "total": {"amount_cents": 5, "currency": "eur"}}',
        ),
        (Currency.USD, '"usd"'),
        ({"output": "x", "images": []}, '{"output": "x", "images": []}'),
    ],
)
async def test_results_become_text(value: object, output: str) -> None:
    @function_tool
    def tool() -> object:
        return value

    result = await invoke(tool, {})
    assert result == output
    assert type(result) is str


async def test_function_tool_result_and_input_request_pass_through() -> None:
    image = object()
    question = ToolInputRequested(question="Which size?", choices=("S", "M"))

    @function_tool
    async def screenshot(ask: bool) -> FunctionToolResult | ToolInputRequested:  # noqa: FBT001
        if ask:
            return question
        return FunctionToolResult(output="Took a screenshot.", images=[image])

    result = await invoke(screenshot, {"ask": False})
    assert result == FunctionToolResult(output="Took a screenshot.", images=(image,))
    assert isinstance(result, FunctionToolResult)
    assert result.images == (image,)
    assert await invoke(screenshot, {"ask": True}) is question


def test_function_tool_result_defaults_and_checks() -> None:
    assert FunctionToolResult(output="x").images == ()
    with pytest.raises(TypeError, match="must be a str"):
        FunctionToolResult(output=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (Unsupported(), "Object of type Unsupported is not JSON serializable"),
        ({"x": float("nan")}, "Out of range float values are not JSON compliant"),
        ({(1, 2): 1}, "keys must be str"),
    ],
)
async def test_unserializable_results_are_tool_execution_errors(value: object, detail: str) -> None:
    @function_tool
    def tool() -> object:
        return value

    message = await invoke_error(tool, {})
    assert message.startswith("tool ran, but its result could not be serialized as JSON: ")
    assert detail in message


async def test_function_errors_propagate_unchanged() -> None:
    failure = RuntimeError("payment service down")

    @function_tool
    def sync_tool() -> str:
        raise failure

    @function_tool
    async def async_tool() -> str:
        raise failure

    for tool in (sync_tool, async_tool):
        with pytest.raises(RuntimeError) as caught:
            await invoke(tool, {})
        assert caught.value is failure


async def test_function_tool_execution_error_passes_unchanged() -> None:
    @function_tool
    async def tool() -> str:
        raise ToolExecutionError("order not found")

    assert await invoke_error(tool, {}) == "order not found"


def typing_str(value: object) -> str:
    assert isinstance(value, str)
    return value


async def test_a_class_is_called_with_its_constructor_parameters() -> None:
    @dataclasses.dataclass
    class Echo:
        text: str

    tool = function_tool(name="echo")(Echo)
    assert tool.parameters_schema["properties"] == {"text": {"type": "string"}}
    assert await invoke(tool, {"text": "hi"}) == '{"text": "hi"}'
