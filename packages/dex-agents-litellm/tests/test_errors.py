"""Bad input: provider errors, garbage streams and streams cut short give clear errors."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import litellm.exceptions
import pytest
from litellm_servers import (
    LITELLM_WARNINGS,
    RecordingWriter,
    Reply,
    ScriptedProvider,
    chat_sse,
    responses_sse,
    sse,
)

from dex_agents.builtin_loop import ModelRequest, ModelResponse, UserTextItem
from dex_agents.litellm import LiteLLMModelClient

pytestmark = LITELLM_WARNINGS

API = Literal["responses", "chat_completions"]
BOTH: list[API] = ["responses", "chat_completions"]
REQUEST = ModelRequest(instructions="", items=(UserTextItem(text="hi"),))


async def call(provider: ScriptedProvider, api: API) -> ModelResponse:
    model = LiteLLMModelClient(
        "openai/gpt-5-mini", api=api, api_base=f"{provider.url}/v1", api_key_provider=lambda: "k"
    )
    return await model.call_model(REQUEST, RecordingWriter())


@pytest.mark.parametrize("api", BOTH)
async def test_a_provider_error_raises_with_its_message_after_one_request(api: API) -> None:
    error = '{"error": {"message": "The server had an error", "type": "server_error"}}'
    with (
        ScriptedProvider([Reply([error], status=500, content_type="application/json")]) as p,
        pytest.raises(
            litellm.exceptions.InternalServerError, match="The server had an error"
        ) as info,
    ):
        await call(p, api)

    assert len(p.requests) == 1  # no retries of its own: the session retries RunModel
    assert f"model call to openai/gpt-5-mini through LiteLLM ({api})" in info.value.__notes__


@pytest.mark.parametrize("api", BOTH)
async def test_a_refused_request_raises_bad_request(api: API) -> None:
    error = '{"error": {"message": "Unsupported parameter: temperature", "type": "invalid"}}'
    with (
        ScriptedProvider([Reply([error], status=400, content_type="application/json")]) as p,
        pytest.raises(
            litellm.exceptions.BadRequestError, match="Unsupported parameter: temperature"
        ),
    ):
        await call(p, api)


GARBAGE = [
    Reply(["<html><body>502 Bad Gateway</body></html>"], content_type="text/html"),
    Reply([]),
    sse(['{"hello": "world"}', "[DONE]"]),
    sse(["{not json", "[DONE]"]),
]
GARBAGE_IDS = ["html", "empty", "not-a-model-stream", "invalid-json"]


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
async def test_a_chat_completions_reply_that_is_not_a_model_stream_raises(garbage: Reply) -> None:
    with (
        ScriptedProvider([garbage]) as provider,
        pytest.raises(Exception) as info,  # noqa: PT011 - the message is the point
    ):
        await call(provider, "chat_completions")

    message = str(info.value)
    assert (
        "gpt-5-mini (openai): the Chat Completions stream ended without a finish reason" in message
        or "Expecting property name enclosed in double quotes" in message  # invalid JSON
    )


@pytest.mark.parametrize("garbage", GARBAGE, ids=GARBAGE_IDS)
async def test_a_responses_reply_that_is_not_a_model_stream_raises(garbage: Reply) -> None:
    with (
        ScriptedProvider([garbage]) as provider,
        pytest.raises(Exception) as info,  # noqa: PT011 - the message is the point
    ):
        await call(provider, "responses")

    message = str(info.value)
    assert (
        "closed the responses stream before any terminal event" in message  # LiteLLM's check
        or "gpt-5-mini (openai): LiteLLM could not read the stream" in message
    )


async def test_a_chat_stream_that_breaks_off_raises() -> None:
    cut = chat_sse([{"role": "assistant", "content": "Half an ans"}])
    cut = Reply(cut.chunks[:1])  # the first delta, then the connection closes
    with (
        ScriptedProvider([cut]) as provider,
        pytest.raises(RuntimeError, match="ended without a finish reason"),
    ):
        await call(provider, "chat_completions")


async def test_a_responses_stream_that_breaks_off_raises() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Half"}],
    }
    with (
        ScriptedProvider([responses_sse([message], final=False)]) as provider,
        pytest.raises(litellm.exceptions.APIConnectionError, match="before any terminal event"),
    ):
        await call(provider, "responses")


async def test_a_failed_response_raises_with_the_providers_error() -> None:
    failed = sse(
        [
            {
                "type": "response.failed",
                "sequence_number": 0,
                "response": {
                    "id": "resp_1",
                    "object": "response",
                    "created_at": 1,
                    "status": "failed",
                    "model": "gpt-5-mini",
                    "output": [],
                    "error": {"code": "server_error", "message": "The model overloaded."},
                },
            }
        ],
        named=True,
    )
    # LiteLLM raises it as a mid-stream failure (a ServiceUnavailableError).
    with (
        ScriptedProvider([failed]) as provider,
        pytest.raises(litellm.exceptions.ServiceUnavailableError, match="The model overloaded"),
    ):
        await call(provider, "responses")


async def test_a_stored_item_that_is_not_json_raises() -> None:
    from dex_agents.builtin_loop import ModelOutputItem

    broken = ModelOutputItem(provider="openai", api="responses", item="{trunc", text="x")
    model = LiteLLMModelClient("openai/gpt-5-mini")
    request = ModelRequest(instructions="", items=(broken,))
    with pytest.raises(ValueError, match="stored openai responses output item is not JSON"):
        model.estimate_input_tokens(request)


@pytest.mark.parametrize("api", BOTH)
async def test_a_cancelled_call_stops_at_once(api: API) -> None:
    slow = responses_sse([]) if api == "responses" else chat_sse([{"content": "slow"}] * 5)
    with ScriptedProvider([Reply(slow.chunks, pause=2.0)]) as provider:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(call(provider, api), timeout=0.5)

    assert time.monotonic() - started < 2.0
    assert len(provider.requests) == 1
