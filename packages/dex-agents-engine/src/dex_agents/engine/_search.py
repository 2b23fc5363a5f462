"""The ``SearchFlows`` query language: a subset of Temporal's visibility filters.

Grammar::

    expr    := and_expr ("OR" and_expr)*
    and_expr:= term ("AND" term)*
    term    := "(" expr ")" | key op literal | key "IN" "(" literal ("," literal)* ")"
             | key "STARTS_WITH" literal
    op      := "=" | "!=" | ">" | ">=" | "<" | "<="

A missing key never matches. A keyword list (``ActiveStepTypes``) matches ``=`` when it
contains the literal. Datetime values compare as instants against RFC 3339 literals.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["SearchValue", "Timestamp", "parse_query", "parse_time"]


@dataclass(frozen=True)
class Timestamp:
    """A datetime search value, as seconds since the epoch."""

    seconds: float


SearchValue = str | int | float | bool | Timestamp | tuple[str, ...]
Literal = str | int | float | bool
Predicate = Callable[[Mapping[str, SearchValue]], bool]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<num>-?\d+(?:\.\d+)?)
      | (?P<op>!=|>=|<=|=|>|<)
      | (?P<punct>[(),])
      | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)


def _tokenize(query: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(query):
        if query[position:].strip() == "":
            break
        match = _TOKEN.match(query, position)
        if match is None:
            raise ValueError(f"invalid search query near {query[position : position + 20]!r}")
        kind = match.lastgroup
        assert kind is not None
        tokens.append((kind, match.group(kind)))
        position = match.end()
    return tokens


_OPERATORS: dict[str, Callable[[Any, Any], object]] = {
    "=": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


def parse_time(text: str) -> float | None:
    """An RFC 3339 / ISO 8601 instant as epoch seconds (naive means UTC), or ``None``."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _compare(value: SearchValue, op: str, literal: Literal) -> bool:
    if isinstance(value, tuple):
        contained = str(literal) in value
        if op == "=":
            return contained
        if op == "!=":
            return not contained
        return False
    left: object = value
    right: object = literal
    if isinstance(value, Timestamp):
        parsed = parse_time(literal) if isinstance(literal, str) else float(literal)
        if parsed is None:
            return False
        left, right = value.seconds, parsed
    elif isinstance(value, bool):
        if isinstance(literal, str):
            right = literal.lower() == "true"
    elif isinstance(value, (int, float)):
        if isinstance(literal, str):
            try:
                right = float(literal)
            except ValueError:
                return False
    else:
        right = str(literal)
    try:
        outcome = _OPERATORS[op](left, right)
    except TypeError:
        return False
    return bool(outcome)


class _Parser:
    def __init__(self, tokens: Sequence[tuple[str, str]]) -> None:
        self._tokens = tokens
        self._at = 0

    def _peek(self) -> tuple[str, str] | None:
        return self._tokens[self._at] if self._at < len(self._tokens) else None

    def _next(self) -> tuple[str, str]:
        token = self._peek()
        if token is None:
            raise ValueError("search query ends too early")
        self._at += 1
        return token

    def _keyword(self, word: str) -> bool:
        token = self._peek()
        if token is not None and token[0] == "word" and token[1].upper() == word:
            self._at += 1
            return True
        return False

    def parse(self) -> Predicate:
        predicate = self._or()
        if self._peek() is not None:
            raise ValueError(f"unexpected {self._peek()[1]!r} in search query")  # type: ignore[index]
        return predicate

    def _or(self) -> Predicate:
        parts = [self._and()]
        while self._keyword("OR"):
            parts.append(self._and())
        if len(parts) == 1:
            return parts[0]
        return lambda attrs: any(part(attrs) for part in parts)

    def _and(self) -> Predicate:
        parts = [self._term()]
        while self._keyword("AND"):
            parts.append(self._term())
        if len(parts) == 1:
            return parts[0]
        return lambda attrs: all(part(attrs) for part in parts)

    def _literal(self) -> Literal:
        kind, text = self._next()
        if kind == "str":
            return re.sub(r"\\(.)", r"\1", text[1:-1])
        if kind == "num":
            return float(text) if "." in text else int(text)
        if kind == "word" and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValueError(f"expected a literal in search query, got {text!r}")

    def _term(self) -> Predicate:
        kind, text = self._next()
        if kind == "punct" and text == "(":
            inner = self._or()
            if self._next() != ("punct", ")"):
                raise ValueError("missing ')' in search query")
            return inner
        if kind != "word":
            raise ValueError(f"expected a search attribute name, got {text!r}")
        key = text
        if self._keyword("IN"):
            if self._next() != ("punct", "("):
                raise ValueError("expected '(' after IN")
            options = [self._literal()]
            while self._peek() == ("punct", ","):
                self._at += 1
                options.append(self._literal())
            if self._next() != ("punct", ")"):
                raise ValueError("missing ')' after IN list")
            return lambda attrs: (
                key in attrs and any(_compare(attrs[key], "=", option) for option in options)
            )
        if self._keyword("STARTS_WITH"):
            prefix = str(self._literal())
            return lambda attrs: key in attrs and str(attrs[key]).startswith(prefix)
        op_kind, op = self._next()
        if op_kind != "op":
            raise ValueError(f"expected a comparison after {key!r}, got {op!r}")
        literal = self._literal()
        return lambda attrs: key in attrs and _compare(attrs[key], op, literal)


def parse_query(query: str) -> Predicate:
    """Compile a query into a predicate over a run's search attributes.

    Raises:
        ValueError: The query is not in the supported grammar.
    """
    if not query.strip():
        return lambda _attrs: True
    return _Parser(_tokenize(query)).parse()
