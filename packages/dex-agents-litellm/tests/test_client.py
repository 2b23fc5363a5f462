"""LiteLLMModelClient's options, rules and estimates, without a server."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import pytest
from litellm_servers import LITELLM_WARNINGS, RecordingWriter

import dex_agents.litellm
from dex_agents.builtin_loop import (
    ModelClient,
    ModelOutputItem,
    ModelRequest,
    ModelToolCall,
    ModelToolDefinition,
    ToolResultItem,
    UserTextItem,
    supports_forced_tool_choice,
)
from dex_agents.litellm import LiteLLMModelClient
from dex_agents.litellm._common import DeltaBatcher

pytestmark = LITELLM_WARNINGS


def test_exports() -> None:
    assert dex_agents.litellm.__all__ == ["ApiKeyProvider", "LiteLLMModelClient"]
    assert isinstance(LiteLLMModelClient("openai/gpt-5-mini"), ModelClient)


def test_missing_litellm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # what a missing package looks like
    monkeypatch.delitem(sys.modules, "dex_agents.litellm._dependency")

    with pytest.raises(ImportError, match=r"pip install 'dex-agents\[litellm\]'") as info:
        importlib.import_module("dex_agents.litellm._dependency")

    assert isinstance(info.value.__cause__, ImportError)


@pytest.mark.parametrize(
    ("model", "api", "provider"),
    [
        ("openai/gpt-5-mini", "responses", "openai"),
        ("gpt-5", "responses", "openai"),
        ("anthropic/claude-sonnet-4-5", "chat_completions", "anthropic"),
        ("gemini/gemini-2.5-flash", "chat_completions", "gemini"),
        ("hosted_vllm/my-model", "chat_completions", "hosted_vllm"),
    ],
)
def test_the_responses_api_for_openai_chat_completions_for_the_rest(
    model: str, api: str, provider: str
) -> None:
    client = LiteLLMModelClient(model)
    assert (client.model, client.api, client.provider) == (model, api, provider)


def test_api_can_be_chosen() -> None:
    client = LiteLLMModelClient("openai/local", api="chat_completions", api_base="http://x/v1")
    assert client.api == "chat_completions"
    assert repr(client) == "LiteLLMModelClient('openai/local', api='chat_completions')"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"model": ""}, "model must name a LiteLLM model"),
        ({"api": "completions"}, "api must be 'responses' or 'chat_completions'"),
        ({"request_options": {"api_key": "sk"}}, "use the api_key_provider parameter"),
        ({"request_options": {"api_base": "http://x"}}, "use the api_base parameter"),
        ({"request_options": {"stream": False}}, r"\['stream'\]: the client sets them"),
        ({"request_options": {"tools": [], "store": True}}, r"\['store', 'tools'\]"),
    ],
)
def test_bad_options_are_refused(arguments: dict[str, Any], message: str) -> None:
    options = {"model": "openai/gpt-5-mini", **arguments}
    with pytest.raises(ValueError, match=message):
        LiteLLMModelClient(**options)


def test_a_model_litellm_cannot_route_is_refused() -> None:
    with pytest.raises(ValueError, match="LiteLLM cannot route model 'no-such-model-xyz'"):
        LiteLLMModelClient("no-such-model-xyz")


@pytest.mark.parametrize("key", ["api_key", "api_base", "aws_secret_access_key"])
async def test_settings_never_carry_credentials(key: str) -> None:
    client = LiteLLMModelClient("openai/gpt-5-mini")
    request = ModelRequest(instructions="", items=(), settings={key: "from-session-settings"})
    with pytest.raises(ValueError, match=f"must not carry credentials or endpoints.*{key}"):
        await client.call_model(request, RecordingWriter())


async def test_settings_cannot_set_what_the_client_sets() -> None:
    client = LiteLLMModelClient("openai/gpt-5-mini")
    request = ModelRequest(instructions="", items=(), settings={"store": True})
    with pytest.raises(ValueError, match=r"must not set \['store'\]"):
        await client.call_model(request, RecordingWriter())


@pytest.mark.parametrize("key", ["", None])
async def test_an_api_key_provider_without_a_key_fails_the_call(key: str | None) -> None:
    async def provide() -> str | None:
        return key

    client = LiteLLMModelClient("openai/gpt-5-mini", api_key_provider=provide)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="api_key_provider returned no API key"):
        await client.call_model(ModelRequest(instructions="", items=()), RecordingWriter())


THINKING = {"thinking": {"type": "enabled", "budget_tokens": 2048}}


@pytest.mark.parametrize(
    ("model", "settings", "options", "forced"),
    [
        ("anthropic/claude-sonnet-4-5", {}, {}, True),
        ("anthropic/claude-sonnet-4-5", THINKING, {}, False),
        ("anthropic/claude-sonnet-4-5", {}, THINKING, False),
        ("anthropic/claude-sonnet-4-5", {"thinking": {"type": "adaptive"}}, {}, False),
        ("anthropic/claude-sonnet-4-5", {"thinking": {"type": "disabled"}}, THINKING, True),
        ("anthropic/claude-sonnet-4-5", {"reasoning_effort": "low"}, {}, False),
        ("anthropic/claude-sonnet-4-5", {"reasoning_effort": "none"}, {}, True),
        ("anthropic/claude-opus-5-5", {}, {}, False),
        ("anthropic/claude-sonnet-5.5", {}, {}, False),
        ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", THINKING, {}, False),
        ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", {}, {}, True),
        ("vertex_ai/claude-sonnet-4-5", {"reasoning_effort": "high"}, {}, False),
        ("vertex_ai/gemini-2.5-pro", {"reasoning_effort": "high"}, {}, True),
        ("gemini/gemini-2.5-flash", THINKING, {}, True),
        ("openai/gpt-5-mini", {"reasoning_effort": "high"}, {}, True),
    ],
)
def test_forced_tool_choice_rule(
    model: str,
    settings: dict[str, Any],
    options: dict[str, Any],
    forced: bool,  # noqa: FBT001 - a parametrize column
) -> None:
    client = LiteLLMModelClient(model, request_options=options)
    assert client.supports_forced_tool_choice(settings) is forced
    assert supports_forced_tool_choice(client, settings) is forced


def request_with_history(size: int) -> ModelRequest:
    return ModelRequest(
        instructions="Be brief.",
        items=(
            UserTextItem(text="x" * size),
            ModelOutputItem(
                provider="scripted",
                api="scripted",
                item="{}",
                text="Looking.",
                tool_call=ModelToolCall(tool_call_id="c1", name="lookup", arguments="{}"),
            ),
            ToolResultItem(tool_call_id="c1", tool_name="lookup", output="é" * size),
        ),
        tools=(ModelToolDefinition(name="lookup", description="Look up.", parameters={}),),
    )


@pytest.mark.parametrize("model", ["openai/gpt-5-mini", "anthropic/claude-sonnet-4-5"])
def test_estimate_counts_three_bytes_of_the_request_per_token(model: str) -> None:
    client = LiteLLMModelClient(model)
    small = client.estimate_input_tokens(request_with_history(0))
    large = client.estimate_input_tokens(request_with_history(3000))

    assert small > 0
    # 3,000 one-byte characters and 3,000 two-byte ones: 9,000 bytes, 3,000 tokens.
    assert large - small == 3000


def test_estimate_of_a_replayed_item_counts_its_stored_json() -> None:
    client = LiteLLMModelClient("openai/gpt-5-mini")
    blob = {"type": "reasoning", "id": "rs_1", "encrypted_content": "A" * 6000, "summary": []}
    item = ModelOutputItem(provider="openai", api="responses", item=json.dumps(blob))
    bare = client.estimate_input_tokens(ModelRequest(instructions="", items=()))
    assert client.estimate_input_tokens(ModelRequest(instructions="", items=(item,))) >= (
        bare + 2000
    )


def test_deltas_are_batched_by_size_and_kind() -> None:
    writer = RecordingWriter()
    batcher = DeltaBatcher(writer, min_chars=10, max_delay=60)
    for token in ["Let", " me", " think"]:
        batcher.reasoning(token)
    batcher.text("")
    for token in ["The", " answer", " is", " 42", "."]:
        batcher.text(token)
    batcher.flush()
    batcher.flush()

    assert writer.deltas == [
        ("reasoning", "Let me think"),
        ("text", "The answer"),
        ("text", " is 42."),
    ]


def test_deltas_are_written_at_once_when_the_batch_is_old() -> None:
    writer = RecordingWriter()
    batcher = DeltaBatcher(writer, min_chars=1000, max_delay=0)
    batcher.text("a")
    batcher.text("b")
    assert writer.deltas == [("text", "a"), ("text", "b")]
