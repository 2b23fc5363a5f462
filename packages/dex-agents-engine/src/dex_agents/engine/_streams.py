"""Streams: best-effort, resumable message logs per ``(flow_type, stream_name)`` scope.

Streams are independent of flow state. Each scope holds messages of many flow ids and a
shared byte budget; a write that would exceed it trims the oldest messages of the scope.
A resume token names one message; reading with it returns the next retained message of
the same flow id.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import sqlite3
import time
from collections import deque
from dataclasses import dataclass, field

import grpc
from dex.dexpb import dex_pb2 as pb

from dex_agents.engine._errors import ServiceError, bad_request, long_poll_timeout

__all__ = ["StreamStore"]

_LOGGER = logging.getLogger(__name__)
_OVERHEAD_BYTES = 64
_MAX_MESSAGE_BYTES = 1024 * 1024
_MAX_PAGE_SIZE = 1000


@dataclass(frozen=True)
class _Message:
    seq: int
    flow_id: str
    created_ms: int
    source: str
    value: bytes
    charged: int


@dataclass
class _Scope:
    messages: deque[_Message] = field(default_factory=deque)
    charged: int = 0
    next_seq: int = 1


def _scope_key(flow_type: str, stream_name: str) -> str:
    return f"{flow_type}\x00{stream_name}"


class StreamStore:
    """Stream messages in memory, mirrored to SQLite so they outlive an engine restart."""

    def __init__(self, db: sqlite3.Connection, max_wait_seconds: float) -> None:
        self._db = db
        self._max_wait = max_wait_seconds
        self._scopes: dict[str, _Scope] = {}
        self._waiters: dict[tuple[str, str], asyncio.Event] = {}
        for scope, seq, flow_id, created_ms, source, value, charged in db.execute(
            "SELECT scope, seq, flow_id, created_ms, source, value, charged "
            "FROM stream_messages ORDER BY scope, seq"
        ):
            entry = self._scopes.setdefault(scope, _Scope())
            entry.messages.append(_Message(seq, flow_id, created_ms, source, bytes(value), charged))
            entry.charged += charged
            entry.next_seq = seq + 1

    def _token(self, flow_type: str, stream_name: str, message: _Message) -> str:
        raw = json.dumps(
            {"v": 1, "f": message.flow_id, "t": flow_type, "s": stream_name, "i": message.seq},
            separators=(",", ":"),
        )
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    def _position(self, token: str, flow_id: str, flow_type: str, stream_name: str) -> int:
        if not token:
            return 0
        try:
            padded = token + "=" * (-len(token) % 4)
            data = json.loads(base64.urlsafe_b64decode(padded.encode()))
            position = int(data["i"])
            scope = (data["v"], data["f"], data["t"], data["s"])
        except (ValueError, KeyError, TypeError):
            raise bad_request("malformed Stream resume token") from None
        if scope != (1, flow_id, flow_type, stream_name):
            raise bad_request("the resume token belongs to another Stream or flow")
        return position

    def _wire(self, flow_type: str, stream_name: str, message: _Message) -> pb.StreamMessage:
        wire = pb.StreamMessage(
            value=pb.Value.FromString(message.value),
            resume_token=self._token(flow_type, stream_name, message),
            source=message.source,
        )
        wire.created_time.FromMilliseconds(message.created_ms)
        return wire

    def append(
        self,
        *,
        flow_id: str,
        flow_type: str,
        stream_name: str,
        capacity: int,
        value: pb.Value,
        source: str,
    ) -> None:
        """Append a message, trimming the oldest ones of the scope to fit its budget."""
        if not flow_id or not flow_type or not stream_name:
            raise bad_request("flow_id, flow_type and stream_name must not be empty")
        if capacity <= 0:
            raise bad_request("stream_capacity_bytes must be positive")
        if value.WhichOneof("kind") is None:
            raise bad_request("a Stream message needs a value")
        payload = value.SerializeToString()
        charged = len(payload) + len(flow_id) + _OVERHEAD_BYTES
        if charged > capacity or len(payload) > _MAX_MESSAGE_BYTES:
            raise ServiceError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"a {len(payload)}-byte message does not fit Stream {stream_name!r}",
            )
        key = _scope_key(flow_type, stream_name)
        scope = self._scopes.setdefault(key, _Scope())
        message = _Message(
            scope.next_seq, flow_id, int(time.time() * 1000), source, payload, charged
        )
        scope.next_seq += 1
        trimmed: list[tuple[str, int]] = []
        if scope.charged + charged > capacity:
            while scope.messages and scope.charged + charged > capacity * 0.8:
                oldest = scope.messages.popleft()
                scope.charged -= oldest.charged
                trimmed.append((key, oldest.seq))
        scope.messages.append(message)
        scope.charged += charged
        with self._db:
            self._db.executemany("DELETE FROM stream_messages WHERE scope=? AND seq=?", trimmed)
            self._db.execute(
                "INSERT INTO stream_messages VALUES(?,?,?,?,?,?,?)",
                (key, message.seq, flow_id, message.created_ms, source, payload, charged),
            )
        event = self._waiters.pop((key, flow_id), None)
        if event is not None:
            event.set()

    def append_quietly(self, **kwargs: object) -> None:
        """Append from a Step's stream frame: a failure is logged, never raised."""
        try:
            self.append(**kwargs)  # type: ignore[arg-type]
        except ServiceError as error:
            _LOGGER.warning("dropped a Step's Stream write: %s", error.message)

    def _after(self, key: str, flow_id: str, position: int) -> _Message | None:
        scope = self._scopes.get(key)
        if scope is None:
            return None
        for message in scope.messages:
            if message.seq > position and message.flow_id == flow_id:
                return message
        return None

    async def read(self, request: pb.ReadStreamRequest) -> pb.ReadStreamResponse:
        """The first retained message after the token, waiting for one if needed."""
        position = self._position(
            request.resume_token, request.flow_id, request.flow_type, request.stream_name
        )
        key = _scope_key(request.flow_type, request.stream_name)
        wait = request.wait_time_seconds if request.wait_time_seconds > 0 else self._max_wait
        deadline = time.monotonic() + min(wait, self._max_wait)
        while True:
            message = self._after(key, request.flow_id, position)
            if message is not None:
                wire = self._wire(request.flow_type, request.stream_name, message)
                return pb.ReadStreamResponse(message=wire)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise long_poll_timeout(f"Stream {request.stream_name!r}")
            event = self._waiters.setdefault((key, request.flow_id), asyncio.Event())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), remaining)

    def list(self, request: pb.ListStreamMessagesRequest) -> pb.ListStreamMessagesResponse:
        """A page of messages of one flow id, newest first."""
        if request.page_size < 1 or request.page_size > _MAX_PAGE_SIZE:
            raise bad_request(f"page_size must be between 1 and {_MAX_PAGE_SIZE}")
        anchor = (
            self._position(
                request.before_page_token, request.flow_id, request.flow_type, request.stream_name
            )
            if request.before_page_token
            else None
        )
        scope = self._scopes.get(_scope_key(request.flow_type, request.stream_name))
        older = [
            message
            for message in (scope.messages if scope else ())
            if message.flow_id == request.flow_id and (anchor is None or message.seq < anchor)
        ]
        page = list(reversed(older))[: request.page_size]
        response = pb.ListStreamMessagesResponse(
            messages=[self._wire(request.flow_type, request.stream_name, m) for m in page]
        )
        if len(older) > len(page):
            response.next_page_token = self._token(request.flow_type, request.stream_name, page[-1])
        return response
