"""The Worker child of the core's integration tests.

With ``CORE_TEST_PARK_STEP=<StepType>`` the child parks that Step at the FileGate
``step`` the first time it reads session state, so a test can kill the Worker or the
engine while that exact Step runs. The parking is fault injection on the test side: it
wraps the session's state readers in this process only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from core_agent import build_flow

from dex_agents._persistence import JsonAttribute, JsonAttributeMap
from dex_agents.testing import FileGate, run_agent_worker


def _park_in(kind: type[Any], step_type: str, state_dir: str) -> None:
    gate = FileGate(state_dir, "step")
    original: Callable[..., Any] = kind.read

    def read(self: Any, context: Any, *args: Any) -> Any:  # noqa: ANN401
        if context.step_execution_id.startswith(f"{step_type}-") and not gate.reached:
            gate.wait_for_release_blocking(timeout=60)
        return original(self, context, *args)

    kind.read = read


if __name__ == "__main__":
    park = os.environ.get("CORE_TEST_PARK_STEP")
    if park:
        for reader in (JsonAttribute, JsonAttributeMap):
            _park_in(reader, park, os.environ["CORE_TEST_STATE"])
    run_agent_worker([build_flow()])
