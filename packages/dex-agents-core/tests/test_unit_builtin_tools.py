"""Unit tests of the built-in tools' argument checks and result texts."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from dex_agents._builtin_tools import (
    BUILT_IN_TOOL_DEFINITIONS,
    QUESTION_DEADLINE_PASSED_ERROR,
    QUESTION_DECLINED_TEXT,
    AskUserArguments,
    BuiltInTool,
    BuiltInToolArgumentError,
    DurableWaitArguments,
    answered_result,
    parse_ask_user,
    parse_durable_wait,
    waited_result,
)

YEAR = timedelta(days=365)
YEAR_SECONDS = 365 * 24 * 60 * 60


# -- definitions and texts ---------------------------------------------------------------------


def test_definitions_cover_ask_user_and_durable_wait() -> None:
    by_name = {definition.name: definition for definition in BUILT_IN_TOOL_DEFINITIONS}
    assert list(by_name) == [BuiltInTool.ASK_USER, BuiltInTool.DURABLE_WAIT]
    ask = by_name[BuiltInTool.ASK_USER].parameters
    assert ask["required"] == ["question"]
    assert set(ask["properties"]) == {"question", "choices", "allows_free_text"}
    assert ask["additionalProperties"] is False
    wait = by_name[BuiltInTool.DURABLE_WAIT].parameters
    assert wait["required"] == ["duration_seconds", "reason"]
    assert set(wait["properties"]) == {"duration_seconds", "reason"}
    assert wait["properties"]["duration_seconds"] == {"type": "integer", "minimum": 1}
    assert wait["additionalProperties"] is False


def test_built_in_tool_names() -> None:
    assert [tool.value for tool in BuiltInTool] == ["ask_user", "durable_wait", "write_todos"]


def test_fixed_texts() -> None:
    assert QUESTION_DECLINED_TEXT == "The user declined to answer."
    assert QUESTION_DEADLINE_PASSED_ERROR == "question deadline passed"


@pytest.mark.parametrize("answer", ["yes", "", "héllo ✓", 'quote " and \\ slash', "two\nlines"])
def test_answered_result(answer: str) -> None:
    text = answered_result(answer)
    assert json.loads(text) == {"status": "answered", "answer": answer}
    assert list(json.loads(text)) == ["status", "answer"]
    if answer == "héllo ✓":
        assert "héllo ✓" in text  # not escaped


@pytest.mark.parametrize(("seconds", "reason"), [(1, "poll"), (3600, "wait for the build ✓")])
def test_waited_result(seconds: int, reason: str) -> None:
    text = waited_result(seconds, reason)
    assert json.loads(text) == {"status": "completed", "waited_seconds": seconds, "reason": reason}
    assert list(json.loads(text)) == ["status", "waited_seconds", "reason"]
    assert reason in text


def test_argument_error_text_and_type() -> None:
    error = BuiltInToolArgumentError(BuiltInTool.DURABLE_WAIT, "some reason")
    assert isinstance(error, ValueError)
    assert str(error) == "invalid durable_wait arguments: some reason"


# -- parse_ask_user ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"question":"Which?"}', AskUserArguments(question="Which?")),
        ('{"question":"  Which?  "}', AskUserArguments(question="Which?")),
        (
            '{"question":"Which?","choices":null,"allows_free_text":null}',
            AskUserArguments(question="Which?", choices=(), allows_free_text=True),
        ),
        (
            '{"question":"Which?","choices":[]}',
            AskUserArguments(question="Which?", choices=(), allows_free_text=True),
        ),
        (
            '{"question":"Which?","choices":["a","b"]}',
            AskUserArguments(question="Which?", choices=("a", "b"), allows_free_text=False),
        ),
        (
            '{"question":"Which?","choices":["a","b"],"allows_free_text":null}',
            AskUserArguments(question="Which?", choices=("a", "b"), allows_free_text=False),
        ),
        (
            '{"question":"Which?","choices":["a","b"],"allows_free_text":true}',
            AskUserArguments(question="Which?", choices=("a", "b"), allows_free_text=True),
        ),
        (
            '{"question":"Which?","allows_free_text":true}',
            AskUserArguments(question="Which?", choices=(), allows_free_text=True),
        ),
        (
            '{"question":"Which?","choices":["a","a "]}',
            AskUserArguments(question="Which?", choices=("a", "a "), allows_free_text=False),
        ),
        (
            '{"question":"Which?","future":null}',
            AskUserArguments(question="Which?"),
        ),
    ],
)
def test_parse_ask_user_accepts(arguments: str, expected: AskUserArguments) -> None:
    assert parse_ask_user(arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        ("", "question must be a non-blank string"),
        ("   ", "question must be a non-blank string"),
        ("{}", "question must be a non-blank string"),
        ("not json", "arguments are not valid JSON"),
        ('{"question":', "arguments are not valid JSON"),
        ('["Which?"]', "arguments must be a JSON object"),
        ('"Which?"', "arguments must be a JSON object"),
        ("42", "arguments must be a JSON object"),
        ('{"question":null}', "question must be a non-blank string"),
        ('{"question":""}', "question must be a non-blank string"),
        ('{"question":" \\n\\t "}', "question must be a non-blank string"),
        ('{"question":42}', "question must be a non-blank string"),
        ('{"question":["Which?"]}', "question must be a non-blank string"),
        ('{"question":"Q","extra":1}', "unknown argument 'extra'"),
        ('{"question":"Q","zeta":1,"alpha":2}', "unknown argument 'alpha'"),
        ('{"extra":1}', "unknown argument 'extra'"),
        ('{"question":"Q","choices":"a"}', "choices must be a list of non-blank strings"),
        ('{"question":"Q","choices":{"a":1}}', "choices must be a list of non-blank strings"),
        ('{"question":"Q","choices":["a",1]}', "choices must be a list of non-blank strings"),
        ('{"question":"Q","choices":["a",""]}', "choices must be a list of non-blank strings"),
        ('{"question":"Q","choices":["a","  "]}', "choices must be a list of non-blank strings"),
        ('{"question":"Q","choices":["a",null]}', "choices must be a list of non-blank strings"),
        ('{"question":"Q","choices":["a","b","a"]}', "choices must be unique"),
        ('{"question":"Q","allows_free_text":"yes"}', "allows_free_text must be a boolean"),
        ('{"question":"Q","allows_free_text":1}', "allows_free_text must be a boolean"),
        (
            '{"question":"Q","allows_free_text":false}',
            "a question without choices must allow free text",
        ),
        (
            '{"question":"Q","choices":[],"allows_free_text":false}',
            "a question without choices must allow free text",
        ),
    ],
)
def test_parse_ask_user_rejects(arguments: str, reason: str) -> None:
    with pytest.raises(BuiltInToolArgumentError) as caught:
        parse_ask_user(arguments)
    assert str(caught.value) == f"invalid ask_user arguments: {reason}"


# -- parse_durable_wait --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "max_wait", "expected"),
    [
        (
            '{"duration_seconds":1,"reason":"r"}',
            YEAR,
            DurableWaitArguments(duration_seconds=1, reason="r"),
        ),
        (
            '{"duration_seconds":60,"reason":"  wait for CI  "}',
            YEAR,
            DurableWaitArguments(duration_seconds=60, reason="wait for CI"),
        ),
        (
            '{"duration_seconds":60.0,"reason":"r"}',
            YEAR,
            DurableWaitArguments(duration_seconds=60, reason="r"),
        ),
        (
            f'{{"duration_seconds":{YEAR_SECONDS},"reason":"r"}}',
            YEAR,
            DurableWaitArguments(duration_seconds=YEAR_SECONDS, reason="r"),
        ),
        (
            '{"duration_seconds":10,"reason":"r"}',
            timedelta(seconds=10),
            DurableWaitArguments(duration_seconds=10, reason="r"),
        ),
        (
            '{"duration_seconds":1,"reason":"r"}',
            timedelta(seconds=1),
            DurableWaitArguments(duration_seconds=1, reason="r"),
        ),
        (
            '{"duration_seconds":1,"reason":"r"}',
            timedelta(seconds=1.9),
            DurableWaitArguments(duration_seconds=1, reason="r"),
        ),
    ],
)
def test_parse_durable_wait_accepts(
    arguments: str, max_wait: timedelta, expected: DurableWaitArguments
) -> None:
    parsed = parse_durable_wait(arguments, max_wait)
    assert parsed == expected
    assert type(parsed.duration_seconds) is int


@pytest.mark.parametrize(
    ("arguments", "max_wait", "reason"),
    [
        ("", YEAR, "duration_seconds must be a whole number"),
        ("{}", YEAR, "duration_seconds must be a whole number"),
        ("nope", YEAR, "arguments are not valid JSON"),
        ("[1]", YEAR, "arguments must be a JSON object"),
        ("null", YEAR, "arguments must be a JSON object"),
        ('{"duration_seconds":5,"reason":"r","x":1}', YEAR, "unknown argument 'x'"),
        ('{"duration_seconds":null,"reason":"r"}', YEAR, "duration_seconds must be a whole number"),
        ('{"duration_seconds":"5","reason":"r"}', YEAR, "duration_seconds must be a whole number"),
        ('{"duration_seconds":1.5,"reason":"r"}', YEAR, "duration_seconds must be a whole number"),
        ('{"duration_seconds":true,"reason":"r"}', YEAR, "duration_seconds must be a whole number"),
        ('{"duration_seconds":[5],"reason":"r"}', YEAR, "duration_seconds must be a whole number"),
        (
            '{"duration_seconds":Infinity,"reason":"r"}',
            YEAR,
            "duration_seconds must be a whole number",
        ),
        ('{"duration_seconds":NaN,"reason":"r"}', YEAR, "duration_seconds must be a whole number"),
        (
            '{"duration_seconds":0,"reason":"r"}',
            YEAR,
            f"duration_seconds must be between 1 and {YEAR_SECONDS}",
        ),
        (
            '{"duration_seconds":-5,"reason":"r"}',
            YEAR,
            f"duration_seconds must be between 1 and {YEAR_SECONDS}",
        ),
        (
            '{"duration_seconds":0.0,"reason":"r"}',
            YEAR,
            f"duration_seconds must be between 1 and {YEAR_SECONDS}",
        ),
        (
            f'{{"duration_seconds":{YEAR_SECONDS + 1},"reason":"r"}}',
            YEAR,
            f"duration_seconds must be between 1 and {YEAR_SECONDS}",
        ),
        (
            '{"duration_seconds":1e12,"reason":"r"}',
            YEAR,
            f"duration_seconds must be between 1 and {YEAR_SECONDS}",
        ),
        (
            '{"duration_seconds":11,"reason":"r"}',
            timedelta(seconds=10),
            "duration_seconds must be between 1 and 10",
        ),
        (
            '{"duration_seconds":2,"reason":"r"}',
            timedelta(seconds=1.9),
            "duration_seconds must be between 1 and 1",
        ),
        ('{"duration_seconds":5}', YEAR, "reason must be a non-blank string"),
        ('{"duration_seconds":5,"reason":null}', YEAR, "reason must be a non-blank string"),
        ('{"duration_seconds":5,"reason":""}', YEAR, "reason must be a non-blank string"),
        ('{"duration_seconds":5,"reason":"   "}', YEAR, "reason must be a non-blank string"),
        ('{"duration_seconds":5,"reason":7}', YEAR, "reason must be a non-blank string"),
        ('{"reason":"r"}', YEAR, "duration_seconds must be a whole number"),
    ],
)
def test_parse_durable_wait_rejects(arguments: str, max_wait: timedelta, reason: str) -> None:
    with pytest.raises(BuiltInToolArgumentError) as caught:
        parse_durable_wait(arguments, max_wait)
    assert str(caught.value) == f"invalid durable_wait arguments: {reason}"
