"""The dex-agents-testing wheel: a typed part under ``dex_agents``, at the line's version."""

from __future__ import annotations

from importlib import metadata, resources

import dex_agents
import dex_agents.testing


def test_part_imports_beside_the_core_root() -> None:
    from dex_agents import testing

    assert testing is dex_agents.testing
    assert testing.__name__ == "dex_agents.testing"
    assert resources.files(testing).joinpath("py.typed").is_file()


def test_wheel_shares_the_version_line() -> None:
    assert metadata.version("dex-agents-testing") == dex_agents.__version__


def test_the_public_names_are_pinned() -> None:
    # A name leaves or joins the public API on purpose only: change this list with it.
    assert dex_agents.testing.__all__ == [
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
    for name in dex_agents.testing.__all__:
        assert getattr(dex_agents.testing, name) is not None
    from dex_agents.builtin_loop import ScriptedModelClient

    assert dex_agents.testing.ScriptedModelClient is ScriptedModelClient
