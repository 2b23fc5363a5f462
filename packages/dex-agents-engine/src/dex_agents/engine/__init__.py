"""A local Dex server in Python: the ``dex-agents-engine`` wheel.

It serves the wire protocol of ``dex-python-sdk`` 1.23.0 (``FlowService`` and pull-mode
``WorkerTaskService``; push Workers are called through their ``WorkerService``), keeps every
flow's state in SQLite, and resumes every flow after its own restart or a Worker's death.

Run it with ``dex-agents-engine serve`` or embed it with :class:`LocalEngine`.
"""

from dex_agents.engine._config import EngineConfig
from dex_agents.engine._interpreter import ATTEMPT_NOT_STARTED as ATTEMPT_NOT_STARTED_ERROR_TYPE
from dex_agents.engine._server import LocalEngine
from dex_agents.engine._store import Durability

__all__ = [
    "ATTEMPT_NOT_STARTED_ERROR_TYPE",
    "Durability",
    "EngineConfig",
    "LocalEngine",
]
