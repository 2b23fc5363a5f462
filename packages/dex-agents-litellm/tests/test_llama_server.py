"""LiteLLMModelClient against a real OpenAI-compatible server: llama.cpp with SmolLM2-135M."""

from __future__ import annotations

import json

from litellm_servers import LITELLM_WARNINGS, LlamaServer, RecordingWriter

from dex_agents.builtin_loop import ModelRequest, ModelToolDefinition, UserTextItem
from dex_agents.litellm import LiteLLMModelClient

pytestmark = LITELLM_WARNINGS

WEATHER = ModelToolDefinition(
    name="get_weather",
    description="The weather in a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


def client(server: LlamaServer) -> LiteLLMModelClient:
    return LiteLLMModelClient(
        f"openai/{server.MODEL_ALIAS}",
        api="chat_completions",
        api_base=server.url,
        api_key_provider=lambda: "not-checked",
    )


async def test_streams_text_and_reports_usage(llama_server: LlamaServer) -> None:
    model = client(llama_server)
    writer = RecordingWriter()
    request = ModelRequest(
        instructions="You are a helpful assistant.",
        items=(UserTextItem(text="Say hello to Ada."),),
        settings={"max_tokens": 12, "temperature": 0},
    )

    response = await model.call_model(request, writer)

    assert response.text
    assert writer.joined("text") == response.text
    assert len(writer.deltas) >= 1
    [item] = response.output
    assert (item.provider, item.api, item.tool_call) == ("openai", "chat_completions", None)
    assert json.loads(item.item) == {"role": "assistant", "content": response.text}
    assert response.usage.model_calls == 1
    assert response.usage.input_tokens > 0
    assert response.usage.output_tokens > 0
    assert response.metadata is not None
    assert response.metadata.request_model == "smollm2"
    assert response.metadata.provider_name == "openai"
    assert response.metadata.finish_reasons in {("stop",), ("length",)}
    assert model.estimate_input_tokens(request) > 0


async def test_streams_a_forced_tool_call(llama_server: LlamaServer) -> None:
    model = client(llama_server)
    request = ModelRequest(
        instructions="Use the tools.",
        items=(UserTextItem(text="What is the weather in Paris?"),),
        tools=(WEATHER,),
        settings={
            "max_tokens": 24,
            "temperature": 0,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        },
    )

    response = await model.call_model(request, RecordingWriter())

    [item] = response.output
    [call] = response.tool_calls
    assert call.name == "get_weather"
    assert call.tool_call_id
    assert call.arguments.startswith("{")  # the text the model wrote, valid JSON or not
    assert json.loads(item.item)["tool_calls"] == [
        {
            "id": call.tool_call_id,
            "type": "function",
            "function": {"name": "get_weather", "arguments": call.arguments},
        }
    ]
    assert response.metadata is not None
    assert response.metadata.finish_reasons == ("tool_calls",)


async def test_replays_its_own_output_in_the_next_call(llama_server: LlamaServer) -> None:
    # llama-cpp-python's server refuses an assistant message without text content, so a
    # replayed tool call is checked on the exact request instead (test_request_shapes.py).
    model = client(llama_server)
    settings = {"max_tokens": 8, "temperature": 0}
    first_question = UserTextItem(text="Name a color.")
    first = await model.call_model(
        ModelRequest(instructions="Be brief.", items=(first_question,), settings=settings),
        RecordingWriter(),
    )
    assert first.text
    writer = RecordingWriter()

    second = await model.call_model(
        ModelRequest(
            instructions="Be brief.",
            items=(first_question, *first.output, UserTextItem(text="Another one?")),
            settings=settings,
        ),
        writer,
    )

    assert second.text
    assert writer.joined("text") == second.text
    assert second.usage.input_tokens > first.usage.input_tokens
