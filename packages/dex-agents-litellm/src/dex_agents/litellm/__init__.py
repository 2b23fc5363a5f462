"""LiteLLM model client for dex-agents: the ``dex-agents-litellm`` wheel.

``LiteLLMModelClient`` is a ``ModelClient`` for the built-in loop that calls any model LiteLLM
reaches: the Responses API for OpenAI models, streaming Chat Completions for every other
provider. Importing this part without LiteLLM raises ``ImportError`` naming
``pip install 'dex-agents[litellm]'``.
"""

from dex_agents.litellm._client import ApiKeyProvider, LiteLLMModelClient

__all__ = ["ApiKeyProvider", "LiteLLMModelClient"]
