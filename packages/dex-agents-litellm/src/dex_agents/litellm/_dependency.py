"""The guarded import of LiteLLM, the third-party library this part wraps.

Every other module of the part imports ``litellm`` from here, so a missing extra fails with
one message that names the install command. LiteLLM fetches its model cost map from the
network when it is imported, unless ``LITELLM_LOCAL_MODEL_COST_MAP`` says otherwise; a
Worker should not reach the network to import a module, so this sets the variable's default
to its bundled copy first. Set it to ``False`` before the import to keep the fetch.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

try:
    import litellm
except ImportError as error:  # pragma: no cover - the wheel depends on litellm
    raise ImportError(
        "dex_agents.litellm needs LiteLLM, which is not installed: "
        "pip install 'dex-agents[litellm]'"
    ) from error

__all__ = ["litellm"]
