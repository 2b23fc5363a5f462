"""Integration tests for agent adapters against a real engine: the ``dex-agents-testing`` wheel.

:class:`AgentTestStack` starts a private ``dex-agents-engine`` process and a Client, and runs
Workers as child processes (:func:`run_agent_worker` is their body), each in its own process
group so a test can SIGKILL one at an exact moment. :class:`FileGate` parks a handler at that
moment, :class:`InvocationLog` counts real calls across Worker processes,
:func:`read_step_history` lists the Steps a flow finished, and :func:`wait_until` and
:func:`wait_for_agent_snapshot` poll with a deadline instead of sleeping.
``ScriptedModelClient`` is the built-in loop's scripted model, for agents under test.
"""

from dex_agents.builtin_loop import ScriptedModelClient
from dex_agents.testing._engine import EngineHandle
from dex_agents.testing._gates import FileGate
from dex_agents.testing._history import (
    EXECUTE_COMPLETED_EVENT,
    EXECUTE_FAILED_EVENT,
    WAIT_FOR_COMPLETED_EVENT,
    WAIT_FOR_FAILED_EVENT,
    StepHistoryEntry,
    read_step_history,
)
from dex_agents.testing._invocations import InvocationLog
from dex_agents.testing._processes import ChildProcessExitedError
from dex_agents.testing._stack import AgentTestStack, WorkerHandle
from dex_agents.testing._waiting import AgentSnapshotSource, wait_for_agent_snapshot, wait_until
from dex_agents.testing._worker import (
    MAX_CONCURRENT_TASKS_ENV,
    SERVER_ADDRESS_ENV,
    WORKER_READY_LINE,
    run_agent_worker,
)

__all__ = [
    "EXECUTE_COMPLETED_EVENT",
    "EXECUTE_FAILED_EVENT",
    "MAX_CONCURRENT_TASKS_ENV",
    "SERVER_ADDRESS_ENV",
    "WAIT_FOR_COMPLETED_EVENT",
    "WAIT_FOR_FAILED_EVENT",
    "WORKER_READY_LINE",
    "AgentSnapshotSource",
    "AgentTestStack",
    "ChildProcessExitedError",
    "EngineHandle",
    "FileGate",
    "InvocationLog",
    "ScriptedModelClient",
    "StepHistoryEntry",
    "WorkerHandle",
    "read_step_history",
    "run_agent_worker",
    "wait_for_agent_snapshot",
    "wait_until",
]
