"""``LiteLLMModelClient``: a ``ModelClient`` that calls any provider LiteLLM reaches."""

from __future__ import annotations

import contextlib
import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, Literal, cast

from dex_agents.builtin_loop import ModelOutputWriter, ModelRequest, ModelResponse
from dex_agents.litellm._chat import (
    CHAT_COMPLETIONS,
    ChatStream,
    build_messages,
    chat_settings,
    chat_tools,
)
from dex_agents.litellm._common import DeltaBatcher, JsonObject
from dex_agents.litellm._dependency import litellm
from dex_agents.litellm._responses import (
    RESPONSES,
    ResponsesStream,
    build_input,
    responses_settings,
    responses_tools,
)

__all__ = ["ApiKeyProvider", "LiteLLMModelClient"]

ApiKeyProvider = Callable[[], str | Awaitable[str]]
"""Returns the provider's API key, synchronously or as an awaitable; asked on every call."""

# Keys this client sets itself on every call.
_RESERVED_OPTIONS = frozenset(
    {
        "include",
        "input",
        "instructions",
        "messages",
        "model",
        "store",
        "stream",
        "stream_options",
        "tools",
    }
)
# Keys that carry credentials or send the call elsewhere: never from model settings, which
# may come from session settings; a Worker passes them to the constructor instead.
_CREDENTIAL_OPTIONS = frozenset(
    {
        "api_base",
        "api_key",
        "aws_access_key_id",
        "aws_secret_access_key",
        "aws_session_token",
        "azure_ad_token",
        "base_url",
        "vertex_credentials",
    }
)
# Settings that only make sense with tools; dropped from a call that offers none.
_TOOL_SETTINGS = ("tool_choice", "parallel_tool_calls")
# Providers that serve Claude besides Anthropic itself.
_CLAUDE_HOSTS = frozenset({"bedrock", "bedrock_converse", "vertex_ai", "vertex_ai_beta"})
# Claude models that refuse a forced tool choice whatever their settings.
_NO_FORCED_TOOL_CHOICE_MODELS = re.compile(r"claude-(opus|sonnet)-5[.-]5")
# Bytes of request JSON per estimated token: errs high for English text.
_BYTES_PER_TOKEN = 3


class LiteLLMModelClient:
    """A ``ModelClient`` that calls a model through LiteLLM, streaming.

    OpenAI models (LiteLLM provider ``openai``) use the Responses API with ``store=False``
    and ``include=["reasoning.encrypted_content"]``; every other provider uses streaming
    Chat Completions. Each output item is kept as the provider returned it
    (``ModelOutputItem.item``), with Anthropic ``thinking_blocks`` and their ``signature``
    and OpenAI encrypted reasoning, and replayed unchanged to the same provider and API.
    Items from another provider or API replay as their text and tool calls. Text and
    reasoning deltas stream to the ``ModelOutputWriter`` in small batches.

    Each call makes one request, with no retries (``max_retries=0`` unless
    ``request_options`` sets it): the session retries a failed ``RunModel``. Provider and
    HTTP errors propagate as LiteLLM raises them, with a note naming the model.

    Credentials come from the Worker's environment, as LiteLLM reads them (such as
    ``OPENAI_API_KEY``), or from ``api_key_provider``; model settings that carry
    credentials are refused.

    Args:
        model: The LiteLLM model name, such as ``"openai/gpt-5-mini"`` or
            ``"anthropic/claude-sonnet-4-5"``.
        api: ``"responses"`` or ``"chat_completions"``; by default the Responses API for
            OpenAI models and Chat Completions for every other provider. An
            OpenAI-compatible server reached with ``api_base`` usually needs
            ``"chat_completions"``.
        api_base: The provider endpoint, when not the provider's default.
        api_key_provider: Called before every model call for the API key: a function
            returning it, or returning an awaitable of it (an ``async def``). Use it for keys
            that rotate or live in a secret store. ``None``: LiteLLM reads the environment.
        request_options: Extra LiteLLM arguments for every call (``timeout``,
            ``extra_headers``, ``drop_params``, default model settings, ...). A model
            request's ``settings`` override them.

    Raises:
        ValueError: LiteLLM cannot route ``model``, ``api`` is unknown, or
            ``request_options`` sets what the client sets itself (``model``, ``stream``,
            ``tools``, ...) or what has a parameter of its own (``api_key``, ``api_base``).
    """

    def __init__(
        self,
        model: str,
        *,
        api: Literal["responses", "chat_completions"] | None = None,
        api_base: str | None = None,
        api_key_provider: ApiKeyProvider | None = None,
        request_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must name a LiteLLM model")
        if api not in (None, RESPONSES, CHAT_COMPLETIONS):
            raise ValueError(f"api must be 'responses' or 'chat_completions', not {api!r}")
        options = dict(request_options or {})
        for key in ("api_key", "api_base"):
            if key in options:
                raise ValueError(
                    f"request_options must not set {key!r}: use the "
                    f"{'api_key_provider' if key == 'api_key' else 'api_base'} parameter"
                )
        reserved = sorted(_RESERVED_OPTIONS.intersection(options))
        if reserved:
            raise ValueError(f"request_options must not set {reserved}: the client sets them")
        try:
            model_name, provider, _, _ = litellm.get_llm_provider(model=model, api_base=api_base)
        except Exception as error:
            raise ValueError(f"LiteLLM cannot route model {model!r}: {error}") from error
        self._model = model
        self._model_name = str(model_name)
        self._provider = str(provider)
        self._api: str = api or (RESPONSES if self._provider == "openai" else CHAT_COMPLETIONS)
        self._api_base = api_base
        self._api_key_provider = api_key_provider
        self._request_options = MappingProxyType(options)
        self._reasoning_model = _supports_reasoning(model)

    @property
    def model(self) -> str:
        """The LiteLLM model name, as given."""
        return self._model

    @property
    def provider(self) -> str:
        """LiteLLM's provider for the model (``ModelOutputItem.provider`` of its items)."""
        return self._provider

    @property
    def api(self) -> str:
        """``responses`` or ``chat_completions`` (``ModelOutputItem.api`` of its items)."""
        return self._api

    def __repr__(self) -> str:
        return f"LiteLLMModelClient({self._model!r}, api={self._api!r})"

    async def call_model(self, request: ModelRequest, output: ModelOutputWriter) -> ModelResponse:
        """Make one streamed model call.

        Args:
            request: Instructions, input items, tools and settings.
            output: Receives text and reasoning deltas while the call runs.

        Returns:
            The output items, usage, and metadata for the call's span.

        Raises:
            ValueError: The settings carry credentials or set what the client sets itself,
                ``api_key_provider`` returned no key, or a stored item is not JSON.
            TypeError: A stored item of this provider and API is not a JSON object.
            RuntimeError: The provider reported an error in the stream, the stream ended
                early, or LiteLLM could not read the response (such as an HTML page).
            Exception: LiteLLM's errors for provider and HTTP failures
                (``litellm.exceptions``), as raised.
        """
        settings = self._settings(request)
        credentials: JsonObject = {}
        if self._api_base is not None:
            credentials["api_base"] = self._api_base
        if self._api_key_provider is not None:
            credentials["api_key"] = await self._api_key()
        batcher = DeltaBatcher(output)
        stream: object = None
        try:
            if self._api == RESPONSES:
                stream = await litellm.aresponses(
                    model=self._model,
                    input=cast(Any, build_input(request, self._provider)),
                    instructions=request.instructions or None,
                    tools=cast(Any, responses_tools(request.tools) or None),
                    stream=True,
                    store=False,
                    include=["reasoning.encrypted_content"],
                    **credentials,
                    **responses_settings(settings, reasoning_model=self._reasoning_model),
                )
                return await ResponsesStream(
                    provider=self._provider, request_model=self._model_name, batcher=batcher
                ).read(_as_stream(stream))
            # LiteLLM reads stream_options itself, and passes it on only where supported.
            extra: JsonObject = {"stream_options": {"include_usage": True}}
            if request.tools:
                extra["tools"] = chat_tools(request.tools)
            stream = await litellm.acompletion(
                model=self._model,
                messages=build_messages(request, self._provider),
                stream=True,
                **extra,
                **credentials,
                **chat_settings(settings),
            )
            return await ChatStream(
                provider=self._provider, request_model=self._model_name, batcher=batcher
            ).read(_as_stream(stream))
        except Exception as error:
            detail = _blank_error_detail(error)
            if detail is not None:
                raise RuntimeError(
                    f"{self._model_name} ({self._provider}): LiteLLM could not read the "
                    f"{self._api} response: {detail}"
                ) from error
            error.add_note(f"model call to {self._model} through LiteLLM ({self._api})")
            raise
        finally:
            await _close(stream)

    def estimate_input_tokens(self, request: ModelRequest) -> int:
        """Estimate the request's input tokens, offline and fast.

        Counts one token per three UTF-8 bytes of the JSON this client would send
        (instructions, input items as they replay, tool definitions): high for English
        text, never a tokenizer call, so it is safe to run before every model call.
        """
        payload: JsonObject
        if self._api == RESPONSES:
            payload = {
                "instructions": request.instructions,
                "input": build_input(request, self._provider),
                "tools": responses_tools(request.tools),
            }
        else:
            payload = {
                "messages": build_messages(request, self._provider),
                "tools": chat_tools(request.tools),
            }
        size = len(json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        return -(-size // _BYTES_PER_TOKEN)

    def supports_forced_tool_choice(self, settings: Mapping[str, Any]) -> bool:
        """Whether this model accepts a forced tool choice with these settings.

        ``False`` for Claude (Anthropic, or Claude on Bedrock or Vertex AI) with extended
        thinking: a ``thinking`` option that is not ``{"type": "disabled"}``, or a
        ``reasoning_effort`` other than ``"none"``, in ``settings`` or ``request_options``.
        Also ``False`` for Claude Opus 5.5 and Claude Sonnet 5.5, which refuse it
        whatever the settings. ``True`` for every other model, Gemini and OpenAI reasoning
        models included.
        """
        model = self._model_name.lower()
        if not (
            self._provider == "anthropic" or (self._provider in _CLAUDE_HOSTS and "claude" in model)
        ):
            return True
        if _NO_FORCED_TOOL_CHOICE_MODELS.search(model):
            return False
        merged = {**self._request_options, **settings}
        thinking = merged.get("thinking")
        if isinstance(thinking, Mapping):
            if thinking.get("type", "enabled") != "disabled":
                return False
        elif thinking:
            return False
        effort = merged.get("reasoning_effort")
        return effort is None or effort == "none"

    def _settings(self, request: ModelRequest) -> JsonObject:
        """``request_options`` with the request's settings over them, checked."""
        credentials = sorted(_CREDENTIAL_OPTIONS.intersection(request.settings))
        if credentials:
            raise ValueError(
                f"model settings must not carry credentials or endpoints ({credentials}); "
                "give LiteLLMModelClient an api_key_provider or api_base"
            )
        reserved = sorted(_RESERVED_OPTIONS.intersection(request.settings))
        if reserved:
            raise ValueError(f"model settings must not set {reserved}: the client sets them")
        settings: JsonObject = {"max_retries": 0, **self._request_options, **request.settings}
        if not request.tools:
            for key in _TOOL_SETTINGS:
                settings.pop(key, None)
        return settings

    async def _api_key(self) -> str:
        provider = cast(ApiKeyProvider, self._api_key_provider)
        key: object = provider()
        if inspect.isawaitable(key):
            key = await key
        if not isinstance(key, str) or not key:
            raise ValueError("api_key_provider returned no API key")
        return key


def _supports_reasoning(model: str) -> bool:
    """Whether LiteLLM knows ``model`` as a reasoning model; ``False`` when it does not know."""
    try:
        return bool(litellm.supports_reasoning(model=model))
    except Exception:  # LiteLLM raises assorted errors for models it does not know
        return False


def _blank_error_detail(error: Exception) -> str | None:
    """What went wrong, when LiteLLM's own message ends empty (``OpenAIException - ``).

    LiteLLM raises such errors for a response it cannot parse, such as an HTML page or
    a stream of something else; the provider's text is further down the exception chain.
    """
    text = str(error).rstrip()
    if not text.endswith(("-", ":")):
        return None
    cause: BaseException | None = error
    for _ in range(10):
        cause = cause.__cause__ or cause.__context__ if cause is not None else None
        if cause is None:
            break
        message = str(cause).strip()
        if message and not isinstance(cause, StopIteration):
            return f"{type(cause).__name__}: {message[:300]}"
    return text


def _as_stream(value: object) -> AsyncIterator[object]:
    """LiteLLM's stream; it returns a whole response only when it was not asked to stream."""
    if not isinstance(value, AsyncIterator):
        raise TypeError(f"LiteLLM returned {type(value).__name__}, not a stream")
    return cast(AsyncIterator[object], value)


async def _close(stream: object) -> None:
    """Close a LiteLLM stream, so a failed or cancelled call releases its connection.

    A failure to close is dropped: it must not hide the call's own result or error.
    """
    if stream is None:
        return
    close = getattr(stream, "aclose", None)
    if close is None:
        close = getattr(getattr(stream, "response", None), "aclose", None)
    if callable(close):
        with contextlib.suppress(Exception):
            await close()
