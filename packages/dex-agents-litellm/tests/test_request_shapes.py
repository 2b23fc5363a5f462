"""The exact requests LiteLLM sends for the client, and what it makes of the streams back.

Each test points the client at a scripted provider on 127.0.0.1 (``api_base``), so LiteLLM
builds and sends its real request for the provider (OpenAI Responses API, Anthropic
Messages, Chat Completions) and parses a real stream, with no network.
"""

from __future__ import annotations

import json
from typing import Any

from litellm_servers import (
    LITELLM_WARNINGS,
    RESPONSES_USAGE,
    RecordingWriter,
    ScriptedProvider,
    anthropic_sse,
    chat_sse,
    responses_sse,
)

from dex_agents import AgentUsage, ModelCallMetadata
from dex_agents.builtin_loop import (
    ModelOutputItem,
    ModelRequest,
    ModelToolCall,
    ModelToolDefinition,
    ToolResultItem,
    UserTextItem,
)
from dex_agents.litellm import LiteLLMModelClient

pytestmark = LITELLM_WARNINGS

LOOKUP = ModelToolDefinition(
    name="lookup",
    description="Look a word up.",
    parameters={"type": "object", "properties": {"word": {"type": "string"}}},
)
QUESTION = UserTextItem(text="What does 'dex' mean?")

# --- OpenAI Responses API ------------------------------------------------------------------

REASONING = {
    "id": "rs_01",
    "type": "reasoning",
    "summary": [
        {"type": "summary_text", "text": "Looking it up."},
        {"type": "summary_text", "text": "Then answering."},
    ],
    "encrypted_content": "gAAAAB-opaque==",
}
MESSAGE = {
    "id": "msg_01",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}],
}
FUNCTION_CALL = {
    "id": "fc_01",
    "type": "function_call",
    "status": "completed",
    "arguments": '{"word": "dex"}',
    "call_id": "call_01",
    "name": "lookup",
}
RESPONSE_DELTAS: list[dict[str, Any]] = [
    {
        "type": "response.reasoning_summary_text.delta",
        "item_id": "rs_01",
        "output_index": 0,
        "summary_index": 0,
        "delta": "Looking it up.",
    },
    {
        "type": "response.reasoning_summary_text.delta",
        "item_id": "rs_01",
        "output_index": 0,
        "summary_index": 1,
        "delta": "Then answering.",
    },
    {
        "type": "response.output_text.delta",
        "item_id": "msg_01",
        "output_index": 1,
        "content_index": 0,
        "delta": "Let me check.",
        "logprobs": [],
    },
]


def openai_client(provider: ScriptedProvider) -> LiteLLMModelClient:
    return LiteLLMModelClient(
        "openai/gpt-5-mini",
        api_base=f"{provider.url}/v1",
        api_key_provider=lambda: "sk-from-provider",
    )


async def test_responses_api_request_stream_and_byte_exact_replay() -> None:
    with ScriptedProvider(
        [
            responses_sse([REASONING, MESSAGE, FUNCTION_CALL], RESPONSE_DELTAS),
            responses_sse([{**MESSAGE, "id": "msg_02"}]),
        ]
    ) as provider:
        model = openai_client(provider)
        assert model.api == "responses"
        writer = RecordingWriter()
        request = ModelRequest(
            instructions="Answer briefly.",
            items=(QUESTION,),
            tools=(LOOKUP,),
            settings={"max_tokens": 300, "reasoning_effort": "low"},
        )

        first = await model.call_model(request, writer)

        [sent] = provider.requests
        assert sent.path == "/v1/responses"
        assert sent.headers["authorization"] == "Bearer sk-from-provider"
        assert sent.body == {
            "model": "gpt-5-mini",
            "input": [{"role": "user", "content": "What does 'dex' mean?"}],
            "include": ["reasoning.encrypted_content"],
            "instructions": "Answer briefly.",
            "max_output_tokens": 300,
            "reasoning": {"effort": "low", "summary": "auto"},
            "store": False,
            "stream": True,
            "tools": [
                {
                    "type": "function",
                    "name": "lookup",
                    "description": "Look a word up.",
                    "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
                    "strict": False,
                }
            ],
        }
        # Each output item is the provider's JSON object, field order kept.
        assert [item.item for item in first.output] == [
            json.dumps(item, separators=(",", ":")) for item in (REASONING, MESSAGE, FUNCTION_CALL)
        ]
        assert [(item.provider, item.api) for item in first.output] == [("openai", "responses")] * 3
        assert [(item.text, item.reasoning) for item in first.output] == [
            (None, "Looking it up.\n\nThen answering."),
            ("Let me check.", None),
            (None, None),
        ]
        assert first.tool_calls == [
            ModelToolCall(tool_call_id="call_01", name="lookup", arguments='{"word": "dex"}')
        ]
        assert writer.deltas == [
            ("reasoning", "Looking it up.\n\nThen answering."),
            ("text", "Let me check."),
        ]
        assert first.usage == AgentUsage(
            input_tokens=40,
            output_tokens=12,
            total_tokens=52,
            cached_input_tokens=8,
            reasoning_tokens=6,
            model_calls=1,
        )
        assert first.metadata == ModelCallMetadata(
            request_model="gpt-5-mini",
            response_model="gpt-5-mini-2025-08-07",
            provider_name="openai",
            response_id="resp_abc123",
            finish_reasons=("tool_calls",),
        )

        result = ToolResultItem(tool_call_id="call_01", tool_name="lookup", output="a module")
        second = await model.call_model(
            ModelRequest(
                instructions="Answer briefly.",
                items=(QUESTION, *first.output, result),
                tools=(LOOKUP,),
            ),
            RecordingWriter(),
        )

        replayed = provider.requests[1].body["input"]
        assert replayed == [
            {"role": "user", "content": "What does 'dex' mean?"},
            REASONING,
            MESSAGE,
            FUNCTION_CALL,
            {"type": "function_call_output", "call_id": "call_01", "output": "a module"},
        ]
        assert second.text == "Let me check."
        assert second.metadata is not None
        assert second.metadata.finish_reasons == ("stop",)


async def test_responses_api_reduces_another_providers_items_to_text_and_tool_calls() -> None:
    anthropic_item = ModelOutputItem(
        provider="anthropic",
        api="chat_completions",
        item='{"role":"assistant","content":"Checking.","thinking_blocks":[]}',
        text="Checking.",
        reasoning="Private thoughts.",
        tool_call=ModelToolCall(tool_call_id="toolu_01", name="lookup", arguments="{}"),
    )
    scripted_reasoning = ModelOutputItem(
        provider="scripted", api="scripted", item="{}", reasoning="dropped"
    )
    with ScriptedProvider([responses_sse([MESSAGE])]) as provider:
        await openai_client(provider).call_model(
            ModelRequest(
                instructions="",
                items=(
                    QUESTION,
                    scripted_reasoning,
                    anthropic_item,
                    ToolResultItem(tool_call_id="toolu_01", tool_name="lookup", output="ok"),
                ),
            ),
            RecordingWriter(),
        )

    body = provider.requests[0].body
    assert "instructions" not in body
    assert "tools" not in body
    assert body["input"] == [
        {"role": "user", "content": "What does 'dex' mean?"},
        {"role": "assistant", "content": "Checking."},
        {"type": "function_call", "call_id": "toolu_01", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "toolu_01", "output": "ok"},
    ]


async def test_responses_api_translates_tool_choice_and_keeps_an_incomplete_response() -> None:
    with ScriptedProvider([responses_sse([MESSAGE], status="incomplete")]) as provider:
        response = await openai_client(provider).call_model(
            ModelRequest(
                instructions="x",
                items=(QUESTION,),
                tools=(LOOKUP,),
                settings={
                    "tool_choice": {"type": "function", "function": {"name": "lookup"}},
                    "reasoning": {"summary": "concise"},
                },
            ),
            RecordingWriter(),
        )

    body = provider.requests[0].body
    assert body["tool_choice"] == {"type": "function", "name": "lookup"}
    assert body["reasoning"] == {"summary": "concise"}
    assert response.text == "Let me check."
    assert response.metadata is not None
    assert response.metadata.finish_reasons == ("max_output_tokens",)
    assert response.usage.input_tokens == RESPONSES_USAGE["input_tokens"]


# --- Anthropic, through Chat Completions -----------------------------------------------------

THINKING: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "", "signature": ""},
    {"type": "thinking_delta", "thinking": "The user asks "},
    {"type": "thinking_delta", "thinking": "about dex."},
    {"type": "signature_delta", "signature": "EqQBCkgIARABGAIiQL-signed=="},
]
REDACTED: list[dict[str, Any]] = [{"type": "redacted_thinking", "data": "EmwKAhgBEgy-redacted=="}]
TEXT: list[dict[str, Any]] = [
    {"type": "text", "text": ""},
    {"type": "text_delta", "text": "Let me "},
    {"type": "text_delta", "text": "check."},
]
TOOL_USE_1: list[dict[str, Any]] = [
    {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {}},
    {"type": "input_json_delta", "partial_json": '{"word": '},
    {"type": "input_json_delta", "partial_json": '"dex"}'},
]
TOOL_USE_2: list[dict[str, Any]] = [
    {"type": "tool_use", "id": "toolu_02", "name": "lookup", "input": {}},
    {"type": "input_json_delta", "partial_json": '{"word": "agent"}'},
]
SIGNED_BLOCKS = [
    {
        "type": "thinking",
        "thinking": "The user asks about dex.",
        "signature": "EqQBCkgIARABGAIiQL-signed==",
    },
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy-redacted=="},
]


async def test_anthropic_thinking_blocks_keep_their_signatures_and_replay_unchanged() -> None:
    async def key() -> str:
        return "sk-ant-from-provider"

    with ScriptedProvider(
        [
            anthropic_sse(
                [THINKING, REDACTED, TEXT, TOOL_USE_1, TOOL_USE_2], stop_reason="tool_use"
            ),
            anthropic_sse([[{"type": "text", "text": "A module."}]], stop_reason="end_turn"),
        ]
    ) as provider:
        model = LiteLLMModelClient(
            "anthropic/claude-sonnet-4-5",
            api_base=provider.url,
            api_key_provider=key,
            request_options={"thinking": {"type": "enabled", "budget_tokens": 1024}},
        )
        assert model.api == "chat_completions"
        writer = RecordingWriter()
        request = ModelRequest(
            instructions="Answer briefly.",
            items=(QUESTION,),
            tools=(LOOKUP,),
            settings={"max_tokens": 2048},
        )

        first = await model.call_model(request, writer)

        sent = provider.requests[0]
        assert sent.path == "/v1/messages"
        assert sent.headers["x-api-key"] == "sk-ant-from-provider"
        assert sent.body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
        assert sent.body["system"] == [{"type": "text", "text": "Answer briefly."}]
        assert writer.joined("reasoning") == "The user asks about dex."
        assert writer.joined("text") == "Let me check."
        assert writer.deltas[0][0] == "reasoning"
        # One item per tool call; the first holds the message and its thinking blocks.
        head, second_call = first.output
        assert json.loads(head.item) == {
            "role": "assistant",
            "content": "Let me check.",
            "reasoning_content": "The user asks about dex.",
            "thinking_blocks": SIGNED_BLOCKS,
            "tool_calls": [
                {
                    "id": "toolu_01",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"word": "dex"}'},
                }
            ],
        }
        assert json.loads(second_call.item) == {
            "tool_calls": [
                {
                    "id": "toolu_02",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"word": "agent"}'},
                }
            ]
        }
        assert (head.text, head.reasoning) == ("Let me check.", "The user asks about dex.")
        assert (second_call.text, second_call.reasoning) == (None, None)
        assert [call.tool_call_id for call in first.tool_calls] == ["toolu_01", "toolu_02"]
        assert first.usage.model_calls == 1
        assert first.usage.output_tokens == 25
        assert first.usage.cached_input_tokens == 10
        assert first.metadata is not None
        assert first.metadata.provider_name == "anthropic"
        assert first.metadata.request_model == "claude-sonnet-4-5"
        assert first.metadata.finish_reasons == ("tool_calls",)

        results = tuple(
            ToolResultItem(tool_call_id=call.tool_call_id, tool_name="lookup", output=output)
            for call, output in zip(first.tool_calls, ["a module", "a runner"], strict=True)
        )
        second = await model.call_model(
            ModelRequest(
                instructions="Answer briefly.",
                items=(QUESTION, *first.output, *results),
                tools=(LOOKUP,),
                settings={"max_tokens": 2048},
            ),
            RecordingWriter(),
        )

    assert second.text == "A module."
    assert provider.requests[1].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What does 'dex' mean?"}]},
        {
            "role": "assistant",
            "content": [
                *SIGNED_BLOCKS,
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"word": "dex"}},
                {
                    "type": "tool_use",
                    "id": "toolu_02",
                    "name": "lookup",
                    "input": {"word": "agent"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "a module"},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "a runner"},
            ],
        },
    ]


async def test_anthropic_gets_openai_items_as_text_and_tool_calls_without_reasoning() -> None:
    openai_items = (
        ModelOutputItem(
            provider="openai",
            api="responses",
            item=json.dumps(REASONING),
            reasoning="Looking it up.",
        ),
        ModelOutputItem(provider="openai", api="responses", item="{}", text="Let me check."),
        ModelOutputItem(
            provider="openai",
            api="responses",
            item="{}",
            tool_call=ModelToolCall(tool_call_id="call_01", name="lookup", arguments="{bad"),
        ),
    )
    with ScriptedProvider(
        [anthropic_sse([[{"type": "text", "text": "Done."}]], stop_reason="end_turn")]
    ) as provider:
        model = LiteLLMModelClient(
            "anthropic/claude-sonnet-4-5", api_base=provider.url, api_key_provider=lambda: "k"
        )
        await model.call_model(
            ModelRequest(
                instructions="",
                items=(
                    QUESTION,
                    *openai_items,
                    ToolResultItem(tool_call_id="call_01", tool_name="lookup", output="invalid"),
                ),
                tools=(LOOKUP,),
            ),
            RecordingWriter(),
        )

    messages = provider.requests[0].body["messages"]
    assert messages[1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                # Arguments that are not a JSON object replay as {} to Anthropic.
                {"type": "tool_use", "id": "call_01", "name": "lookup", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_01", "content": "invalid"}],
        },
    ]


# --- Chat Completions (OpenAI-compatible) ----------------------------------------------------


def chat_client(provider: ScriptedProvider) -> LiteLLMModelClient:
    return LiteLLMModelClient(
        "openai/local-model",
        api="chat_completions",
        api_base=f"{provider.url}/v1",
        api_key_provider=lambda: "sk-local",
    )


async def test_chat_completions_streams_and_merges_tool_calls_back_into_one_message() -> None:
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": "Two "},
        {"content": "lookups."},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"wo'},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": 'rd": "a"}'}}]},
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"word": '},
                }
            ]
        },
        # The model broke off its JSON: the text passes through as it is.
        {"tool_calls": [{"index": 1, "function": {"arguments": '"b'}}]},
    ]
    with ScriptedProvider(
        [chat_sse(deltas, finish_reason="tool_calls"), chat_sse([{"content": "ok"}])]
    ) as provider:
        model = chat_client(provider)
        writer = RecordingWriter()
        first = await model.call_model(
            ModelRequest(instructions="Be brief.", items=(QUESTION,), tools=(LOOKUP,)), writer
        )

        sent = provider.requests[0]
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == "Bearer sk-local"
        assert sent.body == {
            "model": "local-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What does 'dex' mean?"},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": "lookup",
                        "description": "Look a word up.",
                        "parameters": {
                            "type": "object",
                            "properties": {"word": {"type": "string"}},
                        },
                    },
                }
            ],
        }
        assert writer.deltas == [("text", "Two lookups.")]
        assert first.text == "Two lookups."
        assert first.tool_calls == [
            ModelToolCall(tool_call_id="call_a", name="lookup", arguments='{"word": "a"}'),
            ModelToolCall(tool_call_id="call_b", name="lookup", arguments='{"word": "b'),
        ]
        assert first.usage == AgentUsage(
            input_tokens=21,
            output_tokens=9,
            total_tokens=30,
            cached_input_tokens=5,
            reasoning_tokens=2,
            model_calls=1,
        )
        assert first.metadata is not None
        assert first.metadata.response_id == "chatcmpl-7"
        assert first.metadata.finish_reasons == ("tool_calls",)

        results = tuple(
            ToolResultItem(tool_call_id=call.tool_call_id, tool_name="lookup", output="r")
            for call in first.tool_calls
        )
        await model.call_model(
            ModelRequest(
                instructions="Be brief.", items=(QUESTION, *first.output, *results), tools=()
            ),
            RecordingWriter(),
        )

    assert provider.requests[1].body["messages"][2:] == [
        {
            "role": "assistant",
            "content": "Two lookups.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"word": "a"}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"word": "b'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "r"},
        {"role": "tool", "tool_call_id": "call_b", "content": "r"},
    ]
    assert "tools" not in provider.requests[1].body


async def test_chat_completions_streams_reasoning_content_and_keeps_it() -> None:
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "reasoning_content": "Think"},
        {"reasoning_content": "ing."},
        {"content": "Answer."},
    ]
    with ScriptedProvider([chat_sse(deltas)]) as provider:
        writer = RecordingWriter()
        response = await chat_client(provider).call_model(
            ModelRequest(instructions="", items=(QUESTION,)), writer
        )

    [item] = response.output
    assert writer.deltas == [("reasoning", "Thinking."), ("text", "Answer.")]
    assert (item.text, item.reasoning) == ("Answer.", "Thinking.")
    assert json.loads(item.item) == {
        "role": "assistant",
        "content": "Answer.",
        "reasoning_content": "Thinking.",
    }
    assert provider.requests[0].body["messages"] == [
        {"role": "user", "content": "What does 'dex' mean?"}
    ]


async def test_chat_settings_tool_settings_are_left_out_of_a_call_without_tools() -> None:
    with ScriptedProvider([chat_sse([{"content": "Summary."}])]) as provider:
        await chat_client(provider).call_model(
            ModelRequest(
                instructions="Summarize.",
                items=(QUESTION,),
                settings={
                    "tool_choice": "required",
                    "parallel_tool_calls": False,
                    "seed": 3,
                    "max_output_tokens": 50,
                },
            ),
            RecordingWriter(),
        )

    body = provider.requests[0].body
    assert "tool_choice" not in body
    assert "parallel_tool_calls" not in body
    assert (body["seed"], body["max_tokens"]) == (3, 50)
    assert "max_output_tokens" not in body


async def test_anthropic_thinking_then_a_tool_call_replays_without_an_empty_text_block() -> None:
    with ScriptedProvider(
        [
            anthropic_sse([THINKING, TOOL_USE_1], stop_reason="tool_use"),
            anthropic_sse([[{"type": "text", "text": "A module."}]], stop_reason="end_turn"),
        ]
    ) as provider:
        model = LiteLLMModelClient(
            "anthropic/claude-sonnet-4-5", api_base=provider.url, api_key_provider=lambda: "k"
        )
        settings = {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2048}
        first = await model.call_model(
            ModelRequest(instructions="", items=(QUESTION,), tools=(LOOKUP,), settings=settings),
            RecordingWriter(),
        )
        [item] = first.output
        assert item.text is None
        assert json.loads(item.item)["content"] is None
        result = ToolResultItem(tool_call_id="toolu_01", tool_name="lookup", output="a module")
        await model.call_model(
            ModelRequest(
                instructions="",
                items=(QUESTION, item, result),
                tools=(LOOKUP,),
                settings=settings,
            ),
            RecordingWriter(),
        )

    assert provider.requests[1].body["messages"][1] == {
        "role": "assistant",
        "content": [
            SIGNED_BLOCKS[0],
            {"type": "tool_use", "id": "toolu_01", "name": "lookup", "input": {"word": "dex"}},
        ],
    }
