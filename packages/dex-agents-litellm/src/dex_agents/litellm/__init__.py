"""LiteLLM model client for dex-agents: the ``dex-agents-litellm`` wheel.

It will hold ``LiteLLMModelClient``, a ``ModelClient`` that calls models through LiteLLM. The
package is empty until that work lands.
"""

__all__: list[str] = []
